"""Typing replays for the confidence gate: a simulated person writes a few lines of a real
module, pausing where people pause, and takes or leaves what is shown, so that the gate's
history features (what the person did with the last suggestion here) get data.

The region: LINES lines of a standard-library module from a seeded start line that the
held-out-line rule admits (fim_quality.candidate_lines), none of them a docstring's quotes; the
text below the region stays in the file (the person writes in the middle of it). The person
types each line from its indentation and pauses at its start and after some of its separators
(`PAUSE_AFTER`, at most MID_PAUSES per line, seeded, not in the last 3 characters). At each
pause an Automatic request (one line) goes to the engine in process, with its caches on as
while typing; what it shows is judged as the gate bench judges it (gate.good): a suggestion that
begins what the person was about to type is accepted (Tab, the cursor after it), else one whose
first word does is accepted in part (a word), else it is rejected (they type on). Each pause
records what the gate reads, and the outcome of the last suggestion in the document.
"""

from __future__ import annotations

import random
import re
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import log
from bench.fim_quality import candidate_lines
from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, CompletionRequest, Engine, build_engine
from spec_lsp.engine.toolkit import confidence

LINES = 6  # lines typed per module
MID_PAUSES = 3  # pauses inside a line, at most (besides its start)
PAUSE_AFTER = " (.=,["  # a person pauses after these, if at all


def loaded(settings: Settings, backend: str = "llama") -> Engine:
    """The engine, loaded, computing its tokens' probabilities whatever gate weights are
    stored for its model (none yet: the bench is what fits them)."""
    engine = build_engine(settings, backend=backend)
    engine.load()
    engine.parts.set_gate(engine.gate or confidence.SHIPPED)
    return engine


@dataclass(frozen=True)
class Region:
    module: str
    before: str  # the file above the region
    typed: str  # the region's lines, without the last line break
    after: str  # the line break ending the region and the file below it


def regions(modules: list[str], lines: int = LINES, seed: int = 0) -> list[Region]:
    """One region of `lines` lines per module, from a seeded start the line rule admits."""
    root = Path(sysconfig.get_paths()["stdlib"])
    rng = random.Random(seed)
    found = []
    for name in modules:
        text = (root / name).read_text().splitlines(keepends=True)
        starts = [
            i
            for i in candidate_lines(text)
            if i + lines < len(text) and not any('"""' in line for line in text[i : i + lines])
        ]
        start = rng.choice(starts)
        typed = "".join(text[start : start + lines])
        found.append(
            Region(name, "".join(text[:start]), typed[:-1], "\n" + "".join(text[start + lines :]))
        )
    return found


def pauses(typed: str, rng: random.Random) -> list[int]:
    """Where in `typed` the person pauses: each non-blank line's start (after its indentation)
    and at most MID_PAUSES seeded places after a separator, 3 characters or more before its
    end."""
    found, offset = [], 0
    for line in typed.split("\n"):
        body = line.lstrip()
        if body:
            start = offset + len(line) - len(body)
            mids = [
                start + i + 1
                for i, ch in enumerate(body[:-3])
                if ch in PAUSE_AFTER and body[i + 1 : i + 2] != " "
            ]
            found += [start, *sorted(rng.sample(mids, min(MID_PAUSES, len(mids))))]
        offset += len(line) + 1
    return found


def outcome(text: str, expected: str, at_start: bool) -> tuple[str, int]:
    """What the person does with `text` shown where `expected` is the rest of the line they
    are writing: (accepted | partial | rejected, characters taken)."""
    first = text.split("\n", 1)[0].rstrip()
    if at_start:
        first = first.lstrip()  # (the indentation is typed: an answer repeating it is taken)
    if first.strip() and expected.startswith(first):
        return "accepted", len(first)
    words = [m.end() for m in re.finditer(r"\s*\S+", first)][:-1]  # (the whole excluded)
    word = first[: words[0]].lstrip() if words else ""
    if word.strip() and expected.startswith(word):
        return "partial", len(word)
    return "rejected", 0


def replay(
    chosen: list[Region],
    settings: Settings,
    seed: int = 0,
    key: str = "replay",
    backend: str = "llama",
) -> list[dict[str, Any]]:
    """Each region typed by the simulated person; a row per pause with a suggestion (the
    gate bench's row, with the last outcome in the document before it and its own)."""
    engine = loaded(settings, backend)
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    try:
        for region in chosen:
            cursor, last = 0, None
            line_ends = [i for i, ch in enumerate(region.typed) if ch == "\n"]
            for at in pauses(region.typed, rng):
                if at < cursor:  # (inside text the person took)
                    continue
                cursor = at
                end = next((e for e in line_ends if e >= at), len(region.typed))
                expected = region.typed[at:end]
                start = not region.typed[region.typed.rfind("\n", 0, at) + 1 : at].strip()
                prefix = region.before + region.typed[:at]
                request = CompletionRequest(
                    prefix=prefix,
                    suffix=region.after,
                    document_id=f"bench://{key}/{region.module}",
                    file_name=region.module,
                    language="python",
                    max_tokens=48,
                    multiline=False,
                )
                began = time.perf_counter()
                completion = engine.complete(request, CancelToken())
                seconds = time.perf_counter() - began
                if not completion.text.strip():
                    continue  # (nothing shown: nothing to judge, the last outcome stands)
                what, taken = outcome(completion.text, expected, start)
                rows.append(
                    {
                        "module": region.module,
                        "kind": "start" if start else "typing",
                        "expected": expected,
                        "before": prefix[-2000:],
                        "after": region.after[:200],
                        "text": completion.text,
                        "raw": completion.raw_text,
                        "logprobs": completion.stats.token_logprobs,
                        "good": what == "accepted",
                        "exact": completion.text.strip() == expected.strip(),
                        "seconds": seconds,
                        "last": last,
                        "outcome": what,
                    }
                )
                log(f"{len(rows):4d} {region.module} {what:8s} last={last} {expected[:40]!r}")
                last, cursor = what, cursor + taken
    finally:
        engine.close()
    return rows
