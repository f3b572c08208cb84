"""The confidence gate (engine/confidence.py): fitted on held-out places of some modules,
measured on those of others.

Lines of real modules of the running interpreter's standard library, chosen by a rule
(fim_quality.candidate_lines: over 25 characters after line 20, no comment, def, class or
decorator, docstring prose included; a seeded sample of LINES_PER_MODULE per module), each asked
at two places: emptied after its indentation, and typed up to a seeded character with the rest
not yet written. Each is an Automatic request through the engine (the default model, in
process; cache off, so each is asked cold). A suggestion is good if its first line begins what
the person was about to type (they accept it). FIT modules give the data the logistic model is
fitted on; TEST modules, never seen by the fit, give the curve: over the threshold, the
precision of what is shown and the share of the good suggestions still shown. Typing replays
(gate_replay.py) of other regions of the same modules add pauses where the person took or left
the last suggestion: fitted on with the FIT modules', measured on the TEST modules'.

    spec-lsp bench gate            # asks (~30 min on 2 cores), fits, measures
    spec-lsp bench gate --refit    # again from the saved asks
"""

from __future__ import annotations

import argparse
import math
import random
import sysconfig
import time
from pathlib import Path
from typing import Any

import numpy as np

from spec_lsp.bench import gate_replay
from spec_lsp.bench.common import ROOT, log, read_results, write_results
from spec_lsp.bench.fim_quality import candidate_lines
from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, Completion, CompletionRequest, DecodeStats, build_engine
from spec_lsp.engine.toolkit import confidence

FIT = ["textwrap.py", "json/decoder.py", "csv.py", "shlex.py", "fractions.py", "heapq.py"]
FIT += ["bisect.py", "difflib.py"]
TEST = ["calendar.py", "configparser.py", "ipaddress.py", "statistics.py", "tokenize.py"]
TEST += ["pprint.py", "gettext.py", "locale.py"]
LINES_PER_MODULE = 4
RESULTS = ROOT / "bench" / "results"
THRESHOLDS = [round(0.05 * i, 2) for i in range(0, 20)]
OUTCOMES = ("accepted", "partial", "rejected")


def places(modules: list[str], per_module: int, seed: int = 0) -> list[dict[str, str]]:
    """The held-out places, two per line chosen: `start`, the line emptied after its
    indentation; `typing`, the line typed up to a seeded character (not the first or last 3)
    and the rest of it not yet written, as a person pauses while typing it."""
    root = Path(sysconfig.get_paths()["stdlib"])
    rng = random.Random(seed)
    found = []
    for name in modules:
        text = (root / name).read_text().splitlines(keepends=True)
        candidates = candidate_lines(text)
        for i in sorted(rng.sample(candidates, min(per_module, len(candidates)))):
            line = text[i].strip()
            head = "".join(text[:i]) + text[i][: len(text[i]) - len(text[i].lstrip())]
            tail = "\n" + "".join(text[i + 1 :])
            cut = rng.randrange(3, len(line) - 3)
            for kind, typed in (("start", ""), ("typing", line[:cut])):
                found.append(
                    {
                        "module": name,
                        "kind": kind,
                        "prefix": head + typed,
                        "suffix": tail,
                        "expected": line[len(typed) :],
                    }
                )
    return found


def good(shown: str, row: dict[str, Any]) -> bool:
    """A person about to type `expected` accepts a suggestion whose first line begins it."""
    first = shown.split("\n", 1)[0].rstrip()
    if row["kind"] == "start":
        first = first.lstrip()  # (the cursor is after the indentation: the model may add it)
    return bool(first.strip()) and row["expected"].startswith(first)


def ask(asked_at: list[dict[str, str]], settings: Settings) -> list[dict[str, Any]]:
    """Each place asked once (Automatic), with what the gate would read of the answer."""
    engine = build_engine(settings)
    engine.load()
    asked = []
    try:
        for n, place in enumerate(asked_at, 1):
            request = CompletionRequest(
                prefix=place["prefix"],
                suffix=place["suffix"],
                document_id=f"bench://{place['module']}",
                file_name=place["module"],
                language="python",
                max_tokens=48,
                multiline=False,
            )
            started = time.perf_counter()
            completion = engine.complete(request, CancelToken())
            asked.append(
                {
                    **{k: place[k] for k in ("module", "kind", "expected")},
                    "before": place["prefix"][-2000:],  # (what the features read of the place)
                    "after": place["suffix"][:200],
                    "text": completion.text,
                    "raw": completion.raw_text,
                    "logprobs": completion.stats.token_logprobs,
                    "good": good(completion.text, place),
                    "exact": completion.text.strip() == place["expected"].strip(),
                    "seconds": time.perf_counter() - started,
                }
            )
            log(f"{n:3d}/{len(asked_at)} good={asked[-1]['good']} {place['expected'][:50]!r}")
    finally:
        engine.close()
    return asked


