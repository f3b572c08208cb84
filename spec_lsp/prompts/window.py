"""The token-budgeted window of text around the cursor.

Whole lines, chosen so that the window is stable while the user types: the engine reuses the
KV cache of the previous keystroke's prompt, which only helps if the prompt starts the same.

- Prefix: the cursor's line is always kept (cut from the left only if it alone is over
  budget). Lines above it are added in blocks of SNAP_LINES, whose edges sit at absolute line
  numbers (multiples of SNAP_LINES from the top of the text), so the first kept line is the
  earliest block edge that fits. Typing on a line, or pressing Enter, moves that start only
  when the budget forces it, and then by a whole block. If even the lines between the nearest
  edge and the cursor do not fit, lines are added one by one (tiny budgets only).
- Suffix: the same blocks, counted from the cursor's line downwards, so the window ends on a
  block edge; then line by line, then the head of the first line.
- A line cut to fit is cut at a multiple of CHUNK_CHARS from the line's start, so that typing
  at the end of a huge line keeps the cut where it was.

`count_tokens` may be a real tokenizer: it is called once per block (plus a few times for the
cursor's line), never per character. Sums of block counts stand in for the count of their
concatenation. Text is split at "\\n" only, so "\\r\\n" documents come back as they were.
"""

from __future__ import annotations

from collections.abc import Callable

SNAP_LINES = 16
CHUNK_CHARS = 64
SPLIT_LINES = 8  # lines of the prefix window a keystroke's prompt repeats after the middle

Count = Callable[[str], int]


def window(
    prefix: str,
    suffix: str,
    *,
    count_tokens: Callable[[str], int],
    prefix_budget: int,
    suffix_budget: int,
) -> tuple[str, str]:
    """The end of `prefix` and the start of `suffix` that fit their token budgets."""
    return (
        _prefix_window(prefix, count_tokens, prefix_budget),
        _suffix_window(suffix, count_tokens, suffix_budget),
    )


def suffix_window(suffix: str, *, count_tokens: Callable[[str], int], budget: int) -> str:
    """The start of `suffix` that fits `budget` (the suffix half of `window`)."""
    return _suffix_window(suffix, count_tokens, budget)


def line_offset(text: str, line: int) -> int:
    """Where line `line` (0-based) of `text` starts; len(text) if it has fewer lines."""
    offset = 0
    for _ in range(line):
        nl = text.find("\n", offset)
        if nl < 0:
            return len(text)
        offset = nl + 1
    return offset


def line_chunks(text: str) -> list[str]:
    """`text` cut before each line that holds more than blanks: a line and the blank lines after
    it make one chunk (the first chunk may start with blank lines).

    Tokenized one chunk at a time, text comes out as the tokens of the whole text would for
    tokenizers that split newlines from the next line's indentation (Qwen2, Llama 3) and merge
    runs of blank lines; and a text that starts on a line boundary of another is cut at the same
    places, so its tokens are a prefix of the other's (the file prefix's KV, engine/cache)."""
    chunks: list[str] = []
    start = 0
    at = text.find("\n")
    while at >= 0:
        nxt = text.find("\n", at + 1)
        line = text[at + 1 : len(text) if nxt < 0 else nxt]
        if line.strip():
            chunks.append(text[start : at + 1])
            start = at + 1
        at = nxt
    if start < len(text):
        chunks.append(text[start:])
    return chunks


