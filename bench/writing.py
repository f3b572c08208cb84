"""A person writing code: how much of what they write is Tab (the ratio of completed code).

What people judge in an editor is JetBrains' *ratio of completed code*: while they write, does
ghost text appear in the pause, and is it right, so that a good share of what they write is
accepted rather than typed. This bench writes function bodies again through the real server
(`spec-lsp serve`, a subprocess over stdio, the soak's JSON-RPC client) as VS Code drives it:

- Bodies (RULE): from code the model has read less of, the installed packages of
  common.LESS_KNOWN (as `bench names --set less-known`), every module outside tests; in each,
  the function bodies of MIN_LINES-MAX_LINES lines and MIN_CHARS-MAX_CHARS characters whose
  signature ends with `:` on the line before them, one per module by a seeded choice;
  each package's picks in a seeded order, then the packages in turn (a round-robin, so that
  the first N bodies spread over them). `--set choose` / `judge` take the even / odd places
  of that order (decide on one, judge on the other), `--bodies N` the first N.
- Each file is opened (didOpen, then specLsp/didFocus as the VS Code extension sends for the
  active editor, with the cursor where the person put it; `--no-cursor`: without it, as the
  extension sent it before it told the cursor) with the body removed: the signature kept, the
  cursor at its end, the lines after the body below. The person reads for `--read-s`, then
  writes the body back.
- Writing: a key every `--key-ms`; Enter inserts the line break and the next line's indentation
  in one change (auto-indent); `--think-s` of thinking before the code of each line (a pause);
  one incremental didChange per key (UTF-16 positions) and an Automatic inline completion
  request per change, the previous one cancelled (`$/cancelRequest`).
- On screen (writing_screen): the latest answer for the document as it stands; typed along,
  it stays (trimmed); a new answer replaces it. The person accepts what has been on screen for
  `--accept-after-s` when it is right: Tab for the whole suggestion (one didChange, then the
  item's command, `workspace/executeCommand specLsp.accepted`, as VS Code runs it), else with
  `--partial word` / `line` its next word / line (acceptNextWord / acceptNextLine: one change,
  the rest stays shown, no command). What the next key would insert anyway (one character, a
  line break with its indentation) is typed, not accepted: one key either way.

Reported, per body and in total: the ratio of completed code (characters inserted by accepts
over all the bodies' characters; and over their non-blank characters: indentation is the
editor's), accepts (whole / partial), the distinct suggestions shown (right: accepting it
leaves the real code, its text a prefix of what is left to write; once per text and place), the
share of line-start pauses with ghost text within 0.5 / 1.0 / 1.5 s of their start, the median
time to ghost text in a pause (none in a pause: infinite), the time to a file's first ghost
text from its first key, whether the first line's pause showed any, and the server's CPU time
(its process tree, /proc) per character written, from didOpen to didClose.

    spec-lsp bench writing --bodies 40
    spec-lsp bench writing --model smollm2-135m --bodies 4 --json bench/out/writing.json
    spec-lsp bench writing --backend fake --bodies 2 --read-s 0.5
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import json
import math
import os
import random
import statistics
import sys
import sysconfig
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.common import LESS_KNOWN, ROOT, write_results
from bench.soak_args import named_settings, server_command
from bench.soak_client import Client, Ledger, Request, clock, items_of
from bench.soak_report import process_tree, tail
from bench.soak_typist import Document, open_document, send_change, utf16_len
from bench.writing_screen import PARTIAL, Pause, Screen, line_start, next_key

MIN_LINES, MAX_LINES = 2, 15
MIN_CHARS, MAX_CHARS = 80, 600
RULE = (
    f"bodies of {MIN_LINES}-{MAX_LINES} lines and {MIN_CHARS}-{MAX_CHARS} characters, one per "
    "module (seeded), modules of common.LESS_KNOWN outside tests, the packages in turn"
)
URI_ROOT = "file:///writing/"  # (not the files on disk: the server never reads the real body)
STALL_S = 10.0  # the server reading nothing of its stdin this long ends the run
WITHIN = (0.5, 1.0, 1.5)  # seconds into a pause: ghost text by then
ACCEPTED = "specLsp.accepted"


@dataclass(frozen=True)
class Body:
    """A function body to write: `text[start:end]` (from the line break that ends the
    signature to the one that ends the body's last line)."""

    path: str  # the module, relative to site-packages
    function: str  # its qualified name
    text: str  # the module
    start: int
    end: int

    @property
    def name(self) -> str:
        return f"{self.path}:{self.function}"

    @property
    def written(self) -> str:
        """What the person writes: a line break, then the body's lines but its last break."""
        return self.text[self.start : self.end]

    @property
    def opened(self) -> str:
        """The module with the body removed, as it is opened (the cursor at `start`)."""
        return self.text[: self.start] + self.text[self.end :]


def functions(tree: ast.AST) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]:
    """Every function of a module (methods and nested ones too), with its qualified name."""
    todo: list[tuple[ast.AST, str]] = [(tree, "")]
    while todo:
        node, prefix = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if not isinstance(child, ast.ClassDef):
                    yield child, prefix + child.name
                todo.append((child, f"{prefix}{child.name}."))
            else:
                todo.append((child, prefix))


