"""From the model's raw continuation to the ghost text shown.

Single-line mid-line or after text; multi-line at an empty line or after a block opener. A
multi-line completion ends where the suffix continues, where the code leaves the cursor's
block, or at two blank lines. Text that already follows the cursor is never repeated, every
line loses its trailing blanks, the model's indentation is kept, and CRLF documents get CRLF.

`stop_reached` runs the same line scan as `postprocess` on the text generated so far, treating
its last line as unfinished, so once it says stop, more text cannot change the result.

`Shaping` is all of it for one request: the cursor's context read once, the stop rule the decode
loop (or a stream) asks between rounds, and the text shown.
"""

from __future__ import annotations

from dataclasses import dataclass

from spec_lsp.engine.types import CompletionRequest

BLOCK_OPENERS = (":", "{", "(", "[", "=>")
BLANKS = " \t\r\f\v"
CLOSERS = ")]}"
CLOSING_TAIL = ")]};,"  # what a closing-bracket line is made of


@dataclass(frozen=True)
class _Context:
    prefix: str
    start: int  # where the cursor's line begins in the prefix
    head: str  # the cursor's line before the cursor
    rest: str  # the cursor's line after the cursor
    next_line: str  # the first non-blank line below the cursor's, "" if none
    crlf: bool


def _context(prefix: str, suffix: str) -> _Context:
    start = prefix.rfind("\n") + 1
    end = suffix.find("\n")
    rest = suffix if end < 0 else suffix[:end]
    next_line = ""
    at = end + 1 if end >= 0 else len(suffix)
    while at < len(suffix) and not next_line:
        stop = suffix.find("\n", at)
        stop = len(suffix) if stop < 0 else stop
        next_line, at = suffix[at:stop].rstrip(BLANKS), stop + 1
    if start:
        crlf = prefix[start - 2 : start] == "\r\n"
    else:
        crlf = end > 0 and suffix[end - 1] == "\r"
    head = prefix[start:].rstrip("\r")
    return _Context(prefix, start, head, rest.rstrip("\r"), next_line, crlf)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _blank(line: str) -> bool:
    return not line.strip(BLANKS)


def decide_multiline(prefix: str, suffix: str, setting: str = "auto") -> bool:
    """Multi-line at an empty line or right after a block opener; single-line mid-line."""
    return _decide(_context(prefix, suffix), setting)


def _decide(ctx: _Context, setting: str) -> bool:
    if setting in ("always", "never"):
        return setting == "always"
    if not _blank(ctx.rest):
        return False  # text after the cursor: complete this line only
    head = ctx.head.rstrip(BLANKS)
    return not head or head.endswith(BLOCK_OPENERS)


class Shaping:
    """Post-processing for one request, its cursor's context read once: whether it is
    multi-line (the request says, else the `multiline` setting decides), when its generation
    may stop, and what of the generated text is shown."""

    def __init__(
        self, request: CompletionRequest, setting: str = "auto", lookahead: int = 0
    ) -> None:
        self._ctx = _context(request.prefix, request.suffix)
        self.stops = request.stop
        self.multiline = (
            request.multiline if request.multiline is not None else _decide(self._ctx, setting)
        )
        # a single line at the end of the cursor's line: the generation goes on to the end of
        # the `lookahead` lines after it, which are not shown. Once the person has typed the
        # line as suggested and pressed Enter, the next line's suggestion is there (in flight,
        # or in the suggestion cache by its raw text) instead of a decode begun in their pause.
        self.lookahead = lookahead if not self.multiline and _blank(self._ctx.rest) else 0

    def stop_reached(self, generated: str) -> bool:
        """Once a stop string appears, or more text cannot change what is shown (with the
        lookahead: once the line after it is complete too)."""
        if any(stop in generated for stop in self.stops):
            return True
        lines = _lines(generated)
        if self.lookahead:
            return len(lines) > self.lookahead + 1
        return _scan(lines, self._ctx, multiline=self.multiline, finished=False)[1]

    def shown(self, generated: str) -> tuple[str, str]:
        """(raw, shown): the text cut at the request's stop strings, and post-processed."""
        raw = cut_at_stop_strings(generated, self.stops)
        return raw, _postprocess(raw, self._ctx, self.multiline)


def postprocess(raw: str, *, prefix: str, suffix: str, multiline: bool) -> str:
    """The ghost text for `raw` at the cursor between `prefix` and `suffix` ("" for nothing)."""
    return _postprocess(raw, _context(prefix, suffix), multiline)


def _postprocess(raw: str, ctx: _Context, multiline: bool) -> str:
    lines, _ = _scan(_lines(raw), ctx, multiline=multiline, finished=True)
    lines = [line.rstrip(BLANKS) for line in lines]
    while len(lines) > 1 and not lines[-1]:
        lines.pop()
    text = _drop_rest_of_line("\n".join(lines), ctx)
    if not text.strip():  # blanks and line breaks alone are no suggestion
        return ""
    return text.replace("\n", "\r\n") if ctx.crlf else text


