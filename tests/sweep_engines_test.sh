#!/usr/bin/env bash
# The --emit-jobs flow of `npusim sweep` on the job runners docs/sweep.md names: the jobs file run
# by GNU parallel, or by the Slurm array script (scripts/slurm_sweep.sbatch, its tasks run as
# Slurm would start them, in an order of their own), then merged. The merged sweep.csv and
# sweep.json must be byte for byte those of a direct sweep of the same grid, which includes
# failing points (dram.bandwidth_gbps=0), so exit codes and errors go through the runner too.
#
# Usage: tests/sweep_engines_test.sh parallel|slurm NPUSIM SOURCE_DIR WORK_DIR
# Exit 77 (ctest: skipped) when GNU parallel is not installed; scripts/setup.sh installs it.
set -euo pipefail
engine=$1 npusim=$2 src=$3 work=$4

fail() { echo "FAIL: $*" >&2; exit 1; }

if [ "$engine" = parallel ]; then
  if ! command -v parallel >/dev/null || ! parallel --version 2>/dev/null | grep -q "GNU parallel"; then
    echo "SKIP: GNU parallel is not installed (Debian package parallel; scripts/setup.sh installs it)"
    exit 77
  fi
fi

rm -rf "$work"
mkdir -p "$work"
# The BERT layer: the cheapest zoo model to compile (the runners, not the model, are under test).
grid=(-m "$src/models/zoo/bert_base_layer.json" -c default --clock-mhz 400,800 --slices 1,2
      --sweep dram.bandwidth_gbps=0,12.8)
points=8 failing=4

rc=0
"$npusim" sweep "${grid[@]}" --out "$work/direct" --jobs 2 --quiet || rc=$?
[ "$rc" -eq 3 ] || fail "direct sweep exited $rc, expected 3 (failing points)"

"$npusim" sweep "${grid[@]}" --out "$work/emitted" --emit-jobs "$work/jobs.txt"
[ "$(wc -l <"$work/jobs.txt")" -eq "$points" ] || fail "jobs.txt does not have $points lines"

rc=0
case "$engine" in
  parallel)
    parallel --will-cite --jobs 2 --joblog "$work/joblog" <"$work/jobs.txt" || rc=$?
    # GNU parallel exits with the number of failed jobs, and logs each job's exit value.
    [ "$rc" -eq "$failing" ] || fail "parallel exited $rc, expected $failing failed jobs"
    [ "$(tail -n +2 "$work/joblog" | wc -l)" -eq "$points" ] || fail "joblog: not $points jobs"
    failed_in_log=$(tail -n +2 "$work/joblog" | awk -F'\t' '$7 != 0' | wc -l)
    [ "$failed_in_log" -eq "$failing" ] || fail "joblog: $failed_in_log failed jobs"
    ;;
  slurm)
    # Tasks in reverse order, two points per task (POINTS_PER_TASK), as an array 0-3 would run.
    tasks=$(((points + 1) / 2))
    for ((t = tasks - 1; t >= 0; t--)); do
      task_rc=0
      SLURM_ARRAY_TASK_ID=$t POINTS_PER_TASK=2 bash "$src/scripts/slurm_sweep.sbatch" \
        "$work/jobs.txt" >"$work/task-$t.out" 2>&1 || task_rc=$?
      # Bandwidth varies fastest, so every task holds one point with bandwidth 0, whose run exits
      # 2 (bad config), and the task with it.
      [ "$task_rc" -eq 2 ] || fail "task $t exited $task_rc, expected 2 (its failing point)"
      grep -q "point $((2 * t)) exited with 2" "$work/task-$t.out" || fail "task $t: no point log"
    done
    # A task past the end of the grid has nothing to do and succeeds.
    SLURM_ARRAY_TASK_ID=$tasks POINTS_PER_TASK=2 bash "$src/scripts/slurm_sweep.sbatch" \
      "$work/jobs.txt" >"$work/task-extra.out" || fail "a task past the grid failed"
    ;;
  *) fail "unknown engine $engine" ;;
esac

rc=0
"$npusim" sweep --merge "$work/emitted" --quiet || rc=$?
[ "$rc" -eq 3 ] || fail "merge exited $rc, expected 3 (failing points)"
for f in sweep.csv sweep.json; do
  cmp "$work/direct/$f" "$work/emitted/$f" || fail "$f differs from the direct sweep's"
done
ok=$(grep -c ',ok,' "$work/emitted/sweep.csv" || true)
[ "$ok" -eq $((points - failing)) ] || fail "$ok ok rows, expected $((points - failing))"
echo "PASS: $engine ran $points points ($failing failing); merged files equal the direct sweep's"
