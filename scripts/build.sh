#!/usr/bin/env bash
# Builds everything: the native build (CLI, tests, benchmarks) in build/native, the WebAssembly
# build (the page's module and the WASM test runner) in build/wasm, then assembles the static
# site in build/site. Incremental: each build directory is configured once, and CMake re-runs
# itself when CMakeLists.txt or the source lists change.
#   scripts/build.sh            both builds and the site
#   scripts/build.sh native     only the native build
#   scripts/build.sh wasm       only the WASM build and the site
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
what="${1:-all}"
JOBS="${JOBS:-2}"

# emcc's JS optimizer needs Debian's node modules.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}

build_native() {
  echo "== native build (build/native)"
  if [[ ! -f build/native/CMakeCache.txt ]]; then
    cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release
  fi
  cmake --build build/native -j"$JOBS"
}

build_wasm() {
  echo "== WebAssembly build (build/wasm)"
  if [[ ! -f build/wasm/CMakeCache.txt ]]; then
    emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release
  fi
  cmake --build build/wasm -j"$JOBS"
}

assemble_site() {
  echo "== site (build/site)"
  local site=build/site tmp=build/site.tmp
  rm -rf "$tmp"
  mkdir -p "$tmp/wasm" "$tmp/models"
  cp -R web/. "$tmp/"
  for f in circuitscope.mjs circuitscope.wasm circuitscope.js circuitscope.d.ts; do
    if [[ -f "build/wasm/$f" ]]; then
      cp "build/wasm/$f" "$tmp/wasm/"
    else
      echo "build: build/wasm/$f is missing" >&2
      return 1
    fi
  done
  shopt -s nullglob
  local models=(models/*.safetensors)
  shopt -u nullglob
  if ((${#models[@]})); then
    cp "${models[@]}" "$tmp/models/"
  fi
  if [[ -f models/index.json ]]; then
    cp models/index.json "$tmp/models/index.json"
  else
    # No curated index: list every shipped model under its file name.
    node -e '
      const path = require("node:path");
      const files = process.argv.slice(1).map((f) => path.basename(f));
      const list = files.map((file) => ({ file, title: file.replace(/\.safetensors$/, ""), description: "" }));
      process.stdout.write(JSON.stringify(list, null, 2) + "\n");
    ' "${models[@]}" >"$tmp/models/index.json"
  fi
  rm -rf "$site"
  mv "$tmp" "$site"
  echo "site assembled in $site"
}

case "$what" in
  native) build_native ;;
  wasm) build_wasm && assemble_site ;;
  site) assemble_site ;;
  all)
    status=0
    build_native || status=1
    if build_wasm; then assemble_site || status=1; else status=1; fi
    exit $status
    ;;
  *) echo "usage: scripts/build.sh [all|native|wasm|site]" >&2; exit 2 ;;
esac
