#!/usr/bin/env bash
# One whole GPU pass, on a machine with a GPU, in one command:
#
#   tools/gpu_pass.sh OUTDIR [PRESET]        (PRESET defaults to quick: sm_90 only)
#
# configures and builds with the project's preset, runs every test label (the default
# test set, integrity, sanitize), then every lesson's solution executable at full size,
# writing logs, JUnit files and CSVs to OUTDIR, and prints a summary last (also saved as
# OUTDIR/summary.txt). Exits non-zero when anything failed.
set -u
out=${1:?usage: tools/gpu_pass.sh OUTDIR [PRESET]}
preset=${2:-quick}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$root" || exit 2
build="build/$preset"
status=0
summary=()
note() { summary+=("$1"); echo "== $1"; }

step() {  # step NAME LOG COMMAND... : run, log, remember the verdict
  local name=$1 log=$2
  shift 2
  local start=$SECONDS
  "$@" >"$out/$log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || status=1
  note "$(printf '%-28s rc=%-3s %4ss  %s' "$name" "$rc" $((SECONDS - start)) "$(tail -n 40 "$out/$log" | grep -E 'tests passed|tests failed out of' | tail -n 1)")"
}

"$build/bin/course_gpu_probe" >/dev/null 2>&1 || true  # may not exist yet
step configure configure.log cmake --preset "$preset"
step build build.log cmake --build --preset "$preset" -j "$(nproc)"
probe=$("$build/bin/course_gpu_probe" 2>&1)
note "device: $probe"

ctest_junit() { local label=$1; shift; ctest --test-dir "$build" --output-on-failure --timeout 900 \
  --output-junit "$out/junit-$label.xml" "$@"; }
step "tests (default set)" tests.log ctest --preset "$preset" -j 8 --output-junit "$out/junit-tests.xml"
step "integrity" integrity.log ctest_junit integrity -L '^integrity$' -j 4
step "sanitize" sanitize.log ctest_junit sanitize -L '^sanitize$' -j 4

for exe in "$build"/bin/[0-9][0-9]_*_solution; do
  name=$(basename "$exe" _solution)
  "$exe" --csv "$out/$name.csv" >"$out/$name.txt" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  note "$(printf '%-28s rc=%-3s %s | %s' "$name" "$rc" "$(grep -E '^RESULT:' "$out/$name.txt")" \
    "$(grep -E '^(HEADLINE|TARGET):' "$out/$name.txt" | tr '\n' ' ')")"
done

{
  echo "GPU pass on $(date -u '+%Y-%m-%d %H:%M UTC'), preset $preset, commit ${COURSE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  printf '%s\n' "${summary[@]}"
  echo "overall: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
} | tee "$out/summary.txt"
exit $status
