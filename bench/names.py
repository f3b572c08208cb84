"""Next-identifier match at dereferences (monitor-guided decoding's own measure), guide on and off.

Cases by rule, from code no one here wrote: fixed modules of the standard library and of
packages installed beside spec-lsp; in each, the dereferences `receiver.name` whose receiver is
a chain of names, after the file's first 30 lines, spread evenly over the file. The person
writes that line: the editor holds the file with the rest of the line, from the `.` on,
removed (the lines below stay: a class's methods defined further down exist), and that is what
the engine's analysis reads; a case is kept when it resolves the receiver, until `--per-file`
are kept. The prompt is the file cut right after the `.` (no suffix); the person asks
(Invoked). Counted: the next identifier right, and the names written that are not among the
receiver's members (Jedi's completions there), for each variant in the same run on the same
prompt:

- off: `guide: false`;
- on: `guide: true` (hard mask where the member set is complete, nothing elsewhere);
- on+bias: `guide: true, guideBias: 100` (incomplete sets masked too, in effect); `--bias B`
  adds on+bias=B (`guideBias: B`);
- plain: plain llama-cpp-python FIM with the same model (places.Plain: the engine's window and
  FIM template, `create_completion`, greedy), the same prompt;
- plain+mask: the same with its logits masked to Jedi's completions there (every resolved
  receiver, complete or not, where a name is defined too) until the first name is written;
  `--plain-bias B` adds plain+bias=B: the other tokens lowered by B instead;
- on-jedi: on, with the members Jedi lists alone (analysis.Bodies left out: not the names the
  classes' own bodies use on `self` nor those their sources make; nor the document's own uses
  of the receiver), the file analysed again for it; last in a case's row;
- on-dunders=B (`--dunders B`): on, with the dunders every object has (OBJECT_DUNDERS) lowered
  by B (inf: left out) where the member set is complete and what is written does not open with
  `__`; a rule tried on the fit and choose sets before the product takes it;
- on-unmentioned=B (`--unmentioned B`): on, with the members the document never names (not
  anywhere in its text: code, strings, comments) lowered by B where the member set is complete.

A name that is not a member counts as defined, not as used, where the receiver opens the
statement and the name is followed by `=` or `:` (`self.x = ...`: a new attribute).

`--set`: the files. `report` (the default) is the set the figures are reported on; `fit` and
`choose` are other standard-library modules (SPLIT_RULE) for choosing what the guide does
before the report set is run. `--definitions`: only the places where a name may be defined
(`self.`/`cls.` opening a statement in `__init__` and its kin), where the guide masks nothing.


`--speed N`: N of the cases again, 48 tokens multi-line, guide on and off back to back in
alternating order: decode tokens per second (the ratio per pair) and the symbol drafts.
"""

from __future__ import annotations

import argparse
import io
import keyword
import re
import statistics
import sysconfig
import time
import tokenize
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import LESS_KNOWN, ROOT, geomean, log, read_results
from bench.places import Plain, engine_options, loaded_engine, machine, report, with_plain
from spec_lsp.engine import CancelToken, CompletionRequest, Engine
from spec_lsp.engine.toolkit import (
    DEFINING,
    Monitor,
    NameTokens,
    key_of,
    scopes,
    trigger,
)
from spec_lsp.engine.toolkit import (
    python_analysis as analysis,
)

