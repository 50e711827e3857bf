#!/usr/bin/env bash
# Runs to the first failure, guided (`sluice explore`) against blind (`--blind`), for each injected
# bug: applies its patch, builds, runs both campaigns on the same scenario and budget with
# `--until-failure`, reverts the patch. Needs a clean tree for the patched files.
#
#   bash benches/injected-bugs/run.sh [RUNS] [CAMPAIGN_SEEDS...]    # default 2000 runs, seed 1
#   BUGS='[456]' bash benches/injected-bugs/run.sh 800 1               # only bugs 4, 5 and 6
#
# Prints one line per (bug, campaign seed): runs to the first failure in each (or `>RUNS`).
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-2000}"
shift || true
seeds=("${@:-1}")
declare -A scenario=(
  [1-reconciliation-tracks-a-lost-partition]=scenarios/tpcds-failover.yaml
  [2-a-stale-attempts-finish-counts]=scenarios/wordcount-failover.yaml
  [3-offset-saved-past-its-records]=scenarios/tpcds-chaos.yaml
  [4-partition-released-when-one-consumer-finishes]=scenarios/tpcds-chaos.yaml
  [5-checkpoint-ack-of-any-attempt]=scenarios/tpcds-chaos.yaml
  [6-restore-drops-pending-committables]=scenarios/tpcds-chaos.yaml
)
first_failure() {
  # The run of the first `FAIL run N` line, or >RUNS.
  grep -m1 -o 'FAIL run [0-9]*' | awk '{print $3}' | grep . || echo ">$runs"
}
# The engine bugs (the h*- patches are the harness's own, caught by `cargo test`: see README.md).
for patch in benches/injected-bugs/${BUGS:-[0-9]}*.patch; do
  bug="$(basename "$patch" .patch)"
  git apply "$patch"
  trap 'git apply -R "$patch"' EXIT
  cargo build -q --release -p sluice-sim
  for seed in "${seeds[@]}"; do
    out="target/injected-bugs/$bug-$seed"
    mkdir -p "$out"
    guided=$(./target/release/sluice explore "${scenario[$bug]}" --runs "$runs" --campaign-seed "$seed" \
      --until-failure --failures "$out/guided" 2>&1 | tee "$out/guided.txt" | first_failure || true)
    blind=$(./target/release/sluice explore "${scenario[$bug]}" --runs "$runs" --campaign-seed "$seed" --blind \
      --until-failure --failures "$out/blind" 2>&1 | tee "$out/blind.txt" | first_failure || true)
    echo "$bug  campaign seed $seed  ${scenario[$bug]}  guided $guided  blind $blind"
  done
  git apply -R "$patch"
  trap - EXIT
done
