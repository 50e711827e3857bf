"""SF 1 statistics for the engine's TPC-DS jobs and its synthetic generator: row counts of the
projected tables (at SF 0.01, 0.1 and 1), row counts on each edge of the hand-written plans of
q3, q7, q19, q42, q55, q72 and q95 (default parameters), and the marginals the generator needs.

    target/duckdb-venv/bin/python benches/tpcds/measure_edges.py [--sf 1] [--json PATH]

Prints a markdown report; writes benches/tpcds/sf<SF>.json. About a minute at SF 1 (dsdgen).
"""
import argparse
import json
import os

import make_tables as mt
import tpcds_duck

FACTS = ["store_sales", "catalog_sales", "catalog_returns", "inventory", "web_sales",
         "web_returns", "store_returns"]

# Each plan: successive FROM/WHERE steps; edge i counts the rows of steps[0..i] joined.
SS = "store_sales"
PLANS = {
    "q3": [("store_sales", SS, "TRUE"),
           ("⋈ item(i_manufact_id=128)", "item", "ss_item_sk = i_item_sk AND i_manufact_id = 128"),
           ("⋈ date(d_moy=11)", "date_dim", "ss_sold_date_sk = d_date_sk AND d_moy = 11")],
    "q42": [("store_sales", SS, "TRUE"),
            ("⋈ date(2000 Nov)", "date_dim",
             "ss_sold_date_sk = d_date_sk AND d_year = 2000 AND d_moy = 11"),
            ("⋈ item(i_manager_id=1)", "item", "ss_item_sk = i_item_sk AND i_manager_id = 1")],
    "q55": [("store_sales", SS, "TRUE"),
            ("⋈ date(1999 Nov)", "date_dim",
             "ss_sold_date_sk = d_date_sk AND d_year = 1999 AND d_moy = 11"),
            ("⋈ item(i_manager_id=28)", "item", "ss_item_sk = i_item_sk AND i_manager_id = 28")],
    "q7": [("store_sales", SS, "TRUE"),
           ("⋈ date(2000)", "date_dim", "ss_sold_date_sk = d_date_sk AND d_year = 2000"),
           ("⋈ cdemo(M,S,College)", "customer_demographics",
            "ss_cdemo_sk = cd_demo_sk AND cd_gender = 'M' AND cd_marital_status = 'S' "
            "AND cd_education_status = 'College'"),
           ("⋈ promo(email N or event N)", "promotion",
            "ss_promo_sk = p_promo_sk AND (p_channel_email = 'N' OR p_channel_event = 'N')"),
           ("⋈ item", "item", "ss_item_sk = i_item_sk")],
    "q19": [("store_sales", SS, "TRUE"),
            ("⋈ date(1998 Nov)", "date_dim",
             "ss_sold_date_sk = d_date_sk AND d_year = 1998 AND d_moy = 11"),
            ("⋈ item(i_manager_id=8)", "item", "ss_item_sk = i_item_sk AND i_manager_id = 8"),
            ("⋈ store", "store", "ss_store_sk = s_store_sk"),
            ("⋈ customer", "customer", "ss_customer_sk = c_customer_sk"),
            ("⋈ address(zip5 ≠ store zip5)", "customer_address",
             "c_current_addr_sk = ca_address_sk AND substring(ca_zip, 1, 5) <> substring(s_zip, 1, 5)")],
    "q72": [("catalog_sales", "catalog_sales", "TRUE"),
            ("⋈ d1(1999)", "date_dim d1", "cs_sold_date_sk = d1.d_date_sk AND d1.d_year = 1999"),
            ("⋈ hd('>10000')", "household_demographics",
             "cs_bill_hdemo_sk = hd_demo_sk AND hd_buy_potential = '>10000'"),
            ("⋈ cd('D')", "customer_demographics",
             "cs_bill_cdemo_sk = cd_demo_sk AND cd_marital_status = 'D'"),
            ("⋈ d3 (d3 > d1 + 5)", "date_dim d3",
             "cs_ship_date_sk = d3.d_date_sk AND d3.d_date > d1.d_date + 5"),
            ("⋈ item", "item", "cs_item_sk = i_item_sk"),
            ("⋈ d2 on week_seq (fan-out)", "date_dim d2", "d2.d_week_seq = d1.d_week_seq"),
            ("⋈ inventory(item, date, qty<)", "inventory",
             "inv_item_sk = cs_item_sk AND inv_date_sk = d2.d_date_sk "
             "AND inv_quantity_on_hand < cs_quantity"),
            ("⋈ warehouse", "warehouse", "inv_warehouse_sk = w_warehouse_sk"),
            ("⟕ promo", "LEFT JOIN promotion", "cs_promo_sk = p_promo_sk")],
}
WS_WH = ("SELECT ws1.ws_order_number, ws1.ws_warehouse_sk wh1, ws2.ws_warehouse_sk wh2 "
         "FROM web_sales ws1, web_sales ws2 WHERE ws1.ws_order_number = ws2.ws_order_number "
         "AND ws1.ws_warehouse_sk <> ws2.ws_warehouse_sk")
