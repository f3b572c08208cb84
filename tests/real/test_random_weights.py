"""bench/gpu/random_weights.py: a model with a real file's metadata and tensor list and random
weights loads in our backend and computes finite logits (what timing on a lent GPU relies on)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from spec_lsp.engine.backends.llama import LlamaModel

pytestmark = pytest.mark.real
SCRIPT = Path(__file__).parents[2] / "bench" / "gpu" / "random_weights.py"


def test_random_weights_of_a_real_models_shapes(smollm2_path: Path, tmp_path: Path) -> None:
    for args in (
        ["template", str(smollm2_path), str(tmp_path)],
        ["write", str(tmp_path), str(tmp_path / "random.gguf")],
    ):
        subprocess.run([sys.executable, str(SCRIPT), *args], check=True, timeout=300)
    assert (tmp_path / "meta.gguf").stat().st_size < 10 * 2**20  # (what travels)
    real, random = (
        LlamaModel(str(p), n_ctx=256, threads=1) for p in (smollm2_path, tmp_path / "random.gguf")
    )
    try:
        assert random.info.name.endswith("(random weights, for timing only)")
        tokens = real.tokenize("def add(a, b):\n    return")
        assert random.tokenize("def add(a, b):\n    return") == tokens  # the same tokenizer
        logits = random.evaluate(tokens, logits_from=0)
        assert logits.shape == (len(tokens), real.evaluate(tokens[:1], logits_from=0).shape[1])
        assert np.isfinite(logits).all()
    finally:
        real.close()
        random.close()
