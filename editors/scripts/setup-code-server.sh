#!/usr/bin/env bash
# code-server (real VS Code workbench + extension host, in a browser) from npm, plus Debian's
# chromium and playwright-core to drive it. Idempotent; the first run takes ~6 min on 2 cores
# (code-server's postinstall builds native modules with node-gyp against Node 24).
set -euo pipefail
source "$(dirname "$0")/env.sh"
"$(dirname "$0")/setup-node.sh"
# kerberos (a code-server dependency) needs gssapi headers; node-gyp needs a compiler.
need_root_apt libkrb5-dev g++ make python3 chromium

CS_DIR="$CACHE/code-server-$CODE_SERVER_VERSION"
if [ ! -x "$CS_DIR/node_modules/.bin/code-server" ]; then
  log "code-server $CODE_SERVER_VERSION -> $CS_DIR (about 5-6 minutes)"
  rm -rf "$CS_DIR.tmp" && mkdir -p "$CS_DIR.tmp"
  echo '{"name":"spec-lsp-code-server","private":true}' > "$CS_DIR.tmp/package.json"
  (cd "$CS_DIR.tmp" && npm install --no-save --foreground-scripts --loglevel=error \
      "code-server@$CODE_SERVER_VERSION" > install.log 2>&1) \
    || { tail -40 "$CS_DIR.tmp/install.log"; exit 1; }
  rm -rf "$CS_DIR" && mv "$CS_DIR.tmp" "$CS_DIR"
fi
XDG_CONFIG_HOME="$CACHE/xdg-config" XDG_DATA_HOME="$CACHE/xdg-data" \
  "$CS_DIR/node_modules/.bin/code-server" --version 2>/dev/null | tail -1

PW_DIR="$CACHE/playwright-$PLAYWRIGHT_VERSION"
if [ ! -f "$PW_DIR/node_modules/playwright-core/package.json" ]; then
  log "playwright-core $PLAYWRIGHT_VERSION -> $PW_DIR"
  mkdir -p "$PW_DIR" && echo '{"name":"spec-lsp-playwright","private":true}' > "$PW_DIR/package.json"
  (cd "$PW_DIR" && npm install --no-save --loglevel=error "playwright-core@$PLAYWRIGHT_VERSION")
fi
chromium --version 2>/dev/null
