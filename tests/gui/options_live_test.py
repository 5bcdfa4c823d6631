#!/usr/bin/python3
"""Every command-line option does in the live window what it does with --screenshot: for each set of
options, the app is run headless (--screenshot) and as a window, both writing their state
(ATTNSCOPE_STATE_JSON), and what the user sees must agree: the step, the bug, presentation mode, the
quiz, the language, the file, the ViT, the inspector's slice, the followed element and which panels
are open.

usage (under xvfb-run -s "-screen 0 1280x720x24"): options_live_test.py ATTNSCOPE
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from live import Failure, launched  # noqa: E402

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO_VIT = [os.path.join(SOURCE, "assets/models/demo_vit.safetensors"),
            os.path.join(SOURCE, "assets/samples/03_square.png")]
SMALL = ["-B", "1", "-N", "6", "-C", "24", "--heads", "4"]

OPTION_SETS = [
    [],
    ["--bug", "softmax-dim-2"],
    ["--bug", "missing-scale", "--step", "scaled"],
    ["--bug", "softmax-dim-2", "--lang", "zh"],
    ["--presentation", "--bug", "reshape-without-permute"],
    ["--quiz"],
    ["--presentation", "--quiz", "--lang", "zh"],
    ["--step", "qkv_heads"] + SMALL,
    ["--gradients", "--no-scale", "-C", "2048", "--heads", "1"],
    ["--cost", "--follow", "scores[0,1,2,3]"],
    ["--flash", "--tile", "8x8"],
    ["--kv-cache", "-N", "8"],
    ["--window", "2", "--shift", "-N", "16", "-C", "32", "--heads", "2"],
    ["--reference", "mha", "--causal", "--training", "--attn-drop", "0.1", "--seed", "3"],
    ["--valid-tokens", "12,16", "--qkv-bias", "--proj-drop", "0.1"],
    [os.path.join(SOURCE, "tests/data/activations/bug_softmax.safetensors")],
    [os.path.join(SOURCE, "tests/data/torch/acts.pt"), "--step", "attn"],
    ["--model", DEMO_VIT[0], "--image", DEMO_VIT[1]],
    ["--model", DEMO_VIT[0], "--image", DEMO_VIT[1], "--no-pos-embed", "--shuffle-patches", "7"],
    ["--demo-vit"],
]


def seen(state):
    """What the user sees, from a state, in the terms both runs share."""
    return {
        "step": state["step"],
        "bug": state["bug"],
        "presentation": state["presentation"],
        "quiz": state["quiz"]["on"],
        "asking": state["quiz"]["asking"],
        "language": state["language"],
        "file": os.path.basename(state["file"]),
        "vit": state["vit"],
        "steps": state["steps"],
        "slice": state.get("slice"),
        "followed": state["followed"],
        "panels": sorted(p["title"] for p in state["layout"]["panels"]),
    }


def headless(exe, args, size):
    with tempfile.TemporaryDirectory() as folder:
        state = os.path.join(folder, "state.json")
        env = dict(os.environ, ATTNSCOPE_STATE_JSON=state)
        env.pop("XDG_CONFIG_HOME", None)
        r = subprocess.run([exe] + args + ["--screenshot", os.path.join(folder, "shot.png"), "--size", size],
                           env=env, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise Failure(f"--screenshot {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
        with open(state, encoding="utf-8") as f:
            return json.load(f)


def live(exe, args, size):
    with launched(exe, args + ["--size", size]) as app:
        app.wait("the first run", lambda s: s["trace"] and not s["busy"] and not s["loading"], 60)
        time.sleep(1.5)  # the frames after it (panels placed, the zoo's panel opened)
        return app.wait("the window settled", lambda s: s["trace"] and not s["busy"], 10)


def main():
    exe = sys.argv[1]
    size = "1280x720"
    failures = []
    for args in OPTION_SETS:
        try:
            a, b = seen(headless(exe, args, size)), seen(live(exe, args, size))
        except Failure as e:
            failures.append(f"{' '.join(args) or '(no options)'}: {e}")
            continue
        differ = {k: (a[k], b[k]) for k in a if a[k] != b[k]}
        if differ:
            failures.append(f"{' '.join(args) or '(no options)'}: the window differs from --screenshot in " +
                            "; ".join(f"{k}: screenshot {v[0]!r}, window {v[1]!r}" for k, v in differ.items()))
        else:
            print(f"same: {' '.join(args) or '(no options)'} -> step {a['step']}, bug {a['bug']}, {len(a['panels'])} panels")
    if failures:
        sys.exit("FAIL:\n  " + "\n  ".join(failures))
    print(f"PASS: {len(OPTION_SETS)} sets of options give the same state in the window as with --screenshot")


if __name__ == "__main__":
    main()
