#!/usr/bin/python3
"""A panel that skipped its work while covered is drawn once it is uncovered. The Heads grid shares
its place with the Follow panel, which covers it at start; covered, it extracts no slices and
uploads no textures. The test clicks Follow's close button on the live app (XTEST) and passes when
the place then shows the heads' heatmaps: most of the area painted, where Follow's text painted little.

usage (under xvfb-run -s "-screen 0 1600x1000x24"): uncover_test.py ATTNSCOPE
"""
import os
import sys
import time

from Xlib import X
from Xlib.ext import xtest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from drop_test import launched  # noqa: E402

# The shared place of Heads and Follow (panels' PlaceWindow(1130, 22, 470, 548)): the grid's area,
# and Follow's close button in its title bar.
GRID = (1140, 100, 270, 400)
FOLLOW_CLOSE = (1585, 33)


def painted(d, window):
    """The share of the grid's area that is not the most common colour (the window background),
    read from the screen (the root window: reading a GL window itself is not reliable under Xvfb)."""
    x, y, w, h = GRID
    at = d.screen().root.translate_coords(window, x, y)  # the window's (x, y) on the screen
    raw = d.screen().root.get_image(at.x, at.y, w, h, X.ZPixmap, 0xFFFFFFFF).data
    pixels = [raw[i:i + 3] for i in range(0, len(raw), 4)]
    background = max(set(pixels), key=pixels.count)
    return 1.0 - pixels.count(background) / len(pixels)


def click(d, window, x, y):
    at = d.screen().root.translate_coords(window, x, y)
    xtest.fake_input(d, X.MotionNotify, x=at.x, y=at.y)
    d.sync()
    time.sleep(0.2)
    # Press and release at once, and no event after them: the frame that closes Follow is the last
    # one the app draws unless it asks for another itself.
    xtest.fake_input(d, X.ButtonPress, 1)
    xtest.fake_input(d, X.ButtonRelease, 1)
    d.sync()


def main():
    exe = sys.argv[1]
    args = ["--batch", "1", "--tokens", "197", "--dim", "768", "--heads", "12", "--step", "attn", "--size", "1600x1000"]
    with launched(exe, args) as (d, window):
        covered = painted(d, window)
        click(d, window, *FOLLOW_CLOSE)
        time.sleep(2)
        shown = painted(d, window)
        print("painted share of the Heads place: %.2f under Follow (its text), %.2f after closing Follow"
              % (covered, shown))
        if shown < 0.3 or shown < 3 * covered:
            sys.exit("FAIL: the Heads grid was not drawn after Follow was closed")
        print("PASS: the Heads grid is drawn once Follow no longer covers it")


if __name__ == "__main__":
    main()
