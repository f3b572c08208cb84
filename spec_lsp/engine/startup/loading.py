"""Opening the in-process GGUF models the settings name, with errors that say what to do
(`open_models`). A remote server is opened by `remote/connect.py`."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from spec_lsp.config import Settings
from spec_lsp.engine.backends.base import ModelBackend, check_model_file
from spec_lsp.engine.drafters.token_text import check_round_trip
from spec_lsp.engine.startup import crash_probe as probe
from spec_lsp.engine.types import EngineError
from spec_lsp.prompts import fim

log = logging.getLogger(__name__)
DEFAULT_TARGET = "qwen2.5-coder-1.5b"
DEFAULT_DRAFT = "smollm2-135m"


@dataclass
class Loaded:
    """The models in use and what follows from them: the FIM template and the stop tokens."""

    target: ModelBackend
    draft: ModelBackend | None
    template: fim.FimTemplate | None
    stop_ids: frozenset[int]

    def close(self) -> None:
        self.target.close()
        if self.draft is not None:
            self.draft.close()


def open_models(settings: Settings, backend: str, report: Callable[[str], None]) -> Loaded:
    """The target, the draft model the drafter setting asks for, the template and stop tokens,
    once a child process has survived loading them (probe). Raises EngineError with the fix."""
    _probe(settings, backend, report)
    target = open_target(settings, backend, report)
    try:
        draft = open_draft(settings, backend, target, report)
        template = _template(settings, target)
    except Exception:
        target.close()
        raise
    return Loaded(target, draft, template, target.info.stop_ids | _end_token_ids(target, template))


def default_path(key: str, setting: str) -> str:
    from spec_lsp import models

    path = models.installed_path(key)
    if path is None:
        raise EngineError(
            f"the default {setting} ({key}) is not installed in {models.cache_dir()}: "
            f"run `spec-lsp models pull`, or set `{setting}` to a GGUF file."
        )
    return str(path)


def model_file(value: str | None, default: str, setting: str) -> str:
    """The file a model setting names: a GGUF path, a default model's name (pulled: `spec-lsp
    models pull <name>`), or nothing: the default `default`."""
    from spec_lsp import models

    name = value or default
    return default_path(name, setting) if name in models.DEFAULT_MODELS else name


def _named(value: str | None, default: Callable[[str], str | None]) -> str | None:
    """A setting that names a default model, as `default` finds it; a path as it is."""
    from spec_lsp import models

    return default(value) if value in models.DEFAULT_MODELS else value


def model_paths(settings: Settings, backend: str) -> list[str]:
    """The model files these settings load (defaults only when installed), to watch them."""
    if settings.engine == "remote":
        return []  # the model lives on the server
    default = (lambda _key: None) if backend == "fake" else _installed
    return [path for _setting, path in settings_paths(settings, default)]


def settings_paths(
    settings: Settings, default: Callable[[str], str | None]
) -> list[tuple[str, str]]:
    """(setting, file) of each model these settings load, `default(key)` for the unset ones
    (None: left out)."""
    found = [("model", _named(settings.model, default) or default(DEFAULT_TARGET))]
    if settings.drafter in ("model", "auto"):
        found.append(
            ("draftModel", _named(settings.draft_model, default) or default(DEFAULT_DRAFT))
        )
    return [(setting, path) for setting, path in found if path]


def open_model(path: str, settings: Settings, *, what: str) -> ModelBackend:
    from spec_lsp.engine.backends.llama import LlamaModel

    return LlamaModel(
        path,
        n_ctx=settings.context_size,
        threads=settings.threads,
        gpu_layers=settings.gpu_layers,
        what=what,
    )


def open_target(settings: Settings, backend: str, report: Callable[[str], None]) -> ModelBackend:
    if backend == "fake":
        from spec_lsp.engine.backends.fake import corpus_model

        if settings.model and _named(settings.model, lambda _key: None):
            check_model_file(settings.model, what="model")
        time.sleep(float(os.environ.get("SPEC_LSP_FAKE_LOAD_DELAY_MS", "0")) / 1000)
        return corpus_model()
    path = model_file(settings.model, DEFAULT_TARGET, "model")
    report(f"loading {path}")
    return open_model(path, settings, what="model")


def open_draft(
    settings: Settings, backend: str, target: ModelBackend, report: Callable[[str], None]
) -> ModelBackend | None:
    """The draft model for drafter 'model' (required) or 'auto' (used when at hand: an `auto`
    without a draftModel and without the pulled default drafts from lookups only)."""
    if settings.drafter not in ("model", "auto"):
        return None
    if backend == "fake":
        from spec_lsp.engine.backends.fake import corpus_model

        if settings.draft_model and _named(settings.draft_model, lambda _key: None):
            check_model_file(settings.draft_model, what="draftModel")
        return corpus_model(delay_s=0.0)
    if settings.drafter == "auto" and not settings.draft_model:
        from spec_lsp import models

        found = models.installed_path(DEFAULT_DRAFT)
        if found is None:
            log.info("drafter auto: no draft model pulled; drafting from lookups only")
            return None
        path = str(found)
    else:
        path = model_file(settings.draft_model, DEFAULT_DRAFT, "draftModel")
    report(f"loading draft {path}")
    draft = open_model(path, settings, what="draftModel")
    try:
        if draft.info.vocab_fingerprint != target.info.vocab_fingerprint:
            # another tokenizer: it drafts text (crossvocab), which both must reproduce exactly
            check_round_trip(draft, what="draftModel")
            check_round_trip(target, what="model")
            log.info("draft model %s has its own vocabulary: drafting across vocabularies", path)
    except EngineError:
        draft.close()
        raise
    return draft


def _probe(settings: Settings, backend: str, report: Callable[[str], None]) -> None:
    """Raises EngineError when llama.cpp crashes or hangs on a model file in a child process
    (all the files in one child). The fake backend probes only a simulated build (tests)."""
    if backend == "fake" and not probe.simulated():
        return
    files = [(s, p) for s, p in settings_paths(settings, _installed) if os.path.isfile(p)]
    if backend == "fake":
        files = files or [("model", "fake")]
    names = ", ".join(os.path.basename(path) for _setting, path in files)

    def probing() -> None:
        report(f"checking that llama.cpp runs {names} (once per build)")

    probe.check(
        [path for _s, path in files],
        backend=backend,
        gpu_layers=settings.gpu_layers,
        what=[setting for setting, _p in files],
        before=probing,
    )


def _installed(key: str) -> str | None:
    from spec_lsp import models

    found = models.installed_path(key)
    return str(found) if found else None


def watched_files(settings: Settings, backend: str) -> list[str]:
    """What a reload follows: the model files, and the llama.cpp build (a rebuild may fix what
    the probe found)."""
    paths = model_paths(settings, backend)
    return paths + probe.build_files(backend) if paths or probe.simulated() else paths


def _template(settings: Settings, target: ModelBackend) -> fim.FimTemplate | None:
    def has_token(text: str) -> bool:
        return len(target.tokenize(text, special=True)) == 1 and len(target.tokenize(text)) > 1

    try:
        return fim.resolve(
            settings.fim_template, has_token, target.info.architecture, target.info.name
        )
    except ValueError as exc:
        raise EngineError(f"setting 'fimTemplate': {exc}") from exc


def _end_token_ids(target: ModelBackend, template: fim.FimTemplate | None) -> frozenset[int]:
    ids: set[int] = set()
    for text in template.end_tokens if template else ():
        tokens = target.tokenize(text, special=True)
        if len(tokens) == 1:
            ids.add(tokens[0])
    return frozenset(ids)


MODEL_KEYS = ("model", "context_size", "threads", "gpu_layers", "fim_template")
REMOTE_KEYS = (
    "remote_url",
    "remote_model",
    "remote_api_key_env",
    "remote_connect_timeout_ms",
    "remote_timeout_ms",
    "remote_allow_http",
    "remote_ca_file",
    "remote_api",
    "fim_template",
)


def models_change(old: Settings, new: Settings) -> bool:
    """Whether new settings name other models (or another engine): they are loaded again."""
    keys = REMOTE_KEYS if new.engine == "remote" else MODEL_KEYS
    return (
        new.engine != old.engine
        or any(getattr(new, k) != getattr(old, k) for k in keys)
        or (
            new.engine == "local"
            and (new.drafter == "model" or old.drafter == "model")
            and (new.drafter, new.draft_model) != (old.drafter, old.draft_model)
        )
    )
