"""The remote engine against a stub OpenAI-compatible server on loopback (no model): the URL
policy, the prompt it sends, streaming and early stop, cancellation closing the connection,
each fault told once with the URL and the fix, backoff and recovery, TLS verification, and
the API key kept out of stats and logs."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from spec_lsp.config import Settings, merge
from spec_lsp.engine import CancelToken, CompletionRequest, EngineError, build_engine
from spec_lsp.engine.engine import Engine
from spec_lsp.engine.remote.client import base_url
from spec_lsp.engine.remote.health import Health
from spec_lsp.engine.remote.prompt_text import template_for
from tests.e2e.remote_servers import Stub, free_port, self_signed
from tests.unit.test_layering import ROOT, imports

PREFIX = "def add(a, b):\n"
REQUEST = CompletionRequest(prefix=PREFIX, suffix="", document_id="file:///a.py")


@pytest.fixture
def stub():
    server = Stub()
    yield server
    server.close()


def remote(url: str, told: list[str], **settings) -> Engine:
    engine = build_engine(
        Settings(engine="remote", remote_url=url, precompute=False, **settings), backend="fake"
    )
    engine.notify = told.append
    engine.load()
    assert engine.stage.remote is not None
    engine.stage.remote.health.first_s, engine.stage.remote.health.max_s = 0.05, 0.2  # quick tests
    return engine


def wait_retry(engine: Engine) -> None:
    assert engine.stage.remote is not None
    time.sleep(max(0.0, engine.stage.remote.health.retry_at - time.monotonic()) + 0.01)


# -- settings and the URL policy -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("url", "allow", "expected"),
    [
        ("http://127.0.0.1:8080", False, "http://127.0.0.1:8080"),
        ("http://localhost:8080/v1/", False, "http://localhost:8080"),
        ("http://[::1]:8000/v1", False, "http://[::1]:8000"),
        ("https://gpu.example.com/llm/v1", False, "https://gpu.example.com/llm"),
        ("http://gpu.example.com:8000", True, "http://gpu.example.com:8000"),
    ],
)
def test_urls_allowed(url, allow, expected):
    assert base_url(url, allow_http=allow) == expected


@pytest.mark.parametrize("url", ["http://gpu.example.com:8000", "http://10.0.0.5/v1", "ftp://x"])
def test_plain_http_to_another_machine_or_another_scheme_is_refused_with_the_fix(url):
    with pytest.raises(EngineError) as err:
        base_url(url, allow_http=False)
    assert "remoteUrl" in str(err.value)
    assert "remoteAllowHttp" in str(err.value) or "http(s)" in str(err.value)


def test_the_api_key_is_read_from_the_named_variable_and_never_shown(stub, monkeypatch, caplog):
    secret = "sk-very-secret-123"
    monkeypatch.setenv("TEAM_KEY", secret)
    caplog.set_level(logging.DEBUG)
    told: list[str] = []
    engine = remote(stub.url, told, remote_api_key_env="TEAM_KEY")
    assert engine.complete(REQUEST, CancelToken()).text
    stub.mode, stub.status = "status", 401
    engine.complete(CompletionRequest(prefix="x = ", document_id="b"), CancelToken())
    assert told and "remoteApiKeyEnv" in told[0]
    everything = repr(engine.stats()) + caplog.text + " ".join(told)
    assert secret not in everything
    engine.close()
    # a key pasted where the variable's name goes is refused without echoing it
    _, errors, _ = merge(Settings(), {"remoteApiKeyEnv": secret})
    assert errors and secret not in errors[0] and "NAME" in errors[0]


def test_an_unset_key_variable_is_an_error_naming_it(stub, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(EngineError, match="NO_SUCH_KEY_VAR"):
        remote(stub.url, [], remote_api_key_env="NO_SUCH_KEY_VAR")


def test_templates_from_the_served_model_name():
    assert template_for("auto", "Qwen/Qwen2.5-Coder-7B").name == "qwen"
    assert template_for("auto", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf").name == "qwen"
    assert template_for("auto", "bigcode/starcoder2-15b").variant == "starcoder2"
    assert template_for("auto", "deepseek-ai/deepseek-coder-6.7b-base").name == "deepseek"
    assert template_for("auto", "codellama/CodeLlama-7b-hf").prefix == "<PRE>"
    assert template_for("auto", "google/codegemma-2b").name == "codegemma"
    assert template_for("auto", "SmolLM2-135M-Instruct.Q4_1.gguf") is None
    assert template_for("qwen", "anything").name == "qwen"
    assert template_for("none", "Qwen2.5-Coder") is None


# -- the request ---------------------------------------------------------------------------------
def test_a_completion_streams_with_the_fim_prompt_and_stops_at_the_line_end(stub):
    stub.models = ["Qwen/Qwen2.5-Coder-7B"]
    stub.pieces = ["    return a + b", "\n", "\n", "def sub"]
    engine = remote(stub.url, [])
    request = CompletionRequest(
        prefix=PREFIX, suffix="\n\nprint(add(1, 2))\n", document_id="a", file_name="a.py"
    )
    completion = engine.complete(request, CancelToken())
    assert completion.text == "    return a + b"
    body = stub.completions[-1]
    assert body["model"] == "Qwen/Qwen2.5-Coder-7B" and body["stream"] is True
    assert body["temperature"] == 0.0 and body["max_tokens"] == 64
    assert body["prompt"].startswith("<|file_sep|>a.py\n<|fim_prefix|>")
    assert "<|fim_suffix|>\n\nprint(add(1, 2))\n<|fim_middle|>def add(a, b):\n" in body["prompt"]
    assert "<|endoftext|>" in body["stop"]
    stats = engine.stats()
    assert stats["engine"] == "remote" and stats["cache_hits"] == {"remote": 1}
    assert stats["remote"]["model"] == "Qwen/Qwen2.5-Coder-7B"
    assert stats["remote"]["fim_template"] == "qwen" and stats["remote"]["state"] == "ok"
    assert stats["first_token_ms_p50"] is not None and stats["generation_ms_p95"] is not None
    engine.close()


def test_typed_through_and_precompute_work_as_in_process(stub):
    stub.pieces = ["    return a + b", "\n"]
    engine = remote(stub.url, [])
    first = engine.complete(REQUEST, CancelToken())
    typed = CompletionRequest(prefix=PREFIX + "    ret", document_id=REQUEST.document_id)
    again = engine.complete(typed, CancelToken())
    assert (first.text, again.text, again.typed) == ("    return a + b", "urn a + b", "    ret")
    assert len(stub.completions) == 1 and again.stats.cache == "typed_through"
    engine.close()


def test_cancelling_closes_the_stream_at_once(stub):
    stub.pieces = ["x"] * 600  # 30 s of stream (a loaded machine keeps the bounds below)
    stub.delay_s = 0.05
    engine = remote(stub.url, [], max_tokens=512, multiline="always")
    cancel = CancelToken()
    threading.Timer(0.4, cancel.cancel).start()
    started = time.monotonic()
    with pytest.raises(Exception) as err:
        engine.complete(REQUEST, cancel)
    assert type(err.value).__name__ == "Cancelled"
    assert time.monotonic() - started < 8.0  # not the 25 s that 512 chunks take
    deadline = time.monotonic() + 20
    while not stub.closed_early and time.monotonic() < deadline:
        time.sleep(0.02)
    assert stub.closed_early and stub.closed_early[0] < 200  # the server saw the client go
    engine.close()


# -- faults: told once, empty answers, backoff, recovery -----------------------------------------
@pytest.mark.parametrize(
    ("mode", "status", "words"),
    [
        ("status", 500, ["HTTP 500", "stub says 500", "log"]),
        ("status", 400, ["HTTP 400", "remoteModel"]),
        ("garbage", 0, ["not OpenAI-compatible"]),
        ("die", 0, ["broke off"]),
    ],
)
def test_a_fault_is_told_once_and_recovery_is_by_itself(stub, mode, status, words):
    told: list[str] = []
    engine = remote(stub.url, told)
    stub.mode, stub.status = mode, status
    stub.pieces = ["a", "b", "c", "\n"]
    for i in range(3):  # the first fails; the others fall inside the backoff or fail again
        assert (
            engine.complete(
                CompletionRequest(prefix=f"x{i} = ", document_id="d"), CancelToken()
            ).text
            == ""
        )
        wait_retry(engine)
    assert len(told) == 1, told
    assert stub.url in told[0] and all(w in told[0] for w in words), told[0]
    stub.mode = "ok"
    stub.pieces = ["    return 1", "\n"]
    wait_retry(engine)
    assert engine.complete(REQUEST, CancelToken()).text == "    return 1"
    assert engine.stats()["remote"]["state"] == "ok"
    engine.close()


def test_slow_first_byte_is_a_timeout_naming_the_setting(stub):
    told: list[str] = []
    engine = remote(stub.url, told, remote_timeout_ms=300)
    stub.mode, stub.first_byte_s = "slow", 20.0
    started = time.monotonic()
    assert engine.complete(REQUEST, CancelToken()).text == ""
    assert time.monotonic() - started < 10.0  # the timeout, not the 20 s first byte
    assert len(told) == 1 and "remoteTimeoutMs" in told[0] and stub.url in told[0]
    engine.close()


def test_a_wrong_model_name_lists_what_the_server_serves(stub):
    told: list[str] = []
    engine = remote(stub.url, told, remote_model="qwen-7b")
    assert engine.ready and engine.complete(REQUEST, CancelToken()).text == ""
    assert len(told) == 1 and "qwen-7b" in told[0] and "stub-coder" in told[0]
    assert "remoteModel" in told[0]
    assert stub.completions == []  # never asked for a model it does not serve
    engine.close()


def test_down_at_start_then_up_recovers_without_a_second_message():
    port = free_port()
    told: list[str] = []
    engine = remote(f"http://127.0.0.1:{port}", told, remote_connect_timeout_ms=500)
    assert engine.ready and len(told) == 1
    assert f"127.0.0.1:{port}" in told[0] and "start the server" in told[0]
    assert engine.stage.remote is not None
    health = engine.stage.remote.health
    health.retry_at = time.monotonic() + 600  # (inside the backoff however slow the machine)
    assert engine.complete(REQUEST, CancelToken()).text == ""  # inside the backoff: at once,
    assert health.failures == 1 and len(told) == 1  # without trying the server again
    assert engine.stats()["remote"]["state"] == "failing"
    engine.close()


def test_backoff_doubles_and_is_bounded():
    now = [0.0]
    told: list[str] = []
    health = Health("http://x", told.append, clock=lambda: now[0])
    delays = []
    for _ in range(8):
        health.failed("down", "down")
        delays.append(health.retry_at - now[0])
        assert not health.available()
        now[0] = health.retry_at
        assert health.available()
    assert delays == [0.5, 1, 2, 4, 8, 8, 8, 8] and told == ["down"]
    health.failed("dropped", "broke off")  # the same problem: the server out of reach
    assert told == ["down"]
    health.failed("http", "500")
    assert told == ["down", "500"]  # another problem: told too
    health.succeeded()
    health.failed("down", "down again")
    assert told[-1] == "down again" and health.outages == 2


def test_tls_certificates_are_verified_and_a_private_ca_is_accepted(tmp_path: Path):
    cert, context = self_signed(tmp_path)
    stub = Stub(tls=context)
    try:
        told: list[str] = []
        engine = remote(stub.url, told)
        assert engine.complete(REQUEST, CancelToken()).text == ""
        assert len(told) == 1 and "remoteCaFile" in told[0] and "TLS" in told[0]
        engine.close()
        trusted = remote(stub.url, [], remote_ca_file=str(cert))
        assert trusted.complete(REQUEST, CancelToken()).text == "    return a + b"
        trusted.close()
    finally:
        stub.close()


def test_only_the_remote_client_imports_httpx():
    users = sorted(
        path.relative_to(ROOT).as_posix()
        for path in ROOT.rglob("*.py")
        if "samples" not in path.parts
        and any(
            n == "httpx" or n.startswith("httpx.")
            for n in imports(path, path.relative_to(ROOT).as_posix())
        )
    )
    assert users == ["engine/remote/client.py"]


def test_the_engine_settings_come_from_flags_and_environment(monkeypatch):
    from spec_lsp.cli import build_parser, settings_from_args

    monkeypatch.setenv("SPEC_LSP_REMOTE_MODEL", "Qwen/Qwen2.5-Coder-7B")
    monkeypatch.setenv("SPEC_LSP_REMOTE_TIMEOUT_MS", "2500")
    args = build_parser().parse_args(
        ["serve", "--engine", "remote", "--remote-url", "https://gpu.example.com/v1"]
    )
    settings = settings_from_args(args)
    assert (settings.engine, settings.remote_url) == ("remote", "https://gpu.example.com/v1")
    assert settings.remote_model == "Qwen/Qwen2.5-Coder-7B" and settings.remote_timeout_ms == 2500
    assert {"engine", "remoteUrl", "remoteApiKeyEnv", "remoteCaFile"} <= set(
        Settings.model_json_schema(by_alias=True)["properties"]
    )


def test_the_window_budget_follows_the_servers_token_counts(stub):
    stub.chars_per_token = 5.0
    engine = remote(stub.url, [])
    assert engine.stage.remote is not None and engine.stage.remote.tokens.countable
    assert abs(engine.stage.remote.tokens.chars_per_token - 5.0) < 0.1  # measured at connect
    stub.chars_per_token = 2.0  # the code being edited is denser
    for i in range(3):
        engine.complete(
            CompletionRequest(prefix=f"v{i} = [{i}" * 40, document_id="d"), CancelToken()
        )
    deadline = time.monotonic() + 30  # (counted off the requests' path)
    while engine.stage.remote.tokens.chars_per_token > 2.2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert engine.stage.remote.tokens.chars_per_token < 2.2  # the estimate follows
    engine.close()
    plain = Stub()  # no tokenize endpoint: the default estimate, and nothing asked later
    try:
        engine = remote(plain.url, [])
        assert engine.stage.remote is not None and not engine.stage.remote.tokens.countable
        assert engine.stage.remote.tokens.chars_per_token == 3.0
        engine.complete(REQUEST, CancelToken())
        assert engine.stage.remote.tokens.snapshot()["known"] == 0
        engine.close()
    finally:
        plain.close()


def test_the_window_holds_what_the_servers_tokenizer_counts_once_it_has_counted(stub):
    """A tokenizer no estimate follows (a token per line): the first request's window is
    estimated, the next one at that place holds the budget in the server's tokens."""
    stub.chars_per_token, stub.count = 1.0, "lines"
    engine = remote(
        stub.url, [], prefix_tokens=64, suffix_tokens=0, fim_template="none", cache=False
    )
    assert engine.stage.remote is not None
    # (long lines: ~3 tokens each by the estimate the connection measured)
    lines = "".join(
        f"value_{i:04d} = compute({', '.join(['value'] * 20)}, {i})\n" for i in range(400)
    )
    request = CompletionRequest(prefix=lines + "x = ", document_id="d")
    engine.complete(request, CancelToken())
    estimated = stub.completions[-1]["prompt"].count("\n")
    deadline = time.monotonic() + 30
    while engine.stage.remote.tokens.snapshot()["known"] < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
    engine.complete(request, CancelToken())
    counted = stub.completions[-1]["prompt"].count("\n")
    assert estimated < 64 - 16 <= counted <= 64, (estimated, counted)  # (16-line blocks)
    assert engine.stage.remote.tokens.hits > 0
    engine.close()


