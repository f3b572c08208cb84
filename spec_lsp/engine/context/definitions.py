"""Source 1: definitions, in other files, of the names the current file uses near the cursor and
of those it imports and does not use yet; where its imports say, else anywhere (unless that is
too many places to choose from)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from spec_lsp.engine.context.imported_names import UNUSED_FIRST
from spec_lsp.engine.context.imports import names_module, shared_folders
from spec_lsp.engine.context.near_names import Use
from spec_lsp.engine.context.outline import definition_variants
from spec_lsp.engine.context.source import Candidate, Place, fixed
from spec_lsp.engine.context.types import Definition

AMBIGUOUS = 3  # a name defined in more places than this, no import saying which: passed over
PER_NAME = 2  # definitions shown for one name, at most
# Methods of the builtin types: `x.get(...)` is far more often a dict's than a definition
# elsewhere of a member named `get` (a name used only as an attribute, no import saying whose)
COMMON_MEMBERS = {
    name
    for kind in (dict, list, str, bytes, set, int, float, object, tuple, frozenset, BaseException)
    for name in dir(kind)
} | set(
    "push pop shift map filter reduce forEach some every find includes indexOf slice splice then"
    " catch finally length size toString equals hashCode close read write open run start stop"
    " send next close flush seek tell emit log debug info warning error exception".split()
)
# `self.name = ...`, `self.a, self.b = ...`: attributes of the current file's class (not
# another file's definitions)
SELF_ASSIGNMENT = re.compile(r"^[ \t]*\(?((?:self|this|cls)\.[^=\n]*?)[-+*/%&|^@]?=(?!=)", re.M)
SELF_ATTRIBUTE = re.compile(r"\b(?:self|this|cls)\.([^\W\d]\w*)")


def candidates(place: Place) -> Iterator[Candidate]:
    """Definitions of the names imported and unused (the first few), of the names used near
    the cursor (nearest first), then of the other unused ones. Not of the names the current
    file binds (its definitions, the parameters and locals around the cursor, its `self.x`)."""
    uses, local = place.near
    found, unused = place.imported, place.unused
    assigned = {
        n for m in SELF_ASSIGNMENT.finditer(place.text) for n in SELF_ATTRIBUTE.findall(m[1])
    }
    local = local | found.bound | assigned
    ordered = sorted(
        (u for u in uses.values() if u.name not in local or u.name in found.by_name),
        key=lambda u: (u.distance, u.name),
    )
    seen: set[tuple[str, int]] = set()
    for number, use in enumerate([*unused[:UNUSED_FIRST], *ordered, *unused[UNUSED_FIRST:]]):
        about_to_be = use.distance < 0 and number < UNUSED_FIRST
        score = 1.0 / (1 + max(0, use.distance)) if use.distance >= 0 or about_to_be else 0.0
        for path, d in where_defined(use, place):
            parsed = place.index.text(path)
            if (path, d.start_line) in seen or parsed is None:
                continue
            seen.add((path, d.start_line))
            variants = definition_variants(parsed.split("\n"), d, place.index.definitions(path))
            yield Candidate(path, f"definition:{use.name}", score, fixed(*variants), about_to_be)


def where_defined(use: Use, place: Place) -> list[tuple[str, Definition]]:
    """Where the name is defined, as the current file's imports say, else anywhere (unless that
    is too many places to choose from)."""
    index, found = place.index, place.imported
    unresolved = ""  # the module of a name imported from one that resolves to no known file
    if use.name in found.by_name:  # from m import name
        entry, original = found.by_name[use.name]
        hits = [(p, d) for p, d in index.lookup(original) if p in entry.paths and not d.parent]
        if hits:
            return hits[:PER_NAME]
        if not entry.paths:  # m resolves to no known file: the name, where m may be
            use, unresolved = Use(original, use.distance, True, use.receivers), entry.module
    for receiver in sorted(use.receivers):  # m.name, m imported
        module = found.by_alias.get(receiver)
        if module is not None:
            hits = [(p, d) for p, d in index.lookup(use.name) if p in module.paths and not d.parent]
            if hits:
                return hits[:PER_NAME]
    everywhere = [(p, d) for p, d in index.lookup(use.name) if p != place.path]
    if use.bare:  # a bare name: a top-level definition (else a member: a class attribute...)
        top = [(p, d) for p, d in everywhere if not d.parent]
        everywhere = top or everywhere
    elif use.name in COMMON_MEMBERS:
        return []
    else:  # only `x.name`, x no module imported: a member (a method, a field)
        everywhere = [(p, d) for p, d in everywhere if d.parent]
    starred = [(p, d) for p, d in everywhere if p in found.star_paths]
    if starred:
        return starred[:PER_NAME]
    if len(everywhere) > AMBIGUOUS:
        return []
    if unresolved:  # (`from requests import Session`: no class Session of an unrelated file)
        everywhere = [(p, d) for p, d in everywhere if names_module(unresolved, p)]
    return sorted(
        everywhere,
        key=lambda pd: (
            pd[0] not in place.open_documents,
            -shared_folders(pd[0], place.path),
            pd[0],
            pd[1].start_line,
        ),
    )[:PER_NAME]