STDLIB = (
    "argparse.py",
    "logging/__init__.py",
    "http/client.py",
    "email/message.py",
    "shutil.py",
    "tarfile.py",
    "configparser.py",
    "zipfile.py",
)
PACKAGES = (
    "httpx/_client.py",
    "h11/_connection.py",
    "click/core.py",
    "requests/sessions.py",
    "jinja2/environment.py",
    "pygments/lexer.py",
)
VARIANTS = {"off": (False, 0.0), "on": (True, 0.0), "on+bias": (True, 100.0)}
JEDI_ONLY = "on-jedi"  # on, the members Jedi lists alone (what the guide did before Bodies)
DUNDERS = "on-dunders="  # (`--dunders B`: on, the dunders every object has lowered by B)
OBJECT_DUNDERS = frozenset(dir(object)) | {"__dict__", "__module__", "__annotations__"}
BIASED = "on+bias="  # (`--bias B`: on, `guideBias: B`)
UNMENTIONED = "on-unmentioned="  # (`--unmentioned B`: the members the file never names, by B)
DEMOTIONS = (DUNDERS, UNMENTIONED)  # on, some members of a complete set lowered by B
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
PLAIN = ("plain", "plain+mask")
SKIP_LINES = 30
SPLIT_MIN_LINES = 1000
# fit / choose: the standard library's modules (top level, or a package's __init__) of at least
# SPLIT_MIN_LINES lines, not private (`_`), not the report set's, by path: alternately fit, choose
SPLIT_RULE = "stdlib modules of 1,000+ lines, not private, not the report set's, alternately"
# less-known: code the model has seen less of than the standard library's and the most downloaded
# packages' (the report set's): in each of common.LESS_KNOWN but the report set's h11, the
# LESS_KNOWN_FILES largest modules of SPLIT_MIN_LINES // 2 lines or more, outside tests, one per
# file name (httpcore's `_sync` modules are generated from its `_async` ones)
LESS_KNOWN_FILES = 2
DEFINED = re.compile(r"[ \t]*(?:=(?!=)|:|,)")  # after a name: it is being assigned (defined)


@dataclass(frozen=True)
class Case:
    path: str
    line: int
    receiver: str
    expected: str
    cut: str  # the file up to and including the `.`
    document: str  # the file as the editor holds it: the cut, then the lines after its line

    @property
    def statement_start(self) -> bool:
        """The receiver opens the statement, or a target of a tuple opening it (the name after
        it may be assigned): in Python, as the guide reads it (trigger.find)."""
        line = self.cut[self.cut.rfind("\n") + 1 :]
        if not self.path.endswith(".py"):
            return line.strip() == self.receiver + "."
        point = trigger.find(line)
        return point is not None and point.receiver == self.receiver and point.statement_start

    @property
    def defining(self) -> bool:
        """`self.`/`cls.` opening a statement where attributes are made (the guide's DEFINING
        scopes): maybe a new attribute, so the guide masks nothing there."""
        if not self.path.endswith(".py"):
            return False
        scope = scopes.at_end(self.cut)
        return (
            self.statement_start
            and self.receiver in ("self", "cls")
            and bool(scope)
            and scope[-1] in DEFINING
        )


def candidates(path: Path) -> list[Case]:
    """Every `chain.name` of the file past its first lines, in order."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return []
    found = []
    for i in range(2, len(tokens)):
        name, dot = tokens[i], tokens[i - 1]
        if name.type != tokenize.NAME or dot.string != "." or keyword.iskeyword(name.string):
            continue
        if name.start != dot.end or name.start[0] <= SKIP_LINES:
            continue
        chain: list[str] = []
        j = i - 2
        while (
            j >= 0 and tokens[j].type == tokenize.NAME and not keyword.iskeyword(tokens[j].string)
        ):
            chain.insert(0, tokens[j].string)
            if j >= 1 and tokens[j - 1].string == "." and tokens[j - 1].end == tokens[j].start:
                j -= 2
                continue
            break
        if not chain or (j >= 0 and tokens[j].string in (".", ")", "]")):
            continue
        at = starts[dot.end[0] - 1] + dot.end[1]
        below = text[starts[dot.end[0]] - 1 :] if dot.end[0] < len(lines) else ""
        case = Case(
            str(path), dot.end[0], ".".join(chain), name.string, text[:at], text[:at] + below
        )
        found.append(case)
    return found


def spread(found: list[Case], n: int) -> list[Case]:
    """n cases evenly over the file's candidates (all of them if fewer)."""
    if len(found) <= n:
        return found
    return [found[round(k * (len(found) - 1) / (n - 1))] for k in range(n)]


def first_name(text: str) -> str:
    n = 0
    while n < len(text) and (text[n].isalnum() or text[n] == "_"):
        n += 1
    return text[:n]


