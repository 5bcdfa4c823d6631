#!/usr/bin/python3
"""The Heads grid is visible at start, and a panel that skipped its work while covered is drawn once
it is uncovered. Heads shares its place with the Follow panel, which appears only for a pinned
element; covered, Heads extracts no slices and uploads no textures. The test clicks a cell of the
inspector on the live app (XTEST), which pins it and brings Follow over Heads, then presses Esc,
which clears the pin and takes Follow away, and passes when the place shows the heads' heatmaps at
start and again after Esc (most of the area painted), and Follow's text (little painted) between.

usage (under xvfb-run -s "-screen 0 1600x1000x24"): uncover_test.py ATTNSCOPE
"""
import os
import sys
import time

from Xlib import X

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from drop_test import launched  # noqa: E402
from follow_hover_test import CELL, click, differing, key, move  # noqa: E402

# The shared place of Heads and Follow (app/gui/logic/layout.hpp at 1600 x 1000: x 1114..1600,
# y 24..561): the grid's area.
GRID = (1140, 100, 270, 400)


def grab(d, window):
    """The grid's area as raw pixels, read from the screen (the root window: reading a GL window
    itself is not reliable under Xvfb)."""
    x, y, w, h = GRID
    at = d.screen().root.translate_coords(window, x, y)  # the window's (x, y) on the screen
    return d.screen().root.get_image(at.x, at.y, w, h, X.ZPixmap, 0xFFFFFFFF).data


def painted(raw):
    """The share of the area that is not its most common colour (the window background)."""
    pixels = [raw[i:i + 3] for i in range(0, len(raw), 4)]
    background = max(set(pixels), key=pixels.count)
    return 1.0 - pixels.count(background) / len(pixels)


def main():
    exe = sys.argv[1]
    args = ["--batch", "1", "--tokens", "197", "--dim", "768", "--heads", "12", "--step", "attn", "--size", "1600x1000"]
    with launched(exe, args) as (d, window):
        at_start = grab(d, window)
        move(d, window, *CELL)
        click(d)
        time.sleep(2)
        pinned = grab(d, window)
        key(d, "Escape")
        time.sleep(2)
        after = grab(d, window)
        print("painted share of the Heads place: %.2f at start, %.2f after Esc; pixels unlike the start: %.2f with "
              "an element pinned (Follow), %.2f after Esc"
              % (painted(at_start), painted(after), differing(at_start, pinned), differing(at_start, after)))
        if painted(at_start) < 0.3:
            sys.exit("FAIL: the Heads grid is not visible at start")
        if differing(at_start, pinned) < 0.3:
            sys.exit("FAIL: pinning an element did not bring the Follow panel over Heads")
        if differing(at_start, after) > 0.02:
            sys.exit("FAIL: the Heads grid was not drawn again after Follow went away")
        print("PASS: Heads is visible at start and drawn again once Follow no longer covers it")


if __name__ == "__main__":
    main()
