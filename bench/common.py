"""What every benchmark shares: the prompts and temperatures, the Run record, the schedule that
pairs runs with plain decoding and the precision rule for extra pairs, ratios and rates, the
same-text check, raw results (gzip-compressed JSON), logging and the repository root.

What runs and how it is read; making the timed runs (CPU steal, re-runs) is `timing`'s.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from spec_lsp.config import Settings

# Installed packages (the server's, its tests' and its remote engine's dependencies) that are not
# among PyPI's most downloaded, such as httpx, click, jinja2, requests, numpy, pydantic or
# pytest, whose code the model has likely seen many times
LESS_KNOWN = [
    "lsprotocol",
    "pygls",
    "pytest_lsp",
    "cattrs",
    "anyio",
    "h11",
    "httpcore",
    "pydantic_settings",
    "pathspec",
    "diskcache",
    "pynvim",
    "gguf",
    "hypothesis",
]

# the repository: this package lives at <root>/bench/
ROOT = Path(__file__).resolve().parents[1]

TEMPERATURES = (0.0, 0.5, 1.0)
# (prefix, suffix) prompts per workload class: the policies bench's; the sources bench adds one
WORKLOADS: dict[str, list[tuple[str, str]]] = {
    "repeat": [
        (
            "class Api:\n    def get_user(self, user_id: int) -> dict:\n"
            '        response = self.session.get(f"{self.base}/users/{user_id}", timeout=self.timeout)\n'
            "        response.raise_for_status()\n        return response.json()\n\n"
            "    def get_order(self, order_id: int) -> dict:\n"
            '        response = self.session.get(f"{self.base}/orders/{order_id}", timeout=self.timeout)\n'
            "        response.raise_for_status()\n        return response.json()\n\n"
            "    def get_invoice(self, invoice_id: int) -> dict:\n",
            "\n",
        ),
        (
            'COLORS = {\n    "red": (255, 0, 0),\n    "green": (0, 255, 0),\n    "blue": (0, 0, 255),\n}\n\n'
            'def to_hex(name: str) -> str:\n    r, g, b = COLORS[name]\n    return f"#{r:02x}{g:02x}{b:02x}"\n\n\n'
            "def to_rgb_string(name: str) -> str:\n    r, g, b = COLORS[name]\n",
            "\n",
        ),
    ],
    "fresh": [
        (
            "import heapq\n\n\ndef dijkstra(graph: dict[str, dict[str, int]], start: str) -> dict[str, int]:\n"
            '    """Shortest distances from start to every reachable node."""\n',
            "\n",
        ),
        (
            'def parse_duration(text: str) -> int:\n    """Parse \'1h30m15s\' into seconds."""\n',
            "\n",
        ),
    ],
    "prose": [
        (
            "# Contributing\n\nThank you for your interest in improving this project. Before you open a pull "
            "request, please read the following guidelines carefully, because",
            "",
        ),
        ("The history of the printing press begins in the fifteenth century, when", ""),
    ],
}


@dataclass
class Run:
    drafter: str
    workload: str
    temperature: float
    policy: str
    prompt: int
    tokens: int
    seconds: float
    drafted: int = 0
    accepted: int = 0
    k_trace: list[int] | None = None
    rep: int = 0
    text: str = ""  # digest of the generated tokens: the same seed should give the same text
    # a no-speculation run made right before `baseline`'s run as its pair ("" for the others)
    baseline: str = ""
    steal: float = 0.0  # share of this machine's CPU time the hypervisor took during the run
    reruns: int = 0  # times its unit ran again because the hypervisor took too much

    @property
    def rate(self) -> float:
        return max(self.tokens - 1, 0) / self.seconds if self.seconds > 0 else 0.0


def rep_seed(settings: Settings, rep: int) -> int:
    """The sampling seed of rep `rep` of every prompt and cell: `--seed` (default 0) + rep. All
    runs of a rep share it, so a policy's ratio to no speculation compares the same draws."""
    return (settings.seed or 0) + rep


# no speculation run twice per prompt and rep: its ratio to the first is this machine's noise
# floor for the cell (an A/A test), next to which every other ratio is read
AGAIN = "none again (A/A)"
# policies measured against their own no-speculation run made just before them: this VM's
# speed drifts over tens of seconds (other tenants), so a pair a few seconds apart sees the
# same machine; the fixed k, far from 1x, are read against all the cell's no-speculation runs
PAIRED = frozenset({AGAIN, "adaptive"})


def schedule(names: list[str], paired: frozenset[str], rep: int) -> list[list[tuple[str, str]]]:
    """The runs of one rep in units, each run as (policy, baseline): a paired policy right after
    a run of no speculation that is its baseline, else one run; units rotated by rep so none
    always runs first. A unit runs again as a whole (`steady`)."""
    units = [[("none", n), (n, "")] if n in paired else [(n, "")] for n in names]
    shift = rep % len(units) if units else 0
    return units[shift:] + units[:shift]


# a paired policy's ratio to no speculation is known to PRECISION when the standard error of
# its log over the prompt's pairs is below it: this VM's runs of a few seconds swing by 3-10%
# (other tenants), so three pairs cannot tell 0.97x from 1.00x. After the first `reps` (every
# policy), the paired policies alone run again until they are known to PRECISION, with at
# least MIN_PAIRS and at most MAX_REPS pairs (the stopping rule looks at the spread, never at
# the ratio itself)
PRECISION = 0.01
MIN_PAIRS = 5
MAX_REPS = 8


