#!/usr/bin/python3
"""The live window as a desktop sees it: attnscope's icon (_NET_WM_ICON, 256 x 256, from
packaging/attnscope.svg), WM_CLASS "attnscope" (what attnscope.desktop's StartupWMClass matches)
and a title naming what is open.

usage (under xvfb-run): window_icon_test.py TITLE ATTNSCOPE [app arguments ...]
"""
import sys
import time

from Xlib import Xatom

from drop_test import launched, title


def main():
    expect_title, exe, app_args = sys.argv[1], sys.argv[2], sys.argv[3:]
    with launched(exe, app_args) as (d, window):
        icon = window.get_full_property(d.intern_atom("_NET_WM_ICON"), Xatom.CARDINAL)
        if not icon or len(icon.value) < 2 or (icon.value[0], icon.value[1]) != (256, 256):
            sys.exit("FAIL: the window has no 256 x 256 icon (_NET_WM_ICON: %s)" %
                     (list(icon.value[:2]) if icon else None))
        pixels = icon.value[2:2 + 256 * 256]
        if len(set(pixels)) < 16:
            sys.exit("FAIL: the window icon has %d colours, expected the drawn icon" % len(set(pixels)))
        wm_class = window.get_wm_class()
        if wm_class != ("attnscope", "attnscope"):
            sys.exit("FAIL: WM_CLASS is %r, expected ('attnscope', 'attnscope')" % (wm_class,))
        deadline = time.time() + 30
        while time.time() < deadline and expect_title not in title(d, window):
            time.sleep(0.2)
        shown = title(d, window)
        if expect_title not in shown:
            sys.exit("FAIL: the window title is %r, expected it to contain %r" % (shown, expect_title))
        print("PASS: icon 256 x 256, WM_CLASS attnscope, title:", shown)


if __name__ == "__main__":
    main()
