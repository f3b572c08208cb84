"""What Neovim really sends around a suggestion, and how the server counts it: each action a
person takes on a suggestion (accept, typing along key by key or faster than the client's
debounce, Enter with auto-indent, cycling, Escape), done in a real Neovim (0.11 with our shim,
0.12 native and with the shim) against the server through lsp_recorder. The server's
acceptance counts must be the action's; with SPEC_LSP_RECORD=1 the sequence is saved as a
fixture (tests/unit/editor_sequences/, replayed by tests/unit/test_editor_sequences.py).

Fake model only (its suggestions are known); skipped unless SPEC_LSP_EDITOR_E2E=1. Neovim has
no accept-word or accept-line (neither 0.12's vim.lsp.inline_completion nor our shim).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.editors import sequences
from tests.editors.test_neovim_e2e import (
    REAL,
    ghost_text,
    nvim_factory,  # noqa: F401 (the fixture)
    stats,
    variants,
    wait_for,
)

pytestmark = [pytest.mark.skipif(REAL, reason="the fake model's suggestions are known")]
RECORD = os.environ.get("SPEC_LSP_RECORD") == "1"
START = "import os\n\n"
OUTCOMES = ("accepted", "partial", "typed_through", "rejected")


def keys(nv, typed: str, pause: float) -> None:
    for key in typed:
        nv.input(key)
        time.sleep(pause)


def accept(nv, namespace):
    nv.input("<Tab>")
    return {"accepted": 1}


def typing_along(nv, namespace):
    keys(nv, "o(x", 0.4)  # slower than the debounce: one key a notification
    nv.input("Z")  # then something else
    return {"typed_through": 1}


def batched_keys(nv, namespace):
    nv.input("o(")  # two keys at once: one notification
    time.sleep(0.5)
    nv.input("Z")
    return {"typed_through": 1}


def enter_autoindent(nv, namespace):
    """After `def foo(x):` the suggestion is the body on the next line; Enter (the indent
    with it) then the first word typed along."""
    nv.input("<CR>")
    time.sleep(0.5)
    keys(nv, "ret", 0.3)
    nv.input("Z")
    return {"typed_through": 1}


def cycling(nv, namespace):
    nv.input("<M-]>")
    time.sleep(0.5)
    nv.input("<M-[>")
    time.sleep(0.5)
    wait_for("the ghost text again", lambda: ghost_text(nv, namespace), 10, 0.05)
    nv.input("<Tab>")
    return {"accepted": 1}


def escape(nv, namespace):
    nv.input("<Esc>")
    time.sleep(0.5)
    nv.input("oZ")  # a new line below, something typed
    return {"rejected": 1}


# id: (typed before the action, the action)
ACTIONS = {
    "accept": ("def fo", accept),
    "typing-along": ("def fo", typing_along),
    "batched-keys": ("def fo", batched_keys),
    "enter-autoindent": ("def foo(x):", enter_autoindent),
    "cycling": ("def fo", cycling),
    "escape": ("def fo", escape),
}


@pytest.mark.parametrize("action", list(ACTIONS))
@pytest.mark.parametrize(("binary", "native"), variants())
def test_an_action_on_a_suggestion_is_counted_as_it_was(
    nvim_factory,  # noqa: F811
    tmp_path: Path,
    binary: Path,
    native,
    action: str,
):
    record = tmp_path / "messages.jsonl"
    nv, _log = nvim_factory(binary, native, record=record)
    version = nv.exec_lua("return tostring(vim.version())")
    is_native = nv.exec_lua("return require('spec_lsp').config.native")
    namespace = "nvim.lsp.inline_completion" if is_native else "spec_lsp_inline"
    path = tmp_path / "demo.py"
    path.write_text(START)
    nv.command(f"edit {path}")
    wait_for(
        "the spec_lsp client",
        lambda: nv.exec_lua("local c = require('spec_lsp').client(0); return c and c.initialized"),
        30,
    )
    wait_for("the model to load", lambda: stats(nv).get("ready"), 60)
    typed, act = ACTIONS[action]
    nv.command("normal! G$")
    nv.input("o")
    nv.input(typed)
    wait_for("ghost text", lambda: ghost_text(nv, namespace), 30, 0.05)
    expected = act(nv, namespace)
    time.sleep(1.0)  # (the last keys' notification, after the client's debounce)
    nv.input("<Esc>")
    counts = wait_for(
        "the outcome",
        lambda: (a := stats(nv)["acceptance"]) and sum(a[k] for k in OUTCOMES) and a,
        10,
    )
    mode = "native" if is_native else "shim"
    name = f"neovim-{version.split('+')[0].split('-')[0]}-{mode}-{action}"
    if RECORD:
        sequences.save(
            name,
            editor=f"Neovim {version} ({mode})",
            keys=f"o{typed} then {action}",
            records_file=record,
            uri=path.as_uri(),
        )
    print(f"\n{name}: {dict((k, counts[k]) for k in (*OUTCOMES, 'replaced', 'shown'))}")
    assert {k: counts[k] for k in OUTCOMES} == {**dict.fromkeys(OUTCOMES, 0), **expected}
