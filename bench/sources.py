"""`spec-lsp bench --part sources`: each draft source, and `auto`, under the adaptive policy.

Sources: n-gram lookup in the prompt, workspace lookup (other open documents, the whole current
document), the draft model drafting across vocabularies (SmolLM2-135M for the Qwen target), and
auto (per round the source with the best expected rate). Same prompts, interleaved, ratios to no
speculation; plus each source's acceptance per workload, scored offline against the target's own
greedy output (a draft of 4 at every position), so it does not depend on what the policy chose.
Writes `<out>/bench_sources.json.gz` (raw runs) and returns the tables.
Longer than 300 lines: the timed runs, the offline acceptance and the table of one benchmark.
"""

from __future__ import annotations

import functools
import itertools
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import (
    AGAIN,
    MIN_PAIRS,
    PRECISION,
    SAME_TEXT_NOTE,
    TEMPERATURES,
    Run,
    log,
    ratio,
    rep_names,
    rep_seed,
    same_text,
    schedule,
    total_rate,
    write_results,
)
from bench.common import WORKLOADS as POLICY_WORKLOADS
from bench.timing import policy_run, rerun_note, run_rep, smol_path, warm_up
from spec_lsp.config import Settings
from spec_lsp.engine import CompletionRequest, SamplingParams, build_engine
from spec_lsp.engine.toolkit import (
    PROFILE_TEXT,
    AcceptanceEstimate,
    AdaptivePolicy,
    AutoDrafter,
    CostProfile,
    CrossVocabDrafter,
    DecodeJob,
    DocumentsDrafter,
    Drafter,
    DraftPolicy,
    DraftRequest,
    FixedPolicy,
    NgramDrafter,
    OpenDocuments,
    calibrate,
    common_prefix_len,
    model_drafter,
    prior_acceptance,
)

RESULTS = "bench_sources.json.gz"  # the raw runs, in --out
SOURCES = ("ngram", "workspace", "crossvocab", "auto")
PAIRED_SOURCES = frozenset({AGAIN, *SOURCES})
# a single source that drafted nothing for a prompt ran no speculation there (1.00x as the best
# single source): past the first reps, only those that drafted, auto and A/A run again
SPARE = frozenset(SOURCES) - {"auto"}
CURRENT = "file:///bench/current.py"
# other open documents, as an editor would have them: the workspace index holds them
OPEN_DOCUMENTS = {
    "file:///bench/users.py": (
        "import sqlite3\n\n\nclass UserStore:\n    def __init__(self, db: sqlite3.Connection):\n"
        "        self.db = db\n\n"
        "    def get(self, user_id: int) -> dict | None:\n"
        '        row = self.db.execute("SELECT * FROM users WHERE id = ?", (user_id,)).fetchone()\n'
        "        return dict(row) if row else None\n\n"
        "    def delete(self, user_id: int) -> None:\n"
        '        self.db.execute("DELETE FROM users WHERE id = ?", (user_id,))\n'
        "        self.db.commit()\n"
    ),
    "file:///bench/http.py": (
        "import requests\n\n\ndef fetch_json(session: requests.Session, url: str, *, timeout: float = 10.0) -> dict:\n"
        "    response = session.get(url, timeout=timeout)\n"
        "    response.raise_for_status()\n"
        "    return response.json()\n\n\n"
        "def post_json(session: requests.Session, url: str, payload: dict, *, timeout: float = 10.0) -> dict:\n"
        "    response = session.post(url, json=payload, timeout=timeout)\n"
        "    response.raise_for_status()\n"
        "    return response.json()\n"
    ),
}
WORKLOADS: dict[str, list[tuple[str, str]]] = {
    **POLICY_WORKLOADS,
    "crossfile": [  # code that repeats another open file
        (
            "import sqlite3\n\n\nclass OrderStore:\n    def __init__(self, db: sqlite3.Connection):\n"
            "        self.db = db\n\n    def get(self, order_id: int) -> dict | None:\n",
            "\n",
        ),
        (
            "import requests\n\n\ndef put_json(session: requests.Session, url: str, payload: dict, *, timeout: float = 10.0) -> dict:\n",
            "\n",
        ),
    ],
}


