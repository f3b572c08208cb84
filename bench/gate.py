"""The confidence gate (engine/finishing/confidence.py) for one model: fitted, chosen and judged on
three separate sets of places, and (`--fit`) its weights stored for that model.

Lines of real modules of the running interpreter's standard library, chosen by a rule
(fim_quality.candidate_lines: over 25 characters after line 20, no comment, def, class or
decorator, docstring prose included; a seeded sample of LINES_PER_MODULE per module), each asked
at up to four places (`KINDS`): emptied after its indentation (`start`); typed up to a seeded
character with the rest not yet written (`typing`, at the line's end); inside the line, a seeded
span of it removed with the rest of the line after the cursor (`mid_line`); and typed up to an
opening bracket whose closer the editor inserted (`in_bracket`: the cursor between them, the
bracket's contents to write; lines with a bracket closed on the line). Each is an Automatic
request through the engine (in process; cache off, so each is asked cold). A suggestion is good
if its first line begins what the person was about to type (they accept it).

Three sets of modules, none sharing a module: FIT gives the rows the logistic model is fitted
on; CHOOSE the rows the features are chosen on (forward selection by log loss) and the
threshold (the one that hides the most wrong suggestions there while keeping KEEP of the good);
JUDGE, used for nothing else, the figures: the share of the wrong suggestions hidden, of the
good ones still shown, and of all Automatic suggestions hidden, at the chosen threshold and at
the default. Typing replays (gate_replay.py: a simulated person takes or leaves what is shown)
add rows to each set with `--replay`.

    spec-lsp bench gate [--model M.gguf]   # asks (~25 min on 2 cores for Qwen 1.5B), reports
    spec-lsp bench gate --refit            # again from the saved asks
    spec-lsp bench gate --fit              # ... and stores the weights for the model
    spec-lsp bench gate --guided           # the judge set asked again with the guide at work

`--guided`: the judge set's places asked again with each module open in the engine (its text
with the place's edit) and its analysis ready, so that the guide (names that exist) masks
where it resolves a receiver and the gate reads the guided probabilities; the model and
threshold fitted and chosen as before (on the saved fit and choose asks), the judge figures
from the guided asks (`gate-guided.md`).
"""

from __future__ import annotations

import argparse
import math
import random
import sysconfig
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bench import gate_replay
from bench.common import ROOT, log, read_results, write_results
from bench.fim_quality import candidate_lines
from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, Completion, CompletionRequest, DecodeStats, build_engine
from spec_lsp.engine.toolkit import GateModel, confidence, gate_weights

FIT = ["textwrap.py", "json/decoder.py", "csv.py", "shlex.py", "fractions.py", "heapq.py"]
FIT += ["bisect.py", "difflib.py"]
CHOOSE = ["calendar.py", "configparser.py", "ipaddress.py", "statistics.py", "tokenize.py"]
CHOOSE += ["pprint.py", "gettext.py", "locale.py"]
JUDGE = ["string.py", "base64.py", "quopri.py", "smtplib.py", "ftplib.py", "sched.py"]
JUDGE += ["netrc.py", "plistlib.py"]
SETS = {"fit": FIT, "choose": CHOOSE, "judge": JUDGE}
KINDS = ("start", "typing", "mid_line", "in_bracket")
LINES_PER_MODULE = 4
KEEP = 0.85  # of the good suggestions still shown, at least, at the threshold chosen
MIN_GAIN = 0.002  # a feature is added while it lowers the choose set's mean log loss this much
RESULTS = ROOT / "bench" / "results"
THRESHOLDS = [round(0.05 * i, 2) for i in range(0, 20)]
OUTCOMES = ("accepted", "partial", "rejected")
CLOSERS = {"(": ")", "[": "]", "{": "}"}


