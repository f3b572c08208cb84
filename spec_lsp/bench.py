"""`spec-lsp bench`: speculation policies and drafters against no speculation and plain
llama-cpp-python, on three workload classes and three temperatures. Interleaved runs; ratios.

Writes `<out>/bench.md` (tables), `<out>/bench.json` (raw runs), `<out>/speedup.png` and
`<out>/k_trace.png`, and prints the tables.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, CompletionRequest, SamplingParams, build_engine
from spec_lsp.engine.backends.base import ModelBackend
from spec_lsp.engine.decode.speculative import DecodeJob, generate
from spec_lsp.engine.drafters.base import Drafter
from spec_lsp.engine.drafters.model import ModelDrafter
from spec_lsp.engine.drafters.ngram import NgramDrafter
from spec_lsp.engine.engine import Engine
from spec_lsp.engine.policy.adaptive import AdaptivePolicy, DraftPolicy, FixedPolicy
from spec_lsp.engine.policy.estimate import AcceptanceEstimate, prior_acceptance
from spec_lsp.engine.types import DecodeStats

FIXED_KS = (2, 4, 8, 16)
SMOL_LENGTH = 5  # SmolLM2 drafting for itself: generations this many times Qwen's
TEMPERATURES = (0.0, 0.5, 1.0)
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


def main(
    settings: Settings,
    *,
    quick: bool = False,
    out: Path = Path("bench/out"),
    part: str = "all",
    reps: int | None = None,
    max_reps: int | None = None,
    max_tokens: int | None = None,
) -> int:
    out.mkdir(parents=True, exist_ok=True)
    max_tokens = max_tokens or (32 if quick else 48)
    reps = reps or (1 if quick else 3)
    # paired runs go on, per prompt, until known to PRECISION or max_reps (--quick: no more)
    max_reps = max(reps, max_reps or (reps if quick else MAX_REPS))
    tables = ""
    if part in ("all", "sources"):
        from spec_lsp import bench_sources

        source_prompts = {w: p[:1] if quick else p for w, p in bench_sources.WORKLOADS.items()}
        tables += bench_sources.run(settings, source_prompts, max_tokens, reps, out, max_reps)
    if part in ("all", "policies"):
        tables += _bench_policies(settings, quick, out, max_tokens, reps, max_reps)
    return _emit(tables, out)


def rerender(out: Path, part: str = "all") -> int:
    """The tables (and plots) again from the raw runs a previous bench saved in `out`."""
    from spec_lsp import bench_sources

    tables = ""
    wanted = {"sources": "bench_sources.json", "policies": "bench.json"}
    for name, filename in wanted.items():
        if part not in ("all", name):
            continue
        path = out / filename
        if not path.exists():
            if part == name:
                raise SystemExit(f"{path} not found: run `spec-lsp bench --part {name}` first")
            continue
        data = json.loads(path.read_text())
        if name == "sources":
            reports = {}
            for cell, report in data["auto"].items():
                workload, temperature = cell.split(" T=")
                reports[(workload, float(temperature))] = report
            runs = [Run(**r) for r in data["runs"]]
            tables += bench_sources.render(runs, reports, data["acceptance"])
        else:
            runs = [Run(**r) for r in data]
            tables += render(runs)
            _plots(runs, out)
    if not tables:
        raise SystemExit(f"no saved runs in {out}: run `spec-lsp bench` first")
    return _emit(tables, out)


def _emit(tables: str, out: Path) -> int:
    """The CLI's output: the tables to `<out>/bench.md` and to stdout."""
    (out / "bench.md").write_text(tables)
    print(tables)
    return 0


