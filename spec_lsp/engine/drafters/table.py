"""Every draft source in one table: its name, how it is made, and where it drafts.

A source's name is what the statistics, the realized-yield ledger and the adaptive policy count
drafts by. Where it drafts:

- `setting`: the `drafter` setting can name it (drafting.py builds it once per load);
- `lookup`: a free lookup the setting can name, and one of `auto`'s candidates;
- `beside`: looked up in every request beside the request's free drafter (the decode loop makes
  it from the job: `beside`), the strongest match drafting each round;
- `loop`: drafted by the loop itself with no drafter call (the last generation's tokens, the
  guide's only name left): priced as free by the policy.

The setting's factory (drafting.py), `auto` (its candidates) and the decode loop read this
table; a new source is one entry here (tests/unit/test_draft_table.py adds one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from spec_lsp.engine.backends.base import ModelBackend
from spec_lsp.engine.drafters.auto import AutoDrafter
from spec_lsp.engine.drafters.base import Drafter
from spec_lsp.engine.drafters.crossvocab import CrossVocabDrafter
from spec_lsp.engine.drafters.documents import DocumentsDrafter
from spec_lsp.engine.drafters.lookups import LastSuggestionLookup, SuffixLookup
from spec_lsp.engine.drafters.model import ModelDrafter
from spec_lsp.engine.drafters.ngram import NgramDrafter, TokensLookup
from spec_lsp.engine.drafters.open_documents import OpenDocuments
from spec_lsp.engine.policy.profile import CostProfile
from spec_lsp.engine.policy.realized import CONTINUATION, SYMBOL


@dataclass
class Kit:
    """What a source may be made from: at load (the models, the open documents, the costs) or
    per request (the last suggestion's tokens, the text after the cursor)."""

    target: ModelBackend | None = None
    draft_model: ModelBackend | None = None
    open_documents: OpenDocuments | None = None
    profile: CostProfile | None = None
    last_suggestion: Sequence[int] = ()
    suffix: Sequence[int] = ()


@dataclass(frozen=True)
class Entry:
    name: str
    where: str  # "setting" | "lookup" | "beside" | "loop"
    make: Callable[[Kit], Drafter | None] | None = None  # None: the loop's own


def model_drafter(draft: ModelBackend, target: ModelBackend) -> Drafter:
    """The drafter for a draft model: token drafts when it shares the target's vocabulary, text
    re-tokenized for the target when it does not."""
    if draft.info.vocab_fingerprint == target.info.vocab_fingerprint:
        return ModelDrafter(draft, target=target)
    return CrossVocabDrafter(draft, target=target)


def _model(kit: Kit) -> Drafter | None:
    if kit.draft_model is None or kit.target is None:
        return None
    return model_drafter(kit.draft_model, kit.target)


def _documents(kit: Kit) -> Drafter | None:
    if kit.open_documents is None or kit.target is None:
        return None
    return DocumentsDrafter(kit.open_documents, kit.target)


def _auto(kit: Kit) -> Drafter:
    lookups = [d for d in (e.make(kit) for e in entries("lookup") if e.make) if d is not None]
    return AutoDrafter(lookups, model=_model(kit), profile=kit.profile)


def _lookup(kind: type[TokensLookup], tokens: Sequence[int]) -> Drafter | None:
    return kind(tokens) if len(tokens) else None  # (nothing to look in: no source)


TABLE: dict[str, Entry] = {
    entry.name: entry
    for entry in (
        Entry("ngram", "lookup", lambda kit: NgramDrafter()),
        Entry("workspace", "lookup", _documents),  # the open documents' n-gram lookup
        Entry("model", "setting", _model),
        Entry("auto", "setting", _auto),
        # (in this order: the first wins a tie)
        Entry(
            "last_suggestion",
            "beside",
            lambda kit: _lookup(LastSuggestionLookup, kit.last_suggestion),
        ),
        Entry("suffix", "beside", lambda kit: _lookup(SuffixLookup, kit.suffix)),
        Entry(CONTINUATION, "loop"),
        Entry(SYMBOL, "loop"),
    )
}


def entries(where: str) -> list[Entry]:
    return [entry for entry in TABLE.values() if entry.where == where]


def for_setting(kind: str, kit: Kit) -> Drafter | None:
    """The drafter the `drafter` setting names (None: `none`, or a model it lacks)."""
    entry = TABLE.get(kind)
    if entry is None or entry.where not in ("setting", "lookup") or entry.make is None:
        return None
    return entry.make(kit)


def beside_sources(kit: Kit) -> list[Drafter]:
    """The sources looked up beside every request's free drafter, made for this request."""
    made = (entry.make(kit) for entry in entries("beside") if entry.make is not None)
    return [drafter for drafter in made if drafter is not None]


def loop_drafted(source: str) -> bool:
    """Whether a source's drafts come with no drafter call (the policy prices them as free)."""
    entry = TABLE.get(source)
    return entry is not None and entry.where == "loop"
