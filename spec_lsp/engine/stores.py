"""What the engine keeps between requests whatever stage completes them, each store bounded on its
own, and the one place the editor's document events fan out to all of them. (What only the
in-process stage keeps, the file prefix, is its own: local/stage.py.)

A document's text arrives on the editor's thread (instant: the stores only record it); a
closed document leaves every store on the engine's thread; new settings or models clear what
was cached for the old ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spec_lsp.engine.cache.continuations import Continuations
from spec_lsp.engine.cache.in_flight import InFlight
from spec_lsp.engine.cache.states import StatePool
from spec_lsp.engine.cache.suggestions import SuggestionCache
from spec_lsp.engine.context.provider import ContextProvider
from spec_lsp.engine.drafters.drafting import Drafting
from spec_lsp.engine.guide.analyses import Analyses
from spec_lsp.engine.policy.estimate import PolicyBook
from spec_lsp.engine.policy.realized import RealizedYield


@dataclass
class Stores:
    context: ContextProvider  # other files' parts, the block chosen from them
    drafting: Drafting = field(default_factory=Drafting)  # the drafter, open documents
    book: PolicyBook = field(default_factory=PolicyBook)  # acceptance per document
    # what drafting really yields on this machine, per source and match strength
    ledger: RealizedYield = field(default_factory=RealizedYield)
    suggestions: SuggestionCache = field(default_factory=SuggestionCache)  # typed-through
    states: StatePool = field(default_factory=StatePool)  # saved KV caches per document
    continuations: Continuations = field(default_factory=Continuations)  # the last generation
    in_flight: InFlight = field(default_factory=InFlight)  # the running generation's text
    analyses: Analyses = field(default_factory=Analyses)  # the guide's: members per receiver

    def document_changed(self, document_id: str, text: str, *, focus: str) -> None:
        """A document's text after an edit (or at open); the editor's thread. `focus`: the
        document the completing stage keeps in view (its file prefix's; "" none)."""
        self.drafting.document_changed(document_id, text)
        self.context.document_changed(document_id, text, focus=focus)
        self.analyses.document_changed(document_id, text)

    def idle(self, cancelled: Callable[[], bool]) -> None:
        """Idle time, before the stage's step: the context provider parses what changed, then
        a Python document's first guide table is waited for (bounded: Jedi's process runs at
        the lowest priority, and the stage's step takes both cores)."""
        self.context.parse(cancelled)
        self.analyses.yield_to_first(cancelled)

    def document_closed(self, document_id: str) -> None:
        """Every store releases what it held for the document (the engine's thread)."""
        self.drafting.document_closed(document_id)  # its shown suggestion, auto's estimates
        self.drafting.catch_up()  # its entry among the open documents
        self.book.forget(document_id)
        self.suggestions.forget(document_id)
        self.states.forget(document_id)
        self.continuations.forget(document_id)
        self.context.document_closed(document_id)
        self.analyses.document_closed(document_id)

    def clear(self) -> None:
        """Drop every cached answer, state and estimate (settings or models changed); what
        drafting really yields on this machine stays unless the models change (`ledger`)."""
        self.book.clear()
        self.suggestions.clear()
        self.states.clear()
        self.continuations.clear()
        self.drafting.forget()

    def memory(self) -> dict[str, Any]:
        """What each store holds and its bound (read on any thread: sizes only)."""
        sources = self.drafting.memory()
        return {
            "saved_states": self.states.memory(),
            "suggestions": self.suggestions.memory(),
            "continuations": self.continuations.memory(),
            "in_flight": self.in_flight.running,
            "workspace": sources["workspace"],
            "estimates": {
                "documents": len(self.book.documents()),
                "auto_documents": sources["auto_estimates"],
                "max_documents": self.book.size,
            },
            "shown": sources["shown"],
            "context": self.context.memory(),
            "guide": self.analyses.memory(),
        }