def _bench_policies(
    settings: Settings, quick: bool, out: Path, max_tokens: int, reps: int, max_reps: int
) -> str:
    prompts = {w: p[:1] if quick else p for w, p in WORKLOADS.items()}
    runs: list[Run] = []
    pairs = [("ngram", settings.model_copy(update={"drafter": "ngram"}))]
    pairs.append(
        (
            "smollm2-self",
            settings.model_copy(
                update={"drafter": "model", "model": _smol(), "draft_model": _smol()}
            ),
        )
    )
    for label, pair_settings in pairs:
        # SmolLM2 runs ~8x faster than Qwen: longer generations keep its cells above timing
        # noise (at 3x, runs of 1.8 s, its pairs swung by 7%)
        tokens = max_tokens * (SMOL_LENGTH if label == "smollm2-self" else 1)
        engine = build_engine(pair_settings)
        engine.load()
        profile = engine.ensure_profile()
        _log(
            f"[{label}] verify cost n/1: {profile.relative()}  draft {profile.draft_seconds_per_token * 1000:.1f} ms/token"
        )
        runs += _bench_pair(engine, label, prompts, tokens, reps, max_reps)
        if label == "ngram":
            runs += _bench_llama_cpp_python(engine, prompts, max_tokens)
        engine.close()
    tables = render(runs)
    (out / "bench.json").write_text(json.dumps([r.__dict__ for r in runs], indent=1))
    _plots(runs, out)
    return tables


def _smol() -> str:
    from spec_lsp import models

    path = models.installed_path("smollm2-135m")
    if path is None:
        raise SystemExit("spec-lsp bench needs SmolLM2: run `spec-lsp models pull`")
    return str(path)


def _policies(
    engine: Engine, estimate: AcceptanceEstimate
) -> Iterator[tuple[str, DraftPolicy | None]]:
    yield AGAIN, None
    for k in FIXED_KS:
        yield f"fixed-{k}", FixedPolicy(k)
    assert engine.profile is not None
    yield (
        "adaptive",
        AdaptivePolicy(engine.profile, estimate=estimate, draft_max=engine.settings.draft_max),
    )


def rep_seed(settings: Settings, rep: int) -> int:
    """The sampling seed of rep `rep` of every prompt and cell: `--seed` (default 0) + rep. All
    runs of a rep share it, so a policy's ratio to no speculation compares the same draws."""
    return (settings.seed or 0) + rep


def _bench_pair(
    engine: Engine,
    label: str,
    prompts: dict[str, list[tuple[str, str]]],
    max_tokens: int,
    reps: int,
    max_reps: int,
) -> list[Run]:
    loaded = engine.loaded
    assert loaded is not None
    drafter: Drafter = NgramDrafter()
    if label != "ngram":
        assert loaded.draft is not None
        drafter = ModelDrafter(loaded.draft, target=loaded.target)
    runs = []
    for (workload, items), temperature in itertools.product(prompts.items(), TEMPERATURES):
        for index, (prefix, suffix) in enumerate(items):
            request = CompletionRequest(prefix=prefix, suffix=suffix, language="python")
            prompt = engine.prompt_tokens(request)
            # like the engine's per-document memory: the estimate carries over between requests
            estimate = AcceptanceEstimate(prior_acceptance(temperature))
            _warm_up(loaded.target, prompt)
            made_here: list[Run] = []
            for rep in itertools.count():
                policies = dict(_policies(engine, estimate))
                names = rep_names(list(policies), rep, reps, max_reps, made_here)
                if names is None:
                    break
                units = schedule(names, PAIRED, rep)

                one = functools.partial(
                    policy_run,
                    loaded.target,
                    functools.partial(_pick_policy, drafter, policies),
                    DecodeJob(
                        prompt,
                        max_tokens,
                        SamplingParams(temperature, 40, 0.95, seed=rep_seed(engine.settings, rep)),
                        frozenset(),
                    ),
                    Run(label, workload, temperature, "", index, 0, 0.0, rep=rep),
                )
                where = f"[{label}] {workload} T={temperature} prompt {index} rep {rep}"
                made = run_rep(one, units, where)
                runs += made
                made_here += made
    return runs


