"""What the engine keeps per document is released when the document closes, and each structure
is bounded by size (bytes, characters, tokens, documents), not only by count."""

from __future__ import annotations

from dataclasses import dataclass

from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, CompletionRequest, build_engine
from spec_lsp.engine.backends.base import Snapshot
from spec_lsp.engine.backends.fake import corpus_model
from spec_lsp.engine.cache import continuations, suggestions
from spec_lsp.engine.cache.continuations import Continuations
from spec_lsp.engine.cache.states import StatePool
from spec_lsp.engine.cache.suggestions import SuggestionCache
from spec_lsp.engine.drafters.auto import AutoDrafter
from spec_lsp.engine.drafters.ngram import NgramDrafter
from spec_lsp.engine.drafters.open_documents import OpenDocuments
from spec_lsp.engine.policy import estimate
from spec_lsp.engine.policy.estimate import PolicyBook

PREFIX = "class Point:\n    def __init__(self, x, y):\n"
TEXT = PREFIX + "        self.x = x\n"


def request(document: str, prefix: str = PREFIX) -> CompletionRequest:
    return CompletionRequest(
        prefix=prefix, document_id=document, max_tokens=24, multiline=True, language="python"
    )


def auto_engine():
    settings = Settings(drafter="auto", draft_max=8, cache=True, precompute=False)
    engine = build_engine(settings, backend="fake")
    engine.load()
    return engine


def held_by(engine, document: str) -> dict[str, bool]:
    """Where the engine holds something for `document`, structure by structure."""
    auto = engine.stores.drafting.drafter
    assert isinstance(auto, AutoDrafter)
    return {
        "saved_state": document in engine.stores.states.saved(),
        "live_state_owner": engine.stores.states.owner == document,
        "continuation": bool(engine.stores.continuations.get(document)),
        "suggestions": document in engine.stores.suggestions.documents(),
        "estimates": document in engine.stores.book.documents(),
        "auto_estimates": document in auto.documents(),
        "shown": document in engine.stores.drafting._shown,
        "workspace": document in engine.parts.open_documents.documents(),
    }


def test_closing_a_document_releases_it_in_every_stage():
    engine = auto_engine()
    for document in ("file:///a.py", "file:///b.py", "file:///c.py"):
        engine.document_changed(document, TEXT)
        assert engine.complete(request(document), CancelToken()).text
    # a.py's KV state was saved when b.py took the caches; c.py owns the live caches
    assert held_by(engine, "file:///a.py") == {
        **dict.fromkeys(held_by(engine, "file:///a.py"), True),
        "live_state_owner": False,
    }
    assert held_by(engine, "file:///c.py")["live_state_owner"]

    engine.document_closed("file:///a.py")
    engine.document_closed("file:///c.py")
    for closed in ("file:///a.py", "file:///c.py"):
        assert not any(held_by(engine, closed).values()), held_by(engine, closed)
    kept = held_by(engine, "file:///b.py")
    assert kept == {**dict.fromkeys(kept, True), "live_state_owner": False}  # only what closed
    assert engine.stores.book._by_language  # the language's seed stays

    engine.document_closed("file:///b.py")
    memory = engine.memory()
    assert memory["saved_states"]["count"] == memory["saved_states"]["bytes"] == 0
    assert memory["suggestions"]["entries"] == memory["suggestions"]["chars"] == 0
    assert memory["continuations"]["documents"] == memory["continuations"]["tokens"] == 0
    assert memory["workspace"]["documents"] == memory["workspace"]["chars"] == 0
    assert memory["estimates"]["documents"] == memory["estimates"]["auto_documents"] == 0
    assert memory["shown"] == memory["in_flight"] == 0


def test_a_document_reopened_after_closing_gets_no_stale_suggestion():
    engine = auto_engine()
    engine.complete(request("file:///a.py"), CancelToken())
    engine.document_closed("file:///a.py")
    again = engine.complete(request("file:///a.py"), CancelToken())
    assert again.text and again.stats.cache != "typed_through"


def test_stats_report_each_structure_and_its_bound():
    engine = auto_engine()
    engine.document_changed("file:///a.py", TEXT)
    engine.complete(request("file:///a.py"), CancelToken())
    memory = engine.stats()["memory"]
    assert memory["saved_states"]["max_bytes"] > 0 and memory["saved_states"]["max_count"] > 0
    assert memory["suggestions"]["entries"] == 1 and memory["suggestions"]["chars"] > len(PREFIX)
    assert memory["continuations"]["documents"] == 1 and memory["continuations"]["tokens"] > 0
    assert memory["workspace"] == {
        "documents": 1,
        "chars": len(TEXT),
        "accepted": 0,
        "accepted_chars": 0,
        "max_chars": engine.parts.open_documents.max_chars,
        "max_accepted": 64,
    }
    assert memory["estimates"]["documents"] == memory["estimates"]["auto_documents"] == 1
    assert memory["shown"] == 1 and memory["in_flight"] == 0


# -- bounds ---------------------------------------------------------------------------------------
def test_policy_book_keeps_the_most_recent_documents():
    book = PolicyBook()
    n = estimate.DOCUMENTS + 50
    for i in range(n):
        book.estimate(f"d{i}", "python", 0.0)
        book.estimate(f"d{i}", "python", 0.7)  # temperatures share their document's place
        book.estimate("d0", "python", 0.0)  # in use all along: never the least recent
    assert len(book.documents()) == estimate.DOCUMENTS
    assert "d0" in book.documents() and f"d{n - 1}" in book.documents()
    assert "d1" not in book.documents()