def split_files(which: str) -> list[Path]:
    """The files of a set: `report` (STDLIB and PACKAGES), or `fit`/`choose` (SPLIT_RULE)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    site = Path(sysconfig.get_paths()["purelib"])
    if which == "report":
        return [stdlib / f for f in STDLIB] + [site / f for f in PACKAGES]
    if which == "less-known":
        return [f for package in LESS_KNOWN if package != "h11" for f in largest(site / package)]
    found = [
        path
        for path in sorted(stdlib.glob("*.py")) + sorted(stdlib.glob("*/__init__.py"))
        if not path.relative_to(stdlib).as_posix().startswith("_")
        and path.relative_to(stdlib).as_posix() not in STDLIB
        and path.read_text(encoding="utf-8", errors="replace").count("\n") >= SPLIT_MIN_LINES
    ]
    return found[0::2] if which == "fit" else found[1::2]


def largest(package: Path) -> list[Path]:
    """A package's LESS_KNOWN_FILES largest modules (lines; then by path) of at least half
    SPLIT_MIN_LINES lines, tests left out, one per file name."""
    sized = []
    for path in sorted(package.rglob("*.py")):
        if "test" in path.relative_to(package).as_posix():
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").count("\n")
        if lines >= SPLIT_MIN_LINES // 2:
            sized.append((-lines, path.relative_to(package).as_posix(), path))
    chosen: dict[str, Path] = {}
    for _lines, _name, path in sorted(sized):
        if path.name not in chosen and len(chosen) < LESS_KNOWN_FILES:
            chosen[path.name] = path
    return list(chosen.values())


def outcome(case: Case, text: str, names: frozenset[str]) -> dict[str, Any]:
    """What a variant wrote: its first name, right or not, not a member (used or defined)."""
    name = first_name(text)
    unknown = bool(name) and name not in names
    defined = unknown and case.statement_start and bool(DEFINED.match(text[len(name) :]))
    return {
        "name": name,
        "text": text[:48],
        "right": name == case.expected,
        "unknown": unknown,
        "defined": defined,
    }


class FirstName:
    """A llama-cpp-python logits processor: until the first name is written, the tokens that
    do not begin, continue or end one of `names` are dropped (`bias` None) or lowered by
    `bias`."""

    def __init__(self, index: NameTokens, names: frozenset[str], bias: float | None) -> None:
        self.index, self.names, self.bias = index, names, bias
        self.start: int | None = None  # the prompt's length: the first call's

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if self.start is None:
            self.start = len(input_ids)
        pieces = self.index.pieces
        text = b"".join(pieces[t] for t in input_ids[self.start :]).decode("utf-8", "replace")
        if first_name(text) != text:  # (the name has ended)
            return scores
        keep = self.index.allowed(text, self.names)
        if not keep.any():
            return scores
        if self.bias is None:
            return np.where(keep, scores, -np.inf).astype(scores.dtype)
        return np.where(keep, scores, scores - self.bias).astype(scores.dtype)


def plain_index(plain: Plain) -> NameTokens:
    """The name index over plain llama-cpp-python's vocabulary (each token's text)."""
    llm = plain.llm
    return NameTokens([llm.detokenize([t]) for t in range(llm.n_vocab())])


def ask_plain(
    plain: Plain,
    index: NameTokens,
    case: Case,
    names: frozenset[str],
    variant: str,
    tokens: int = 12,
) -> str:
    """Plain llama-cpp-python at the case, `tokens` at most, its first name masked as `variant`
    says."""
    processor = None
    if variant != "plain":
        bias = None if variant == "plain+mask" else float(variant.split("=", 1)[1])
        processor = [FirstName(index, names, bias)]
    text, _seconds = plain.complete(
        case.cut, "", file_name=Path(case.path).name, max_tokens=tokens, logits_processor=processor
    )
    return str(text)


LANGUAGE_IDS = {
    ".ts": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".js": "javascript",
}


def request_at(case: Case, *, tokens: int, multiline: bool) -> CompletionRequest:
    return CompletionRequest(
        case.cut,
        "",
        document_id=Path(case.path).as_uri(),
        file_name=Path(case.path).name,
        language=LANGUAGE_IDS.get(Path(case.path).suffix, "python"),
        max_tokens=tokens,
        multiline=multiline,
        invoked=True,
    )


def ask(engine: Engine, case: Case, *, tokens: int, multiline: bool) -> Any:
    return engine.complete(request_at(case, tokens=tokens, multiline=multiline), CancelToken())


def prewarmed(engine: Engine, case: Case, tokens: int) -> None:
    """The case's prompt evaluated before any variant asks, as the server does while the
    person pauses: every variant then finds it in the KV cache and evaluates the same last
    token, so their first logits are the same numbers (the variant that went first evaluated
    the whole prompt, the others its last tokens: a near tie could go either way)."""
    engine.prewarm(request_at(case, tokens=tokens, multiline=False), CancelToken())


def analysed(engine: Engine, case: Case) -> bool:
    """The case's file analysed (where the person writes first) before its ask: whether it was.
    Also for a guided variant after an unguided one: turning the guide off dropped the tables
    (edits are not followed then), and a large file's first table takes longer than a request
    waits for one (its ask went unguided)."""
    analyses, uri = engine.parts.analyses, Path(case.path).as_uri()
    analyses.asked_at(uri, case.line)
    return analyses.wait(uri, 120)


def set_variant(engine: Engine, name: str) -> None:
    if name.startswith(BIASED):
        guide, bias = True, float(name[len(BIASED) :])
    else:
        guide, bias = VARIANTS["on" if name.startswith((*DEMOTIONS, JEDI_ONLY)) else name]
    rule = next((r for r in DEMOTIONS if name.startswith(r)), "")
    _demoted.update(by=float(name[len(rule) :]) if rule else 0.0, rule=rule)
    engine.update_settings(engine.settings.model_copy(update={"guide": guide, "guide_bias": bias}))


# what a demotion variant lowers (`rule`, one of DEMOTIONS), by how much (`by`), and the
# identifiers the case's document names (`mentioned`, for on-unmentioned)
_demoted: dict[str, Any] = {"by": 0.0, "rule": "", "mentioned": frozenset()}


def mentioned(document: str) -> frozenset[str]:
    """The identifiers a document names anywhere (code, strings, comments)."""
    return frozenset(IDENTIFIER.findall(document))


@contextmanager
def _jedi_only() -> Iterator[None]:
    """The analysis without what the classes' bodies use on `self`, the names their sources
    make and the document's own uses of each receiver (Jedi's members alone; a set is complete
    by the same rules)."""
    used, facts = analysis.Bodies.used_on_self, analysis.Bodies.facts
    analysis.Bodies.used_on_self = lambda self, inferred: frozenset()  # type: ignore[method-assign]
    analysis.Bodies.facts = lambda self, inferred: replace(  # type: ignore[method-assign]
        facts(self, inferred), on_self=frozenset(), names=frozenset()
    )
    analysis.UNION = False
    try:
        yield
    finally:
        analysis.Bodies.used_on_self, analysis.Bodies.facts = used, facts  # type: ignore[method-assign]
        analysis.UNION = True


def _demoting(guided: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Monitor._guided, and then, where the set is complete, the tokens that begin only the
    members a rule sets apart lowered by B: on-dunders=B the dunders every object has (unless
    what is written opens with `__`); on-unmentioned=B the members the document never names."""

    def demoted(monitor: Monitor, logits: np.ndarray, out: Sequence[int]) -> np.ndarray:
        row = guided(monitor, logits, out)
        if not _demoted["by"]:
            return row
        members, point = found if (found := monitor._members(out)) else (None, None)
        if members is None or point is None or not members.complete or point.kind != "member":
            return row
        if _demoted["rule"] == DUNDERS:
            if point.written.startswith("__"):
                return row
            kept = members.names - OBJECT_DUNDERS
        else:
            kept = members.names & _demoted["mentioned"]
        core = monitor.names.allowed(point.written, kept, sep=point.sep)
        if not core.any():
            return row
        return np.where(core, row, row - _demoted["by"]).astype(row.dtype, copy=False)

    return demoted