def places(modules: list[str], per_module: int, seed: int = 0) -> list[dict[str, str]]:
    """The held-out places of the lines chosen, up to one of each kind a line (`KINDS`)."""
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
            span = rng.randrange(3, 13)  # (drawn for every line: the same seed, the same places)
            at = {
                "start": (0, len(line)),  # (typed, removed up to)
                "typing": (cut, len(line)),
                "mid_line": (cut, min(len(line) - 1, cut + span)),
            }
            bracket = _bracket(line, rng)
            if bracket is not None:
                at["in_bracket"] = bracket
            for kind, (typed, upto) in at.items():
                rest = line[upto:]
                found.append(
                    {
                        "module": name,
                        "kind": kind,
                        "prefix": head + line[:typed],
                        "suffix": rest + tail,
                        "expected": line[typed:upto],
                    }
                )
    return found


def _bracket(line: str, rng: random.Random) -> tuple[int, int] | None:
    """A seeded opening bracket of `line` closed on it, with something inside: (the cursor
    after it, the closer's index)."""
    pairs, stack = [], []
    for i, char in enumerate(line):
        if char in CLOSERS:
            stack.append(i)
        elif char in CLOSERS.values() and stack:
            start = stack.pop()
            if CLOSERS[line[start]] == char and i > start + 1:
                pairs.append((start + 1, i))
    return rng.choice(pairs) if pairs else None


def good(shown: str, row: dict[str, Any]) -> bool:
    """A person about to type `expected` accepts a suggestion whose first line begins it."""
    first = shown.split("\n", 1)[0].rstrip()
    if row["kind"] == "start":
        first = first.lstrip()  # (the cursor is after the indentation: the model may add it)
    return bool(first.strip()) and row["expected"].startswith(first)


def ask(
    asked_at: list[dict[str, str]], settings: Settings, *, guided: bool = False
) -> list[dict[str, Any]]:
    """Each place asked once (Automatic), with what the gate would read of the answer;
    `guided`: the module open with the place's text and analysed first (the guide at work)."""
    engine = gate_replay.loaded(settings)
    engine.parts.analyses.analyser.max_receivers = 12  # (the cursor's receiver comes first)
    asked = []
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    try:
        for n, place in enumerate(asked_at, 1):
            document = (stdlib / place["module"]).as_uri() if guided else ""
            if guided:
                engine.document_changed(document, place["prefix"] + place["suffix"])
                engine.parts.analyses.wait(document, 120)
            request = CompletionRequest(
                prefix=place["prefix"],
                suffix=place["suffix"],
                document_id=document or f"bench://{place['module']}",
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
                    "masked": completion.stats.guide_masked,
                    "changed": completion.stats.guide_changed,
                }
            )
            log(f"{n:3d}/{len(asked_at)} good={asked[-1]['good']} {place['expected'][:50]!r}")
    finally:
        engine.close()
    return asked


def fit(
    rows: list[dict[str, Any]], names: tuple[str, ...] = confidence.USED, l2: float = 1.0
) -> GateModel:
    """Logistic regression (Newton's method, L2 on the weights, not the bias) of good ~
    features (those `names`; the others weigh 0)."""
    usable = [(r, f) for r in rows if (f := features_of(r)) is not None]
    x = np.array([[f[name] for name in names] for _r, f in usable], np.float64)
    y = np.array([float(r["good"]) for r, _f in usable])
    x = np.hstack([np.ones((len(x), 1)), x.reshape(len(usable), len(names))])
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
    weights.update({f: float(v) for f, v in zip(names, w[1:])})
    return GateModel(bias=float(w[0]), weights=weights, fitted_on="", source="fitted")


def features_of(row: dict[str, Any]) -> dict[str, float] | None:
    """The row's features as the gate reads them now (a refit follows feature changes)."""
    assessed = confidence.assess(_request(row), _completion(row), row.get("last"))
    return assessed.features if assessed is not None else None


def gated(row: dict[str, Any], threshold: float, model: GateModel) -> str:
    """What the gate shows of the asked row at `threshold` with `model`'s weights."""
    return confidence.gate(_request(row), _completion(row), threshold, row.get("last"), model)[0]


def _request(row: dict[str, Any]) -> CompletionRequest:
    return CompletionRequest(prefix=row["before"], suffix=row["after"])