def test_autos_books_keep_the_most_recent_documents():
    auto = AutoDrafter([NgramDrafter()])
    n = estimate.DOCUMENTS + 50
    for i in range(n):
        auto.set_document(f"d{i}", "python")
        auto.estimates(0.0)
    assert len(auto.documents()) == estimate.DOCUMENTS
    assert f"d{n - 1}" in auto.documents() and "d0" not in auto.documents()


@dataclass(frozen=True)
class _Big(Snapshot):
    """A snapshot that says it holds `kv` bytes (without allocating them)."""

    kv: int = 0

    @property
    def nbytes(self) -> int:
        return self.kv


class _Model:
    """What StatePool asks of a backend: its tokens and a snapshot of `kv` bytes."""

    def __init__(self, kv: int) -> None:
        self.kv = kv
        self.tokens = [1, 2, 3]

    def save_state(self) -> Snapshot:
        return _Big(tuple(self.tokens), kv=self.kv)

    def load_state(self, snapshot: Snapshot) -> None:
        self.tokens = list(snapshot.tokens)


def test_saved_states_are_bounded_by_bytes():
    size = 100 << 20  # 100 MB per snapshot, an 8k context of a small model
    model, pool = _Model(size), StatePool()
    bound = pool.max_bytes // size
    assert bound < pool.size, "snapshots this large must be bounded by bytes, not count"
    for i in range(pool.size + 3):
        pool.switch(f"d{i}", [1, 2, 3], model, None)  # saves the previous owner's state
    assert pool.nbytes <= pool.max_bytes
    assert len(pool.saved()) == bound
    assert pool.saved()[-1] == f"d{pool.size + 1}"  # the most recent survive
    assert pool.nbytes == size * len(pool.saved())


def test_a_state_larger_than_the_bound_is_not_kept():
    model, pool = _Model(1000), StatePool(max_bytes=500)
    pool.switch("a", [1, 2, 3], model, None)
    pool.switch("b", [1, 2, 3], model, None)
    assert pool.saved() == [] and pool.nbytes == 0


def test_suggestions_are_bounded_by_characters():
    cache = SuggestionCache()
    long = "x" * 40_000  # a long multi-line suggestion
    fit = suggestions.MAX_CHARS // (2 * len(long) + 100)  # text and raw text, key, overhead
    n = fit + 20
    for i in range(n):
        cache.put(request("file:///a.py", prefix=f"# {i}\n"), long, long)
    memory = cache.memory()
    assert memory["chars"] <= suggestions.MAX_CHARS
    assert fit - 1 <= memory["entries"] <= fit + 1
    assert cache.lookup(request("file:///a.py", prefix=f"# {n - 1}\n"))[:2] == ("", long)
    assert cache.lookup(request("file:///a.py", prefix="# 0\n")) is None


def test_suggestions_are_still_bounded_by_count():
    cache = SuggestionCache()
    for i in range(suggestions.ENTRIES + 10):
        cache.put(request("file:///a.py", prefix=f"# {i}\n"), "y = 1")
    assert cache.memory()["entries"] == suggestions.ENTRIES


def test_continuations_are_bounded_by_tokens():
    held = Continuations()
    per = continuations.MAX_TOKENS // 5  # five documents' worth fit
    for i in range(continuations.DOCUMENTS):
        held.remember(f"d{i}", [7] * per)
    assert held.tokens <= continuations.MAX_TOKENS
    assert held.memory()["documents"] == 5
    last = f"d{continuations.DOCUMENTS - 1}"
    assert len(held.get(last)) == per and not held.get("d0")
    held.remember(last, [7] * 10)  # replacing one counts its new length only
    assert held.tokens == 4 * per + 10


def _document(i: int, lines: int = 100) -> str:
    return "".join(f"value_{i}_{j} = compute({j}, {i})\n" for j in range(lines))


def test_the_open_documents_are_bounded_by_characters():
    size = len(_document(0))
    index = OpenDocuments(max_chars=10 * size + size // 2)
    index.active = "current"
    index.update("current", _document(999))  # changed first, the least recent: kept anyway
    for i in range(30):
        index.update(f"d{i}", _document(i))
    assert index.chars <= index.max_chars
    assert index.chars == sum(len(index.text(d) or "") for d in index.documents())
    assert "current" in index.documents() and "d29" in index.documents()
    assert "d0" not in index.documents()
    assert 8 <= len(index.documents()) <= 10
    kept = {doc for doc, *_ in index.entries()}
    assert kept == set(index.documents())  # the evicted documents' postings went with them
    found = index.lookup("\nvalue_29_5 = compute(")
    assert found is not None and found.doc_id == "d29"


def test_the_document_being_completed_stays_indexed():
    settings = Settings(drafter="workspace", draft_max=8, cache=False)
    engine = build_engine(settings, backend="fake")
    engine.load()
    engine.parts.open_documents.max_chars = 5 * len(_document(0))
    engine.document_changed("file:///mine.py", _document(999) + PREFIX)
    engine.complete(request("file:///mine.py"), CancelToken())
    for i in range(20):
        engine.document_changed(f"file:///d{i}.py", _document(i))
    engine.complete(request("file:///mine.py"), CancelToken())
    assert "file:///mine.py" in engine.parts.open_documents.documents()
    assert engine.parts.open_documents.chars <= engine.parts.open_documents.max_chars
    assert "file:///d19.py" in engine.parts.open_documents.documents()


def test_snapshot_size_counts_the_kv_and_the_tokens():
    model = corpus_model()
    model.evaluate(list(range(100)), logits_from=100)
    snapshot = model.save_state()
    assert snapshot.nbytes == 8 * 100  # the fake holds its tokens only
    assert Snapshot((1,), b"kv" * 10).nbytes == 20 + 8
