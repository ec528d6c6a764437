#!/usr/bin/env bash
# Times the README's two first commands as a new student meets them, each in its own fresh
# copy of the tree (no build folder, no compiler cache), on a machine with a GPU:
#
#   tools/first_contact.sh OUTDIR
#
#   1. ./course tour                       (build included)
#   2. cmake --workflow --preset default   (configure, build, test; the configure step
#                                           is timed on its own as well)
#
# Logs go to OUTDIR/tour.log and OUTDIR/workflow.log, the times to OUTDIR/first_contact.txt.
set -u
out=${1:?usage: tools/first_contact.sh OUTDIR}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=${TMPDIR:-/tmp}/course-first-contact
export CCACHE_DISABLE=1  # a new student's machine has nothing cached

fresh_copy() {  # the files as a clone would have them, without build outputs
  rm -rf "$1" && mkdir -p "$1"
  if [ -e "$root/.git" ] && [ -z "$(git -C "$root" status --porcelain 2>/dev/null)" ]; then
    git -C "$root" archive HEAD | tar -x -C "$1"
  else  # no repository, or a working tree that differs from it: copy what is there
    (cd "$root" && tar --exclude=./build --exclude=./.git --exclude=./.bench -cf - .) | tar -x -C "$1"
  fi
}

seconds() { date +%s%N; }                              # nanoseconds, despite the name
elapsed() { echo $((($2 - $1 + 500000000) / 1000000000)); }  # whole seconds between two

fresh_copy "$work/tour"
start=$(seconds)
(cd "$work/tour" && ./course tour) >"$out/tour.log" 2>&1
tour_rc=$?
tour_s=$(elapsed "$start" "$(seconds)")

fresh_copy "$work/workflow"
start=$(seconds)
(cd "$work/workflow" && cmake --preset default) >"$out/workflow.log" 2>&1
configured=$(seconds)
(cd "$work/workflow" && cmake --workflow --preset default) >>"$out/workflow.log" 2>&1
workflow_rc=$?
done_at=$(seconds)

{
  echo "first contact on $(nproc) cores, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)"
  echo "architectures built: $(grep -h '^CMAKE_CUDA_ARCHITECTURES' "$work"/*/build/*/CMakeCache.txt | sort -u | tr '\n' ' ')"
  echo "./course tour: ${tour_s} s, exit ${tour_rc}"
  echo "cmake --workflow --preset default: $(elapsed "$configured" "$done_at") s after a $(elapsed "$start" "$configured") s configure, exit ${workflow_rc}"
  grep -E 'tests passed|tests failed' "$out/workflow.log" | tail -n 1
} | tee "$out/first_contact.txt"
echo "$work/workflow"  # the configured tree, for further steps on the same build
[ $tour_rc -eq 0 ] && [ $workflow_rc -eq 0 ]
