#!/usr/bin/env bash
# Checks every system requirement of the build and the tests, installs what is missing with
# apt-get when run as root (otherwise prints the command and fails), then installs the npm
# dev dependencies when node_modules is missing or older than package-lock.json.
# Idempotent and fast: when everything is there it only looks at a few files.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

missing=()
need_cmd() {  # need_cmd <command> <debian package>
  command -v "$1" >/dev/null 2>&1 || missing+=("$2")
}
need_file() {  # need_file <path or glob> <debian package>
  compgen -G "$1" >/dev/null || missing+=("$2")
}

need_cmd cmake cmake
need_cmd make make
need_cmd g++ g++
need_cmd em++ emscripten
need_cmd emcc emscripten
need_cmd emcmake emscripten
need_file /usr/share/nodejs/acorn node-acorn            # emcc's JS optimizer
need_file /usr/include/eigen3/Eigen/Dense libeigen3-dev
need_file /usr/include/nlohmann/json.hpp nlohmann-json3-dev
need_file /usr/include/gtest/gtest.h libgtest-dev
need_file "/usr/lib/*/cmake/GTest/GTestConfig.cmake" libgtest-dev
need_file /usr/src/googletest/CMakeLists.txt googletest # built to WASM from source
need_file /usr/include/benchmark/benchmark.h libbenchmark-dev
need_file /usr/share/unicode/UnicodeData.txt unicode-data  # the tokenizer's Unicode tables (scripts/gen_unicode.py)
need_file /usr/bin/chromium chromium
need_file /usr/lib/python3/dist-packages/torch/__init__.py python3-torch  # the float64 TransformerLens reference (tests/reference/)

if ((${#missing[@]})); then
  # de-duplicate, keep order
  declare -A seen=()
  pkgs=()
  for p in "${missing[@]}"; do
    [[ -n "${seen[$p]:-}" ]] || { seen[$p]=1; pkgs+=("$p"); }
  done
  if [[ "$(id -u)" == 0 ]]; then
    echo "ensure-deps: installing ${pkgs[*]}"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${pkgs[@]}"
  else
    echo "ensure-deps: missing system packages: ${pkgs[*]}" >&2
    echo "ensure-deps: install them with:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${pkgs[*]}" >&2
    exit 1
  fi
fi

# Node.js >= 20 (Debian 12's own nodejs is 18: install a newer one from your usual source).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "ensure-deps: node (>= 20) and npm are required but not found" >&2
  exit 1
fi
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if ((node_major < 20)); then
  echo "ensure-deps: node >= 20 is required, found $(node --version)" >&2
  exit 1
fi

# npm dev dependencies (playwright-core), only when needed.
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  echo "ensure-deps: npm ci"
  npm ci --no-audit --no-fund
  touch node_modules/.package-lock.json
fi
