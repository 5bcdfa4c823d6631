#!/usr/bin/python3
"""A broken file dropped on the live app: the "Cannot open the file" dialog appears with no other
input (no mouse move or key after the drop), says what is wrong in the UI's language with the path
as it is, and once closed (Esc) the app steps on as before.

usage (under xvfb-run): bad_file_live_test.py ATTNSCOPE BROKEN_FILE LANG EXPECTED_WORDS
  EXPECTED_WORDS: text the dialog must show (in LANG) besides the file's path
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live  # noqa: E402
from drop_test import drop  # noqa: E402


def main():
    exe, broken, lang, words = sys.argv[1:5]
    with live.launched(exe, ["--lang", lang]) as app:
        app.wait("the demo", lambda s: s["trace"] and not s["busy"], 30)
        time.sleep(1.0)  # the pacer idles: nothing more is drawn until something happens
        if not drop(app.d, app.window, broken, timeout=10):
            raise live.Failure("the app did not take the drop")
        s = app.wait("the dialog on screen with no input after the drop", lambda s: s["modal"] == "cannot_open", 10)
        shown = s["message_shown"]
        print("dialog:", shown)
        if not shown.startswith(broken):
            raise live.Failure(f"the dialog does not start with the path {broken}: {shown}")
        if words not in shown:
            raise live.Failure(f"the dialog does not say '{words}': {shown}")
        app.key("Escape")
        app.wait("the dialog closed", lambda s: s["modal"] == "" and s["message"] == "", 10)
        before = s["step_index"]
        app.key("Right")
        app.wait("a step on after the dialog", lambda s: s["step_index"] == before + 1, 10)
    print("PASS: the dialog appeared by itself, in", lang, "and the app went on")


if __name__ == "__main__":
    try:
        main()
    except live.Failure as e:
        sys.exit(f"FAIL: {e}")
