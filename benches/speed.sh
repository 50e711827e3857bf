#!/usr/bin/env bash
# Issue 16's yardsticks: `sluice run benches/scenarios/speed-1000000.yaml` (3 seeds, both modes,
# ten random faults each) and `sluice sweep scenarios/wordcount-tm-crash.yaml --seeds 1..201
# --jobs 2`, by this checkout and by a baseline revision, built in the same sitting, alternating
# runs; prints each run's whole-process wall time and peak RSS, and each sweep's summary line.
#
#   benches/speed.sh [BASELINE_REV]    (default d203e0e; RUNS=3)
#
# The baseline is built from a git worktree under $TMPDIR with its own target directory (two
# checkouts never share one), and removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
unset RUSTFLAGS RUSTDOCFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_ENCODED_RUSTDOCFLAGS
baseline=${1:-d203e0e}
runs=${RUNS:-3}
scratch=$(mktemp -d)
trap 'git worktree remove --force "$scratch/baseline" >/dev/null 2>&1 || true; rm -rf "$scratch"' EXIT
scenario="$scratch/speed.yaml"
cp benches/scenarios/speed-1000000.yaml "$scenario"

git worktree add --detach "$scratch/baseline" "$baseline" >/dev/null 2>&1
(cd "$scratch/baseline" && CARGO_TARGET_DIR="$scratch/baseline-target" cargo build --release -q -p sluice-sim)
cargo build --release -q -p sluice-sim

measure() { # NAME BINARY
    /usr/bin/time -f "$1 %e s wall, %M KiB peak RSS" "$2" run "$scenario" --failures "$scratch/failures" 2>&1 >/dev/null | tail -1
}
sweep() { # NAME BINARY
    echo "$1 $("$2" sweep scenarios/wordcount-tm-crash.yaml --seeds 1..201 --jobs 2 \
        --failures "$scratch/failures" 2>&1 | grep '^summary:')"
}
for run in $(seq "$runs"); do
    echo "run $run"
    measure "  baseline $baseline:" "$scratch/baseline-target/release/sluice"
    measure "  this checkout:   " target/release/sluice
    sweep "  baseline $baseline:" "$scratch/baseline-target/release/sluice"
    sweep "  this checkout:   " target/release/sluice
done
