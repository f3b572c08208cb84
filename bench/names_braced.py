"""Next-identifier match at dereferences in TypeScript, Go, Rust and Java: the guide on and off.

bench/names.py's measure for the brace languages (the analysis: tree-sitter's, through
spec_lsp/engine/guide/braced/structural.py). Cases by rule, from code no one here wrote, fetched
with the registries' own clients into `--sources` (npm: `npm pack`; Debian: `apt-get download`,
then `dpkg -x`; BeanShell's Java sources are a tarball inside its package, OpenJFX's a zip): in each file below,
every `receiver.` (`receiver::` in Rust) that the monitor's trigger reads as a dereference (a
chain of names, outside strings and comments) past the file's first 30 lines, spread evenly,
kept where the analysis resolves the receiver, until `--per-file` are kept. The editor holds
the file with the rest of the line removed, the other files of its package on disk beside it;
the prompt is the file cut right after the `.`. Counted as in names.py: the next identifier
right, and a name written that is not among the receiver's members there.

    spec-lsp bench names-braced --set choose|judge [--per-file 3] [--sources DIR]
"""

from __future__ import annotations

import os
import subprocess
import tarfile
import zipfile
from pathlib import Path

from bench.common import ROOT, log
from bench.names import SKIP_LINES, Case, measure, options, rendered_again
from spec_lsp.engine.toolkit import open_span, trigger

RESULTS = ROOT / "bench" / "results"
NPM = ("@tanstack/query-core@5.108.4", "rxjs@7.8.2", "mobx@7.1.3")
DEBIAN = (
    "golang-github-google-go-cmp-dev",
    "golang-github-hashicorp-golang-lru-dev",
    "golang-github-gorilla-mux-dev",
    "librust-bytes-dev",
    "librust-indexmap-dev",
    "librust-semver-dev",
    "bsh-src",
    "openjfx-source",
)
GO = "deb/usr/share/gocode/src/github.com"
CARGO = "deb/usr/share/cargo/registry"
JFX = "openjfx"  # (Debian's openjfx-source: OpenJFX 11's src.zip, a folder per module)
# Two sets of files, no file in both: `choose` (where whether a bias pays on incomplete member
# sets was chosen) and `judge` (where that choice is measured). In each package, files that
# define its main types; OpenJFX's: a central class of the internals of each module area,
# listed in a fixed order and dealt to the sets in turn (judge first), where the judge set
# had 4 Java cases from BeanShell alone.
CHOOSE = (
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
    f"{JFX}/javafx.graphics/com/sun/javafx/css/StyleManager.java",
    f"{JFX}/javafx.graphics/com/sun/prism/impl/BaseContext.java",
    f"{JFX}/javafx.controls/com/sun/javafx/scene/control/behavior/BehaviorBase.java",
    f"{JFX}/javafx.graphics/com/sun/javafx/sg/prism/NGNode.java",
    f"{JFX}/javafx.fxml/javafx/fxml/FXMLLoader.java",
    f"{JFX}/javafx.controls/javafx/scene/control/skin/VirtualFlow.java",
    f"{JFX}/javafx.swing/javafx/embed/swing/SwingNode.java",
)
JUDGE = (
    "npm/tanstack-query-core/package/src/queryCache.ts",
    "npm/tanstack-query-core/package/src/infiniteQueryObserver.ts",
    "npm/rxjs/package/src/internal/Subscription.ts",
    "npm/rxjs/package/src/internal/ReplaySubject.ts",
    "npm/mobx/package/src/core/atom.ts",
    "npm/mobx/package/src/types/observablevalue.ts",
    "npm/mobx/package/src/types/observablemap.ts",
    f"{GO}/google/go-cmp/cmp/path.go",
    f"{GO}/google/go-cmp/cmp/report_slices.go",
    f"{GO}/hashicorp/golang-lru/simplelru/lru.go",
    f"{GO}/gorilla/mux/regexp.go",
    f"{CARGO}/bytes-1.2.1/src/bytes.rs",
    f"{CARGO}/indexmap-1.9.2/src/map.rs",
    f"{CARGO}/semver-1.0.14/src/impls.rs",
    f"{CARGO}/semver-1.0.14/src/identifier.rs",
    "bsh/src/bsh/NameSpace.java",
    "bsh/src/bsh/Reflect.java",
    "bsh/src/bsh/BshClassManager.java",
    "bsh/src/bsh/This.java",
    f"{JFX}/javafx.graphics/com/sun/javafx/scene/traversal/TraversalEngine.java",
    f"{JFX}/javafx.graphics/com/sun/javafx/tk/quantum/QuantumToolkit.java",
    f"{JFX}/javafx.graphics/com/sun/glass/ui/Window.java",
    f"{JFX}/javafx.base/com/sun/javafx/binding/ExpressionHelper.java",
    f"{JFX}/javafx.web/com/sun/webkit/WebPage.java",
    f"{JFX}/javafx.media/com/sun/media/jfxmediaimpl/NativeMediaPlayer.java",
    f"{JFX}/javafx.graphics/com/sun/marlin/Renderer.java",
    f"{JFX}/javafx.graphics/com/sun/javafx/text/PrismTextLayout.java",
)
SETS = {"choose": CHOOSE, "judge": JUDGE}


def fetch(root: Path) -> None:
    """The sources, once, with npm and apt-get (a package already there is not fetched again)."""
    npm, deb = root / "npm", root / "deb"
    npm.mkdir(parents=True, exist_ok=True)
    for spec in NPM:
        folder = npm / spec.lstrip("@").rsplit("@", 1)[0].replace("/", "-")
        if folder.exists():
            continue
        packed = subprocess.run(
            ["npm", "pack", "--silent", spec], cwd=npm, check=True, capture_output=True, text=True
        ).stdout.split()[-1]
        folder.mkdir()
        with tarfile.open(npm / packed) as tar:
            tar.extractall(folder, filter="data")
    deb.mkdir(parents=True, exist_ok=True)
    wanted = [p for p in DEBIAN if not any(deb.glob(f"{p}_*.deb"))]
    if wanted:  # (a package added to the list later is fetched then)
        subprocess.run(["apt-get", "download", *wanted], cwd=deb, check=True, capture_output=True)
        for package in wanted:
            for found in sorted(deb.glob(f"{package}_*.deb")):
                subprocess.run(["dpkg", "-x", str(found), str(deb)], check=True)
    if not (root / "bsh").exists():
        with tarfile.open(deb / "usr/src/bsh-src/bsh.tar.gz") as tar:
            tar.extractall(root / "bsh", filter="data")
    if not (root / "openjfx").exists():  # (its sources are a zip: a folder per module)
        with zipfile.ZipFile(deb / "usr/share/openjfx/lib/src.zip") as zipped:
            zipped.extractall(root / "openjfx")


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
    args = options(__doc__.split("\n")[0], "", 3, 12, sources=True)
    args.out = args.out or str(RESULTS / f"names_braced_{args.set}.md")
    if rendered_again(args):
        return
    root = Path(os.path.expanduser(args.sources))
    fetch(root)
    log(f"sources in {root}")
    files = [root / f for f in SETS[args.set]]
    command = f"spec-lsp bench names-braced --set {args.set}"
    measure(args, files, candidates, command=command, default_per_file=3)


if __name__ == "__main__":
    main()
