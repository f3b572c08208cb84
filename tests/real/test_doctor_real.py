"""`spec-lsp doctor` with the real models and llama.cpp: healthy (exit 0), a model of one's
own that is truncated, and a build that crashes (simulated: the probe's child)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.doctor_run import doctor, failed
from tests.probe_builds import probe_env, write_build

pytestmark = pytest.mark.real


def test_a_healthy_install_passes_every_check(qwen_path: Path, smollm2_path: Path) -> None:
    status, checks = doctor("--drafter", "model")
    assert failed(checks) == [] and status == 0
    assert "FIM template qwen" in checks["model qwen2.5-coder-1.5b"]["detail"]
    assert "verified" in checks["model qwen2.5-coder-1.5b"]["detail"]
    assert "llama.cpp runs it" in checks["model qwen2.5-coder-1.5b: probe"]["detail"]
    assert "llama.cpp runs it" in checks["draftModel smollm2-135m: probe"]["detail"]
    assert "AVX" in checks["llama.cpp build"]["detail"]


def test_a_truncated_model_of_ones_own_fails_its_probe(smollm2_path: Path, tmp_path) -> None:
    cut = tmp_path / "cut.gguf"
    with smollm2_path.open("rb") as source, cut.open("wb") as out:
        out.write(source.read(smollm2_path.stat().st_size // 2))  # the header survives
    status, checks = doctor("--model", str(cut), SPEC_LSP_PROBE_DIR=str(tmp_path / "v"))
    assert status == 1 and failed(checks) == ["model cut.gguf: probe"]
    check = checks["model cut.gguf: probe"]
    assert "cannot load it" in check["detail"] and "models pull" in check["fix"]


def test_a_crashing_build_fails_the_probe_with_the_rebuild(smollm2_path: Path, tmp_path) -> None:
    model = tmp_path / "smol.gguf"
    shutil.copy(smollm2_path, model)
    build = write_build(tmp_path / "build.py", "segv")
    status, checks = doctor("--model", str(model), **probe_env(build, tmp_path / "v"))
    assert status == 1 and failed(checks) == ["model smol.gguf: probe"]
    check = checks["model smol.gguf: probe"]
    assert check["detail"] == "llama.cpp crashed: SIGSEGV"
    assert "make rebuild-llama" in check["fix"] and "AMX" in check["fix"]
