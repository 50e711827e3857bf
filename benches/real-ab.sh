#!/usr/bin/env bash
# Real mode, a baseline revision against this checkout, in one sitting: `sluice-real local` of the
# peers' WordCount (the wordcount-files job over INPUT_DIR, one TaskManager with two slots, batch
# and streaming at parallelism 1 and 2, as benches/real-wordcount.sh runs it) and of
# scenarios/real/wordcount.yaml (1 M words, three TaskManagers, both modes), each binary in turn,
# RUNS times; prints every verdict line (wall, restarts, peak memory).
#
#   benches/real-ab.sh [BASELINE_REV] [INPUT_DIR]    (defaults 430c81d, target/bench-input; RUNS=3)
#
# The baseline's real binary is built in a git worktree under $TMPDIR (its own target/real), and
# removed afterwards. INPUT_DIR is made as benches/real-wordcount.sh makes it.
set -euo pipefail
cd "$(dirname "$0")/.."
unset RUSTFLAGS RUSTDOCFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_ENCODED_RUSTDOCFLAGS
baseline=${1:-430c81d}
input=${2:-target/bench-input}
runs=${RUNS:-3}
scratch=$(mktemp -d)
trap 'git worktree remove --force "$scratch/baseline" >/dev/null 2>&1 || true; rm -rf "$scratch"' EXIT
if [ ! -f "$input/words.txt" ]; then
    mkdir -p "$input"
    python3 ../shared/bench/gen_words.py "$input/words.txt" >&2
    mv "$input/words.txt.expected" "$input/../words.txt.expected"
fi
git worktree add --detach "$scratch/baseline" "$baseline" >/dev/null 2>&1
(cd "$scratch/baseline" && cargo real-build -q >&2)
cargo real-build -q >&2
binaries=("baseline:$scratch/baseline/target/real/release/sluice-real" "this:target/real/release/sluice-real")
for mode in batch streaming; do
    for p in 1 2; do
        scenario="$scratch/bench-wordcount-p$p.yaml"
        cat > "$scenario" <<YAML
name: bench-wordcount-p$p
job: wordcount-files
cluster: { task_managers: 1, slots_per_task_manager: 2 }
parallelism: $p
modes: [streaming, batch]
seeds: 1..2
time_limit: 3600s
YAML
        for run in $(seq "$runs"); do
            for named in "${binaries[@]}"; do
                line=$("${named#*:}" local "$scenario" --input "$input" --mode "$mode" | grep -E "^  $mode ")
                echo "wordcount-files p$p ${named%%:*} run $run: $line"
            done
        done
    done
done
for run in $(seq "$runs"); do
    for named in "${binaries[@]}"; do
        "${named#*:}" local scenarios/real/wordcount.yaml | grep -E "^  (streaming|batch) " |
            sed "s/^/wordcount-real ${named%%:*} run $run: /"
    done
done
