"""The soak's command line: its flags, the server's command and initializationOptions, and the
warm-up. `python -m bench.soak --help` lists the flags.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from spec_lsp import models


def parse(argv: list[str] | None = None, description: str = "") -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--minutes", type=float, default=None, help="default 30 without --keys")
    parser.add_argument("--keys", type=int, default=None, help="stop after this many keys")
    parser.add_argument(
        "--keys-per-second", type=float, default=None, help="a steady pace (default: human-like)"
    )
    parser.add_argument("--keystroke-s", type=float, default=0.15, help="human pace: mean s/key")
    parser.add_argument("--backend", choices=("llama", "fake"), default="llama")
    parser.add_argument(
        "--model",
        default=None,
        help="target GGUF, or a default model's name: smollm2-135m (default: the server's)",
    )
    parser.add_argument("--draft-model", default=None, help="a GGUF or a default model's name")
    parser.add_argument("--drafter", default="ngram", help="none, ngram, workspace, model, auto")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--documents", type=int, default=5)
    parser.add_argument("--sample-s", type=float, default=10.0, help="period of the table rows")
    parser.add_argument(
        "--warmup-s", type=float, default=None, help="default: 1/5 of the run, at most 120"
    )
    parser.add_argument(
        "--max-growth-mb",
        type=float,
        default=None,
        help="RSS growth allowed after the warm-up (default: 5 with the fake backend, 20 with a "
        "model: the server's caches are bounded, and filled during the warm-up)",
    )
    parser.add_argument("--drain-s", type=float, default=30.0, help="wait for the last answers")
    parser.add_argument("--load-timeout-s", type=float, default=600.0)
    parser.add_argument("--log-level", default=None, help="the server's --log-level")
    parser.add_argument(
        "--stderr",
        default=None,
        help="default bench/out/soak-<time>-<pid>.stderr.log (soaks side by side get one each)",
    )
    parser.add_argument("--out", default=None, help="write the report (markdown) here")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--no-stacks",
        dest="stacks",
        action="store_false",
        help="requests left open: shut the server down (default: SIGABRT, its stacks to stderr)",
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="another initializationOption, e.g. threads=1 (repeatable)",
    )
    args = parser.parse_args(argv)
    if args.minutes is None and args.keys is None:
        args.minutes = 30.0
    if args.max_growth_mb is None:
        args.max_growth_mb = 5.0 if args.backend == "fake" else 20.0
    return args


def model_path(model: str) -> str:
    """A GGUF path, or the name of a default model (`spec-lsp models list`) for its path."""
    if model in models.DEFAULT_MODELS:
        return str(models.default_model_path(model))
    return model


def server_command(args: argparse.Namespace) -> list[str]:
    command = [sys.executable, "-m", "spec_lsp.cli", "serve", "--backend", args.backend]
    if args.model:
        command += ["--model", model_path(args.model)]
    if args.log_level:
        command += ["--log-level", args.log_level]
    return command


def warmup_s(args: argparse.Namespace) -> float:
    """--warmup-s, else a fifth of the expected run, at most 2 minutes."""
    if args.warmup_s is not None:
        return float(args.warmup_s)
    if args.minutes is not None:
        expected = args.minutes * 60
    else:
        expected = args.keys / (args.keys_per_second or 1 / args.keystroke_s)
    return min(120.0, expected / 5)


def options(args: argparse.Namespace) -> dict[str, Any]:
    """initializationOptions"""
    options: dict[str, Any] = {"drafter": args.drafter, "maxTokens": args.max_tokens}
    if args.draft_model:
        options["draftModel"] = model_path(args.draft_model)
    return {**options, **named_settings(args.setting)}


def named_settings(pairs: list[str]) -> dict[str, Any]:
    """initializationOptions from NAME=JSON pairs (a value that is not JSON: the string)."""
    settings: dict[str, Any] = {}
    for setting in pairs:
        name, _, value = setting.partition("=")
        try:
            settings[name] = json.loads(value)
        except json.JSONDecodeError:
            settings[name] = value
    return settings