def fit(
    rows: list[dict[str, Any]], l2: float = 1.0, names: tuple[str, ...] = confidence.USED
) -> tuple[float, dict[str, float]]:
    """Logistic regression (Newton's method, L2 on the weights, not the bias) of good ~
    features (those `names`; the others weigh 0)."""
    usable = [(r, f) for r in rows if (f := features_of(r)) is not None]
    x = np.array([[f[name] for name in names] for _r, f in usable], np.float64)
    y = np.array([float(r["good"]) for r, _f in usable])
    x = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(x.shape[1])
    penalty = np.eye(x.shape[1]) * l2
    penalty[0, 0] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -60, 60)))
        gradient = x.T @ (p - y) + penalty @ w
        hessian = x.T @ (x * (p * (1 - p))[:, None]) + penalty + np.eye(len(w)) * 1e-6
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    weights = dict.fromkeys(confidence.FEATURES, 0.0)
    return float(w[0]), {**weights, **{f: float(v) for f, v in zip(names, w[1:])}}


def features_of(row: dict[str, Any]) -> dict[str, float] | None:
    """The row's features as the gate reads them now (a refit follows feature changes)."""
    assessed = confidence.assess(_request(row), _completion(row), row.get("last"))
    return assessed.features if assessed is not None else None


def gated(row: dict[str, Any], threshold: float) -> str:
    """What the gate shows of the asked row at `threshold` (confidence's weights)."""
    return confidence.gate(_request(row), _completion(row), threshold, row.get("last"))[0]


def _request(row: dict[str, Any]) -> CompletionRequest:
    return CompletionRequest(prefix=row["before"], suffix=row["after"])


def _completion(row: dict[str, Any]) -> Completion:
    stats = DecodeStats(token_logprobs=list(row["logprobs"]))
    return Completion(text=row["text"], stats=stats, raw_text=row["raw"] or row["text"])


def curve(rows: list[dict[str, Any]]) -> list[dict[str, float]]:
    """Per threshold: suggestions shown, the good ones among them
    and the wrong ones, the precision, and the share of the good suggestions (at threshold 0)
    still shown."""
    answered = [r for r in rows if r["text"].strip()]
    good_ones = [r for r in answered if good(r["text"], r)]
    points = []
    for threshold in THRESHOLDS:
        shown = [(r, text) for r in answered if (text := gated(r, threshold)).strip()]
        right = sum(good(text, r) for r, text in shown)
        still = sum(bool(gated(r, threshold).strip()) for r in good_ones)
        points.append(
            {
                "threshold": threshold,
                "shown": len(shown),
                "good": right,
                "wrong": len(shown) - right,
                "precision": right / len(shown) if shown else math.nan,
                "kept": still / len(good_ones) if good_ones else math.nan,
            }
        )
    return points


def chosen(points: list[dict[str, float]], keep: float = 0.85) -> float:
    """The threshold that cuts the most wrong suggestions while keeping `keep` of the good."""
    fine = [p for p in points if p["kept"] >= keep]
    return min(fine, key=lambda p: (p["wrong"], -p["threshold"]))["threshold"]


