"""`spec-lsp doctor`: what to run when completions do not appear.

One line per check, OK or the problem and its fix: Python and llama-cpp-python, llama.cpp's
build (CPU features, threads, GPU offload), the crash probe's verdict per model file, the
models (present, size, sha256, FIM template), the settings in force and where each came from,
the remote engine when configured, and the editor side it can see. Exit status 1 when a check
failed; `--json` for bug reports. llama.cpp runs only in child processes here: a build that
crashes is reported, not suffered.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

from spec_lsp import config, models
from spec_lsp.config import Settings
from spec_lsp.engine import EngineError
from spec_lsp.engine.local import pace
from spec_lsp.engine.policy import profile as cost_profile
from spec_lsp.engine.remote import connect
from spec_lsp.engine.remote.health import Health
from spec_lsp.engine.startup import crash_probe as probe
from spec_lsp.engine.startup import loading

CHILD_TIMEOUT_S = 60.0
SYSTEM_INFO = (
    "from spec_lsp.engine.backends.llama import system_info, gpu_offload; "
    "print(gpu_offload()); print(system_info())"
)
# the target's pace, timed in a child: argv model path, threads (0: auto)
PACE = (
    "import sys; from spec_lsp.engine.backends.llama import LlamaModel; "
    "from spec_lsp.engine.local import pace; from spec_lsp.engine.startup import calibrate; "
    "m = LlamaModel(sys.argv[1], n_ctx=512, threads=int(sys.argv[2]) or None); "
    "c = m.tokenize(calibrate.PROFILE_TEXT)[:256]; "
    "p = pace.read(calibrate.measure(m, None, context=c, sizes=(1, pace.PROMPT_BATCH))); "
    "print(p.decode_tok_s, p.prompt_tok_s, -1.0 if p.load is None else p.load)"
)
VSCODE_EXTENSION_DIRS = (
    "~/.vscode/extensions",
    "~/.vscode-server/extensions",
    "~/.vscode-oss/extensions",
    "~/.local/share/code-server/extensions",
    "~/.cursor/extensions",
)
NVIM_PLUGIN = (
    "lua io.stdout:write(vim.api.nvim_get_runtime_file('lua/spec_lsp/init.lua', false)[1] or '')"  # noqa: E501
)


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # "ok", "fail", or "info" (not wrong, but worth knowing: nothing installed)
    detail: str
    fix: str = ""


def run(args: argparse.Namespace, settings: Settings) -> int:
    checks = list(diagnose(settings, origins(args)))
    if args.json:
        sys.stdout.write(json.dumps([asdict(c) for c in checks], indent=2) + "\n")
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            fix = f" -> {c.fix}" if c.fix else ""
            sys.stdout.write(f"{c.status.upper():4}  {c.name:{width}}  {c.detail}{fix}\n")
    return 1 if any(c.status == "fail" for c in checks) else 0


def diagnose(settings: Settings, origin: dict[str, str]) -> Iterator[Check]:
    yield _python()
    version = _llama_version()
    yield version
    if settings.engine == "local" and version.status == "ok":
        yield _build(settings)
    found = list(_models(settings))
    yield from found
    if settings.engine == "local" and found and all(c.status == "ok" for c in found):
        yield _pace(settings)
    yield _settings(settings, origin)
    if settings.engine == "remote":
        yield _remote(settings)
    yield from _editors()


def origins(args: argparse.Namespace) -> dict[str, str]:
    """Where each setting not at its default comes from: a flag, else the environment."""
    found = {}
    for name in Settings.model_fields:
        env = config.ENV_PREFIX + name.upper()
        if getattr(args, name, None) is not None:
            found[name] = "flag --" + name.replace("_", "-")
        elif env in os.environ:
            found[name] = f"env {env}"
    return found


def _python() -> Check:
    ok = sys.version_info >= (3, 10)
    detail = f"{platform.python_version()} ({sys.executable})"
    return Check("python", "ok" if ok else "fail", detail, "" if ok else "use Python 3.10 or newer")


def _llama_version() -> Check:
    wanted = _pinned("llama-cpp-python")
    try:
        have = metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        return Check("llama-cpp-python", "fail", "not installed", f"run `make install` ({wanted})")
    if wanted and wanted != have:
        fix = f"`{sys.executable} -m pip install llama-cpp-python=={wanted}`"
        return Check("llama-cpp-python", "fail", f"{have}, spec-lsp is tested with {wanted}", fix)
    return Check("llama-cpp-python", "ok", have)


def _build(settings: Settings) -> Check:
    """llama.cpp's system info, read in a child (a build that crashes on load is reported)."""
    rebuild = "`make rebuild-llama` (or see the README's pip install)"
    try:
        done = subprocess.run(
            [sys.executable, "-c", SYSTEM_INFO],
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return Check("llama.cpp build", "fail", "loading the library hung", rebuild)
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        return Check("llama.cpp build", "fail", f"cannot load the library: {why[0]}", rebuild)
    gpu, _, info = done.stdout.partition("\n")
    verdict = probe.Verdict(True, system_info=info.strip())
    threads = settings.threads or f"auto (of {os.cpu_count()} cores)"
    detail = f"{' '.join(verdict.features)}; threads {threads}; GPU offload "
    detail += f"{'yes' if gpu == 'True' else 'no'}, gpuLayers {settings.gpu_layers}"
    if settings.gpu_layers and gpu != "True":
        fix = "this build has no GPU backend: rebuild with CMAKE_ARGS (README), or gpuLayers 0"
        return Check("llama.cpp build", "fail", detail, fix)
    if verdict.amx:
        detail += "; AMX kernels compiled in (they crash on some CPUs: see the probe)"
    return Check("llama.cpp build", "ok", detail)


def _models(settings: Settings) -> Iterator[Check]:
    if settings.engine == "remote":
        return
    defaults = {"model": loading.DEFAULT_TARGET, "draftModel": loading.DEFAULT_DRAFT}
    files = loading.settings_paths(settings, lambda key: str(models.default_model_path(key)))
    usable = {}
    for setting, path in files:
        default = (settings.model if setting == "model" else settings.draft_model) is None
        name = f"{setting} {defaults[setting] if default else Path(path).name}"
        check = _default_model(defaults[setting]) if default else _model_file(Path(path))
        yield Check(name, *check)
        if check[0] == "ok":
            usable[path] = name
    found = probe.verdicts(list(usable), backend="llama", gpu_layers=settings.gpu_layers)
    for path, name in usable.items():
        yield _probe(name, path, found.get(path), settings.gpu_layers)


def _pace(settings: Settings) -> Check:
    """The target's pace on this machine: the server's cached cost profile, else timed now in a
    child (a few seconds); slow for ghost text in a pause: the 0.5B offered (local/pace.py)."""
    path = loading.settings_paths(settings, lambda key: str(models.default_model_path(key)))[0][1]
    key = cost_profile.profile_key(
        path, threads=settings.threads, backend="llama", drafter=settings.drafter
    )
    measured = pace.of_profile(cost_profile.load_cached(key))
    how = "the server's measured cost profile"
    if measured is None:
        how = "timed now"
        try:
            done = subprocess.run(
                [sys.executable, "-c", PACE, path, str(settings.threads or 0)],
                capture_output=True,
                text=True,
                timeout=CHILD_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
            )
            decode, prompt, load = (float(v) for v in done.stdout.split()[-3:])
            measured = pace.Pace(decode, prompt, None if load < 0 else load)
        except (subprocess.TimeoutExpired, ValueError):  # (it died, or printed no figures)
            return Check("speed", "info", "could not be timed", "`spec-lsp profile` measures it")
    detail = f"{Path(path).name}: {measured.describe()} ({how})"
    said = pace.advice(measured, path)
    if measured.loaded:
        return Check(
            "speed", "info", detail, "run `spec-lsp doctor` again when the machine is quiet"
        )
    if said is None:
        return Check("speed", "ok", detail)
    return Check("speed", "info", f"{detail}: slow for ghost text in a pause", said)


def _default_model(key: str) -> tuple[str, str, str]:
    model, path = models.DEFAULT_MODELS[key], models.default_model_path(key)
    pull = f"run `spec-lsp models pull {key}`"
    if not path.is_file():
        return "fail", f"not in {path.parent}", pull
    size = path.stat().st_size
    if size != model.size:
        return "fail", f"{path}: {size:,} bytes of {model.size:,} (truncated?)", pull
    if not models.is_verified(model, path):
        return "fail", f"{path}: sha256 differs from {model.sha256[:12]}…", pull
    return "ok", _described(path, f"sha256 {model.sha256[:12]}… verified"), ""


def _model_file(path: Path) -> tuple[str, str, str]:
    fix = "set it to a GGUF file, or empty it for the pulled default"
    try:
        return "ok", _described(path, "sha256 not known for a file of your own"), ""
    except models.ModelFileError as exc:
        return "fail", str(exc).split(". ")[0], fix


def _described(path: Path, sha: str) -> str:
    summary = models.inspect(path)
    fim = f"FIM template {summary.fim_template}" if summary.fim_template else "no FIM template"
    return f"{path} ({summary.size / 2**20:,.0f} MiB, {summary.architecture}, {sha}, {fim})"


def _probe(name: str, path: str, verdict: probe.Verdict | None, gpu_layers: int) -> Check:
    if verdict is None:  # the child crashed on a file before this one
        return Check(f"{name}: probe", "fail", "not probed: llama.cpp crashed before it")
    if verdict.fatal:
        fix = probe.explain(verdict, path, what=name, gpu_layers=gpu_layers)
        return Check(f"{name}: probe", "fail", f"llama.cpp crashed: {verdict.cause}", fix)
    if not verdict.ok:
        fix = "pull it again (`spec-lsp models pull`) or use another GGUF"
        return Check(f"{name}: probe", "fail", f"llama.cpp cannot load it: {verdict.detail}", fix)
    how = "cached verdict" if verdict.cached else f"loaded and decoded in {verdict.seconds:.1f} s"
    return Check(f"{name}: probe", "ok", f"llama.cpp runs it in a child process ({how})")


def _settings(settings: Settings, origin: dict[str, str]) -> Check:
    default = Settings()
    changed = [
        f"{name}={getattr(settings, name)!r} ({origin.get(name, 'default')})"
        for name in Settings.model_fields
        if getattr(settings, name) != getattr(default, name)
    ]
    detail = "; ".join(changed) if changed else "all defaults"
    return Check("settings", "ok", f"{detail} (an editor's own settings apply on top)")


def _remote(settings: Settings) -> Check:
    try:
        client = connect.remote_client(settings)
    except EngineError as exc:
        return Check("remote engine", "fail", str(exc).split(": ")[0], str(exc))
    remote = connect.RemoteLoaded(client, Health(client.url, lambda _m: None))
    try:
        connect.connect_remote(remote, settings)
    except EngineError as exc:
        return Check("remote engine", "fail", f"{client.url}: not usable", str(exc))
    finally:
        remote.close()
    tls = "TLS" if client.url.startswith("https") else "plain http"
    template = remote.template.name if remote.template else "none (prefix only)"
    detail = f"{client.url} ({tls}) serves {remote.model}, FIM template {template}"
    return Check("remote engine", "ok", detail)


def _editors() -> Iterator[Check]:
    found = [
        str(entry)
        for folder in VSCODE_EXTENSION_DIRS
        if (root := Path(folder).expanduser()).is_dir()
        for entry in root.glob("spec-lsp.spec-lsp*")
    ]
    see = "see editors/README.md"
    if found:
        yield Check("VS Code extension", "ok", found[0])
    else:
        yield Check("VS Code extension", "info", "not installed", see)
    nvim = shutil.which("nvim")
    if nvim is None:
        yield Check("Neovim plugin", "info", "nvim not on PATH")
        return
    try:
        done = subprocess.run(
            [nvim, "--headless", "-c", NVIM_PLUGIN, "-c", "qa!"],
            capture_output=True,
            text=True,
            timeout=20,
            stdin=subprocess.DEVNULL,
        )
        where = (done.stdout + done.stderr).strip()
    except (OSError, subprocess.TimeoutExpired):
        where = ""
    if where.endswith("init.lua"):
        yield Check("Neovim plugin", "ok", f"on the runtime path: {where}")
    else:
        yield Check("Neovim plugin", "info", "spec_lsp is not on Neovim's runtime path", see)


def _pinned(package: str) -> str:
    """The version spec-lsp pins for `package` (its own metadata), or ''."""
    try:
        requires = metadata.requires("spec-lsp") or []
    except metadata.PackageNotFoundError:
        return ""
    for line in requires:
        if line.startswith(package + "==") and ";" not in line:
            return line.split("==", 1)[1].strip()
    return ""
