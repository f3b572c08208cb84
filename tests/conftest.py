"""Shared fixtures: where the real models are, and whether their absence is a failure.

Every test run starts from an empty cache folder, as on a fresh machine: whatever spec-lsp
writes there (cost profiles, probe verdicts) goes to a temporary folder of this run, removed at
its end, for the servers the tests start too (they inherit the environment). Only the pulled
models are shared, through SPEC_LSP_MODELS_DIR (found before the switch). A test that needs a
warm cache makes it itself.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REQUIRE = os.environ.get("SPEC_LSP_REQUIRE_MODELS") == "1"  # set by `make test`: absence fails
# cache folders other variables could point at an earlier run's (their defaults are below
# XDG_CACHE_HOME)
LEFT_BEHIND = ("SPEC_LSP_PROFILE_DIR", "SPEC_LSP_PROBE_DIR")


def _fresh_cache_folder() -> Path:
    from spec_lsp import models

    os.environ["SPEC_LSP_MODELS_DIR"] = str(models.cache_dir())  # (under the caller's settings)
    fresh = Path(tempfile.mkdtemp(prefix="spec-lsp-test-cache-"))
    atexit.register(shutil.rmtree, fresh, ignore_errors=True)
    os.environ["XDG_CACHE_HOME"] = str(fresh)
    for name in LEFT_BEHIND:
        os.environ.pop(name, None)
    return fresh


FRESH_CACHE = _fresh_cache_folder()


def _model(key: str) -> Path:
    from spec_lsp import models

    path = models.installed_path(key)
    if path is None:
        message = f"model {key} not installed: run `spec-lsp models pull`"
        if REQUIRE:
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    return _model("smollm2-135m")


@pytest.fixture(scope="session")
def qwen_path() -> Path:
    return _model("qwen2.5-coder-1.5b")


@pytest.fixture(autouse=True)
def _analyses_stop_with_the_test(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The guide's analyses that a test's engines (in this process) start stop with the test:
    their threads, and Jedi's child processes, which would otherwise wait for this whole run."""
    from spec_lsp.engine.guide.analyses import Analyses

    made: list[Analyses] = []
    init = Analyses.__init__

    def recorded(self: Analyses) -> None:
        init(self)
        made.append(self)

    monkeypatch.setattr(Analyses, "__init__", recorded)
    yield
    for analyses in made:
        analyses.close()
