"""Where spec-lsp writes to disk, and that the tests write nowhere an earlier run could have
left something: each run has an empty cache folder of its own (tests/conftest.py), the models
aside."""

from __future__ import annotations

import os
from pathlib import Path

from spec_lsp import models
from spec_lsp.cache_dirs import cache_home, cache_subdir
from spec_lsp.engine.policy import profile
from spec_lsp.engine.startup import crash_probe as probe
from tests.conftest import FRESH_CACHE


def test_every_cache_of_a_test_run_is_in_its_own_fresh_folder() -> None:
    assert os.environ["XDG_CACHE_HOME"] == str(FRESH_CACHE)
    assert cache_home() == FRESH_CACHE / "spec-lsp"
    for folder in (profile.profiles_dir(), probe.probes_dir()):
        assert folder.is_relative_to(FRESH_CACHE), folder
    assert not models.cache_dir().is_relative_to(FRESH_CACHE)  # the pulled models are shared


def test_a_variable_moves_one_kind_of_cache(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("SPEC_LSP_PROFILE_DIR", raising=False)
    assert profile.profiles_dir() == tmp_path / "xdg" / "spec-lsp" / "profiles"
    assert probe.probes_dir() == tmp_path / "xdg" / "spec-lsp" / "probes"
    monkeypatch.setenv("SPEC_LSP_PROFILE_DIR", str(tmp_path / "mine"))
    assert profile.profiles_dir() == tmp_path / "mine"
    assert cache_subdir("probes", "SPEC_LSP_PROBE_DIR") == probe.probes_dir()
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_home() == tmp_path / "home" / ".cache" / "spec-lsp"
