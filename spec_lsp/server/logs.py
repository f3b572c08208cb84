"""Logging for a server whose stdout is the protocol: stderr or a rotating file, written by a
thread of its own.

The event loop never waits on a log write. An editor that reads the server's stderr slowly, or
not at all, fills the pipe (64 KB); a server that logged from the loop then stopped answering
altogether (seen with a client that did not drain stderr: no answer at all after a few seconds
of typing). Records go through a bounded queue to a writer thread instead; when the writer is
behind, records are dropped and counted, and the count is logged once it catches up.

At the default level pygls' loggers show only warnings and errors: pygls logs every message it
sends at INFO (completion text and the edits around it) and each feature it registers. DEBUG
traces the traffic.
"""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import queue
import sys
import threading
from typing import Any

LOG_FILE_MAX_BYTES = 5 * 1024 * 1024  # --log-file rotates at this size...
LOG_FILE_BACKUPS = 3  # ...keeping this many old files (.1 to .3): 20 MB at most
QUEUE_RECORDS = 10_000  # records waiting for the writer before new ones are dropped
CLOSE_WAIT_S = 2.0  # at exit, how long the queued records may take to be written
_STOP: Any = object()  # tells the writer thread to stop
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class QueuedOutput(logging.handlers.QueueHandler):
    """Hands records to the writer thread without waiting; drops them when the queue is full."""

    def __init__(self, output: logging.Handler, *, size: int = QUEUE_RECORDS) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(size)
        super().__init__(self._queue)
        self.output = output
        self.dropped = 0
        self._reported = 0
        self._writer = threading.Thread(target=self._drain, name="spec-lsp-log", daemon=True)
        self._writer.start()

    def enqueue(self, record: logging.LogRecord) -> None:
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1

    def _drain(self) -> None:
        """The writer thread: each record, after a note of any dropped since the last one."""
        while (record := self._queue.get()) is not _STOP:
            if self.dropped > self._reported:
                lost, self._reported = self.dropped - self._reported, self.dropped
                note = "%d log records dropped: the log's reader was behind"
                self.output.handle(
                    logging.LogRecord(__name__, logging.WARNING, __file__, 0, note, (lost,), None)
                )
            self.output.handle(record)

    def close(self) -> None:
        """Write what is queued (waiting at most CLOSE_WAIT_S: a reader that never reads must not
        keep the server from exiting), then close the output."""
        if self._writer.is_alive():
            with contextlib.suppress(queue.Full):
                self._queue.put(_STOP, timeout=CLOSE_WAIT_S)
            self._writer.join(CLOSE_WAIT_S)
        if not self._writer.is_alive():
            self.output.close()
        super().close()


def setup_logging(log_file: str | None, level: str) -> QueuedOutput:
    output: logging.Handler = (
        logging.handlers.RotatingFileHandler(
            log_file, maxBytes=LOG_FILE_MAX_BYTES, backupCount=LOG_FILE_BACKUPS, encoding="utf-8"
        )
        if log_file
        else logging.StreamHandler(sys.stderr)
    )
    output.setFormatter(logging.Formatter(FORMAT))
    handler = QueuedOutput(output)
    root = logging.getLogger()
    for old in root.handlers:
        old.close()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    tracing = root.level <= logging.DEBUG
    logging.getLogger("pygls").setLevel(
        logging.NOTSET if tracing else max(root.level, logging.WARNING)
    )
    return handler
