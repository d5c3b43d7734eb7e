#!/usr/bin/env bash
# Builds everything: the native build (CLI, tests, benchmarks) in build/native, the WebAssembly
# build (the page's two modules, SIMD128 and relaxed SIMD, and the WASM test runners) in
# build/wasm, then assembles the static site in build/site. Incremental: each build directory is
# configured once, and CMake re-runs itself when CMakeLists.txt or the source lists change.
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
  # A configure that stopped early (e.g. Eigen missing) leaves CMakeCache.txt but no Makefile:
  # configure again until the Makefile exists.
  if [[ ! -f build/native/Makefile ]]; then
    cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release
  fi
  cmake --build build/native -j"$JOBS"
}

build_wasm() {
  echo "== WebAssembly build (build/wasm)"
  if [[ ! -f build/wasm/Makefile ]]; then
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
  # Both modules: circuitscope-relaxed.* for browsers with relaxed SIMD, circuitscope.* for all
  # others (wasm/circuitscope.js chooses at load).
  for f in circuitscope.mjs circuitscope.wasm circuitscope-relaxed.mjs circuitscope-relaxed.wasm circuitscope.js circuitscope.d.ts; do
    if [[ -f "build/wasm/$f" ]]; then
      cp "build/wasm/$f" "$tmp/wasm/"
    else
      echo "build: build/wasm/$f is missing" >&2
      return 1
    fi
  done
  shopt -s nullglob
  local models=(models/*.safetensors) jsons=(models/*.json)
  shopt -u nullglob
  if ((${#models[@]})); then
    cp "${models[@]}" "$tmp/models/"
  fi
  # index, <name>.metrics.json, <name>.seeds.json, report.json
  if ((${#jsons[@]})); then
    cp "${jsons[@]}" "$tmp/models/"
  fi
  if [[ -d models/snapshots ]]; then
    cp -R models/snapshots "$tmp/models/snapshots"
  fi
  # The training records of the extra seeds (models/seeds/NAME.seedN.metrics.json), which the
  # Training view draws beside the shipped run's ICL curve.
  mkdir -p "$tmp/models/seeds"
  cp models/seeds/*.metrics.json "$tmp/models/seeds/" 2>/dev/null || true
  # The corpus, for training a character model in the page, and the held-out books the sub-word
  # models' leading-terms panel counts statistics on (each fetched only when asked for).
  mkdir -p "$tmp/models/corpus" "$tmp/models/recipes"
  cp models/corpus/train.txt models/corpus/gutenberg-valid.txt models/corpus/LICENSE.md "$tmp/models/corpus/"
  # The recipes, which the page's "Train it yourself" trains (each reads its files from the site
  # as the CLI reads them from models/).
  cp models/recipes/*.json "$tmp/models/recipes/"
  if [[ ! -f models/index.json ]]; then
    # No curated index: list every shipped model under its file name.
    node -e '
      const path = require("node:path");
      const files = process.argv.slice(1).map((f) => path.basename(f));
      const list = files.map((file) => ({ file, title: file.replace(/\.safetensors$/, ""), description: "" }));
      process.stdout.write(JSON.stringify(list, null, 2) + "\n");
    ' "${models[@]}" >"$tmp/models/index.json"
  fi
  # What the site holds, for the page to list without probing for files (a 404 is a console
  # error): {"models": [names], "snapshots": {name: ["step100", ...]}, "seeds": {name: [1, 2]}}
  # (seeds: the extra training seeds whose records are in seeds/).
  node -e '
    const fs = require("node:fs"), path = require("node:path");
    const dir = process.argv[1];
    const models = fs.readdirSync(dir).filter((f) => f.endsWith(".safetensors")).map((f) => f.slice(0, -12)).sort();
    const snapshots = {};
    const sdir = path.join(dir, "snapshots");
    if (fs.existsSync(sdir)) for (const name of fs.readdirSync(sdir).sort()) {
      const p = path.join(sdir, name);
      if (!fs.statSync(p).isDirectory()) continue;
      snapshots[name] = fs.readdirSync(p).filter((f) => f.endsWith(".safetensors")).map((f) => f.slice(0, -12))
        .sort((a, b) => (parseInt(a.replace(/\D/g, ""), 10) || 0) - (parseInt(b.replace(/\D/g, ""), 10) || 0));
    }
    const seeds = {};
    const edir = path.join(dir, "seeds");
    if (fs.existsSync(edir)) for (const f of fs.readdirSync(edir)) {
      const m = /^(.+)\.seed(\d+)\.metrics\.json$/.exec(f);
      if (m) (seeds[m[1]] ??= []).push(Number(m[2]));
    }
    for (const k of Object.keys(seeds)) seeds[k].sort((a, b) => a - b);
    fs.writeFileSync(path.join(dir, "manifest.json"), JSON.stringify({ models, snapshots, seeds }, null, 2) + "\n");
  ' "$tmp/models"
  # npm runtime libraries, vendored (the CSP allows only 'self'; no CDN). lz-string ships a UMD
  # script: wrap it as an ES module (its UMD tail sees no define/module inside a module and
  # leaves the local LZString alone).
  mkdir -p "$tmp/vendor"
  if [[ ! -f node_modules/lz-string/libs/lz-string.min.js ]]; then
    echo "build: node_modules/lz-string is missing: run npm ci" >&2
    return 1
  fi
  {
    echo "// lz-string $(node -p 'require("./node_modules/lz-string/package.json").version') (MIT, pieroxy), vendored from node_modules by scripts/build.sh"
    cat node_modules/lz-string/libs/lz-string.min.js
    echo
    echo "export default LZString;"
  } >"$tmp/vendor/lz-string.mjs"
  cp node_modules/lz-string/LICENSE "$tmp/vendor/lz-string.LICENSE.txt" 2>/dev/null || true
  # uPlot (MIT, Leon Sorokin), the views' line charts (web/parts/line-chart.js): its minified build
  # (51 KB; the ES module ships unminified at 142 KB) wrapped as an ES module the way lz-string
  # is (its `var uPlot = function(){...}()` stays local to the module), its stylesheet (line-chart.js
  # links it: the CSP forbids inline styles) and its licence.
  local f
  for f in dist/uPlot.iife.min.js dist/uPlot.min.css LICENSE; do
    if [[ ! -f "node_modules/uplot/$f" ]]; then
      echo "build: node_modules/uplot/$f is missing: run npm ci (uplot is a dependency in package.json)" >&2
      return 1
    fi
  done
  {
    cat node_modules/uplot/dist/uPlot.iife.min.js
    echo
    echo "export default uPlot;"
  } >"$tmp/vendor/uPlot.mjs"
  cp node_modules/uplot/dist/uPlot.min.css "$tmp/vendor/"
  cp node_modules/uplot/LICENSE "$tmp/vendor/uPlot.LICENSE.txt"
  # marked (MIT), the lessons' Markdown, and DOMPurify (Apache-2.0 or MPL-2.0), which cleans the
  # HTML marked makes before the page shows it (web/lessons/render.js): both ship ES modules.
  for f in marked/lib/marked.esm.js marked/LICENSE dompurify/dist/purify.es.mjs dompurify/LICENSE; do
    if [[ ! -f "node_modules/$f" ]]; then
      echo "build: node_modules/$f is missing: run npm ci (marked and dompurify are dependencies in package.json)" >&2
      return 1
    fi
  done
  sed '/^\/\/# sourceMappingURL=/d' node_modules/marked/lib/marked.esm.js >"$tmp/vendor/marked.mjs"
  sed '/^\/\/# sourceMappingURL=/d' node_modules/dompurify/dist/purify.es.mjs >"$tmp/vendor/purify.mjs"
  cp node_modules/marked/LICENSE "$tmp/vendor/marked.LICENSE.txt"
  cp node_modules/dompurify/LICENSE "$tmp/vendor/purify.LICENSE.txt"
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
