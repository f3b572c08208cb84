"""Editor tests.

The settings/template checks run everywhere (fast, no editor needed). The end-to-end tests drive
real editors (Neovim through pynvim, VS Code through code-server) and are skipped unless
SPEC_LSP_EDITOR_E2E=1; `make -C editors neovim-e2e` / `vscode-e2e` install what they need and set
it. SPEC_LSP_E2E_BACKEND=fake (default: the deterministic fake model, seconds) or real (the
default Qwen2.5-Coder model: minutes on a small CPU).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EDITORS = REPO / "editors"
CACHE = Path(os.environ.get("SPEC_LSP_EDITORS_CACHE", EDITORS / ".cache"))
E2E = os.environ.get("SPEC_LSP_EDITOR_E2E") == "1"
BACKEND = os.environ.get("SPEC_LSP_E2E_BACKEND", "fake")

e2e = pytest.mark.skipif(not E2E, reason="editor end-to-end test: set SPEC_LSP_EDITOR_E2E=1")


def server_command(log_file: Path) -> list[str]:
    """`spec-lsp serve` for the chosen backend, logging to a file the test can show."""
    exe = Path(os.environ.get("SPEC_LSP_EXE") or Path(sys.executable).with_name("spec-lsp"))
    found = shutil.which(str(exe))
    cmd = [found] if found else [sys.executable, "-m", "spec_lsp.cli"]
    cmd += ["serve", "--log-file", str(log_file), "--log-level", "DEBUG"]
    if BACKEND == "fake":
        cmd += ["--backend", "fake"]
    elif BACKEND != "real":
        raise ValueError(f"SPEC_LSP_E2E_BACKEND must be fake or real, not {BACKEND!r}")
    return cmd
