#!/usr/bin/python3
"""The live app follows its window (app/gui/logic/display_fit.hpp): resized, the panels are placed as
the default layout places them for the new size; a user's own arrangement survives a small resize
and gives way to the default layout at a large one. The window is resized through Xlib (as a window
manager would) and the screen is read back.

  1. started at 1600 x 1000: the reference for that size (a second start, at 1024 x 768, gives the
     reference for the smaller size);
  2. resized to 1024 x 768, the window looks as if started at that size; resized back to 1600 x
     1000, as if started at that size;
  3. at 1024 x 768, Heads dragged away by its title bar, then the window 60 px narrower: Heads stays
     where it was dragged; then 1600 x 1000 (a large change): the default layout for that size.

usage (under xvfb-run -s "-screen 0 1920x1080x24"): resize_test.py ATTNSCOPE
"""
import os
import sys
import time

from Xlib import X

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from drop_test import launched  # noqa: E402
from follow_hover_test import differing, move  # noqa: E402
from reset_layout_test import drag  # noqa: E402

ARGS = ["--step", "attn"]
MENU = 30  # the menu bar's row (its status line says what happened) is left out of the comparisons
# Heads' title bar in the default layout at 1024 x 768 (x 726..1024, y 23..433), right of its
# title, and where it is dragged to: 400 px left and 117 px down, over the Shape view and the
# inspector (x 326..624, y 140..550), whole inside the window.
TITLE_BAR_1024 = (900, 33)
DRAGGED_TO = (500, 150)
HEADS_DRAGGED = (350, 200, 250, 300)  # x, y, w, h inside Heads' dragged place
SETTLE = 3.0  # seconds for the app to draw the resized window (it draws when the window changes)


def grab(d, window, w, h):
    """The window's area below the menu bar as raw pixels, read from the screen (the root window:
    reading a GL window itself is not reliable under Xvfb)."""
    at = d.screen().root.translate_coords(window, 0, MENU)
    return d.screen().root.get_image(at.x, at.y, w, h - MENU, X.ZPixmap, 0xFFFFFFFF).data


def resize(d, window, w, h):
    window.configure(width=w, height=h)
    d.sync()
    time.sleep(SETTLE)
    move(d, window, 5, h - 5)  # the mouse in a corner, away from the panels' hover highlights
    time.sleep(1.0)


def reference(exe, size):
    w, h = size
    with launched(exe, ARGS + ["--size", "%dx%d" % size]) as (d, window):
        move(d, window, 5, h - 5)
        return grab(d, window, w, h)


def main():
    exe = sys.argv[1]
    small, large = (1024, 768), (1600, 1000)
    ref_small = reference(exe, small)
    with launched(exe, ARGS + ["--size", "%dx%d" % large]) as (d, window):
        move(d, window, 5, large[1] - 5)
        ref_large = grab(d, window, *large)
        resize(d, window, *small)
        shrunk = grab(d, window, *small)
        resize(d, window, *large)
        grown = grab(d, window, *large)
        print("pixels unlike a start at that size: %.3f resized to 1024x768, %.3f back at 1600x1000"
              % (differing(ref_small, shrunk), differing(ref_large, grown)))
        if differing(ref_small, shrunk) > 0.02:
            sys.exit("FAIL: resized to 1024x768, the panels are not where a start at 1024x768 puts them")
        if differing(ref_large, grown) > 0.02:
            sys.exit("FAIL: resized back to 1600x1000, the panels are not where a start at 1600x1000 puts them")

        # The user's own arrangement: Heads dragged over the inspector.
        resize(d, window, *small)
        drag(d, window, TITLE_BAR_1024, DRAGGED_TO)
        move(d, window, 5, small[1] - 5)
        arranged = grab(d, window, *small)
        if differing(ref_small, arranged) < 0.1:
            sys.exit("FAIL: dragging Heads by its title bar did not move it")
        narrower = (small[0] - 60, small[1])
        resize(d, window, *narrower)
        kept = grab(d, window, *narrower)
        # Heads' area where it was dragged: the same pixels before and after the small resize.
        x0, y0, w, h = HEADS_DRAGGED
        y0 -= MENU
        def part(raw, width):
            rows = [raw[((y0 + y) * width + x0) * 4:((y0 + y) * width + x0 + w) * 4] for y in range(h)]
            return b"".join(rows)
        moved_part = differing(part(arranged, small[0]), part(kept, narrower[0]))
        resize(d, window, *large)  # more than 15% larger than the arrangement's 1024 x 768
        replaced = grab(d, window, *large)
        print("dragged Heads' area after a 60 px narrower window: %.3f unlike before; after the large resize "
              "to 1600x1000: %.3f unlike a start at that size" % (moved_part, differing(ref_large, replaced)))
        if moved_part > 0.05:
            sys.exit("FAIL: a small resize undid the user's arrangement (Heads left the place it was dragged to)")
        if differing(ref_large, replaced) > 0.02:
            sys.exit("FAIL: after a large resize the panels are not in the default layout for the new size")
        print("PASS: the panels follow the window; a dragged panel survives a small resize")


if __name__ == "__main__":
    main()
