"""Cross-file context: does a definition in another file reach the model, and does it help?

Single lines of real multi-module Python packages (installed ones, written elsewhere), each
using a name that another module of the same package defines and that the line's own file
mentions nowhere else but in its imports: without that other module, the model can only guess
what the name takes or does. The lines are found with `ast` and `tokenize` (`uses`), chosen
with a seed (`choose`). At each line the line is emptied to its indentation and completed
greedily to the end of the line; exact match of the line. Same model, same lines, one run:

- `plain`: plain llama-cpp-python FIM (places.Plain: the engine's window and FIM template with
  the file's path, `create_completion`), no context;
- `plain+module`: the same with the defining module in front in Qwen2.5-Coder's repository
  format (`<|repo_name|>` package, `<|file_sep|>` path, its text trimmed to `--context-tokens`
  around the definition, which is kept whole): what the model does when it sees the module;
- `spec-lsp`: an Invoked request through the server's scheduler (bench/in_process.py), the
  line's file open, nothing else;
- `spec-lsp+tab`: the defining module open in another tab (opened before the file);
- `spec-lsp+workspace`: the package's folder named as the workspace folder, nothing else open.

spec-lsp's documents carry their files' real URIs (as an editor sends them; the open file
stands for its copy on disk) and are closed after each ask, the models' KV emptied: each ask
comes to a file the server has not seen; the person reads for `--read-s` before asking
(context is evaluated while they read). The variants take turns going first.

    .venv/bin/python -m bench.crossfile [--lines 24] [--packages httpx click jinja2]
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import importlib.metadata
import importlib.util
import io
import random
import re
import statistics
import tokenize
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.common import ROOT, log
from bench.in_process import Server
from bench.places import Plain, emptied, engine_options, machine, report, with_plain
from spec_lsp.engine import Engine
from spec_lsp.prompts import fim

PACKAGES = ["httpx", "click", "jinja2"]
VARIANTS = ["plain", "plain+module", "spec-lsp", "spec-lsp+tab", "spec-lsp+workspace"]
SPEC = ("spec-lsp", "spec-lsp+tab", "spec-lsp+workspace")
CONTEXT_TOKENS = 1500  # the defining module's share of the ceiling's prompt
MIN_CHARS = 16  # shorter lines are trivial (`return x`, `raise E`)
PER_FILE = 2  # lines chosen from one file, at most
REPO_NAME = "<|repo_name|>"  # Qwen2.5-Coder's repository format (its file marker: the template's)
QUIET_MAX_S = 180.0  # --until-quiet: the longest reading (the block and the file prefix take ~40 s)


@dataclass(frozen=True)
class Use:
    """A line using `name`, defined in module `source` of the same package."""

    package: str
    path: str  # the line's file, from the package's parent folder (httpx/_client.py)
    line: int  # 0-based
    name: str
    source: str  # the defining module's file, as `path`
    expected: str  # the line's text, stripped


@dataclass
class Answer:
    variant: str
    text: str = ""  # the first line answered
    seconds: float = 0.0
    exact: bool = False
    prompt_tokens: int = 0  # (spec-lsp's: from its statistics)
    prompt_evaluated: int = 0
    context_tokens: int = 0  # of the prompt: the context block before the file's text
    context_chunks: list[dict[str, Any]] = field(default_factory=list)
    read_s: float = 0.0  # spec-lsp's: the reading before the ask


# ---------------------------------------------------------------------------------------------
# Finding the lines


def package_dir(name: str) -> Path:
    """Where package `name` lives (not imported: its spec only)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{name}: not an installed package")
    return Path(next(iter(spec.submodule_search_locations)))


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package at `root`."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if not all(p.isidentifier() for p in parts):
            continue
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def definitions(tree: ast.Module) -> dict[str, tuple[int, int]]:
    """Names a module defines at its top level (also under a top-level if/try) -> their lines,
    0-based, end exclusive, decorators included."""
    found: dict[str, tuple[int, int]] = {}

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            span = (node.lineno - 1, node.end_lineno or node.lineno)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                start = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
                found[node.name] = (start, span[1])
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        found[target.id] = span
            elif isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(node.orelse)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    return found