def bodies_in(path: str, text: str) -> list[Body]:
    """The module's function bodies that begin on the line after their signature (which ends
    with `:` there) and end with a line break, in order."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    found = []
    for node, name in functions(tree):
        first = node.body[0]
        decorators = getattr(first, "decorator_list", [])
        top = min([first.lineno] + [d.lineno for d in decorators])  # 1-based
        last = node.end_lineno or top
        if top - 1 < node.lineno or not lines[top - 2].rstrip().endswith(":"):
            continue  # a one-liner, or something between the signature and the body
        if not lines[last - 1].endswith("\n"):
            continue
        found.append(Body(path, name, text, starts[top - 1] - 1, starts[last] - 1))
    return sorted(found, key=lambda body: body.start)


def fits(body: Body) -> bool:
    written = body.written
    return MIN_LINES <= written.count("\n") <= MAX_LINES and MIN_CHARS <= len(written) <= MAX_CHARS


def modules(package: Path) -> list[Path]:
    """A package's modules, tests left out (names.largest's rule), sorted."""
    return [
        path
        for path in sorted(package.rglob("*.py"))
        if "test" not in path.relative_to(package).as_posix()
    ]


def chosen(seed: int = 0, site: Path | None = None) -> list[Body]:
    """Every body the rule chooses (RULE), in its order."""
    site = site or Path(sysconfig.get_paths()["purelib"])
    per_package = []
    for package in sorted(LESS_KNOWN):
        picks = []
        for path in modules(site / package):
            name = path.relative_to(site).as_posix()
            found = [
                body
                for body in bodies_in(name, path.read_text(encoding="utf-8", errors="replace"))
                if fits(body)
            ]
            if found:
                picks.append(random.Random(f"{seed}:{name}").choice(found))
        random.Random(f"{seed}:{package}").shuffle(picks)
        per_package.append(picks)
    most = max((len(picks) for picks in per_package), default=0)
    return [picks[i] for i in range(most) for picks in per_package if i < len(picks)]


def select(order: list[Body], which: str, n: int) -> list[Body]:
    """`--set`: all, choose (the even places of the order) or judge (the odd ones); the first n."""
    split = {"all": order, "choose": order[0::2], "judge": order[1::2]}[which]
    return split[:n]


def offset_at(text: str, position: dict[str, int]) -> int:
    """The offset of an LSP position (UTF-16 characters) in `text`."""
    start = 0
    for _ in range(position["line"]):
        start = text.find("\n", start) + 1
        if start == 0:
            return len(text)
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    at, units = start, 0
    while at < end and units < position["character"]:
        units += utf16_len(text[at])
        at += 1
    return at


def shown_text(doc: Document, item: dict[str, Any]) -> str:
    """What an inline completion item shows after the cursor: its text less what its range
    re-covers before the cursor ("" when it cannot be shown as ghost text there)."""
    text = item.get("insertText")
    if not isinstance(text, str):
        return ""
    where = item.get("range")
    if where is None:
        return text
    start, end = offset_at(doc.text, where["start"]), offset_at(doc.text, where["end"])
    covered = doc.text[start:end]
    if end != doc.cursor or not text.startswith(covered):
        return ""
    return text[len(covered) :]


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of `pid` and its descendants (and their waited-for children)."""
    ticks = 0
    for each in process_tree(pid):
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        ticks += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


