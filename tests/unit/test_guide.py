"""Names that exist: the trigger points, the vocabulary index, Jedi's prepared answers and the
monitor's masks, on small vocabularies and a workspace written here."""

from __future__ import annotations

import time

import numpy as np
import pytest

from spec_lsp.engine.guide import scopes, trigger
from spec_lsp.engine.guide.monitor import Monitor, open_span
from spec_lsp.engine.guide.python.analysis import Analyser
from spec_lsp.engine.guide.table import Hooks, Members, Table
from spec_lsp.engine.guide.vocabulary import NameTokens

VOCAB = [
    b"get", b"_w", b"adl", b"_application", b"_application(", b".", b".get", b"(", b" ",
    b"\n", b"decide", b"borrow", b"_or", b"_take", b"x", b"self", b"<eos>", b".borrow",
    b" get", b"\xe2", b"_", b" (", b"  ",
]  # fmt: skip
NAMES = frozenset({"get_wadl_application", "borrow_or_take"})


def kept(monitor: Monitor, out: list[int]) -> list[bytes]:
    row = monitor.guide(np.zeros(len(VOCAB), dtype=np.float32), out)
    return [VOCAB[i] for i in np.flatnonzero(np.isfinite(row) & (row == 0))]


def monitor(text: str, *, complete: bool = True, key: str = "r", bias: float = 0.0) -> Monitor:
    table = Table(1, {((), key): Members(NAMES, complete)})
    return Monitor(NameTokens(VOCAB), table, text=text, scope=(), bias=bias)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("    y = self._browser.", ("member", "self._browser", "", "", False)),
        ("    y = r.ge", ("member", "r", "ge", "", False)),
        ("    self.x", ("member", "self", "x", "", True)),
        ("    y = r", ("member", "r", "", ".", False)),
        ("from os.path import ", ("import", "os.path", "", "", False)),
        ("from os.path import join, sp", ("import", "os.path", "sp", "", False)),
        ("from . import", ("import", ".", "", " ", False)),
        ("from os.pa", ("module", "os", "pa", "", False)),
        ("    import os.", ("module", "os", "", "", False)),
        ("import a.b.c", ("module", "a.b", "c", "", False)),
        ("from os", ("module", "os", "", ".", False)),
    ],
)
def test_trigger_points(line, expected):
    point = trigger.find(line)
    assert point is not None
    assert (point.kind, point.receiver, point.written, point.sep, point.statement_start) == expected


@pytest.mark.parametrize(
    "line",
    ['    s = "x.', "    # see x.", "    f().", "    x[0].", "    y = 1.", "def f", "from .os.",
     "from os.path import x.", "    return", "    x = 'a' + r.split('.')[0] + '#"],
)  # fmt: skip
def test_no_trigger_in_strings_comments_calls_numbers_definitions(line):
    assert trigger.find(line) is None


def test_scopes_from_indentation():
    text = "import os\nclass A:\n    x = 1\n    def f(self):\n        def g():\n            pass\n        self."
    assert scopes.at_end(text) == ("class A", "def f")
    assert list(scopes.each_line(text.split("\n")))[-1] == ("class A", "def f")
    assert scopes.enclosing_class(("class A", "def f", "def g")) == ("class A",)


def test_the_mask_keeps_what_begins_continues_or_ends_a_member():
    m = monitor("    y = r.")
    assert kept(m, []) == [b"get", b"borrow"]
    assert kept(m, [0]) == [b"_w", b"_"]  # get -> only get_wadl_application goes on
    done = kept(m, [0, 1, 2, 3])  # get_wadl_application: what ends it
    assert b"(" in done and b"\n" in done and b"<eos>" in done and b"_" not in done
    assert b"\xe2" not in kept(m, [0])  # (a part of a character is never part of a name)


def test_before_the_dot_only_tokens_opening_with_it_are_constrained():
    m = monitor("    y = r")
    row = kept(m, [])
    assert b".get" in row and b".borrow" in row and b"." in row and b"x" in row
    assert b"get" in row  # (the receiver's name could go on: not a trigger for them)


