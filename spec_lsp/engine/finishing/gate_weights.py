"""Which weights the confidence gate reads for the model in use.

A gate is one model's: its token probabilities are what it weighs, and another model's are
calibrated otherwise. So the weights are looked up per model: those fitted on it here
(`spec-lsp bench gate --fit`, a JSON file beside the cost profiles, keyed by the model file's
name and size, or a server's URL and model name), else the shipped ones (confidence.SHIPPED_FOR)
for the default model or the 0.5B they were fitted on, else none: the gate is off (threshold 0) for a
model or a server it was not fitted on, and the stats say so (`describe`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from spec_lsp.engine.finishing.confidence import SHIPPED_FOR, GateModel
from spec_lsp.engine.policy.profile import profiles_dir

log = logging.getLogger(__name__)


def model_key(path: str) -> str:
    """A model file's key: its name and size (the same file wherever it is kept)."""
    try:
        size = os.stat(path).st_size
    except OSError:
        size = -1
    return _digest(f"{Path(path).name}:{size}")


def remote_key(url: str, model: str) -> str:
    return _digest(f"remote:{url.rstrip('/')}|{model}")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def path_for(key: str) -> Path:
    return profiles_dir() / f"gate-{key}.json"


def save(key: str, model: GateModel) -> Path:
    path = path_for(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(model.to_json(), indent=1))
    os.replace(tmp, path)
    return path


def load(key: str) -> GateModel | None:
    """The weights fitted for `key`, if stored (a file that does not read is ignored, said)."""
    path = path_for(key)
    try:
        return GateModel.from_json(json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError) as exc:
        log.warning("gate weights in %s unreadable (%s): the gate is off", path, exc)
        return None


def for_model(path: str) -> GateModel | None:
    """A local model's weights: fitted on it here, else shipped if it is the default model or
    the 0.5B offered on slow machines."""
    fitted = load(model_key(path))
    if fitted is not None:
        return fitted
    return SHIPPED_FOR.get(Path(path).name)


def for_remote(url: str, model: str) -> GateModel | None:
    """A server's weights: only those fitted on it here (its model is not known to be ours)."""
    return load(remote_key(url, model))


def describe(model: GateModel | None, threshold: float) -> dict[str, Any]:
    """The gate as the stats show it: its weights' origin and the threshold in force."""
    if model is None:
        return {
            "on": False,
            "threshold": 0.0,
            "weights": None,
            "why": "no weights fitted for this model: every suggestion shown "
            "(spec-lsp bench gate --fit fits them)",
        }
    return {
        "on": threshold > 0,
        "threshold": threshold,
        "weights": model.source,
        "fitted_on": model.fitted_on,
    }