def pair_logs(runs: list[Run], name: str) -> list[float]:
    """log(rate / its baseline's rate) for each of paired policy `name`'s runs in `runs` (one
    prompt's)."""
    base = {r.rep: r.rate for r in runs if r.policy == "none" and r.baseline == name}
    return [
        math.log(r.rate / base[r.rep])
        for r in runs
        if r.policy == name and r.rate > 0 and base.get(r.rep, 0) > 0
    ]


def known(runs: list[Run], names: list[str]) -> bool:
    """Whether every paired policy in `names` has at least MIN_PAIRS pairs in `runs` (one
    prompt's), whose log ratios have a standard error within PRECISION."""
    for name in names:
        logs = pair_logs(runs, name)
        if len(logs) < MIN_PAIRS or statistics.stdev(logs) / math.sqrt(len(logs)) > PRECISION:
            return False
    return True


def rep_names(
    names: list[str],
    rep: int,
    reps: int,
    max_reps: int,
    runs: list[Run],
    *,
    paired: frozenset[str] = PAIRED,
    spare: frozenset[str] = frozenset(),
) -> list[str] | None:
    """The policies to run in rep `rep` of a prompt (`runs`: its runs so far): every one of
    `names` in the first `reps`; after them the paired ones, while their ratios are not known
    to PRECISION and fewer than `max_reps` reps ran; None when the prompt is done. A `spare`
    policy that has drafted nothing in `runs` is no speculation: it does not run again."""
    if rep < reps:
        return names
    again = [
        n
        for n in names
        if n in paired and (n not in spare or any(r.drafted for r in runs if r.policy == n))
    ]
    if rep >= max_reps or not again or known(runs, again):
        return None
    return again


# plain llama-cpp-python runs once per prompt after all the reps: read over totals
OUTSIDE_REPS = frozenset({"llama-cpp-python", "llama-cpp-python+PLD"})


def ratio(by_policy: dict[str, list[Run]], policy: str, *, totals: bool = False) -> float:
    """Tokens/s of `policy` over no speculation's, per prompt the median over reps, then the
    geometric mean over the cell's prompts (they differ: one repeats more than another). A
    paired policy is read in each rep against its own baseline run (made just before it); an
    unpaired one against that rep's no-speculation runs of the same prompt (a rep's runs lie
    within a minute: a burst of other load on this VM lasts a run or two, it moves one rep,
    not the median). With `totals`, or for runs made outside the reps (plain llama-cpp-python,
    after them): total rate over that of the pairs' baselines, else all the cell's
    no-speculation runs."""
    mine = by_policy.get(policy, [])
    nones = by_policy.get("none", [])
    own = [r for r in nones if r.baseline == policy]  # a paired policy's baselines
    if not totals and policy not in OUTSIDE_REPS:
        bases: dict[tuple[int, int], list[Run]] = defaultdict(list)
        for r in own or nones:  # unpaired: the rep's runs of no speculation
            bases[(r.prompt, r.rep)].append(r)
        per_prompt: dict[int, list[float]] = defaultdict(list)
        for r in mine:
            base = total_rate(bases.get((r.prompt, r.rep), []))
            if base:
                per_prompt[r.prompt].append(r.rate / base)
        if per_prompt:
            return geomean([statistics.median(v) for v in per_prompt.values()])
    base = total_rate(own or nones)
    return total_rate(mine) / base if base else 0.0


SAME_TEXT_NOTE = (
    "\nSame text as none: policies whose every run wrote what no speculation wrote with the "
    "same seed. Lookup drafts never change the text in exact arithmetic (at any T); a batch's "
    "logits differ from one token's by rounding, so a near-tie can flip and the texts part "
    "from there. A draft model's sampled drafts (T > 0) take other random draws.\n"
)


def digest(tokens: list[int]) -> str:
    """A short fingerprint of generated tokens: the same seed should give the same digest."""
    return hashlib.sha256(np.asarray(tokens, dtype=np.int64).tobytes()).hexdigest()[:16]


def same_text(by_policy: dict[str, list[Run]], policies: list[str]) -> str:
    """How many of `policies` wrote, for every prompt and rep, the text no speculation wrote
    with the same seed (all of them should where drafts are deterministic, at any T)."""
    reference = {(r.prompt, r.rep): r.text for r in by_policy.get("none", [])}
    same = sum(
        bool(by_policy.get(p))
        and all(reference.get((r.prompt, r.rep)) == r.text for r in by_policy[p])
        for p in policies
    )
    return f"{same}/{len(policies)}"


def geomean(values: list[float]) -> float:
    """The geometric mean of the positive `values` (0.0 when there are none)."""
    values = [v for v in values if v > 0]
    return float(np.exp(np.mean(np.log(values)))) if values else 0.0


def total_rate(runs: list[Run]) -> float:
    """Aggregate tokens per second: total tokens over total time (robust to short runs)."""
    seconds = sum(r.seconds for r in runs)
    return sum(max(r.tokens - 1, 0) for r in runs) / seconds if seconds else 0.0


def log(message: str) -> None:
    """Progress and diagnostics, to stderr (the tables go to stdout)."""
    print(message, file=sys.stderr, flush=True)


def write_results(path: Path, data: object) -> None:
    """Raw results as gzip-compressed JSON (`*.json.gz`; no time stamp in the gzip header: the
    same runs give the same bytes)."""
    path.write_bytes(gzip.compress(json.dumps(data, indent=1).encode(), mtime=0))


def read_results(path: Path) -> Any:
    """Raw results that `write_results` saved."""
    return json.loads(gzip.decompress(path.read_bytes()))