def render(points: list[dict[str, float]], default: float, title: str) -> str:
    base = points[0]
    lines_ = [
        f"### {title}",
        "",
        "| threshold | shown | good | wrong | precision | good still shown | wrong cut |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in points:
        mark = " **(default)**" if math.isclose(p["threshold"], default) else ""
        cut = 1 - p["wrong"] / base["wrong"] if base["wrong"] else math.nan
        lines_.append(
            f"| {p['threshold']:.2f}{mark} | {p['shown']} | {p['good']} | {p['wrong']} | "
            f"{p['precision']:.0%} | {p['kept']:.0%} | {cut:.0%} |"
        )
    return "\n".join(lines_) + "\n"


def timing(asked_at: list[dict[str, str]], settings: Settings) -> str:
    """What the gate costs: each place asked with the gate on and off in turn (ABBA order,
    cold), paired; the texts must be the same (the gate reads, it does not change the
    decode). Off, no token probability is computed."""
    engine = build_engine(settings)
    engine.load()
    on, off = settings, settings.model_copy(update={"gate_threshold": 0.0})
    seconds: dict[bool, list[float]] = {True: [], False: []}
    same = 0
    try:
        for n, place in enumerate(asked_at):
            request = CompletionRequest(
                prefix=place["prefix"], suffix=place["suffix"], max_tokens=48, multiline=False
            )
            texts = {}
            for gated_on in (True, False) if n % 2 == 0 else (False, True):
                engine.update_settings(on if gated_on else off)
                started = time.perf_counter()
                texts[gated_on] = engine.complete(request, CancelToken()).raw_text
                seconds[gated_on].append(time.perf_counter() - started)
            same += texts[True] == texts[False]
            log(
                f"{n + 1:3d}/{len(asked_at)} on {seconds[True][-1]:.2f} s, off {seconds[False][-1]:.2f} s"
            )
    finally:
        engine.close()
    ratios = [a / b for a, b in zip(seconds[True], seconds[False])]
    geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    p50 = {k: sorted(v)[len(v) // 2] for k, v in seconds.items()}
    return (
        f"\n### What the gate costs ({len(ratios)} places, gate on and off in turn, cold)\n\n"
        f"| | gate on | gate off |\n|---|---:|---:|\n"
        f"| time to the answer, p50 | {p50[True]:.2f} s | {p50[False]:.2f} s |\n\n"
        f"Paired ratio on/off: geometric mean {geomean:.3f}x (min {min(ratios):.2f}, max "
        f"{max(ratios):.2f}); the same text {same}/{len(ratios)}.\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--refit", action="store_true", help="from the saved asks")
    parser.add_argument(
        "--replay",
        action="store_true",
        help="ask only the typing replays (the saved held-out lines' asks are kept)",
    )
    parser.add_argument("--per-module", type=int, default=LINES_PER_MODULE)
    parser.add_argument("--model", default=None, help="GGUF (default: the default model)")
    parser.add_argument("--out", type=Path, default=RESULTS / "gate")
    parser.add_argument(
        "--timing", type=int, default=0, metavar="N", help="only: the cost at N places"
    )
    args = parser.parse_args()
    raw = args.out.with_suffix(".json.gz")
    if args.timing:
        cost = timing(places(TEST, args.per_module)[: args.timing], ask_settings(args))
        args.out.with_name(args.out.name + "-cost.md").write_text(cost)
        print(cost)
        return
    data = read_results(raw) if (args.refit or args.replay) and raw.exists() else {}
    if not args.refit:
        if not args.replay or "fit" not in data:
            settings = ask_settings(args)
            groups = {"fit": places(FIT, args.per_module), "test": places(TEST, args.per_module)}
            data.update({name: ask(group, settings) for name, group in groups.items()})
        typing = ask_settings(args).model_copy(
            update={"cache": True}
        )  # (typing: the KV follows the text)
        for name, modules in (("replay_fit", FIT), ("replay_test", TEST)):
            data[name] = gate_replay.replay(gate_replay.regions(modules), typing, key=name)
        write_results(raw, data)
    text = report(data, args.refit)
    args.out.with_suffix(".md").write_text(text)
    print(text)


def report(data: dict[str, list[dict[str, Any]]], refit: bool) -> str:
    """The fit, the curves on the held-out lines and replays, and what each feature adds."""
    fit_rows = data["fit"] + data.get("replay_fit", [])
    replays = data.get("replay_test", [])
    bias, weights = fit(fit_rows)
    log(f"fitted: BIAS = {bias:.3f}\nWEIGHTS = {weights}")
    confidence.BIAS, confidence.WEIGHTS = bias, weights  # (the curves: the fitted model)
    default = Settings().gate_threshold
    log(f"threshold keeping 85% of the good fitted-on suggestions: {chosen(curve(fit_rows))}")
    sections = [render(curve(data["test"]), default, "Held-out lines (modules not fitted on)")]
    if replays:
        sections.append(render(curve(replays), default, "Typing replays (modules not fitted on)"))
        sections.append(render(curve(data["test"] + replays), default, "Both"))
        sections.append(ablation(fit_rows, data["test"] + replays))
    sections.append(render(curve(fit_rows), default, "The places fitted on"))
    replayed = (
        f" and typing replays of {len(FIT)} + {len(TEST)} modules ({len(data['replay_fit'])} "
        f"+ {len(replays)} pauses with a suggestion, {outcomes(data['replay_fit'] + replays)})"
        if replays
        else ""
    )
    return (
        f"# The confidence gate\n\n`spec-lsp bench gate{' --refit' if refit else ''}`"
        f": {len(data['fit'])} places in {len(FIT)} modules to fit, {len(data['test'])} in "
        f"{len(TEST)} others to measure (half at a line's start, half mid-line){replayed}; "
        "good = the first line shown begins what the person was about to type.\n\n"
        f"Fitted: BIAS = {bias:.3f}, WEIGHTS = "
        + ", ".join(f"{k} {v:+.3f}" for k, v in weights.items())
        + "\n\n"
        + "\n".join(sections)
    )


def outcomes(rows: list[dict[str, Any]]) -> str:
    counts = {what: sum(r["outcome"] == what for r in rows) for what in OUTCOMES}
    return ", ".join(f"{n} {what}" for what, n in counts.items())


def ablation(fit_rows: list[dict[str, Any]], test_rows: list[dict[str, Any]]) -> str:
    """What each feature adds: the features the gate uses (confidence.USED), each other one
    added to them, each of them left out, and all; refitted each time, then on the held-out
    rows the log loss and AUC, and at the threshold the rule picks on the fitted-on places the
    wrong suggestions cut and the good ones kept."""
    saved = confidence.BIAS, confidence.WEIGHTS
    used = confidence.USED
    lines_ = [
        "### What each feature adds (refitted; on the held-out lines and replays)",
        "",
        "| features | log loss | AUC | threshold (fitted-on rule) | wrong cut | good kept |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    variants: list[tuple[str, tuple[str, ...]]] = [(f"used: {', '.join(used)}", used)]
    variants += [(f"+ {f}", (*used, f)) for f in confidence.FEATURES if f not in used]
    variants += [(f"- {f}", tuple(n for n in used if n != f)) for f in used if len(used) > 1]
    variants.append(("all", confidence.FEATURES))
    try:
        for name, names in variants:
            confidence.BIAS, confidence.WEIGHTS = fit(fit_rows, names=names)
            threshold = chosen(curve(fit_rows))
            points = curve(test_rows)
            at = next(p for p in points if math.isclose(p["threshold"], threshold))
            loss, auc = separation(test_rows)
            cut = 1 - at["wrong"] / points[0]["wrong"] if points[0]["wrong"] else math.nan
            lines_.append(
                f"| {name} | {loss:.3f} | {auc:.3f} | {threshold:.2f} | {cut:.0%} | "
                f"{at['kept']:.0%} |"
            )
    finally:
        confidence.BIAS, confidence.WEIGHTS = saved
    return "\n".join(lines_) + "\n"


def separation(rows: list[dict[str, Any]]) -> tuple[float, float]:
    """The current model's mean log loss on `rows` and its AUC (good ranked above wrong)."""
    scored = [
        (confidence.score(f), bool(r["good"])) for r in rows if (f := features_of(r)) is not None
    ]
    eps = 1e-9
    loss = -sum(math.log(p + eps) if y else math.log(1 - p + eps) for p, y in scored)
    good_ = [p for p, y in scored if y]
    wrong = [p for p, y in scored if not y]
    pairs = sum((g > w) + 0.5 * (g == w) for g in good_ for w in wrong)
    auc = pairs / (len(good_) * len(wrong)) if good_ and wrong else math.nan
    return loss / max(1, len(scored)), auc


def ask_settings(args: argparse.Namespace) -> Settings:
    """Every place asked cold, in a small window, for one line."""
    return Settings(
        drafter="none",
        prefix_tokens=256,
        suffix_tokens=96,
        file_prefix_tokens=0,
        context_tokens=0,
        cache=False,
        precompute=False,
        multiline="never",
        **({"model": args.model} if args.model else {}),
    )


if __name__ == "__main__":
    main()
