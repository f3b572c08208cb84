"""GGUF files with a real model's metadata, tensor names, shapes and types, and random weights:
what timing on a machine the weights cannot travel to needs (64 MiB a call to a lent GPU).

    python bench/gpu/random_weights.py template REAL.gguf OUT_DIR   # here: meta.gguf + tensors.json
    python bench/gpu/random_weights.py write OUT_DIR MODEL.gguf     # there: the random model

The template is the real file's key/values (its tokenizer included, a few MB) and its tensor
list; `write` fills each quantized block with random bytes whose fp16 scales are small and valid
(norms 1, biases 0), so a forward pass computes finite numbers at the real cost. Needs gguf-py
(the `gguf` package, or llama.cpp's `gguf-py` folder on PYTHONPATH).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q

# byte offsets of a block's fp16 scale fields, and a small valid value for them
SCALES = {
    Q.Q4_K: ((0, 2), 1e-4),
    Q.Q5_K: ((0, 2), 1e-4),
    Q.Q6_K: ((208,), 1e-4),
    Q.Q8_0: ((0,), 2e-4),
    Q.Q5_0: ((0,), 2e-3),
    Q.Q4_0: ((0,), 3e-3),
    Q.Q4_1: ((0, 2), 3e-3),
}


def template(real: Path, out: Path) -> None:
    reader = gguf.GGUFReader(str(real))
    writer = gguf.GGUFWriter(
        str(out / "meta.gguf"), arch=str(_field(reader, "general.architecture"))
    )
    copy_fields(reader, writer)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    tensors = [
        {"name": t.name, "shape": [int(n) for n in t.shape], "type": t.tensor_type.name}
        for t in reader.tensors
    ]
    (out / "tensors.json").write_text(json.dumps(tensors))


def _field(reader: gguf.GGUFReader, key: str) -> object:
    return reader.fields[key].contents()


def copy_fields(reader: gguf.GGUFReader, writer: gguf.GGUFWriter, name_suffix: str = "") -> None:
    """The key/values of `reader` into `writer` (the architecture is the writer's own)."""
    for key, f in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        kind = f.types[0]
        sub = f.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        value = f.contents()
        if key == "general.name":
            value = f"{value}{name_suffix}"
        writer.add_key_value(key, value, kind, sub_type=sub)


def block_data(name: str, shape: list[int], kind: Q, rng: np.random.Generator) -> np.ndarray:
    if kind == Q.F32:
        return np.full(list(reversed(shape)), 0.0 if name.endswith(".bias") else 1.0, np.float32)
    block, size = gguf.GGML_QUANT_SIZES[kind]
    rows, blocks = int(np.prod(shape[1:])), shape[0] // block
    data = rng.integers(0, 256, size=(rows, blocks, size), dtype=np.uint8)
    offsets, value = SCALES[kind]
    half = np.frombuffer(np.float16(value).tobytes(), dtype=np.uint8)
    for at in offsets:
        data[:, :, at : at + 2] = half
    return data.reshape(rows, blocks * size)


def write(folder: Path, out: Path) -> None:
    meta = gguf.GGUFReader(str(folder / "meta.gguf"))
    tensors = json.loads((folder / "tensors.json").read_text())
    writer = gguf.GGUFWriter(str(out), arch=str(_field(meta, "general.architecture")))
    copy_fields(meta, writer, " (random weights, for timing only)")
    rng = np.random.default_rng(1234)
    made: dict[tuple[tuple[int, ...], str, bool], np.ndarray] = {}
    for t in tensors:
        qtype = Q[t["type"]]
        shared = (tuple(t["shape"]), t["type"], t["name"].endswith(".bias"))
        if shared not in made:  # (tensors of one shape share their bytes: it writes faster)
            made[shared] = block_data(t["name"], t["shape"], qtype, rng)
        writer.add_tensor(t["name"], made[shared], raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"{out}: {len(tensors)} tensors, {out.stat().st_size / 2**20:.0f} MiB")


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "template":
        out = Path(argv[2])
        out.mkdir(parents=True, exist_ok=True)
        template(Path(argv[1]), out)
        return 0
    if len(argv) == 3 and argv[0] == "write":
        write(Path(argv[1]), Path(argv[2]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
