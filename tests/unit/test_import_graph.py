"""The import graph of spec_lsp: no cycle anywhere, and no arrow from a lower layer up.

Every import counts, wherever it stands (inside functions, under TYPE_CHECKING): a cycle hidden
in a lazy import is still a circle a reader has to untangle. `from a import b` is an arrow to
`a.b` when that is a module, else to `a`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.unit.test_layering import statements

ROOT = Path(__file__).resolve().parents[2] / "spec_lsp"

# Top-level layers, lowest first: a module may import its own layer's modules and lower ones.
TOP_LAYERS = [
    {
        "spec_lsp",
        "spec_lsp.config",
        "spec_lsp.gguf_meta",
        "spec_lsp.textdiff",
        "spec_lsp.syntax",
        "spec_lsp.cache_dirs",
        "spec_lsp.paths",
    },
    {"spec_lsp.prompts", "spec_lsp.models"},  # (models names a file's FIM template)
    {"spec_lsp.engine"},
    {"spec_lsp.server", "spec_lsp.doctor"},
    {"spec_lsp.commands", "spec_lsp.benchmarks"},  # (what `spec-lsp models|bench|...` run)
    {"spec_lsp.cli"},
]
# Inside the engine, lowest first (the request path reads upwards through them).
ENGINE_LAYERS = [
    {"types"},
    {"backends", "sampling"},
    {"policy"},
    {"drafters"},
    {"guide"},  # names that exist: the analyses, their tables, the monitor the loop consults
    {"decode", "cache", "context"},
    # what completing a request is made of: finishing its text (what is shown), loading the
    # models (the crash probe, the cost calibration), its statistics, the answer, the stage
    # interface, the stores every stage shares (what a stage keeps of its own is its own)
    {"finishing", "startup", "stats", "answer", "stage", "stores"},
    # the stages that complete a request: in process (and its file prefix), and the remote
    # engine in one folder (client, stream, prompt, tokens, health, connect, its stage)
    {"local", "remote"},
    {"engine", "parts"},  # (parts: the in-process stage's parts, for tools)
    {"toolkit"},  # the parts tools (the benchmarks) build with, named in one place
    {"__init__"},
]


def module_name(root: Path, path: Path) -> str:
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of this package it imports."""
    files = {module_name(root, p): p for p in root.rglob("*.py") if "samples" not in p.parts}
    edges: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        tree = ast.parse(path.read_text(), filename=str(path))
        for base, names in statements(tree, package.split(".")):
            subs = [f"{base}.{n}" for n in names]  # a submodule where one is named, else base
            found.update([s if s in files else base for s in subs] or [base])
        edges[name] = {m for m in found if m in files and m != name}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for succ in sorted(edges.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _layer(name: str, root: str) -> tuple[int, int] | None:
    """(top layer, engine layer) of a module; None for a module no layer names."""
    parts = name.split(".")
    top = next((i for i, group in enumerate(TOP_LAYERS) if ".".join(parts[:2]) in group), None)
    if top is None:
        top = next((i for i, group in enumerate(TOP_LAYERS) if name in group), None)
    if top is None:
        return None
    inner = 0
    if parts[:2] == [root, "engine"]:
        key = parts[2] if len(parts) > 2 else "__init__"
        inner = next((i for i, group in enumerate(ENGINE_LAYERS) if key in group), -1)
        if inner < 0:
            return None
    return top, inner


def upward(edges: dict[str, set[str]], root: str = "spec_lsp") -> list[str]:
    problems = []
    for name, targets in sorted(edges.items()):
        here = _layer(name, root)
        if here is None:
            problems.append(f"{name} is in no layer: name it in this test's layers")
            continue
        for target in sorted(targets):
            there = _layer(target, root)
            if there is not None and there > here and not _same_package(name, target):
                problems.append(f"{name} imports {target}, a layer above it")
    return problems


def _same_package(a: str, b: str) -> bool:
    """Inside one engine sub-package (or one top-level package outside the engine), order is
    the cycle check's business, not the layers'."""
    pa, pb = a.split("."), b.split(".")
    if pa[:2] == pb[:2] == ["spec_lsp", "engine"]:
        return len(pa) > 3 and len(pb) > 3 and pa[2] == pb[2]
    return pa[:2] == pb[:2] and len(pa) > 2 and len(pb) > 2


def test_no_module_of_spec_lsp_is_part_of_an_import_cycle():
    edges = graph(ROOT)
    assert {"spec_lsp.engine.engine", "spec_lsp.server.app"} <= set(edges)  # not vacuous
    assert cycles(edges) == []


def test_no_import_goes_from_a_lower_layer_up():
    assert upward(graph(ROOT)) == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "spec_lsp"
    for rel, source in {"__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(source)
    return root


@pytest.mark.parametrize(
    "files",
    [
        {
            "server/a.py": "from spec_lsp.server import b\n",
            "server/b.py": "import spec_lsp.server.a\n",
        },
        {
            "server/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from spec_lsp.server.b import X\n",
            "server/b.py": "from spec_lsp.server.a import Y\n",
        },
        {
            "engine/x.py": "def f():\n    from . import y\n",
            "engine/y.py": "from .z import g\n",
            "engine/z.py": "from spec_lsp.engine.x import f\n",
        },
    ],
)
def test_the_checker_finds_a_cycle(tmp_path, files):
    assert len(cycles(graph(_tree(tmp_path, files)))) == 1


@pytest.mark.parametrize(
    ("rel", "source"),
    [
        ("engine/types.py", "from spec_lsp.engine.backends.base import ModelBackend\n"),
        ("engine/policy/adaptive.py", "from spec_lsp.engine.drafters.base import Drafter\n"),
        ("engine/drafters/auto.py", "from spec_lsp.engine.decode import speculative\n"),
        ("engine/engine.py", "from spec_lsp.server import app\n"),
        ("prompts/fim.py", "from spec_lsp.engine import types\n"),
        ("engine/startup/loading.py", "from spec_lsp.server import app\n"),
        ("engine/newthing.py", "import os\n"),
    ],
)
def test_the_checker_finds_an_arrow_up(tmp_path, rel, source):
    files = {
        "engine/__init__.py": "",
        "engine/types.py": "",
        "engine/engine.py": "",
        "engine/startup/loading.py": "",
        "engine/backends/__init__.py": "",
        "engine/backends/base.py": "",
        "engine/policy/__init__.py": "",
        "engine/policy/adaptive.py": "",
        "engine/drafters/__init__.py": "",
        "engine/drafters/base.py": "",
        "engine/drafters/auto.py": "",
        "engine/decode/__init__.py": "",
        "engine/decode/speculative.py": "",
        "prompts/__init__.py": "",
        "prompts/fim.py": "",
        "server/__init__.py": "",
        "server/app.py": "",
    }
    files[rel] = source
    assert len(upward(graph(_tree(tmp_path, files)))) == 1


def test_the_checker_allows_arrows_down(tmp_path):
    files = {
        "engine/__init__.py": "from spec_lsp.engine import engine\n",
        "engine/engine.py": "from spec_lsp.engine.decode.speculative import generate\n",
        "engine/decode/__init__.py": "",
        "engine/decode/speculative.py": "from spec_lsp.engine.drafters.base import Drafter\n",
        "engine/drafters/__init__.py": "",
        "engine/drafters/base.py": "from spec_lsp.engine import types\n",
        "engine/drafters/auto.py": "from .base import Drafter\nfrom ..policy import adaptive\n",
        "engine/policy/__init__.py": "",
        "engine/policy/adaptive.py": "from spec_lsp.engine.types import X\n",
        "engine/types.py": "",
        "server/__init__.py": "",
        "server/app.py": "from spec_lsp.engine import Engine\nfrom spec_lsp import config\n",
        "config.py": "",
    }
    edges = graph(_tree(tmp_path, files))
    assert upward(edges) == [] and cycles(edges) == []
