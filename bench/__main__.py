"""`python -m bench ARGS...` (what `spec-lsp bench ARGS...` runs, from a checkout)."""

import sys

from spec_lsp.engine import prepare_process

prepare_process()  # before the benchmarks import numpy (a GPU build's libraries go first)

from bench.command import main  # noqa: E402

sys.exit(main())