def resolved(engine: Engine, case: Case) -> tuple[frozenset[str], bool, float] | None:
    """Open the cut file and let the analysis run: the receiver's members, whether complete,
    and the analysis's seconds; None where it does not resolve."""
    set_variant(engine, "on")
    uri = Path(case.path).as_uri()
    engine.document_changed(uri, case.document)
    if not analysed(engine, case):
        return None
    table = engine.parts.analyses.table(uri)
    members = table.lookup(table.scope_at(case.cut), receiver_key(case)) if table else None
    if members is None or table is None:
        return None
    return members.names, members.complete, table.seconds


def receiver_key(case: Case) -> str:
    """The table's key the monitor reads at the case's `.`: the receiver's, or in a Python
    import the package's (its submodules)."""
    point = trigger.find(case.cut[case.cut.rfind("\n") + 1 :])
    if case.path.endswith(".py") and point is not None and point.kind == "module":
        return key_of(point.kind, point.receiver)
    return case.receiver


def run_case(
    engine: Engine,
    case: Case,
    found: tuple[frozenset[str], bool, float],
    variants: list[str],
    plain: tuple[Plain, NameTokens] | None,
    tokens: int = 12,
) -> dict[str, Any]:
    names, complete, seconds = found
    row: dict[str, Any] = {
        "path": case.path,
        "line": case.line,
        "receiver": case.receiver,
        "expected": case.expected,
        "complete": complete,
        "defining": case.defining,
        "expected_known": case.expected in names,
        "analysis_s": seconds,
    }
    _demoted["mentioned"] = mentioned(case.document)
    prewarmed(engine, case, tokens)
    for variant in variants:
        if variant == JEDI_ONLY:
            with _jedi_only():
                engine.document_closed(Path(case.path).as_uri())
                again = resolved(engine, case)
            prewarmed(engine, case, tokens)
            set_variant(engine, variant)
            got = ask(engine, case, tokens=tokens, multiline=False)
            row[variant] = outcome(case, got.text, names)
            row[variant].update(masked=got.stats.guide_masked, changed=got.stats.guide_changed)
            row[variant]["known"] = again is not None and case.expected in again[0]
        elif variant in VARIANTS or variant.startswith((*DEMOTIONS, BIASED)):
            set_variant(engine, variant)
            if engine.settings.guide:
                analysed(engine, case)
            got = ask(engine, case, tokens=tokens, multiline=False)
            row[variant] = outcome(case, got.text, names)
            row[variant].update(masked=got.stats.guide_masked, changed=got.stats.guide_changed)
        elif plain is not None:
            text = ask_plain(*plain, case, names, variant, tokens)
            row[variant] = {**outcome(case, text, names), "masked": 0, "changed": 0}
    engine.document_closed(Path(case.path).as_uri())
    return row


