#!/usr/bin/env bash
# One whole GPU pass, on a machine with a GPU, in one command:
#
#   tools/gpu_pass.sh OUTDIR [PRESET]        (PRESET defaults to quick: sm_90 only)
#
# configures and builds with the project's preset, runs every test label (the default
# test set, integrity, profile, sanitize), then every lesson's solution executable at full size,
# writing logs, JUnit files and CSVs to OUTDIR, and prints a summary last (also saved as
# OUTDIR/summary.txt). Exits non-zero when anything failed.
#
# COURSE_PASS_STEPS picks the steps (default "build tests integrity exes profile sanitize"; add
# "repeat" for every solution test 5 times in a row (flakiness); add
# "mutation" for the mutation label (it configures with COURSE_MUTATION_TESTS=ON),
# "opmutation" for the operator mutants (tools/op_mutation.py; repeat the call until it says
# nothing is left) and "tour" for the student-facing tour): a pass too long for one call can be split in two
# calls on the same warm machine, e.g. "build tests integrity sanitize", then "build exes".
# COURSE_PASS_EXES (a regular expression, e.g. '^1[24]_') runs only some executables, and
# COURSE_PASS_TESTS (e.g. '^L15[.]') only the tests whose names match, in every ctest step.
#
# Two-GPU mode: COURSE_PASS_GPUS=2 (on a machine with two or more GPUs joined by NVLink)
# runs only the multi-GPU lessons (16-17): every ctest step is limited to tests named
# L16.* and L17.* (COURSE_PASS_TESTS overrides the regular expression), the executables to
# ^1[67]_ (unless COURSE_PASS_EXES is set), and NCCL_NVLS_ENABLE=0 is exported (a value
# already set is kept): NVLink multicast must stay off on the shared GPU machines. Without
# COURSE_PASS_GPUS (or with 1) the pass is the one-GPU pass it always was.
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
steps=" ${COURSE_PASS_STEPS:-build tests integrity exes profile sanitize} "
wanted() { [[ "$steps" == *" $1 "* ]]; }
gpus=${COURSE_PASS_GPUS:-1}
test_filter=()  # extra ctest arguments: none in the one-GPU pass
if [ "$gpus" -ge 2 ] 2>/dev/null; then
  export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
  test_filter=(-R "${COURSE_PASS_TESTS:-^L1[67][.]}")
  COURSE_PASS_EXES=${COURSE_PASS_EXES:-^1[67]_}
elif [ -n "${COURSE_PASS_TESTS:-}" ]; then  # e.g. '^L15[.]': one lesson's tests, any step
  test_filter=(-R "$COURSE_PASS_TESTS")
fi

step() {  # step NAME LOG SECONDS COMMAND... : run with a time limit, log, remember the verdict
  local name=$1 log=$2 limit=$3
  shift 3
  local start=$SECONDS
  timeout --kill-after=10 "$limit" "$@" >"$out/$log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || status=1
  note "$(printf '%-28s rc=%-3s %4ss  %s' "$name" "$rc" $((SECONDS - start)) "$(tail -n 40 "$out/$log" | grep -E 'tests passed|tests failed out of' | tail -n 1)")"
}

"$build/bin/course_gpu_probe" >/dev/null 2>&1 || true  # may not exist yet
# COURSE_CONFIGURE_ARGS: extra cmake arguments, e.g. -DCOURSE_LESSON_FILTER='^(00|01)_'
# shellcheck disable=SC2086
mutation_args=""
wanted mutation && mutation_args="-DCOURSE_MUTATION_TESTS=ON"
if wanted build; then
  step configure configure.log 60 cmake --preset "$preset" $mutation_args ${COURSE_CONFIGURE_ARGS:-}
  step build build.log 300 cmake --build --preset "$preset" -j "$(nproc)"
fi
probe=$("$build/bin/course_gpu_probe" 2>&1 | paste -sd ";" -)  # one line: the device; how many GPUs
note "device: $probe"
[ "$gpus" -ge 2 ] 2>/dev/null && note "two-GPU mode: $COURSE_PASS_GPUS GPUs asked, NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE, tests ${test_filter[*]}, exes $COURSE_PASS_EXES"
note "compute-sanitizer: $(compute-sanitizer --version 2>/dev/null | grep -E '^Version' || echo 'not found')"

if wanted tests; then
  step "tests (default set)" tests.log 300 ctest --preset "$preset" -j 12 "${test_filter[@]}" \
    --output-junit "$out/junit-tests.xml"
fi
if wanted repeat; then
  # Flakiness: every solution test (GPU tests included) 5 times in a row; the first failure
  # of a test ends its repeats and fails the step.
  step "tests x5 (solutions)" repeat.log 900 ctest --preset "$preset" -j 12 -L '^solution$' \
    "${test_filter[@]}" --repeat until-fail:5 --output-junit "$out/junit-repeat.xml"