def imported_from(node: ast.ImportFrom, module: str, is_package: bool) -> str | None:
    """The absolute module an `from ... import` names (relative ones resolved)."""
    if not node.level:
        return node.module
    parts = module.split(".") if is_package else module.split(".")[:-1]
    if node.level - 1 > len(parts) - 1:
        return None
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def whole_lines(text: str) -> set[int]:
    """0-based lines that are a logical line of their own, with no comment: a statement or a
    block's header begins and ends on them."""
    lines: set[int] = set()
    start, comment = 0, False
    skip = (tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING)
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in skip:
            continue
        if token.type == tokenize.COMMENT:
            comment = comment or bool(start)  # (a line of its own: no logical line's)
            continue
        if token.type == tokenize.NEWLINE:
            if start == token.start[0] and not comment:
                lines.add(start - 1)
            start, comment = 0, False
        elif not start:
            start = token.start[0]
    return lines


def type_hints(tree: ast.Module) -> list[ast.expr]:
    """The type annotations in `tree` (a name there is a hint, not a use)."""
    found: list[ast.expr | None] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        elif isinstance(node, ast.arg):
            found.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(node.returns)
    return [a for a in found if a is not None]


def siblings(
    tree: ast.Module,
    module: str,
    is_package: bool,
    defined: dict[str, dict[str, tuple[int, int]]],
) -> tuple[dict[str, str], set[int]]:
    """The names `module` imports from other modules of its package that define them (no
    alias) -> those modules; and the 0-based lines of all its import statements."""
    imported: dict[str, str] = {}
    in_imports: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            in_imports.update(range(node.lineno - 1, node.end_lineno or node.lineno))
        if not isinstance(node, ast.ImportFrom):
            continue
        source = imported_from(node, module, is_package)
        for alias in node.names:
            if (
                source in defined
                and source != module
                and alias.asname in (None, alias.name)
                and alias.name in defined[source]
            ):
                imported[alias.name] = source
    return imported, in_imports