def test_an_incomplete_set_is_biased_or_left_alone():
    assert len(kept(monitor("y = r.", complete=False), [])) == len(VOCAB)
    m = monitor("y = r.", complete=False, bias=2.0)
    row = m.guide(np.zeros(len(VOCAB), dtype=np.float32), [])
    assert row[0] == 0 and row[14] == -2.0


@pytest.mark.parametrize(
    ("text", "syntax", "left_open"),
    [
        ('"""doc\nstill', "python", '"""'),
        ('x = \'"""\'  # a quote in a string opens nothing\ny = r.', "python", ""),
        ('# it\'s a """ in a comment\ny = r.', "python", ""),
        ("'''a\n\"\"\"\n'''\ny = r.", "python", ""),
        ('"""a \\""" b', "python", '"""'),  # (an escaped quote closes nothing)
        ('"""a \\\\""" b', "python", ""),
        ('const g = "src/**/*.js";\nthis.', "braces", ""),
        ("/* a\n b", "braces", "/*"),
        ("const t = `a\n${x}", "braces", "`"),
        ("// don't ` here\nthis.", "braces", ""),
        ("fn f<'a>(x: &'a str) {\n    let s = \"/*\";\n    self.", "braces", ""),
    ],
)
def test_a_span_of_lines_is_open_only_where_a_lexer_says_so(text, syntax, left_open):
    assert open_span(text, syntax) == left_open


def test_a_quote_in_a_string_earlier_in_the_file_leaves_the_guide_on():
    # pydoc's `'"""'`: counting the quotes turned the guide off for the rest of the file
    assert kept(monitor('x = \'"""\'\ny = r.'), []) == [b"get", b"borrow"]
    m = monitor('x = """\n y = r.')  # (in a docstring: free until it closes)
    assert len(kept(m, [])) == len(VOCAB)


def test_unknown_receivers_strings_and_new_attributes_are_not_constrained():
    assert len(kept(monitor("y = q."), [])) == len(VOCAB)
    assert len(kept(monitor('y = """\n r.'), [])) == len(VOCAB)
    table = Table(1, {(("class A",), "self"): Members(NAMES, True)})
    m = Monitor(NameTokens(VOCAB), table, text="        self.", scope=("class A", "def __init__"))
    assert len(kept(m, [])) == len(VOCAB)  # (maybe a new attribute's target)
    m = Monitor(NameTokens(VOCAB), table, text="        self.", scope=("class A", "def run"))
    assert kept(m, []) == [b"get", b"borrow"]


def test_the_symbol_draft_is_the_rest_of_the_only_name_left():
    m = monitor("    y = r.")
    assert m.draft([], 8) == []  # (every member open)
    assert [VOCAB[t] for t in m.draft([0], 8)] == [b"_w", b"adl", b"_application"]
    assert m.draft([0], 2) == [1, 2]
    assert monitor("    y = r.", complete=False).draft([0], 8) == []


def test_counts_are_per_position_kept():
    m = monitor("    y = r.")
    for out in ([], [0], [0, 1], [0, 1, 2], [14, 14]):
        m.guide(np.zeros(len(VOCAB), dtype=np.float32), out)
    counts = m.counts(3)
    assert counts["guide_triggers"] == 3 and counts["guide_masked"] == 3


WORKSPACE = {
    "pkg/__init__.py": "",
    "pkg/reservoir.py": (
        "class Reservoir:\n"
        "    def __init__(self):\n        self.level = 0\n\n"
        "    def borrow_or_take(self, now):\n        return now\n"
    ),
    "pkg/main.py": (
        "import os\nfrom pkg.reservoir import Reservoir\n\n\n"
        "def run(now):\n    reservoir = Reservoir()\n    decision = reservoir.borrow_or_take(now)\n"
        "    return os.path.join(decision)\n"
    ),
}


def analysed(tmp_path, files: dict[str, str]) -> Table:
    """The files written under tmp_path (the workspace folder), pkg/main.py analysed."""
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    path = str(tmp_path / "pkg/main.py")
    return Analyser().analyse(files["pkg/main.py"], version=3, path=path, root=str(tmp_path))


