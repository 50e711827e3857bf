#!/usr/bin/env bash
# Creates target/duckdb-venv (python3 venv) with the pinned DuckDB and its TPC-DS extension
# (the extension comes from the wheel: DuckDB never downloads it). Idempotent.
#   benches/tpcds/setup.sh
#   target/duckdb-venv/bin/python benches/tpcds/make_tables.py --sf 0.01 --out /tmp/tpcds
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/duckdb-venv
pins=(duckdb==1.4.4 duckdb-ext-tpcds==1.4.4.20260205)
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -m pip freeze 2>/dev/null | grep -qxF -e "${pins[0]}" ||
   ! "$venv/bin/python" -m pip freeze 2>/dev/null | grep -qxF -e "${pins[1]}"; then
  "$venv/bin/python" -m pip install --quiet "${pins[@]}"
fi
"$venv/bin/python" -c "import sys; sys.path.insert(0, 'benches/tpcds'); import tpcds_duck; tpcds_duck.connect()"
echo "$venv ready: ${pins[*]}"