fi
if wanted integrity; then
  step "integrity" integrity.log 200 ctest --test-dir "$build" --output-on-failure \
    --output-junit "$out/junit-integrity.xml" -L '^integrity$' "${test_filter[@]}" -j 8
fi

for exe in "$build"/bin/[0-9][0-9]_*_solution; do
  wanted exes || break
  name=$(basename "$exe" _solution)
  # COURSE_PASS_EXES: a regular expression picking the lessons to run (default: all)
  [[ "$name" =~ ${COURSE_PASS_EXES:-.} ]] || continue
  timeout --kill-after=10 "${COURSE_EXE_LIMIT:-120}" "$exe" --csv "$out/$name.csv" >"$out/$name.txt" 2>&1
  rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 77 ] || status=1  # 77: cannot run here (lessons 16-17 on one GPU)
  note "$(printf '%-28s rc=%-3s %s | %s' "$name" "$rc" "$(grep -E '^RESULT:' "$out/$name.txt")" \
    "$(grep -E '^(HEADLINE|TARGET):' "$out/$name.txt" | tr '\n' ' ')")"
done

# Counter claims under Nsight Compute (tools/ncu_compare.py); the CSVs its tests write in
# the build tree (first line "run,metric,value") are copied here for the plots.
if wanted profile; then
  step "profile" profile.log 240 ctest --test-dir "$build" --output-on-failure \
    --output-junit "$out/junit-profile.xml" -L '^profile$' "${test_filter[@]}" -j 2
  find "$build" -name '*.csv' -size -64k -print0 2>/dev/null | while IFS= read -r -d '' csv; do
    [ "$(head -n 1 "$csv" | tr -d '\r')" = "run,metric,value" ] && cp "$csv" "$out/"
  done
fi

# Sanitizers last: the slowest step, and the one a time limit may cut short.
if wanted sanitize; then
  step "sanitize" sanitize.log "${COURSE_SANITIZE_LIMIT:-600}" ctest --test-dir "$build" \
    --output-on-failure --output-junit "$out/junit-sanitize.xml" -L '^sanitize$' "${test_filter[@]}" -j 16
fi

# Mutation: every exercise region replaced by its starter text must be caught (tools/mutation.py);
# mutation.txt gets one line per region: what caught it, or that nothing did.
if wanted mutation; then
  # -V: every verdict line reaches the log as it happens, even if the step's time runs out.
  step "mutation" mutation.log "${COURSE_MUTATION_LIMIT:-560}" ctest --test-dir "$build" -V \
    --output-junit "$out/junit-mutation.xml" -L '^mutation$' "${test_filter[@]}" -j 16
  grep -hE "^[0-9]+: (CAUGHT|INVISIBLE|SKIPPED|NOT CAUGHT)" "$out/mutation.log" | sed 's/^[0-9]*: //' |
    sort >"$out/mutation.txt"
  note "mutation regions: $(grep -c '^CAUGHT' "$out/mutation.txt") caught, $(grep -vc '^CAUGHT' "$out/mutation.txt") not, of $(grep -c '^[0-9]*: MUTANT' "$out/mutation.log") started (mutation.txt)"
fi

# Operator mutation (tools/op_mutation.py): every operator mutant of lessons 00-15 graded like
# `./course check`. The verdicts accumulate in the build tree, so a call that runs out of time
# (COURSE_OPMUTATION_LIMIT seconds, default 480) leaves the rest to the next call with the same
# steps; operator_mutation.{jsonl,md,csv} land in OUTDIR.
if wanted opmutation; then
  opm_results="$build/operator_mutation.jsonl"
  step "operator mutation" opmutation.log "$(( ${COURSE_OPMUTATION_LIMIT:-480} + 100 ))" \
    python3 tools/op_mutation.py run --build-dir "$build" --lessons "${COURSE_OPMUTATION_LESSONS:-00-15}" \
    --results "$opm_results" --time-limit "${COURSE_OPMUTATION_LIMIT:-480}"
  cp "$opm_results" "$out/operator_mutation.jsonl" 2>/dev/null
  python3 tools/op_mutation.py report --results "$opm_results" --lessons "${COURSE_OPMUTATION_LESSONS:-00-15}" \
    --out "$out" --allow-ungraded >>"$out/opmutation.log" 2>&1 || status=1  # a survivor not listed
  note "operator mutation: $(grep -E '^wrote ' "$out/opmutation.log" | tail -n 1 | sed 's/^wrote [^:]*: //')"
fi

# The tour: the student-facing command that runs every solution.
if wanted tour; then
  step "tour" tour.log 300 ./course tour --preset "$preset"
fi

{
  echo "GPU pass on $(date -u '+%Y-%m-%d %H:%M UTC'), preset $preset, GPUs $gpus, steps:${steps% }, commit ${COURSE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  printf '%s\n' "${summary[@]}"
  echo "overall: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
} | tee "$out/summary.txt"
exit $status
