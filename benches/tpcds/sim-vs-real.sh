#!/usr/bin/env bash
# The simulator's job time against a real run's, per TPC-DS shape, mode and exchange mode, over
# DuckDB's tables at SF (default 0.1): `sluice run` once (deterministic) beside the median of
# RUNS (default 3) `sluice-real local` runs on this machine. Job time is the trace's, from the
# acknowledged submission to the job's end (`harness::compare::job_time`), on both sides.
#   benches/tpcds/setup.sh && benches/tpcds/sim-vs-real.sh [SF]
# Needs no cargo running meanwhile: the real runs share the machine's cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
sf=${1:-0.1}
runs=${RUNS:-3}
work=target/tpcds-sf$sf
[ -d "$work/answers" ] || target/duckdb-venv/bin/python benches/tpcds/make_tables.py --sf "$sf" --out "$work" >/dev/null
cargo build --release -q -p sluice-sim
cargo real-build -q
mkdir -p "$work/scenarios"
results="$work/sim-vs-real.txt"
: > "$results"
for q in q3 q42 q55 q7 q19 q72; do
  for exchange in all-edges-blocking pointwise-edges-pipelined; do
    scenario="$work/scenarios/$q-$exchange.yaml"
    sed "s|../../catalog/tests/data/tpcds-sf0.01|$PWD/$work|; s|^name: .*|name: tpcds-$q-$exchange|; /^params:/d; s|^seeds: .*|seeds: 1..2\nexchange_mode: $exchange|" \
      "scenarios/tpcds/$q-sf001.yaml" > "$scenario"
    job_times() { grep -E ' (PASS|FAIL) ' | sed -E 's/^ +(streaming|batch) +(PASS|FAIL) .*\(job ([0-9.]+)s\).*/\1 \2 \3/'; }
    ./target/release/sluice run "$scenario" | job_times | sed "s/^/$q $exchange sim /" >> "$results"
    for _ in $(seq "$runs"); do
      ./target/real/release/sluice-real local "$scenario" | job_times | sed "s/^/$q $exchange real /" >> "$results"
    done
  done
done
python3 - "$results" <<'PY'
import statistics, sys
times = {}
for line in open(sys.argv[1]):
    q, exchange, side, mode, verdict, seconds = line.split()
    assert verdict == "PASS", line
    times.setdefault((q, exchange, side, mode), []).append(float(seconds))
median = {key: statistics.median(values) for key, values in times.items()}
print("| shape | exchange | mode | sim | real (median) | error |")
print("|---|---|---|---|---|---|")
errors = []
for (q, exchange, side, mode), sim in sorted(median.items()):
    if side != "sim":
        continue
    real = median[(q, exchange, "real", mode)]
    errors.append(abs(sim - real) / real)
    print(f"| {q} | {exchange} | {mode} | {sim:.3f} s | {real:.3f} s | {100 * (sim - real) / real:+.0f} % |")
print(f"\nmedian |error| {100 * statistics.median(errors):.0f} %, largest {100 * max(errors):.0f} %")
PY
