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
- on+bias: `guide: true, guideBias: 100` (incomplete sets masked too, in effect).

`--speed N`: N of the cases again, 48 tokens multi-line, guide on and off back to back in
alternating order: decode tokens per second (the ratio per pair) and the symbol drafts.
"""

from __future__ import annotations

import argparse
import io
import keyword
import statistics
import sysconfig
import time
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import ROOT, geomean, log, read_results
from bench.places import engine_options, loaded_engine, machine, report
from spec_lsp.engine import CancelToken, CompletionRequest, Engine

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
SKIP_LINES = 30


@dataclass(frozen=True)
class Case:
    path: str
    line: int
    receiver: str
    expected: str
    cut: str  # the file up to and including the `.`
    document: str  # the file as the editor holds it: the cut, then the lines after its line


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


LANGUAGE_IDS = {
    ".ts": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".js": "javascript",
}


def ask(engine: Engine, case: Case, *, tokens: int, multiline: bool) -> Any:
    request = CompletionRequest(
        case.cut,
        "",
        document_id=Path(case.path).as_uri(),
        file_name=Path(case.path).name,
        language=LANGUAGE_IDS.get(Path(case.path).suffix, "python"),
        max_tokens=tokens,
        multiline=multiline,
        invoked=True,
    )
    return engine.complete(request, CancelToken())


def set_variant(engine: Engine, name: str) -> None:
    guide, bias = VARIANTS[name]
    engine.update_settings(engine.settings.model_copy(update={"guide": guide, "guide_bias": bias}))


def resolved(engine: Engine, case: Case) -> tuple[frozenset[str], bool, float] | None:
    """Open the cut file and let the analysis run: the receiver's members, whether complete,
    and the analysis's seconds; None where it does not resolve."""
    set_variant(engine, "on")
    uri = Path(case.path).as_uri()
    analyses = engine.analyses
    analyses.asked_at(uri, case.line)  # (where the person writes: analysed first)
    engine.document_changed(uri, case.document)
    if not analyses.wait(uri, 120):
        return None
    table = analyses.table(uri)
    members = table.lookup(table.scope_at(case.cut), case.receiver) if table else None
    if members is None or table is None:
        return None
    return members.names, members.complete, table.seconds


def run_case(
    engine: Engine, case: Case, found: tuple[frozenset[str], bool, float]
) -> dict[str, Any]:
    names, complete, seconds = found
    row: dict[str, Any] = {
        "path": case.path,
        "line": case.line,
        "receiver": case.receiver,
        "expected": case.expected,
        "complete": complete,
        "expected_known": case.expected in names,
        "analysis_s": seconds,
    }
    for variant in VARIANTS:
        set_variant(engine, variant)
        got = ask(engine, case, tokens=12, multiline=False)
        name = first_name(got.text)
        row[variant] = {
            "name": name,
            "right": name == case.expected,
            "unknown": bool(name) and name not in names,
            "masked": got.stats.guide_masked,
            "changed": got.stats.guide_changed,
        }
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
        "| cases | variant | right | wrong, not a member | wrong, a member | masked (cases) | "
        "changed (cases) |",
        "|---|---|---|---|---|---|---|",
    ]
    groups = [
        ("all", rows),
        ("complete", [r for r in rows if r["complete"]]),
        ("incomplete", [r for r in rows if not r["complete"]]),
    ]
    if not rows:  # (--speed-only)
        out = [head]
    for label, group in groups if rows else []:
        for variant in VARIANTS:
            cells = [r[variant] for r in group]
            invented = sum(c["unknown"] and not c["right"] for c in cells)
            other = sum(not c["unknown"] and not c["right"] for c in cells)
            out.append(
                f"| {label} ({len(group)}) | {variant} | {sum(c['right'] for c in cells)} | "
                f"{invented} | {other} | {sum(c['masked'] > 0 for c in cells)} | "
                f"{sum(c['changed'] > 0 for c in cells)} |"
            )
    seconds = sorted(r["analysis_s"] for r in rows)
    if seconds:
        out += [
            "",
            f"Analysis of the file: p50 {statistics.median(seconds):.2f} s, max {seconds[-1]:.2f} s "
            f"(at most 12 receivers per run here). Expected name among the analysis's members: "
            f"{sum(r['expected_known'] for r in rows)}/{len(rows)} (the others: an attribute made "
            "on the line being written, or a member Jedi does not see). Not a member: a name "
            "written that is not among the analysis's members there; a member: another one, or none written.",
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
    engine, extra = loaded_engine(args)
    engine.analyses.analyser.max_receivers = 12  # (the cursor's receiver comes first)
    rows: list[dict[str, Any]] = []
    timed: list[Case] = []
    started = time.perf_counter()
    for path in files:
        if not path.exists():
            log(f"{path}: not there, skipped")
            continue
        kept = 0
        for case in spread(find(path), args.per_file * 3):
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
            rows.append(run_case(engine, case, found))
            log(
                f"{len(rows)} {path.name}:{case.line} {case.receiver}.{case.expected} -> "
                + ", ".join(f"{v}={rows[-1][v]['name']}" for v in VARIANTS)
            )
    fast = speed(engine, timed[: args.speed]) if args.speed else None
    title = machine(engine.models.target.info.path)
    head = (
        f"# Next identifier at dereferences: {title}\n\n`{command}"
        f"{' --per-file ' + str(args.per_file) if args.per_file != default_per_file else ''}"
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
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    site = Path(sysconfig.get_paths()["purelib"])
    files = [stdlib / f for f in STDLIB] + [site / f for f in PACKAGES]
    measure(args, files, candidates, command="spec-lsp bench names", default_per_file=8)


if __name__ == "__main__":
    main()
