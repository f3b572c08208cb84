"""The llama.cpp that `make install` builds runs on every x86-64 machine of its kind: no Intel
AMX kernels (they crash in the first decode on some Sapphire Rapids machines), unless
LLAMA_AMX=1 asked for them."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spec_lsp.engine.startup.crash_probe import Verdict

ROOT = Path(__file__).resolve().parents[2]
X86 = platform.machine().lower() in ("x86_64", "amd64")
pytestmark = pytest.mark.skipif(not X86, reason="AMX is x86-64 only")
ASKED = os.environ.get("LLAMA_AMX") == "1"


def make_cflags() -> str:
    """The CFLAGS the Makefile exports to the build (read through make itself)."""
    done = subprocess.run(
        [
            "make",
            "-s",
            "--no-print-directory",
            "--eval=show-cflags: ; @echo $$CFLAGS",
            "show-cflags",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.mark.skipif(ASKED, reason="LLAMA_AMX=1 asks for the AMX kernels")
def test_the_installed_build_reports_no_amx() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from spec_lsp.engine.backends.llama import system_info; print(system_info())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    verdict = Verdict(True, system_info=done.stdout)
    assert "AVX" in verdict.features  # the summary was read
    assert not verdict.amx, done.stdout


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
def test_the_makefile_flags_remove_amx_even_under_march_for_an_amx_cpu() -> None:
    """On any machine: what -march=native gives on Sapphire Rapids, the flags take away."""
    flags = make_cflags().split()
    assert ("-mno-amx-int8" in flags) is not ASKED

    def amx_macros(*extra: str) -> list[str]:
        done = subprocess.run(
            ["gcc", "-march=sapphirerapids", *extra, "-dM", "-E", "-"],
            input="",
            capture_output=True,
            text=True,
            check=True,
        )
        return [line for line in done.stdout.splitlines() if "__AMX" in line]

    assert amx_macros()  # the CPU's own -march brings them in
    if not ASKED:
        assert amx_macros(*flags) == []
