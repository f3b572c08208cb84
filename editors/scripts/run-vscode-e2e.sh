#!/usr/bin/env bash
# VS Code end-to-end: install code-server/chromium/playwright (once), build the .vsix, run
# tests/editors/vscode_e2e.mjs. SPEC_LSP_E2E_BACKEND=fake (default) or real.
# Screenshots and a JSON result land in $SPEC_LSP_E2E_OUT (default editors/.cache/e2e-out).
set -euo pipefail
source "$(dirname "$0")/env.sh"
"$(dirname "$0")/setup-code-server.sh"
"$(dirname "$0")/build-vscode.sh"
export SPEC_LSP_CODE_SERVER="$CACHE/code-server-$CODE_SERVER_VERSION/node_modules/.bin/code-server"
export SPEC_LSP_PLAYWRIGHT="$CACHE/playwright-$PLAYWRIGHT_VERSION"
export SPEC_LSP_CHROMIUM="${SPEC_LSP_CHROMIUM:-$(command -v chromium)}"
export SPEC_LSP_VSIX="$EDITORS_DIR/vscode/spec-lsp-$(node -p 'require(process.argv[1]).version' "$EDITORS_DIR/vscode/package.json").vsix"
export SPEC_LSP_EXE="${SPEC_LSP_EXE:-$SPEC_LSP}"
export SPEC_LSP_E2E_BACKEND="${SPEC_LSP_E2E_BACKEND:-fake}"
export SPEC_LSP_E2E_OUT="${SPEC_LSP_E2E_OUT:-$CACHE/e2e-out}"
log "VS Code e2e, backend=$SPEC_LSP_E2E_BACKEND"
node "$REPO_DIR/tests/editors/vscode_e2e.mjs"
