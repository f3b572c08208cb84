"""Jedi in a process of its own: the same tables as in process, what is ready sent as it goes,
a stop obeyed between receivers, a closed document's forget never waiting on an analysis."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from spec_lsp.engine.guide.python.analysis import Analyser
from spec_lsp.engine.guide.python.process import AnalysisFailed, JediProcess
from spec_lsp.engine.guide.table import Hooks

TEXT = (
    "import os\n\n\nclass Box:\n    def __init__(self):\n        self.size = 1\n\n"
    "    def grow(self):\n        return self.size + 1\n\n\n"
    "def use(box: Box):\n    os.path.join('a')\n    return box.grow()\n"
)


@pytest.fixture(scope="module")
def child():
    process = JediProcess()
    yield process
    process.close()


def test_the_child_answers_what_the_analyser_answers_in_process(child):
    here = Analyser().analyse(TEXT, version=1, path=None, root=None)
    there = child.analyse(TEXT, version=1, path=None, root=None)
    assert there.members == here.members and there.version == 1
    assert child.memory()["analysis_process_rss_mb"] > 10
    again = child.analyse(TEXT + "\n", version=2, path=None, root=None, earlier=there)
    assert again.version == 2 and child.starts == 1  # (one child, kept)
    assert child.pid not in (None, os.getpid())


def test_a_stop_is_obeyed_and_the_child_goes_on_serving(child):
    many = TEXT + "".join(f"\nx{i} = os.path\nx{i}.join\n" for i in range(200))
    asked = time.perf_counter()
    stopped = child.analyse(
        many, version=1, path=None, root=None, hooks=Hooks(cancelled=lambda: True)
    )
    assert not stopped.done and time.perf_counter() - asked < 30
    assert child.analyse(TEXT, version=2, path=None, root=None).done


def test_partial_tables_are_published_and_forget_does_not_wait(child):
    many = TEXT + "".join(f"\ny{i} = Box()\ny{i}.grow\n" for i in range(120))
    published = []
    running = threading.Thread(
        target=lambda: child.analyse(
            many, version=1, path=None, root=None, hooks=Hooks(publish=published.append)
        )
    )
    running.start()
    time.sleep(0.5)
    asked = time.perf_counter()
    child.forget("/nowhere/m.py")  # (a document closed while the analysis runs)
    assert time.perf_counter() - asked < 0.1
    running.join(120)
    assert published and all(table.partial for table in published)


def test_a_child_that_dies_fails_its_analysis_and_is_started_again(child):
    many = TEXT + "".join(f"\nz{i} = Box()\nz{i}.grow\n" for i in range(300))
    starts = child.starts
    killer = threading.Timer(0.5, lambda: os.kill(child.pid, signal.SIGKILL))
    killer.start()
    with pytest.raises(AnalysisFailed):
        child.analyse(many, version=1, path=None, root=None)
    assert child.analyse(TEXT, version=2, path=None, root=None).version == 2
    assert child.starts == starts + 1
