"""Write the projected TPC-DS tables as CSV, and the expected answers of the rewritten queries.

    target/duckdb-venv/bin/python benches/tpcds/make_tables.py --sf 0.01 --out DIR [--cut] \
        [--param q3.manufact=128 ...]

DIR/<table>/part-00000: CSV with a header line, sorted by its columns. Decimals are integer
cents; NULL keys (*_sk, order/ticket numbers) print as -1 (never join); NULL measures and NULL
text print as the empty field. DIR/answers/qN.tsv: `key<TAB>value` lines of
queries/qNN.sql, sorted by key; DIR/answers/params.txt: the substitution values used.
--cut keeps only the date_dim, customer, customer_demographics, household_demographics and
customer_address rows some projected table references (the answers are checked unchanged).
"""
import argparse
import csv
import os
import re
import string
import sys

import tpcds_duck

HERE = os.path.dirname(os.path.abspath(__file__))
QUERIES = ["q3", "q7", "q19", "q42", "q55", "q64", "q72", "q95"]

TABLES = {
    "date_dim": "d_date_sk, d_year, d_moy, d_week_seq",
    "item": "i_item_sk, i_item_id, i_item_desc, i_brand_id, i_brand, i_manufact_id, i_manufact, "
            "i_manager_id, i_category_id, i_category, i_current_price, i_color, i_product_name",
    "store_sales": "ss_sold_date_sk, ss_item_sk, ss_customer_sk, ss_cdemo_sk, ss_hdemo_sk, "
                   "ss_addr_sk, ss_store_sk, ss_promo_sk, ss_ticket_number, ss_quantity, "
                   "ss_wholesale_cost, ss_list_price, ss_sales_price, ss_coupon_amt, "
                   "ss_ext_sales_price",
    "customer_demographics": "cd_demo_sk, cd_gender, cd_marital_status, cd_education_status",
    "household_demographics": "hd_demo_sk, hd_income_band_sk, hd_buy_potential",
    "promotion": "p_promo_sk, p_channel_email, p_channel_event",
    "customer": "c_customer_sk, c_current_cdemo_sk, c_current_hdemo_sk, c_current_addr_sk, "
                "c_first_shipto_date_sk, c_first_sales_date_sk",
    "customer_address": "ca_address_sk, ca_street_number, ca_street_name, ca_city, ca_zip, "
                        "ca_state",
    "store": "s_store_sk, s_store_name, s_zip",
    "catalog_sales": "cs_sold_date_sk, cs_ship_date_sk, cs_bill_cdemo_sk, cs_bill_hdemo_sk, "
                     "cs_item_sk, cs_promo_sk, cs_order_number, cs_quantity, cs_ext_list_price",
    "catalog_returns": "cr_item_sk, cr_order_number, cr_refunded_cash, cr_reversed_charge, "
                       "cr_store_credit",
    "inventory": "inv_date_sk, inv_item_sk, inv_warehouse_sk, inv_quantity_on_hand",
    "warehouse": "w_warehouse_sk, w_warehouse_name",
    "web_sales": "ws_ship_date_sk, ws_ship_addr_sk, ws_web_site_sk, ws_warehouse_sk, "
                 "ws_order_number, ws_ext_ship_cost, ws_net_profit",
    "web_returns": "wr_order_number",
    "web_site": "web_site_sk, web_company_name",
    "store_returns": "sr_item_sk, sr_ticket_number",
    "income_band": "ib_income_band_sk",
}
TABLES = {t: [c.strip() for c in cols.split(",")] for t, cols in TABLES.items()}

# --cut: dimension -> (its key, the columns referencing it). customer goes first: the
# others keep what the remaining customers reference too.
CUT = [
    ("customer", "c_customer_sk", ["store_sales.ss_customer_sk"]),
    ("customer_demographics", "cd_demo_sk", ["store_sales.ss_cdemo_sk",
     "catalog_sales.cs_bill_cdemo_sk", "customer.c_current_cdemo_sk"]),
    ("household_demographics", "hd_demo_sk", ["store_sales.ss_hdemo_sk",
     "catalog_sales.cs_bill_hdemo_sk", "customer.c_current_hdemo_sk"]),
    ("customer_address", "ca_address_sk", ["store_sales.ss_addr_sk",
     "web_sales.ws_ship_addr_sk", "customer.c_current_addr_sk"]),
    ("date_dim", "d_date_sk", [f"{t}.{c}" for t, cols in TABLES.items()
                               for c in cols if c.endswith("_date_sk") and t != "date_dim"]),
]


