"""The gate's weights are one model's: fitted ones per model, shipped ones for the default
model and the 0.5B offered on slow machines only, and the gate off for any other model or
server."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from spec_lsp import models
from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, CompletionRequest, build_engine
from spec_lsp.engine.finishing import confidence, gate_weights
from spec_lsp.engine.finishing.confidence import GateModel
from spec_lsp.engine.local import pace

FAKE = "<fake-corpus>"


@pytest.fixture(autouse=True)
def profiles(tmp_path, monkeypatch):
    """A cache folder of the test's own (where fitted weights are stored)."""
    monkeypatch.setenv("SPEC_LSP_PROFILE_DIR", str(tmp_path / "profiles"))


def test_the_shipped_weights_are_the_default_models_and_the_small_ones_only(tmp_path):
    default = tmp_path / confidence.SHIPPED.fitted_on
    default.write_bytes(b"gguf")
    assert gate_weights.for_model(str(default)) is confidence.SHIPPED
    small = tmp_path / confidence.SHIPPED_SMALL.fitted_on  # (the 0.5B offered on slow machines)
    small.write_bytes(b"gguf")
    assert gate_weights.for_model(str(small)) is confidence.SHIPPED_SMALL
    assert pace.SMALL_MODEL in models.DEFAULT_MODELS
    assert models.DEFAULT_MODELS[pace.SMALL_MODEL].file_name == small.name
    other = tmp_path / "other-coder-7b.gguf"
    other.write_bytes(b"gguf")
    assert gate_weights.for_model(str(other)) is None
    assert gate_weights.for_remote("http://localhost:8080", "qwen2.5-coder-1.5b") is None


def test_weights_fitted_for_a_model_are_found_for_it_alone(tmp_path):
    model = tmp_path / "other-coder-7b.gguf"
    model.write_bytes(b"gguf")
    fitted = replace(confidence.SHIPPED, bias=-1.0, fitted_on=model.name, source="fitted")
    gate_weights.save(gate_weights.model_key(str(model)), fitted)
    assert gate_weights.for_model(str(model)) == fitted
    model.write_bytes(b"another gguf")  # (another file of that name: not fitted on)
    assert gate_weights.for_model(str(model)) is None
    gate_weights.save(gate_weights.remote_key("http://h:1/", "m"), fitted)
    assert gate_weights.for_remote("http://h:1", "m") == fitted
    assert gate_weights.for_remote("http://h:1", "n") is None


def test_unreadable_weights_turn_the_gate_off(tmp_path):
    path = gate_weights.path_for(gate_weights.model_key(FAKE))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"bias": 0, "weights": {"no_such_feature": 1}, "fitted_on": "x"}))
    assert gate_weights.for_model(FAKE) is None


def test_an_engine_on_a_model_without_weights_shows_everything_and_says_so():
    engine = build_engine(Settings(drafter="ngram", gate_threshold=0.9), backend="fake")
    engine.load()
    try:
        assert engine.gate is None and engine.gate_threshold == 0.0
        described = engine.stats()["gate"]
        assert not described["on"] and "bench gate --fit" in described["why"]
        request = CompletionRequest("def fo", "", document_id="file:///a.py")
        completion = engine.complete(request, CancelToken())
        assert completion.stats.token_logprobs == []  # (none computed for a gate that is off)
        gate_weights.save(gate_weights.model_key(FAKE), replace(confidence.SHIPPED, source="x"))
        engine.update_settings(engine.settings.model_copy(update={"gate_threshold": 0.5}))
        assert engine.gate is not None and engine.gate_threshold == 0.5
        assert engine.stats()["gate"] == {
            "on": True,
            "threshold": 0.5,
            "weights": "x",
            "fitted_on": confidence.SHIPPED.fitted_on,
        }
    finally:
        engine.close()


def test_with_no_threshold_set_the_weights_own_is_in_force():
    """gateThreshold unset: the shipped 1.5B's weights bring the threshold chosen for them on
    the writing bench, others (the 0.5B's, weights fitted here) the general default; a set
    threshold wins, and no weights mean no gate."""
    small = confidence.SHIPPED_SMALL
    assert confidence.threshold_in_force(None, confidence.SHIPPED) == 0.4
    assert confidence.threshold_in_force(None, small) == confidence.DEFAULT_THRESHOLD == 0.25
    assert confidence.threshold_in_force(0.1, confidence.SHIPPED) == 0.1
    assert confidence.threshold_in_force(0.0, confidence.SHIPPED) == 0.0
    assert confidence.threshold_in_force(None, None) == 0.0
    fitted = GateModel.from_json(json.loads(json.dumps(replace(small, source="x").to_json())))
    assert fitted.default_threshold == 0.25
    gate_weights.save(gate_weights.model_key(FAKE), confidence.SHIPPED)
    engine = build_engine(Settings(drafter="ngram"), backend="fake")
    engine.load()
    try:
        assert engine.gate_threshold == 0.4 and engine.stats()["gate"]["threshold"] == 0.4
    finally:
        engine.close()