@dataclass
class Written:
    """One body written: what was accepted, the pauses, the suggestions, the server's CPU."""

    name: str
    chars: int
    non_blank: int
    accepted: int = 0  # characters inserted by accepts
    accepted_non_blank: int = 0
    whole: int = 0
    partial: int = 0
    keys: int = 0  # keys pressed (characters, Enter, indentation, accepts)
    right: int = 0  # distinct suggestions shown
    wrong: int = 0
    pauses: list[Pause] = field(default_factory=list)
    first_ghost_s: float | None = None  # from the first key
    open_ghost_s: float | None = None  # from didOpen
    read_cpu_s: float = 0.0
    write_cpu_s: float = 0.0
    seconds: float = 0.0  # from the first key to the last
    opened_at: str = ""  # wall clock, as the server's log writes it (to read the two together)
    first_key_at: str = ""
    suggestions: list[dict[str, Any]] = field(default_factory=list)


class Writer:
    """The person at the editor: writes the bodies one file after another through `client`."""

    def __init__(self, client: Client, args: argparse.Namespace, pid: int) -> None:
        self.client, self.args, self.pid = client, args, pid
        self.wake = asyncio.Event()  # an answer changed the screen
        self.asked: dict[int, tuple[Document, int]] = {}  # request id -> (document, version)
        self.doc: Document | None = None
        self.screen = Screen("")
        self.pause: Pause | None = None
        self.result = Written("", 0, 0)
        self.opened = self.first_key = 0.0
        self.command: Any = None  # the shown item's command
        client.on_answer.append(self.answered)

    @staticmethod
    def now() -> float:
        return time.monotonic()

    async def write(self, body: Body) -> Written:
        args, client = self.args, self.client
        written = body.written
        uri = URI_ROOT + body.path
        doc = Document(uri, body.opened, random.Random(0))  # (the soak's buffer: edits, UTF-16)
        doc.text, doc.cursor, doc.plan = body.opened, body.start, ""
        blank = sum(c.isspace() for c in written)
        self.doc, self.screen = doc, Screen(written)
        self.result = result = Written(body.name, len(written), len(written) - blank)
        cpu = cpu_seconds(self.pid)
        self.opened, result.opened_at = self.now(), clock(time.time())
        open_document(client, doc)
        focus: dict[str, Any] = {"textDocument": {"uri": uri}}
        if args.cursor:  # (the cursor put at the signature's end: the extension tells it)
            focus["position"] = doc.position(doc.cursor)
        client.notify("specLsp/didFocus", focus)
        await client.flush(STALL_S)
        await asyncio.sleep(args.read_s)
        read = cpu_seconds(self.pid)
        result.read_cpu_s = read - cpu
        self.first_key = next_at = self.now()
        result.first_key_at = clock(time.time())
        thought: set[int] = set()
        while self.screen.done < len(written):
            self.alive()
            done = self.screen.done
            if line_start(written, done) and done not in thought:
                thought.add(done)
                accepted = await self.think(written.count("\n", 0, done))
                next_at = self.now() + (args.key_ms / 1000 if accepted else 0.0)
                continue
            await asyncio.sleep(max(0.0, next_at - self.now()))
            if not self.accept():
                self.press(next_key(written, done))
            await client.flush(STALL_S)
            next_at = self.now() + args.key_ms / 1000
        result.seconds = self.now() - self.first_key
        if doc.pending is not None:
            client.cancel(doc.pending)
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        await client.flush(STALL_S)
        result.write_cpu_s = cpu_seconds(self.pid) - read
        self.doc = None
        for suggestion in self.screen.suggestions:
            result.right += suggestion.right
            result.wrong += not suggestion.right
            shown = asdict(suggestion)
            shown["shown"] = round(suggestion.shown - self.first_key, 3)  # (from the first key)
            result.suggestions.append(shown)
        for pause in result.pauses:
            pause.start -= self.first_key
        return result

    def alive(self) -> None:
        if self.client.broken:
            raise ConnectionError(self.client.broken)

    async def think(self, line: int) -> bool:
        """The pause before a line's code: the person accepts what is right once it has been
        shown long enough, else types on at its end. Returns whether it ended with an accept."""
        screen, args = self.screen, self.args
        pause = self.pause = Pause(line, self.now())
        self.result.pauses.append(pause)
        if screen.ghost is not None:
            pause.seen(pause.start, screen.right(screen.ghost.text))
        end = pause.start + args.think_s
        try:
            while True:
                now = self.now()
                part = self.acceptable()
                until = end
                if part and screen.ghost is not None:
                    ready = screen.ghost.since + args.accept_after_s
                    if ready <= now:
                        pause.accepted = self.accept()
                        return pause.accepted
                    until = min(end, ready)
                if now >= end:
                    return False
                self.wake.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), until - now)
                self.alive()
        finally:
            self.pause = None

    def acceptable(self) -> str:
        """What the person would accept of the ghost text (Screen.acceptable), unless the next
        key inserts just that: then they type it (one key either way, and typed)."""
        screen = self.screen
        part = screen.acceptable(self.args.partial)
        return "" if part == next_key(screen.body, screen.done) else part

    def accept(self) -> bool:
        """Tab (or a partial accept) if what is on screen, shown long enough, is right."""
        screen, args, doc = self.screen, self.args, self.doc
        ghost = screen.ghost
        if ghost is None or doc is None or self.now() - ghost.since < args.accept_after_s:
            return False
        part = self.acceptable()
        if not part:
            return False
        command = self.command
        whole = screen.accept(part)
        self.result.accepted += len(part)
        self.result.accepted_non_blank += sum(not c.isspace() for c in part)
        self.result.whole += whole
        self.result.partial += not whole
        self.send(doc.edit(doc.cursor, doc.cursor, part))
        if whole and isinstance(command, dict) and command.get("command"):
            # VS Code runs the accepted item's command (the language client: executeCommand)
            params = {"command": command["command"], "arguments": command.get("arguments", [])}
            self.client.request("workspace/executeCommand", params)
        return True

    def press(self, inserted: str) -> None:
        doc = self.doc
        assert doc is not None
        change = doc.edit(doc.cursor, doc.cursor, inserted)
        self.screen.typed(inserted)
        self.send(change)

    def send(self, change: dict[str, Any]) -> None:
        assert self.doc is not None
        self.result.keys += 1
        if self.screen.ghost is None:
            self.command = None
        sent = send_change(self.client, self.doc, [change])
        self.asked[sent] = (self.doc, self.doc.version)

    def answered(self, request: Request, msg: dict[str, Any]) -> None:
        """An answer: shown if it is for the document as it stands (writing_screen)."""
        asked = self.asked.pop(request.id, None)
        if asked is None or request.outcome not in ("items", "empty"):
            return
        doc, version = asked
        if doc is not self.doc or doc.version != version:
            return
        now = self.now()
        items = items_of(msg.get("result"))
        item: dict[str, Any] = items[0] if items and isinstance(items[0], dict) else {}
        text = shown_text(doc, item) if item else ""
        if not text:
            if self.pause is not None and self.screen.ghost is None:
                self.pause.silent(now)
            return
        self.screen.answer(text, now)
        self.command = item.get("command")
        ghost = self.screen.ghost
        if self.pause is not None and ghost is not None:
            self.pause.seen(now, self.screen.right(ghost.text))
        if self.result.first_ghost_s is None:
            self.result.first_ghost_s = now - self.first_key
            self.result.open_ghost_s = now - self.opened
        self.wake.set()