def _prefix_window(prefix: str, count: Count, budget: int) -> str:
    cut = prefix.rfind("\n") + 1
    current = prefix[cut:]
    used = count(current) if current else 0
    if used > budget:
        return _tail_within(current, count, budget)
    n = prefix.count("\n")  # the cursor's line number = lines above it
    if n == 0:
        return prefix
    starts = _LineStarts(prefix, n)
    edge = (n // SNAP_LINES) * SNAP_LINES  # the nearest block edge at or above the cursor's line
    if edge == n:  # the cursor's line starts a block: the next block up is a whole one
        edge -= SNAP_LINES
    cost = count(prefix[starts.at(edge) : cut])
    if used + cost > budget:  # tiny budget: whole lines nearest the cursor, one by one
        first = n
        while first > edge + 1:
            cost = count(prefix[starts.at(first - 1) : starts.at(first)])
            if used + cost > budget:
                break
            used += cost
            first -= 1
        return prefix[starts.at(first) :]
    used += cost
    first = edge
    while first > 0:
        block = first - SNAP_LINES
        cost = count(prefix[starts.at(block) : starts.at(first)])
        if used + cost > budget:
            break
        used += cost
        first = block
    return prefix[starts.at(first) :]


class _LineStarts:
    """Offsets where lines begin, found from the end on demand (the window is near the end)."""

    def __init__(self, text: str, n: int) -> None:
        self._text = text
        self._found = {n: text.rfind("\n") + 1}
        self._lowest = n

    def at(self, line: int) -> int:
        line = max(line, 0)
        while self._lowest > line:
            end = self._found[self._lowest] - 1  # the newline that ends the line above
            self._lowest -= 1
            self._found[self._lowest] = self._text.rfind("\n", 0, end) + 1
        return self._found[line]


def _suffix_window(suffix: str, count: Count, budget: int) -> str:
    if budget <= 0 or not suffix:
        return ""
    end = _line_end(suffix, 0)
    used = count(suffix[:end])
    if used > budget:  # the rest of the cursor's line alone is over budget
        return _head_within(suffix[:end], count, budget)
    # The first block: the cursor's line and the SNAP_LINES - 1 lines below it.
    block_end = _lines_end(suffix, end, SNAP_LINES - 1)
    cost = count(suffix[end:block_end]) if block_end > end else 0
    if used + cost > budget:
        while end < len(suffix):
            nxt = _line_end(suffix, end)
            cost = count(suffix[end:nxt])
            if used + cost > budget:
                break
            used += cost
            end = nxt
        return suffix[:end]
    used, end = used + cost, block_end
    while end < len(suffix):
        block_end = _lines_end(suffix, end, SNAP_LINES)
        cost = count(suffix[end:block_end])
        if used + cost > budget:
            break
        used, end = used + cost, block_end
    return suffix[:end]


def _line_end(text: str, start: int) -> int:
    """The offset just after the line that begins at `start` (its newline included)."""
    nl = text.find("\n", start)
    return len(text) if nl < 0 else nl + 1


def _lines_end(text: str, start: int, lines: int) -> int:
    end = start
    for _ in range(lines):
        if end >= len(text):
            break
        end = _line_end(text, end)
    return end


def _tail_within(line: str, count: Count, budget: int) -> str:
    """The longest end of `line` within budget, starting at a multiple of CHUNK_CHARS (so the
    cut stays put while typing at the end), or at any character if no such end fits."""
    if budget <= 0:
        return ""
    chunks = (len(line) - 1) // CHUNK_CHARS  # the last chunk edge before the end
    lo, hi = 0, chunks + 1  # search the first fitting edge in [lo, hi); hi = "none fits"
    while lo < hi:
        mid = (lo + hi) // 2
        if count(line[mid * CHUNK_CHARS :]) <= budget:
            hi = mid
        else:
            lo = mid + 1
    if lo <= chunks:
        return line[lo * CHUNK_CHARS :]
    lo, hi = chunks * CHUNK_CHARS + 1, len(line)  # inside the last chunk, any character
    while lo < hi:
        mid = (lo + hi) // 2
        if count(line[mid:]) <= budget:
            hi = mid
        else:
            lo = mid + 1
    return line[lo:]


def _head_within(line: str, count: Count, budget: int) -> str:
    """The longest start of `line` within budget, ending at a multiple of CHUNK_CHARS (or at
    any character if not even the first chunk fits)."""
    chunks = len(line) // CHUNK_CHARS
    lo, hi = 0, chunks  # the last fitting edge in [lo, hi]; 0 chars always fit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(line[: mid * CHUNK_CHARS]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    if lo > 0:
        return line[: lo * CHUNK_CHARS]
    lo, hi = 0, min(len(line), CHUNK_CHARS)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(line[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return line[:lo]


def split_for_typing(
    prefix: str, *, lines_before: int, every: int = SPLIT_LINES
) -> tuple[str, str]:
    """Split the prefix window so that typing is an append to the prompt.

    The FIM prompt is prefix-block, suffix, then the middle. The last few lines before the cursor
    (the cursor's line and up to `every - 1` lines above, counted from absolute line numbers so
    the split stays put while typing) go after the middle token, as if the model had written
    them. A keystroke then appends to the prompt instead of invalidating the suffix block; the
    block is re-evaluated once every `every` lines. (Suffix-first order would also make typing
    an append, but Qwen2.5-Coder does not understand it; see research/fim_layout.md.)
    """
    keep = lines_before % every  # whole lines after the split, before the cursor's line
    cut = len(prefix)
    for _ in range(keep + 1):
        cut = prefix.rfind("\n", 0, cut)
        if cut < 0:
            return "", prefix
    return prefix[: cut + 1], prefix[cut + 1 :]
