"""Which other files' parts the model is shown: definitions of the names used near the cursor
first (as the file's imports resolve them), then the imported files' outlines, similar chunks of
open documents, recent edits; within the budget, never repeating the window, the same for the
same inputs and across a keystroke at the cursor."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from spec_lsp.engine.context.imported_names import UNUSED_FIRST
from spec_lsp.engine.context.selection import select
from spec_lsp.engine.context.similar_chunks import SIMILAR_DOCUMENTS
from spec_lsp.engine.context.source import Place
from spec_lsp.engine.context.symbols import SymbolIndex
from spec_lsp.engine.context.types import ContextChunk
from spec_lsp.engine.context.workspace import Workspace

SHAPES = '''"""Shapes."""


def polygon_area(points):
    """The area of a simple polygon (shoelace formula)."""
    total = 0.0
    for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1]):
        total += x1 * y2 - x2 * y1
    return abs(total) / 2


def perimeter(points):
    return sum(dist(a, b) for a, b in zip(points, points[1:] + points[:1]))
'''
UNITS = "SCALE = 2.5\n\n\ndef to_metres(value):\n    return value * SCALE\n"
NOISE = "def unrelated(a):\n    return a\n"
MAIN = """from shapes import polygon_area, perimeter
from units import to_metres


def report(points):
    size = len(points)
    area = polygon_area(points)
    return area, """


def words(text: str) -> int:
    return len(text.split())


def choose(
    current: str,
    text: str,
    documents: dict[str, str],
    *,
    cursor: int | None = None,
    window: tuple[int, int] = (0, 0),
    budget: int = 1000,
    recent: list[tuple[str, int, int]] | None = None,
    workspace: Workspace | None = None,
    index: SymbolIndex | None = None,
) -> list[ContextChunk]:
    if index is None:
        index = SymbolIndex()
        for path, doc in sorted(documents.items()):
            index.update(path, doc)
    place = Place(
        path=current,
        text=text,
        cursor=len(text) if cursor is None else cursor,
        window=window,
        open_documents=documents,
        index=index,
        workspace=workspace,
        recent_edits=recent or [],
    )
    return select(place, budget=budget, count_tokens=words)


def tabs(**extra: str) -> dict[str, str]:
    return {"/p/main.py": MAIN, "/p/shapes.py": SHAPES, "/p/units.py": UNITS, **extra}


def test_names_imported_and_unused_come_first_then_those_used_near_the_cursor() -> None:
    chunks = choose("/p/main.py", MAIN, tabs(**{"/p/noise.py": NOISE}))
    reasons = [c.reason for c in chunks]
    # imported, used nowhere yet: about to be (in import order), each beside its module's
    # outline (the rest of its API: polygon_area's head, used above the cursor, among it)
    assert reasons[:4] == [
        "definition:perimeter",
        "definition:to_metres",
        "import:shapes",
        "import:units",
    ]
    assert chunks[2].path == "shapes.py" and "def polygon_area(points):" in chunks[2].text
    assert all(c.path != "main.py" for c in chunks)
    assert all("unrelated" not in c.text for c in chunks)
    assert all(c.tokens == words(c.text) > 0 for c in chunks)  # (stats show each one's)
    # with everything imported in use, the name used nearest the cursor comes first
    in_use = MAIN.replace("size = len(points)", "size = perimeter(points), to_metres(1)")
    chunks = choose("/p/main.py", in_use, tabs(**{"/p/main.py": in_use}))
    used = chunks[0]
    assert (used.path, used.reason) == ("shapes.py", "definition:polygon_area")
    assert used.text.startswith("def polygon_area(points):") and "abs(total)" in used.text
    assert (used.start_line, used.end_line) == (3, 9)


def test_only_the_first_few_unused_imports_come_before_the_names_in_use() -> None:
    """A file importing much it never uses (re-exports, leftovers) is no sign of intent: the
    names used near the cursor keep their place after the first few."""
    many = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n\n" for i in range(8))
    names = ", ".join(f"helper_{i}" for i in range(8))
    main = f"from helpers import {names}\n" + MAIN
    documents = tabs(**{"/p/main.py": main, "/p/helpers.py": many})
    reasons = [c.reason for c in choose("/p/main.py", main, documents, budget=10_000)]
    first = [f"definition:helper_{i}" for i in range(UNUSED_FIRST)]
    assert reasons[: UNUSED_FIRST + 1] == [*first, "import:helpers"]
    assert reasons.index("definition:polygon_area") == UNUSED_FIRST + 1
    assert "definition:helper_7" not in reasons[: UNUSED_FIRST + 2]  # (its head: the outline)


def test_the_budget_holds_at_every_size() -> None:
    documents = tabs(**{"/p/noise.py": NOISE})
    for budget in range(0, 120, 3):
        chunks = choose("/p/main.py", MAIN, documents, budget=budget)
        assert sum(words(c.text) for c in chunks) <= budget
    assert choose("/p/main.py", MAIN, documents, budget=0) == []
    small = choose("/p/main.py", MAIN, documents, budget=12)
    assert small and small[0].reason == "definition:perimeter"  # its head, if not all
    assert small[0].text == "def perimeter(points):"


def test_the_current_file_is_never_shown_as_context() -> None:
    """The prompt shows its text (the window, the file prefix); a copy on disk or an older
    version may hold what is being written, and its edits would move the block each key."""
    long_main = MAIN.replace("def report", "# padding\n" * 80 + "def report")
    recent = [("/p/main.py", 2, 4), ("/p/main.py", 85, 86), ("/p/units.py", 3, 5)]
    here = long_main.count("\n")
    documents = tabs(**{"/p/main.py": long_main})
    chunks = choose("/p/main.py", long_main, documents, window=(60, here + 1), recent=recent)
    assert chunks and all(c.path != "main.py" for c in chunks)
    # (units.py's edit is in to_metres, shown already)
    assert not [c for c in chunks if c.reason == "recent_edit"]


def test_a_name_imported_and_used_nowhere_yet_far_above_the_cursor() -> None:
    filler = "def step(points):\n    return perimeter(points)\n\n"  # far from the cursor
    filler += "".join(f"def step_{i}(points):\n    return {i}\n\n" for i in range(20))
    main = MAIN.replace("def report", filler + "def report")
    reasons = [c.reason for c in choose("/p/main.py", main, tabs(**{"/p/main.py": main}))]
    assert "definition:to_metres" in reasons  # its import is 60 lines above: about to be used
    assert "definition:perimeter" not in reasons  # used already, not near the cursor
    assert "import:shapes" in reasons  # (perimeter's head is in its outline)
    # the same, imported in parentheses over several lines
    spread = main.replace(
        "from shapes import polygon_area, perimeter",
        "from shapes import (\n    polygon_area,\n    perimeter,\n    )",
    )
    spread = spread.replace("from units import to_metres", "from units import (\n    to_metres,\n)")
    reasons = [c.reason for c in choose("/p/main.py", spread, tabs(**{"/p/main.py": spread}))]
    assert "definition:to_metres" in reasons and "definition:perimeter" not in reasons


def test_overlapping_chunks_are_shown_once() -> None:
    recent = [("/p/shapes.py", 5, 6)]  # inside polygon_area, shown already as its definition
    chunks = choose("/p/main.py", MAIN, tabs(), recent=recent)
    spans: dict[str, list[tuple[int, int]]] = {}
    for c in chunks:
        for s, e in spans.get(c.path, []):
            assert c.end_line <= s or e <= c.start_line or c.reason.startswith("import:"), chunks
        spans.setdefault(c.path, []).append((c.start_line, c.end_line))
    assert not any(c.reason == "recent_edit" and c.path == "shapes.py" for c in chunks)


def test_the_same_inputs_give_the_same_block_whatever_the_order_of_the_documents() -> None:
    documents = tabs(**{f"/p/n{i}.py": NOISE.replace("unrelated", f"f{i}") for i in range(8)})
    documents |= {f"/p/twin{i}.py": MAIN.replace("report", f"twin{i}") for i in range(4)}
    first = choose("/p/main.py", MAIN, documents)
    items = list(documents.items())
    for seed in range(5):
        random.Random(seed).shuffle(items)
        index = SymbolIndex()
        for path, text in items:
            index.update(path, text)
        assert choose("/p/main.py", MAIN, dict(items), index=index) == first


def test_typing_a_character_at_the_cursor_keeps_the_block() -> None:
    text = MAIN + "perimete"
    before = choose("/p/main.py", text, tabs())
    for typed in ("r", "x", "_"):
        assert choose("/p/main.py", text + typed, tabs()) == before, typed
    # (the name being typed is no use yet: `perimeter` keeps its place as an unused import)
    assert before == choose("/p/main.py", MAIN, tabs())
    assert [c.reason for c in before][0] == "definition:perimeter"
    assert choose("/p/main.py", MAIN + "perimeter(", tabs()) != before  # typed: it counts


def test_a_long_class_is_shown_as_its_outline() -> None:
    methods = "".join(
        f"    def method_{i}(self, value):\n"
        + "".join(f"        value = value + {j}\n" for j in range(6))
        + "        return value\n\n"
        for i in range(12)
    )
    big = '@dataclass\nclass Engine:\n    """Runs."""\n\n    name: str = "x"\n\n' + methods
    main = "from engine import Engine\n\n\ndef run():\n    e = Engine()\n    return e."
    chunks = choose("/p/main.py", main, {"/p/main.py": main, "/p/engine.py": big})
    outline = chunks[0]
    assert outline.reason == "definition:Engine"
    assert outline.text.startswith('@dataclass\nclass Engine:\n    """Runs."""')
    assert 'name: str = "x"' in outline.text
    assert "    def method_0(self, value):\n        ..." in outline.text
    assert "value = value + 3" not in outline.text
    assert (outline.start_line, outline.end_line) == (0, big.rstrip().count("\n") + 1)


def test_the_import_says_which_of_several_definitions() -> None:
    others = {
        f"/p/pkg{i}/shapes.py": SHAPES.replace("abs(total)", f"total * {i}") for i in range(6)
    }
    main = "from .shapes import polygon_area\n\n\ndef f(points):\n    return polygon_area(points)\n"
    documents = {"/p/pkg3/main.py": main, **others}
    chunks = choose("/p/pkg3/main.py", main, documents)
    assert chunks[0].reason == "definition:polygon_area"
    assert "total * 3" in chunks[0].text and chunks[0].path == "shapes.py"
    # no import to say which: a name defined in more than three places is passed over
    bare = "def f(points):\n    return polygon_area(points)\n"
    assert not any(
        c.reason.startswith("definition:")
        for c in choose("/q/main.py", bare, {"/q/main.py": bare, **others})
    )


def test_a_module_imported_whole_resolves_its_attributes() -> None:
    main = "import pkg.geometry as geo\n\n\ndef f(points):\n    return geo.polygon_area(points)\n"
    documents = {
        "/p/main.py": main,
        "/p/pkg/geometry.py": SHAPES,
        "/p/other/a.py": "class A:\n    def polygon_area(self):\n        return 0\n",
    }
    chunks = choose("/p/main.py", main, documents)
    assert (chunks[0].path, chunks[0].reason) == ("pkg/geometry.py", "definition:polygon_area")


def test_names_the_file_binds_itself_are_not_looked_up() -> None:
    main = "def f(polygon_area):\n    size = polygon_area * 2\n    return size + "
    chunks = choose("/p/main.py", main, {"/p/main.py": main, "/p/shapes.py": SHAPES})
    assert not any(c.reason.startswith("definition:") for c in chunks)


def test_a_name_imported_from_an_unresolved_module_is_not_an_unrelated_files_class() -> None:
    """`from requests import Session`: requests resolves to no known file, and the workspace's
    own class Session (in other.py) is no definition of it: nothing, not the wrong class; names
    bound on self or by a resolved import are not looked up either."""
    main = (
        "import errno\nfrom requests import Session\n\n\nclass Client:\n"
        "    def __init__(self):\n        (self.host, self.port) = ('h', 80)\n\n"
        "    def connect(self):\n        s = Session()\n        return (errno.EIO, self.port, "
    )
    others = (
        "errno = None\n\n\nclass Session:\n    pass\n\n\n"
        "class Url:\n    @property\n    def port(self):\n        return 1\n"
    )
    chunks = choose("/p/main.py", main, {"/p/main.py": main, "/p/other.py": others})
    assert [c.reason for c in chunks if c.reason.startswith("definition:")] == []
    # a vendored copy of the module is one (test_an_import_that_resolves_to_no_file_falls_...)
    vendored = {"/p/main.py": main, "/p/other.py": others, "/p/vendor/requests/sessions.py": others}
    chunks = choose("/p/main.py", main, vendored)
    found = [(c.path, c.reason) for c in chunks if c.reason.startswith("definition:")]
    assert found == [("vendor/requests/sessions.py", "definition:Session")]


def test_an_import_that_resolves_to_no_file_falls_back_to_the_name() -> None:
    """A package whose folder is not named as its import path (installed, vendored, a `src/`
    mapping): its names imported and not used yet are still found by name, open documents
    first, passed over when defined in too many places."""
    main = (
        "from geometry.plane import polygon_area\nfrom units import to_metres\n\n\ndef f(p):\n    "
    )
    documents = {"/p/main.py": main, "/vendor/plane_impl.py": SHAPES, "/p/units.py": UNITS}
    reasons = [c.reason for c in choose("/p/main.py", main, documents)]
    assert reasons[:2] == ["definition:polygon_area", "definition:to_metres"]
    assert choose("/p/main.py", main, documents)[0].path == "plane_impl.py"
    # defined in more places than the ambiguity bound: passed over
    many = {f"/lib{i}/shapes.py": SHAPES for i in range(5)}
    reasons = [c.reason for c in choose("/p/main.py", main, {**documents, **many})]
    assert "definition:polygon_area" not in reasons and "definition:to_metres" in reasons
    # a standard module's names (defined nowhere known) take no place among the first
    stdlib = "from typing import Any, cast, overload, Final\n" + main
    reasons = [c.reason for c in choose("/p/main.py", stdlib, {**documents, "/p/main.py": stdlib})]
    assert reasons[:2] == ["definition:polygon_area", "definition:to_metres"]


def test_a_name_used_only_as_an_attribute_is_a_members_unless_it_is_a_builtin_types() -> None:
    main = "def f(users, key):\n    found = users.get(key)\n    return users.lookup_user(key)\n"
    store = "class Store:\n    def get(self, key):\n        return 1\n\n"
    store += "    def lookup_user(self, key):\n        return 2\n"
    top = "def lookup_user(key):\n    return 3\n"  # not a member: not `users.lookup_user`
    documents = {"/p/main.py": main, "/p/store.py": store, "/p/top.py": top}
    chunks = choose("/p/main.py", main, documents)
    definitions = [(c.path, c.text.split("\n")[0]) for c in chunks if c.reason.startswith("def")]
    assert definitions == [("store.py", "    def lookup_user(self, key):")]


def test_a_similar_chunk_of_an_open_document() -> None:
    main = "def handle(request, session):\n    user = session.lookup(request.user_id)\n    "
    similar = "def other(request, session):\n    token = session.lookup(request.token_id)\n"
    documents = {"/p/main.py": main, "/p/views.py": similar, "/p/far.py": "X = 1\nY = 2\n"}
    chunks = choose("/p/main.py", main, documents)
    assert [(c.path, c.reason) for c in chunks] == [("views.py", "similar")]
    assert chunks[0].score > 0.1


def test_recent_edits_newest_first() -> None:
    a = "\n".join(f"a{i} = {i}" for i in range(100))
    b = "\n".join(f"b{i} = {i}" for i in range(100))
    main = "x = 1\n"
    documents = {"/p/main.py": main, "/p/a.py": a, "/p/b.py": b}
    recent = [("/p/a.py", 50, 51), ("/p/b.py", 10, 12)]
    chunks = choose("/p/main.py", main, documents, recent=recent)
    assert [(c.path, c.start_line, c.end_line, c.reason) for c in chunks] == [
        ("b.py", 6, 16, "recent_edit"),
        ("a.py", 46, 55, "recent_edit"),
    ]
    assert chunks[0].text.startswith("b6 = 6\n")


def test_files_only_on_disk_in_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "geometry").mkdir()
    (tmp_path / "geometry" / "shapes.py").write_text(
        SHAPES + "\n\ndef centroid(points):\n    ...\n"
    )
    (tmp_path / "main.py").write_text(MAIN)
    workspace = Workspace()
    workspace.set_folders([str(tmp_path)])
    index = SymbolIndex()
    for path, text in workspace.files().items():
        index.update(path, text)
    current = str(tmp_path / "main.py")
    main = MAIN.replace("from shapes", "from geometry.shapes")
    chunks = choose(current, main, {current: main}, workspace=workspace, index=index)
    shown = [(c.path, c.reason) for c in chunks]
    assert shown[:2] == [  # (units.py is nowhere)
        ("geometry/shapes.py", "definition:perimeter"),
        ("geometry/shapes.py", "import:geometry.shapes"),
    ]
    outline = chunks[1].text
    assert "def polygon_area(points):" in outline and "def centroid(points):" in outline
    assert "def perimeter" not in outline  # shown already


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("/p/app.ts", "import { polygonArea } from './geo';\n\nconst a = polygonArea(pts);\n"),
        ("/p/app.js", "const geo = require('./geo');\n\nconst a = geo.polygonArea(pts);\n"),
        # (a TypeScript source imported as its compiled file, as ES modules in TS are written)
        ("/p/app.ts", "import { polygonArea } from './geo.js';\n\nconst a = polygonArea(pts);\n"),
    ],
)
def test_javascript_imports_resolve_relative_modules(path: str, text: str) -> None:
    geo = "export function polygonArea(points) {\n  return 0;\n}\n"
    decoy = "export function polygonArea(p) {\n  return 1;\n}\n"
    documents = {path: text, "/p/geo.ts": geo, **{f"/x{i}/geo.ts": decoy for i in range(5)}}
    chunks = choose(path, text, documents)
    assert (chunks[0].path, chunks[0].reason) == ("geo.ts", "definition:polygonArea")
    assert "return 0" in chunks[0].text


def test_a_file_in_a_language_without_a_grammar_still_gets_similar_chunks() -> None:
    main = "alpha beta gamma delta\nepsilon zeta eta theta\n"
    documents = {"/p/notes.txt": main, "/p/other.txt": "alpha beta gamma delta\niota\n"}
    chunks = choose("/p/notes.txt", main, documents)
    assert [(c.path, c.reason) for c in chunks] == [("other.txt", "similar")]


def test_an_imported_files_outline_shows_its_classes_methods() -> None:
    models = (
        "class User:\n    def __init__(self, name):\n        self.name = name\n\n"
        "    def greet(self, other):\n        return f'hi {other}'\n\n\n"
        "def make_user(name):\n    return User(name)\n"
    )
    main = "import models\n\n\ndef f():\n    return "
    chunks = choose("/p/main.py", main, {"/p/main.py": main, "/p/models.py": models})
    assert [(c.path, c.reason) for c in chunks] == [("models.py", "import:models")]
    assert chunks[0].text == (
        "class User:\n    def __init__(self, name):\n        ...\n"
        "    def greet(self, other):\n        ...\n"
        "def make_user(name):\n    ..."
    )


def test_similar_chunks_come_from_the_latest_tabs_only() -> None:
    """Of many open tabs, the SIMILAR_DOCUMENTS latest edited or opened are searched (the
    mapping's order, newest last): a like chunk in an older tab is not shown until it is
    touched again."""
    main = "def handler(request, session):\n    user = session.lookup(request.token_id)\n    "
    similar = "def other(request, session):\n    token = session.lookup(request.token_id)\n"
    older = {"/p/views.py": similar}
    newer = {f"/p/n{i}.py": f"VALUE_{i} = {i}\n" for i in range(SIMILAR_DOCUMENTS)}
    documents = {"/p/main.py": main, **older, **newer}
    assert choose("/p/main.py", main, documents) == []
    touched = {"/p/main.py": main, **newer, **older}
    assert [(c.path, c.reason) for c in choose("/p/main.py", main, touched)] == [
        ("views.py", "similar")
    ]


def test_a_file_outside_the_workspace_is_named_from_the_folder_it_shares_with_the_current() -> None:
    """`re/__init__.py`, not a bare `__init__.py` the model cannot tell from any other."""
    regex = "def compile(pattern, flags=0):\n    return _compile(pattern, flags)\n"
    main = "import re\n\n\ndef parse(text):\n    return "
    documents = {"/lib/json/decoder.py": main, "/lib/re/__init__.py": regex}
    chunks = choose("/lib/json/decoder.py", main, documents)
    assert [c.path for c in chunks] == ["re/__init__.py"]
    # nothing shared but the root: its name
    documents = {"/a/main.py": main, "/b/re/__init__.py": regex}
    assert [c.path for c in choose("/a/main.py", main, documents)] == ["__init__.py"]