# -- llama-server: /infill -----------------------------------------------------------------------
def test_llama_server_is_asked_at_infill_with_the_parts_apart(stub):
    stub.llama_server = True
    engine = remote(stub.url, [], remote_api="infill")
    assert engine.stage.remote is not None
    assert (engine.stage.remote.server, engine.stage.remote.endpoint) == ("llama-server", "infill")
    request = CompletionRequest(
        prefix="import os\n\ndef add(a, b):\n    ",
        suffix="\n\nprint(add(1, 2))\n",
        document_id="file:///a.py",
    )
    completion = engine.complete(request, CancelToken())
    assert completion.text == "return a + b"
    assert not stub.completions and len(stub.infills) == 1
    body = stub.infills[0]
    assert body["input_prefix"] == "import os\n\ndef add(a, b):\n"
    assert body["prompt"] == ""  # the cursor's line, its trailing blanks left out
    assert body["input_suffix"] == "\n\nprint(add(1, 2))\n"
    assert body["input_extra"] == [] and body["cache_prompt"] is True and body["stream"] is True
    stats = completion.stats
    assert stats.prompt_tokens == 40 and stats.prompt_tokens_evaluated == 7
    assert (stats.drafted, stats.accepted) == (10, 6)  # the server's speculation
    assert stats.server_timings is not None and stats.server_timings["draft_n_accepted"] == 6
    totals = engine.stats()
    assert totals["acceptance_rate"] == 0.6 and totals["remote"]["endpoint"] == "infill"
    engine.close()


