#!/usr/bin/env bash
# `npm test`: install what is missing, build, then run every test stage in order and keep going
# after a failing one:
#   1. native GoogleTest suites (ctest in build/native, two shards in parallel)
#   2. the same suites compiled to WebAssembly, under node (ctest in build/wasm), once with the
#      SIMD128 kernels and once with the relaxed-SIMD ones
#   3. node tests of the WASM module (tests/js/)
#   4. types: tsc over tests/types/tsconfig.json (wasm/circuitscope.js checked against
#      wasm/circuitscope.d.ts, and a page script using it), tsconfig.web.json (every script
#      under web/ against the same declarations) and tsconfig.tests.json (the API test against
#      them, so a call or field the declarations lack fails); one test per config
#   5. browser tests of the built page in Chromium (tests/browser/)
# Counts: ctest's "N tests failed out of M" (one ctest test per GoogleTest shard) says which shards
# failed, the shards' GoogleTest JSON reports give the number of test cases; node's "# pass N" /
# "# fail N" lines give the JS counts. A stage that fails to run or runs no test counts as one
# failure.
# The last line is "circuitscope: N passed, M failed"; the exit status is non-zero if M > 0.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
LOGS=build/test-logs
mkdir -p "$LOGS"

total_pass=0
total_fail=0
summary=()

record() {  # record <stage> <passed> <failed> [note]
  total_pass=$((total_pass + $2))
  total_fail=$((total_fail + $3))
  summary+=("$(printf '  %-14s %4d passed, %4d failed%s' "$1" "$2" "$3" "${4:+  ($4)}")")
}

banner() { printf '\n==================== %s ====================\n' "$1"; }

banner "dependencies"
if ! bash scripts/ensure-deps.sh; then
  record deps 0 1 "scripts/ensure-deps.sh failed"
fi

banner "build"
if ! bash scripts/build.sh 2>&1 | tee "$LOGS/build.log"; then
  record build 0 1 "scripts/build.sh failed; see $LOGS/build.log"
fi

