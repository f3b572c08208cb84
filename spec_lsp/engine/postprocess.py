"""From the model's raw continuation to the ghost text shown.

Single-line mid-line, multi-line at an empty line or an empty block; stop where the suffix
continues or the block ends; never repeat what already follows the cursor; trim trailing space.
"""

from __future__ import annotations

BLOCK_OPENERS = (":", "{", "(", "[", "=>", "->", "do", "then")


def _current_line_before(prefix: str) -> str:
    return prefix[prefix.rfind("\n") + 1 :]


def _rest_of_line(suffix: str) -> str:
    end = suffix.find("\n")
    return (suffix if end < 0 else suffix[:end]).rstrip("\r")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def decide_multiline(prefix: str, suffix: str, setting: str = "auto") -> bool:
    if setting in ("always", "never"):
        return setting == "always"
    if _rest_of_line(suffix).strip():
        return False  # mid-line: complete this line only
    before = _current_line_before(prefix).rstrip("\r")
    if not before.strip():
        return True  # an empty line: a block may follow
    return before.rstrip().endswith(BLOCK_OPENERS)


def _first_suffix_line(suffix: str) -> str:
    for line in suffix.split("\n")[1:]:
        if line.strip():
            return line.strip()
    return ""


def _cut_lines(raw: str, prefix: str, suffix: str) -> list[str]:
    """The generated lines up to where the suffix continues or the block ends."""
    lines = raw.replace("\r\n", "\n").split("\n")
    current = _current_line_before(prefix)
    base = _indent(current) if current.strip() else len(current)
    stop_line = _first_suffix_line(suffix)
    kept = [lines[0]]
    blank_run = 0
    for line in lines[1:]:
        if line.strip() and stop_line and line.strip() == stop_line:
            break
        if line.strip() and _indent(line) < base:
            break  # less indented than the cursor's block: it belongs outside the completion
        blank_run = blank_run + 1 if not line.strip() else 0
        if blank_run >= 2:
            break
        kept.append(line)
    while len(kept) > 1 and not kept[-1].strip():
        kept.pop()
    return kept


def postprocess(raw: str, *, prefix: str, suffix: str, multiline: bool) -> str:
    if not raw.strip():
        return ""
    if multiline:
        lines = _cut_lines(raw, prefix, suffix)
    else:
        lines = [raw.replace("\r\n", "\n").split("\n")[0]]
    lines = [line.rstrip() for line in lines]
    text = "\n".join(lines).rstrip()
    rest = _rest_of_line(suffix).strip()
    if rest and not multiline:
        text = _drop_overlap(text, rest)
    if prefix.endswith(("\r\n",)) or "\r\n" in prefix[-200:]:
        text = text.replace("\n", "\r\n")
    return text if text.strip() else ""


def _drop_overlap(text: str, rest: str) -> str:
    """If the completion ends with what already follows the cursor, drop that part."""
    for n in range(min(len(rest), len(text)), 0, -1):
        if text.endswith(rest[:n]) and (n == len(rest) or not rest[:n].isalnum()):
            return text[: len(text) - n].rstrip() if n == len(rest) else text[: len(text) - n]
    return text


def stop_reached(text_so_far: str, *, prefix: str, suffix: str, multiline: bool) -> bool:
    """True once generating more cannot change `postprocess`'s result (checked between rounds)."""
    text = text_so_far.replace("\r\n", "\n")
    if not multiline:
        return "\n" in text and bool(text.split("\n")[0].strip() or text.strip())
    if "\n" not in text:
        return False
    complete_lines = text.split("\n")[:-1]  # the last line may still grow
    kept = _cut_lines("\n".join(complete_lines) + "\n", prefix, suffix)
    # stopped early if a complete line after the kept ones was rejected
    return len(kept) < len(complete_lines) and any(
        line.strip() for line in complete_lines[len(kept) :]
    )
