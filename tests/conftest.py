"""Shared fixtures: where the real models are, and whether their absence is a failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REQUIRE = os.environ.get("SPEC_LSP_REQUIRE_MODELS") == "1"  # set by `make test`: absence fails


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