Q95 = [("web_sales", "TRUE"),
       ("⋈ date(1999-02-01..04-02)", "ws_ship_date_sk IN (SELECT d_date_sk FROM date_dim WHERE "
        "d_date BETWEEN DATE '1999-02-01' AND DATE '1999-04-02')"),
       ("⋈ ca(IL)", "ws_ship_addr_sk IN (SELECT ca_address_sk FROM customer_address "
        "WHERE ca_state = 'IL')"),
       ("⋈ web_site('pri')", "ws_web_site_sk IN (SELECT web_site_sk FROM web_site "
        "WHERE web_company_name = 'pri')"),
       ("semi(ws_wh)", "ws_order_number IN (SELECT ws_order_number FROM ws_wh)"),
       ("semi(wr ⋈ ws_wh)", "ws_order_number IN (SELECT wr_order_number FROM web_returns, ws_wh "
        "WHERE wr_order_number = ws_wh.ws_order_number)")]


def edges(con, one):
    out = {}
    for q, steps in PLANS.items():
        sql, rows = "", []
        for i, (label, table, cond) in enumerate(steps):
            if i == 0:
                sql, where = f"FROM {table}", [cond]
            elif table.startswith("LEFT JOIN"):
                sql = f"FROM (SELECT * {sql} WHERE {' AND '.join(where)}) {table} ON {cond}"
                where = ["TRUE"]
            else:
                sql, where = sql + f", {table}", where + [cond]
            rows.append([label, one(f"SELECT count(*) {sql} WHERE {' AND '.join(where)}")])
        out[q] = rows
    con.execute(f"CREATE TEMP TABLE ws_wh AS {WS_WH}")
    rows = [["ws_wh = ws self-join (order =, warehouse ≠)", one("SELECT count(*) FROM ws_wh")],
            ["web_returns ⋈ ws_wh", one("SELECT count(*) FROM web_returns, ws_wh "
                                        "WHERE wr_order_number = ws_wh.ws_order_number")]]
    where = []
    for label, cond in Q95:
        where.append(cond)
        rows.append([label, one(f"SELECT count(*) FROM web_sales WHERE {' AND '.join(where)}")])
    out["q95"] = rows
    params = {q: mt.default_params(q) for q in mt.QUERIES}
    for q in mt.QUERIES:
        out[q].append(["groups (answer rows)",
                       one(f"SELECT count(*) FROM ({mt.query_sql(q, params[q])})")])
    return out


def function_of(one, table, expr, col):
    """True if `col` is a function of `expr` over every row of `table` (a NULL is a value)."""
    return one(f"SELECT max(n) FROM (SELECT count(DISTINCT coalesce({col}::VARCHAR, '<null>')) n "
               f"FROM {table} GROUP BY {expr})") == 1


def groups_with_two(one, table, key, col):
    """How many non-null `key` values have two or more non-null `col` values."""
    return one(f"SELECT count(*) FROM (SELECT {key} FROM {table} WHERE {key} IS NOT NULL "
               f"GROUP BY {key} HAVING count(DISTINCT {col}) > 1)")


def mapping(con, table, expr, col):
    """{expr value: most frequent non-null col value}."""
    return {str(k): v for k, v in con.execute(
        f"SELECT {expr}, mode({col}) FROM {table} GROUP BY 1 ORDER BY 1").fetchall()}


