"""A new draft source is one entry in drafters/table.py: the loop, the `drafter` setting's
factory and `auto` take it from there, with no change to any of them."""

from __future__ import annotations

import numpy as np
import pytest

from spec_lsp.engine.backends.base import sync
from spec_lsp.engine.backends.fake import FakeModel
from spec_lsp.engine.decode.speculative import DecodeJob, generate
from spec_lsp.engine.drafters import table
from spec_lsp.engine.drafters.auto import AutoDrafter
from spec_lsp.engine.drafters.base import Draft, Drafter, DraftRequest
from spec_lsp.engine.drafters.ngram import NgramDrafter
from spec_lsp.engine.policy.adaptive import FixedPolicy
from spec_lsp.engine.types import CancelToken, DecodeStats, SamplingParams
from tests.unit.test_speculative import STOP, fake_target, plain_greedy


class Oracle(Drafter):
    """A free lookup that knows the target's greedy text: every draft is right."""

    name = "oracle"
    free = True

    def __init__(self) -> None:
        self.model: FakeModel = fake_target()

    def draft(self, request: DraftRequest) -> Draft:
        tokens, logits = [], sync(self.model, request.context)[0]
        for _ in range(request.max_tokens):
            tokens.append(int(np.argmax(logits)))
            logits = self.model.evaluate([tokens[-1]], logits_from=0)[0]
        return Draft(tokens, strength=64)


@pytest.fixture
def with_oracle(monkeypatch: pytest.MonkeyPatch):
    def add(where: str) -> None:
        entries = dict(table.TABLE)
        entries["oracle"] = table.Entry("oracle", where, lambda kit: Oracle())
        monkeypatch.setattr(table, "TABLE", entries)

    return add


def decode(drafter: Drafter | None, prompt: list[int]) -> tuple[list[int], DecodeStats]:
    stats = DecodeStats()
    job = DecodeJob(prompt, 30, SamplingParams(), frozenset({STOP}))
    out = generate(
        fake_target(),
        drafter,
        FixedPolicy(4),
        job,
        cancel=CancelToken(),
        rng=np.random.default_rng(0),
        stats=stats,
    )
    return out, stats


def test_a_source_beside_every_request_drafts_through_the_loop(with_oracle):
    prompt = [3, 5, 7, 11]
    _, alone = decode(NgramDrafter(), prompt)
    assert "oracle" not in alone.by_source
    with_oracle("beside")
    out, stats = decode(NgramDrafter(), prompt)
    assert out == plain_greedy(prompt, 30)  # speculation changes only the speed
    rounds, drafted, accepted = stats.by_source["oracle"]
    assert drafted > 0 and accepted == drafted  # it drafted, and was verified like any other
    assert stats.target_passes < alone.target_passes


def test_a_lookup_source_is_a_setting_and_one_of_autos_candidates(with_oracle):
    with_oracle("lookup")
    kit = table.Kit(target=fake_target())
    assert isinstance(table.for_setting("oracle", kit), Oracle)
    auto = table.for_setting("auto", kit)
    assert isinstance(auto, AutoDrafter)
    assert [c.name for c in auto.candidates] == ["ngram", "oracle"]  # (no open documents given)


def test_sources_drafted_by_the_loop_are_priced_free():
    assert table.loop_drafted(table.CONTINUATION) and table.loop_drafted(table.SYMBOL)
    assert not table.loop_drafted("ngram") and not table.loop_drafted("no such source")
    assert table.for_setting("none", table.Kit()) is None