def test_a_multiline_infill_stops_by_indentation_and_time(stub):
    stub.llama_server = True
    engine = remote(stub.url, [], answer_budget_ms=900, remote_api="infill")
    request = CompletionRequest(
        prefix="class A:\n    def f(self):\n        ", document_id="d", multiline=True
    )
    engine.complete(request, CancelToken())
    body = stub.infills[-1]
    assert body["prompt"] == "" and body["input_prefix"].endswith("def f(self):\n")
    assert body["n_indent"] == 8 and body["t_max_predict_ms"] == 4 * 900
    engine.close()


def test_an_infill_the_model_cannot_serve_falls_back_to_completions(stub, caplog):
    stub.llama_server, stub.infill_status = True, 501
    told: list[str] = []
    engine = remote(stub.url, told, remote_api="infill")
    with caplog.at_level(logging.WARNING):
        first = engine.complete(REQUEST, CancelToken())
    assert (
        first.text.strip() == "return a + b"
        and len(stub.infills) == 1
        and len(stub.completions) == 1
    )
    assert "remoteApi" in caplog.text and not told  # logged; the person sees an answer
    engine.complete(
        CompletionRequest(prefix=PREFIX + "    x = 1\n", document_id="d"), CancelToken()
    )
    assert len(stub.infills) == 1 and len(stub.completions) == 2  # not asked again
    assert engine.stage.remote is not None and engine.stage.remote.endpoint == "completions"
    engine.close()


