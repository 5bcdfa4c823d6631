#!/usr/bin/python3
"""The panels as the app lays them out at start, checked without looking: attnscope --screenshot
with --layout-json at one screen size, then the rules a student needs (every panel inside the
display and under the menu bar, Heads not covered, the pipeline's 17 rows without a scrollbar,
nothing cut off at a panel's edge or a table column's without a scrollbar to reach it).

usage (under xvfb-run): layout_test.py ATTNSCOPE WIDTHxHEIGHT [app arguments ...]
       layout_test.py ATTNSCOPE WIDTHxHEIGHT --presentation [--lang zh]   (every step's slide: no scrollbar)
       layout_test.py ATTNSCOPE --bad-path   (a folder that does not exist: one line, exit 2)
"""
import json
import os
import subprocess
import sys
import tempfile


def fail(message):
    sys.exit("FAIL: " + message)


def check_bad_path(exe):
    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "no_such_folder", "layout.json")
        r = subprocess.run([exe, "--screenshot", os.path.join(tmp, "shot.png"), "--layout-json", bad],
                           capture_output=True, text=True, timeout=120)
        lines = r.stderr.splitlines()
        if r.returncode != 2 or len(lines) != 1 or "--layout-json" not in lines[0]:
            fail("a bad --layout-json path: exit %d, stderr %r (expected exit 2 and one line naming "
                 "--layout-json)" % (r.returncode, r.stderr))
        print("PASS: a bad --layout-json path:", lines[0])


def layout(exe, size, app_args):
    """The --layout-json report of attnscope --screenshot at this size with these arguments."""
    with tempfile.TemporaryDirectory() as tmp:
        report_path = os.path.join(tmp, "layout.json")
        env = dict(os.environ)
        env.pop("XDG_CONFIG_HOME", None)
        r = subprocess.run([exe, "--screenshot", os.path.join(tmp, "shot.png"), "--size", size,
                            "--layout-json", report_path] + app_args,
                           capture_output=True, text=True, timeout=120, env=env)
        if r.returncode != 0:
            fail("attnscope exited %d: %s" % (r.returncode, r.stderr))
        with open(report_path) as f:
            return json.load(f)


def check_presentation(exe, size, app_args):
    """Presentation mode on a projector: each step's narrative beside its heatmap, no scrollbar."""
    steps = subprocess.run([exe, "trace", "--json"], capture_output=True, text=True, check=True, timeout=60)
    names = [s["name"] for s in json.loads(steps.stdout)["steps"]]
    for name in names:
        report = layout(exe, size, ["--presentation", "--step", name] + app_args)
        slide = [p for p in report["panels"] if p["title"] == "Presentation"]
        if not slide:
            fail("no Presentation window at %s on %s" % (size, name))
        if slide[0]["scrolls"]:
            fail("presentation mode at %s %s needs a scrollbar on %s" % (size, " ".join(app_args), name))
        cuts = ["%s by %.0f px" % (c["where"], c["px"]) for c in slide[0]["cuts"]]
        if cuts:
            fail("presentation mode at %s %s cuts off on %s: %s" % (size, " ".join(app_args), name, "; ".join(cuts)))
    print("PASS: presentation mode at %s %s shows each of the %d steps without a scrollbar, nothing cut off"
          % (size, " ".join(app_args), len(names)))


def main():
    exe, size = sys.argv[1], sys.argv[2]
    if size == "--bad-path":
        return check_bad_path(exe)
    app_args = sys.argv[3:]
    if "--presentation" in app_args:
        return check_presentation(exe, size, [a for a in app_args if a != "--presentation"])
    width, height = (int(v) for v in size.split("x"))
    report = layout(exe, size, app_args)
    if report["display"] != [width, height]:
        fail("display %r, expected [%d, %d]" % (report["display"], width, height))
    menu = report["menu_bar_height"]
    if not 10 <= menu <= 80:
        fail("menu bar height %r" % menu)
    panels = {p["title"]: p for p in report["panels"]}
    eps = 0.5
    for p in report["panels"]:
        where = "%s at %s: x %.1f y %.1f w %.1f h %.1f" % (p["title"], size, p["x"], p["y"], p["w"], p["h"])
        if p["x"] < -eps or p["y"] < -eps or p["x"] + p["w"] > width + eps or p["y"] + p["h"] > height + eps:
            fail(where + " reaches outside the display")
        if p["y"] < menu - eps:
            fail(where + " overlaps the menu bar (%.1f px high)" % menu)
    # --gradients: the Gradients panel takes the right column (Heads and Row sums).
    right = ("gradients",) if "--gradients" in app_args else ("Heads", "Row sums")
    for needed in ("Pipeline", "Shape view", "Tensor inspector") + right:
        if needed not in panels:
            fail("no %s panel at %s (panels: %s)" % (needed, size, ", ".join(panels)))
    if "Heads" in panels and panels["Heads"]["visible_fraction"] < 0.999:
        fail("Heads is %.0f%% covered at %s" % (100 * (1 - panels["Heads"]["visible_fraction"]), size))
    if panels["Pipeline"]["scrolls"]:
        fail("the pipeline's 17 rows need a scrollbar at %s (h %.1f)" % (size, panels["Pipeline"]["h"]))
    cuts = ["%s: %s by %.0f px" % (p["title"], c["where"], c["px"]) for p in report["panels"] for c in p["cuts"]]
    if cuts:
        fail("cut off at %s %s: %s" % (size, " ".join(app_args), "; ".join(cuts)))
    print("PASS: %d panels inside %s under a %.0f px menu bar, Heads visible, the pipeline without a scrollbar, "
          "nothing cut off" % (len(panels), size, menu))


if __name__ == "__main__":
    main()
