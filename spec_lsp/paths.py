"""File paths the engine reads: a document's path from its URI, and the files a relative
JavaScript/TypeScript import may name (the context's imports and the guide's resolver try them in
one order)."""

from __future__ import annotations

import posixpath
from urllib.parse import unquote, urlparse


def document_path(document_id: str) -> str:
    """A document's file path (its URI's path; the id itself if it is not a file URI)."""
    parsed = urlparse(document_id)
    return unquote(parsed.path) if parsed.scheme == "file" else document_id


JS_EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs")


def js_module_candidates(base: str) -> list[str]:
    """The files a relative JS/TS import of `base` (its path joined and normalised) may name,
    in the order a bundler tries them: itself, with an extension (a TypeScript source imported
    as its compiled `.js` too), its folder's index."""
    stem = base
    for compiled in (".js", ".mjs"):
        if base.endswith(compiled):
            stem = base[: -len(compiled)]
    candidates = [base, *(stem + e for e in JS_EXTENSIONS)]
    return candidates + [posixpath.join(base, "index" + e) for e in JS_EXTENSIONS if e != ".d.ts"]
