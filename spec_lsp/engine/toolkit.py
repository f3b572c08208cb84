"""The engine's parts that tools outside it build with: what the benchmarks may use, named in
one place. The rest of the engine's insides may change without breaking them.

A tool holds an `Engine` (spec_lsp.engine: `build_engine(settings)`, `load()`,
`complete(request, cancel)`, `stats()`, `ensure_profile()`, and its parts: `engine.parts.models`,
`.prompt_builder`, `.cost_profile`, `.file_prefix`, `.context`, `.analyses`: parts.py) and
composes, from here:

- the decode loop with a given drafter and policy: `DecodeJob`, `generate`; one round's draft
  and the scoring of unverified proposals (`draft_round`, `score_shadows`, `Shadows`), for
  replaying the loop's decisions;
- drafters: the `Drafter` protocol, `DraftRequest` and `Draft`, `NgramDrafter`, `ModelDrafter`,
  `CrossVocabDrafter`, `DocumentsDrafter` over `OpenDocuments`, `AutoDrafter`, `model_drafter`;
- policies and costs: `DraftPolicy`, `AdaptivePolicy`, `FixedPolicy`, `CostProfile`,
  `AcceptanceEstimate`, `prior_acceptance`, `calibrate` (measuring a drafter, `PROFILE_TEXT`);
- models: `ModelBackend`, `open_model`, `llama_model` (our llama.cpp backend), `DEFAULT_TARGET`,
  `default_path`, `sync`, `detokenize`, `common_prefix_len`;
- prompts: `split_for_typing`, `FilePrefix`, `choose_anchor`, `Block`;
- the gate: `confidence`;
- the guide: the trigger points and scopes (`trigger`, `scopes`), Jedi's analysis
  (`python_analysis`), the table's keys (`key_of`), the `Monitor` (`DEFINING`, `open_span`) and
  the vocabulary's trie (`NameTokens`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spec_lsp.engine.backends.base import ModelBackend, common_prefix_len, detokenize, sync
from spec_lsp.engine.context.block import Block
from spec_lsp.engine.decode.speculative import (
    DecodeJob,
    Shadows,
    draft_round,
    generate,
    score_shadows,
)
from spec_lsp.engine.drafters.auto import AutoDrafter
from spec_lsp.engine.drafters.base import Draft, Drafter, DraftRequest
from spec_lsp.engine.drafters.crossvocab import CrossVocabDrafter
from spec_lsp.engine.drafters.documents import DocumentsDrafter
from spec_lsp.engine.drafters.model import ModelDrafter
from spec_lsp.engine.drafters.ngram import NgramDrafter
from spec_lsp.engine.drafters.open_documents import OpenDocuments
from spec_lsp.engine.drafters.table import model_drafter
from spec_lsp.engine.finishing import confidence, gate_weights
from spec_lsp.engine.finishing.confidence import GateModel
from spec_lsp.engine.guide import scopes, trigger
from spec_lsp.engine.guide.monitor import DEFINING, Monitor, open_span
from spec_lsp.engine.guide.python import analysis as python_analysis
from spec_lsp.engine.guide.table import key_of
from spec_lsp.engine.guide.vocabulary import NameTokens
from spec_lsp.engine.local.file_prefix import FilePrefix, choose_anchor
from spec_lsp.engine.policy.adaptive import AdaptivePolicy, DraftPolicy, FixedPolicy
from spec_lsp.engine.policy.estimate import AcceptanceEstimate, prior_acceptance, strength_bucket
from spec_lsp.engine.policy.profile import CostProfile
from spec_lsp.engine.policy.realized import RealizedYield
from spec_lsp.engine.startup import calibrate
from spec_lsp.engine.startup.calibrate import PROFILE_TEXT
from spec_lsp.engine.startup.loading import DEFAULT_TARGET, default_path, open_model
from spec_lsp.engine.types import add_by_source
from spec_lsp.prompts.fim import after_cursor
from spec_lsp.prompts.window import split_for_typing

if TYPE_CHECKING:
    from spec_lsp.engine.backends.llama import LlamaModel


def llama_model(path: str, *, n_ctx: int, threads: int | None, gpu_layers: int = 0) -> LlamaModel:
    """Our llama.cpp backend on one GGUF, outside an engine (llama_cpp is imported only here,
    when asked); `gpu_layers` as the setting `gpuLayers` (-1: all)."""
    from spec_lsp.engine.backends.llama import LlamaModel

    return LlamaModel(path, n_ctx=n_ctx, threads=threads, gpu_layers=gpu_layers)


__all__ = [
    "DEFINING",
    "Monitor",
    "NameTokens",
    "key_of",
    "open_span",
    "python_analysis",
    "scopes",
    "trigger",
    "AcceptanceEstimate",
    "AdaptivePolicy",
    "AutoDrafter",
    "Block",
    "CostProfile",
    "CrossVocabDrafter",
    "DEFAULT_TARGET",
    "DecodeJob",
    "Draft",
    "DraftPolicy",
    "DraftRequest",
    "Drafter",
    "FilePrefix",
    "FixedPolicy",
    "GateModel",
    "ModelBackend",
    "ModelDrafter",
    "NgramDrafter",
    "OpenDocuments",
    "PROFILE_TEXT",
    "RealizedYield",
    "Shadows",
    "DocumentsDrafter",
    "add_by_source",
    "after_cursor",
    "calibrate",
    "choose_anchor",
    "common_prefix_len",
    "confidence",
    "default_path",
    "detokenize",
    "draft_round",
    "gate_weights",
    "generate",
    "llama_model",
    "model_drafter",
    "open_model",
    "prior_acceptance",
    "score_shadows",
    "split_for_typing",
    "strength_bucket",
    "sync",
]
