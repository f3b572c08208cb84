"""A model is loaded into the server only after a child process survived loading it.

A native fault in llama.cpp kills the process it happens in: Intel AMX kernels crash with
SIGSEGV inside the first decode on some Sapphire Rapids machines, a build made for another CPU
dies with SIGILL, a failed assertion aborts. In a language server the editor would just see the
server vanish. So the first time a (llama.cpp build, model file) pair is loaded, a child process
loads it and decodes a few tokens (`backends.llama.probe_main`). Its verdict is cached per pair;
a fault becomes an EngineError naming the signal, the CPU features llama.cpp reported and the
command that fixes it, and the server answers empty until the build or the file changes.

A child that raises a Python error (a truncated file, say) is no native fault: the in-process
load that follows says what is wrong. A child that hangs is stopped after the timeout and not
cached (a busy machine may be the cause): it is probed again at the next load.

`SPEC_LSP_PROBE_COMMAND` (shell words, the model path appended) replaces the child, and the
last of its words that is a file (its script) stands for the build: tests simulate crashing
and hanging builds with it, with the fake backend too.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from spec_lsp.cache_dirs import cache_subdir
from spec_lsp.engine.types import EngineError

log = logging.getLogger(__name__)
TIMEOUT_S = 180.0  # loading a 7B model from a cold disk on a slow machine stays well under this
NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
CHILD = "import sys; from spec_lsp.engine.backends.llama import probe_main; sys.exit(probe_main(sys.argv[1:]))"  # noqa: E501
SIGNALS = {
    "SIGSEGV": "segmentation fault",
    "SIGILL": "illegal instruction",
    "SIGBUS": "bus error",
    "SIGABRT": "abort",
    "SIGFPE": "arithmetic fault",
}


@dataclass(frozen=True)
class Verdict:
    """What the child did: `ok`, or the `cause` (a signal's name, `timeout`)."""

    ok: bool
    cause: str = ""
    system_info: str = ""  # llama.cpp's summary of the build, as the child printed it
    seconds: float = 0.0
    detail: str = ""  # the last lines the child wrote to stderr
    cached: bool = False

    @property
    def features(self) -> list[str]:
        """The CPU features and backends the build reported on (`AVX2 = 1` -> AVX2)."""
        parts = (part.strip() for part in self.system_info.replace("|", "\n").splitlines())
        return [p.split("=")[0].strip().split(":")[-1].strip() for p in parts if p.endswith("= 1")]

    @property
    def fatal(self) -> bool:
        """A native fault or a hang: loading in the server would kill it or hang it."""
        return not self.ok and self.cause != "error"

    @property
    def amx(self) -> bool:
        return any(feature.startswith("AMX") for feature in self.features)


def simulated() -> bool:
    return bool(os.environ.get("SPEC_LSP_PROBE_COMMAND"))


def build_files(backend: str) -> list[str]:
    """The files whose change means another build: llama-cpp-python's native libraries (the
    simulated build's script under SPEC_LSP_PROBE_COMMAND)."""
    if simulated():
        words = shlex.split(os.environ["SPEC_LSP_PROBE_COMMAND"])
        return [word for word in words if os.path.isfile(word)][-1:]
    if backend == "fake":
        return []
    from spec_lsp.engine.backends.llama import library_files

    return [str(file) for file in library_files()]


def check(
    paths: Sequence[str],
    *,
    backend: str,
    gpu_layers: int,
    what: Sequence[str],
    before: Callable[[], None] = lambda: None,
) -> None:
    """The verdicts for these files with this build (`verdicts`: the ones not cached in one
    child). Raises EngineError with the fix for the first file llama.cpp faulted or hung on;
    `what` names each file's setting."""
    found = verdicts(paths, backend=backend, gpu_layers=gpu_layers, before=before)
    for path, setting in zip(paths, what):
        verdict = found.get(path)
        if verdict is not None and verdict.fatal:
            raise EngineError(explain(verdict, path, what=setting, gpu_layers=gpu_layers))


def verdicts(
    paths: Sequence[str],
    *,
    backend: str,
    gpu_layers: int,
    before: Callable[[], None] = lambda: None,
) -> dict[str, Verdict]:
    """The cached verdict of each file with this build, and a fresh probe of the others (one
    child for all: one interpreter's start, and the loads), announced by `before`. Native
    faults and successes are cached; hangs and Python errors are not (a busy machine, a file
    being copied). A file the child never reached (after a crash) has no verdict."""
    keys = {path: probe_key(path, backend, gpu_layers) for path in paths}
    found = {path: v for path, key in keys.items() if (v := _cached(key)) is not None}
    fresh = [path for path in paths if path not in found]
    if fresh:
        before()
        for path, verdict in run(fresh, gpu_layers=gpu_layers).items():
            log.info("probe of %s: %s in %.1f s", path, verdict.cause or "ok", verdict.seconds)
            if verdict.ok or verdict.fatal and verdict.cause != "timeout":
                _save(keys[path], verdict)
            found[path] = verdict
    return found


def run(
    paths: Sequence[str], *, gpu_layers: int = 0, timeout_s: float | None = None
) -> dict[str, Verdict]:
    """Load and decode each file in turn in one child process: what it said of each file
    (`ok`, `error`), and its fate for the file it was at when it died or hung."""
    command = (
        [*shlex.split(os.environ["SPEC_LSP_PROBE_COMMAND"]), *paths]
        if simulated()
        else [sys.executable, "-c", CHILD, str(gpu_layers), *paths]
    )
    timeout_s = timeout_s or float(os.environ.get("SPEC_LSP_PROBE_TIMEOUT_S", TIMEOUT_S))
    start = time.perf_counter()
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout_s,
            text=True,
            errors="replace",
        )
        out, cause, tail = done.stdout, _fate(done.returncode), _tail(done.stderr)
    except subprocess.TimeoutExpired as exc:  # (the child is killed)
        out, cause, tail = _text(exc.stdout), "timeout", f"{timeout_s:.0f} s"
    seconds = time.perf_counter() - start
    info, found, current = "", {}, None
    for line in out.splitlines():
        word, _, rest = line.partition("\t")
        if word == "system_info":
            info = rest
        elif word == "start":
            current = rest
        elif word in ("ok", "error"):
            path, _, said = rest.partition("\t")
            if word == "ok":
                found[path] = Verdict(True, "", info, float(said or 0))
            else:
                found[path] = Verdict(False, "error", info, 0.0, said)
            current = None
    if cause:  # it died, or hung, at the file it was at (the first, if it said nothing)
        current = current or next((p for p in paths if p not in found), None)
        if current is not None:
            found[current] = Verdict(False, cause, info, seconds, tail)
    return found


