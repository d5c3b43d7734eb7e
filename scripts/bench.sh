#!/usr/bin/env bash
# `npm run bench`: installs what is missing, builds, then times the reference model
# (tests/bench/reference_recipe.json) natively (Google Benchmark, tests/bench/bench_model.cpp)
# and in WebAssembly under node (tests/bench/bench_wasm.mjs), one forward pass and one training
# step per call, and prints one table: median (min–max) per call on each side and their ratio,
# plus the GFLOP/s the forward pass implies. Nothing here asserts a time.
#   FORWARD_REPS=30 TRAIN_REPS=15 scripts/bench.sh      (the defaults)
# Raw results: build/bench/native.json, build/bench/wasm.json.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
FORWARD_REPS="${FORWARD_REPS:-30}"
TRAIN_REPS="${TRAIN_REPS:-15}"
OUT=build/bench

bash scripts/ensure-deps.sh
bash scripts/build.sh
mkdir -p "$OUT"

echo
echo "== machine"
echo "nproc: $(nproc)"
if command -v lscpu >/dev/null 2>&1; then
  echo "cpu: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
echo "native: $(c++ --version | head -1); flags: $(sed -n 's/^CMAKE_CXX_FLAGS_RELEASE:STRING=//p' build/native/CMakeCache.txt) (no -march: baseline x86-64 SIMD)"
echo "wasm: $(em++ --version | head -1); $(em++ -v 2>&1 | grep -m1 'clang version'); flags: -O3 -msimd128 -fwasm-exceptions"
echo "node: $(node --version) (V8 $(node -p process.versions.v8))"
eigen=$(awk '/#define EIGEN_(WORLD|MAJOR|MINOR)_VERSION/ {printf "%s%s", sep, $3; sep="."}' /usr/include/eigen3/Eigen/src/Core/util/Macros.h 2>/dev/null || true)
echo "Eigen: ${eigen:-?}; Google Benchmark: $(dpkg-query -W -f='${Version}' libbenchmark-dev 2>/dev/null || echo '?')"

echo
echo "== native (build/native/circuitscope_bench, $FORWARD_REPS forwards and $TRAIN_REPS training steps, one call each)"
# Progress and Google Benchmark's notes (e.g. Debian's library reporting itself as a DEBUG build,
# which concerns the harness, not our code) go to stderr.
build/native/circuitscope_bench --forward_reps="$FORWARD_REPS" --train_reps="$TRAIN_REPS" \
  --benchmark_format=json --benchmark_out="$OUT/native.json" --benchmark_out_format=json >/dev/null

echo "== WASM (node tests/bench/bench_wasm.mjs, the same calls)"
node tests/bench/bench_wasm.mjs --forward-reps "$FORWARD_REPS" --train-reps "$TRAIN_REPS" --json >"$OUT/wasm.json"

echo
node tests/bench/bench_report.mjs "$OUT/native.json" "$OUT/wasm.json"