def _completion(row: dict[str, Any]) -> Completion:
    stats = DecodeStats(token_logprobs=list(row["logprobs"]))
    return Completion(text=row["text"], stats=stats, raw_text=row["raw"] or row["text"])


def curve(rows: list[dict[str, Any]], model: GateModel) -> list[dict[str, float]]:
    """Per threshold: suggestions shown, the good ones among them and the wrong ones, the
    precision, the share of the good suggestions (at threshold 0) still shown, and the share
    of all suggestions hidden."""
    answered = [r for r in rows if r["text"].strip()]
    points = []
    for threshold in THRESHOLDS:
        shown = [(r, text) for r in answered if (text := gated(r, threshold, model)).strip()]
        right = sum(good(text, r) for r, text in shown)
        good_ones = sum(good(r["text"], r) for r in answered)
        points.append(
            {
                "threshold": threshold,
                "answered": len(answered),
                "shown": len(shown),
                "good": right,
                "wrong": len(shown) - right,
                "precision": right / len(shown) if shown else math.nan,
                "kept": right / good_ones if good_ones else math.nan,
                "hidden": 1 - len(shown) / len(answered) if answered else math.nan,
            }
        )
    return points


def chosen(points: list[dict[str, float]], keep: float = KEEP) -> float:
    """The threshold that hides the most wrong suggestions while keeping `keep` of the good."""
    fine = [p for p in points if p["kept"] >= keep]
    return min(fine, key=lambda p: (p["wrong"], -p["threshold"]))["threshold"]


def at(points: list[dict[str, float]], threshold: float) -> dict[str, float]:
    return next(p for p in points if math.isclose(p["threshold"], threshold))


def wrong_hidden(points: list[dict[str, float]], threshold: float) -> float:
    base = points[0]["wrong"]
    return 1 - at(points, threshold)["wrong"] / base if base else math.nan


