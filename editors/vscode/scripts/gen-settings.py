#!/usr/bin/env python3
"""Generate `contributes.configuration` of the VS Code extension from `spec-lsp schema`.

The server declares every setting once (spec_lsp/config.py); this script turns its JSON schema
into VS Code settings named `specLsp.<key>` and adds the extension's own settings (how to start
the server, status bar polling). Run it after changing a setting:

    .venv/bin/python editors/vscode/scripts/gen-settings.py          # rewrite package.json
    .venv/bin/python editors/vscode/scripts/gen-settings.py --check  # exit 1 on drift

tests/editors/test_vscode_settings_sync.py runs the same comparison in CI (no node needed).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

PACKAGE_JSON = Path(__file__).resolve().parents[1] / "package.json"
SECTION = "specLsp"

# Settings that only the extension reads; they are never sent to the server.
EXTENSION_SETTINGS: dict[str, dict[str, Any]] = {
    "serverCommand": {
        "type": "string",
        "default": "spec-lsp",
        "markdownDescription": "The `spec-lsp` executable, e.g. `/path/to/spec-lsp/.venv/bin/spec-lsp`. Changing it restarts the server.",
        "scope": "machine-overridable",
    },
    "serverArgs": {
        "type": "array",
        "items": {"type": "string"},
        "default": ["serve"],
        "markdownDescription": "Arguments for `serverCommand` (stdio), e.g. `[\"serve\", \"--backend\", \"fake\"]`. Changing them restarts the server.",
        "scope": "machine-overridable",
    },
    "serverEnv": {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "default": {},
        "markdownDescription": "Extra environment for the server process, e.g. `{\"SPEC_LSP_MODELS_DIR\": \"/models\"}`.",
        "scope": "machine-overridable",
    },
    "languages": {
        "type": "array",
        "items": {"type": "string"},
        "default": ["*"],
        "markdownDescription": "Language ids that get completions (`*`: every file and untitled document).",
    },
    "completionMenu": {
        "type": "boolean",
        "default": False,
        "markdownDescription": "Also ask the server for suggest-menu items (`textDocument/completion`). Off by default: VS Code shows the ghost text, and a menu request for the same document would supersede the ghost-text request on the server.",
    },
    "statsIntervalMs": {
        "type": "integer",
        "default": 3000,
        "minimum": 0,
        "markdownDescription": "How often the status bar asks the server for `specLsp/stats` (0: never).",
    },
    "trace.server": {
        "type": "string",
        "enum": ["off", "messages", "verbose"],
        "default": "off",
        "description": "Log the LSP traffic to the 'spec-lsp' output channel.",
    },
}

# JSON-schema keywords copied from the server's schema into VS Code's.
KEEP = ("type", "enum", "default", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def load_schema() -> dict[str, Any]:
    """The server's settings schema, exactly as `spec-lsp schema` prints it."""
    out = subprocess.run(
        [sys.executable, "-m", "spec_lsp.cli", "schema"], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout)


def vscode_property(spec: dict[str, Any], order: int) -> dict[str, Any]:
    """One server setting as a VS Code configuration property.

    pydantic writes `X | None` as anyOf [X, null]; VS Code wants `"type": [X, "null"]`.
    """
    spec = dict(spec)
    variants = spec.pop("anyOf", None)
    if variants:
        merged: dict[str, Any] = {}
        types: list[str] = []
        for variant in variants:
            types.append(variant["type"])
            merged.update({k: v for k, v in variant.items() if k != "type"})
        spec = {**merged, **spec, "type": types}
    prop = {key: spec[key] for key in KEEP if key in spec}
    prop["description"] = spec.get("description", "")
    prop["order"] = order
    return prop


def generate(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The whole `contributes.configuration`: the server's settings, then the extension's own.

    The extension finds the server's keys by the first block's id, so nothing is listed twice.
    """
    server = {
        f"{SECTION}.{key}": vscode_property(spec, order)
        for order, (key, spec) in enumerate(schema["properties"].items())
    }
    extension = {
        f"{SECTION}.{key}": {**spec, "order": order}
        for order, (key, spec) in enumerate(EXTENSION_SETTINGS.items())
    }
    return [
        {"id": "specLsp-server", "title": "spec-lsp: server", "order": 0, "properties": server},
        {"id": "specLsp-extension", "title": "spec-lsp: editor", "order": 1, "properties": extension},
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if package.json is stale")
    args = parser.parse_args()
    package = json.loads(PACKAGE_JSON.read_text())
    wanted = generate(load_schema())
    current = package.get("contributes", {}).get("configuration")
    if args.check:
        if current != wanted:
            sys.stderr.write(
                "editors/vscode/package.json is out of date with `spec-lsp schema`: "
                "run editors/vscode/scripts/gen-settings.py\n"
            )
            return 1
        return 0
    package.setdefault("contributes", {})["configuration"] = wanted
    PACKAGE_JSON.write_text(json.dumps(package, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