def uses(root: Path) -> list[Use]:
    """Every line of the package at `root` that uses (reads) a name imported from another of
    its modules, which defines it, and that its file mentions nowhere else but in import
    statements; a whole statement (or block header) of its own, no comment, at least MIN_CHARS,
    neither a definition (def, class, decorator) nor opening with the name (the line is about
    using it, not guessing that it comes). In file and line order."""
    mods = modules(root)
    trees: dict[str, ast.Module] = {}
    texts: dict[str, str] = {}
    for module, path in mods.items():
        try:
            texts[module] = path.read_text(encoding="utf-8")
            trees[module] = ast.parse(texts[module])
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
    defined = {m: definitions(t) for m, t in trees.items()}
    found = []
    for module, tree in trees.items():
        text = texts[module]
        lines = text.split("\n")
        whole = whole_lines(text)
        imported, in_imports = siblings(tree, module, mods[module].name == "__init__.py", defined)
        reads = defaultdict(list)  # name -> the lines it is read on (annotations aside)
        hints = {id(n) for a in type_hints(tree) for n in ast.walk(a)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                if id(node) not in hints:
                    reads[node.id].append(node.lineno - 1)
        for name, source in sorted(imported.items()):
            word = re.compile(rf"\b{re.escape(name)}\b")
            mentions = [
                i for i, line in enumerate(lines) if i not in in_imports and word.search(line)
            ]
            if len(mentions) != 1 or len(word.findall(lines[mentions[0]])) != 1:
                continue
            i = mentions[0]
            code = lines[i].strip()
            if (
                reads[name] != [i]
                or i not in whole
                or len(code) < MIN_CHARS
                or code.startswith(("def ", "async def ", "class ", "@"))
                or word.match(code)
            ):
                continue
            found.append(
                Use(
                    root.name,
                    mods[module].relative_to(root.parent).as_posix(),
                    i,
                    name,
                    mods[source].relative_to(root.parent).as_posix(),
                    code,
                )
            )
    return sorted(found, key=lambda u: (u.path, u.line))


def choose(found: list[Use], n: int, seed: int) -> list[Use]:
    """`n` of `found`, the same for the same seed: the packages take turns, each in its own
    shuffled order; at most PER_FILE lines of a file, and a name defined in a module once."""
    rng = random.Random(seed)
    queues: dict[str, list[Use]] = defaultdict(list)
    for use in found:
        queues[use.package].append(use)
    for queue in queues.values():
        rng.shuffle(queue)
    chosen: list[Use] = []
    per_file: dict[str, int] = defaultdict(int)
    names: set[tuple[str, str]] = set()
    while len(chosen) < n and any(queues.values()):
        for queue in queues.values():
            while queue and len(chosen) < n:
                use = queue.pop(0)
                if per_file[use.path] < PER_FILE and (use.source, use.name) not in names:
                    chosen.append(use)
                    per_file[use.path] += 1
                    names.add((use.source, use.name))
                    break
    return chosen


def excerpt(text: str, span: tuple[int, int], budget: int, count: Callable[[str], int]) -> str:
    """The lines of `text` around `span` (a definition, kept whole) within `budget` tokens: a
    line above, a line below, in turn, while they fit (a definition over the budget: its
    first lines that fit)."""
    lines = text.splitlines(keepends=True)
    cost = [count(line) for line in lines]
    start, end = span
    used = sum(cost[start:end])
    if used > budget:
        while end > start + 1 and used > budget:
            end -= 1
            used -= cost[end]
        return "".join(lines[start:end])
    grew = True
    while grew:
        grew = False
        if start > 0 and used + cost[start - 1] <= budget:
            start, used, grew = start - 1, used + cost[start - 1], True
        if end < len(lines) and used + cost[end] <= budget:
            end, used, grew = end + 1, used + cost[end], True
    return "".join(lines[start:end])


def repository(
    package: str, source: str, text: str, file_marker: str = "<|file_sep|>"
) -> list[fim.Segment]:
    """Another file in front of the FIM prompt, in Qwen2.5-Coder's repository format."""
    body = text if text.endswith("\n") else text + "\n"
    return [
        fim.Segment(REPO_NAME, True),
        fim.Segment(f"{package}\n", False),
        fim.Segment(file_marker, True),
        fim.Segment(f"{source}\n{body}", False),
    ]


def same_line(got: str, expected: str) -> bool:
    """The answer's first line is the line (trailing blanks aside)."""
    return got.split("\n")[0].rstrip() == expected


# ---------------------------------------------------------------------------------------------
# Asking


async def ask_all(
    server: Server,
    plain: Plain,
    chosen: list[Use],
    roots: dict[str, Path],
    variants: list[str],
    args: argparse.Namespace,
) -> list[dict[str, Any]]:
    """Every variant at every line (their order rotating by line); a result per line."""
    count = lambda text: len(plain.llm.tokenize(text.encode(), add_bos=False))  # noqa: E731
    results = []
    for n, use in enumerate(chosen):
        root = roots[use.package]
        text = (root.parent / use.path).read_text(encoding="utf-8")
        prefix, suffix, expected = emptied(text, use.line)
        answers = {}
        for variant in turns(variants, n):
            if variant in SPEC:
                answer = await ask_spec(
                    server, use, variant, root, prefix, suffix, args.read_s, args.until_quiet
                )
            else:
                answer = Answer(variant)
                before: list[fim.Segment] = []
                if variant == "plain+module":
                    source = (root.parent / use.source).read_text(encoding="utf-8")
                    span = definitions(ast.parse(source))[use.name]
                    shown = excerpt(source, span, args.context_tokens, count)
                    assert plain.template is not None  # (main: Qwen2.5-Coder's)
                    before = repository(use.package, use.source, shown, plain.template.file_marker)
                    answer.context_tokens = count(shown)
                async with server.paused():
                    answer.text, answer.seconds = plain.complete(
                        prefix, suffix, file_name=use.path, before=before
                    )
                answer.text = answer.text.split("\n")[0]
            answer.exact = same_line(answer.text, expected)
            answers[variant] = answer
        log(
            f"{n + 1:3d} {use.path}:{use.line + 1} {use.name}: "
            + " ".join(
                f"{v} {'Y' if answers[v].exact else '-'} {answers[v].seconds:.1f}s"
                f" ctx {answers[v].context_tokens} read {answers[v].read_s:.0f}s"
                for v in variants
            )
            + f"   expected: {expected[:60]}"
        )
        results.append({"use": asdict(use), "answers": [asdict(answers[v]) for v in variants]})
    return results


async def ask_spec(
    server: Server,
    use: Use,
    variant: str,
    root: Path,
    prefix: str,
    suffix: str,
    read_s: float,
    quiet: bool = False,
) -> Answer:
    """The line's file opened with the line emptied (its real URI), the defining module in
    another tab or the package as the workspace folder as `variant` says; `read_s` of reading
    (and on until the server is quiet with `quiet`),
    an Invoked request; then every document closed and the workspace folders forgotten."""
    uri = (root.parent / use.path).as_uri()
    opened = [uri]
    if variant == "spec-lsp+workspace":
        server.engine.set_workspace_folders([str(root)])
    if variant == "spec-lsp+tab":  # a tab the person had open before coming to the file
        tab = root.parent / use.source
        server.open(server.request(tab.as_uri(), tab.name, "", tab.read_text(encoding="utf-8")))
        opened.append(tab.as_uri())
    request = server.request(uri, Path(use.path).name, prefix, suffix)
    server.edit(request)
    read = await server.read_until_quiet(read_s, read_s + (QUIET_MAX_S if quiet else 0.0))
    completion, seconds = await server.ask(request)
    answer = Answer(variant, seconds=seconds, read_s=read)
    if completion is not None:
        stats = completion.stats
        answer.text = completion.text.split("\n")[0]
        answer.prompt_tokens = stats.prompt_tokens
        answer.prompt_evaluated = stats.prompt_tokens_evaluated
        answer.context_tokens = getattr(stats, "context_tokens", 0)
        answer.context_chunks = list(getattr(stats, "context_chunks", []))
    await forget(server, opened)
    return answer


async def forget(server: Server, opened: list[str]) -> None:
    """The documents `opened` closed, the workspace folders forgotten, the KV emptied: the
    next ask comes to a server that has seen nothing (the server paused meanwhile)."""
    async with server.paused():
        for document in opened:
            await server.close_document(document)
        server.engine.set_workspace_folders([])
        await server.scheduler.run(lambda: cold(server.engine))


def turns(variants: list[str], n: int) -> list[str]:
    """The order of the variants at the `n`th line: spec-lsp's in turn first among them, and
    plain's before or after them, every other line."""
    spec = [v for v in variants if v in SPEC]
    plain = [v for v in variants if v not in SPEC]
    if spec:
        spec = spec[n % len(spec) :] + spec[: n % len(spec)]
    if plain:
        plain = plain[n % len(plain) :] + plain[: n % len(plain)]
    return plain + spec if n % 2 else spec + plain


def cold(engine: Engine) -> None:
    """Nothing of the last ask left in the models' KV: each spec-lsp ask comes to a file the
    server has not seen (as the first variant would, else the others find its prompt there)."""
    if engine.ready and engine.settings.engine == "local":
        loaded = engine.parts.models
        loaded.target.truncate(0)
        if loaded.draft is not None:
            loaded.draft.truncate(0)


# ---------------------------------------------------------------------------------------------
# Reporting

WITHOUT = {"plain+module": "plain", "spec-lsp+tab": "spec-lsp", "spec-lsp+workspace": "spec-lsp"}


def render(results: list[dict[str, Any]], variants: list[str], header: str) -> str:
    """The summary (exact matches and time per variant, each variant with context against the
    same without it), then every line and which variants matched it."""
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for result in results:
        for answer in result["answers"]:
            by[answer["variant"]].append(answer)
    total = len(results)
    exact = {v: sum(a["exact"] for a in by[v]) for v in variants}
    p50 = {v: statistics.median([a["seconds"] for a in by[v]]) if by[v] else 0.0 for v in variants}
    rows = [
        header,
        "",
        "| variant | exact | exact vs without context | time p50 (s) | time vs without context "
        "| context tokens p50 | reading p50 (s) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for v in variants:
        base = WITHOUT.get(v)
        ratio_exact = ratio_time = ""
        if base in exact:
            ratio_exact = f"{exact[v] / exact[base]:.2f}x" if exact[base] else f"{exact[v]} vs 0"
            ratio_time = f"{p50[v] / p50[base]:.2f}x" if p50[base] else ""
        context = statistics.median([a["context_tokens"] for a in by[v]]) if by[v] else 0
        read = statistics.median([a.get("read_s", 0.0) for a in by[v]]) if v in SPEC else None
        rows.append(
            f"| {v} | {exact[v]}/{total} | {ratio_exact} | {p50[v]:.2f} | {ratio_time} | "
            f"{context:.0f} | {'' if read is None else f'{read:.1f}'} |"
        )
    rows += [
        "",
        "| # | line | uses | defined in | " + " | ".join(variants) + " | expected |",
        "|---:|---|---|---|" + "---|" * len(variants) + "---|",
    ]
    for n, result in enumerate(results, 1):
        use = result["use"]
        rows.append(line_row(n, use, ["✓" if a["exact"] else "·" for a in result["answers"]]))
    return "\n".join(rows) + "\n"


def line_row(n: int, use: dict[str, Any], cells: Sequence[str]) -> str:
    """The `n`th line's row of a table: its place, name and defining module, `cells`, and the
    line itself."""
    code = use["expected"].replace("|", "\\|")
    return (
        f"| {n} | {use['path']}:{use['line'] + 1} | `{use['name']}` | {use['source']} | "
        + " | ".join(cells)
        + f" | `{code}` |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--packages", nargs="+", default=PACKAGES)
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=VARIANTS)
    parser.add_argument(
        "--read-s", type=float, default=5.0, help="idle seconds before each spec-lsp ask"
    )
    parser.add_argument(
        "--until-quiet",
        action="store_true",
        help="after --read-s, read on until spec-lsp has no idle work left (at most "
        f"{QUIET_MAX_S:.0f} s more): the quality with its context evaluated",
    )
    parser.add_argument(
        "--context-tokens",
        type=int,
        default=CONTEXT_TOKENS,
        help="the defining module's tokens in plain+module's prompt",
    )
    engine_options(parser)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "crossfile.md"))
    args = parser.parse_args()
    variants = [v for v in VARIANTS if v in args.variants]
    roots = {name: package_dir(name) for name in args.packages}
    found = [use for root in roots.values() for use in uses(root)]
    chosen = choose(found, args.lines, args.seed)
    log(f"{len(found)} candidate lines in {', '.join(args.packages)}; {len(chosen)} chosen")
    engine, plain, extra = with_plain(args)
    if "plain+module" in variants and (plain.template is None or plain.template.name != "qwen"):
        raise SystemExit("plain+module is written in Qwen2.5-Coder's repository format")
    server = Server(engine, engine.settings)
    title = machine(plain.model_path)
    try:
        results = asyncio.run(ask_all(server, plain, chosen, roots, variants, args))
    finally:
        server.close()
    versions = ", ".join(f"{name} {package_version(name)}" for name in args.packages)
    header = (
        f"# Cross-file context: {title}\n\n"
        f"`python -m bench.crossfile {' '.join(_argv_shown(args))}`; "
        f"{len(results)} lines of {len(found)} found in {versions}; spec-lsp settings: "
        f"{extra or 'defaults'}, {args.read_s:g} s of reading before each ask"
        f"{' and on until spec-lsp was quiet' if args.until_quiet else ''}; plain+module: "
        f"the defining module within {args.context_tokens} tokens. Exact: the answer's first "
        f"line is the line. Time: to the answer (spec-lsp: after the reading)."
    )
    report(
        Path(args.out),
        render(results, variants, header),
        {"results": results, "settings": extra, "read_s": args.read_s, "packages": versions},
    )


def package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "(standard library)"


def _argv_shown(args: argparse.Namespace) -> list[str]:
    shown = [f"--lines {args.lines}"]
    shown += [f"--seed {args.seed}"] if args.seed else []
    shown += [f"--packages {' '.join(args.packages)}"] if args.packages != PACKAGES else []
    shown += [f"--variants {' '.join(args.variants)}"] if args.variants != VARIANTS else []
    shown += [f"--read-s {args.read_s:g}"] if args.read_s != 5.0 else []
    shown += ["--until-quiet"] if args.until_quiet else []
    shown += (
        [f"--context-tokens {args.context_tokens}"] if args.context_tokens != CONTEXT_TOKENS else []
    )
    shown += [f"--setting {s}" for s in args.setting]
    return shown


if __name__ == "__main__":
    main()
