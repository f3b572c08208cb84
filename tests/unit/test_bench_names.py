"""The names benchmark's own rules: its sets, where a name may be defined, what it counts, and
the mask it puts on plain llama-cpp-python."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.context_time import GUIDE, base_of, settings_of
from bench.names import (
    STDLIB,
    Case,
    FirstName,
    _demoting,
    _jedi_only,
    largest,
    outcome,
    render,
    set_variant,
    split_files,
)
from bench.names_read import HELD_OUT_PACKAGES, held_out_files
from spec_lsp.engine.guide.monitor import Monitor
from spec_lsp.engine.guide.python.analysis import Analyser
from spec_lsp.engine.guide.table import Members, Table
from spec_lsp.engine.guide.vocabulary import NameTokens

INIT = "class C:\n    def __init__(self, x):\n        self."
USE = "class C:\n    def run(self):\n        return self."


def case(cut: str, expected: str = "x") -> Case:
    return Case("m.py", cut.count("\n") + 1, "self", expected, cut, cut)


def test_the_sets_share_no_file() -> None:
    fit, choose, held = (set(split_files(s)) for s in ("fit", "choose", "report"))
    less_known = set(split_files("less-known"))
    assert len(fit) >= 8 and len(choose) >= 8 and len(held) == 14 and len(less_known) >= 12
    assert not fit & choose and not (fit | choose) & held and not (fit | choose | held) & less_known
    read = held_out_files()  # (names-read: held out from all of them)
    assert len(read) >= 25 and not set(read) & (fit | choose | held | less_known)
    assert [p.parent.name for p in read[:3]] == list(HELD_OUT_PACKAGES)
    assert not any(p.as_posix().endswith(STDLIB) for p in fit | choose)


def test_a_less_known_package_gives_its_largest_modules_one_per_name(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    for name, lines in {
        "a/core.py": 900, "b/core.py": 950, "big.py": 800, "small.py": 400, "tests/t.py": 3000,
    }.items():  # fmt: skip
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text("x = 1\n" * lines)
    assert largest(package) == [package / "b/core.py", package / "big.py"]


def test_a_new_attribute_is_defined_not_used() -> None:
    names = frozenset({"x", "y"})
    assert case(INIT).defining and not case(USE).defining
    assert outcome(case(INIT), "z = x", names)["defined"]
    assert outcome(case(INIT), "z: int = x", names)["defined"]
    used = outcome(case(INIT), "z.append(1)", names)
    assert used["unknown"] and not used["defined"]
    assert not outcome(case(INIT), "z == x", names)["defined"]
    assert not outcome(case(USE), "z = 1", names)["defined"]  # (not opening the statement)
    assert outcome(case(INIT), "x = x", names)["right"]
    # a target of a tuple opening the statement, as the guide reads it (trigger.find)
    targets = case("class C:\n    def __init__(self):\n        self.a, self.")
    assert targets.defining
    assert outcome(targets, "b = 1, 2", names)["defined"]
    assert outcome(case(INIT.replace("self.", "(self.y, self.")), "z, self.w)", names)["defined"]
    assert not outcome(case(USE.replace("self.", "f(x, self.")), "z, 1)", names)["defined"]


def test_the_table_counts_used_and_defined_names_apart() -> None:
    rows = [
        {
            "complete": True,
            "defining": True,
            "analysis_s": 0.1,
            "expected_known": True,
            "on": {"right": False, "unknown": True, "defined": True, "masked": 0, "changed": 0},
            "plain": {"right": False, "unknown": True, "defined": False, "masked": 0},
        }
    ]
    table = render(rows, None, "# t")
    assert "| all (1) | on | 0 | 0 | 1 | 0 | 0 | 0 |" in table
    assert "| all (1) | plain | 0 | 1 | 0 | 0 |  |  |" in table


def test_plain_masked_writes_only_members_until_the_name_ends() -> None:
    pieces = [b"get", b"_w", b"adl", b"_application", b"(", b"x", b".", b"foo"]
    index = NameTokens(pieces)
    mask = FirstName(index, frozenset({"get_wadl_application"}), None)
    prompt = np.array([6, 6], dtype=np.intc)  # (the prompt: two tokens)
    scores = np.zeros(len(pieces), dtype=np.single)
    first = mask(prompt, scores)
    assert np.isfinite(first).tolist() == [True, False, False, False, False, False, False, False]
    after = mask(np.array([6, 6, 0, 1, 2], dtype=np.intc), scores)  # `get_wadl` written
    assert np.isfinite(after)[3] and not np.isfinite(after)[4]
    done = mask(np.array([6, 6, 0, 1, 2, 3], dtype=np.intc), scores)  # the name whole
    assert np.isfinite(done)[4]  # (`(` ends it)
    ended = mask(np.array([6, 6, 0, 1, 2, 3, 4], dtype=np.intc), scores)
    assert np.isfinite(ended).all()  # (past the name: nothing masked)
    biased = FirstName(index, frozenset({"get_wadl_application"}), 3.0)(prompt, scores)
    assert biased[0] == 0 and biased[7] == -3


def test_context_time_compares_the_guide_against_off() -> None:
    runs = [{"setting": s} for s in ("off", "on")]
    assert settings_of(runs) == list(GUIDE) and base_of(list(GUIDE)) == "off"
    assert settings_of([{"setting": s} for s in ("0", "640")]) == ["640", "0"]
    assert base_of(["640", "0"]) == "0"


class _Settings:
    def model_copy(self, update: dict[str, object]) -> _Settings:
        _Engine.updates.append(update)
        return self


class _Engine:
    settings = _Settings()
    updates: list[dict[str, object]] = []

    def update_settings(self, settings: object) -> None:
        pass


def test_a_bias_variant_sets_the_guide_bias_it_names() -> None:
    for variant in ("on+bias=2.5", "on+bias", "on", "off", "on-dunders=3"):
        set_variant(_Engine(), variant)  # type: ignore[arg-type]
    assert [(u["guide"], u["guide_bias"]) for u in _Engine.updates[-5:]] == [
        (True, 2.5),
        (True, 100.0),
        (True, 0.0),
        (False, 0.0),
        (True, 0.0),
    ]
    set_variant(_Engine(), "on")  # type: ignore[arg-type]


def test_the_dunders_variant_lowers_only_what_begins_the_dunders_every_object_has() -> None:
    vocab = [b"url", b"__", b"get", b"_target", b"getattribute", b"__class__", b"__get"]
    members = frozenset({"get_target", "__getattribute__", "__class__"})
    table = Table(1, {((), "self"): Members(members, True)})
    logits = np.array([9, 5, 4.5, 0, 0, 1, 0], dtype=np.single)
    guided = _demoting(Monitor._guided)
    rows = {}
    for variant in ("on", "on-dunders=3", "on-dunders=inf"):
        set_variant(_Engine(), variant)  # type: ignore[arg-type]
        monitor = Monitor(NameTokens(vocab), table, text="    x = self.", scope=())
        rows[variant] = guided(monitor, logits, [])
        after = guided(monitor, logits, [1])  # (`__` written: the dunders are open again)
        assert np.isfinite(after)[4] and after[4] == 0
    assert rows["on"].tolist() == [-np.inf, 5, 4.5, -np.inf, -np.inf, 1, 0]
    assert rows["on-dunders=3"].tolist() == [-np.inf, 2, 4.5, -np.inf, -np.inf, -2, -3]
    assert np.isfinite(rows["on-dunders=inf"]).tolist() == [False, False, True] + [False] * 4
    set_variant(_Engine(), "on")  # type: ignore[arg-type]


def test_the_unmentioned_variant_lowers_what_begins_only_the_members_the_file_never_names():
    from bench.names import _demoted, mentioned

    vocab = [b"url", b"get", b"_target", b"_redirect", b"getattribute", b"__"]
    members = frozenset({"get_target", "get_redirect", "url"})
    table = Table(1, {((), "self"): Members(members, True)})
    logits = np.array([9, 5, 4, 3, 0, 0], dtype=np.single)
    guided = _demoting(Monitor._guided)
    set_variant(_Engine(), "on-unmentioned=6")  # type: ignore[arg-type]
    _demoted["mentioned"] = mentioned("x = self.get_redirect()  # not the target\nself.")
    monitor = Monitor(NameTokens(vocab), table, text="    x = self.", scope=())
    first = guided(monitor, logits, [])
    assert first.tolist()[:2] == [3, 5]  # `url` never named; `get` begins `get_redirect`
    then = guided(monitor, logits, [1])  # after `get`: `_target` lowered, `_redirect` kept
    assert then.tolist()[2:4] == [-2, 3]
    table.members[((), "self")] = Members(members, False)  # (incomplete: nothing lowered)
    monitor = Monitor(NameTokens(vocab), table, text="    x = self.", scope=())
    assert guided(monitor, logits, [])[0] == 9
    set_variant(_Engine(), "on")  # type: ignore[arg-type]


def test_the_jedi_only_variant_analyses_without_what_the_class_uses_on_self() -> None:
    text = "class Misc:\n    def call(self):\n        return self.tk.call()\n\n    def f(self):\n        self.\n"
    with _jedi_only():
        before = Analyser().analyse(text, version=1, path=None, root=None)
    after = Analyser().analyse(text, version=1, path=None, root=None)
    found = [t.lookup(("class Misc", "def f"), "self") for t in (before, after)]
    assert found[0] is not None and "tk" not in found[0].names
    assert found[1] is not None and "tk" in found[1].names


def test_names_read_reports_the_first_tables_before_the_ask() -> None:
    from bench.names_read import render

    def row(first: float | None, unprepared: bool) -> dict:
        said = {"right": True, "unknown": False, "defined": False}
        return {
            "path": "m.py",
            "first_table_s": first,
            "unprepared": unprepared,
            "on": said,
            "off": said,
        }

    out = render([row(0.4, False), row(1.2, False), row(None, True)], "# head")
    assert "| on | 3 of 3 | 0 | 1 |" in out
    assert (
        "first table before the ask: 2 of 3 cases, from the open p50 0.80 s, at most 1.20 s" in out
    )


def test_a_guided_variant_after_the_unguided_one_asks_with_the_files_table(tmp_path: Path) -> None:
    """The guide turned off drops the tables; the variant after it has the file analysed again
    before its ask, so that its answer is guided whatever the file's size (a large file's first
    table takes longer than a request waits for one: the ask went unguided)."""
    from bench.names import analysed, ask
    from spec_lsp.config import Settings
    from spec_lsp.engine import build_engine

    body = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(400))
    cut = f"class C:\n{body}    def run(self):\n        return self."
    (tmp_path / "big.py").write_text(cut + "m1()\n")
    row = Case(str(tmp_path / "big.py"), cut.count("\n") + 1, "self", "m1", cut, cut + "m1()\n")
    engine = build_engine(Settings(precompute=False, file_prefix_tokens=0), backend="fake")
    engine.load()
    try:
        uri = Path(row.path).as_uri()
        engine.document_changed(uri, row.document)
        assert engine.parts.analyses.wait(uri, 60)
        for variant, then in (("off", False), ("on", True)):
            set_variant(engine, variant)
            if then:
                assert engine.parts.analyses.table(uri) is None  # (dropped by `off`)
                assert analysed(engine, row)
            got = ask(engine, row, tokens=4, multiline=False)
            assert got.stats.guide_unprepared == 0
        assert got.stats.guide_masked > 0
    finally:
        engine.close()
