"""`spec-lsp doctor` on broken installs that need no model: the line of the check that failed
says what is wrong and what to run, and the exit status is 1."""

from __future__ import annotations

import socket
import subprocess
import sys

from tests.doctor_run import doctor, failed


def test_a_missing_model_names_the_pull(tmp_path) -> None:
    status, checks = doctor(SPEC_LSP_MODELS_DIR=str(tmp_path))
    assert status == 1 and failed(checks) == ["model qwen2.5-coder-1.5b"]
    check = checks["model qwen2.5-coder-1.5b"]
    assert str(tmp_path) in check["detail"]
    assert check["fix"] == "run `spec-lsp models pull qwen2.5-coder-1.5b`"
    assert "model qwen2.5-coder-1.5b: probe" not in checks  # nothing to probe


def test_a_truncated_default_model_is_told_by_its_size(tmp_path) -> None:
    from spec_lsp import models

    model = models.DEFAULT_MODELS["smollm2-135m"]
    (tmp_path / model.file_name).write_bytes(b"GGUF" + bytes(1000))
    status, checks = doctor(
        "--model",
        str(tmp_path / "none.gguf"),
        "--drafter",
        "model",
        SPEC_LSP_MODELS_DIR=str(tmp_path),
    )
    assert status == 1
    draft = checks["draftModel smollm2-135m"]
    assert draft["status"] == "fail" and "1,004 bytes of" in draft["detail"]
    assert "truncated" in draft["detail"] and "models pull smollm2-135m" in draft["fix"]
    assert checks["model none.gguf"]["status"] == "fail"  # a file of one's own, missing


def test_a_remote_url_that_refuses_is_named_with_its_fix() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    status, checks = doctor("--engine", "remote", "--remote-url", url)
    assert status == 1 and failed(checks) == ["remote engine"]
    assert url in checks["remote engine"]["detail"]
    assert "llama.cpp build" not in checks and "model qwen2.5-coder-1.5b" not in checks
    assert (
        "settings" in checks and "engine='remote' (flag --engine)" in checks["settings"]["detail"]
    )


def test_settings_say_where_each_came_from(tmp_path) -> None:
    _, checks = doctor(
        "--draft-max", "8", SPEC_LSP_DEBOUNCE_MS="40", SPEC_LSP_MODELS_DIR=str(tmp_path)
    )
    detail = checks["settings"]["detail"]
    assert "draft_max=8 (flag --draft-max)" in detail
    assert "debounce_ms=40 (env SPEC_LSP_DEBOUNCE_MS)" in detail


def test_the_text_form_is_one_line_per_check(tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "spec_lsp.cli", "doctor"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "SPEC_LSP_MODELS_DIR": str(tmp_path)},
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 1 and lines[0].startswith("OK    python")
    wrong = [line for line in lines if line.startswith("FAIL")]
    assert len(wrong) == 1 and "-> run `spec-lsp models pull qwen2.5-coder-1.5b`" in wrong[0]
