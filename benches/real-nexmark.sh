#!/usr/bin/env bash
# Real-mode Nexmark throughput: q0, q1, q2, q5, q7 and q8 from their Flink text, each alone,
# beside the per-core figures Flink publishes (nexmark/nexmark GUIDE_V1.md).
#
#   benches/real-nexmark.sh            (EVENTS=1000000, RUNS=1, QUERIES="q0 q1 q2 q5 q7 q8",
#                                       MODES="streaming batch")
#
# Each run is `sluice-real local` of a scenario that reads scenarios/sql/nexmark/ddl.sql with
# its event count set to EVENTS and the generator's rate to 1 M/s (the most it takes; Flink's
# bench uses 10 M/s; the rate only spaces the event timestamps) and one query file: one
# TaskManager with one slot, parallelism 1, exactly-once commits on (streaming checkpoints
# every second), every run checked against the reference. Its time is the job's, from the
# acknowledged submission to the job's end (`job` in the verdict line: the processes' start and
# the input, written to the log before, are not counted). Flink's figures are per
# core at parallelism 8 on 3 workers × 8 cores with 100 M events; ours are events per second of
# the job at parallelism 1 on a 2-core machine that also runs the JobMaster, the log, the
# transactional store and the harness — so a per-core figure of ours is at most this one. Compare
# in one sitting only: the machine is shared.
set -euo pipefail
cd "$(dirname "$0")/.."
events=${EVENTS:-1000000}
runs=${RUNS:-1}
queries=${QUERIES:-"q0 q1 q2 q5 q7 q8"}
modes=${MODES:-"streaming batch"}
work=target/bench-nexmark
mkdir -p "$work"
sed -E "s/'events.num' = '[0-9]+'/'events.num' = '$events'/; s/'first-event.rate' = '[0-9]+'/'first-event.rate' = '1000000'/" \
    scenarios/sql/nexmark/ddl.sql > "$work/ddl.sql"
cargo real-build >&2
sluice=target/real/release/sluice-real
flink() {
    case "$1" in q0) echo 155.02 ;; q1) echo 157.94 ;; q2) echo 175.21 ;; q5) echo 22.14 ;; q7) echo 12.33 ;; q8) echo 146.14 ;; *) echo - ;; esac
}
printf '%-5s %-10s %10s %14s %22s\n' query mode "job s" "K events/s" "Flink K ev/s/core"
for query in $queries; do
    cp "scenarios/sql/nexmark/$query.sql" "$work/$query.sql"
    scenario="$work/$query.yaml"
    cat > "$scenario" <<YAML
name: bench-nexmark-$query
sql: [ddl.sql, $query.sql]
params: { partitions: 1 }
cluster: { task_managers: 1, slots_per_task_manager: 1 }
parallelism: 1
modes: [streaming, batch]
checkpoints: { interval: 1s, timeout: 600s }
seeds: 1..2
time_limit: 3600s
YAML
    for mode in $modes; do
        results=()
        for _ in $(seq "$runs"); do
            line=$("$sluice" local "$scenario" --mode "$mode" | grep -E "^  $mode ")
            case "$line" in *PASS*) ;; *) echo "sluice-real $query $mode failed: $line" >&2; exit 1 ;; esac
            results+=("$(sed -E 's/.*\(job ([0-9.]+)s\).*/\1/' <<< "$line")")
        done
        seconds=$(printf '%s\n' "${results[@]}" | sort -n | awk -v n="${#results[@]}" 'NR == int((n + 1) / 2)')
        printf '%-5s %-10s %10s %14s %22s\n' "$query" "$mode" "$seconds" \
            "$(awk -v e="$events" -v s="$seconds" 'BEGIN { printf "%.1f", e / s / 1e3 }')" "$(flink "$query")"
    done
done
