//! `tpcds-q95`: orders shipped from more than one warehouse and returned, shipped to a state
//! from a company's web sites in 60 days: how many, their shipping cost and net profit (TPC-DS
//! query 95).
//!
//! ```text
//!  web_sales ─HASH(order)─ ⋈ self (warehouse ≠) ─┬─HASH─ distinct ──────────────────┐
//!  web_sales ─HASH(order)─┘          (ws_wh)     └─HASH─ ⋈ web_returns ─ distinct ──┐│
//!  web_returns ─HASH(order)───────────────────────────────┘                          ││
//!  web_sales ─FWD─ ⋈ date ─FWD─ ⋈ address ─FWD─ ⋈ site ─HASH─ ⋈ (semi) ─HASH─ ⋈ (semi) ─HASH─ first of order ─HASH─ sum ─ sink
//! ```
//!
//! The shuffle-bound shape: the self-join multiplies the rows it reads (×9.2 at SF 1), and the
//! join with the returns more (8,701,162 rows at SF 1), all over ALL_TO_ALL edges; the
//! broadcast side is small (719,384 sales → 30,466 in the dates → 1,054 → 135 → 95 orders). A
//! semi-join is a join with the distinct keys of its right side; the distinct count of orders is
//! split as Flink's planner splits a distinct aggregate: a per-order step marks an order's first
//! row, and the global sum counts those.

use std::collections::{BTreeMap, BTreeSet};

use sluice_engine::api::{DataStream, ExecutionMode, JobDefinition, JobParams, JoinType, ParamSpec, StreamEnv};
use sluice_engine::prng::Prng;

use super::tables::{
    CUSTOMER_ADDRESS, CustomerAddress, DATE_DIM, DateDim, WEB_RETURNS, WEB_SALES, WEB_SITE, WebReturn, WebSale, WebSite,
};
use super::{Groups, MarkFirst, SCALE, commit, generate, read, scan};
use crate::{ExpectedOutput, ExternalInput, SimJob};

pub(crate) const Q95: SimJob = SimJob {
    definition: JobDefinition {
        name: "tpcds-q95",
        description: "TPC-DS q95: returned orders shipped from several warehouses, to a state, from a company's sites",
        params: &[
            SCALE,
            ParamSpec::int("start", 2_451_211, 2_450_815, 2_452_640, "the first ship date (d_date_sk; 1999-02-01)"),
            ParamSpec::text("state", "IL", "the state shipped to (ca_state)"),
            ParamSpec::text("company", "pri", "the web sites' company (web_company_name)"),
        ],
        inputs: &[WEB_SALES, WEB_RETURNS, DATE_DIM, CUSTOMER_ADDRESS, WEB_SITE],
        build,
    },
    generate_input: Some(generate_input),
    reference: Some(reference),
    reference_summary: None,
    late: None,
    prefix_reference: None,
};

/// Days after the first ship date that still count.
const DAYS: i64 = 60;

/// `(order, shipping cost, net profit)`
type Shipped = (i64, i64, i64);

/// The orders some of whose lines ship from different warehouses (a NULL warehouse differs
/// from none): one per such pair of lines (the CTE `ws_wh`).
fn ws_wh(env: &StreamEnv) -> DataStream<i64> {
    let lines = || {
        scan::<WebSale>(env, &WEB_SALES)
            .filter(|line: &WebSale| line.ws_warehouse_sk != -1)
            .map(|line: WebSale| (line.ws_order_number, line.ws_warehouse_sk))
            .name("Project web_sales")
            .key_by(|line: &(i64, i64)| line.0)
    };
    lines()
        .join(&lines(), |a: &(i64, i64), b: &(i64, i64)| (a.0, a.1 != b.1))
        .filter(|pair: &(i64, bool)| pair.1)
        .map(|pair: (i64, bool)| pair.0)
        .name("Warehouses differ")
}

/// Each order of `orders` once.
fn distinct(orders: DataStream<i64>) -> DataStream<i64> {
    let marked = orders.key_by(|order: &i64| *order).process(MarkFirst);
    marked.filter(|marked: &(bool, i64)| marked.0).map(|marked: (bool, i64)| marked.1).name("Distinct")
}