def hist(con, sql):
    """[[value, fraction]] of the single-column query `sql`."""
    return [[v, round(f, 6)] for v, f in con.execute(
        f"SELECT v, count(*) / sum(count(*)) OVER () FROM ({sql}) t(v) GROUP BY v ORDER BY v")
        .fetchall()]


def marginals(con, one):
    m = {}
    dates = {"store_sales": "ss_sold_date_sk", "catalog_sales": "cs_sold_date_sk",
             "web_sales": "ws_ship_date_sk"}
    m["date_fraction"] = {t: [[y, mo, round(f, 6)] for y, mo, f in con.execute(
        f"SELECT d_year, d_moy, count(*) / sum(count(*)) OVER () FROM {t} "
        f"LEFT JOIN date_dim ON {c} = d_date_sk GROUP BY ALL ORDER BY 1 NULLS FIRST, 2")
        .fetchall()] for t, c in dates.items()}
    m["null_fraction"] = {}
    for t, cols in mt.TABLES.items():
        n = one(f"SELECT count(*) FROM {t}")
        counts = con.execute(f"SELECT {', '.join(f'count({c})' for c in cols)} FROM {t}").fetchone()
        m["null_fraction"][t] = {c: round(1 - k / n, 6) for c, k in zip(cols, counts)}

    item = {"rows": one("SELECT count(*) FROM item"),
            "i_item_sk_unique": one("SELECT count(DISTINCT i_item_sk) = count(*) FROM item"),
            "distinct_i_item_id": one("SELECT count(DISTINCT i_item_id) FROM item")}
    for c in ["i_manufact_id", "i_manager_id", "i_brand_id", "i_category_id"]:
        item[c] = dict(zip(["distinct", "min", "max"], con.execute(
            f"SELECT count(DISTINCT {c}), min({c}), max({c}) FROM item").fetchone()))
    for c, v in [("i_manufact_id", 128), ("i_manager_id", 1), ("i_manager_id", 8),
                 ("i_manager_id", 28)]:
        item[f"fraction {c}={v}"] = one(f"SELECT avg(({c} = {v})::INT) FROM item")
    for name, code in [("i_brand", "i_brand_id"), ("i_category", "i_category_id"),
                       ("i_manufact", "i_manufact_id")]:
        item[f"{code} values with 2+ {name}"] = groups_with_two(one, "item", code, name)
        item[f"{name} values with 2+ {code}"] = groups_with_two(one, "item", name, code)
        item[f"distinct {code}"] = one(f"SELECT count(DISTINCT {code}) FROM item")
        item[f"distinct {name}"] = one(f"SELECT count(DISTINCT {name}) FROM item")
    item["i_category_id -> i_category"] = mapping(con, "item", "i_category_id", "i_category")
    item["rows per i_item_id"] = hist(con, "SELECT count(*) FROM item GROUP BY i_item_id")
    m["item"] = item

    cd = {}
    for col, expr in [("cd_gender", "(cd_demo_sk - 1) % 2"),
                      ("cd_marital_status", "((cd_demo_sk - 1) // 2) % 5"),
                      ("cd_education_status", "((cd_demo_sk - 1) // 10) % 7")]:
        assert function_of(one, "customer_demographics", expr, col), col
        cd[col] = {"formula": expr.replace("//", "div"),
                   "values": mapping(con, "customer_demographics", expr, col)}
    cd["fraction (M,S,College)"] = one(
        "SELECT avg((cd_gender = 'M' AND cd_marital_status = 'S' "
        "AND cd_education_status = 'College')::INT) FROM customer_demographics")
    cd["fraction marital D"] = one(
        "SELECT avg((cd_marital_status = 'D')::INT) FROM customer_demographics")
    m["customer_demographics"] = cd
    hd = {}
    for col, expr in [("hd_income_band_sk", "hd_demo_sk % 20"),
                      ("hd_buy_potential", "(hd_demo_sk // 20) % 6")]:
        ok = function_of(one, "household_demographics", expr, col)
        hd[col] = {"formula": expr.replace("//", "div"), "verified": ok,
                   "values": mapping(con, "household_demographics", expr, col) if ok else None}
    hd["fraction '>10000'"] = one(
        "SELECT avg((hd_buy_potential = '>10000')::INT) FROM household_demographics")
    m["household_demographics"] = hd
    m["promotion: fraction email N or event N"] = one(
        "SELECT avg(coalesce(p_channel_email = 'N' OR p_channel_event = 'N', false)::INT) "
        "FROM promotion")
    m["customer_address: fraction IL"] = one(
        "SELECT avg(coalesce(ca_state = 'IL', false)::INT) FROM customer_address")
    m["web_site: fraction 'pri'"] = one(
        "SELECT avg(coalesce(web_company_name = 'pri', false)::INT) FROM web_site")
    q19 = ("FROM store_sales, date_dim, item, store, customer, customer_address "
           "WHERE ss_sold_date_sk = d_date_sk AND d_year = 1998 AND d_moy = 11 "
           "AND ss_item_sk = i_item_sk AND i_manager_id = 8 AND ss_store_sk = s_store_sk "
           "AND ss_customer_sk = c_customer_sk AND c_current_addr_sk = ca_address_sk")
    m["q19: joined rows before the zip test"] = one(f"SELECT count(*) {q19}")
    m["q19: fraction zip5 differ (NULL zip counts as not differing)"] = one(
        f"SELECT avg(coalesce(substring(ca_zip, 1, 5) <> substring(s_zip, 1, 5), false)::INT) {q19}")
    m["q19: fraction with a NULL zip"] = one(
        f"SELECT avg((ca_zip IS NULL OR s_zip IS NULL)::INT) {q19}")
    m["q19: fraction zip5 differ over all (store, customer address) sale rows"] = one(
        "SELECT avg(coalesce(substring(ca_zip, 1, 5) <> substring(s_zip, 1, 5), false)::INT) "
        "FROM store_sales, store, customer, customer_address WHERE ss_store_sk = s_store_sk "
        "AND ss_customer_sk = c_customer_sk AND c_current_addr_sk = ca_address_sk")

    per_order = "SELECT count(*) FROM web_sales GROUP BY ws_order_number"
    m["q95"] = {
        "web_sales rows per order": hist(con, per_order),
        "distinct warehouses per order (NULL not counted)": hist(
            con, "SELECT count(DISTINCT ws_warehouse_sk) FROM web_sales GROUP BY ws_order_number"),
        "orders": one("SELECT count(DISTINCT ws_order_number) FROM web_sales"),
        "fraction of orders in web_returns": one(
            "SELECT count(DISTINCT wr_order_number) / (SELECT count(DISTINCT ws_order_number) "
            "FROM web_sales) FROM web_returns"),
        "web_returns rows per returned order": hist(
            con, "SELECT count(*) FROM web_returns GROUP BY wr_order_number"),
        "answer if a NULL warehouse were a value (-1)": con.execute(
            mt.query_sql("q95", mt.default_params("q95")).replace(
                "ws1.ws_warehouse_sk <> ws2.ws_warehouse_sk",
                "coalesce(ws1.ws_warehouse_sk, -1) <> coalesce(ws2.ws_warehouse_sk, -1)"))
        .fetchone()[1],
    }
    m["q95"]["answer"] = con.execute(mt.query_sql("q95", mt.default_params("q95"))).fetchone()[1]
    inv_dates = [r[0] for r in con.execute(
        "SELECT DISTINCT inv_date_sk FROM inventory ORDER BY 1").fetchall()]
    m["q72"] = {
        "inventory rows per (item, week)": hist(
            con, "SELECT count(*) FROM inventory, date_dim WHERE inv_date_sk = d_date_sk "
                 "GROUP BY inv_item_sk, d_week_seq"),
        "warehouses": one("SELECT count(*) FROM warehouse"),
        "inventory distinct warehouses": one("SELECT count(DISTINCT inv_warehouse_sk) FROM inventory"),
        "inventory distinct items": one("SELECT count(DISTINCT inv_item_sk) FROM inventory"),
        "inv_date_sk distinct": len(inv_dates),
        "inv_date_sk min/max": [inv_dates[0], inv_dates[-1]],
        "inv_date_sk gaps between consecutive dates": sorted(
            {b - a for a, b in zip(inv_dates, inv_dates[1:])}),
        "inv dates: day of week": [r[0] for r in con.execute(
            "SELECT DISTINCT dayname(d_date) FROM inventory, date_dim "
            "WHERE inv_date_sk = d_date_sk").fetchall()],
        "inventory rows per date": hist(con, "SELECT count(*) FROM inventory GROUP BY inv_date_sk"),
        "inventory rows per (item, date)": hist(
            con, "SELECT count(*) FROM inventory GROUP BY inv_item_sk, inv_date_sk"),
        "item versions (i_item_sk) per (i_item_id, inv date)": hist(
            con, "SELECT count(DISTINCT inv_item_sk) FROM inventory, item "
                 "WHERE inv_item_sk = i_item_sk GROUP BY i_item_id, inv_date_sk"),
        "inv_quantity_on_hand min/max/mean": list(con.execute(
            "SELECT min(inv_quantity_on_hand), max(inv_quantity_on_hand), "
            "round(avg(inv_quantity_on_hand), 3) FROM inventory").fetchone()),
        "cs_quantity min/max/mean": list(con.execute(
            "SELECT min(cs_quantity), max(cs_quantity), round(avg(cs_quantity), 3) "
            "FROM catalog_sales").fetchone()),
        "cs_quantity distinct values": one("SELECT count(DISTINCT cs_quantity) FROM catalog_sales"),
        "(cr_item_sk, cr_order_number) unique": one(
            "SELECT count(*) = count(DISTINCT (cr_item_sk, cr_order_number)) FROM catalog_returns"),
        "date_dim sks consecutive days": one(
            "SELECT bool_and(d_date_sk - (SELECT min(d_date_sk) FROM date_dim) = "
            "d_date - (SELECT min(d_date) FROM date_dim)) FROM date_dim"),
        "d_week_seq: days per week (distribution)": hist(
            con, "SELECT count(*) FROM date_dim GROUP BY d_week_seq"),
    }
    return m


