"""The context provider: what a block is chosen from follows the workspace folders and the open
documents (a folder dropped leaves no definitions behind)."""

from __future__ import annotations

import threading
from pathlib import Path

from spec_lsp.engine.context.provider import ContextProvider
from spec_lsp.engine.context.similar_chunks import SIMILAR_DOCUMENTS
from spec_lsp.paths import document_path

MAIN = "from shapes import polygon_area\n\n\ndef report(points):\n    area = "


def choose(stage: ContextProvider, folder: Path) -> list[str]:
    stage.parse()
    block = stage.choose(
        (folder / "main.py").as_uri(), MAIN, len(MAIN), (0, 5), budget=512, count_tokens=len
    )
    return [c.reason for c in block.chunks] if block else []


def test_a_folder_dropped_leaves_no_definitions_behind(tmp_path: Path) -> None:
    (tmp_path / "shapes.py").write_text("def polygon_area(points):\n    return 0.0\n")
    stage = ContextProvider()
    stage.set_folders([str(tmp_path)], max_files=100, max_mb=1)
    stage.wait_for_workspace(10)
    assert "definition:polygon_area" in choose(stage, tmp_path)
    stage.set_folders([], max_files=100, max_mb=1)
    stage.wait_for_workspace(10)
    assert choose(stage, tmp_path) == []


def test_a_closed_document_outside_the_folders_leaves_the_index(tmp_path: Path) -> None:
    stage = ContextProvider()
    shapes = (tmp_path / "shapes.py").as_uri()
    stage.document_changed(shapes, "def polygon_area(points):\n    return 0.0\n", focus="")
    assert "definition:polygon_area" in choose(stage, tmp_path)
    stage.document_closed(shapes)
    assert choose(stage, tmp_path) == []


def test_a_closed_document_leaves_no_similar_windows_behind(tmp_path: Path) -> None:
    """The identifier windows kept for the open tabs go with the tab: 100 tabs opened, chosen
    from and closed leave none held (they were once kept in a module-wide cache of 64 texts)."""
    stage = ContextProvider()
    tabs = [(tmp_path / f"tab{i}.py").as_uri() for i in range(100)]
    for i, uri in enumerate(tabs):
        stage.document_changed(uri, f"def helper_{i}(points):\n    return scale(points)\n", "")
    here = "from shapes import scale\n\nprint(scale(read_points()))\n"
    stage.choose(tmp_path.as_uri(), here, len(here), (0, 3), budget=512, count_tokens=len)
    assert stage.memory()["similar_windows"] == SIMILAR_DOCUMENTS  # (the latest tabs')
    for uri in tabs:
        stage.document_closed(uri)
    stage.parse()
    assert stage.memory()["similar_windows"] == 0
    assert stage.memory()["symbols"]["files"] == 0


def test_choosing_never_parses_parsing_stops_when_asked_and_moves_the_block_once_done(
    tmp_path: Path,
) -> None:
    """Choosing a block never parses (a choice uses what is parsed); parsing goes a file at a
    time while idle and stops when a request comes (cancelled); once every changed file is
    parsed, `generation` moves (the block is chosen again)."""
    stage = ContextProvider()
    body = "".join(f"def filler_{j}(x):\n    return x + {j}\n" for j in range(200))
    for i in range(10):
        stage.document_changed((tmp_path / f"big{i}.py").as_uri(), body, focus="")
    shapes = (tmp_path / "shapes.py").as_uri()
    stage.document_changed(shapes, "def polygon_area(points):\n    return 0.0\n", focus="")
    block = stage.choose(
        (tmp_path / "main.py").as_uri(), MAIN, len(MAIN), (0, 5), budget=512, count_tokens=len
    )
    assert stage.memory()["symbols"]["files"] == 0 and stage.parsing
    assert block is None or "definition:polygon_area" not in [c.reason for c in block.chunks]
    asked = iter(range(100))
    stage.parse(lambda: next(asked) >= 3)  # a request after 3 files
    assert stage.memory()["symbols"]["files"] == 3 and stage.parsing
    before = stage.generation
    stage.parse()
    assert not stage.parsing and stage.memory()["symbols"]["files"] == 11
    assert stage.generation == before + 1
    assert "definition:polygon_area" in choose(stage, tmp_path)
    edited = "def polygon_area(points):\n    return 1.0\n"
    stage.document_changed(shapes, edited, focus=shapes)
    before = stage.generation
    assert not stage.parsing  # the focus document's own edits: not parsed at each pause,
    assert stage.generation == before  # and they move no block
    assert stage.index.text(document_path(shapes)) != edited
    choose(stage, tmp_path)  # the focus moved on (main.py): its edits are parsed now
    assert stage.parsing
    stage.parse()
    assert stage.index.text(document_path(shapes)) == edited
    assert stage.generation == before + 1


def test_a_finished_workspace_read_asks_for_idle_work(tmp_path: Path) -> None:
    """The workspace is read on a thread of its own: when it ends the stage says so (the
    server starts its idle work: the block is chosen while the person still reads)."""
    (tmp_path / "shapes.py").write_text("def polygon_area(points):\n    return 0.0\n")
    woken = threading.Event()
    stage = ContextProvider(changed=woken.set)
    before = stage.generation
    stage.set_folders([str(tmp_path)], max_files=100, max_mb=1)
    assert woken.wait(10)
    assert stage.generation > before