def ratio(part: float, whole: float) -> float:
    return part / whole if whole else math.nan


def median_s(values: list[float | None]) -> float:
    """The median, None counting as infinite (never); nan for no values."""
    if not values:
        return math.nan
    return statistics.median_low([math.inf if v is None else v for v in values])


def _none_by(seconds: float | None) -> bool:
    """Nothing by the last mark of a pause (WITHIN's last)."""
    return seconds is None or seconds > WITHIN[-1]


def totals(files: list[Written]) -> dict[str, Any]:
    pauses = [p for f in files for p in f.pauses]
    chars, non_blank = sum(f.chars for f in files), sum(f.non_blank for f in files)
    cpu = sum(f.read_cpu_s + f.write_cpu_s for f in files)
    return {
        "bodies": len(files),
        "chars": chars,
        "accepted": sum(f.accepted for f in files),
        "completed": ratio(sum(f.accepted for f in files), chars),
        "completed_non_blank": ratio(sum(f.accepted_non_blank for f in files), non_blank),
        "whole": sum(f.whole for f in files),
        "partial": sum(f.partial for f in files),
        "keys": sum(f.keys for f in files),
        "right": sum(f.right for f in files),
        "wrong": sum(f.wrong for f in files),
        "pauses": len(pauses),
        "ghost_within": {
            f"{s:g}": ratio(
                sum(p.ghost_s is not None and p.ghost_s <= s for p in pauses), len(pauses)
            )
            for s in WITHIN
        },
        "right_within": {
            f"{s:g}": ratio(
                sum(p.right_s is not None and p.right_s <= s for p in pauses), len(pauses)
            )
            for s in WITHIN
        },
        # by the last mark, the pauses without ghost text: an answer said nothing (the gate,
        # an empty suggestion), or none had come (the model still at work)
        "silent_by_last": ratio(
            sum(_none_by(p.ghost_s) and not _none_by(p.silent_s) for p in pauses), len(pauses)
        ),
        "unanswered_by_last": ratio(
            sum(_none_by(p.ghost_s) and _none_by(p.silent_s) for p in pauses), len(pauses)
        ),
        "pause_ghost_p50_s": median_s([p.ghost_s for p in pauses]),
        "first_ghost_p50_s": median_s([f.first_ghost_s for f in files]),
        "first_pause_ghost": sum(bool(f.pauses) and f.pauses[0].ghost_s is not None for f in files),
        "cpu_s": cpu,
        "read_cpu_s": sum(f.read_cpu_s for f in files),
        "cpu_ms_per_char": ratio(cpu * 1000, chars),
    }


