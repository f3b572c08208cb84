"""The engine's draft sources behind the `drafter` setting: workspace lookup fed by document
changes, accepted completions remembered, and `auto` choosing among sources (fake backend)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, CompletionRequest, build_engine
from spec_lsp.engine.drafters.auto import AutoDrafter
from spec_lsp.engine.drafters.documents import DocumentsDrafter

# the fake model continues the corpus; a workspace document that holds it predicts it
OTHER = (
    "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n\n"
    "for i in range(10):\n    print(i)\n"
)
PREFIX = "class Point:\n    def __init__(self, x, y):\n"


def engine_with(drafter: str, **extra):
    extra = {"cache": False, **extra}
    settings = Settings(drafter=drafter, draft_policy="fixed", draft_max=8, **extra)
    engine = build_engine(settings, backend="fake")
    engine.load()
    return engine


def complete(engine, prefix=PREFIX, document="file:///mine.py"):
    request = CompletionRequest(prefix=prefix, document_id=document, max_tokens=24, multiline=True)
    return engine.complete(request, CancelToken())


def test_workspace_drafts_come_from_other_open_documents():
    plain = complete(engine_with("none"))
    engine = engine_with("workspace")
    alone = complete(engine)
    assert alone.stats.drafted == 0  # nothing indexed yet: nothing to propose
    engine.document_changed("file:///other.py", OTHER)
    found = complete(engine)
    assert found.text == alone.text == plain.text  # the target decides
    assert found.stats.drafted >= 8
    assert found.stats.accepted / found.stats.drafted > 0.8
    assert found.stats.target_passes < alone.stats.target_passes / 2


def test_the_index_follows_changes_and_closes():
    engine = engine_with("workspace")
    engine.document_changed("file:///other.py", "x = 1\n")
    engine.document_changed("file:///other.py", OTHER)  # only the latest text is indexed
    complete(engine)
    assert engine.parts.open_documents.text("file:///other.py") == OTHER
    engine.document_closed("file:///other.py")
    assert complete(engine).stats.drafted == 0
    assert "file:///other.py" not in engine.parts.open_documents.documents()


def test_oversized_documents_are_not_indexed(monkeypatch):
    from spec_lsp.engine.drafters import drafting as choose

    monkeypatch.setattr(choose, "MAX_INDEXED_CHARS", 100)
    engine = engine_with("workspace")
    engine.document_changed("file:///other.py", OTHER)
    complete(engine)
    assert "file:///other.py" not in engine.parts.open_documents.documents()


def test_a_suggestion_accepted_whole_is_remembered_for_lookup():
    engine = engine_with("workspace")
    shown = complete(engine)
    assert shown.text
    complete(engine, prefix=PREFIX + shown.text)  # the user pressed Tab
    remembered = [
        engine.parts.open_documents.text(d) for d in engine.parts.open_documents.documents()
    ]
    assert shown.text in remembered


def test_the_cursor_position_itself_is_not_a_match():
    """The current document holds the prefix itself: the lookup must not propose the text
    right after the cursor (the suffix) as if it were an earlier occurrence."""
    engine = engine_with("workspace")
    source = PREFIX + "        pass  # suffix\n"
    engine.document_changed("file:///mine.py", source)
    drafter = engine.stores.drafting.for_request(
        CompletionRequest(PREFIX, "", "file:///mine.py"), None
    )
    assert isinstance(drafter, DocumentsDrafter)
    assert drafter.cursor == len(PREFIX) and drafter.document_id == "file:///mine.py"


@pytest.mark.parametrize("with_other", [False, True])
def test_auto_reports_its_sources_and_picks_the_one_that_knows(with_other):
    engine = engine_with("auto")
    if with_other:
        engine.document_changed("file:///other.py", OTHER)
    plain = complete(engine_with("none"))
    for _ in range(3):
        result = complete(engine)
        assert result.text == plain.text
    assert isinstance(engine.stores.drafting.drafter, AutoDrafter)
    sources = engine.stats()["draft_sources"]
    assert {"ngram", "workspace", "model"} <= set(sources)
    if with_other:
        assert sources["workspace"]["chosen"] > 0
        assert sources["workspace"]["acceptance"] > 0.8


def test_changing_the_drafter_setting_rebuilds_it():
    engine = engine_with("ngram")
    engine.update_settings(engine.settings.model_copy(update={"drafter": "auto"}))
    assert isinstance(engine.stores.drafting.drafter, AutoDrafter)
    engine.update_settings(engine.settings.model_copy(update={"drafter": "workspace"}))
    assert isinstance(engine.stores.drafting.drafter, DocumentsDrafter)


def test_auto_learns_each_document_apart():
    engine = engine_with("auto")
    complete(engine, document="file:///a.py")
    complete(engine, document="file:///b.py")
    drafter = engine.stores.drafting.drafter
    assert isinstance(drafter, AutoDrafter)
    learned = {}
    for document in ("file:///a.py", "file:///b.py"):
        drafter.set_document(document)
        learned[document] = drafter.estimates(0.0)["ngram"]
        assert sum(learned[document].passed) + sum(learned[document].failed) > 0
    assert learned["file:///a.py"] is not learned["file:///b.py"]


def test_a_precomputed_suggestion_is_not_an_accepted_one():
    """Precompute asks as if the shown suggestion were accepted: that is a guess, not the
    person's Tab. The suggestion counts as accepted when the person's next request (answered
    from the precomputed cache) has it before the cursor."""
    engine = engine_with("workspace", cache=True, precompute=True)
    request = CompletionRequest(
        prefix=PREFIX, document_id="file:///mine.py", max_tokens=24, multiline=True
    )
    shown = engine.complete(request, CancelToken())
    assert shown.text
    engine.precompute(request, shown, CancelToken())
    assert engine.parts.open_documents.memory()["accepted"] == 0
    after = replace(request, prefix=PREFIX + shown.text)
    assert engine.peek(after) is not None  # the precomputed answer, from the cache
    assert engine.parts.open_documents.memory()["accepted"] == 1
    remembered = [
        engine.parts.open_documents.text(d) for d in engine.parts.open_documents.documents()
    ]
    assert shown.text in remembered


@pytest.mark.parametrize("prefix", ["", "  \t"])
def test_an_empty_document_without_a_fim_template_is_an_empty_answer(prefix):
    """Nothing before the cursor and no FIM tokens to place the text after it: nothing to
    condition on. An empty answer, not a crash (seen 131 times in a SmolLM2 soak)."""
    engine = engine_with("auto", fim_template="none")
    for document in ("file:///empty.py", "file:///other.py"):
        request = CompletionRequest(prefix=prefix, suffix="\nx = 1\n", document_id=document)
        done = engine.complete(request, CancelToken())
        assert done.text == "" and done.stats.stop_reason == "empty_prompt"
        assert engine.prewarm(request, CancelToken()) == 0