def test_llama_server_is_asked_at_completions_by_default_with_its_own_fields(stub):
    """By default llama-server gets the prompt laid out here (as in process); being
    llama-server, with its timings in every chunk and its prompt cache kept."""
    stub.llama_server = True
    engine = remote(stub.url, [])
    assert engine.stage.remote is not None
    assert (engine.stage.remote.server, engine.stage.remote.endpoint) == (
        "llama-server",
        "completions",
    )
    engine.complete(REQUEST, CancelToken())
    assert len(stub.completions) == 1 and not stub.infills
    body = stub.completions[0]
    assert body["timings_per_token"] is True and body["cache_prompt"] is True
    engine.close()
    other = Stub()  # another server: neither field
    try:
        engine = remote(other.url, [])
        engine.complete(REQUEST, CancelToken())
        assert "timings_per_token" not in other.completions[0]
        engine.close()
    finally:
        other.close()


def test_llama_server_is_prewarmed_at_the_place_edited(stub):
    """After an edit, the prompt of the place is sent for one token: llama-server keeps it in
    its prompt cache for the request there. Other servers are not asked (their cache is not
    known to keep it)."""
    stub.llama_server = True
    engine = remote(stub.url, [], remote_api="infill")
    request = CompletionRequest(prefix="def add(a, b):\n    ", document_id="d", file_name="a.py")
    assert engine.prewarm(request, CancelToken()) == 7  # (the stub's prompt_n)
    body = stub.infills[-1]
    assert body["max_tokens"] == 1 and body["cache_prompt"] is True
    engine.complete(request, CancelToken())
    asked = stub.infills[-1]
    same = ("input_prefix", "prompt", "input_suffix", "input_extra")
    assert all(asked[k] == body[k] for k in same)  # the prompt the request then sends
    assert engine.stats()["prewarm"] == {"prompts": 1, "tokens": 7}
    engine.close()
    plain = Stub()
    try:
        engine = remote(plain.url, [])
        assert engine.prewarm(request, CancelToken()) == 0 and not plain.completions
        engine.close()
    finally:
        plain.close()