run_ctest() {  # run_ctest <stage> <build dir>
  local stage=$1 dir=$2 log="$LOGS/$1.log"
  banner "$stage"
  if [[ ! -f "$dir/CTestTestfile.cmake" ]]; then
    echo "no ctest configuration in $dir"
    record "$stage" 0 1 "not built"
    return
  fi
  rm -f "$dir"/test-results/*.json
  ctest --test-dir "$dir" --output-on-failure -j2 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local line failed total
  line=$(grep -E '[0-9]+ tests? failed out of [0-9]+' "$log" | tail -1)
  if [[ -z "$line" ]]; then
    record "$stage" 0 1 "ran no tests (ctest exit $rc)"
    return
  fi
  failed=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
  total=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$line")
  if ((total == 0)); then
    record "$stage" 0 1 "ran no tests"
    return
  fi
  # Count GoogleTest cases from the shards' JSON reports; a shard that wrote none (it crashed or
  # timed out) counts as one failure. Without reports, fall back to ctest's count of shards.
  local counts gpass gfail reports
  counts=$(node -e '
    const fs = require("node:fs");
    let pass = 0, fail = 0, n = 0;
    for (const f of process.argv.slice(1)) {
      try {
        const j = JSON.parse(fs.readFileSync(f, "utf8"));
        let skipped = 0;
        for (const s of j.testsuites ?? []) for (const t of s.testsuite ?? []) if (t.result === "SKIPPED") skipped++;
        pass += j.tests - j.failures - (j.disabled ?? 0) - skipped;
        fail += j.failures;
        n++;
      } catch {}
    }
    console.log(pass, fail, n);
  ' "$dir"/test-results/*.json 2>/dev/null)
  read -r gpass gfail reports <<<"${counts:-0 0 0}"
  if ((reports == 0)); then
    if ((rc != 0 && failed == 0)); then
      record "$stage" "$total" 1 "ctest exit $rc"
    else
      record "$stage" $((total - failed)) "$failed" "counted in ctest tests (shards)"
    fi
    return
  fi
  local missing=$((total - reports))
  ((missing < 0)) && missing=0
  gfail=$((gfail + missing))
  ((gfail < failed)) && gfail=$failed
  ((rc != 0 && gfail == 0)) && gfail=1
  if ((gpass + gfail == 0)); then
    record "$stage" 0 1 "ran no tests"
  else
    record "$stage" "$gpass" "$gfail" "$total shards, $failed failed"
  fi
}

run_node_tests() {  # run_node_tests <stage> <dir>
  local stage=$1 dir=$2 log="$LOGS/$1.log"
  banner "$stage"
  if [[ ! -d "$dir" ]]; then
    record "$stage" 0 1 "$dir is missing"
    return
  fi
  # --test-timeout guards against a hung file, not a speed bound: the link property test's 300
  # sequences took 594 s in a clean-clone run on 2026-12-01 and timed out at 600 s in the next.
  node --test --test-reporter=tap --test-timeout=1200000 "$dir/" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local pass fail cancelled
  pass=$(grep -E '^# pass [0-9]+' "$log" | tail -1 | awk '{print $3}')
  fail=$(grep -E '^# fail [0-9]+' "$log" | tail -1 | awk '{print $3}')
  cancelled=$(grep -E '^# cancelled [0-9]+' "$log" | tail -1 | awk '{print $3}')
  pass=${pass:-0}
  fail=$(( ${fail:-0} + ${cancelled:-0} ))
  if ((pass + fail == 0)); then
    record "$stage" 0 1 "ran no tests (node exit $rc)"
  elif ((rc != 0 && fail == 0)); then
    record "$stage" "$pass" 1 "node exit $rc"
  else
    record "$stage" "$pass" "$fail"
  fi
}

run_types() {  # run_types <stage>: tsc --noEmit over each tests/types config, one test per config
  local stage=$1 log="$LOGS/$1.log" pass=0 fail=0 config
  banner "$stage"
  if [[ ! -x node_modules/.bin/tsc ]]; then
    record "$stage" 0 1 "node_modules/.bin/tsc is missing: run npm ci"
    return
  fi
  : >"$log"
  # tsconfig.json: the JS API (wasm/circuitscope.js) and an example page script against
  # wasm/circuitscope.d.ts; tsconfig.web.json: every script under web/ against the same types;
  # tsconfig.tests.json: the API test (tests/js/api.test.mjs), which also runs in the js stage.
  for config in tests/types/tsconfig.json tests/types/tsconfig.web.json tests/types/tsconfig.tests.json; do
    echo "tsc -p $config" | tee -a "$log"
    if node_modules/.bin/tsc -p "$config" --noEmit 2>&1 | tee -a "$log"; [[ ${PIPESTATUS[0]} == 0 ]]; then
      pass=$((pass + 1))
    else
      fail=$((fail + 1))
    fi
  done
  if ((fail == 0)); then
    record "$stage" "$pass" 0
  else
    record "$stage" "$pass" "$fail" "tsc found errors; see $log"
  fi
}

run_ctest native-ctest build/native
run_ctest wasm-ctest build/wasm
run_node_tests js tests/js
run_types types
# The link property test samples 120 of its 300 seeded sequences here (150 took 11 to 13 minutes on this
# 2-core machine; all 300 passed 20 minutes in a clean-clone run on 2026-12-03, the file's
# timeout); `node --test tests/browser/links.test.mjs` runs all 300. The hostile-link test opens
# 200 of its 300-link sample (530 s for 300 in a clean-clone run of 2026-12-04, 501 s for 200 in
# the next: the sample takes every kind first, so the megabyte links, most of the time, stay in);
# `node --test tests/browser/hostile-links.test.mjs` opens all 300 and
# `node tests/hardening/hostile-links.mjs --all` the whole corpus. The browser stage keeps both
# cores busy by itself (two shards side by side took as long), so it is not sharded.
LINK_SEQUENCES=${LINK_SEQUENCES:-120} HOSTILE_SAMPLE=${HOSTILE_SAMPLE:-200} run_node_tests browser tests/browser

banner "summary"
printf '%s\n' "${summary[@]}"
echo "circuitscope: ${total_pass} passed, ${total_fail} failed"
((total_fail == 0))