def query_file(q):
    return os.path.join(HERE, "queries", f"q{int(q[1:]):02d}.sql")


def default_params(q):
    """The `-- $name = value` lines at the top of a query file."""
    with open(query_file(q)) as f:
        return dict(re.findall(r"^-- \$(\w+) = (\S+)", f.read(), re.M))


def query_sql(q, params):
    with open(query_file(q)) as f:
        return string.Template(f.read()).substitute(params)


def answers(con, params):
    out = {}
    for q in QUERIES:
        rows = con.execute(query_sql(q, params[q])).fetchall()
        keys = [k for k, _ in rows]
        assert len(set(keys)) == len(keys), f"{q}: two groups print the same key"
        for k, v in rows:
            assert not re.search(r"[\t\n\r]", k + v), f"{q}: tab or newline in {k!r} {v!r}"
        out[q] = sorted(rows)
    return out


def encoded_select(con, table):
    """SELECT of the projected columns, encoded as the CSV wants them."""
    types = dict((r[0], r[1]) for r in con.execute(f"DESCRIBE {table}").fetchall())
    exprs = []
    for c in TABLES[table]:
        t = types[c]
        if t.startswith("DECIMAL"):
            exprs.append(f"CAST(round({c} * 100) AS BIGINT) AS {c}")
        elif t == "VARCHAR":
            exprs.append(c)
            bad = con.execute(f"SELECT count(*) FROM {table} WHERE regexp_matches({c}, "
                              r"'[|\t\n\r]')").fetchone()[0]
            assert bad == 0, f"{table}.{c}: {bad} values hold '|', a tab or a newline"
        elif re.search(r"_sk$|_order_number$|_ticket_number$", c):
            exprs.append(f"coalesce({c}, -1) AS {c}")
        else:
            assert "INT" in t, (table, c, t)
            exprs.append(c)
    order = ", ".join(f"{i + 1} NULLS FIRST" for i in range(len(exprs)))
    return f"SELECT {', '.join(exprs)} FROM {table} ORDER BY {order}"


def write_table(con, table, out):
    os.makedirs(os.path.join(out, table), exist_ok=True)
    cur = con.execute(encoded_select(con, table))
    n = 0
    with open(os.path.join(out, table, "part-00000"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(TABLES[table])
        while rows := cur.fetchmany(100_000):
            w.writerows(rows)
            n += len(rows)
    return n


def cut(con):
    for table, key, refs in CUT:
        union = " UNION ".join(f"SELECT {c.split('.')[1]} FROM {c.split('.')[0]}" for c in refs)
        con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM {table} "
                    f"WHERE {key} IN ({union})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sf", type=float, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cut", action="store_true")
    ap.add_argument("--param", action="append", default=[], metavar="qN.NAME=VALUE")
    args = ap.parse_args()

    params = {q: default_params(q) for q in QUERIES}
    for p in args.param:
        name, value = p.split("=", 1)
        q, name = name.split(".", 1)
        q = f"q{int(q.lstrip('qQ'))}"
        assert name in params[q], f"{q} has no parameter {name}: {sorted(params[q])}"
        params[q][name] = value

    con = tpcds_duck.generate(args.sf)
    expected = answers(con, params)
    if args.cut:
        cut(con)
        assert answers(con, params) == expected, "--cut changed an answer"
        print("answers identical with and without --cut")

    for table in TABLES:
        print(f"{table:24} {write_table(con, table, args.out):>10} rows")
    os.makedirs(os.path.join(args.out, "answers"), exist_ok=True)
    with open(os.path.join(args.out, "answers", "params.txt"), "w") as f:
        f.write(f"# make_tables.py {' '.join(sys.argv[1:])}\n")
        for q in QUERIES:
            for name, value in params[q].items():
                f.write(f"{q}.{name}={value}\n")
    for q, rows in expected.items():
        with open(os.path.join(args.out, "answers", f"{q}.tsv"), "w") as f:
            f.writelines(f"{k}\t{v}\n" for k, v in rows)
        print(f"answer {q:4} {len(rows):>6} rows")


if __name__ == "__main__":
    main()