def table_rows(con):
    return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in mt.TABLES}


def report(r):
    print(f"# TPC-DS SF {r['sf']:g}: plan edges and marginals\n")
    print("## Projected tables (rows)\n")
    sfs = list(r["rows"])
    print("| table | " + " | ".join(f"SF {s}" for s in sfs) + " |")
    print("|---|" + "---:|" * len(sfs))
    for t in mt.TABLES:
        print(f"| {t} | " + " | ".join(str(r["rows"][s][t]) for s in sfs) + " |")
    print("\n## Plan edges (rows)\n")
    for q, rows in r["edges"].items():
        print(f"- **{q}**: " + " → ".join(f"{label} **{n}**" for label, n in rows))
    print("\n## Marginals\n")
    m = r["marginals"]
    for t, rows in m["date_fraction"].items():
        print(f"- {t} by date year: " + ", ".join(
            f"{y}: {sum(f for yy, _, f in rows if yy == y):.4f}" for y in sorted(
                {y for y, _, _ in rows}, key=lambda y: (y is not None, y))) +
            f"; Nov of each year: " + ", ".join(f"{y}: {f:.4f}" for y, mo, f in rows if mo == 11))
    for t in mt.TABLES:
        nz = {c: f for c, f in m["null_fraction"][t].items() if f}
        if nz:
            print(f"- NULL fraction, {t}: " + ", ".join(f"{c} {f:.4f}" for c, f in nz.items()))
    for k in ["item", "customer_demographics", "household_demographics", "q95", "q72"]:
        print(f"- {k}: `{json.dumps(m[k])}`")
    for k, v in m.items():
        if not isinstance(v, dict):
            print(f"- {k}: {v}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sf", type=float, default=1)
    ap.add_argument("--json")
    args = ap.parse_args()
    r = {"sf": args.sf, "rows": {}}
    for sf in [0.01, 0.1]:
        if sf < args.sf:
            r["rows"][str(sf)] = table_rows(tpcds_duck.generate(sf))
    con = tpcds_duck.generate(args.sf)

    def one(sql):
        v = con.execute(sql).fetchone()[0]
        return round(float(v), 6) if hasattr(v, "as_integer_ratio") and not isinstance(v, (int, bool)) else v

    r["rows"][f"{args.sf:g}"] = table_rows(con)
    r["edges"] = edges(con, one)
    r["marginals"] = marginals(con, one)
    path = args.json or os.path.join(mt.HERE, f"sf{args.sf:g}.json")
    with open(path, "w") as f:
        json.dump(r, f, indent=1)
        f.write("\n")
    report(r)


if __name__ == "__main__":
    main()
