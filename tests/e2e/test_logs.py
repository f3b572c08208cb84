"""What the server logs: at the default level its lifecycle, not the traffic (no completion or
document text, a few hundred bytes for a whole session); at DEBUG every message it sends; a
--log-file that rotates instead of growing without bound."""

from __future__ import annotations

import logging
import logging.handlers
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from spec_lsp.server.logs import LOG_FILE_BACKUPS, LOG_FILE_MAX_BYTES, QueuedOutput, setup_logging
from tests.e2e.test_raw_protocol import (
    SERVER,
    Wire,
    did_open,
    inline_params,
    notification,
    request,
)

URI = "file:///work/secret.py"
MARKER = "ZQX_DOCUMENT_MARKER_7731"
COMPLETION = '"insertText": "o(x):'  # the fake backend completes `def fo` with `o(x):`
EDITS = 50
DEFAULT_LEVEL_BOUND = 2_000  # stderr bytes of the session (285 now; 16,629 with pygls at INFO)


def typing_session(
    tmp_path: Path, *args: str, edits: int = EDITS, unread_stderr: bool = False
) -> str:
    """The real server over stdio: initialize with settings, open a document holding MARKER,
    then type `edits` changes with an inline completion after each. Returns its stderr (with
    `unread_stderr`, a pipe nobody reads, as an editor that ignores the server's stderr: then
    nothing, and a watchdog kills a server that stops answering)."""
    err_path = tmp_path / "stderr.log"
    with err_path.open("wb") as err:
        proc = subprocess.Popen(
            [*SERVER, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if unread_stderr else err,
        )
        assert proc.stdin is not None and proc.stdout is not None
        watchdog = threading.Timer(60, proc.kill)
        watchdog.start()
        wire = Wire(proc.stdout, proc.stdin)
        try:
            options = {"specLsp": {"maxTokens": 32}}
            init = {"capabilities": {}, "initializationOptions": options}
            assert "capabilities" in wire.call(0, "initialize", init)["result"]
            wire.send(notification("initialized", {}))
            for i in range(500):  # the model loads in the background
                if wire.call(f"ready-{i}", "specLsp/stats", None)["result"]["ready"]:
                    break
            header = f"{MARKER} = 1\n"
            wire.send(did_open(URI, header))
            answers = []
            for version in range(2, edits + 2):
                line = "x = 1; " * version + "def fo"
                change = {
                    "textDocument": {"uri": URI, "version": version},
                    "contentChanges": [{"text": header + line}],
                }
                wire.send(notification("textDocument/didChange", change))
                params = inline_params(URI, 1, len(line))
                answers.append(wire.call(version, "textDocument/inlineCompletion", params))
            assert all(a["result"]["items"][0]["insertText"] == "o(x):" for a in answers)
            wire.call("bye", "shutdown", None)
            wire.send(notification("exit", None))
            if proc.stderr is not None:
                proc.stderr.close()  # the editor goes away: its end of the pipe closes
            assert proc.wait(10) == 0
        finally:
            watchdog.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return err_path.read_text("utf-8")


def test_default_level_logs_no_traffic_and_no_text(tmp_path):
    log = typing_session(tmp_path)
    assert MARKER not in log
    assert "o(x):" not in log
    assert len(log.encode()) < DEFAULT_LEVEL_BOUND, log
    # ...but the lifecycle is there
    assert "serving over stdio (backend fake)" in log
    assert "settings from initializationOptions applied: max_tokens" in log
    assert "ready" in log


def test_debug_level_traces_the_messages(tmp_path):
    """The messages the default level leaves out are there at DEBUG (so the test above sees
    them if the filter goes)."""
    log = typing_session(tmp_path, "--log-level", "debug")
    assert log.count(COMPLETION) >= EDITS
    assert "Request 'textDocument/inlineCompletion' received" in log
    assert len(log.encode()) > 5 * DEFAULT_LEVEL_BOUND


def test_a_client_that_never_reads_stderr_is_still_answered(tmp_path):
    """At DEBUG, 300 edits write ~200 KB of logs. With stderr a pipe nobody reads (64 KB), a
    server that logged from its event loop stopped answering after a few dozen edits; here
    the writer thread waits on the pipe, the loop does not, and records are dropped."""
    typing_session(tmp_path, "--log-level", "debug", edits=300, unread_stderr=True)


def test_a_stuck_log_writer_never_blocks_the_logger(restore_logging):
    """The writer is stuck (a pipe nobody reads): logging returns at once, drops what does
    not fit, and says how much it dropped once the writer moves again."""
    written: list[str] = []
    moving = threading.Event()

    class Stuck(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            moving.wait()
            written.append(record.getMessage())

    queued = QueuedOutput(Stuck(), size=100)
    logger = logging.getLogger("spec_lsp.test.stuck")
    logger.addHandler(queued)
    logger.propagate = False
    try:
        started = time.perf_counter()
        for i in range(1_000):
            logger.warning("record %d", i)
        assert time.perf_counter() - started < 1.0
        assert queued.dropped >= 1_000 - 101  # the queue, and the record the writer holds
        moving.set()
    finally:
        logger.removeHandler(queued)
        logger.propagate = True
        queued.close()
    assert any(
        line.endswith("log records dropped: the log's reader was behind") for line in written
    )
    assert len(written) <= 103


def test_set_trace_is_still_accepted(tmp_path):
    """pygls handles $/setTrace (it sends no $/logTrace on its own): the server takes it and
    goes on serving."""
    with (tmp_path / "stderr.log").open("wb") as err:
        proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        assert proc.stdin is not None and proc.stdout is not None
        wire = Wire(proc.stdout, proc.stdin)
        try:
            wire.handshake()
            wire.send(notification("$/setTrace", {"value": "verbose"}))
            assert wire.serves()
            wire.send(request("bye", "shutdown", None))
        finally:
            proc.kill()
            proc.wait()
    assert "unknown method" not in (tmp_path / "stderr.log").read_text("utf-8").lower()


@pytest.fixture
def restore_logging():
    root, pygls = logging.getLogger(), logging.getLogger("pygls")
    saved = root.handlers[:], root.level, pygls.level
    yield
    for handler in root.handlers:
        if handler not in saved[0]:
            handler.close()
    root.handlers[:], root.level = saved[0], saved[1]
    pygls.setLevel(saved[2])


def test_log_file_rotates(tmp_path, restore_logging):
    path = tmp_path / "spec-lsp.log"
    queued = setup_logging(str(path), "INFO")
    assert logging.getLogger().handlers == [queued]
    handler = queued.output
    assert isinstance(handler, logging.handlers.RotatingFileHandler)
    assert handler.maxBytes == LOG_FILE_MAX_BYTES <= 10 * 1024 * 1024
    assert handler.backupCount == LOG_FILE_BACKUPS >= 1
    handler.maxBytes = 10_000  # the same handler, rotating sooner
    line = "x" * 100
    for _ in range(2_000):
        logging.getLogger("spec_lsp.test").warning("%s", line)
    queued.close()  # the writer thread writes what is queued
    files = sorted(os.listdir(tmp_path))
    assert files == ["spec-lsp.log", *(f"spec-lsp.log.{i}" for i in range(1, LOG_FILE_BACKUPS + 1))]
    assert all((tmp_path / name).stat().st_size <= 10_000 for name in files)


def test_pygls_loggers_follow_the_level(restore_logging):
    setup_logging(None, "INFO")
    pygls = logging.getLogger("pygls.protocol.json_rpc")
    assert not pygls.isEnabledFor(logging.INFO) and pygls.isEnabledFor(logging.WARNING)
    setup_logging(None, "ERROR")
    assert not pygls.isEnabledFor(logging.WARNING)
    setup_logging(None, "DEBUG")
    assert pygls.isEnabledFor(logging.DEBUG)
