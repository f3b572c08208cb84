"""The in-process engine's parts, for tools (the benchmarks, `spec-lsp profile`, tests):
`engine.parts.models`, `.prompt_builder`, `.file_prefix`... The request path never reads them.

Each raises EngineError before `load()` and with engine 'remote' (the parts are the in-process
stage's), except `open_documents` and `analyses`, which the stores keep whatever the stage.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from spec_lsp.engine.local.stage import LocalStage
from spec_lsp.engine.stage import CompletingStage, NotLoaded
from spec_lsp.engine.types import CompletionRequest, EngineError

if TYPE_CHECKING:
    from spec_lsp.engine.context.provider import ContextProvider
    from spec_lsp.engine.drafters.open_documents import OpenDocuments
    from spec_lsp.engine.finishing.confidence import GateModel
    from spec_lsp.engine.guide.analyses import Analyses
    from spec_lsp.engine.local.file_prefix import FilePrefix
    from spec_lsp.engine.local.prompt_tokens import PromptBuilder
    from spec_lsp.engine.policy.profile import CostProfile
    from spec_lsp.engine.startup.loading import Loaded
    from spec_lsp.engine.stores import Stores


class Parts:
    def __init__(self, stage: Callable[[], CompletingStage], stores: Stores) -> None:
        self._stage, self._stores = stage, stores  # (the stage in use: a load replaces it)

    @property
    def local(self) -> LocalStage:
        """The in-process stage."""
        stage = self._stage()
        if isinstance(stage, LocalStage):
            return stage
        if isinstance(stage, NotLoaded):
            raise EngineError("the model is not loaded yet")
        raise EngineError("the model is on the server (engine 'remote'): no local tokens")

    @property
    def models(self) -> Loaded:
        """The models loaded: the target, the draft model, the FIM template, the stop tokens."""
        return self.local.loaded

    @property
    def prompt_builder(self) -> PromptBuilder:
        """How a request becomes the prompt's tokens (window, template, context block)."""
        return self.local.prompts

    @property
    def cost_profile(self) -> CostProfile | None:
        """This machine's measured verify costs (None until measured or read from its cache:
        the engine's ensure_profile)."""
        return self.local.profile

    @property
    def file_prefix(self) -> FilePrefix:
        """The document in focus's prefix kept in the KV cache (its anchor, its block)."""
        return self.local.file_prefix

    def prompt_tokens(self, request: CompletionRequest) -> list[int]:
        """The tokens of the prompt a request gets (no context block: the window only)."""
        return self.local.prompt_tokens(request)

    def set_gate(self, weights: GateModel | None) -> None:
        """Other weights for the confidence gate (a tool fitting them)."""
        self.local.gate = weights

    @property
    def open_documents(self) -> OpenDocuments:
        """The open documents (and accepted completions) the drafters look text up in."""
        return self._stores.drafting.open_documents

    @property
    def context(self) -> ContextProvider:
        """The open documents, the workspace, and the context block chosen for the focus."""
        return self._stores.context

    @property
    def analyses(self) -> Analyses:
        """The guide's: members per receiver."""
        return self._stores.analyses
