"""Every setting, declared once.

The same pydantic model feeds the CLI flags, `SPEC_LSP_*` environment variables, the editor's
`initializationOptions` / `workspace/didChangeConfiguration`, and `spec-lsp schema` (from which
the editors' settings are generated). Editor-facing names are camelCase; Python names snake_case.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

ENV_PREFIX = "SPEC_LSP_"
# settings whose rejected value is never echoed back (a key pasted where its variable's name goes)
SECRET_LIKE = frozenset({"remoteApiKeyEnv", "remote_api_key_env"})
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Settings(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True
    )

    model: str | None = Field(
        None,
        description="Path to the target GGUF model, or a pulled default's name (qwen2.5-coder-0.5b: faster on slow machines, fewer exact lines). Empty: the pulled Qwen2.5-Coder-1.5B.",
    )
    draft_model: str | None = Field(
        None,
        description="Path to a draft GGUF model (drafter 'model' or 'auto'), or a pulled default's name (qwen2.5-coder-0.5b: the 1.5B's own vocabulary), any byte-level BPE vocabulary: one that differs from the target's drafts text. Empty: the pulled SmolLM2-135M.",
    )
    drafter: Literal["none", "ngram", "workspace", "model", "auto"] = Field(
        "ngram",
        description="Where draft tokens come from: none; ngram (lookup in the prompt); workspace (lookup in open documents and accepted completions); model (draftModel); auto (each round, the source with the best expected speed).",
    )
    draft_policy: Literal["adaptive", "fixed"] = Field(
        "adaptive",
        description="adaptive: choose the draft length each round from acceptance and measured costs; fixed: always draftMax.",
    )
    draft_max: int = Field(16, ge=0, le=64, description="Longest draft per round.")
    draft_min: int = Field(
        0, ge=0, le=64, description="Shortest draft worth verifying (shorter drafts are dropped)."
    )
    draft_p_min: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Fixed policy: stop drafting when the draft's top probability falls below this (llama-server's --draft-p-min).",
    )
    temperature: float = Field(
        0.0, ge=0.0, le=2.0, description="Sampling temperature; 0 is greedy."
    )
    top_k: int = Field(40, ge=0, le=1000, description="Top-k truncation when sampling (0: off).")
    top_p: float = Field(0.95, gt=0.0, le=1.0, description="Nucleus truncation when sampling.")
    seed: int | None = Field(None, description="Sampling seed (empty: random).")
    max_tokens: int = Field(64, ge=1, le=1024, description="Most tokens generated per completion.")
    multiline: Literal["auto", "always", "never"] = Field(
        "auto",
        description="Multi-line completions: auto (at empty lines and blocks), always, never.",
    )
    lookahead_lines: int = Field(
        1,
        ge=0,
        le=4,
        description="Lines generated, not shown, after a single-line suggestion at the end of a line: typed as suggested, Enter finds the next line ready instead of a decode begun in your pause. 0: off (fewer tokens generated, e.g. on a metered server).",
    )
    context_size: int = Field(4096, ge=256, le=131072, description="Context window (tokens).")
    threads: int | None = Field(
        None,
        ge=1,
        le=256,
        description="CPU threads (empty: the cores other programs leave free, followed as the load changes).",
    )
    gpu_layers: int = Field(0, ge=-1, le=1000, description="Layers offloaded to a GPU (-1: all).")
    prefix_tokens: int = Field(
        384, ge=16, le=16384, description="Token budget for text before the cursor."
    )
    suffix_tokens: int = Field(
        96, ge=0, le=16384, description="Token budget for text after the cursor."
    )
    context_tokens: int = Field(
        0,  # (bench/results/context-time-budgets.md, context-time-focus.md: no gain on 42 lines)
        ge=0,
        le=16384,
        description="Token budget for other files' parts shown before the file: definitions of the names used near the cursor, the files it imports, similar parts of open documents, recent edits (from open documents and the workspace folders). Evaluated while you read; 0: none.",
    )
    workspace_max_files: int = Field(
        2000,
        ge=0,
        le=1_000_000,
        description="Most files read from the workspace folders for context (source files first; what git ignores, binary files and files over 200 KB are skipped).",
    )
    workspace_max_mb: int = Field(
        16, ge=0, le=4096, description="Most megabytes of text read from the workspace folders."
    )
    file_prefix_tokens: int = Field(
        3072,
        ge=0,
        le=131072,
        description="Tokens of the open file, from a line above the cursor, evaluated while you read and shared by the prompts at every place below it, so that asking at another place evaluates only its suffix and last lines (0: off; at most the context less the suffix, the answer and 512).",
    )
    fim_template: str = Field(
        "auto",
        description="FIM template: auto (from the model's tokens), or qwen, starcoder, codellama, deepseek, codestral, codegemma, none.",
    )
    debounce_ms: int = Field(
        0, ge=0, le=5000, description="Wait this long for more typing before completing."
    )
    cache: bool = Field(
        True, description="Reuse work between keystrokes (KV prefix, typed-through, drafts)."
    )
    kv_shift: bool = Field(
        True,
        description="Move cached keys and values into place when text before them was removed (a context part dropped, lines deleted) instead of evaluating them again, as llama-server's --cache-reuse does (runs of 64 tokens or more; models that cannot shift evaluate). false: evaluate again (exact, slower).",
    )
    precompute: bool = Field(True, description="Compute the next suggestion while idle.")
    answer_budget_ms: int = Field(
        1500,
        ge=0,
        le=60000,
        description="Answer once the first line is complete, or after this long decoding with what is ready (a partial line up to its last whole word; a suggestion asked for explicitly waits for its whole first line); the rest of a multi-line suggestion goes on in the background into the cache. 0: answer with the whole suggestion only.",
    )
    gate_threshold: float | None = Field(
        None,  # (unset: the weights' own, confidence.GateModel.default_threshold)
        ge=0.0,
        le=1.0,
        description="Show a suggestion the editor asked for as you type only if its confidence (the chance its first line is right, from the model's token probabilities) is at least this, else nothing; one you ask for is always shown. 0: show everything. Empty: the threshold chosen for the model's weights by the ratio of completed code (Qwen2.5-Coder-1.5B: 0.4), else 0.25.",
    )
    guide: bool = Field(
        True,
        description="After `receiver.` (Python: also `from module import`, `from package.`, `import package.` and a call's `name=`) whose members the static analysis knows completely, the model may only write a member that exists: Python through Jedi (the workspace folders and this environment); JavaScript, TypeScript, Go, Rust and Java through tree-sitter (the types the workspace defines). Analysed while you read; a completion asked before the analysis is ready is not guided. false: off.",
    )
    guide_bias: float | None = Field(
        None,  # (unset: 0, the sound default: a bias lowers the names a set misses)
        ge=0.0,
        le=100.0,
        description="guide: where the members known may not be all there is (Python: a stub, a compiled module, a class with dynamic attributes; elsewhere: a JavaScript class, a Rust type with traits from elsewhere), lower the logits of tokens outside them by this much (0: leave them alone). A type with members the analysis cannot read (a base class outside the workspace) is never guided. Empty: 0.",
    )
    enable: bool = Field(True, description="Offer completions at all.")
    max_document_chars: int = Field(
        2_000_000, ge=1000, description="Documents longer than this get no completions."
    )
    engine: Literal["local", "remote"] = Field(
        "local",
        description="Where the model runs: local (in this process, on this machine's CPU/GPU) or remote (an OpenAI-compatible server at remoteUrl: vLLM, llama-server, Ollama, LM Studio, llama_cpp.server).",
    )
    remote_url: str | None = Field(
        None,
        description="engine remote: the server's base URL, e.g. http://127.0.0.1:8080 or https://gpu.example.com (a trailing /v1 is fine).",
    )
    remote_model: str | None = Field(
        None,
        description="engine remote: the model to ask for, as the server names it in /v1/models. Empty: the first model it lists.",
    )
    remote_api_key_env: str | None = Field(
        None,
        description="engine remote: the NAME of the environment variable holding the API key (e.g. OPENAI_API_KEY), sent as a Bearer token. Never the key itself. Empty: no key.",
    )
    remote_api: Literal["completions", "infill"] = Field(
        "completions",
        description="engine remote: how to ask. completions: /v1/completions with the FIM prompt laid out here, as in process (any OpenAI-compatible server; the same suggestions as in process); infill: llama-server's /infill (the prefix, suffix and context files travel apart; the server lays out its own FIM prompt and stops by indentation and time).",
    )
    remote_connect_timeout_ms: int = Field(
        3000, ge=100, le=120_000, description="engine remote: longest wait to connect."
    )
    remote_timeout_ms: int = Field(
        15_000,
        ge=100,
        le=600_000,
        description="engine remote: longest wait for the server's first byte, and between streamed chunks.",
    )
    remote_allow_http: bool = Field(
        False,
        description="engine remote: allow plain http:// to a host other than this machine (code and API key then travel unencrypted). Loopback is always allowed.",
    )
    remote_ca_file: str | None = Field(
        None,
        description="engine remote: PEM file of the CA that signed the server's certificate (a private CA). Empty: the system's trust store. Certificates are always verified.",
    )

    @field_validator("model", "draft_model", "remote_ca_file")
    @classmethod
    def _expand_path(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        return str(Path(os.path.expandvars(value)).expanduser())

    @field_validator("remote_url", "remote_model")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @field_validator("remote_api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        if not ENV_NAME.fullmatch(value.strip()):
            raise ValueError(
                "must be the NAME of an environment variable (letters, digits, _), "
                "such as OPENAI_API_KEY, not the key itself"
            )
        return value.strip()

    @field_validator("fim_template")
    @classmethod
    def _known_template(cls, value: str) -> str:
        allowed = {
            "auto",
            "qwen",
            "starcoder",
            "codellama",
            "deepseek",
            "codestral",
            "codegemma",
            "none",
        }
        if value not in allowed:
            raise ValueError(f"must be one of {', '.join(sorted(allowed))}")
        return value


def editor_keys() -> set[str]:
    return {f.alias or name for name, f in Settings.model_fields.items()} | set(
        Settings.model_fields
    )


def merge(base: Settings, changes: Mapping[str, Any]) -> tuple[Settings, list[str], list[str]]:
    """Apply editor/env changes to `base`.

    Returns (settings, errors, unknown_keys). On any error the base settings are returned
    unchanged, so the last good settings stay in force; each error names the setting and why.
    """
    known = editor_keys()
    unknown = sorted(k for k in changes if k not in known)
    data = base.model_dump(by_alias=True)
    data.update({_alias(k): v for k, v in changes.items() if k in known})
    try:
        return Settings.model_validate(data), [], unknown
    except ValidationError as exc:
        return base, [_describe(err) for err in exc.errors()], unknown


def from_env(
    base: Settings, environ: Mapping[str, str] | None = None
) -> tuple[Settings, list[str]]:
    """Read SPEC_LSP_<SNAKE_NAME> variables (e.g. SPEC_LSP_DRAFT_MAX=8)."""
    environ = os.environ if environ is None else environ
    changes: dict[str, Any] = {}
    for name in Settings.model_fields:
        raw = environ.get(ENV_PREFIX + name.upper())
        if raw is not None:
            changes[name] = None if raw == "" else raw
    settings, errors, _ = merge(base, changes)
    return settings, errors


def schema() -> dict[str, Any]:
    """JSON schema of the editor-facing settings (camelCase keys)."""
    return Settings.model_json_schema(by_alias=True)


def _alias(key: str) -> str:
    field = Settings.model_fields.get(key)
    return (field.alias or key) if field else key


def _describe(err: Mapping[str, Any]) -> str:
    where = ".".join(str(p) for p in err.get("loc", ())) or "settings"
    got = "(value not shown)" if where in SECRET_LIKE else f"(got {err.get('input')!r})"
    return f"setting '{where}': {err.get('msg', 'invalid value')} {got}"
