"""Three boundaries the import graph does not show, checked on the source:

1. No module of the package or of the benchmarks imports another module's underscore name
   (`from m import _helper`, or `m._helper` where `m` is a module of ours): a name with a
   leading underscore is its module's own business, and another module reaching for it breaks
   when that module changes. What another module needs is given a public name.
2. The installed package (`spec_lsp`, the benchmarks left out) imports nothing from the
   benchmarks: they are not installed with it (`spec-lsp bench` runs them in a child process
   from a checkout).
3. The benchmarks reach the engine through its surface only: the facade (`spec_lsp.engine`:
   build_engine, Engine's load, complete, stats, models, prompt_builder, cost_profile,
   file_prefix, context) and the parts named in `spec_lsp.engine.toolkit`, never an engine's
   stages or stores (`engine.parts.local`, `engine.stores`, `engine.stage`).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.test_layering import imports

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = "bench"  # the benchmarks' package: in the repository, not installed
SURFACE = ("spec_lsp.engine", "spec_lsp.engine.toolkit")  # what the benchmarks import of it
INSIDES = ("local", "stores", "stage")  # an engine's insides (its stages, its stores)


def folder(root: Path, dotted: str) -> Path:
    return root.joinpath(*dotted.split("."))


def sources(root: Path) -> Iterator[tuple[Path, str]]:
    """The package's and the benchmarks' files, with their module names."""
    seen: set[Path] = set()
    for top in (folder(root, "spec_lsp"), folder(root, BENCHMARKS)):
        for path in sorted(top.rglob("*.py")) if top.is_dir() else []:
            if "samples" in path.parts or path in seen:
                continue
            seen.add(path)
            parts = path.relative_to(root).with_suffix("").parts
            yield path, ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(root: Path, dotted: str) -> bool:
    where = folder(root, dotted)
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(root: Path) -> list[str]:
    """`file:line: what` for each underscore name one module takes from another."""
    found = []
    for path, name in sources(root):
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), filename=str(path))
        modules: dict[str, str] = {}  # local name -> a module of ours it stands for
        rel = path.relative_to(root)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in node.names:
                    if private(alias.name):
                        found.append(f"{rel}:{node.lineno}: from {base} import {alias.name}")
                    elif is_module(root, f"{base}.{alias.name}"):
                        modules[alias.asname or alias.name] = f"{base}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and is_module(root, alias.name):
                        modules[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and private(node.attr)
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
            ):
                found.append(f"{rel}:{node.lineno}: {modules[node.value.id]}.{node.attr}")
    return found


def bench_imports(root: Path) -> list[str]:
    """The installed package's files that import from the benchmarks."""
    benchmarks = folder(root, BENCHMARKS)
    found = []
    for path in sorted(folder(root, "spec_lsp").rglob("*.py")):
        if benchmarks in path.parents or "samples" in path.parts:
            continue
        rel = path.relative_to(root / "spec_lsp").as_posix()
        names = imports(path, rel)
        if any(n == BENCHMARKS or n.startswith(BENCHMARKS + ".") for n in names):
            found.append(rel)
    return found


def reaches_inside(root: Path) -> list[str]:
    """`file:line: what` for each way a benchmark takes the engine other than its surface."""
    found = []
    benchmarks = folder(root, BENCHMARKS)
    for path in sorted(benchmarks.rglob("*.py")):
        rel = path.relative_to(root)
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                module = node.module
                engine = module == "spec_lsp.engine" or module.startswith("spec_lsp.engine.")
                if engine and module not in SURFACE:
                    found.append(f"{rel}:{node.lineno}: from {module}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("spec_lsp.engine.") and alias.name not in SURFACE:
                        found.append(f"{rel}:{node.lineno}: import {alias.name}")
            elif isinstance(node, ast.Attribute) and node.attr in INSIDES:
                found.append(f"{rel}:{node.lineno}: .{node.attr}")
    return found


def test_no_module_takes_another_modules_underscore_name():
    assert len(list(sources(REPO))) > 100  # (not vacuous)
    assert private_uses(REPO) == []


def test_the_installed_package_imports_nothing_from_the_benchmarks():
    assert folder(REPO, BENCHMARKS).is_dir()
    assert bench_imports(REPO) == []


def test_the_benchmarks_reach_the_engine_through_its_surface():
    assert reaches_inside(REPO) == []


def test_the_commands_load_no_benchmark():
    """The transitive check: the CLI and the server, once imported, hold no module of the
    benchmarks."""
    script = (
        "import sys\n"
        "import spec_lsp.cli, spec_lsp.commands, spec_lsp.doctor, spec_lsp.server.app\n"
        f"bad = [m for m in sys.modules if m == {BENCHMARKS!r} or m.startswith({BENCHMARKS!r} + '.')]\n"
        "assert not bad, bad\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for package in {p.parent for p in root.rglob("*.py")}:
        (package / "__init__.py").touch()
    return root


@pytest.mark.parametrize(
    "source",
    [
        "from spec_lsp.engine.loop import _draft\n",
        "from .loop import _draft\n",
        "from spec_lsp.engine import loop\nloop._draft()\n",
        "import spec_lsp.engine.loop as loop\nx = loop._shadow\n",
    ],
)
def test_the_checker_sees_an_underscore_name_taken(tmp_path: Path, source: str):
    root = write(tmp_path, {"spec_lsp/engine/loop.py": "", "spec_lsp/engine/user.py": source})
    assert len(private_uses(root)) == 1


@pytest.mark.parametrize(
    "source",
    [
        "from spec_lsp.engine.loop import draft, __version__\n",
        "from spec_lsp.engine import loop\nloop.draft()\nself._x = 1\n",
        "import numpy as np\nnp._NoValue\n",  # (not a module of ours)
    ],
)
def test_the_checker_allows_public_names(tmp_path: Path, source: str):
    root = write(tmp_path, {"spec_lsp/engine/loop.py": "", "spec_lsp/engine/user.py": source})
    assert private_uses(root) == []


def test_the_checker_sees_the_package_import_a_benchmark(tmp_path: Path):
    bench = BENCHMARKS.replace(".", "/")
    root = write(
        tmp_path,
        {
            f"{bench}/places.py": "from spec_lsp.engine import loop\n",  # (allowed: down)
            "spec_lsp/engine/loop.py": "",
            "spec_lsp/cli.py": f"import importlib\nimportlib.import_module('{BENCHMARKS}.places')\n",
        },
    )
    assert bench_imports(root) == ["cli.py"]


@pytest.mark.parametrize(
    "source",
    [
        "from spec_lsp.engine.decode.speculative import generate\n",
        "import spec_lsp.engine.startup.loading\n",
        "def f(engine):\n    return engine.parts.local.loaded\n",
        "def f(engine):\n    return engine.stores.states\n",
    ],
)
def test_the_checker_sees_a_benchmark_reach_inside(tmp_path: Path, source: str):
    bench = BENCHMARKS.replace(".", "/")
    root = write(tmp_path, {f"{bench}/places.py": source})
    assert len(reaches_inside(root)) == 1


def test_the_checker_allows_the_surface(tmp_path: Path):
    bench = BENCHMARKS.replace(".", "/")
    source = (
        "from spec_lsp.engine import build_engine\n"
        "from spec_lsp.engine.toolkit import generate\n"
        "def f(engine):\n    return engine.parts.models.target, engine.parts.cost_profile\n"
    )
    root = write(tmp_path, {f"{bench}/places.py": source})
    assert reaches_inside(root) == []
