#!/usr/bin/env python3
"""Generate the LSP4IJ template's JSON schemas from `spec-lsp schema`.

    .venv/bin/python editors/jetbrains/gen-schema.py          # rewrite the *.schema.json files
    .venv/bin/python editors/jetbrains/gen-schema.py --check  # exit 1 on drift

LSP4IJ validates the Configuration tab (settings.json, sent as workspace/didChangeConfiguration
under the `specLsp` section) and initializationOptions.json (sent flat in `initialize`) with these
schemas. tests/editors/test_jetbrains_template.py checks them in CI.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SECTION = "specLsp"


def load_schema() -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "spec_lsp.cli", "schema"], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout)


def options_schema(server: dict[str, Any]) -> dict[str, Any]:
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "LSP4IJ/spec-lsp/initializationOptions.schema.json",
        "title": "spec-lsp initialization options",
        "description": "Generated from `spec-lsp schema` by editors/jetbrains/gen-schema.py: do not edit.",
        "type": "object",
        "additionalProperties": False,
        "properties": server["properties"],
    }


def settings_schema(server: dict[str, Any]) -> dict[str, Any]:
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "LSP4IJ/spec-lsp/settings.schema.json",
        "title": "spec-lsp settings",
        "description": "Generated from `spec-lsp schema` by editors/jetbrains/gen-schema.py: do not edit.",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            SECTION: {
                "type": "object",
                "additionalProperties": False,
                "properties": server["properties"],
            }
        },
    }


def generated(server: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        "initializationOptions.schema.json": options_schema(server),
        "settings.schema.json": settings_schema(server),
    }


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a schema file is stale")
    args = parser.parse_args()
    stale = []
    for name, schema in generated(load_schema()).items():
        path = HERE / name
        text = render(schema)
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        sys.stderr.write(f"stale: {', '.join(stale)}: run editors/jetbrains/gen-schema.py\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