HEADER = (
    "| body | chars | completed (non-blank) | accepts whole / partial | shown right / wrong "
    "| pauses | ghost by 0.5 / 1.0 / 1.5 s | p50 to ghost s | first ghost s | first pause "
    "| server CPU ms/char |\n|---|---|---|---|---|---|---|---|---|---|---|"
)


def seconds(value: float | None) -> str:
    if value is None or math.isinf(value):
        return "never"
    return "-" if math.isnan(value) else f"{value:.2f}"


def row(name: str, t: dict[str, Any], first_pause: str) -> str:
    within = " / ".join(f"{t['ghost_within'][f'{s:g}']:.0%}" for s in WITHIN)
    return (
        f"| {name} | {t['chars']} | {t['completed']:.0%} ({t['completed_non_blank']:.0%}) "
        f"| {t['whole']} / {t['partial']} | {t['right']} / {t['wrong']} | {t['pauses']} "
        f"| {within} | {seconds(t['pause_ghost_p50_s'])} | {seconds(t['first_ghost_p50_s'])} "
        f"| {first_pause} | {t['cpu_ms_per_char']:.1f} |"
    )


def table(files: list[Written]) -> str:
    lines = [HEADER]
    for f in files:
        first = "-" if not f.pauses else ("yes" if f.pauses[0].ghost_s is not None else "no")
        lines.append(row(f.name, totals([f]), first))
    t = totals(files)
    lines.append(row("**total**", t, f"{t['first_pause_ghost']} of {len(files)}"))
    return "\n".join(lines)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--bodies", type=int, default=40, help="how many bodies (default 40)")
    parser.add_argument(
        "--set",
        choices=("all", "choose", "judge"),
        default="all",
        help="the rule's bodies: all, or the even (choose) / odd (judge) places of its order",
    )
    parser.add_argument("--seed", type=int, default=0, help="the rule's seeded choices")
    parser.add_argument("--read-s", type=float, default=3.0, help="reading after the open")
    parser.add_argument(
        "--no-cursor",
        dest="cursor",
        action="store_false",
        help="the opened file's focus sent without the cursor's position",
    )
    parser.add_argument("--key-ms", type=float, default=120.0, help="time between keys")
    parser.add_argument(
        "--think-s", type=float, default=1.5, help="the pause before each line's code"
    )
    parser.add_argument(
        "--accept-after-s",
        type=float,
        default=0.3,
        help="a right suggestion is accepted once on screen this long",
    )
    parser.add_argument(
        "--partial",
        choices=PARTIAL,
        default="line",
        help="when the whole is not right: accept its next word / line if that is (default line)",
    )
    parser.add_argument("--backend", choices=("llama", "fake"), default="llama")
    parser.add_argument(
        "--model", default=None, help="a GGUF, or a pulled model's name (default: the server's)"
    )
    parser.add_argument("--threads", type=int, default=None, help="the server's threads")
    parser.add_argument(
        "--server-arg",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="an initializationOption, e.g. gateThreshold=0 or precompute=false (repeatable)",
    )
    parser.add_argument("--log-level", default=None, help="the server's --log-level (DEBUG)")
    parser.add_argument("--stderr", default=None, help="the server's log (default bench/out/)")
    parser.add_argument("--json", default=None, metavar="PATH", help="write the results here")
    parser.add_argument("--load-timeout-s", type=float, default=600.0)
    parser.add_argument(
        "--list", action="store_true", help="print the chosen bodies and stop (no server)"
    )
    return parser.parse_args(argv)