def speed(engine: Engine, cases: list[Case]) -> dict[str, Any]:
    """Guide on and off back to back, alternating which goes first."""
    ratios, symbol, seconds = [], [0, 0], [0.0, 0.0]
    for k, case in enumerate(cases):
        if resolved(engine, case) is None:
            continue
        rates = {}
        for variant in ("on", "off") if k % 2 == 0 else ("off", "on"):
            set_variant(engine, variant)
            got = ask(engine, case, tokens=48, multiline=True)
            rates[variant] = got.stats.tokens_per_second
            if variant == "on":
                symbol[0] += got.stats.symbol_drafted
                symbol[1] += got.stats.symbol_accepted
                seconds[0] += got.stats.guide_seconds
                seconds[1] += got.stats.decode_seconds
        engine.document_closed(Path(case.path).as_uri())
        if rates["on"] > 0 and rates["off"] > 0:
            ratios.append(rates["on"] / rates["off"])
    return {"pairs": len(ratios), "ratios": ratios, "symbol": symbol, "seconds": seconds}


def render(rows: list[dict[str, Any]], fast: dict[str, Any] | None, head: str) -> str:
    out = [
        head,
        "",
        "| cases | variant | right | wrong, a name used that is not a member | wrong, a new "
        "attribute defined | wrong, another member or none | masked (cases) | changed (cases) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    groups = [
        ("all", rows),
        ("complete", [r for r in rows if r["complete"]]),
        ("incomplete", [r for r in rows if not r["complete"]]),
        ("where a name may be defined", [r for r in rows if r.get("defining")]),
    ]
    if not rows:  # (--speed-only)
        out = [head]
    engines = [*VARIANTS, *DEMOTIONS, JEDI_ONLY]
    variants = [v for v in rows[0] if v.startswith(("plain", *engines))] if rows else []
    for label, group in groups if rows else []:
        for variant in variants:
            cells = [r[variant] for r in group]
            wrong = [c for c in cells if not c["right"]]
            defined = sum(bool(c.get("defined")) for c in wrong)
            used = sum(c["unknown"] for c in wrong) - defined
            other = sum(not c["unknown"] for c in wrong)
            engine = variant.startswith(tuple(engines))
            out.append(
                f"| {label} ({len(group)}) | {variant} | {sum(c['right'] for c in cells)} | "
                f"{used} | {defined} | {other} | "
                f"{sum(c['masked'] > 0 for c in cells) if engine else ''} | "
                f"{sum(c['changed'] > 0 for c in cells) if engine else ''} |"
            )
    seconds = sorted(r["analysis_s"] for r in rows)
    if seconds:
        out += [
            "",
            f"Analysis of the file: p50 {statistics.median(seconds):.2f} s, max {seconds[-1]:.2f} s "
            f"(at most 12 receivers per run here). Expected name among the analysis's members: "
            f"{sum(r['expected_known'] for r in rows)}/{len(rows)} (the others: an attribute made "
            "on the line being written, or a member Jedi does not see). Not a member: a name "
            "written that is not among the analysis's members there; defined: such a name "
            "opening a statement and assigned (`self.x = ...`); another member: a member that is "
            "not the file's, or no name written. plain: plain llama-cpp-python FIM, the same "
            "model and prompt; plain+mask: its first name masked to the members.",
        ]
    if fast and fast["pairs"]:
        r = fast["ratios"]
        out += [
            "",
            f"Speed, decode tokens/s guide on / off, {fast['pairs']} back-to-back pairs: geomean "
            f"{geomean(r):.3f}x (min {min(r):.2f}, max {max(r):.2f}); symbol drafts "
            f"{fast['symbol'][0]} tokens drafted, {fast['symbol'][1]} accepted"
            + (
                f"; the loop's time in the guide: {fast['seconds'][0] / fast['seconds'][1]:.2%} of "
                "decoding (timed inside the loop: no noise from other work)."
                if fast.get("seconds") and fast["seconds"][1]
                else "."
            ),
        ]
    return "\n".join(out) + "\n"


