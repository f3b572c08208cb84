"""Post-processing: golden cases (what the user sees for a raw model continuation), the
single/multi-line decision, and `stop_reached` agreeing with `postprocess`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spec_lsp.engine.finishing.postprocess import decide_multiline, postprocess, stop_reached

GOLDEN = json.loads((Path(__file__).parent / "golden" / "postprocess.json").read_text())


@pytest.mark.parametrize("case", GOLDEN, ids=[c["name"] for c in GOLDEN])
def test_golden(case):
    got = postprocess(
        case["raw"], prefix=case["prefix"], suffix=case["suffix"], multiline=case["multiline"]
    )
    assert got == case["expected"]


def test_there_are_enough_golden_cases():
    assert len(GOLDEN) >= 25
    assert {c["multiline"] for c in GOLDEN} == {True, False}


@pytest.mark.parametrize(
    ("prefix", "suffix", "setting", "expected"),
    [
        ("def f():\n    ", "\n", "auto", True),  # an empty line in a block
        ("def f():\n", "", "auto", True),  # an empty line at column 0
        ("", "", "auto", True),  # an empty file
        ("    ", "   \n", "auto", True),  # blanks on both sides
        ("def f():", "\n", "auto", True),  # after a block opener
        ("foo(", "\n", "auto", True),
        ("x = [", "", "auto", True),
        ("function f() {  ", "\n", "auto", True),
        ("const f = () =>", "\n", "auto", True),
        ("def f():\r\n    ", "\r\n", "auto", True),  # CRLF
        ("x = fo", "o(1)\n", "auto", False),  # mid-line
        ("foo(", ")\n", "auto", False),  # mid-line, even before a closing bracket
        ("x = fo", "\n", "auto", False),  # after text
        ("x = undo", "\n", "auto", False),
        ("return x  ", "\r\n", "auto", False),
        ("x = fo", "\n", "always", True),
        ("foo(", ")\n", "always", True),
        ("def f():\n    ", "\n", "never", False),
    ],
)
def test_multiline_decision(prefix, suffix, setting, expected):
    assert decide_multiline(prefix, suffix, setting) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", False), ("abc", False), ("abc\n", True), ("\n", True), ("a\r\nb", True), ("abc\r", True)],
)
def test_single_line_stops_at_a_newline(text, expected):
    assert stop_reached(text, prefix="x = ", suffix="\n", multiline=False) is expected


@pytest.mark.parametrize(
    ("prefix", "suffix", "text", "expected"),
    [
        ("def f(x):\n    ", "\n    return y\n", "y = 1", False),
        ("def f(x):\n    ", "\n    return y\n", "y = 1\n", False),
        ("def f(x):\n    ", "\n    return y\n", "y = 1\n    return y", False),  # may grow
        ("def f(x):\n    ", "\n    return y\n", "y = 1\n    return y\n", True),
        ("def f(x):\n    ", "\n", "y = 1\nd", True),  # a dedent is known at its first char
        ("def f(x):\n    ", "\n", "y = 1\n  ", False),  # blanks so far
        ("def f(x):\n    ", "\n", "y = 1\n\n", False),
        ("def f(x):\n    ", "\n", "y = 1\n\n\n", True),  # two blank lines
        ("foo(", "\n", "\n    a,\n)", False),  # the closing line may go on: `).bar()`
        ("foo(", "\n", "\n    a,\n)\n", True),
        ("def f():\n", "", "    return 1\n\nd", True),
    ],
)
def test_multi_line_stops(prefix, suffix, text, expected):
    assert stop_reached(text, prefix=prefix, suffix=suffix, multiline=True) is expected


CONTEXTS = [
    ("def f(x):\n    ", "\n    return y\n"),
    ("def f():\n", ""),
    ("if x:", "\n"),
    ("foo(", ")\n"),
    ("print(", ")\n"),
    ("function f() {\n    ", "\n}\n"),
    ("x = [\n    ", "\r\n]\r\n"),
    ("class A:\r\n    def f(self):\r\n        ", "\r\n"),
    ("", ""),
    ("x = fo", "o(1)\n"),
]
PIECES = ["a", "b", " ", "    ", "\t", "\n", "\r\n", ")", "}", "]", ":", "(", '"', "return y", "\r"]
raw_text = st.lists(st.sampled_from(PIECES), max_size=25).map("".join)


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(CONTEXTS), raw_text, raw_text, st.booleans())
def test_once_stopped_more_text_changes_nothing(context, text, more, multiline):
    prefix, suffix = context
    if stop_reached(text, prefix=prefix, suffix=suffix, multiline=multiline):
        longer = text + more
        assert postprocess(longer, prefix=prefix, suffix=suffix, multiline=multiline) == (
            postprocess(text, prefix=prefix, suffix=suffix, multiline=multiline)
        )
        assert stop_reached(longer, prefix=prefix, suffix=suffix, multiline=multiline)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(CONTEXTS), raw_text, st.booleans())
def test_output_shape(context, raw, multiline):
    prefix, suffix = context
    out = postprocess(raw, prefix=prefix, suffix=suffix, multiline=multiline)
    if not multiline:
        assert "\n" not in out
    crlf_doc = "\r\n" in prefix or (not prefix and "\r\n" in suffix)
    lines = out.split("\r\n") if crlf_doc else out.split("\n")
    assert all("\r" not in line for line in lines)
    assert all(line == line.rstrip() for line in lines[:-1])  # trimmed, except before the rest
    if out:
        assert out.strip()


def test_decoding_stops_as_soon_as_the_result_is_fixed():
    """Feed a long continuation piece by piece: the loop may stop right after the dedent."""
    prefix, suffix = "def f(x):\n    ", "\n"
    raw = "y = x * 2\n    return y\n\ndef g():\n    pass\n    pass\n"
    stops = [
        n
        for n in range(len(raw) + 1)
        if stop_reached(raw[:n], prefix=prefix, suffix=suffix, multiline=True)
    ]
    assert raw[: stops[0]] == "y = x * 2\n    return y\n\nd"
    assert postprocess(raw[: stops[0]], prefix=prefix, suffix=suffix, multiline=True) == (
        "y = x * 2\n    return y"
    )