def test_jedi_resolves_a_class_from_another_module_as_complete(tmp_path):
    table = analysed(tmp_path, WORKSPACE)
    assert table.done and table.version == 3
    found = table.lookup(("def run",), "reservoir")
    assert found is not None and found.complete
    assert {"borrow_or_take", "level"} <= found.names and "decide" not in found.names
    assert table.lookup(("def other",), "os.path") is not None  # (a module-level name)
    assert table.lookup(("def other",), "reservoir") is None  # (a local of run)
    call = table.lookup(("def run",), "call reservoir.borrow_or_take")
    assert call is not None and call.names == {"now"} and call.complete
    imported = table.lookup((), "from pkg.reservoir")
    assert imported is not None and "Reservoir" in imported.names
    # the package an import names a module of: its submodules, all of them
    package = table.lookup(("def run",), "module pkg")
    assert package is not None and package.complete and {"reservoir", "main"} <= package.names
    assert "Reservoir" not in package.names and table.lookup((), "pkg") is None


def test_a_class_s_members_include_what_its_metaclass_gives_it(tmp_path):
    files = {
        "pkg/__init__.py": "",
        "pkg/main.py": (
            "import enum\n\n\nclass Color(enum.Enum):\n    RED = 1\n\n\n"
            "class Plain:\n    x = 1\n\n\n"
            "def names():\n    return Color.__members__, Plain.x\n"
        ),
    }
    table = analysed(tmp_path, files)
    color = table.lookup(("def names",), "Color")
    assert color is not None and color.complete and {"RED", "__members__"} <= color.names
    plain = table.lookup(("def names",), "Plain")
    assert plain is not None and "x" in plain.names and "__members__" not in plain.names


def test_submodules_are_not_all_there_is_where_a_package_extends_its_path(tmp_path):
    files = {
        "ns/__init__.py": "__path__ = __import__('pkgutil').extend_path(__path__, __name__)\n",
        "ns/a.py": "",
        "pkg/__init__.py": "",
        "pkg/main.py": "import os\nfrom ns.a import x\nfrom os.path import join\n",
    }
    table = analysed(tmp_path, files)
    ns = table.lookup((), "module ns")
    assert ns is not None and "a" in ns.names and not ns.complete
    plain = table.lookup((), "module os")  # (a module, not a package: `os.path` made at run time)
    assert plain is None or not plain.complete


def test_a_submodule_in_an_import_is_one_that_exists():
    # `from hypothesis.strategies._internal.datastructures import` for `.deferred`: a module the
    # package does not have
    for text in ("from r.", "import r.", "    from r.get_w"):
        m = monitor(text, key="module r")
        assert b"get" in kept(m, []) or b"adl" in kept(m, [])
        assert b"decide" not in kept(m, []) and b"x" not in kept(m, [])
    before_the_dot = monitor("from r", key="module r")
    assert b".get" in kept(before_the_dot, []) and b" " in kept(before_the_dot, [])
    assert b".borrow" in kept(before_the_dot, [])  # (both names exist: kept)
    assert b"." in kept(before_the_dot, [])
    # a module's attribute set is not its submodules: `r.` in code reads the other key
    assert kept(monitor("y = r.", key="module r"), []) == kept(monitor("y = q.", key="r"), [])


@pytest.mark.parametrize(
    ("line", "callee", "written"),
    [
        ("    x = f(a, ti", "f", "ti"),
        ("    self.get(url, ", "self.get", ""),
        ("f(a, g(b), c", "f", "c"),
    ],
)
def test_keyword_arguments_are_trigger_points(line, callee, written):
    point = trigger.find_keyword(line)
    assert point is not None and (point.receiver, point.written) == (callee, written)


@pytest.mark.parametrize(
    "line", ["def f(a, b", "class A(Base", "    f(*a", "    f(a + b", "x = f[a, b"]
)
def test_definitions_and_expressions_are_not_keyword_points(line):
    assert trigger.find_keyword(line) is None


