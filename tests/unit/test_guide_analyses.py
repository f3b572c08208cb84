"""The guide's analysis thread: tables for the text in front of a request, other documents read
as the editor holds them, closing without waiting, and the first table where the person types
(the warm-up, the receivers nearest the cursor first, a first ask waiting for it)."""

from __future__ import annotations

import pytest

from spec_lsp.engine.guide import edits


# -- 1. a table for the text in front of the request -------------------------------------------
@pytest.mark.parametrize(
    ("edit", "kept", "stale"),
    [
        # a method added: every set of the file but what its imports name
        (("    def area", "    def scale(self):\n        pass\n\n    def area"), ["os"], ["s"]),
        # typing a member: nothing
        (("x = s.", "x = s.wid"), ["s", "self", "os"], ["x"]),
        # what a local is bound to, not read by a return: that name's receivers
        (("y = self.w", "y = self.w\n        z = 2"), ["s", "self"], ["z"]),
        # a return: what calls of that function infer to (outside it), not `self`'s set
        (("return y", "return y + 1"), ["self", "os", ("class Box", "def area") + ("y",)], ["s"]),
        # blank lines and comments: nothing
        (("x = s.\n", "x = s.\n\n    # more\n"), ["s", "self", "x"], []),
    ],
)
def test_what_an_edit_may_change(edit, kept, stale):
    text = (
        "import os\nfrom pkg import Shape\n\n\nclass Box:\n    def __init__(self, w):\n"
        "        self.w = w\n\n    def area(self):\n        y = self.w\n        return y\n\n\n"
        "def grow(s: Shape):\n    x = s.\n    return x\n"
    )
    change = edits.python_change(text, text.replace(*edit))
    imported = edits.imported_names(text)
    keys = {
        "s": (("def grow",), "s"),
        "x": (("def grow",), "x"),
        "z": (("class Box", "def area"), "z"),
        "self": (("class Box",), "self"),
        "os": ((), "os"),
    }
    for name in kept:
        key = (name[:-1], name[-1]) if isinstance(name, tuple) else keys[name]
        assert not change.stale(key, imported), (name, change)
    for name in stale:
        assert change.stale(keys[name], imported), (name, change)
