"""The context stage: what a block is chosen from follows the workspace folders and the open
documents (a folder dropped leaves no definitions behind)."""

from __future__ import annotations

from pathlib import Path

from spec_lsp.engine.context.stage import ContextStage

MAIN = "from shapes import polygon_area\n\n\ndef report(points):\n    area = "


def choose(stage: ContextStage, folder: Path) -> list[str]:
    block = stage.choose(
        (folder / "main.py").as_uri(), MAIN, len(MAIN), (0, 5), budget=512, count_tokens=len
    )
    return [c.reason for c in block.chunks] if block else []


def test_a_folder_dropped_leaves_no_definitions_behind(tmp_path: Path) -> None:
    (tmp_path / "shapes.py").write_text("def polygon_area(points):\n    return 0.0\n")
    stage = ContextStage()
    stage.set_folders([str(tmp_path)], max_files=100, max_mb=1)
    stage.wait_for_workspace(10)
    assert "definition:polygon_area" in choose(stage, tmp_path)
    stage.set_folders([], max_files=100, max_mb=1)
    stage.wait_for_workspace(10)
    assert choose(stage, tmp_path) == []


def test_a_closed_document_outside_the_folders_leaves_the_index(tmp_path: Path) -> None:
    stage = ContextStage()
    shapes = (tmp_path / "shapes.py").as_uri()
    stage.document_changed(shapes, "def polygon_area(points):\n    return 0.0\n", focus="")
    assert "definition:polygon_area" in choose(stage, tmp_path)
    stage.document_closed(shapes)
    assert choose(stage, tmp_path) == []