def run(
    settings: Settings,
    prompts: dict[str, list[tuple[str, str]]],
    max_tokens: int,
    reps: int,
    out: Path,
    max_reps: int | None = None,
) -> str:
    """Each source and auto against no speculation (`reps` reps of every run, then the pairs
    of the sources that drafted, and auto's, until known to PRECISION or `max_reps`)."""
    engine = build_engine(settings.model_copy(update={"drafter": "none"}))
    engine.load()
    loaded = engine.parts.models
    target = loaded.target
    profile = engine.ensure_profile()
    from spec_lsp.engine.toolkit import open_model

    smol = open_model(settings.draft_model or smol_path(), settings, what="draftModel")
    # as the engine picks (the column keeps its name, "crossvocab": the default pair's)
    cross = model_drafter(smol, target)
    context = target.tokenize(PROFILE_TEXT)[:256]
    per_token, fixed, catch_up = calibrate.measure_drafter(cross, context)
    # what the engine measures at startup for `drafter = model` or `auto` with this draft model
    model_profile = replace(
        profile,
        draft_seconds_per_token=per_token,
        draft_seconds_fixed=fixed,
        catch_up_seconds_per_token=catch_up,
    )
    log(
        f"[sources] verify n/1: {profile.relative()}; {Path(smol.info.path).name} "
        f"({'cross' if isinstance(cross, CrossVocabDrafter) else 'same'}-vocabulary) draft "
        f"{per_token * 1000:.1f} ms/token + {fixed * 1000:.1f} ms/call, catch-up "
        f"{(catch_up or 0) * 1000:.1f} ms/token "
        f"(target verify(1) {profile.verify(1) * 1000:.1f} ms)"
    )
    index = OpenDocuments()
    for uri, text in OPEN_DOCUMENTS.items():
        index.update(uri, text)
    ngram = NgramDrafter()
    workspace = DocumentsDrafter(index, target, document_id=CURRENT)
    runs: list[Run] = []
    reports: dict[tuple[str, float], dict[str, dict[str, float]]] = {}
    greedy: dict[tuple[str, int], tuple[list[int], list[int]]] = {}
    for (workload, items), temperature in itertools.product(prompts.items(), TEMPERATURES):
        prior = prior_acceptance(temperature)
        estimates = {name: AcceptanceEstimate(prior) for name in SOURCES}
        # as in the engine, auto and its policy share one profile (calibrated as they run)
        auto_profile = replace(model_profile)
        auto = AutoDrafter([ngram, workspace], model=cross, profile=auto_profile)
        drafters: dict[str, Drafter] = {
            "ngram": ngram,
            "workspace": workspace,
            "crossvocab": cross,
            "auto": auto,
        }
        for number, (prefix, suffix) in enumerate(items):
            index.update(CURRENT, prefix + suffix)
            workspace.cursor = len(prefix)
            request = CompletionRequest(prefix=prefix, suffix=suffix, language="python")
            prompt = engine.parts.prompt_tokens(request)
            warm_up(target, prompt)
            made_here: list[Run] = []
            for rep in itertools.count():
                # every source right after its own run of no speculation (see common.PAIRED)
                names = rep_names(
                    [AGAIN, *SOURCES],
                    rep,
                    reps,
                    max_reps or reps,
                    made_here,
                    paired=PAIRED_SOURCES,
                    spare=SPARE,
                )
                if names is None:
                    break
                units = schedule(names, PAIRED_SOURCES, rep)
                outputs: dict[str, list[int]] = {}
                one = functools.partial(
                    policy_run,
                    target,
                    functools.partial(
                        _pick_source,
                        drafters,
                        {"crossvocab": model_profile, "auto": auto_profile},
                        profile,
                        estimates,
                        settings.draft_max,
                    ),
                    DecodeJob(
                        prompt,
                        max_tokens,
                        SamplingParams(temperature, 40, 0.95, seed=rep_seed(settings, rep)),
                        frozenset(),
                    ),
                    Run("sources", workload, temperature, "", number, 0, 0.0, rep=rep),
                    outputs=outputs,
                )
                where = f"[sources] {workload} T={temperature} prompt {number} rep {rep}"
                made = run_rep(one, units, where)
                runs += made
                made_here += made
                if temperature == 0.0 and rep == 0:
                    greedy[(workload, number)] = (prompt, outputs["none"])
        reports[(workload, temperature)] = auto.report()
    acceptance = _offline_acceptance(
        greedy,
        {"ngram": ngram, "workspace": workspace, "crossvocab": cross},
        workspace,
        index,
        prompts,
    )
    smol.close()
    engine.close()
    write_results(
        out / RESULTS,
        {
            "runs": [r.__dict__ for r in runs],
            "auto": {f"{w} T={t}": rep for (w, t), rep in reports.items()},
            "acceptance": acceptance,
        },
    )
    return render(runs, reports, acceptance)


def from_saved(data: dict[str, Any]) -> str:
    """The tables again from the raw runs, auto's reports and the acceptance `run` saved."""
    reports: dict[tuple[str, float], dict[str, dict[str, float]]] = {}
    for cell, report in data["auto"].items():
        workload, temperature = cell.split(" T=")
        reports[(workload, float(temperature))] = report
    runs = [Run(**r) for r in data["runs"]]
    return render(runs, reports, data["acceptance"])


def _pick_source(
    drafters: dict[str, Drafter],
    profiles: dict[str, CostProfile],
    profile: CostProfile,
    estimates: dict[str, AcceptanceEstimate],
    draft_max: int,
    name: str,
) -> tuple[Drafter | None, DraftPolicy]:
    """The sources bench's drafter and policy for run `name`: a source under the adaptive
    policy (with its own profile and the cell's estimate), or no speculation."""
    if name not in drafters:
        return None, FixedPolicy(0)
    policy = AdaptivePolicy(
        profiles.get(name, profile), estimate=estimates[name], draft_max=draft_max
    )
    return drafters[name], policy


