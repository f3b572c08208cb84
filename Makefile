# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
SPEC   := $(VENV)/bin/spec-lsp
STAMP  := $(VENV)/.installed

.PHONY: install models demo test lint typecheck bench replay soak clean editors-vscode-e2e editors-neovim-e2e

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@echo "Installing spec-lsp (the first install builds llama-cpp-python from source: ~10 min)"
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $(STAMP)

install: $(STAMP)

models: install
	$(SPEC) models pull

demo: models
	$(SPEC) demo

lint: install
	$(VENV)/bin/ruff check spec_lsp tests
	$(VENV)/bin/ruff format --check spec_lsp tests

typecheck: install
	$(VENV)/bin/mypy

test: models lint typecheck
	SPEC_LSP_REQUIRE_MODELS=1 $(VENV)/bin/pytest -q -ra --durations=10

replay: models
	$(PY) -m spec_lsp.bench.replay

bench: models
	$(SPEC) bench

# Not in `make test`: half an hour of editor-like typing against the real server with SmolLM2
# and the auto drafter (small enough that answers keep up on a laptop, so every path runs);
# FAILED on an error answer, a request left unanswered, a document's text differing, or RSS
# growing after the warm-up (which lasts until the saved KV states fill their pool) by over
# 20 MB with a model, 5 MB with the fake backend. Another run: make soak SOAK_ARGS="--minutes 30
# --drafter auto" (the default Qwen model), or SOAK_ARGS="--backend fake --keys-per-second 200
# --minutes 2" (no model). The report goes to bench/out/soak.md, the server's stderr beside it.
SOAK_ARGS ?= --model smollm2-135m --drafter auto --minutes 30 --sample-s 60 --out bench/out/soak.md
soak: models
	$(PY) -m spec_lsp.bench.soak $(SOAK_ARGS)

# real editors, not in `make test` (downloads Node, code-server, Neovim into editors/.cache)
editors-vscode-e2e: install
	$(MAKE) -C editors vscode-e2e BACKEND=real

editors-neovim-e2e: install
	$(MAKE) -C editors neovim-e2e BACKEND=real

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
