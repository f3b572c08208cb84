"""Outlines: a definition or a file with bodies elided (`...`), heads kept (signatures, a
class's fields, its methods' heads), for when the whole does not fit."""

from __future__ import annotations

from collections.abc import Sequence

from spec_lsp.engine.context.source import Lines, Variant, overlaps
from spec_lsp.engine.context.symbols import is_function
from spec_lsp.engine.context.types import Definition

MAX_DEFINITION_LINES = 60  # longer: its outline
OUTLINE_LINES = 40  # an outline's lines, at most
OUTLINE_HEAD_LINES = 12  # a class's lines before its first method kept in its outline
ELIDED = "..."


def outline(
    lines: list[str], definition: Definition, members: Sequence[Definition]
) -> tuple[str, list[tuple[int, int]]]:
    """A definition with bodies elided (`...`): its head (with, for a class, what stands before
    its first member: fields, docstring; OUTLINE_HEAD_LINES at most), each member's head, and
    its last line where that only closes it (`}`). About OUTLINE_LINES lines at most.
    Returns the text and the lines it shows."""
    d = definition
    first_member = members[0].start_line if members else d.end_line
    head_end = max(d.head_end, min(first_member, d.start_line + OUTLINE_HEAD_LINES))
    head_end = min(head_end if members else d.head_end, d.start_line + OUTLINE_LINES // 2)
    out = lines[d.start_line : head_end]
    shown = [(d.start_line, head_end)]
    if head_end < first_member:
        out.append(indent_of(lines, head_end, d.start_line) + ELIDED)
    for member in members:
        if len(out) >= OUTLINE_LINES:
            out.append(indent_of(lines, member.start_line, d.start_line) + ELIDED)
            break
        head(lines, member, out, shown)
    last = d.end_line - 1
    if last >= max(e for _, e in shown) and lines[last].strip().startswith("}"):
        out.append(lines[last])
        shown.append((last, last + 1))
    return "\n".join(out), shown


def head(lines: list[str], d: Definition, out: list[str], shown: Lines) -> None:
    """A definition's head (its signature: a few lines at most), its body elided."""
    end = min(d.head_end, d.start_line + OUTLINE_HEAD_LINES // 2)
    out.extend(lines[d.start_line : end])
    shown.append((d.start_line, end))
    if end < d.end_line:
        out.append(indent_of(lines, end, d.start_line) + ELIDED)


def indent_of(lines: list[str], number: int, fallback: int) -> str:
    """The indentation of line `number` (a body's first), else one deeper than `fallback`'s."""
    text = lines[number] if 0 <= number < len(lines) else ""
    if not text.strip():
        text = lines[fallback] if 0 <= fallback < len(lines) else ""
        return text[: len(text) - len(text.lstrip())] + "    "
    return text[: len(text) - len(text.lstrip())]


def members_of(definitions: Sequence[Definition], owner: Definition) -> list[Definition]:
    return [
        d
        for d in definitions
        if d.parent == owner.name
        and owner.start_line <= d.start_line < owner.end_line
        and d is not owner
    ]


def definition_variants(
    lines: list[str], d: Definition, all_defs: Sequence[Definition]
) -> list[Variant]:
    """A definition whole, else its outline, else its head (where they differ)."""
    variants: list[Variant] = []
    members = [] if is_function(d.kind) else members_of(all_defs, d)
    if d.end_line - d.start_line <= MAX_DEFINITION_LINES:
        text = "\n".join(lines[d.start_line : d.end_line])
        variants.append((d.start_line, d.end_line, text, [(d.start_line, d.end_line)]))
    if members or d.end_line - d.start_line > MAX_DEFINITION_LINES:
        text, shows = outline(lines, d, members)
        variants.append((d.start_line, d.end_line, text, shows))
    head_end = min(d.head_end, d.start_line + OUTLINE_LINES // 2)
    head_text = "\n".join(lines[d.start_line : head_end])
    variants.append((d.start_line, d.end_line, head_text, [(d.start_line, head_end)]))
    return [v for i, v in enumerate(variants) if all(v[2] != w[2] for w in variants[:i])]


def module_outline(lines: list[str], defs: Sequence[Definition], taken: Lines) -> list[Variant]:
    """A file's top-level definitions, heads only (a class with its methods' heads), but those
    shown already."""
    out: list[str] = []
    shown: Lines = []
    for d in defs:
        if d.parent or len(out) >= OUTLINE_LINES or overlaps([(d.start_line, d.end_line)], taken):
            continue
        members = [] if is_function(d.kind) else members_of(defs, d)
        if members:
            text, parts = outline(lines, d, members)
            out.extend(text.split("\n"))
            shown.extend(parts)
            continue
        head(lines, d, out, shown)
    if not defs:  # a language without a grammar here: its first lines
        end = min(len(lines), OUTLINE_LINES // 2)
        out, shown = lines[:end], [(0, end)]
    if not shown:
        return []
    return [(shown[0][0], shown[-1][1], "\n".join(out[: OUTLINE_LINES + 1]), shown)]
