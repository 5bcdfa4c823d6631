#!/usr/bin/python3
"""The live app survives what a user can do to it: a broken file dropped on it, the window resized
to 1x1 and back, and the window closed while the engine worker is still running. Passes when the
app is alive after each abuse, exits cleanly (status 0) on close within a few seconds, and the
settings file it leaves behind is complete JSON (written atomically).

usage (under xvfb-run): survive_test.py ATTNSCOPE BROKEN_FILE
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from Xlib import X, display
from Xlib.protocol import event

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from drop_test import drop, find_window  # noqa: E402


def alive(app, what):
    if app.poll() is not None:
        sys.exit("FAIL: the app died (status %s) after %s" % (app.returncode, what))


def resize(d, window, w, h):
    window.configure(width=w, height=h)
    d.sync()


def close(d, window):
    """What the window manager sends when the user clicks the close button."""
    protocols, delete = d.intern_atom("WM_PROTOCOLS"), d.intern_atom("WM_DELETE_WINDOW")
    window.send_event(event.ClientMessage(window=window, client_type=protocols,
                                          data=(32, [delete, X.CurrentTime, 0, 0, 0])), event_mask=0)
    d.flush()


def run_app(exe, args, config):
    app = subprocess.Popen([exe] + args, env=dict(os.environ, XDG_CONFIG_HOME=config))
    d = display.Display()
    window = find_window(d, app.pid, 30)
    if window is None:
        app.kill()
        sys.exit("FAIL: no attnscope window appeared")
    return app, d, window


def close_and_check(app, d, window, config, what):
    close(d, window)
    try:
        status = app.wait(timeout=30)
    except subprocess.TimeoutExpired:
        app.kill()
        sys.exit("FAIL: the app did not exit within 30 s of closing its window %s" % what)
    if status != 0:
        sys.exit("FAIL: closing the window %s ended the app with status %d" % (what, status))
    folder = os.path.join(config, "attnscope")
    with open(os.path.join(folder, "settings.json")) as f:
        json.load(f)
    leftovers = [n for n in os.listdir(folder) if n not in ("settings.json", "imgui.ini")]
    if leftovers:
        sys.exit("FAIL: temporary files left next to settings.json: %s" % leftovers)
    with open(os.path.join(folder, "imgui.ini")) as f:
        if "[Window][" not in f.read():
            sys.exit("FAIL: imgui.ini holds no window layout")


def main():
    exe, broken = sys.argv[1], os.path.abspath(sys.argv[2])
    with tempfile.TemporaryDirectory() as config:
        app, d, window = run_app(exe, [], config)
        try:
            if not drop(d, window, broken, timeout=10):
                sys.exit("FAIL: the window did not finish the drop of the broken file")
            time.sleep(1.0)
            alive(app, "a broken file was dropped")
            for w, h in [(1, 1), (1, 600), (800, 1), (1, 1), (1200, 800)]:
                resize(d, window, w, h)
                time.sleep(0.5)
                alive(app, "a resize to %dx%d" % (w, h))
            close_and_check(app, d, window, config, "after the abuse")
        finally:
            if app.poll() is None:
                app.kill()
        # A config whose trace (about 0.5 GiB) the worker needs seconds for: close at once.
        app, d, window = run_app(exe, ["--batch", "2", "--tokens", "1024", "--dim", "256", "--heads", "16"], config)
        try:
            close_and_check(app, d, window, config, "while the worker runs")
        finally:
            if app.poll() is None:
                app.kill()
    print("PASS: survived a broken drop, 1x1 resizes and closing during a run; settings.json is whole")


if __name__ == "__main__":
    main()
