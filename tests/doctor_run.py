"""Running `spec-lsp doctor --json` as a person would, and reading its checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any


def doctor(*args: str, **env: str) -> tuple[int, dict[str, dict[str, Any]]]:
    """Exit status, and the checks by name."""
    done = subprocess.run(
        [sys.executable, "-m", "spec_lsp.cli", "doctor", "--json", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )
    assert done.stdout, done.stderr
    return done.returncode, {check["name"]: check for check in json.loads(done.stdout)}


def failed(checks: dict[str, dict[str, Any]]) -> list[str]:
    return [name for name, check in checks.items() if check["status"] == "fail"]