def stop_reached(text_so_far: str, *, prefix: str, suffix: str, multiline: bool) -> bool:
    """True once generating more cannot change what `postprocess` makes of the text.

    Cheap enough for the decode loop to call between rounds."""
    ctx = _context(prefix, suffix)
    return _scan(_lines(text_so_far), ctx, multiline=multiline, finished=False)[1]


def _lines(raw: str) -> list[str]:
    """Lines split at CRLF, LF or a lone CR (LSP's line breaks). Appending text only appends to
    these lines: a CR at the end already ends its line, and an LF after it adds nothing."""
    return raw.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _scan(
    lines: list[str], ctx: _Context, *, multiline: bool, finished: bool
) -> tuple[list[str], bool]:
    """The generated lines to keep, and whether a stop was found.

    Unless `finished`, the last line may still grow: a stop is then decided only by what more
    text cannot change (a whole line, or the indentation of a line that has begun)."""
    if not multiline:
        return lines[:1], len(lines) > 1
    complete = len(lines) if finished else len(lines) - 1
    block = _BlockTracker(ctx)
    blank_run = 0
    for i, line in enumerate(lines):
        whole = i < complete
        full = ctx.head + line if i == 0 else line
        if whole and ctx.next_line and not _blank(line) and full.rstrip(BLANKS) == ctx.next_line:
            return lines[:i], True  # the suffix continues here: don't repeat it
        if i > 0 and not _blank(line):
            blank_run = 0
            verdict = block.verdict(line)
            if verdict == "outside":
                return lines[:i], True
            if verdict == "closer":  # a closing bracket at the opener's level ends the block
                return lines[: i + 1], whole
        elif i == 0 and not _blank(full):
            block.first_line(full)
        elif i > 0 and whole:
            blank_run += 1
            if blank_run >= 2:
                return lines[:i], True
    return lines, False


class _BlockTracker:
    """Where the completion's block is: lines less indented than it are outside of it.

    On an empty line the block is that of the first line written (after `def f():` and an
    empty line at column 0, the body's indentation). After code (`if x:`, `foo(`) the block is
    the opener's, or deeper if the next line is indented further. A closing-bracket line back
    at the opener's indentation still belongs to the completion, and ends it."""

    def __init__(self, ctx: _Context) -> None:
        self.ctx = ctx
        self.head_indent = None if _blank(ctx.head) else _indent(ctx.head)
        self.level: int | None = None

    def first_line(self, full: str) -> None:
        if self.head_indent is None:
            self.level = _indent(full)

    def verdict(self, line: str) -> str:
        indent = _indent(line)
        if self.level is None:
            self.level = max(indent, self.head_indent or 0)
        if indent >= self.level:
            return "inside"
        body = line.strip(BLANKS)
        closing = body[0] in CLOSERS and all(c in CLOSING_TAIL for c in body)
        return "closer" if closing and indent == self._opener_indent() else "outside"

    def _opener_indent(self) -> int | None:
        """The indentation of the line that opened the block: the cursor's own, or the
        nearest line above that is less indented than the block."""
        if self.head_indent is not None:
            return self.head_indent
        prefix, end = self.ctx.prefix, self.ctx.start - 1
        for _ in range(200):  # lines above the cursor's, nearest first
            if end < 0:
                break
            begin = prefix.rfind("\n", 0, end) + 1
            line = prefix[begin:end]
            if not _blank(line) and _indent(line) < (self.level or 0):
                return _indent(line)
            end = begin - 1
        return None


def _drop_rest_of_line(text: str, ctx: _Context) -> str:
    """If the completion ends with what already follows the cursor, leave that part out.

    The whole rest of the line (`x + 1` after writing `x + 1`), or its start when that is
    closing punctuation (the `)` of `):`): the editor shows the ghost text before it. Brackets
    decide when it is unclear: `print(` + `f(x)` keeps its `)`, `print(` + `x)` loses it."""
    rest = ctx.rest.strip(BLANKS)
    if not rest or not text:
        return text

    def imbalance(completion: str) -> int:
        line = ctx.head + completion + ctx.rest
        pairs = sum(abs(line.count(a) - line.count(b)) for a, b in ("()", "[]", "{}"))
        return pairs + sum(line.count(q) % 2 for q in "\"'`")

    kept = imbalance(text)
    for whole in dict.fromkeys((ctx.rest.rstrip(BLANKS), rest)):  # with its leading blanks first
        if text.endswith(whole) and imbalance(text[: -len(whole)]) <= kept:
            return text[: -len(whole)]
    for n in range(min(len(rest), len(text)) - 1, 0, -1):
        if text.endswith(rest[:n]) and imbalance(text[:-n]) < kept:
            return text[:-n]
    return text


def cut_at_stop_strings(text: str, stops: tuple[str, ...]) -> str:
    """The text before the first of the request's stop strings."""
    cut = min((text.find(s) for s in stops if s and s in text), default=-1)
    return text if cut < 0 else text[:cut]
