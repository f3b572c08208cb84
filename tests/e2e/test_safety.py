"""Safety: settings are data. Whatever an editor (or a workspace's settings file) sends, the
server runs no program and writes nothing outside its cache (cost profiles) and its log; no
module the server runs renders templates, evaluates code or starts processes. (stdio by default
and TCP on loopback: test_raw_protocol.py and test_server_app.py; sha256 of pulled models:
test_models.py; chat templates at run time: tests/real/test_faults_real.py.)"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

from spec_lsp.config import Settings
from tests.e2e.test_raw_protocol import Wire, did_open, inline_params, notification

ROOT = Path(__file__).resolve().parents[2] / "spec_lsp"
CLI_ONLY = {  # commands a person runs, never the server
    "models.py",  # `spec-lsp models pull` runs pip, with fixed arguments
    "doctor.py",  # `spec-lsp doctor` runs this Python and nvim, with fixed arguments
    "benchmarks.py",  # `spec-lsp bench` runs this Python on the checkout's benchmarks
}
# modules the server runs that start a program with fixed arguments (no shell), each for a reason
FIXED_PROGRAMS = {
    "engine/startup/crash_probe.py",  # the crash probe: this Python, fixed code, the model files as arguments
    "engine/context/workspace.py",  # git ls-files / check-ignore, fsmonitor and hooks off
    "engine/backends/llama.py",  # a GPU build: this Python, fixed code (`import llama_cpp`)
}


def hostile_settings(marker: Path) -> dict:
    """Every string setting carries shell syntax, substitutions and path traversal."""
    shell = f"$(touch {marker}); `touch {marker}`; touch {marker} #"
    values = {
        "model": f"{marker.parent}/../../{shell}.gguf",
        "draftModel": f"~/$HOME/{shell}",
        "fimTemplate": shell,
        "drafter": shell,
        "multiline": shell,
        "draftPolicy": shell,
        "engine": shell,
        "remoteUrl": f"http://127.0.0.1:1/{shell}",
        "remoteModel": shell,
        "remoteApiKeyEnv": shell,
        "remoteApi": shell,
        "remoteCaFile": f"~/{shell}.pem",
        "logFile": str(marker),  # not a setting: ignored
        "cacheDir": str(marker.parent),  # not a setting: ignored
        "command": ["sh", "-c", f"touch {marker}"],
    }
    strings = [
        name
        for name, field in Settings.model_fields.items()
        if "str" in str(field.annotation) or "Literal" in str(field.annotation)
    ]
    aliases = {Settings.model_fields[n].alias or n for n in strings}
    assert aliases <= set(values), f"new string settings to try: {aliases - set(values)}"
    return values


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def test_hostile_settings_run_nothing_and_write_only_the_cache_and_log(tmp_path):
    home, cwd, marker = tmp_path / "home", tmp_path / "cwd", tmp_path / "pwned"
    home.mkdir()
    cwd.mkdir()
    log = tmp_path / "logs" / "server.log"
    log.parent.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    env.pop("SPEC_LSP_PROFILE_DIR", None)
    env.pop("SPEC_LSP_MODELS_DIR", None)
    command = [sys.executable, "-m", "spec_lsp.cli", "serve", "--backend", "fake"]
    proc = subprocess.Popen(
        [*command, "--log-file", str(log)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=cwd,
        env=env,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        wire = Wire(proc.stdout, proc.stdin)
        wire.handshake()  # a good load first: adaptive drafting writes its cost profile
        deadline = time.monotonic() + 30  # (measured in idle time after the load)
        for i in range(1000):
            if wire.call(f"p{i}", "specLsp/stats", None)["result"]["cost_profile"] is not None:
                break
            assert time.monotonic() < deadline, "no cost profile measured"
            time.sleep(0.05)
        settings = {"specLsp": hostile_settings(marker)}
        wire.send(notification("workspace/didChangeConfiguration", {"settings": settings}))
        wire.send(did_open("file:///x.py", "def fo\n"))
        answer = wire.call(
            "c", "textDocument/inlineCompletion", inline_params("file:///x.py", 0, 6)
        )
        assert "result" in answer
        stats = wire.call("s", "specLsp/stats", None)["result"]
        wire.call("bye", "shutdown", None)
        wire.send(notification("exit", None))
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not marker.exists()
    written = files_under(tmp_path)
    allowed = {p for p in written if home / ".cache" / "spec-lsp" in p.parents} | {log}
    assert written == allowed, written - allowed
    assert list(cwd.iterdir()) == []
    assert any(home / ".cache" / "spec-lsp" in p.parents for p in written)  # it did write there
    assert "model file not found" in stats["load_error"]  # the path was only ever a path


def test_the_server_modules_never_run_programs_or_render_templates():
    """Read from the syntax tree: no imports of subprocess, jinja2, pickle, no eval/exec/compile,
    no os.system/popen/exec*/spawn*, nothing naming chat templates or chat completion."""
    banned_modules = {"subprocess", "jinja2", "pickle", "marshal", "shlex", "pty"}
    banned_calls = {"eval", "exec", "compile", "__import__"}
    banned_attrs = {"system", "popen", "execv", "execve", "execvp", "spawnv", "startfile"}
    banned_words = ("chat_template", "create_chat_completion", "chat_handler", "chat_format")
    offenders = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if path.name in CLI_ONLY or "samples" in path.parts:
            continue  # samples: completion demos
        source = path.read_text()
        if rel.as_posix() in FIXED_PROGRAMS:
            offenders += [f"{rel}: a shell" for w in ("shell=True", "os.system") if w in source]
            continue
        offenders += [f"{rel}: {w}" for w in banned_words if w in source]
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names]
                if isinstance(node, ast.ImportFrom) and node.module:
                    names.append(node.module)
                offenders += [
                    f"{rel}: import {n}" for n in names if n.split(".")[0] in banned_modules
                ]
            elif isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Name) and func.id in banned_calls:
                    offenders.append(f"{rel}:{node.lineno}: {func.id}()")
                if isinstance(func, ast.Attribute) and func.attr in banned_attrs:
                    offenders.append(f"{rel}:{node.lineno}: .{func.attr}()")
    assert offenders == []
