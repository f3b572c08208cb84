"""The benchmarks: outside the engine's import graph (nothing in engine, server or prompts
imports this package; the CLI imports it only for `spec-lsp bench`).

Shared: `common` (prompts, the Run record, pairing with plain decoding, the precision rule for
extra pairs, ratios, raw results, logging) and `timing` (timed runs, CPU steal, re-runs). One
module per benchmark, each importing those and never another benchmark:

- `policies`, `sources`: the two parts of `spec-lsp bench` (`command` runs them);
- `policy_replay`: the adaptive policy replayed over collected greedy outputs (no timing noise);
- `replay`: keystroke replay over LSP (types `replay_source.py` into `spec-lsp serve`);
- `fim_quality`: held-out infilling, plain PSM against the typing layout;
- `soak` (with `soak_args`, `soak_client`, `soak_typist`, `soak_report`): the real server
  under an editor-like scripted typist.

The scripts run as `python -m bench.<name>`; `policy_replay` and `soak` find their
files from the repository root (`common.ROOT`), `spec-lsp bench` writes to its --out.
"""
