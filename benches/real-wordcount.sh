#!/usr/bin/env bash
# Real-mode WordCount beside timely-dataflow, in one sitting: words/s and peak memory.
#
#   benches/real-wordcount.sh [INPUT_DIR]      (RUNS=3 by default; the median run is reported)
#
# Input: the peers' file (`../shared/bench/gen_words.py`: 10,000,000 Zipf words over 100,000
# distinct, seed 42), made once into INPUT_DIR (default target/bench-input). Sluice runs
# `sluice-real local` of the wordcount-files job over it (one TaskManager with two slots, as
# Flink's MiniCluster; exactly-once commits on, every run checked against the reference) at
# parallelism 1 and 2 in both modes; its time is the cluster's, from starting the processes to
# the job's end, and its memory the largest process's peak (VmHWM). timely runs
# benches/timely-wordcount (whole process). Figures are for this machine in this sitting only:
# compare ratios, not absolute numbers across sittings.
set -euo pipefail
cd "$(dirname "$0")/.."
input=${1:-target/bench-input}
runs=${RUNS:-3}
words=10000000
if [ ! -f "$input/words.txt" ]; then
    mkdir -p "$input"
    python3 ../shared/bench/gen_words.py "$input/words.txt" >&2
    # The generator's summary must not be read as input.
    mv "$input/words.txt.expected" "$input/../words.txt.expected"
fi
cargo real-build >&2
(cd benches/timely-wordcount && cargo build --release --quiet >&2)
sluice=target/real/release/sluice-real
timely=benches/timely-wordcount/target/release/timely-wordcount
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

printf '%-8s %-10s %2s %10s %12s %14s\n' system mode p seconds "words/s" "peak memory"
for mode in batch streaming; do
    for p in 1 2; do
        scenario="target/bench-wordcount-p$p.yaml"
        cat > "$scenario" <<YAML
name: bench-wordcount-p$p
job: wordcount-files
cluster: { task_managers: 1, slots_per_task_manager: 2 }
parallelism: $p
modes: [streaming, batch]
seeds: 1..2
time_limit: 3600s
YAML
        results=()
        for _ in $(seq "$runs"); do
            line=$("$sluice" local "$scenario" --input "$input" --mode "$mode" | grep -E "^  $mode ")
            case "$line" in *PASS*) ;; *) echo "sluice-real $mode p$p failed: $line" >&2; exit 1 ;; esac
            seconds=$(sed -E 's/.*wall +([0-9.]+)s.*/\1/' <<< "$line")
            memory=$(sed -E 's/.*peak memory ([0-9.]+ [KMG]iB) \(([a-z0-9-]+)\).*/\1 \2/' <<< "$line")
            results+=("$seconds $memory")
        done
        best=$(printf '%s\n' "${results[@]}" | sort -n | awk -v n="${#results[@]}" 'NR == int((n + 1) / 2)')
        read -r seconds amount unit node <<< "$best"
        printf '%-8s %-10s %2s %10s %12s %14s\n' sluice "$mode" "$p" "$seconds" \
            "$(awk -v w=$words -v s="$seconds" 'BEGIN { printf "%.2f M", w / s / 1e6 }')" "$amount $unit ($node)"
    done
done
for mode in batch stream; do
    for p in 1 2; do
        times=()
        for _ in $(seq "$runs"); do
            times+=("$( { /usr/bin/time -f '%e %M' "$timely" "$input/words.txt" "$mode" "$p" > /dev/null; } 2>&1 | tail -1)")
        done
        best=$(printf '%s\n' "${times[@]}" | sort -n | awk -v n="${#times[@]}" 'NR == int((n + 1) / 2)')
        read -r seconds kilobytes <<< "$best"
        printf '%-8s %-10s %2s %10s %12s %14s\n' timely "$mode" "$p" "$seconds" \
            "$(awk -v w=$words -v s="$seconds" 'BEGIN { printf "%.2f M", w / s / 1e6 }')" "$((kilobytes / 1024)) MiB"
    done
done
