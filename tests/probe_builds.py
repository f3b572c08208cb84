"""Simulated llama.cpp builds for the crash probe (SPEC_LSP_PROBE_COMMAND runs one instead of
the real child): each is a script that prints llama.cpp's system info, as the real child does
first, and then crashes, hangs, fails in Python, or succeeds."""

from __future__ import annotations

import os
import sys
from pathlib import Path

AMX_INFO = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | REPACK = 1 |"
PLAIN_INFO = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | REPACK = 1 |"
BODIES = {
    "ok": "print(f'ok\\t{path}\\t0.1')",
    "segv": "os.kill(os.getpid(), signal.SIGSEGV)",
    "sigill": "os.kill(os.getpid(), signal.SIGILL)",
    "hang": "time.sleep(600)",
    "error": "print(f'error\\t{path}\\tValueError: Failed to load model from file')",
}


def write_build(path: Path, kind: str, *, info: str = AMX_INFO) -> Path:
    """(Re)write the simulated build at `path`: a newer file, as a rebuild leaves. Each run
    appends a line to `path`.runs, to count the probes."""
    path.write_text(
        "import os, signal, sys, time\n"
        f"open({str(path) + '.runs'!r}, 'a').write('run\\n')\n"
        f"print('system_info\\t{info}', flush=True)\n"
        "for path in sys.argv[1:]:\n"
        "    print(f'start\\t{path}', flush=True)\n"
        f"    {BODIES[kind]}\n"
    )
    stamp = path.stat().st_mtime_ns + 10**9  # visibly newer, even on coarse clocks
    os.utime(path, ns=(stamp, stamp))
    return path


def runs(path: Path) -> int:
    runs_file = Path(str(path) + ".runs")
    return len(runs_file.read_text().splitlines()) if runs_file.exists() else 0


def probe_env(build: Path, cache: Path, **more: str) -> dict[str, str]:
    return {
        "SPEC_LSP_PROBE_COMMAND": f"{sys.executable} {build}",
        "SPEC_LSP_PROBE_DIR": str(cache),
        **more,
    }