def _offline_acceptance(
    greedy: dict[tuple[str, int], tuple[list[int], list[int]]],
    sources: dict[str, Drafter],
    workspace: DocumentsDrafter,
    index: OpenDocuments,
    prompts: dict[str, list[tuple[str, str]]],
) -> dict[str, dict[str, dict[str, float]]]:
    """Per workload and source: at every position of the target's greedy output, a draft of 4
    scored against what the target wrote. coverage: share of positions with a proposal."""
    result: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    rng = np.random.default_rng(0)
    for name, drafter in sources.items():
        totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        for (workload, number), (prompt, tokens) in greedy.items():
            prefix, suffix = prompts[workload][number]
            index.update(CURRENT, prefix + suffix)
            workspace.cursor = len(prefix)
            total = totals[workload]
            for i in range(len(tokens) - 1):
                draft = drafter.draft(
                    DraftRequest([*prompt, *tokens[:i]], 4, SamplingParams(), rng)
                ).tokens
                tested = draft[: len(tokens) - i]
                total[0] += 1
                total[1] += bool(tested)
                total[2] += len(tested)
                total[3] += common_prefix_len(tested, tokens[i : i + len(tested)])
        for workload, (positions, covered, proposed, accepted) in totals.items():
            result[workload][name] = {
                "coverage": round(covered / positions, 3) if positions else 0.0,
                "acceptance": round(accepted / proposed, 3) if proposed else 0.0,
            }
    return dict(result)


def render(
    runs: list[Run],
    reports: dict[tuple[str, float], dict[str, dict[str, float]]],
    acceptance: dict[str, dict[str, dict[str, float]]],
) -> str:
    cells: dict[tuple[str, float], dict[str, list[Run]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        cells[(r.workload, r.temperature)][r.policy].append(r)
    lines = [
        "\n### draft sources (adaptive policy; Qwen target; tokens/s ratio to no speculation: "
        "each source runs right after a run of no speculation on the same prompt and seed; its "
        "ratio is, per prompt, the median over these pairs, then the geometric mean over the "
        "cell's prompts; `(totals)`: the ratio of the pairs' total rates. After the first "
        "reps, A/A, auto and each source that drafted for the prompt run again until the "
        "standard error of each one's log ratio is under "
        f"{PRECISION:.0%} (at least {MIN_PAIRS} pairs, at most --max-reps; `pairs`: A/A's and "
        "auto's runs over the cell). Best single: a source that drafted nothing in the cell "
        "ran no speculation, read as 1.00x)\n",
        "| workload | T | none tok/s | "
        + " | ".join((AGAIN, *SOURCES))
        + " | auto / best single | auto / best single (totals) | auto rounds per source "
        "| accept (drafted) per source "
        "| same text as none | pairs (A/A, auto) |",
        "|---" * (len(SOURCES) + 10) + "|",
    ]
    for (workload, temperature), by in sorted(cells.items()):
        base = total_rate(by["none"])
        ratios = {s: ratio(by, s) for s in (AGAIN, *SOURCES)}
        best = max(_as_best_single(by, s, ratios[s]) for s in SOURCES if s != "auto")
        totals = {s: ratio(by, s, totals=True) for s in SOURCES}
        best_totals = max(_as_best_single(by, s, totals[s]) for s in SOURCES if s != "auto")
        chosen = reports.get((workload, temperature), {})
        picks = ", ".join(f"{s} {int(v['chosen'])}" for s, v in chosen.items())
        accepts = ", ".join(
            f"{s} {_accept(by[s]):.0%} ({sum(r.drafted for r in by[s])})"
            for s in SOURCES
            if s != "auto"
        )
        lines.append(
            f"| {workload} | {temperature} | {base:.2f} | "
            + " | ".join(f"{ratios[s]:.2f}x" for s in (AGAIN, *SOURCES))
            + f" | {ratios['auto'] / best:.2f} | {totals['auto'] / best_totals:.2f} "
            f"| {picks} | {accepts} "
            f"| {same_text(by, [AGAIN, *SOURCES])} "
            f"| {len(by[AGAIN])}, {len(by['auto'])} |"
        )
    lines += [
        rerun_note(runs),
        SAME_TEXT_NOTE,
        "\n### acceptance per source and workload (T = 0; a draft of 4 at every position of "
        "the target's greedy output; coverage = positions with a proposal)\n",
        "| workload | " + " | ".join(s for s in SOURCES if s != "auto") + " |",
        "|---" * len(SOURCES) + "|",
    ]
    for workload, by_source in sorted(acceptance.items()):
        lines.append(
            f"| {workload} | "
            + " | ".join(
                f"{v['acceptance']:.0%} (coverage {v['coverage']:.0%})" for v in by_source.values()
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


def _as_best_single(by: dict[str, list[Run]], source: str, measured: float) -> float:
    """A source's ratio as the best single source: a source that drafted nothing in the cell
    ran no speculation (plus its lookups, never faster): 1.00, not the noise of its pairs
    (the highest of three such readings is +2% on this VM, whatever auto does)."""
    return measured if any(r.drafted for r in by[source]) else 1.0


def _accept(runs: list[Run]) -> float:
    drafted = sum(r.drafted for r in runs)
    return sum(r.accepted for r in runs) / drafted if drafted else 0.0