def render(points: list[dict[str, float]], marks: dict[float, str], title: str) -> str:
    lines_ = [
        f"### {title}",
        "",
        "| threshold | shown | good | wrong | precision | good still shown | wrong hidden | "
        "all hidden |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in points:
        mark = "".join(f" **({m})**" for t, m in marks.items() if math.isclose(p["threshold"], t))
        lines_.append(
            f"| {p['threshold']:.2f}{mark} | {p['shown']} | {p['good']} | {p['wrong']} | "
            f"{p['precision']:.0%} | {p['kept']:.0%} | {wrong_hidden(points, p['threshold']):.0%}"
            f" | {p['hidden']:.0%} |"
        )
    return "\n".join(lines_) + "\n"


def select(
    fit_rows: list[dict[str, Any]], choose_rows: list[dict[str, Any]]
) -> tuple[tuple[str, ...], list[str]]:
    """Forward selection on the choose set: from none, the feature (fitted on the fit set)
    that lowers the choose set's mean log loss most, while it lowers it by MIN_GAIN. Returns
    the features chosen and the table of the steps."""
    names: tuple[str, ...] = ()
    best = separation(choose_rows, fit(fit_rows, names))[0]
    rows = [
        "### Features chosen (fitted on the fit set, log loss and AUC on the choose set)",
        "",
        "| step | features | log loss | AUC |",
        "|---:|---|---:|---:|",
        f"| 0 | (bias only) | {best:.3f} | |",
    ]
    while True:
        trials = {}
        for name in confidence.FEATURES:
            if name not in names:
                trials[name] = separation(choose_rows, fit(fit_rows, (*names, name)))
        if not trials:
            break
        name, (loss, auc) = min(trials.items(), key=lambda item: item[1][0])
        if loss > best - MIN_GAIN:
            break
        names, best = (*names, name), loss
        rows.append(f"| {len(names)} | {', '.join(names)} | {loss:.3f} | {auc:.3f} |")
    rows.append("")
    rows.append(f"Chosen: {', '.join(names) or 'none'}.")
    return names, rows


def separation(rows: list[dict[str, Any]], model: GateModel) -> tuple[float, float]:
    """The model's mean log loss on `rows` and its AUC (good ranked above wrong)."""
    scored = [
        (confidence.score(f, model), bool(r["good"]))
        for r in rows
        if (f := features_of(r)) is not None
    ]
    eps = 1e-9
    loss = -sum(math.log(p + eps) if y else math.log(1 - p + eps) for p, y in scored)
    good_ = [p for p, y in scored if y]
    wrong = [p for p, y in scored if not y]
    pairs = sum((g > w) + 0.5 * (g == w) for g in good_ for w in wrong)
    auc = pairs / (len(good_) * len(wrong)) if good_ and wrong else math.nan
    return loss / max(1, len(scored)), auc


def by_kind(rows: list[dict[str, Any]], model: GateModel, threshold: float) -> str:
    """The judge set's figures at `threshold` per kind of place."""
    lines_ = [
        f"### The judge set by kind of place, at {threshold:.2f}",
        "",
        "| kind | answered | good | wrong hidden | good still shown | all hidden |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind in sorted({r["kind"] for r in rows}):
        points = curve([r for r in rows if r["kind"] == kind], model)
        p = at(points, threshold)
        lines_.append(
            f"| {kind} | {p['answered']} | {points[0]['good']} | "
            f"{wrong_hidden(points, threshold):.0%} | {p['kept']:.0%} | {p['hidden']:.0%} |"
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
        "--fit", action="store_true", help="and store the weights for the model (gate_weights)"
    )
    parser.add_argument("--replay", action="store_true", help="typing replays in every set")
    parser.add_argument("--per-module", type=int, default=LINES_PER_MODULE)
    parser.add_argument("--model", default=None, help="GGUF (default: the default model)")
    parser.add_argument("--out", type=Path, default=RESULTS / "gate")
    parser.add_argument(
        "--timing", type=int, default=0, metavar="N", help="only: the cost at N places"
    )
    parser.add_argument(
        "--guided", action="store_true", help="the judge set again with the guide at work"
    )
    args = parser.parse_args()
    raw = args.out.with_name(args.out.name + ".json.gz")  # (a name with a dot keeps it)
    if args.guided:
        text = guided_judge(read_results(raw), ask_settings(args))
        args.out.with_name(args.out.name + "-guided.md").write_text(text)
        print(text)
        return
    if args.timing:
        cost = timing(places(JUDGE, args.per_module)[: args.timing], ask_settings(args))
        args.out.with_name(args.out.name + "-cost.md").write_text(cost)
        print(cost)
        return
    if args.refit and raw.exists():
        data = read_results(raw)
    else:
        settings = ask_settings(args)
        data = {"model": model_path(settings), "per_module": args.per_module}
        for name, modules in SETS.items():
            data[name] = ask(places(modules, args.per_module), settings)
            if args.replay:
                typing = settings.model_copy(update={"cache": True})  # (the KV follows the text)
                key = f"replay_{name}"
                data[key] = gate_replay.replay(gate_replay.regions(modules), typing, key=key)
        write_results(raw, data)
    text, model = report(data, args.refit)
    args.out.with_name(args.out.name + ".md").write_text(text)
    print(text)
    if args.fit:
        path = gate_weights.save(gate_weights.model_key(data["model"]), model)
        log(f"weights for {Path(data['model']).name} stored in {path}")


def guided_judge(data: dict[str, Any], settings: Settings) -> str:
    """The report with the judge set asked again with the guide at work (fit and choose as
    saved), and what the guide did there."""
    asked = ask(places(JUDGE, data.get("per_module", LINES_PER_MODULE)), settings, guided=True)
    text, _model = report({**data, "judge": asked}, refit=True)
    masked = sum(r["masked"] > 0 for r in asked)
    changed = sum(r["changed"] > 0 for r in asked)
    same = sum(a["text"] == b["text"] for a, b in zip(asked, data["judge"], strict=False))
    good = [sum(r["good"] for r in rows) for rows in (asked, data["judge"])]
    exact = [sum(r["exact"] for r in rows) for rows in (asked, data["judge"])]
    return (
        text.replace("`spec-lsp bench gate --refit`", "`spec-lsp bench gate --guided`", 1)
        + f"\nThe judge set asked with the guide at work: {masked} of {len(asked)} answers "
        f"masked somewhere, {changed} changed by the mask; {same} answers the same text as "
        f"the saved unguided asks. Good (the first line begins what was typed): {good[0]} "
        f"with the guide, {good[1]} without; exact lines {exact[0]} and {exact[1]}.\n"
    )


def model_path(settings: Settings) -> str:
    """The model file the settings name (the default model's if none)."""
    engine = build_engine(settings)
    engine.load()
    try:
        return engine.parts.models.target.info.path
    finally:
        engine.close()


def rows_of(data: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return list(data[name]) + list(data.get(f"replay_{name}", []))


def report(data: dict[str, Any], refit: bool) -> tuple[str, GateModel]:
    """Features chosen on the choose set, the model fitted on the fit set, the threshold chosen
    on the choose set, the figures on the judge set; and the model (with those figures)."""
    fit_rows, choose_rows, judge_rows = (rows_of(data, name) for name in SETS)
    names, selection = select(fit_rows, choose_rows)
    model = fit(fit_rows, names)
    threshold = chosen(curve(choose_rows, model))
    shipped = confidence.SHIPPED_FOR.get(model.fitted_on)  # (the threshold in force by default)
    default = shipped.default_threshold if shipped else confidence.DEFAULT_THRESHOLD
    judged = curve(judge_rows, model)
    point = at(judged, threshold)
    figures = {
        "judge_places": point["answered"],
        "wrong_hidden": round(wrong_hidden(judged, threshold), 3),
        "good_shown": round(point["kept"], 3),
        "hidden": round(point["hidden"], 3),
    }
    name = Path(data["model"]).name
    model = replace(model, fitted_on=name, threshold=threshold, figures=figures)
    marks = {threshold: "chosen", default: "default"}
    kinds = ", ".join(f"{sum(r['kind'] == k for r in judge_rows)} {k}" for k in KINDS)
    sections = [
        render(judged, marks, f"The judge set ({len(JUDGE)} modules: {', '.join(JUDGE)})"),
        by_kind(judge_rows, model, threshold),
        by_kind(judge_rows, model, default),
        "\n".join(selection) + "\n",
        render(curve(choose_rows, model), marks, "The choose set (the threshold chosen here)"),
        render(curve(fit_rows, model), marks, "The fit set"),
    ]
    replays = data.get("replay_fit")
    replayed = (
        f"; typing replays in each set ({outcomes(replays)} in the fit set)" if replays else ""
    )
    return (
        f"# The confidence gate: {name}\n\n`spec-lsp bench gate{' --refit' if refit else ''}`"
        f": places in three sets of {len(FIT)} standard-library modules, "
        f"{data.get('per_module', LINES_PER_MODULE)} "
        f"lines each at up to four places ({', '.join(KINDS)}): {len(fit_rows)} to fit on, "
        f"{len(choose_rows)} to choose the features and threshold on, {len(judge_rows)} to "
        f"judge on ({kinds}){replayed}. Good: the first line shown begins what the person was "
        f"about to type.\n\n"
        f"**On the judge set at the chosen threshold {threshold:.2f}** (kept {KEEP:.0%} of the "
        f"good on the choose set): wrong hidden {figures['wrong_hidden']:.0%}, good still "
        f"shown {figures['good_shown']:.0%}, all Automatic suggestions hidden "
        f"{figures['hidden']:.0%} ({point['answered']} answered). At the default "
        f"{default:.2f}: wrong hidden {wrong_hidden(judged, default):.0%}, good still shown "
        f"{at(judged, default)['kept']:.0%}, hidden {at(judged, default)['hidden']:.0%}.\n\n"
        f"Fitted: bias {model.bias:+.3f}, "
        + ", ".join(f"{k} {v:+.3f}" for k, v in model.weights.items() if v)
        + "\n\n"
        + "\n".join(sections),
        model,
    )


def outcomes(rows: list[dict[str, Any]]) -> str:
    counts = {what: sum(r["outcome"] == what for r in rows) for what in OUTCOMES}
    return ", ".join(f"{n} {what}" for what, n in counts.items())


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