def options(
    description: str, out: str, per_file: int, speed_pairs: int, *, sources: bool = False
) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    if sources:
        parser.add_argument("--set", choices=("choose", "judge"), default="choose")
        parser.add_argument(
            "--sources",
            default="~/.cache/spec-lsp/bench-sources",
            help="where the packages' sources are fetched to (once)",
        )
    parser.add_argument("--per-file", type=int, default=per_file)
    parser.add_argument(
        "--speed", type=int, default=speed_pairs, help="cases timed guide on/off (0: none)"
    )
    engine_options(parser)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / out) if out else "")
    parser.add_argument(
        "--speed-only", action="store_true", help="the speed part alone (no quality asks)"
    )
    parser.add_argument("--render", action="store_true", help="the table again from --out's runs")
    if not sources:  # (Python: the sets, where a name may be defined, plain llama-cpp-python)
        parser.add_argument(
            "--set",
            choices=("report", "fit", "choose", "less-known"),
            default="report",
            help="the files",
        )
        parser.add_argument(
            "--definitions", action="store_true", help="only where a name may be defined"
        )
        parser.add_argument(
            "--variants",
            nargs="+",
            choices=[*VARIANTS, *PLAIN, JEDI_ONLY],
            default=[*VARIANTS, *PLAIN],
        )
        parser.add_argument(
            "--plain-bias", type=float, nargs="*", default=[], help="plain+bias=B variants"
        )
        parser.add_argument(
            "--dunders", type=float, nargs="*", default=[], help="on-dunders=B variants"
        )
        parser.add_argument(
            "--unmentioned", type=float, nargs="*", default=[], help="on-unmentioned=B variants"
        )
        parser.add_argument("--bias", type=float, nargs="*", default=[], help="on+bias=B variants")
    parser.add_argument(
        "--tokens", type=int, default=12, help="tokens per ask (the first name is what counts)"
    )
    return parser.parse_args()


