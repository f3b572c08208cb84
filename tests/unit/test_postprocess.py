"""Post-processing golden cases: what the user sees for a raw model continuation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spec_lsp.engine.postprocess import decide_multiline, postprocess, stop_reached

CASES = [
    # (name, prefix, suffix, raw, multiline, expected)
    ("single line stops at newline", "x = fo", "\n", "o(1)\ny = 2\n", False, "o(1)"),
    ("closing paren already after the cursor", "print(", ")\n", "x, y)\n", False, "x, y"),
    ("closing quote and paren after the cursor", 'f("', '")\n', 'hello")', False, "hello"),
    ("rest of line not duplicated", "items = [", "]\n", "1, 2, 3]", False, "1, 2, 3"),
    ("partial overlap of brackets", "d = {", "}\n", "'a': 1}", False, "'a': 1"),
    ("no overlap kept", "x = ", "\n", "compute()", False, "compute()"),
    ("trailing whitespace trimmed", "x = ", "\n", "1   ", False, "1"),
    ("empty result", "x = ", "\n", "   \n", False, ""),
    ("only whitespace multi", "def f():\n    ", "\n", "\n\n  \n", True, ""),
    (
        "multi-line block body",
        "def f(x):\n    ",
        "\n",
        "y = x * 2\n    return y\n",
        True,
        "y = x * 2\n    return y",
    ),
    (
        "stops at dedent",
        "def f(x):\n    ",
        "\n",
        "return x\n\ndef g():\n    pass\n",
        True,
        "return x",
    ),
    (
        "stops where the suffix continues",
        "def f(x):\n    ",
        "\n    return y\n",
        "y = x + 1\n    return y\n",
        True,
        "y = x + 1",
    ),
    (
        "keeps nested indentation",
        "for i in r:\n    ",
        "\n",
        "if i:\n        print(i)\n",
        True,
        "if i:\n        print(i)",
    ),
    ("two blank lines end it", "x = 1\n", "", "y = 2\n\n\nz = 3\n", True, "y = 2"),
    ("trailing blank lines dropped", "def f():\n    ", "", "pass\n\n", True, "pass"),
    ("each line trimmed", "def f():\n    ", "", "a = 1  \n    b = 2\t\n", True, "a = 1\n    b = 2"),
    (
        "crlf document keeps crlf",
        "def f():\r\n    ",
        "\r\n",
        "a = 1\r\n    b = 2\r\n",
        True,
        "a = 1\r\n    b = 2",
    ),
    ("single line in crlf", "x = 1\r\ny = ", "\r\n", "2\r\nz", False, "2"),
    ("multi-line after a block opener", "if x:", "\n", "\n    y()\n", True, "\n    y()"),
    (
        "indentation kept as generated",
        "class A:\n    def f(self):\n        ",
        "\n",
        "return self\n    def g(self):\n",
        True,
        "return self",
    ),
]


@pytest.mark.parametrize(
    ("name", "prefix", "suffix", "raw", "multiline", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_golden(name, prefix, suffix, raw, multiline, expected):
    assert postprocess(raw, prefix=prefix, suffix=suffix, multiline=multiline) == expected


@pytest.mark.parametrize(
    ("prefix", "suffix", "setting", "expected"),
    [
        ("def f():\n    ", "\n", "auto", True),  # empty line in a block
        ("def f():", "\n", "auto", True),  # after a block opener
        ("x = fo", "o(1)\n", "auto", False),  # mid-line
        ("x = fo", "\n", "auto", False),  # after text
        ("", "", "auto", True),  # empty file
        ("x = fo", "\n", "always", True),
        ("def f():\n    ", "\n", "never", False),
    ],
)
def test_multiline_decision(prefix, suffix, setting, expected):
    assert decide_multiline(prefix, suffix, setting) is expected


@given(
    raw=st.text(alphabet="ab ():\n", max_size=60),
    more=st.text(alphabet="ab ():\n", max_size=30),
    multiline=st.booleans(),
)
def test_stop_reached_is_consistent_with_postprocess(raw, more, multiline):
    prefix, suffix = "def f():\n    ", "\n    b\n"
    if stop_reached(raw, prefix=prefix, suffix=suffix, multiline=multiline):
        assert postprocess(
            raw + more, prefix=prefix, suffix=suffix, multiline=multiline
        ) == postprocess(raw, prefix=prefix, suffix=suffix, multiline=multiline)