def test_an_early_answer_from_llama_server_carries_its_counts(stub):
    """The first line is answered while the stream goes on: llama-server's per-chunk timings
    are in that answer's stats already."""
    stub.llama_server = True
    stub.pieces, stub.delay_s = ["x = 1\n", "y = 2\n", "z = 3\n"], 0.3
    engine = remote(stub.url, [], multiline="always", answer_budget_ms=100, remote_api="infill")
    early: list = []
    request = CompletionRequest(prefix="def f():\n    ", document_id="d", multiline=True)
    engine.complete(request, CancelToken(), reply=early.append)
    assert early and early[0].stats.stop_reason == "first_answer"
    assert early[0].stats.prompt_tokens_evaluated == 7 and early[0].stats.drafted == 10
    engine.close()


def test_window_counts_are_never_asked_while_an_answer_streams(stub):
    """llama_cpp.server interrupts a streaming completion when another request comes in: the
    tokenizer is asked between requests only."""
    stub.chars_per_token = 3.0
    stub.pieces, stub.delay_s = ["x", " =", " 1"], 0.05  # (read to its end: no early close)
    engine = remote(stub.url, [], cache=False)
    lines = "".join(f"value_{i} = compute(value_{i - 1}, {i})\n" for i in range(200))
    for i in range(6):
        request = CompletionRequest(prefix=lines * (i + 1) + "y = ", document_id=f"d{i}")
        engine.complete(request, CancelToken())
    deadline = time.monotonic() + 30  # (the counting goes on after the last answer)
    while sum(path == "/tokenize" for path, _b, _e in stub.spans) <= 3:
        assert time.monotonic() < deadline, "the window's lines were never counted"
        time.sleep(0.05)
    engine.close()
    streams = [(b, e) for path, b, e in stub.spans if path == "/v1/completions"]
    counts = [(b, e) for path, b, e in stub.spans if path == "/tokenize"]
    assert len(streams) == 6 and len(counts) > 3
    overlapping = [c for c in counts for s in streams if c[0] < s[1] and s[0] < c[1]]
    assert overlapping == []


def test_the_context_block_outlives_a_reload_of_the_remote_engine(stub):
    """A block chosen for the last place asked is the context provider's: new remote settings
    (another timeout) reload the engine, and the next ask there still opens with it."""
    tab, main = "file:///p/shapes.py", "file:///p/main.py"
    text = "from shapes import polygon_area\n\n\ndef report(points):\n    area = \n"
    engine = remote(stub.url, [], fim_template="qwen", context_tokens=640)
    engine.document_changed(tab, "def polygon_area(points):\n    return 0.0\n")
    engine.document_changed(main, text)
    here = CompletionRequest(prefix=text[:-1], suffix="\n", document_id=main, file_name="main.py")
    engine.complete(here, CancelToken())
    while engine.idle_work:  # (the block is chosen while idle, after the ask)
        engine.idle_step(CancelToken())
    engine.complete(replace(here, prefix=here.prefix + "p"), CancelToken())
    assert "def polygon_area" in stub.completions[-1]["prompt"]
    engine.update_settings(engine.settings.model_copy(update={"remote_timeout_ms": 9000}))
    engine.complete(replace(here, prefix=here.prefix + "po"), CancelToken())
    assert "def polygon_area" in stub.completions[-1]["prompt"]
    engine.close()
