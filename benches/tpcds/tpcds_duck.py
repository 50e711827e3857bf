"""Shared DuckDB helper for the TPC-DS benches: an in-memory DuckDB with the tpcds
extension loaded from the duckdb-ext-tpcds wheel (no network), and dsdgen at a scale factor.

Use from the scripts beside it (run them with target/duckdb-venv/bin/python, made by setup.sh):
    import tpcds_duck; con = tpcds_duck.generate(0.01)
"""
import glob
import os

import duckdb


def connect(threads=None):
    import duckdb_ext
    pattern = os.path.join(list(duckdb_ext.__path__)[0], "extensions", "*", "*",
                           "tpcds.duckdb_extension")
    found = glob.glob(pattern)
    if not found:
        raise SystemExit(f"no tpcds extension under {pattern}; run benches/tpcds/setup.sh")
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    con.execute(f"LOAD '{found[0]}'")
    return con


def generate(sf, threads=None):
    """A connection holding the TPC-DS tables at scale factor `sf`."""
    con = connect(threads)
    con.execute(f"CALL dsdgen(sf={float(sf)})")
    return con
