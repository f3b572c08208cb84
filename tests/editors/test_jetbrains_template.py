"""The LSP4IJ template (editors/jetbrains) is valid JSON, its schemas are generated from
`spec-lsp schema`, and its settings validate against them and are accepted by the server.
No JetBrains IDE runs here: this is the whole check. Fix schema drift with
`.venv/bin/python editors/jetbrains/gen-schema.py`."""

from __future__ import annotations

import json

import pytest

from spec_lsp import config
from tests.editors._schema import load_script, validate
from tests.editors.conftest import EDITORS

JETBRAINS = EDITORS / "jetbrains"
gen = load_script(JETBRAINS / "gen-schema.py")


def load(name: str):
    return json.loads((JETBRAINS / name).read_text())


def test_template_descriptor():
    template = load("template.json")
    assert template["id"] == "spec-lsp" and template["name"]
    assert "spec-lsp serve" in template["programArgs"]["default"]
    assert "serve" in template["programArgs"]["windows"]
    mappings = template["fileTypeMappings"]
    assert {m["languageId"] for m in mappings} >= {
        "python",
        "javascript",
        "typescript",
        "go",
        "rust",
    }
    for mapping in mappings:
        assert mapping["fileType"]["name"] and mapping["fileType"]["patterns"]
        assert all(p.startswith("*.") for p in mapping["fileType"]["patterns"])


@pytest.mark.parametrize("name", ["settings.schema.json", "initializationOptions.schema.json"])
def test_schemas_match_the_server(name: str):
    assert load(name) == gen.generated(config.schema())[name], (
        f"editors/jetbrains/{name} is stale: run .venv/bin/python editors/jetbrains/gen-schema.py"
    )


@pytest.mark.parametrize(
    ("data", "schema", "section"),
    [
        ("settings.json", "settings.schema.json", "specLsp"),
        ("initializationOptions.json", "initializationOptions.schema.json", None),
    ],
)
def test_template_settings_validate(data: str, schema: str, section: str | None):
    value = load(data)
    assert validate(value, load(schema)) == []
    settings = value[section] if section else value
    merged, errors, unknown = config.merge(config.Settings(), settings)
    assert errors == [] and unknown == []
    assert merged.enable is True


def test_the_validator_catches_violations():
    schema = load("initializationOptions.schema.json")
    assert validate({"maxTokens": 0}, schema)
    assert validate({"drafter": "bogus"}, schema)
    assert validate({"noSuchSetting": 1}, schema)
    assert validate({"enable": "yes"}, schema)
    assert validate({"threads": None, "model": "/m.gguf", "topP": 0.5}, schema) == []
