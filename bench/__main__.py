"""`python -m bench ARGS...` (what `spec-lsp bench ARGS...` runs, from a checkout)."""

import sys

from bench.command import main

sys.exit(main())
