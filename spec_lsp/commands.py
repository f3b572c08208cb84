"""The command-line verbs other than `serve`, `schema` and `bench`: complete, models, demo,
profile, doctor.

Results go to stdout; progress and diagnostics to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from spec_lsp.config import Settings
from spec_lsp.engine import (
    CancelToken,
    Completion,
    CompletionRequest,
    EngineError,
    SamplingParams,
    build_engine,
)
from spec_lsp.engine.engine import Engine

DEMO_FILE = Path(__file__).parent / "samples" / "demo.py"
DEMO_LOCATION = f"{DEMO_FILE}:33:9"
LANGUAGES = {
    ".py": "python",
    ".js": "javascript",
    ".ts": "typescript",
    ".rs": "rust",
    ".go": "go",
    ".c": "c",
    ".cpp": "cpp",
    ".java": "java",
    ".lua": "lua",
    ".md": "markdown",
}


def run(args: argparse.Namespace, settings: Settings | None) -> int:
    try:
        if args.command == "models":
            return _models(args)
        assert settings is not None
        if args.command == "complete":
            return _complete(args, settings)
        if args.command == "demo":
            return _demo(settings)
        if args.command == "profile":
            return _profile(settings)
        if args.command == "doctor":
            from spec_lsp import doctor

            return doctor.run(args, settings)
    except EngineError as exc:
        print(f"spec-lsp: {exc}", file=sys.stderr)
        return 2
    raise SystemExit(f"unknown command {args.command}")


def request_at(location: str, settings: Settings) -> CompletionRequest:
    """FILE:LINE:COL (1-based line and column, column counted in characters)."""
    try:
        path, line_s, col_s = location.rsplit(":", 2)
        line, col = int(line_s), int(col_s)
    except ValueError:
        raise EngineError(f"location {location!r} is not FILE:LINE:COL (1-based)") from None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EngineError(f"cannot read {path}: {exc}") from exc
    lines = text.splitlines(keepends=True) or [""]
    if not (1 <= line <= len(lines) + 1):
        raise EngineError(f"{path} has {len(lines)} lines; line {line} is outside it")
    before = "".join(lines[: line - 1])
    current = lines[line - 1] if line <= len(lines) else ""
    body = current.rstrip("\r\n")
    if not (1 <= col <= len(body) + 1):
        raise EngineError(
            f"line {line} of {path} has {len(body)} characters; column {col} is outside it"
        )
    return CompletionRequest(
        prefix=before + body[: col - 1],
        suffix=current[col - 1 :] + "".join(lines[line:]),
        document_id=str(Path(path).resolve()),
        file_name=Path(path).name,
        language=LANGUAGES.get(Path(path).suffix, ""),
        max_tokens=settings.max_tokens,
        sampling=SamplingParams.from_settings(settings),
    )


def open_engine(settings: Settings, backend: str = "llama") -> Engine:
    engine = build_engine(settings, backend=backend)
    engine.load(progress=lambda msg: print(f"spec-lsp: {msg}", file=sys.stderr))
    if engine.needs_profile:
        print(
            "spec-lsp: measuring this machine's verify costs (once per model)...", file=sys.stderr
        )
        engine.ensure_profile()
    return engine


def _complete(args: argparse.Namespace, settings: Settings) -> int:
    request = request_at(args.location, settings)
    engine = open_engine(settings, args.backend)
    try:
        completion = engine.complete(request, CancelToken())
    finally:
        engine.close()
    if args.json:
        print(json.dumps({"text": completion.text, "stats": completion.stats.to_dict()}))
    else:
        print(completion.text)
    return 0


def _models(args: argparse.Namespace) -> int:
    from spec_lsp import models

    try:
        if args.models_command == "pull":
            for path in models.pull(args.names or None):
                print(f"ready: {path}")
            return 0
        print(models.format_table(models.list_models()))
        return 0
    except (models.ModelPullError, models.ModelFileError) as exc:
        print(f"spec-lsp: {exc}", file=sys.stderr)
        return 1


def _profile(settings: Settings) -> int:
    engine = build_engine(settings)
    engine.load()
    try:
        profile = engine.ensure_profile(remeasure=True)
    finally:
        engine.close()
    print(f"verify cost of n tokens relative to 1 (1 = {profile.verify(1) * 1000:.1f} ms):")
    for n, ratio in profile.relative().items():
        print(f"  n={n:<3d} {ratio:5.2f}x")
    print(
        f"draft: {profile.draft_seconds_per_token * 1000:.2f} ms/token + {profile.draft_seconds_fixed * 1000:.2f} ms/call"
    )
    return 0


DEMO_PAIRS = 5  # plain and speculative, back to back: one timing on a busy machine varies ±20%


def _demo(settings: Settings) -> int:
    print(
        f"Completing {DEMO_FILE.name} at line 33 (the body of `sell`) with {settings.drafter} drafts:\n"
    )
    request = request_at(DEMO_LOCATION, settings)
    engine = open_engine(settings)
    try:
        felt = _felt(engine, request)
        pairs = []
        for index in range(DEMO_PAIRS):
            pair = {}
            # which runs first alternates: a load that rises or falls over the pairs does not
            # favour one side
            order = ("none", settings.drafter)
            for drafter in order if index % 2 == 0 else order[::-1]:
                engine.update_settings(settings.model_copy(update={"drafter": drafter}))
                pair[drafter] = engine.complete(request, CancelToken())
            pairs.append((pair["none"], pair[settings.drafter]))
        profile = engine.stats().get("cost_profile")  # (None on a server: nothing measured)
        batch = profile.get(4) if profile else None
    finally:
        engine.close()
    plain, spec = pairs[-1]
    print(request.prefix.splitlines()[-1] + "\u2502" + spec.text)
    s = spec.stats
    print("\n--- speculative statistics ---")
    print(
        f"the last run: tokens {s.tokens} | drafted {s.drafted} | accepted {s.accepted} "
        f"({s.acceptance_rate:.0%}) | rounds {s.rounds} | target passes {s.target_passes}"
    )
    print(
        f"prompt: {s.prompt_tokens} tokens, {s.prompt_tokens_evaluated} evaluated in {s.prompt_seconds:.1f}s"
    )
    print(f"draft length per round: {s.k_trace}")
    ratios = sorted(
        sp.stats.tokens_per_second / max(pl.stats.tokens_per_second, 1e-9) for pl, sp in pairs
    )
    print(
        f"decode: {s.tokens_per_second:.1f} tok/s with {settings.drafter} drafts vs "
        f"{plain.stats.tokens_per_second:.1f} tok/s without; over {len(pairs)} pairs run back "
        f"to back, {ratios[len(ratios) // 2]:.2f}x the median ({ratios[0]:.2f}x-{ratios[-1]:.2f}x)"
    )
    if batch is not None:
        print(
            f"(verifying 4 tokens at once costs {batch:.2f}x one here: drafts pay where the "
            f"code repeats what the file says, and the policy drafts little elsewhere)"
        )
    print(f"same text as plain decoding: {all(sp.text == pl.text for pl, sp in pairs)}")
    print("\n--- what you wait for (model loaded, this file never seen before) ---")
    for line in felt:
        print(line)
    return 0


def _timed(engine: Engine, request: CompletionRequest) -> tuple[Completion, float, float]:
    """(completion, seconds to its first answer, seconds to the end of the generation)."""
    started = time.perf_counter()
    first: list[float] = []
    completion = engine.complete(
        request, CancelToken(), reply=lambda _c: first.append(time.perf_counter() - started)
    )
    total = time.perf_counter() - started
    return completion, (first[0] if first else total), total


def _felt(engine: Engine, request: CompletionRequest) -> list[str]:
    """The times a person feels: the first suggestion in the file, a keystroke typed into it,
    a new place in the same file (line 29 emptied to its indentation)."""
    lines = []
    shown, first_s, whole_s = _timed(engine, request)
    lines.append(
        f"first suggestion: {first_s:.2f}s to ghost text ({whole_s:.2f}s for the whole "
        f"{shown.stats.tokens}-token suggestion, the rest generated behind it); prompt "
        f"{shown.stats.prompt_tokens} tokens, {shown.stats.prompt_tokens_evaluated} evaluated"
    )
    if shown.text:
        typed = replace(request, prefix=request.prefix + shown.text[0], suffix=request.suffix)
        started = time.perf_counter()
        hit = engine.peek(typed)
        ms = (time.perf_counter() - started) * 1000
        lines.append(
            f"a keystroke typed into it: {ms:.1f} ms ({'from the cache' if hit else 'not cached'})"
        )
    text = request.prefix + request.suffix
    rows = text.split("\n")
    indent = rows[28][: len(rows[28]) - len(rows[28].lstrip())]
    place = replace(
        request,
        prefix="\n".join(rows[:28]) + "\n" + indent,
        suffix="\n" + "\n".join(rows[29:]),
    )
    moved, first_s, whole_s = _timed(engine, place)
    lines.append(
        f"a new place in the same file (line 29): {first_s:.2f}s to ghost text; prompt "
        f"{moved.stats.prompt_tokens} tokens, {moved.stats.prompt_tokens_evaluated} evaluated"
    )
    return lines
