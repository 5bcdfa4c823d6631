#!/usr/bin/python3
"""Hovering follows only while hovering; a click pins; Esc clears. Drives the live app (XTEST) and
reads the pipeline panel's # column, which is tinted for every step related to the followed
element: it must be tinted while the mouse is on a cell of the inspector's heatmap, back to its
plain look once the mouse leaves, tinted again after a click even when the mouse leaves, and plain
after Esc.

usage (under xvfb-run -s "-screen 0 1600x1000x24"): follow_hover_test.py ATTNSCOPE
"""
import os
import sys
import time

from Xlib import X, XK
from Xlib.ext import xtest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from live import launched  # noqa: E402

# Places in the default arrangement at 1600 x 1000 (app/gui/logic/layout.hpp: the pipeline at
# x 0..496, y 24..424; the Shape view x 496..1114, y 24..502; the inspector below it).
# The pipeline panel's # column, below its header row: its 17 rows.
HASH_COLUMN = (6, 110, 18, 280)
# A place where the mouse hovers nothing that follows (the Shape view's empty lower part), and a
# cell of the inspector's map at a square step (attn: uncover_test). The test below hovers the
# middle of the map, where the app's state report says it is (its qkv slice is a strip).
AWAY = (1000, 470)
CELL = (760, 800)


def grab(d, window):
    x, y, w, h = HASH_COLUMN
    at = d.screen().root.translate_coords(window, x, y)
    return d.screen().root.get_image(at.x, at.y, w, h, X.ZPixmap, 0xFFFFFFFF).data


def differing(a, b):
    """The share of pixels that differ between two grabs."""
    n = len(a) // 4
    return sum(1 for i in range(0, len(a), 4) if a[i:i + 3] != b[i:i + 3]) / n


def move(d, window, x, y):
    at = d.screen().root.translate_coords(window, x, y)
    xtest.fake_input(d, X.MotionNotify, x=at.x, y=at.y)
    d.sync()
    time.sleep(1.0)


def click(d):
    xtest.fake_input(d, X.ButtonPress, 1)
    xtest.fake_input(d, X.ButtonRelease, 1)
    d.sync()
    time.sleep(1.0)


def key(d, name):
    code = d.keysym_to_keycode(XK.string_to_keysym(name))
    # Held for a moment: ImGui 1.86 reads key states once a frame, so a press released before the
    # next frame would go unseen (as it would for a person's key press it never is).
    xtest.fake_input(d, X.KeyPress, code)
    d.sync()
    time.sleep(0.3)
    xtest.fake_input(d, X.KeyRelease, code)
    d.sync()
    time.sleep(1.0)


def main():
    exe = sys.argv[1]
    args = ["--batch", "1", "--tokens", "6", "--dim", "24", "--heads", "4", "--step", "qkv", "--size", "1600x1000"]
    with launched(exe, args) as app:
        d, window = app.d, app.window
        x, y, w, h = app.wait("the inspector's map", lambda s: "inspector:map" in s["items"], 30)["items"]["inspector:map"]
        cell = (int(x + w / 2), int(y + h / 2))
        move(d, window, *AWAY)
        plain = grab(d, window)
        move(d, window, *cell)
        hovered = grab(d, window)
        move(d, window, *AWAY)
        left = grab(d, window)
        move(d, window, *cell)
        click(d)
        move(d, window, *AWAY)
        pinned = grab(d, window)
        key(d, "Escape")
        cleared = grab(d, window)
        shares = [differing(plain, g) for g in (hovered, left, pinned, cleared)]
        print("pixels of the # column unlike its plain look: hovered %.3f, left %.3f, pinned %.3f, "
              "after Esc %.3f" % tuple(shares))
        if shares[0] < 0.02:
            sys.exit("FAIL: hovering a cell of the inspector did not mark the related steps")
        if shares[1] > 0.002:
            sys.exit("FAIL: the marks stayed after the mouse left the cell (hover must follow only while hovering)")
        if shares[2] < 0.02:
            sys.exit("FAIL: a click did not pin the followed element")
        if shares[3] > 0.002:
            sys.exit("FAIL: Esc did not clear the pinned element")
        print("PASS: hover follows while hovering, a click pins, Esc clears")


if __name__ == "__main__":
    main()
