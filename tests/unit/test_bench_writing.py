"""The writing bench (bench/writing.py): the bodies it chooses, the screen and the person, and
its accounting on the fake backend through the real server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench import writing
from bench.writing_screen import Screen, line_start, next_key, next_line, next_word

MODULE = '''import os


def short(x): return x


def kept(path):
    """Doc."""
    name = os.path.basename(path)
    return name.upper()


class Thing:
    def method(self, a,
               b):
        if a:
            return b
        return a
'''
# the fake backend continues its corpus: `Point.__init__`'s body exactly; after `add`'s
# signature it suggests `return a + b`, which is not this body
RIGHT = "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n"
WRONG = "def add(a, b):\n    return zip(b, a)\n"


def test_a_body_is_opened_without_its_lines_and_written_back_whole() -> None:
    bodies = writing.bodies_in("m.py", MODULE)
    assert [b.function for b in bodies] == ["kept", "Thing.method"]  # (not the one-liner)
    kept, method = bodies
    assert (
        kept.written
        == '\n    """Doc."""\n    name = os.path.basename(path)\n    return name.upper()'
    )
    assert kept.opened.startswith(
        "import os\n\n\ndef short(x): return x\n\n\ndef kept(path):\n\n\n"
    )
    for body in bodies:
        opened = body.opened
        assert opened[: body.start] + body.written + opened[body.start :] == MODULE
    assert method.written.count("\n") == 3 and method.opened.count("b):\n\n") == 0


def test_the_rule_takes_one_body_per_module_the_packages_in_turn(tmp_path: Path) -> None:
    body = (
        "    value = compute(a, b, default=None)\n    other = value * 2 + a\n    return other - b\n"
    )
    for package, n in (("anyio", 3), ("h11", 1)):
        for i in range(n):
            path = tmp_path / package / f"mod{i}.py"
            path.parent.mkdir(exist_ok=True)
            path.write_text(f"def f(a, b):\n{body}\n\ndef g(a, b):\n{body}")
    (tmp_path / "anyio" / "tests").mkdir()
    (tmp_path / "anyio" / "tests" / "test_x.py").write_text(f"def t(a, b):\n{body}")
    order = writing.chosen(0, tmp_path)
    assert [b.path.split("/")[0] for b in order] == ["anyio", "h11", "anyio", "anyio"]
    assert len({b.path for b in order}) == 4 and writing.chosen(0, tmp_path) == order
    assert writing.select(order, "choose", 9) == order[0::2]
    assert writing.select(order, "judge", 1) == order[1:2]


def test_acceptnextword_and_acceptnextline_take_what_vs_code_takes() -> None:
    assert next_word("return x") == 6
    assert next_word("    return x") == 4  # the indentation first
    assert next_word(".name(") == 1
    assert next_word("(a, b)") == 1
    assert next_line("a = 1\n    b = 2") == 6
    assert next_line("a = 1") == 5


def test_keys_enter_with_the_indentation_and_pauses_are_at_a_lines_code() -> None:
    body = "\n    if a:\n        return b\n\n    c()"
    assert next_key(body, 0) == "\n    "
    assert next_key(body, 5) == "i"
    assert next_key(body, 10) == "\n        "
    assert next_key(body, 27) == "\n" and next_key(body, 28) == "\n    "
    assert [i for i in range(len(body)) if line_start(body, i)] == [5, 19, 33]


def test_the_ghost_text_is_typed_along_replaced_and_kept_over_empty_answers() -> None:
    screen = Screen("\n    total = a + b\n    return total")
    screen.typed("\n    ")
    assert screen.answer("total = a + b", 1.0)
    screen.typed("t")
    assert screen.ghost is not None and screen.ghost.text == "otal = a + b"
    assert not screen.answer("", 1.2) and screen.ghost.text == "otal = a + b"  # kept
    assert not screen.answer("otal = a + b\n    return total", 1.3)  # grown: the same one
    assert screen.ghost.since == 1.0 and screen.suggestions[0].right
    assert screen.acceptable("off") == "otal = a + b\n    return total"
    screen.typed("x")  # differs: hidden
    assert screen.ghost is None and screen.acceptable("line") == ""
    assert len(screen.suggestions) == 1


def test_a_partial_accept_takes_the_right_part_and_leaves_the_rest_shown() -> None:
    screen = Screen("\n    a = 1\n    b = 2")
    screen.typed("\n    ")
    screen.answer("a = 1\n    c = 3", 0.0)
    assert screen.acceptable("off") == ""
    assert screen.acceptable("word") == "a"
    assert screen.acceptable("line") == "a = 1\n"
    assert not screen.accept("a = 1\n")
    assert screen.ghost is not None and screen.ghost.text == "    c = 3"
    assert screen.done == 11 and screen.suggestions[0].accepted == 6
    assert not screen.suggestions[0].right  # wrong as a whole
    screen.answer("    c = 3", 0.5)  # the server's rest: the same suggestion, not counted again
    screen.answer("    b = 2", 0.6)
    assert [s.right for s in screen.suggestions] == [False, True]


def run_fake(tmp_path: Path, *flags: str) -> dict:
    bodies = [writing.bodies_in("right.py", RIGHT)[0], writing.bodies_in("wrong.py", WRONG)[0]]
    args = writing.parse(
        [
            *("--backend", "fake", "--read-s", "0.2", "--key-ms", "20", "--think-s", "1.0"),
            *("--accept-after-s", "0.05", "--stderr", str(tmp_path / "server.log"), *flags),
        ]
    )
    return asyncio.run(writing.run(args, bodies))


@pytest.mark.timeout(60)
def test_on_the_fake_backend_the_exact_body_is_tab_and_the_wrong_one_typed(
    tmp_path: Path,
) -> None:
    data = run_fake(tmp_path)
    right, wrong = data["files"]
    assert right["accepted"] == len(right["suggestions"][0]["text"]) == 29
    assert right["accepted_non_blank"] == right["non_blank"]  # all but the first Enter's
    assert (right["whole"], right["right"], right["wrong"]) == (1, 1, 0)
    assert right["pauses"][0]["accepted"] and right["pauses"][0]["ghost_s"] < 1.0
    assert (wrong["accepted"], wrong["whole"], wrong["partial"], wrong["right"]) == (0, 0, 0, 0)
    assert wrong["wrong"] >= 1 and wrong["pauses"][0]["ghost_s"] is not None
    totals = data["totals"]
    assert totals["completed"] == pytest.approx(29 / (38 + 21))
    assert totals["first_pause_ghost"] == 2 and totals["ghost_within"]["1"] == 1.0
    assert totals["cpu_s"] > 0 and not data["errors"]
    # the server saw the same: one suggestion accepted (its command run), the other typed
    assert data["server"]["acceptance"]["accepted"] == 1
    assert "| **total** | 59 | 49% (53%) | 1 / 0 | 1 / 1 | 2 |" in data["table"]


def test_a_pause_without_ghost_text_says_whether_an_answer_said_nothing_or_none_came() -> None:
    from bench.writing_screen import Pause

    shown, silent, late, nothing = (Pause(n, 10.0) for n in (1, 2, 3, 4))
    shown.seen(10.4, right=True)
    shown.silent(10.6)  # (ghost text on screen: not a silent pause)
    silent.silent(10.9)
    late.silent(12.0)  # (past the last mark: as if none came by then)
    assert (shown.silent_s, silent.silent_s) == (None, pytest.approx(0.9))
    written = writing.Written("f", 10, 10, pauses=[shown, silent, late, nothing])
    totals = writing.totals([written])
    assert totals["silent_by_last"] == 0.25 and totals["unanswered_by_last"] == 0.5
    assert totals["ghost_within"]["1.5"] == 0.25
