#!/usr/bin/env bash
# Build and package the VS Code extension: npm ci, settings drift check, tsc, vsce package.
# Output: editors/vscode/spec-lsp-<version>.vsix. Idempotent; ~30 s after the first run.
set -euo pipefail
source "$(dirname "$0")/env.sh"
"$(dirname "$0")/setup-node.sh"
EXT="$EDITORS_DIR/vscode"

# vsce lives outside the extension folder (inside it, vsce would package its own node_modules).
VSCE_DIR="$CACHE/vsce-$VSCE_VERSION"
if [ ! -x "$VSCE_DIR/node_modules/.bin/vsce" ]; then
  log "@vscode/vsce $VSCE_VERSION -> $VSCE_DIR"
  mkdir -p "$VSCE_DIR" && echo '{"name":"spec-lsp-vsce","private":true}' > "$VSCE_DIR/package.json"
  (cd "$VSCE_DIR" && npm install --no-save --loglevel=error "@vscode/vsce@$VSCE_VERSION")
fi

cd "$EXT"
log "settings drift check (package.json vs spec-lsp schema)"
"$PY" scripts/gen-settings.py --check
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "npm ci"
  npm ci --loglevel=error
fi
log "tsc"
npx --no-install tsc -p .
version="$(node -p 'require("./package.json").version')"
log "vsce package"
# The README's screenshot is a relative link, which vsce refuses without a repository URL:
# the .vsix gets the README without image lines (out/ is build output, ignored by git).
grep -v '^!\[' README.md > out/README.vsix.md
"$VSCE_DIR/node_modules/.bin/vsce" package --allow-missing-repository --skip-license \
  --readme-path out/README.vsix.md \
  -o "spec-lsp-$version.vsix"
ls -l "$EXT/spec-lsp-$version.vsix"
