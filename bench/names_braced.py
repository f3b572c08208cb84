"""Next-identifier match at dereferences in TypeScript, Go, Rust and Java: the guide on and off.

bench/names.py's measure for the brace languages (the analysis: tree-sitter's, through
spec_lsp/prompts/guide/structural.py). Cases by rule, from code no one here wrote, fetched
with the registries' own clients into `--sources` (npm: `npm pack`; Debian: `apt-get download`,
then `dpkg -x`; BeanShell's Java sources are a tarball inside its package): in each file below,
every `receiver.` (`receiver::` in Rust) that the monitor's trigger reads as a dereference (a
chain of names, outside strings and comments) past the file's first 30 lines, spread evenly,
kept where the analysis resolves the receiver, until `--per-file` are kept. The editor holds
the file with the rest of the line removed, the other files of its package on disk beside it;
the prompt is the file cut right after the `.`. Counted as in names.py: the next identifier
right, and a name written that is not among the receiver's members there.

    spec-lsp bench names-braced [--per-file 3] [--sources DIR]
"""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

from bench.common import log
from bench.names import SKIP_LINES, Case, measure, options, rendered_again
from spec_lsp.prompts.guide import trigger
from spec_lsp.prompts.guide.monitor import open_span

NPM = ("@tanstack/query-core@5.108.4", "rxjs@7.8.2")
DEBIAN = (
    "golang-github-google-go-cmp-dev",
    "golang-github-hashicorp-golang-lru-dev",
    "golang-github-gorilla-mux-dev",
    "librust-bytes-dev",
    "librust-indexmap-dev",
    "librust-semver-dev",
    "bsh-src",
)
GO = "deb/usr/share/gocode/src/github.com"
CARGO = "deb/usr/share/cargo/registry"
FILES = (  # the files that define each package's main types
    "npm/tanstack-query-core/package/src/query.ts",
    "npm/tanstack-query-core/package/src/queryObserver.ts",
    "npm/tanstack-query-core/package/src/mutation.ts",
    "npm/rxjs/package/src/internal/Subject.ts",
    "npm/rxjs/package/src/internal/Subscriber.ts",
    f"{GO}/google/go-cmp/cmp/compare.go",
    f"{GO}/google/go-cmp/cmp/options.go",
    f"{GO}/hashicorp/golang-lru/2q.go",
    f"{GO}/hashicorp/golang-lru/arc.go",
    f"{GO}/gorilla/mux/mux.go",
    f"{GO}/gorilla/mux/route.go",
    f"{CARGO}/bytes-1.2.1/src/bytes_mut.rs",
    f"{CARGO}/indexmap-1.9.2/src/map/core.rs",
    f"{CARGO}/indexmap-1.9.2/src/set.rs",
    f"{CARGO}/semver-1.0.14/src/eval.rs",
    f"{CARGO}/semver-1.0.14/src/parse.rs",
    "bsh/src/bsh/Interpreter.java",
    "bsh/src/bsh/Name.java",
    "bsh/src/bsh/BshMethod.java",
)


def fetch(root: Path) -> None:
    """The sources, once, with npm and apt-get (a file already there is not fetched again)."""
    npm, deb = root / "npm", root / "deb"
    if not npm.exists():
        npm.mkdir(parents=True)
        for spec in NPM:
            packed = subprocess.run(
                ["npm", "pack", "--silent", spec],
                cwd=npm,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()[-1]
            folder = npm / packed.rsplit("-", 1)[0]
            folder.mkdir(exist_ok=True)
            with tarfile.open(npm / packed) as tar:
                tar.extractall(folder, filter="data")
    if not deb.exists():
        deb.mkdir(parents=True)
        subprocess.run(["apt-get", "download", *DEBIAN], cwd=deb, check=True, capture_output=True)
        for package in sorted(deb.glob("*.deb")):
            subprocess.run(["dpkg", "-x", str(package), str(deb)], check=True)
    if not (root / "bsh").exists():
        with tarfile.open(deb / "usr/src/bsh-src/bsh.tar.gz") as tar:
            tar.extractall(root / "bsh", filter="data")


def candidates(path: Path) -> list[Case]:
    """Every dereference the trigger reads (`x.` or `x::`, the name right after it), in order."""
    text = path.read_text(encoding="utf-8", errors="replace")
    found, line_start, number = [], 0, 1
    for at, c in enumerate(text):
        if c == "\n":
            line_start, number = at + 1, number + 1
            continue
        if number <= SKIP_LINES or c not in ".:" or not _name_start(text, at + 1):
            continue
        cut = text[: at + 1]
        point = trigger.find(cut[line_start:], "braces")
        if point is None or point.written or point.sep or open_span(cut, "braces"):
            continue
        end = at + 1
        while end < len(text) and (text[end].isalnum() or text[end] == "_"):
            end += 1
        below = text.find("\n", at)
        document = cut + (text[below:] if below >= 0 else "")
        found.append(Case(str(path), number, point.receiver, text[at + 1 : end], cut, document))
    return found


def _name_start(text: str, at: int) -> bool:
    return at < len(text) and (text[at].isalpha() or text[at] == "_")


def main() -> None:
    args = options(__doc__.split("\n")[0], "names_braced.md", 3, 12, sources=True)
    if rendered_again(args):
        return
    root = Path(os.path.expanduser(args.sources))
    fetch(root)
    log(f"sources in {root}")
    files = [root / f for f in FILES]
    measure(args, files, candidates, command="spec-lsp bench names-braced", default_per_file=3)


if __name__ == "__main__":
    main()