def explain(verdict: Verdict, path: str, *, what: str, gpu_layers: int) -> str:
    """One message: what happened, what the build reported, the command that fixes it."""
    name = Path(path).name
    features = " ".join(verdict.features) or "nothing (it crashed first)"
    if verdict.cause == "timeout":
        return (
            f"llama.cpp did not load {what} {name} within {verdict.detail} in a probe process, "
            "so it was not loaded here. The machine may be overloaded, or this llama.cpp build "
            "hangs on it: run `spec-lsp doctor`. It is tried again when the server restarts or "
            "the build or model file changes."
        )
    said = f"llama.cpp crashed ({verdict.cause}, {SIGNALS.get(verdict.cause, 'a fatal signal')})"
    head = (
        f"{said} loading and running {what} {name} in a probe process, so it was not loaded "
        f"here. The build reports: {features}."
    )
    version = _installed_version()
    rebuild = (
        f"{sys.executable} -m pip install --force-reinstall --no-cache-dir --no-deps "
        f"llama-cpp-python=={version}"
    )
    if verdict.amx:
        fix = (
            "This build has Intel AMX kernels, which crash on some Sapphire Rapids and newer "
            f"CPUs. Rebuild without them: `CFLAGS='{NO_AMX}' CXXFLAGS='{NO_AMX}' {rebuild}` "
            "(in spec-lsp's checkout: `make rebuild-llama`)."
        )
    elif verdict.cause == "SIGILL":
        fix = (
            "The build uses instructions this CPU lacks (built on or for another machine). "
            f"Rebuild it here: `{rebuild}` (in spec-lsp's checkout: `make rebuild-llama`)."
        )
    else:
        fix = (
            f"Pull the model again (`spec-lsp models pull`) or set `{what}` to another GGUF; "
            f"if it persists, rebuild llama.cpp: `{rebuild}`."
        )
    if gpu_layers:
        fix += f" Or set `gpuLayers` to 0 (now {gpu_layers})."
    return f"{head} {fix} The model is loaded once the build or the file changes."


def probe_key(path: str, backend: str, gpu_layers: int) -> str:
    parts = [_installed_version() or "", os.environ.get("SPEC_LSP_PROBE_COMMAND", "")]
    parts += [_identity(file) for file in [*build_files(backend), path]]
    parts.append(f"gpu_layers={gpu_layers}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def probes_dir() -> Path:
    return cache_subdir("probes", "SPEC_LSP_PROBE_DIR")


def _cached(key: str) -> Verdict | None:
    try:
        data = json.loads((probes_dir() / f"{key}.json").read_text())
        return Verdict(**{**data, "cached": True})
    except (OSError, ValueError, TypeError):
        return None


def _save(key: str, verdict: Verdict) -> None:
    directory = probes_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f"{key}.tmp{os.getpid()}"
        tmp.write_text(json.dumps(asdict(verdict)))
        os.replace(tmp, directory / f"{key}.json")
    except OSError as exc:  # not cached: probed again next time
        log.warning("cannot cache the probe's verdict in %s: %s", directory, exc)


def _identity(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return f"{path}:missing"
    return f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}"


def _installed_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        return None


def _fate(returncode: int) -> str:
    """A signal's name for a child killed by one; "" otherwise (the child reports errors)."""
    if returncode >= 0:
        return "" if returncode == 0 else f"exit status {returncode}"
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _tail(stderr: str) -> str:
    return "\n".join(stderr.strip().splitlines()[-5:])


def _text(output: str | bytes | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def main(argv: list[str] | None = None) -> int:
    """`python -m spec_lsp.engine.startup.crash_probe MODEL`: probe afresh (the install's check of the
    build); MODEL a GGUF file or a default model's key. Exit status 1, with the message, when
    llama.cpp faulted or hung; else 0."""
    from spec_lsp import models

    args = sys.argv[1:] if argv is None else argv
    path = args[0]
    if path in models.DEFAULT_MODELS:
        path = str(models.default_model_path(path))
    start = time.perf_counter()
    verdict = run([path]).get(path, Verdict(False, "error", detail="no answer from the child"))
    name = Path(path).name
    if verdict.ok:
        sys.stdout.write(f"llama.cpp runs {name} ({time.perf_counter() - start:.1f} s)\n")
        return 0
    if not verdict.fatal:  # not the build's fault
        sys.stderr.write(f"llama.cpp could not load {name} ({verdict.cause}): {verdict.detail}\n")
        return 0
    sys.stderr.write(explain(verdict, path, what="model", gpu_layers=0) + "\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
