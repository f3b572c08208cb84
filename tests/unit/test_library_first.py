"""A GPU build's native libraries are loaded before numpy's in a process that loads models (a
CUDA build of llama-cpp-python segfaulted loading any model after numpy: backends/llama.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from spec_lsp.engine.backends.llama import gpu_build

# run in a fresh interpreter: this one imported numpy long ago
SCRIPT = textwrap.dedent(
    """
    import importlib.util, subprocess, sys, types
    fake = sys.argv[1]
    child_rc = int(sys.argv[2])
    real_find_spec = importlib.util.find_spec
    def find_spec(name, *args):
        spec = real_find_spec(name, *args)
        if name == "llama_cpp" and fake != "-":
            spec = types.SimpleNamespace(submodule_search_locations=[fake])
        return spec
    importlib.util.find_spec = find_spec
    real_run = subprocess.run
    def run(command, **kwargs):
        result = real_run(command, **kwargs)
        return subprocess.CompletedProcess(command, child_rc if child_rc else result.returncode)
    subprocess.run = run
    from spec_lsp.engine import prepare_process
    prepare_process()
    import numpy
    names = list(sys.modules)  # in the order their loading ended
    loaded = "llama_cpp.llama_cpp" in names  # (the bindings: they load the libraries)
    print("first" if loaded and names.index("llama_cpp.llama_cpp") < names.index("numpy") else
          "after" if loaded else "not loaded")
    """
)


def order(fake: str, child_rc: int = 0) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, fake, str(child_rc)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def gpu_package(tmp_path: Path) -> Path:
    (tmp_path / "lib").mkdir()
    for name in ("libllama.so", "libggml-base.so", "libggml-cpu.so", "libggml-cuda.so"):
        (tmp_path / "lib" / name).write_bytes(b"")
    return tmp_path


def test_a_gpu_build_is_told_by_its_libraries(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    for name in ("libllama.so", "libggml-base.so", "libggml-cpu.so", "libmtmd.so"):
        (tmp_path / "lib" / name).write_bytes(b"")
    assert not gpu_build(tmp_path.rglob("*"))
    (tmp_path / "lib" / "libggml-vulkan.so").write_bytes(b"")
    assert gpu_build(tmp_path.rglob("*"))


def test_a_gpu_builds_libraries_go_in_before_numpy(tmp_path: Path) -> None:
    assert order(str(gpu_package(tmp_path))) == "first"


def test_a_cpu_build_is_left_as_it_was() -> None:
    # this machine's build (CPU): nothing loaded early, as before
    assert order("-") == "not loaded"


def test_a_library_that_crashes_its_child_is_not_loaded_here(tmp_path: Path) -> None:
    # the child that tried it died of SIGILL: this process must not load it (the probe names it)
    assert order(str(gpu_package(tmp_path)), child_rc=-4) == "not loaded"