def test_a_keyword_the_call_does_not_take_cannot_be_written():
    vocab = [b"ti", b"meout", b"meout=", b"=", b"==", b"x", b"retries=", b"verbose=", b")"]
    table = Table(1, {((), "call fetch"): Members(frozenset({"timeout", "retries"}), True)})
    m = Monitor(NameTokens(vocab), table, text="    fetch(url, ", scope=())
    row = m.guide(np.zeros(len(vocab), dtype=np.float32), [])
    allowed = [vocab[i] for i in np.flatnonzero(np.isfinite(row))]
    assert b"verbose=" not in allowed and b"retries=" in allowed and b"x" in allowed
    assert b"=" not in allowed  # (`fetch(url, =`)
    row = m.guide(np.zeros(len(vocab), dtype=np.float32), [0])  # "ti"
    allowed = [vocab[i] for i in np.flatnonzero(np.isfinite(row))]
    assert b"meout=" in allowed and b"=" not in allowed and b"==" in allowed  # (`ti == x`)


def test_after_an_edit_only_new_receivers_and_those_near_the_cursor_are_asked_again():
    text = "import os\n" + "x = 1\n" * 100 + "os.path.join('a')\n" + "y = 2\n" * 100 + "os.sep\n"
    analyser = Analyser()
    first = analyser.analyse(text, version=1, path=None, root=None, near_line=1)
    far, near = first.members[((), "os.path")], first.members[((), "os")]
    edited = text + "os.getcwd()\n"
    second = analyser.analyse(
        edited, version=2, path=None, root=None, near_line=len(text.split("\n")), earlier=first
    )
    assert second.members[((), "os.path")] is far  # (kept, not asked again)
    assert second.members[((), "os")] is not near  # (near the cursor: asked again)


def test_a_signature_spread_over_lines_is_still_the_scope():
    text = (
        "class Environment:\n    def __init__(\n        self,\n        block_start: str = '{%',\n"
        "    ) -> None:\n        self."
    )
    assert scopes.at_end(text) == ("class Environment", "def __init__")
    assert list(scopes.each_line(text.split("\n")))[-1] == ("class Environment", "def __init__")


def test_what_is_ready_is_published_while_the_analysis_goes_on():
    lines = ["import os"] + [f"v{i} = 'a'\nv{i}.upper()" for i in range(20)] + ["os.sep"]
    text = "\n".join(lines)
    published: list[Table] = []
    final = Analyser().analyse(
        text,
        version=1,
        path=None,
        root=None,
        near_line=text.count("\n") + 1,
        hooks=Hooks(publish=published.append),
    )
    assert final.done and not final.partial
    assert published and all(t.partial and t.version == 1 for t in published)
    assert published[0].lookup((), "os") is not None  # (the receiver nearest the cursor: first)


def test_a_partial_table_is_read_before_the_analysis_is_done(tmp_path):
    from spec_lsp.engine.guide.analyses import Analyses

    analyses = Analyses()
    analyses.delay_s = 30.0  # (the whole table published only after 30 s)
    uri = (tmp_path / "m.py").as_uri()
    text = "import os\n" + "".join(f"v{i} = 'a'\nv{i}.upper()\n" for i in range(20)) + "os."
    analyses.set_enabled(True)
    analyses.document_changed(uri, text)
    deadline = time.monotonic() + 60
    while analyses.table(uri) is None:
        assert time.monotonic() < deadline, "nothing was published"
        time.sleep(0.05)
    table = analyses.table(uri)
    assert table is not None and table.partial and not analyses.current(uri)
    assert table.lookup((), "os") is not None
    analyses.close()


