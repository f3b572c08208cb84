"""The guide in the engine (fake byte-level model): the analysis prepared off the request path,
the monitor applied to the request's decoding, its counts in the stats."""

from __future__ import annotations

import re
from pathlib import Path

from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, CompletionRequest, build_engine

SHAPES = (
    "class Shape:\n"
    "    def __init__(self, width, height):\n"
    "        self.width = width\n        self.height = height\n\n"
    "    def area(self):\n        return self.width * self.height\n"
)
# the fake model continues its corpus ("        self.x = x"): after `self.` it writes `x` or `y`,
# members Shape does not have
MEMBERS = ("width", "height", "area")
DOCUMENT = "from pkg.shapes import Shape\n\n\ndef grow(self: Shape, by):\n    return self."


def workspace(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "shapes.py").write_text(SHAPES)
    (tmp_path / "pkg" / "main.py").write_text(DOCUMENT)
    return tmp_path


def engine_at(root: Path, **extra):
    settings = Settings(drafter="none", cache=False, gate_threshold=0, **extra)
    engine = build_engine(settings, backend="fake")
    engine.load()
    engine.set_workspace_folders([str(root)])
    return engine


def first_name(text: str) -> str:
    return re.match(r"\w*", text).group(0)  # type: ignore[union-attr]


def ask(engine, uri: str, prefix: str = DOCUMENT):
    request = CompletionRequest(prefix=prefix, document_id=uri, max_tokens=12, language="python")
    return engine.complete(request, CancelToken())


def test_a_member_that_exists_where_the_model_would_invent_one(tmp_path):
    root = workspace(tmp_path)
    uri = (root / "pkg" / "main.py").as_uri()
    off = engine_at(root, guide=False)
    off.document_changed(uri, DOCUMENT)
    assert first_name(ask(off, uri).text) not in MEMBERS  # (not vacuous: unguided, invented)
    engine = engine_at(root)
    engine.document_changed(uri, DOCUMENT)
    assert engine.stores.analyses.wait(uri, 60)
    found = ask(engine, uri)
    assert first_name(found.text) in MEMBERS, found.text
    assert found.stats.guide_masked >= 1 and found.stats.guide_changed >= 1
    guide = engine.stats()["guide"]
    assert guide["masked"] >= 1 and guide["analyses"] >= 1 and guide["analysis_seconds"] > 0


def test_unresolved_receivers_and_unprepared_files_are_left_alone(tmp_path):
    root = workspace(tmp_path)
    uri = (root / "pkg" / "main.py").as_uri()
    engine = engine_at(root)
    text = DOCUMENT.replace("self: Shape", "self")
    engine.document_changed(uri, text)
    assert engine.stores.analyses.wait(uri, 60)
    found = ask(engine, uri, text)
    assert first_name(found.text) not in MEMBERS and found.stats.guide_masked == 0
    late = engine_at(root)
    late.stores.analyses.delay_s = 30.0  # (an analysis that takes its time)
    late.document_changed(uri, DOCUMENT)
    found = ask(late, uri)
    assert first_name(found.text) not in MEMBERS and found.stats.guide_unprepared == 1


def test_the_analysis_waits_while_a_request_decodes(tmp_path):
    root = workspace(tmp_path)
    uri = (root / "pkg" / "main.py").as_uri()
    engine = engine_at(root)
    analyses = engine.stores.analyses
    engine.document_changed(uri, DOCUMENT)
    assert analyses.wait(uri, 60)  # (Jedi warm: the next analysis takes well under a second)
    with analyses.serving():
        engine.document_changed(uri, DOCUMENT + "\n")
        assert not analyses.wait(uri, 3)  # (stopped at its first receiver)
    assert analyses.wait(uri, 60)
    table = analyses.table(uri)
    assert table is not None and table.seconds < 3  # (the wait is not the analysis's time)
