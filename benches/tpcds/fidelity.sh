#!/usr/bin/env bash
# The simulator held against real runs, per TPC-DS shape (eight of them) and variant (batch under every exchange
# mode, and streaming), over DuckDB's tables at SF (default 0.1): `sluice-real calibrate`
# measures this machine into profiles/this-machine.yaml, fitting its CPU costs to the
# calibration programs and to at most 3 shapes (q3, q72, q95); `sluice-real compare` then runs
# every shape's variants RUNS times (default 3) for real beside the simulator under that profile
# and judges the held-out shapes apart; benches/tpcds/fidelity.svg draws the report.
#   benches/tpcds/setup.sh && benches/tpcds/fidelity.sh [SF]
#   CALIBRATE=0 benches/tpcds/fidelity.sh   # compare with the committed profile as it is
# Needs no cargo running meanwhile: the real runs share the machine's cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
sf=${1:-0.1}
runs=${RUNS:-3}
work=target/tpcds-sf$sf
[ -d "$work/answers" ] || target/duckdb-venv/bin/python benches/tpcds/make_tables.py --sf "$sf" --out "$work" >/dev/null
cargo build --release -q -p sluice-sim
cargo real-build -q
shapes=$work/shapes
mkdir -p "$shapes"
for q in q3 q42 q55 q7 q19 q64 q72; do
  sed "s|../../catalog/tests/data/tpcds-sf0.01|$PWD/$work|; s|^name: .*|name: $q-sf$sf|; /^params:/d; s|^seeds: .*|seeds: 1..2|" \
    "scenarios/tpcds/$q-sf001.yaml" > "$shapes/$q.yaml"
done
# q95's answer over DuckDB's small tables is SQL's one row of zeros: its generator at scale 60.
sed "s/^name: .*/name: q95-scale60/; s/^seeds: .*/seeds: 1..2/" scenarios/tpcds/q95.yaml > "$shapes/q95.yaml"
if [ "${CALIBRATE:-1}" = 1 ]; then
  ./target/real/release/sluice-real calibrate --out profiles/this-machine.yaml \
    --shape "$shapes/q3.yaml" --shape "$shapes/q72.yaml" --shape "$shapes/q95.yaml"
fi
./target/real/release/sluice-real compare --profile profiles/this-machine.yaml --runs "$runs" \
  --svg benches/tpcds/fidelity.svg \
  "$shapes"/q3.yaml "$shapes"/q42.yaml "$shapes"/q55.yaml "$shapes"/q7.yaml "$shapes"/q19.yaml \
  "$shapes"/q64.yaml "$shapes"/q72.yaml "$shapes"/q95.yaml | tee "$work/fidelity.txt"
