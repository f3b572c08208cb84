"""The VS Code extension's settings are generated from `spec-lsp schema`: fail on drift.

Runs in CI without node: the same Python generator the build uses, compared to package.json.
Fix a failure with `.venv/bin/python editors/vscode/scripts/gen-settings.py`.
"""

from __future__ import annotations

import json

from spec_lsp import config
from tests.editors._schema import load_script, validate
from tests.editors.conftest import EDITORS

VSCODE = EDITORS / "vscode"
gen = load_script(VSCODE / "scripts" / "gen-settings.py")
PACKAGE = json.loads((VSCODE / "package.json").read_text())
BLOCKS = PACKAGE["contributes"]["configuration"]


def test_package_json_matches_the_server_schema():
    wanted = gen.generate(config.schema())
    assert BLOCKS == wanted, (
        "editors/vscode/package.json is out of date with `spec-lsp schema`: "
        "run .venv/bin/python editors/vscode/scripts/gen-settings.py"
    )


def test_every_server_setting_is_there_once_and_namespaced():
    server, extension = BLOCKS
    assert server["id"] == "specLsp-server" and extension["id"] == "specLsp-extension"
    keys = [k.removeprefix("specLsp.") for k in server["properties"]]
    assert keys == list(config.schema()["properties"])
    assert set(keys) == {f.alias for f in config.Settings.model_fields.values()}
    assert not set(server["properties"]) & set(extension["properties"])
    assert all(k.startswith("specLsp.") for block in BLOCKS for k in block["properties"])


def test_defaults_are_valid_settings_for_the_server():
    server = BLOCKS[0]["properties"]
    defaults = {k.removeprefix("specLsp."): v["default"] for k, v in server.items()}
    settings, errors, unknown = config.merge(config.Settings(), defaults)
    assert errors == [] and unknown == []
    assert settings == config.Settings()
    for key, prop in server.items():
        assert validate(prop["default"], prop, key) == []


def test_extension_settings_and_commands():
    extension = BLOCKS[1]["properties"]
    for key in ("serverCommand", "serverArgs", "serverEnv", "statsIntervalMs", "trace.server"):
        assert f"specLsp.{key}" in extension
    assert extension["specLsp.serverArgs"]["default"] == ["serve"]
    commands = {c["command"] for c in PACKAGE["contributes"]["commands"]}
    assert commands == {"specLsp.restart", "specLsp.showStats", "specLsp.toggle"}
    assert PACKAGE["dependencies"]["vscode-languageclient"].startswith("11.")
