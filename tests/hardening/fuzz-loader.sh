#!/usr/bin/env bash
# Fuzzes the model loader (load_model_bytes, then a short forward pass checked for non-finite
# values) with clang's libFuzzer under AddressSanitizer and UndefinedBehaviorSanitizer for a
# bounded time, starting from the shipped models, the kept regression cases and a sample of the
# corrupt-model corpus. A crash leaves its input as build/fuzz/crash-*; keep it as a regression
# case in tests/hardening/cases/ (tests/cpp/test_io.cpp loads every file there).
#   bash tests/hardening/fuzz-loader.sh [SECONDS]     (default 60)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
secs="${1:-60}"
if [[ ! -f build/fuzz/CMakeCache.txt ]]; then
  CC=clang CXX=clang++ cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCS_FUZZ=ON
fi
cmake --build build/fuzz --target fuzz_loader -j"${JOBS:-2}"
corpus=build/fuzz/corpus
mkdir -p "$corpus"
cp models/*.safetensors "$corpus/"
cp models/snapshots/char-2l/step500.safetensors "$corpus/f16-step500.safetensors"
if compgen -G "tests/hardening/cases/*" >/dev/null; then cp tests/hardening/cases/* "$corpus/"; fi
node tests/hardening/corrupt-models.mjs --sample 200 --seed 3 --write-only --bin build/fuzz/fuzz_loader >/dev/null
cp build/hardening/corrupt-models-fuzz/*.safetensors "$corpus/"
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
build/fuzz/fuzz_loader -max_total_time="$secs" -max_len=131072 -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix=build/fuzz/crash- -print_final_stats=1 "$corpus" 2>&1 | tail -n 30
