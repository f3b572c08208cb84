"""The crash probe (engine/startup/crash_probe.py) with simulated builds: a native fault becomes one clear
EngineError naming the signal and the fix, the verdict is cached per build and model file, and
a rebuild (another build file) or another model file is probed again."""

from __future__ import annotations

from pathlib import Path

import pytest

from spec_lsp.engine import EngineError
from spec_lsp.engine.startup import crash_probe as probe
from tests.probe_builds import PLAIN_INFO, probe_env, runs, write_build


@pytest.fixture
def build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    script = tmp_path / "build.py"
    for name, value in probe_env(script, tmp_path / "probes").items():
        monkeypatch.setenv(name, value)
    return script


def check(path: str = "model.gguf") -> None:
    probe.check([path], backend="llama", gpu_layers=0, what=["model"])


def verdict(path: str = "model.gguf") -> probe.Verdict:
    return probe.verdicts([path], backend="llama", gpu_layers=0)[path]


def test_a_segfault_names_the_signal_the_amx_kernels_and_the_rebuild(build: Path) -> None:
    write_build(build, "segv")
    with pytest.raises(EngineError) as caught:
        check()
    message = str(caught.value)
    assert "SIGSEGV" in message and "segmentation fault" in message
    assert "AVX2 AVX512 AMX_INT8" in message  # what the build reported before it crashed
    assert "Intel AMX" in message and "make rebuild-llama" in message
    assert "-mno-amx-int8" in message and "--no-cache-dir" in message


def test_an_illegal_instruction_says_the_build_is_for_another_cpu(build: Path) -> None:
    write_build(build, "sigill", info=PLAIN_INFO)
    with pytest.raises(EngineError, match="SIGILL") as caught:
        check()
    assert "instructions this CPU lacks" in str(caught.value)
    assert "AMX" not in str(caught.value)


def test_the_verdict_is_cached_per_build_and_model_file(build: Path, tmp_path: Path) -> None:
    write_build(build, "segv")
    for _ in range(3):
        with pytest.raises(EngineError):
            check()
    assert runs(build) == 1  # probed once; the cached crash is told without a child
    model = tmp_path / "other.gguf"
    model.write_bytes(b"GGUF")
    with pytest.raises(EngineError):
        check(str(model))  # another file: probed afresh
    assert runs(build) == 2
    write_build(build, "ok")  # the rebuild
    fresh = verdict()
    assert fresh.ok and not fresh.cached and runs(build) == 3
    check()
    assert verdict().cached and runs(build) == 3


def test_a_python_error_is_not_fatal_nor_cached(build: Path) -> None:
    write_build(build, "error")
    check()  # not raised: the in-process load says what is wrong with the file
    said = verdict()
    assert not said.ok and not said.fatal and said.cause == "error"
    assert said.detail == "ValueError: Failed to load model from file"
    assert runs(build) == 2  # not cached


def test_several_files_are_probed_in_one_child_and_a_crash_is_the_file_at_hand(
    build: Path,
) -> None:
    write_build(build, "ok")
    found = probe.verdicts(["a.gguf", "b.gguf"], backend="llama", gpu_layers=0)
    assert [v.ok for v in found.values()] == [True, True] and runs(build) == 1
    write_build(build, "segv")  # another build: both probed again; it dies at the first
    with pytest.raises(EngineError, match="draftModel a.gguf"):
        probe.check(["a.gguf", "b.gguf"], backend="llama", gpu_layers=0, what=["draftModel", "x"])
    assert runs(build) == 2
    found = probe.verdicts(["a.gguf", "b.gguf"], backend="llama", gpu_layers=0)
    assert found["a.gguf"].cause == "SIGSEGV" and found["a.gguf"].cached
    # never reached before, so nothing was cached for it: probed now, on its own
    assert found["b.gguf"].cause == "SIGSEGV" and not found["b.gguf"].cached
    assert runs(build) == 3


def test_a_hang_is_stopped_and_tried_again_later(
    build: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPEC_LSP_PROBE_TIMEOUT_S", "1")
    write_build(build, "hang")
    with pytest.raises(EngineError, match="did not load model model.gguf within 1 s"):
        check()
    with pytest.raises(EngineError):
        check()
    assert runs(build) == 2  # not cached: a busy machine may have been the cause


def test_features_are_read_from_the_system_info() -> None:
    verdict = probe.Verdict(False, "SIGSEGV", "CPU : SSE3 = 1 | AVX512 = 0 | AMX_INT8 = 1 |")
    assert verdict.features == ["SSE3", "AMX_INT8"] and verdict.amx
    assert not probe.Verdict(True, system_info=PLAIN_INFO).amx
