"""Server wiring without a client: settings merging, where settings sit, TCP host checks."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from spec_lsp.config import Settings
from spec_lsp.engine import build_engine
from spec_lsp.server.app import build_server, is_loopback
from spec_lsp.server.handlers import settings_section
from spec_lsp.server.language_server import merge_valid


def test_valid_settings_apply_even_when_others_are_invalid():
    base = Settings()
    new, errors, unknown = merge_valid(base, {"maxTokens": 5, "draftMax": -1, "nope": 1})
    assert new.max_tokens == 5 and new.draft_max == base.draft_max
    assert len(errors) == 1 and "draftMax" in errors[0]
    assert unknown == ["nope"]


def test_all_valid_settings_merge_at_once():
    new, errors, unknown = merge_valid(Settings(), {"max_tokens": 9, "temperature": 0.2})
    assert (new.max_tokens, new.temperature, errors, unknown) == (9, 0.2, [], [])


def test_settings_sit_under_spec_lsp_or_at_the_top_level():
    assert settings_section({"specLsp": {"maxTokens": 3}, "other": 1}) == {"maxTokens": 3}
    assert settings_section({"maxTokens": 3}) == {"maxTokens": 3}
    assert settings_section({"specLsp": "nonsense", "maxTokens": 3})["maxTokens"] == 3


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.4", False),
        ("example.org", False),
    ],
)
def test_loopback_hosts(host, loopback):
    assert is_loopback(host) == loopback


def test_tcp_binds_loopback_unless_told_otherwise():
    from spec_lsp.cli import build_parser

    assert build_parser().parse_args(["serve", "--tcp"]).host == "127.0.0.1"


def test_the_server_registers_its_features():
    server = build_server(Settings(), build_engine(Settings(), backend="fake"))
    features = server.protocol.fm.features
    for method in (
        lsp.TEXT_DOCUMENT_INLINE_COMPLETION,
        lsp.TEXT_DOCUMENT_COMPLETION,
        lsp.WORKSPACE_DID_CHANGE_CONFIGURATION,
        "specLsp/stats",
    ):
        assert method in features, method
    assert isinstance(
        server.protocol.fm.feature_options[lsp.TEXT_DOCUMENT_INLINE_COMPLETION],
        lsp.InlineCompletionOptions,
    )
    server.scheduler.join()
