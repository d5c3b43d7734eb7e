#!/usr/bin/env bash
# Builds the CLI (loader, forward pass, everything it calls) under AddressSanitizer and
# UndefinedBehaviorSanitizer in build/asan, then runs the whole corrupt-model corpus through it.
# Any sanitizer report fails the run (the corpus runner flags "AddressSanitizer" and "runtime
# error:" in a run's output, and a report's exit status 86).
#   bash tests/hardening/sanitize.sh            the full corpus
#   bash tests/hardening/sanitize.sh --sample 300
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if [[ ! -f build/asan/CMakeCache.txt ]]; then
  cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCS_SANITIZE=ON
fi
cmake --build build/asan --target circuitscope -j"${JOBS:-2}"
export ASAN_OPTIONS="exitcode=86:detect_leaks=1:allocator_may_return_null=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
args=("$@")
[[ ${#args[@]} -eq 0 ]] && args=(--all)
exec node tests/hardening/corrupt-models.mjs "${args[@]}" --bin build/asan/circuitscope --mem unlimited --timeout 60
