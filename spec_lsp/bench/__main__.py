"""`python -m spec_lsp.bench ARGS...` (what `spec-lsp bench ARGS...` runs, from a checkout)."""

import sys

from spec_lsp.bench.command import main

sys.exit(main())