Pick = Callable[[str], tuple[Drafter | None, DraftPolicy]]


def _pick_policy(
    drafter: Drafter, policies: dict[str, DraftPolicy | None], name: str
) -> tuple[Drafter | None, DraftPolicy]:
    """The policies bench's drafter and policy for run `name` (no policy: no speculation)."""
    policy = policies.get(name)
    return (drafter, policy) if policy else (None, FixedPolicy(0))


def policy_run(
    target: ModelBackend,
    pick: Pick,
    job: DecodeJob,
    where: Run,
    name: str,
    baseline: str,
    outputs: dict[str, list[int]] | None = None,
) -> Run:
    """One generation of `job` under run `name` (`pick` gives its drafter and policy), as a
    Run like `where` (drafter, workload, temperature, prompt, rep) with its time and the CPU
    stolen meanwhile; its tokens go to `outputs[name]` when given."""
    drafter, policy = pick(name)
    stats = DecodeStats()
    before = cpu_ticks()
    out = generate(
        target,
        drafter,
        policy,
        job,
        cancel=CancelToken(),
        rng=np.random.default_rng(job.sampling.seed),
        stats=stats,
    )
    if outputs is not None:
        outputs[name] = out
    return replace(
        where,
        policy=name,
        tokens=stats.tokens,
        seconds=stats.decode_seconds,
        drafted=stats.drafted,
        accepted=stats.accepted,
        k_trace=stats.k_trace,
        text=digest(out),
        baseline=baseline,
        steal=stolen(before, cpu_ticks()),
    )


# no speculation run twice per prompt and rep: its ratio to the first is this machine's noise
# floor for the cell (an A/A test), next to which every other ratio is read
AGAIN = "none again (A/A)"
# policies measured against their own no-speculation run made just before them: this VM's
# speed drifts over tens of seconds (other tenants), so a pair a few seconds apart sees the
# same machine; the fixed k, far from 1x, are read against all the cell's no-speculation runs
PAIRED = frozenset({AGAIN, "adaptive"})
TOTALS = "adaptive (totals)"


# a unit (a pair, or one run) in which the hypervisor took more than STEAL_MAX of this VM's CPU
# time during a run measured the neighbours, not the policy: it runs again, up to RERUNS times
STEAL_MAX = 0.04
RERUNS = 2


