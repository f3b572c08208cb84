"""Opening the models the settings name, with errors that say what to do: in-process GGUF
models (`open_models`) or a remote server (`open_remote`, `connect_remote`)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spec_lsp.config import Settings
from spec_lsp.engine import probe
from spec_lsp.engine.backends.base import ModelBackend, check_model_file
from spec_lsp.engine.backends.remote import COMPLETIONS, INFILL, RemoteClient, RemoteFault
from spec_lsp.engine.drafters.text import check_round_trip
from spec_lsp.engine.health import Health
from spec_lsp.engine.remote_prompt import template_for
from spec_lsp.engine.remote_tokens import CHARS_PER_TOKEN, ServerTokens
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


@dataclass
class RemoteLoaded:
    """A remote server and what follows from what it serves: the model's name, the FIM
    template, its tokenizer's counts (`tokens`), the endpoint to ask (`endpoint`: llama-server's
    /infill, else /v1/completions). `connected` is False until the server has answered
    /v1/models (at load, or at the first request after it was down)."""

    client: RemoteClient
    health: Health
    model: str = ""
    template: fim.FimTemplate | None = None
    tokens: ServerTokens = field(default_factory=ServerTokens)
    connected: bool = False
    server: str = ""  # "llama-server" when its /props says so
    endpoint: str = "completions"  # completions | infill
    props: dict[str, Any] = field(default_factory=dict)  # llama-server's: n_ctx, build

    def close(self) -> None:
        self.tokens.close()
        self.client.close()


def open_remote(
    settings: Settings, report: Callable[[str], None], notify: Callable[[str], None]
) -> RemoteLoaded:
    """The client for `remoteUrl`. Raises EngineError with the fix for settings that cannot
    work (no URL, plain http to another machine, the API key's variable unset); a server that
    does not answer yet is not an error here: it is told once and tried again later."""
    client = remote_client(settings)
    remote = RemoteLoaded(client, Health(client.url, notify))
    report(f"connecting to {client.url}")
    try:
        connect_remote(remote, settings)
    except RemoteFault as fault:
        remote.health.failed(fault.kind, str(fault))
    return remote


def remote_client(settings: Settings) -> RemoteClient:
    """The client `remoteUrl` and its settings describe. Raises EngineError with the fix for
    settings that cannot work (no URL, plain http to another machine, the API key's variable
    unset)."""
    if not settings.remote_url:
        raise EngineError(
            "setting 'engine' is 'remote' but 'remoteUrl' is empty: set it to the server's URL, "
            "e.g. http://127.0.0.1:8080"
        )
    api_key = None
    if settings.remote_api_key_env:
        api_key = os.environ.get(settings.remote_api_key_env)
        if not api_key:
            raise EngineError(
                f"setting 'remoteApiKeyEnv' names the environment variable "
                f"{settings.remote_api_key_env}, which is not set for the server: set it in "
                "the environment the editor starts spec-lsp with, or empty remoteApiKeyEnv"
            )
    return RemoteClient(
        settings.remote_url,
        api_key=api_key,
        connect_timeout_s=settings.remote_connect_timeout_ms / 1000,
        timeout_s=settings.remote_timeout_ms / 1000,
        ca_file=settings.remote_ca_file,
        allow_http=settings.remote_allow_http,
    )


def connect_remote(remote: RemoteLoaded, settings: Settings) -> None:
    """Ask the server what it serves: pick the model (remoteModel, else the first listed), its
    template and its characters per token. Raises RemoteFault."""
    client = remote.client
    served = client.models()
    wanted = settings.remote_model
    if served is not None and wanted and wanted not in served:
        raise RemoteFault(
            "model",
            f"{client.url} does not serve model {wanted!r} (it serves: "
            f"{', '.join(served) or 'none'}): set remoteModel to one of those, or empty it",
        )
    model = wanted or (served[0] if served else "")
    if not model:
        raise RemoteFault(
            "model",
            f"{client.url} lists no model at /v1/models: set remoteModel to the model's name",
        )
    remote.model = model
    remote.template = template_for(settings.fim_template, model)
    props = client.props()
    remote.server, remote.props = ("llama-server", props) if props is not None else ("", {})
    remote.endpoint = _endpoint(settings.remote_api, remote.server)
    counted = client.count_tokens(CHARS_SAMPLE, model)
    remote.tokens.close()
    remote.tokens = ServerTokens(
        (lambda text: client.count_tokens(text, model)) if counted else None,
        len(CHARS_SAMPLE) / counted if counted else CHARS_PER_TOKEN,
    )
    remote.connected = True
    log.info(
        "remote engine: %s serves %s (%s; %s; FIM template %s, %.2f characters per token%s)",
        client.url,
        model,
        remote.server or "an OpenAI-compatible server",
        f"asked at {INFILL}" if remote.endpoint == "infill" else f"asked at {COMPLETIONS}",
        remote.template.name if remote.template else "none: prefix only",
        remote.tokens.chars_per_token,
        "" if counted else ", estimated: the server has no tokenize endpoint",
    )


def _endpoint(setting: str, server: str) -> str:
    """/infill where the setting asks for it and the server is llama-server; else
    /v1/completions. (A model that cannot infill answers /infill with an error: the engine then
    falls back to completions for the connection.)"""
    return "infill" if setting == "infill" and server == "llama-server" else "completions"


CHARS_SAMPLE = (
    "def merge(left: list[int], right: list[int]) -> list[int]:\n"
    '    """Merge two sorted lists into one sorted list."""\n'
    "    out, i, j = [], 0, 0\n"
    "    while i < len(left) and j < len(right):\n"
    "        if left[i] <= right[j]:\n"
    "            out.append(left[i])\n"
    "            i += 1\n"
    "        else:\n"
    "            out.append(right[j])\n"
    "            j += 1\n"
    "    return out + left[i:] + right[j:]\n"
)


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
    found = [("model", settings.model or default(DEFAULT_TARGET))]
    if settings.drafter in ("model", "auto"):
        found.append(("draftModel", settings.draft_model or default(DEFAULT_DRAFT)))
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

        if settings.model:
            check_model_file(settings.model, what="model")
        time.sleep(float(os.environ.get("SPEC_LSP_FAKE_LOAD_DELAY_MS", "0")) / 1000)
        return corpus_model()
    path = settings.model or default_path(DEFAULT_TARGET, "model")
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

        if settings.draft_model:
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
        path = settings.draft_model or default_path(DEFAULT_DRAFT, "draftModel")
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