fn build(env: &StreamEnv, params: &JobParams) {
    let start = params.get("start") as i64;
    let (state, company) = (params.text("state").to_string(), params.text("company").to_string());
    let pairs = ws_wh(env);
    let shipped_from_several = distinct(pairs.clone());
    let returns =
        scan::<WebReturn>(env, &WEB_RETURNS).map(|r: WebReturn| r.wr_order_number).name("Project web_returns");
    let returned = distinct(returns.key_by(|order: &i64| *order).join(&pairs.key_by(|order: &i64| *order), |r, _| *r));
    let dates =
        scan::<DateDim>(env, &DATE_DIM).filter(move |d: &DateDim| (start..=start + DAYS).contains(&d.d_date_sk));
    let dates = dates.map(|date: DateDim| date.d_date_sk).name("Project date_dim");
    let addresses =
        scan::<CustomerAddress>(env, &CUSTOMER_ADDRESS).filter(move |a: &CustomerAddress| a.ca_state == state);
    let addresses = addresses.map(|a: CustomerAddress| a.ca_address_sk).name("Project customer_address");
    let sites = scan::<WebSite>(env, &WEB_SITE).filter(move |site: &WebSite| site.web_company_name == company);
    let sites = sites.map(|site: WebSite| site.web_site_sk).name("Project web_site");
    type Line = (i64, i64, i64, Shipped);
    let lines = scan::<WebSale>(env, &WEB_SALES)
        .map(|w: WebSale| {
            let shipped = (w.ws_order_number, w.ws_ext_ship_cost.unwrap_or(0), w.ws_net_profit.unwrap_or(0));
            (w.ws_ship_date_sk, w.ws_ship_addr_sk, w.ws_web_site_sk, shipped)
        })
        .name("Project web_sales")
        .broadcast_join(&dates, JoinType::Inner, |l: &Line| l.0, |d: &i64| *d, |l: &Line, _| (l.1, l.2, 0, l.3))
        .broadcast_join(&addresses, JoinType::Inner, |l: &Line| l.0, |a: &i64| *a, |l: &Line, _| (l.1, 0, 0, l.3))
        .broadcast_join(&sites, JoinType::Inner, |l: &Line| l.0, |s: &i64| *s, |l: &Line, _| l.3);
    let semi = |lines: DataStream<Shipped>, orders: &DataStream<i64>| {
        lines.key_by(|l: &Shipped| l.0).join(&orders.key_by(|order: &i64| *order), |l: &Shipped, _| *l)
    };
    let kept = semi(semi(lines, &shipped_from_several), &returned);
    let counted = kept
        .key_by(|l: &Shipped| l.0)
        .process(MarkFirst)
        .map(|(first, l): (bool, Shipped)| ("all".to_string(), (i64::from(first), l.1, l.2)))
        .name("Count orders");
    let totals = counted.key_by(|all: &(String, (i64, i64, i64))| all.0.clone());
    commit(totals.reduce(|a, b| (a.0, (a.1.0 + b.1.0, a.1.1 + b.1.1, a.1.2 + b.1.2))), shown);
}

fn shown(totals: &(i64, i64, i64)) -> String {
    format!("{}|{}|{}", totals.0, totals.1, totals.2)
}

fn generate_input(params: &JobParams, prng: &mut Prng) -> ExternalInput {
    let wanted = generate::Wanted {
        state: Some(params.text("state").to_string()),
        company: Some(params.text("company").to_string()),
        ..generate::Wanted::default()
    };
    let tables = [&WEB_SALES, &WEB_RETURNS, &DATE_DIM, &CUSTOMER_ADDRESS, &WEB_SITE];
    generate::tables(params.get("scale"), &wanted, &tables, prng)
}

fn reference(params: &JobParams, input: &ExternalInput, mode: ExecutionMode) -> ExpectedOutput {
    let start = params.get("start") as i64;
    let (state, company) = (params.text("state"), params.text("company"));
    let lines = read::<WebSale>(input, &WEB_SALES);
    let mut warehouses: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
    for line in lines.iter().filter(|line| line.ws_warehouse_sk != -1) {
        warehouses.entry(line.ws_order_number).or_default().insert(line.ws_warehouse_sk);
    }
    let several: BTreeSet<i64> =
        warehouses.into_iter().filter(|(_, set)| set.len() > 1).map(|(order, _)| order).collect();
    let returned: BTreeSet<i64> =
        read::<WebReturn>(input, &WEB_RETURNS).into_iter().map(|r| r.wr_order_number).collect();
    let dates: BTreeSet<i64> = read::<DateDim>(input, &DATE_DIM).into_iter().map(|d| d.d_date_sk).collect();
    let addresses = read::<CustomerAddress>(input, &CUSTOMER_ADDRESS).into_iter().filter(|a| a.ca_state == state);
    let addresses: BTreeSet<i64> = addresses.map(|a| a.ca_address_sk).collect();
    let sites = read::<WebSite>(input, &WEB_SITE).into_iter().filter(|site| site.web_company_name == company);
    let sites: BTreeSet<i64> = sites.map(|site| site.web_site_sk).collect();
    let mut counted = BTreeSet::new();
    let mut groups = Groups::<(i64, i64, i64)>::new();
    for line in &lines {
        let shipped = (start..=start + DAYS).contains(&line.ws_ship_date_sk) && dates.contains(&line.ws_ship_date_sk);
        let kept = shipped && addresses.contains(&line.ws_ship_addr_sk) && sites.contains(&line.ws_web_site_sk);
        let order = line.ws_order_number;
        if kept && several.contains(&order) && returned.contains(&order) {
            let first = i64::from(counted.insert(order));
            let (cost, profit) = (line.ws_ext_ship_cost.unwrap_or(0), line.ws_net_profit.unwrap_or(0));
            groups.add("all".to_string(), |t| *t = (t.0 + first, t.1 + cost, t.2 + profit));
        }
    }
    groups.expected(shown, mode)
}
