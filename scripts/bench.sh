#!/usr/bin/env bash
# `npm run bench`: installs what is missing, builds, then measures in one run and prints one
# report (tests/bench/bench_report.mjs):
#   - the reference model (tests/bench/reference_recipe.json), one forward pass and one training
#     step per call: natively (the portable SSE4.2 kernel and the fastest this CPU runs, Google
#     Benchmark, tests/bench/bench_model.cpp), in
#     WebAssembly under node (tests/bench/bench_wasm.mjs), and in the peers tfjs-wasm and
#     onnxruntime-web (tests/bench/peers/, their own packages, installed here only); and a
#     1,024-token forward of attn-only-2l's shape, ours against onnxruntime-web on 1 and 2 threads;
#   - the GEMM kernel's GFLOP/s on the model's shapes against the measured arithmetic limit, native
#     and WASM (tests/bench/gemm/);
#   - the reference model and the GEMM kernel again with the relaxed-SIMD module (--relaxed);
#   - the shipped char-2l on one 256-token sequence, native and WASM;
#   - a checkpoint of attn-only-2l's shape loaded and scored as the Training view scores a series
#     (tests/bench/bench_series.mjs);
#   - typing at attn-only-2l's shape: the induction view's core call per keystroke, incremental
#     and full (tests/bench/bench_typing.mjs);
#   - the Circuits view's core calls at attn-only-2l's shape (tests/bench/bench_circuits.mjs);
#   - in Chromium: keystroke to rendered induction view (char-2l, and at attn-only-2l's and ARENA's
#     shapes with GPT-2's vocabulary, opened through Open file), and in-browser training of the
#     induction recipe until its phase change (tests/bench/bench_browser.mjs).
# Nothing here asserts a time.
#   FORWARD_REPS=30 TRAIN_REPS=15 scripts/bench.sh      (the defaults)
#   SKIP_PEERS=1 / SKIP_BROWSER=1                       leave those parts out
# Raw results: build/bench/*.json.
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
echo "native: $(c++ --version | head -1); flags: $(sed -n 's/^CMAKE_CXX_FLAGS_RELEASE:STRING=//p' build/native/CMakeCache.txt) -msse4.2 (AVX2 and AVX-512 kernels enable those instructions per function and run where the CPU has them)"
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

echo "== GEMM kernel (build/native/gemm_bench, node tests/bench/gemm/bench_gemm.mjs)"
build/native/gemm_bench --reps "$TRAIN_REPS" >"$OUT/gemm-native.json"
node tests/bench/gemm/bench_gemm.mjs --reps "$TRAIN_REPS" >"$OUT/gemm-wasm.json"

# The relaxed-SIMD module, the same calls (docs/developer-notes.md, "Relaxed SIMD").
echo "== WASM relaxed SIMD (node tests/bench/bench_wasm.mjs --relaxed, node tests/bench/gemm/bench_gemm.mjs --relaxed)"
node tests/bench/bench_wasm.mjs --relaxed --forward-reps "$FORWARD_REPS" --train-reps "$TRAIN_REPS" --json >"$OUT/wasm-relaxed.json"
node tests/bench/gemm/bench_gemm.mjs --relaxed --reps "$TRAIN_REPS" >"$OUT/gemm-wasm-relaxed.json"

# A TransformerLens run's checkpoints at attn-only-2l's shape: what the Training view spends on each.
echo "== checkpoint series (node tests/bench/bench_series.mjs)"
node tests/bench/bench_series.mjs --checkpoints 3

echo
echo "== typing at attn-only-2l's shape (node tests/bench/bench_typing.mjs)"
node tests/bench/bench_typing.mjs --keystrokes 20
node tests/bench/bench_typing.mjs --keystrokes 20 --relaxed

echo
echo "== the Circuits view at attn-only-2l's shape (node tests/bench/bench_circuits.mjs)"
node tests/bench/bench_circuits.mjs --reps 3

rm -f "$OUT/peers.json" "$OUT/peers-realshape.json" "$OUT/browser.json"
if [[ "${SKIP_PEERS:-}" != 1 ]]; then
  echo "== peers (node tests/bench/peers/bench_peers.mjs)"
  peers=tests/bench/peers
  if [[ ! -f "$peers/node_modules/.package-lock.json" || "$peers/package-lock.json" -nt "$peers/node_modules/.package-lock.json" ]]; then
    # Their install scripts are not needed (protobufjs, core-js only print notices).
    npm ci --prefix "$peers" --ignore-scripts --no-audit --no-fund
  fi
  node "$peers/bench_peers.mjs" --forward-reps "$FORWARD_REPS" >"$OUT/peers.json"
  echo "== peers at attn-only-2l's shape (node tests/bench/peers/bench_peers.mjs --shape attn-only-2l)"
  # Ours with the relaxed-SIMD module, as Chromium runs it, and the SIMD128 one beside it.
  node --experimental-wasm-relaxed-simd "$peers/bench_peers.mjs" --shape attn-only-2l --forward-reps 5 >"$OUT/peers-realshape.json"
fi
if [[ "${SKIP_BROWSER:-}" != 1 ]]; then
  echo "== Chromium (node tests/bench/bench_browser.mjs)"
  node tests/bench/bench_browser.mjs --json >"$OUT/browser.json"
fi

echo
node tests/bench/bench_report.mjs "$OUT"
