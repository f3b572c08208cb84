"""The architecture's boundaries, checked on the source: a violation fails this test."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "spec_lsp"


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def violations(root: Path) -> list[str]:
    problems = []
    for path in sorted(p for p in root.rglob("*.py") if "samples" not in p.parts):
        rel = path.relative_to(root).as_posix()
        names = imports(path)
        if (
            any(n == "llama_cpp" or n.startswith("llama_cpp.") for n in names)
            and rel != "engine/backends/llama.py"
        ):
            problems.append(f"{rel} imports llama_cpp (only engine/backends/llama.py may)")
        if rel.startswith(("engine/", "prompts/")) and any(
            n.split(".")[0] in ("pygls", "lsprotocol") for n in names
        ):
            problems.append(f"{rel} imports pygls/lsprotocol (the engine and prompts must not)")
        if rel.startswith("server/") and any(
            n.startswith("spec_lsp.engine.backends") for n in names
        ):
            problems.append(
                f"{rel} imports an engine backend (the server uses spec_lsp.engine only)"
            )
    return problems


def test_the_project_respects_its_boundaries():
    assert violations(ROOT) == []


@pytest.mark.parametrize(
    ("rel", "source"),
    [
        ("server/bad.py", "import llama_cpp\n"),
        ("server/bad.py", "from spec_lsp.engine.backends.llama import LlamaModel\n"),
        ("engine/bad.py", "from pygls.lsp.server import LanguageServer\n"),
        ("prompts/bad.py", "import lsprotocol.types\n"),
        ("engine/drafting2.py", "from llama_cpp import Llama\n"),
    ],
)
def test_the_checker_catches_violations(tmp_path, rel, source):
    (tmp_path / rel).parent.mkdir(parents=True)
    (tmp_path / rel).write_text(source)
    assert len(violations(tmp_path)) == 1
