#!/usr/bin/python3
"""Driving the live app like a user: start it with ATTNSCOPE_STATE_JSON, press keys and click
through XTEST (as a person's keyboard and mouse would), and read what the app shows from the state
it writes after each frame that changed something (app/gui/app.cpp: StateReport).

Used by the journey tests (journey_test.py); run under xvfb-run with a screen of the window's size.
"""
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

from Xlib import X, XK, display
from Xlib.ext import xtest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from drop_test import drop, find_window  # noqa: E402,F401


class Failure(Exception):
    pass


class App:
    """One running attnscope window."""

    def __init__(self, d, window, state_path, process):
        self.d, self.window, self.state_path, self.process = d, window, state_path, process

    # ---- what the app shows
    def state(self):
        try:
            with open(self.state_path, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def wait(self, what, predicate, timeout=20.0):
        """The state once predicate(state) holds; Failure naming `what` (and the last state) if it
        does not within timeout seconds."""
        deadline = time.time() + timeout
        s = None
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise Failure(f"{what}: the app exited with status {self.process.returncode}")
            s = self.state()
            if s is not None:
                try:
                    if predicate(s):
                        return s
                except (KeyError, TypeError, IndexError):
                    pass
            time.sleep(0.2)
        brief = {k: v for k, v in (s or {}).items() if k != "layout"}
        raise Failure(f"{what}: not seen within {timeout:.0f} s; the app shows {json.dumps(brief, ensure_ascii=False)}")

    def panel(self, title):
        s = self.state()
        for p in s["layout"]["panels"] if s else []:
            if p["title"] == title:
                return p
        raise Failure(f"no panel '{title}' on screen")

    # ---- the user's hands
    def move(self, x, y):
        at = self.d.screen().root.translate_coords(self.window, int(x), int(y))
        xtest.fake_input(self.d, X.MotionNotify, x=at.x, y=at.y)
        self.d.sync()
        time.sleep(0.3)

    def click(self, x, y):
        self.move(x, y)
        xtest.fake_input(self.d, X.ButtonPress, 1)
        self.d.sync()
        time.sleep(0.15)  # held over a frame: ImGui 1.86 reads the button once per frame
        xtest.fake_input(self.d, X.ButtonRelease, 1)
        self.d.sync()
        time.sleep(0.5)

    def key(self, name, ctrl=False):
        """Presses and releases a key (XK name: "Right", "space", "F5", "Return", "a"), held for a
        moment: ImGui 1.86 reads key states once a frame."""
        codes = ([self.d.keysym_to_keycode(XK.string_to_keysym("Control_L"))] if ctrl else []) + \
            [self.d.keysym_to_keycode(XK.string_to_keysym(name))]
        for c in codes:
            xtest.fake_input(self.d, X.KeyPress, c)
            self.d.sync()
            time.sleep(0.05)
        time.sleep(0.2)
        for c in reversed(codes):
            xtest.fake_input(self.d, X.KeyRelease, c)
            self.d.sync()
        time.sleep(0.4)

    def type(self, text, quick=False):
        """Types text key by key (characters reach ImGui as queued input, so they need no hold;
        quick: without the pause after each key)."""
        names = {" ": "space", ",": "comma", "[": "bracketleft", "]": "bracketright", "/": "slash",
                 ".": "period", "_": "underscore", "-": "minus"}
        shift = self.d.keysym_to_keycode(XK.string_to_keysym("Shift_L"))
        for ch in text:
            keysym = XK.string_to_keysym(names.get(ch, ch))
            code = self.d.keysym_to_keycode(keysym)
            shifted = self.d.keycode_to_keysym(code, 0) != keysym
            if shifted:
                xtest.fake_input(self.d, X.KeyPress, shift)
            xtest.fake_input(self.d, X.KeyPress, code)
            xtest.fake_input(self.d, X.KeyRelease, code)
            if shifted:
                xtest.fake_input(self.d, X.KeyRelease, shift)
            self.d.sync()
            time.sleep(0.02 if quick else 0.1)
        time.sleep(0.4)

    def capture(self, path):
        """The whole screen as a PNG (ImageMagick's import, as a person's screenshot tool)."""
        subprocess.run(["import", "-window", "root", path], check=True)


def check_nothing_cut(state, where):
    """Failure when a panel on screen cuts text off or reaches outside the display."""
    layout = state["layout"]
    dw, dh = layout["display"]
    for p in layout["panels"]:
        if p["visible_fraction"] <= 0.0:
            continue
        for c in p["cuts"]:
            raise Failure(f"{where}: panel '{p['title']}' cuts {c['px']:.0f} px off at {c['where']}")
        if p["x"] < -0.5 or p["y"] < -0.5 or p["x"] + p["w"] > dw + 0.5 or p["y"] + p["h"] > dh + 0.5:
            raise Failure(f"{where}: panel '{p['title']}' at {p['x']:.0f},{p['y']:.0f} {p['w']:.0f}x{p['h']:.0f} "
                          f"reaches outside the {dw:.0f}x{dh:.0f} display")


@contextlib.contextmanager
def launched(exe, args, env=None):
    """The app started with these arguments, its own empty config folder and a state file; yields
    an App once its window is mapped and it wrote its first state. Killed after."""
    with tempfile.TemporaryDirectory() as folder:
        state = os.path.join(folder, "state.json")
        environment = dict(os.environ, XDG_CONFIG_HOME=os.path.join(folder, "config"), ATTNSCOPE_STATE_JSON=state)
        environment.update(env or {})
        process = subprocess.Popen([exe] + args, env=environment)
        try:
            d = display.Display()
            window = find_window(d, process.pid, 30)
            if window is None:
                raise Failure("no attnscope window appeared")
            app = App(d, window, state, process)
            app.wait("the first frame", lambda s: True, 30)
            yield app
        finally:
            process.kill()
            process.wait()