def options(args: argparse.Namespace) -> dict[str, Any]:
    """initializationOptions"""
    given: dict[str, Any] = {} if args.threads is None else {"threads": args.threads}
    return {**given, **named_settings(args.server_arg)}


async def run(args: argparse.Namespace, bodies: list[Body]) -> dict[str, Any]:
    """Start the server, write the bodies, stop it; the results (`report`'s input)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    stderr = Path(args.stderr or ROOT / "bench" / "out" / f"writing-{stamp}-{os.getpid()}.log")
    stderr.parent.mkdir(parents=True, exist_ok=True)
    command = server_command(args)
    print(f"server: {' '.join(command)}\nserver log: {stderr}", file=sys.stderr)
    with stderr.open("wb") as err:
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=err,
            limit=2**22,
        )
    client = Client(proc, Ledger(), time.monotonic())
    files: list[Written] = []
    stats: dict[str, Any] = {}
    load = [os.getloadavg()[0]]
    try:
        ready_s = await client.initialize(options(args), args.load_timeout_s)
        print(f"ready in {ready_s:.1f}s", file=sys.stderr)
        writer = Writer(client, args, proc.pid)
        for i, body in enumerate(bodies, 1):
            files.append(await writer.write(body))
            t = totals(files[-1:])
            print(
                f"[{i}/{len(bodies)}] {body.name}: completed {t['completed']:.0%}, "
                f"{t['right']} right / {t['wrong']} wrong shown",
                file=sys.stderr,
                flush=True,
            )
        load.append(os.getloadavg()[0])
        stats = await client.call("specLsp/stats", None, 30)
        await client.call("shutdown", None, 30)
        client.notify("exit", None)
        await asyncio.wait_for(proc.wait(), 30)
    except Exception as exc:
        print(f"FAILED: {exc!r}", *tail(stderr, 30), sep="\n", file=sys.stderr)
        raise
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return {
        "settings": {k: v for k, v in vars(args).items() if k != "list"},
        "rule": RULE,
        "server_options": options(args),
        "server_log": str(stderr),
        "load": load,
        "cpus": os.cpu_count(),
        "files": [asdict(f) for f in files],
        "totals": totals(files),
        "table": table(files),
        "errors": client.ledger.failures(),
        "server": {
            key: stats.get(key)
            for key in (
                "acceptance",
                "gate",
                "shown_why",
                "latency_ms_p50",
                "latency_ms_p95",
                "timing",
                "first_answers",
                "cache_hits",
                "file_prefix",
                "prewarm",
                "server_requests",
                "prompt_tokens_evaluated",
            )
        },
    }


def report(data: dict[str, Any]) -> str:
    args, t = data["settings"], data["totals"]
    model = "fake backend" if args["backend"] == "fake" else (args["model"] or "default model")
    acceptance, gate = data["server"].get("acceptance") or {}, data["server"].get("gate") or {}
    lines = [
        data["table"],
        "",
        f"{model}, {t['bodies']} bodies ({args['set']}, seed {args['seed']}), read "
        f"{args['read_s']:g} s, a key every {args['key_ms']:g} ms, {args['think_s']:g} s "
        f"before each line, accepted after {args['accept_after_s']:g} s, partial "
        f"{args['partial']}; server options {json.dumps(data['server_options'])}",
        f"- completed: {t['accepted']} of {t['chars']} characters ({t['completed']:.1%}; "
        f"non-blank {t['completed_non_blank']:.1%}), {t['keys']} keys pressed",
        "- right ghost text by 0.5 / 1.0 / 1.5 s of a pause: "
        + " / ".join(f"{t['right_within'][f'{s:g}']:.0%}" for s in WITHIN),
        f"- pauses without ghost text by {WITHIN[-1]:g} s: an answer that said nothing (the "
        f"gate, an empty suggestion) {t['silent_by_last']:.0%}, none answered yet "
        f"{t['unanswered_by_last']:.0%}",
        f"- server CPU: {t['cpu_s']:.1f} s ({t['read_cpu_s']:.1f} s of it while reading)",
        f"- server's count: shown {acceptance.get('shown')}, accepted "
        f"{acceptance.get('accepted')}, partial {acceptance.get('partial')}, typed through "
        f"{acceptance.get('typed_through')}, rejected {acceptance.get('rejected')}; gate "
        f"{'on' if gate.get('on') else 'off'} ({gate.get('why') or gate.get('threshold')})",
        f"- machine: {data['cpus']} CPUs, load average (1 min) {data['load'][0]:.1f} at the "
        f"start, {data['load'][-1]:.1f} at the end; server log {data['server_log']}",
    ]
    if data["errors"]:
        lines.append(f"- {len(data['errors'])} requests failed: {data['errors'][:3]}")
    return "\n".join(lines)


def finite(value: Any) -> Any:
    """For JSON: infinite or nan numbers (never, none) as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    bodies = select(chosen(args.seed), args.set, args.bodies)
    if args.list:
        for body in bodies:
            print(f"{body.name}: {body.written.count(chr(10))} lines, {len(body.written)} chars")
        print(f"{len(bodies)} bodies ({RULE})")
        return 0
    data = asyncio.run(run(args, bodies))
    print(report(data))
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        plain = json.loads(json.dumps(finite(data), default=str))
        if path.name.endswith(".gz"):  # (as the other benches save theirs)
            write_results(path, plain)
        else:
            path.write_text(json.dumps(plain, indent=1) + "\n")
        print(f"results written to {args.json}")
    return 1 if data["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
