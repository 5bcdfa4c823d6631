#!/usr/bin/python3
"""View > Reset layout on the live app: the Heads panel dragged away by its title bar leaves its
place; Ctrl+L puts it back, drawn as at start (XTEST mouse and keys).

usage (under xvfb-run): reset_layout_test.py ATTNSCOPE
"""
import os
import sys
import time

from Xlib import X, XK
from Xlib.ext import xtest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from drop_test import launched  # noqa: E402
from follow_hover_test import differing, move  # noqa: E402
from uncover_test import grab  # noqa: E402

# Heads' title bar in the default arrangement at 1600 x 1000 (app/gui/logic/layout.hpp: x 1114..1600,
# y 24..561), right of its title, and a place over the inspector to drag it to.
TITLE_BAR = (1300, 36)
DRAGGED_TO = (700, 700)


def drag(d, window, start, end):
    move(d, window, *start)
    xtest.fake_input(d, X.ButtonPress, 1)
    d.sync()
    time.sleep(0.5)
    x0, y0 = start
    x1, y1 = end
    for i in range(1, 11):  # in steps: ImGui moves a window by the mouse's motion from frame to frame
        move_to = (x0 + (x1 - x0) * i // 10, y0 + (y1 - y0) * i // 10)
        at = d.screen().root.translate_coords(window, *move_to)
        xtest.fake_input(d, X.MotionNotify, x=at.x, y=at.y)
        d.sync()
        time.sleep(0.1)
    xtest.fake_input(d, X.ButtonRelease, 1)
    d.sync()
    time.sleep(1.0)


def ctrl(d, name):
    control = d.keysym_to_keycode(XK.string_to_keysym("Control_L"))
    code = d.keysym_to_keycode(XK.string_to_keysym(name))
    xtest.fake_input(d, X.KeyPress, control)
    xtest.fake_input(d, X.KeyPress, code)
    d.sync()
    time.sleep(0.3)  # held over a frame (ImGui 1.86 reads key states once a frame)
    xtest.fake_input(d, X.KeyRelease, code)
    xtest.fake_input(d, X.KeyRelease, control)
    d.sync()
    time.sleep(1.0)


def main():
    exe = sys.argv[1]
    with launched(exe, ["--step", "attn", "--size", "1600x1000"]) as (d, window):
        at_start = grab(d, window)
        drag(d, window, TITLE_BAR, DRAGGED_TO)
        moved = grab(d, window)
        ctrl(d, "l")
        move(d, window, 20, 990)  # the mouse away from every panel: no hover highlight in the grab
        after = grab(d, window)
        print("pixels of Heads' place unlike the start: %.2f with Heads dragged away, %.2f after Ctrl+L"
              % (differing(at_start, moved), differing(at_start, after)))
        if differing(at_start, moved) < 0.3:
            sys.exit("FAIL: dragging Heads by its title bar did not move it")
        if differing(at_start, after) > 0.02:
            sys.exit("FAIL: Ctrl+L (View > Reset layout) did not put Heads back in its place")
        print("PASS: Ctrl+L puts a dragged panel back in its place")


if __name__ == "__main__":
    main()
