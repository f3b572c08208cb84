"""Opening a remote server, with errors that say what to do: the client `remoteUrl` and its
settings describe (`remote_client`), and what the server serves (`connect_remote`: the model,
its FIM template, the endpoint to ask, its tokenizer's counts)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spec_lsp.config import Settings
from spec_lsp.engine.remote.client import COMPLETIONS, INFILL, RemoteClient, RemoteFault
from spec_lsp.engine.remote.health import Health
from spec_lsp.engine.remote.prompt_text import template_for
from spec_lsp.engine.remote.server_tokens import CHARS_PER_TOKEN, ServerTokens
from spec_lsp.engine.types import EngineError
from spec_lsp.prompts import fim

log = logging.getLogger(__name__)


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