def rendered_again(args: argparse.Namespace) -> bool:
    """--render: the table again from the saved runs."""
    if not args.render:
        return False
    saved = read_results(Path(args.out).with_suffix(".json.gz"))
    head = Path(args.out).read_text().split("\n\n| cases")[0]
    print(render(saved["rows"], saved["speed"], head), end="")
    return True


def measure(
    args: argparse.Namespace,
    files: list[Path],
    find: Callable[[Path], list[Case]],
    *,
    command: str,
    default_per_file: int,
) -> None:
    """The cases of each file (`find`, spread, kept where the receiver resolves), asked in
    each variant; the speed pairs; the table."""
    python = not hasattr(args, "sources")  # (bench names; names_braced: its own sets)
    variants = [
        *getattr(args, "variants", VARIANTS),
        *(f"plain+bias={b:g}" for b in getattr(args, "plain_bias", [])),
        *(f"{DUNDERS}{b:g}" for b in getattr(args, "dunders", [])),
        *(f"{UNMENTIONED}{b:g}" for b in getattr(args, "unmentioned", [])),
        *(f"{BIASED}{b:g}" for b in getattr(args, "bias", [])),
    ]
    if JEDI_ONLY in variants:  # (last: it leaves the file analysed without Bodies)
        variants = [*(v for v in variants if v != JEDI_ONLY), JEDI_ONLY]
    if any(v.startswith(DEMOTIONS) for v in variants):
        Monitor._guided = _demoting(Monitor._guided)  # type: ignore[method-assign]
    pair: tuple[Plain, NameTokens] | None = None
    if any(v.startswith("plain") for v in variants):
        engine, plain, extra = with_plain(args)
        pair = (plain, plain_index(plain))
    else:
        engine, extra = loaded_engine(args)
    engine.parts.analyses.analyser.max_receivers = 12  # (the cursor's receiver comes first)
    rows: list[dict[str, Any]] = []
    timed: list[Case] = []
    started = time.perf_counter()
    for path in files:
        if not path.exists():
            log(f"{path}: not there, skipped")
            continue
        kept = 0
        found_here = find(path)
        if python and args.definitions:
            found_here = [c for c in found_here if c.defining]
        for case in spread(found_here, args.per_file * 3):
            if kept >= args.per_file:
                break
            found = resolved(engine, case)
            if found is None:
                engine.document_closed(Path(case.path).as_uri())
                continue
            kept += 1
            if kept <= 2:  # (the speed part: the first two of each file)
                timed.append(case)
            if args.speed_only:
                engine.document_closed(Path(case.path).as_uri())
                if kept >= 2:
                    break
                continue
            rows.append(run_case(engine, case, found, variants, pair, args.tokens))
            log(
                f"{len(rows)} {path.name}:{case.line} {case.receiver}.{case.expected} -> "
                + ", ".join(f"{v}={rows[-1][v]['text']!r}" for v in variants)
            )
    fast = speed(engine, timed[: args.speed]) if args.speed else None
    title = machine(engine.parts.models.target.info.path)
    head = (
        f"# Next identifier at dereferences: {title}\n\n`{command}"
        f"{' --per-file ' + str(args.per_file) if args.per_file != default_per_file else ''}"
        f"{' --set ' + args.set if python and args.set != 'report' else ''}"
        f"{' --definitions' if python and args.definitions else ''}"
        f"{' --tokens ' + str(args.tokens) if args.tokens != 12 else ''}"
        f"{' --variants ' + ' '.join(variants) if python and variants != [*VARIANTS, *PLAIN] else ''}"
        f"{f' --speed-only --speed {args.speed}' if args.speed_only else ''}`; settings: "
        f"{extra or 'defaults'}; {len(rows)} cases in {len(files)} files "
        f"({time.perf_counter() - started:.0f} s)."
    )
    report(
        Path(args.out), render(rows, fast, head), {"rows": rows, "speed": fast, "settings": extra}
    )


def main() -> None:
    args = options(__doc__.split("\n")[0], "names.md", 8, 20)
    if rendered_again(args):
        return
    files = split_files(args.set)
    measure(args, files, candidates, command="spec-lsp bench names", default_per_file=8)


if __name__ == "__main__":
    main()
