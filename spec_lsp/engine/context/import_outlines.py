"""Source 2: the files the current one imports, as outlines (their top-level signatures): first
those of the names about to be used, then those whose names are used nearest the cursor."""

from __future__ import annotations

import functools
from collections.abc import Iterator

from spec_lsp.engine.context.imports import Import
from spec_lsp.engine.context.outline import module_outline
from spec_lsp.engine.context.source import Candidate, Place

FAR = 1 << 20  # the distance of an import none of whose names is used near the cursor


def candidates(place: Place) -> Iterator[Candidate]:
    uses = place.near[0]

    def nearest(entry: Import) -> tuple[int, int]:
        if place.soon & set(entry.names):
            return (-1, entry.line)
        distances = [uses[n].distance for n in [*entry.names, entry.alias] if n in uses]
        if entry.alias:
            distances += [u.distance for u in uses.values() if entry.alias in u.receivers]
        return (min(distances) if distances else FAR, entry.line)

    for entry in sorted(place.imported.all, key=nearest):
        target = entry.paths[0]
        parsed = place.index.text(target)
        defs = place.index.definitions(target) if parsed is not None else ()
        parsed = parsed if parsed is not None else place.text_of(target)
        if target == place.path or parsed is None:
            continue
        distance = nearest(entry)[0]
        score = 1.0 / (1 + max(0, distance)) if distance < FAR else 0.0
        outline = functools.partial(module_outline, parsed.split("\n"), defs)
        yield Candidate(target, f"import:{entry.module}", score, outline, distance < 0)