def test_a_token_that_ends_a_name_and_opens_a_member_must_open_one_that_exists():
    # `self._cstate.reset()` where `_cstate`'s members are known and have no `reset`: a token
    # `.reset` after the name (as when healing leaves the prompt at `self._cstate`) is kept out
    vocab = [b"_cstate", b".reset", b".clear", b".", b"(", b"_c", b"state", b".re", b"\n"]
    table = Table(
        1,
        {
            ((), "self"): Members(frozenset({"_cstate", "_states"}), True),
            ((), "self._cstate"): Members(frozenset({"clear", "value"}), True),
        },
    )
    m = Monitor(NameTokens(vocab), table, text="        return dict(self._c", scope=())
    row = m.guide(np.zeros(len(vocab), dtype=np.float32), [6])  # written: `_cstate`
    kept_now = [vocab[i] for i in np.flatnonzero(np.isfinite(row))]
    assert b".clear" in kept_now and b"." in kept_now and b"(" in kept_now
    assert b".reset" not in kept_now and b".re" not in kept_now
    # a member set not known whole leaves them alone
    table.members[((), "self._cstate")] = Members(frozenset({"clear"}), False)
    m = Monitor(NameTokens(vocab), table, text="        return dict(self._c", scope=())
    row = m.guide(np.zeros(len(vocab), dtype=np.float32), [6])
    assert np.isfinite(row[1])


SELF_SET_ELSEWHERE = {
    "pkg/__init__.py": "",
    "pkg/span.py": (
        "class Span:\n"
        "    __slots__ = ('_days',)\n\n"
        "    def __new__(cls, days):\n"
        "        self = object.__new__(cls)\n"
        "        self._days = days\n"
        "        return self\n\n"
        "    def days(self):\n"
        "        return self._days\n"
    ),
    "pkg/main.py": (
        "from pkg.span import Span\n\n\n"
        "class Misc:\n"
        "    def call(self, *args):\n"
        "        return self.tk.call(*args)\n\n"
        "    def focus(self):\n"
        "        return self.\n\n\n"
        "def total(span: Span):\n"
        "    return span.\n"
    ),
}


def test_a_class_s_members_include_what_its_own_body_uses_on_self(tmp_path):
    # Jedi lists neither `_days` (set through another name in `__new__`) nor `tk` (a mixin's
    # attribute, set by the classes that use it): a complete set without them would forbid
    # names the class itself uses
    table = analysed(tmp_path, SELF_SET_ELSEWHERE)
    mixin = table.lookup(("class Misc", "def focus"), "self")
    assert mixin is not None and mixin.complete and {"call", "focus", "tk"} <= mixin.names
    span = table.lookup(("def total",), "span")
    assert span is not None and span.complete and {"days", "_days"} <= span.names


def test_the_engine_shut_down_stops_its_analysis_and_a_run_cut_short_says_nothing(tmp_path, caplog):
    from spec_lsp.config import Settings
    from spec_lsp.engine.engine import build_engine

    engine = build_engine(Settings(precompute=False), backend="fake")
    engine.load()
    analyses = engine.stores.analyses
    analyses.set_enabled(True)

    def broken(*_args, **_kwargs):  # (as jedi's subprocess gone with the process)
        engine.shutdown()
        raise EOFError("Ran out of input")

    analyses.analyser.analyse = broken  # type: ignore[method-assign]
    analyses.document_changed((tmp_path / "m.py").as_uri(), "import os\nos.")
    thread = analyses._thread
    assert thread is not None
    thread.join(timeout=30)
    assert not thread.is_alive()  # (without shutdown: waits for work forever)
    assert "failed" not in caplog.text


@pytest.mark.parametrize(
    ("text", "continues"),
    [
        ("x = f(\n    [\n", True),  # (a list in a call, its pairs on the lines below)
        ("d = {\n    'a': '}',\n", True),  # (the string's brace is not the dict's)
        ("x = f(  # (\n", True),
        ("(\n", False),  # (a bracket opening its line: maybe a tuple target's)
        ("    (\n        self.a,\n", False),
        ("x = f(a)\n", False),
        ("s = '''(\n'''\n", False),
        ("s = '('\n", False),
        ("# f(\nx = 1\n", False),
        ("x = '''\n(", False),  # (inside a string left open)
    ],
)
def test_a_line_inside_brackets_opened_after_code_continues_a_statement(
    text: str, continues: bool
) -> None:
    assert trigger.continues_statement(text) is continues
    for cut in [i + 1 for i, c in enumerate(text) if c == "\n"]:  # (read on from a line's start,
        above = trigger.open_brackets(text[:cut])  # as the monitor reads the generated lines)
        assert trigger.continues_statement(text[cut:], above) is continues
