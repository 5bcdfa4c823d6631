#!/usr/bin/python3
"""The app as people use it: a teacher's lesson, a student's exploration and a practitioner's files,
driven through the live window with real key presses and clicks (XTEST) and checked on the state
the app writes (ATTNSCOPE_STATE_JSON): every step of the journey did what the user asked, nothing
is cut off and nothing is off screen.

usage (under xvfb-run -s "-screen 0 WxHx24"):
  journey_test.py lesson|student|practitioner ATTNSCOPE WxH en|zh [CAPTURE_DIR]
CAPTURE_DIR: also save the screen (import -window root) at the journey's main moments.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from live import Failure, check_nothing_cut, drop, launched  # noqa: E402

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def center(rect):
    x, y, w, h = rect
    return x + w / 2, y + h / 2


def click_item(app, name, what):
    """Clicks the item the last frame drew under `name` (menus, heads, the quiz's field)."""
    s = app.wait(f"{what}: '{name}' on screen", lambda s: name in s["items"], 10)
    x, y, w, h = s["items"][name]
    dw, dh = s["layout"]["display"]
    if x < 0 or y < 0 or x + w > dw or y + h > dh:
        raise Failure(f"{what}: '{name}' at {x:.0f},{y:.0f} {w:.0f}x{h:.0f} is off the {dw:.0f}x{dh:.0f} screen")
    app.click(*center(s["items"][name]))


def menu(app, menu_name, item, what):
    click_item(app, "menu:" + menu_name, what)
    click_item(app, item, what)


def answer_heads(app, j, h):
    """Picks h in the "How many heads?" dialog and opens the file with it."""
    click_item(app, "heads:choice", "the heads selector")
    click_item(app, f"heads:{h}", f"h = {h} in the heads selector")
    j.settled(f"h = {h} chosen", lambda s: s["heads_question"] and s["heads_question"]["choice"] == h)
    click_item(app, "heads:open", f"Open with h = {h}")


def shape_text(shape):
    return ",".join(str(n) for n in shape)


class Journey:
    def __init__(self, app, captures, tag):
        self.app, self.captures, self.tag = app, captures, tag

    def capture(self, moment):
        if self.captures:
            self.app.capture(os.path.join(self.captures, f"{self.tag}_{moment}.png"))

    def settled(self, what, predicate, timeout=20.0):
        """Waits for predicate, then checks that nothing is cut or off screen once the frames after
        it are drawn too (ImGui gives a grown window its scrollbar one frame late)."""
        self.app.wait(what, predicate, timeout)
        time.sleep(0.8)
        s = self.app.wait(what, predicate, 5)
        check_nothing_cut(s, what)
        return s


def lesson(app, j):
    """Start, Play from the first step to the last, presentation mode through five steps, the quiz
    answered right and wrong, a bug of the zoo opened from the menu and presented."""
    s = j.settled("the demo on screen", lambda s: s["trace"] and not s["busy"] and s["steps"] > 10, 30)
    last, opening = s["steps"] - 1, s["step_index"]
    j.capture("start")
    app.key("space")
    # From the first step (the reshapes and permutes), not from the opening step (attn): one step
    # each 1.2 s, so the first steps are seen playing even on a busy machine.
    s = app.wait("Play starts at the first step", lambda s: s["playing"] and s["step_index"] < opening, 10)
    if opening < 3:
        raise Failure(f"the app opens at step {opening}: this journey expects it to open on the maps")
    j.settled("Play runs to the last step and stops", lambda s: not s["playing"] and s["step_index"] == last, 60)
    app.key("F5")
    j.settled("F5: presentation mode", lambda s: s["presentation"])
    app.key("Home")
    j.settled("Home: the first step", lambda s: s["step_index"] == 0)
    for i in range(1, 6):
        app.key("Right")
        j.settled(f"presentation mode, step {i + 1}", lambda s, i=i: s["presentation"] and s["step_index"] == i)
    j.capture("presentation")
    app.key("F5")
    j.settled("F5 again: the panels", lambda s: not s["presentation"])

    menu(app, "View", "view:quiz", "the quiz from the View menu")
    s = j.settled("the quiz asks the next step's shape", lambda s: s["quiz"]["on"] and s["quiz"]["asking"] is not None)
    click_item(app, "quiz:answer", "the quiz's answer field")
    app.type(shape_text(s["quiz"]["asking_shape"]))
    app.key("Return")
    s = j.settled("a right answer is scored right", lambda s: s["quiz"]["right"] == 1 and s["quiz"]["asked"] == 1)
    if s["quiz"]["last_answer"] != "right":
        raise Failure(f"the right answer was graded {s['quiz']['last_answer']}")
    app.key("Right")
    j.settled("→ with the quiz on: the next question", lambda s: s["quiz"]["asking"] is not None)
    click_item(app, "quiz:answer", "the quiz's answer field")
    app.type("1,1")
    click_item(app, "quiz:check", "the quiz's Check button")
    s = j.settled("a wrong answer is scored wrong",
                  lambda s: s["quiz"]["asked"] == 2 and s["quiz"]["right"] == 1 and s["quiz"]["last_answer"] == "wrong")
    # Its text changed height: the window stays in its corner, Row sums' controls do not peek out under it.
    quiz = next(p for p in s["layout"]["panels"] if p["title"] == "Quiz")
    if quiz["y"] + quiz["h"] < s["layout"]["display"][1] - 1:
        raise Failure(f"the Quiz window's bottom edge left the display's ({quiz['y'] + quiz['h']:.0f} px of "
                      f"{s['layout']['display'][1]:.0f}) after an answer")
    j.capture("quiz")
    # The quiz in presentation mode: under the narrative, whose first line stays in sight.
    app.key("F5")
    j.settled("F5 with the quiz on: presentation mode", lambda s: s["presentation"])
    app.key("Right")
    s = j.settled("the next question presented", lambda s: s["presentation"] and s["quiz"]["asking"] is not None
                  and "slide:narrative_first_line" in s["items"] and "quiz:answer" in s["items"])
    region, first = s["items"]["slide:narrative"], s["items"]["slide:narrative_first_line"]
    answer = s["items"]["quiz:answer"]
    if first[1] < region[1] - 0.5 or first[1] + first[3] > region[1] + region[3] + 0.5:
        raise Failure(f"the narrative's first line {first} is scrolled out of its region {region}")
    if answer[1] < first[1] + first[3] or answer[1] + answer[3] > s["layout"]["display"][1]:
        raise Failure(f"the quiz's answer field {answer} is not under the narrative and on screen")
    j.capture("quiz_presented")
    app.key("F5")
    j.settled("F5 again: the panels", lambda s: not s["presentation"])
    menu(app, "View", "view:quiz", "the quiz off")
    j.settled("the quiz off", lambda s: not s["quiz"]["on"])

    menu(app, "Bug zoo", "bug:softmax-dim-2", "a bug from the Bug zoo menu")
    j.settled("the bug's run and its Bug zoo panel",
              lambda s: s["bug"] == "softmax-dim-2" and not s["busy"] and any(p["title"] == "zoo" for p in s["layout"]["panels"]),
              30)
    # The evidence: the difference map in the inspector, at least a quarter of the panel's height.
    s = j.settled("the difference map", lambda s: "inspector:map" in s["items"])
    inspector = next(p for p in s["layout"]["panels"] if p["title"] == "Tensor inspector")
    map_h = s["items"]["inspector:map"][3]
    if map_h < inspector["h"] / 4:
        raise Failure(f"the bug's difference map is {map_h:.0f} px high in a {inspector['h']:.0f} px inspector")
    j.capture("bug")
    app.key("F5")
    s = j.settled("the bug presented", lambda s: s["presentation"] and s["bug"] == "softmax-dim-2")
    # The slide tells the bug's story at its line, not the correct softmax's ("every row sums to 1").
    bug_title = {"en": "the bug: softmax over dim -2", "zh": "错误：在 dim -2 上做 softmax"}[s["language"]]
    if s["step"] != "attn" or s["slide_title"] != bug_title:
        raise Failure(f"the bug's slide at {s['step']} is titled {s['slide_title']!r}, not {bug_title!r}")
    j.capture("bug_presented")


def student(app, j):
    """Click a head, step forward three times: the head stays; follow an element; switch language."""
    j.settled("the demo at attn", lambda s: s["trace"] and not s["busy"] and s["step"] == "attn", 30)
    click_item(app, "head:3", "head 3 in the Heads grid")
    j.settled("head 3 chosen", lambda s: s["head"] == 3)
    for i in range(3):
        before = app.state()["step_index"]
        app.key("Right")
        s = j.settled(f"→ number {i + 1}", lambda s, b=before: s["step_index"] == b + 1)
        if "h" in s["slice"]["axes"] and s["head"] is not None and s["head"] != 3:
            raise Failure(f"at {s['step']} the inspector shows head {s['head']}, not the head 3 the student chose")
        if i < 2 and s["head"] != 3:
            raise Failure(f"at {s['step']} (axes {s['slice']['axes']}) head 3 is not kept: {s['head']}")
    click_item(app, "inspector:map", "a cell of the inspector's map")
    j.settled("a clicked element is followed", lambda s: s["followed"] is not None and s["followed"]["pinned"])
    j.capture("followed")
    other = "zh" if app.state()["language"] == "en" else "en"
    click_item(app, "menu:View", "the View menu")
    click_item(app, "menu:Language", "the Language menu")
    click_item(app, "lang:" + other, "the other language")
    s = j.settled("the language switched", lambda s: s["language"] == other)
    if s["followed"] is None:
        raise Failure("switching the language dropped the followed element")
    j.capture("language")
    # h = 7 does not divide C = 768: the reason shows where the student looks, above the pipeline's
    # steps, not only at the Config panel's foot.
    s = app.wait("the Config panel's h field on screen", lambda s: "config:heads" in s["items"], 10)
    x, y, w, h = s["items"]["config:heads"]
    app.click(x + 12, y + h / 2)  # the number, left of its - and + buttons
    app.key("a", ctrl=True)
    app.type("7")
    app.key("Return")
    s = j.settled("h = 7 refused", lambda s: s["config_errors"] and "pipeline:config_error" in s["items"])
    x, y, w, h = s["items"]["pipeline:config_error"]
    pipeline = next(p for p in s["layout"]["panels"] if p["title"] == "Pipeline")
    if y < pipeline["y"] or y + h > pipeline["y"] + pipeline["h"] or s["heads"] != 8 or "7" not in s["config_errors"][0]:
        raise Failure(f"the refusal {s['items']['pipeline:config_error']} is not in sight in the pipeline {pipeline}, "
                      f"or the trace on screen changed (h = {s['heads']})")
    j.capture("refused")


def practitioner(app, j):
    """A broken file from the command line, a checkpoint and saved activations by drag-and-drop and
    by File > Open, a broken file dropped, and back to the demo."""
    broken = os.path.join(SOURCE, "tests/data/torch/bad/truncated.pt")
    s = j.settled("the broken file's message over the demo",
                  lambda s: "truncated.pt" in s["message"] and s["trace"] and not s["busy"], 30)
    j.capture("broken")
    app.key("Escape")
    s = j.settled("after OK the demo is usable", lambda s: s["message"] == "" and s["trace"] and s["steps"] > 10)
    app.key("Right")
    j.settled("→ steps the demo", lambda s, b=s["step_index"]: s["step_index"] == b + 1)

    acts = os.path.join(SOURCE, "tests/data/torch/acts.pt")
    if not drop(app.d, app.window, acts):
        raise Failure("the window did not take the dropped activations")
    j.settled("dropped activations on screen", lambda s: s["file"].endswith("acts.pt") and not s["busy"], 30)

    # A forward hook's capture {module: (out, weights)}: the maps found by their values, per head.
    capture = os.path.join(SOURCE, "tests/data/saved/hooks/vit_capture.pt")
    if not drop(app.d, app.window, capture):
        raise Failure("the window did not take the dropped hook capture")
    s = j.settled("the hook capture's maps", lambda s: s["file"].endswith("vit_capture.pt") and not s["busy"], 30)
    if s["shape"] != [1, 4, 17, 17] or s["heads"] != 4 or not any("found by its values" in n for n in s["file_notes"]):
        raise Failure(f"the capture's attn [1, 4, 17, 17] in 4 heads, found by its values; got {s['shape']}, "
                      f"h = {s['heads']}, notes {s['file_notes']}")
    j.capture("hook_capture")
    # The article's MultiHeadAttention pickled whole: its num_heads attribute says h, nothing is asked.
    whole = os.path.join(SOURCE, "tests/data/saved/whole/mha.pt")
    if not drop(app.d, app.window, whole):
        raise Failure("the window did not take the dropped whole module")
    s = j.settled("the whole module's run", lambda s: s["file"].endswith("mha.pt") and not s["busy"], 30)
    if s["heads_question"] is not None or s["heads"] != 4:
        raise Failure(f"h = 4 from the module's num_heads without a question; got h = {s['heads']}, {s['heads_question']}")
    menu(app, "File", "file:back", "File > Back to the demo")
    j.settled("back to the demo", lambda s: s["file"] == "" and s["trace"] and not s["busy"], 30)

    checkpoint = os.path.join(SOURCE, "tests/data/torch/checkpoint.pth")
    menu(app, "File", "file:open", "File > Open")
    click_item(app, "browser:path", "the Open dialog's path field")
    app.key("a", ctrl=True)
    app.type(checkpoint, quick=True)
    app.key("Return")
    # MultiHeadAttention(16, 4)'s state dict does not say its 4 heads: the app asks, the demo stays.
    s = j.settled("the question: how many heads", lambda s: s["heads_question"] is not None and not s["busy"], 30)
    if s["heads_question"]["dim"] != 16 or s["file"] != "":
        raise Failure(f"the heads question for dim 16 over the demo, got {s['heads_question']} with file '{s['file']}'")
    j.capture("heads_question")
    answer_heads(app, j, 4)
    s = j.settled("the checkpoint opened with h = 4",
                  lambda s: s["file"].endswith("checkpoint.pth") and not s["busy"] and s["heads_question"] is None, 30)
    if s["heads"] != 4 or "heads h = 4 (chosen)" not in s["file_notes"]:
        raise Failure(f"h = 4 and the note saying it was chosen, got h = {s['heads']}, notes {s['file_notes']}")
    j.capture("checkpoint")

    if not drop(app.d, app.window, broken):
        raise Failure("the window did not take the dropped broken file")
    j.settled("the dropped broken file's message", lambda s: "truncated.pt" in s["message"], 30)
    app.key("Escape")
    j.settled("the checkpoint stays on screen", lambda s: s["message"] == "" and s["file"].endswith("checkpoint.pth"))
    menu(app, "File", "file:back", "File > Back to the demo")
    j.settled("back to the demo", lambda s: s["file"] == "" and s["trace"] and not s["busy"], 30)


def vit_heads(app, j):
    """A torchvision ViT's state dict (4 heads at D = 64) on a picture: the app asks for h before it
    shows a map, and shows the count it ran with beside the maps."""
    s = j.settled("the question: how many heads", lambda s: s["heads_question"] is not None and not s["busy"], 30)
    q = s["heads_question"]
    if q["dim"] != 64 or not q["picture"].endswith("03_square.png") or s["vit"]:
        raise Failure(f"the heads question for dim 64 and the picture, before any ViT map; got {q}, vit {s['vit']}")
    j.capture("question")
    answer_heads(app, j, 4)
    s = j.settled("the ViT on the picture with h = 4",
                  lambda s: s["vit"] and not s["busy"] and s["heads_question"] is None, 30)
    if s["heads"] != 4 or s["shape"] != [1, 4, 17, 17] or "image:heads" not in s["items"]:
        raise Failure(f"attn [1, 4, 17, 17] and the head count beside the maps, got h = {s['heads']}, shape {s['shape']}")
    j.capture("vit")
    # The picture with its overlay is the point of the view: at least a third of the Image panel's height.
    image = next(p for p in s["layout"]["panels"] if p["title"] == "Image")
    picture_h = s["items"]["image:picture"][3]
    if picture_h < image["h"] / 3 - 1:
        raise Failure(f"the picture is {picture_h:.0f} px high in an Image panel {image['h']:.0f} px high (less than a third)")
    # A click on a patch shows where that patch looks, and moves nothing: the picture stays under the mouse.
    x, y, w, h = before = s["items"]["image:picture"]
    app.click(x + w * 0.6, y + h * 0.6)
    s = j.settled("a patch picked as the query", lambda s: s["vit_query"] not in (None, 0))
    after = s["items"]["image:picture"]
    if any(abs(a - b) > 0.5 for a, b in zip(before, after)):
        raise Failure(f"clicking a patch moved the picture from {before} to {after}")
    j.capture("patch")
    # Presentation mode: the picture at a third of the screen's height, the class token's maps under
    # the narrative.
    app.key("F5")
    s = j.settled("F5: the ViT's slide", lambda s: s["presentation"] and "slide:picture" in s["items"])
    display_h = s["layout"]["display"][1]
    slide_h = s["items"]["slide:picture"][3]
    if slide_h < display_h / 3 - 1:
        raise Failure(f"the slide's picture is {slide_h:.0f} px high on a {display_h:.0f} px screen (less than a third)")
    if "slide:map" not in s["items"] or s["items"]["slide:map"][3] < 40:
        raise Failure(f"the class token's maps on the slide, each at least 40 px; got {s['items'].get('slide:map')}")
    j.capture("slide")
    app.key("F5")
    j.settled("F5 again: the panels", lambda s: not s["presentation"])


JOURNEYS = {"lesson": (lesson, []),
            "student": (student, []),
            "practitioner": (practitioner, [os.path.join(SOURCE, "tests/data/torch/bad/truncated.pt")]),
            "vit_heads": (vit_heads, ["--model", os.path.join(SOURCE, "tests/data/heads/vit/model.pth"),
                                      "--image", os.path.join(SOURCE, "assets/samples/03_square.png")])}


def main():
    name, exe, size, lang = sys.argv[1:5]
    captures = sys.argv[5] if len(sys.argv) > 5 else None
    if captures:
        os.makedirs(captures, exist_ok=True)
    run, extra = JOURNEYS[name]
    try:
        with launched(exe, ["--size", size, "--lang", lang] + extra) as app:
            journey = Journey(app, captures, f"{name}_{size}_{lang}")
            try:
                run(app, journey)
            except Failure:
                journey.capture("failure")  # what the user saw when it went wrong
                raise
    except Failure as e:
        sys.exit(f"FAIL ({name} at {size}, {lang}): {e}")
    print(f"PASS: the {name} journey at {size} in {lang}")


if __name__ == "__main__":
    main()