def cpu_ticks() -> tuple[int, int] | None:
    """(stolen, total) CPU ticks of this machine so far (Linux /proc/stat; None elsewhere)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return (fields[7] if len(fields) == 8 else 0, sum(fields))


def stolen(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float:
    """Share of the CPU time between two `cpu_ticks()` readings that the hypervisor took."""
    if before is None or after is None or after[1] <= before[1]:
        return 0.0
    return (after[0] - before[0]) / (after[1] - before[1])


def wait_for_quiet(
    limit: float = 60.0,
    window: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
    ticks: Callable[[], tuple[int, int] | None] = cpu_ticks,
) -> float:
    """Wait (at most `limit` s) until the hypervisor takes under half of STEAL_MAX over
    `window` s: a stretch of steal lasts a minute or two, and a unit run again at once would
    run in it again. Returns the seconds waited."""
    waited = 0.0
    while waited < limit:
        before = ticks()
        sleep(window)
        waited += window
        if stolen(before, ticks()) < STEAL_MAX / 2:
            break
    return waited


def run_unit(one: Callable[[str, str], Run], unit: list[tuple[str, str]]) -> list[Run]:
    """The runs of one unit, (policy, baseline) each, by `one(policy, baseline)`."""
    return [one(name, baseline) for name, baseline in unit]


def run_rep(
    one: Callable[[str, str], Run], units: list[list[tuple[str, str]]], where: str
) -> list[Run]:
    """A rep's units (`schedule`), each run again while the hypervisor takes the CPU
    (`steady`), logged in one line."""
    made = [r for unit in units for r in steady(functools.partial(run_unit, one, unit), where)]
    _log(f"{where}: " + " ".join(f"{r.policy}={r.rate:.1f}" for r in made))
    return made


def steady(
    unit: Callable[[], list[Run]],
    label: str = "",
    wait: Callable[[], object] = wait_for_quiet,
) -> list[Run]:
    """Run `unit` (its runs return with their `steal`), again while the hypervisor took more
    than STEAL_MAX during one of them (at most RERUNS times; the last attempt is kept)."""
    for attempt in range(RERUNS + 1):
        runs = unit()
        worst = max((r.steal for r in runs), default=0.0)
        if worst <= STEAL_MAX:
            break
        if attempt < RERUNS:
            _log(f"{label} {'+'.join(r.policy for r in runs)}: {worst:.0%} stolen, again")
            wait()
    for r in runs:
        r.reruns = attempt
    return runs


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
            base = _rate(bases.get((r.prompt, r.rep), []))
            if base:
                per_prompt[r.prompt].append(r.rate / base)
        if per_prompt:
            return _geomean([statistics.median(v) for v in per_prompt.values()])
    base = _rate(own or nones)
    return _rate(mine) / base if base else 0.0


PAIRED_NOTE = (
    "\nRatios: A/A and adaptive are each run right after a run of no speculation on the same "
    "prompt and seed; their ratio is, per prompt, the median over these pairs (a burst of "
    "other load on this VM slows a run or two: it moves one pair, not the median), then the "
    "geometric mean over the cell's prompts; `adaptive (totals)` is the ratio of the pairs' "
    "total rates. Every policy runs in the first reps; then A/A and adaptive run again, per "
    "prompt, until the standard error of each one's log ratio over its pairs is under "
    f"{PRECISION:.0%}, with at least {MIN_PAIRS} pairs and at most --max-reps (the `pairs` "
    "column: runs over the cell's prompts; the rule looks at the spread, not at the ratio). "
    "Fixed k: the same median and mean of its rate over that of its rep's "
    "no-speculation runs (a rep's runs lie within a minute). llama-cpp-python (run once per "
    "prompt, after the reps): total rate over that of all the cell's no-speculation runs. "
    "Adaptive / best fixed: adaptive's ratio over the best fixed k's; in parentheses, "
    "adaptive's total rate over the best fixed k's, on the same prompts and seeds.\n"
)
SAME_TEXT_NOTE = (
    "\nSame text as none: policies whose every run wrote what no speculation wrote with the "
    "same seed. Lookup drafts never change the text in exact arithmetic (at any T); a batch's "
    "logits differ from one token's by rounding, so a near-tie can flip and the texts part "
    "from there. A draft model's sampled drafts (T > 0) take other random draws.\n"
)


def digest(tokens: list[int]) -> str:
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


def _warm_up(target: ModelBackend, prompt: list[int]) -> None:
    """Evaluate the prompt and a few plain rounds first (not measured): the first passes after
    a new prompt are slower (allocations, caches) and would penalise whichever policy runs first."""
    job = DecodeJob(prompt, 8, SamplingParams(), frozenset())
    generate(
        target,
        None,
        FixedPolicy(0),
        job,
        cancel=CancelToken(),
        rng=np.random.default_rng(0),
        stats=DecodeStats(),
    )


def _bench_llama_cpp_python(
    engine: Engine, prompts: dict[str, list[tuple[str, str]]], max_tokens: int
) -> list[Run]:
    """The same prompts through plain llama-cpp-python: create_completion, and with its
    LlamaPromptLookupDecoding draft (which needs logits_all=True)."""
    from spec_lsp.engine.backends import llama as backend

    runs = []
    loaded = engine.loaded
    assert loaded is not None
    for name, prompt_lookup in (("llama-cpp-python", False), ("llama-cpp-python+PLD", True)):
        llm = backend.plain_llama(
            loaded.target.info.path,
            n_ctx=engine.settings.context_size,
            threads=engine.settings.threads,
            prompt_lookup=prompt_lookup,
        )
        for (workload, items), temperature in itertools.product(prompts.items(), TEMPERATURES):
            for index, (prefix, suffix) in enumerate(items):
                prompt = engine.prompt_tokens(CompletionRequest(prefix=prefix, suffix=suffix))
                tokens, seconds = backend.timed_completion(
                    llm, prompt, max_tokens=max_tokens, temperature=temperature
                )
                runs.append(Run("ngram", workload, temperature, name, index, tokens, seconds))
        _log(f"[{name}] done")
        llm.close()
    return runs


def render(runs: list[Run]) -> str:
    """One table per drafter: tokens/s ratio to no speculation per cell (workload x temperature),
    then the geometric mean of each policy's ratios over the whole table."""
    cells: dict[tuple[str, str, float], dict[str, list[Run]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for r in runs:
        cells[(r.drafter, r.workload, r.temperature)][r.policy].append(r)
    lines = []
    for drafter in sorted({r.drafter for r in runs}):
        policies = ["none", AGAIN, *(f"fixed-{k}" for k in FIXED_KS), "adaptive"]
        extra = [
            p
            for p in ("llama-cpp-python", "llama-cpp-python+PLD")
            if any(r.policy == p and r.drafter == drafter for r in runs)
        ]
        shown = [*policies[1:], TOTALS, *extra]
        lines += [
            f"\n### drafter: {drafter} ({max(r.tokens for r in runs if r.drafter == drafter)}-token generations)\n",
            "| workload | T | none tok/s | "
            + " | ".join(shown)
            + " | adaptive accept | adaptive mean k | adaptive rounds to k=0 "
            "| adaptive / best fixed (totals) | same text as none | pairs (A/A, adaptive) |",
            "|---" * (len(shown) + 9) + "|",
        ]
        whole: dict[str, list[float]] = defaultdict(list)
        for (d, workload, temperature), by_policy in sorted(cells.items()):
            if d != drafter:
                continue
            base = _rate(by_policy["none"])
            ratios = {p: ratio(by_policy, p) for p in shown if p != TOTALS}
            ratios[TOTALS] = ratio(by_policy, "adaptive", totals=True)
            for p, value in ratios.items():
                whole[p].append(value)
            adaptive = by_policy["adaptive"]
            accept = sum(r.accepted for r in adaptive) / max(sum(r.drafted for r in adaptive), 1)
            mean_k = (
                statistics.mean(k for r in adaptive for k in (r.k_trace or [0]))
                if adaptive
                else 0.0
            )
            # against the best fixed k: ratio over ratio, and directly over total rates
            best_fixed = max(ratios[f"fixed-{k}"] for k in FIXED_KS)
            best_total = max(_rate(by_policy[f"fixed-{k}"]) for k in FIXED_KS)
            # over totals on the same prompts and seeds: the reps in which the fixed k ran
            fixed_reps = {(r.prompt, r.rep) for r in by_policy[f"fixed-{FIXED_KS[0]}"]}
            alongside = [r for r in adaptive if (r.prompt, r.rep) in fixed_reps]
            versus = (
                f"{ratios['adaptive'] / best_fixed:.2f} ({_rate(alongside) / best_total:.2f})"
                if best_fixed and best_total
                else "-"
            )
            lines.append(
                f"| {workload} | {temperature} | {base:.2f} | "
                + " | ".join(f"{ratios[p]:.2f}x" for p in shown)
                + f" | {accept:.0%} | {mean_k:.1f} | {_settles(adaptive)} "
                f"| {versus} "
                f"| {same_text(by_policy, policies[1:])} "
                f"| {len(by_policy[AGAIN])}, {len(adaptive)} |"
            )
        lines.append(
            "| **whole table** (geometric mean) | | | "
            + " | ".join(f"**{_geomean(whole[p]):.2f}x**" for p in shown)
            + " | | | | | | |"
        )
        lines.append(PAIRED_NOTE)
        lines.append(rerun_note([r for r in runs if r.drafter == drafter]))
        lines.append(SAME_TEXT_NOTE)
    return "\n".join(lines) + "\n"


def rerun_note(runs: list[Run]) -> str:
    """How many runs were made again because the hypervisor took CPU time during them."""
    again = [r for r in runs if r.reruns]
    worst = max((r.steal for r in runs), default=0.0)
    return (
        f"\nRe-run: {len(again)} of {len(runs)} runs were kept from a second or third attempt "
        f"of their unit (the hypervisor took more than {STEAL_MAX:.0%} of this VM's CPU time "
        f"during a run of the earlier attempt; /proc/stat's steal). Most stolen in a kept run: "
        f"{worst:.1%}.\n"
    )


def _geomean(values: list[float]) -> float:
    values = [v for v in values if v > 0]
    return float(np.exp(np.mean(np.log(values)))) if values else 0.0


def _settles(runs: list[Run]) -> str:
    """The round after which k stays 0 to the end of its generation, worst over the cell's
    adaptive runs ('-' when some run still drafts in its last round)."""
    worst = 0
    for r in runs:
        trace = r.k_trace or []
        if trace and trace[-1]:
            return "-"
        worst = max(worst, max((i + 1 for i, k in enumerate(trace) if k), default=0))
    return str(worst)


def _rate(runs: list[Run]) -> float:
    """Aggregate tokens per second: total tokens over total time (robust to short runs)."""
    seconds = sum(r.seconds for r in runs)
    return sum(max(r.tokens - 1, 0) for r in runs) / seconds if seconds else 0.0


def _plots(runs: list[Run], out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        _log("matplotlib not installed: no plots")
        return
    for drafter in sorted({r.drafter for r in runs}):
        cells = sorted({(r.workload, r.temperature) for r in runs if r.drafter == drafter})
        policies = [
            p
            for p in [
                "none",
                AGAIN,
                *(f"fixed-{k}" for k in FIXED_KS),
                "adaptive",
                "llama-cpp-python",
                "llama-cpp-python+PLD",
            ]
            if any(r.policy == p and r.drafter == drafter for r in runs)
        ]
        fig, ax = plt.subplots(figsize=(12, 4))
        width = 0.8 / len(policies)
        for i, policy in enumerate(policies):
            ratios = []
            for workload, temperature in cells:
                sel = [
                    r
                    for r in runs
                    if (r.drafter, r.workload, r.temperature) == (drafter, workload, temperature)
                ]
                by_policy: dict[str, list[Run]] = defaultdict(list)
                for r in sel:
                    by_policy[r.policy].append(r)
                ratios.append(ratio(by_policy, policy))
            ax.bar(np.arange(len(cells)) + i * width, ratios, width, label=policy)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(np.arange(len(cells)) + 0.4, [f"{w}\nT={t}" for w, t in cells])
        ax.set_ylabel("tokens/s vs no speculation")
        ax.set_title(f"speedup per policy (drafter: {drafter})")
        ax.legend(fontsize=7, ncol=4)
        fig.tight_layout()
        fig.savefig(out / f"speedup-{drafter}.png", dpi=90)
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(8, 3))
    for drafter in sorted({r.drafter for r in runs}):
        trace = next(
            (
                r.k_trace
                for r in runs
                if r.drafter == drafter
                and r.policy == "adaptive"
                and r.workload == "repeat"
                and r.temperature == 0.0
            ),
            None,
        )
        if trace:
            ax.step(range(len(trace)), trace, where="post", label=drafter)
    ax.set_xlabel("round")
    ax.set_ylabel("draft length k")
    ax.set_title("adaptive k over one generation (repeat workload, T=0)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "k_trace.png", dpi=90)
    plt.close(fig)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
