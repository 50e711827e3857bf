//! `tpcds-q3`: a manufacturer's November sales per year and brand (TPC-DS query 3).
//!
//! ```text
//!  store_sales ─ project ─FORWARD─ ⋈ item ─FORWARD─ ⋈ date ─ local sum ─HASH─ sum ─ sink
//!  item (i_manufact_id = manufact) ─ project ─BROADCAST─┘         │
//!  date_dim (d_moy = month) ─ project ─BROADCAST──────────────────┘
//! ```
//!
//! The canonical broadcast cascade: a fact scan probes two small broadcast dimensions over
//! pointwise edges, then a two-phase aggregation. SF 1: 2,880,404 sales → 6,656 of the
//! manufacturer's items → 971 in November → 89 groups.

use sluice_engine::api::{ExecutionMode, JobDefinition, JobParams, JoinType, ParamSpec, StreamEnv};

use super::tables::{DATE_DIM, DateDim, ITEM, Item, STORE_SALES, StoreSale};
use super::{Groups, SCALE, commit, generate, read, sale_prices, scan, show};
use crate::{ExpectedOutput, ExternalInput, SimJob};

pub(crate) const Q3: SimJob = SimJob {
    definition: JobDefinition {
        name: "tpcds-q3",
        description: "TPC-DS q3: a manufacturer's sales in a month, per year and brand",
        params: &[
            SCALE,
            ParamSpec::int("manufact", 128, 1, 1_000, "the manufacturer (i_manufact_id)"),
            ParamSpec::int("month", 11, 1, 12, "the month of the year (d_moy)"),
        ],
        inputs: &[STORE_SALES, ITEM, DATE_DIM],
        build,
    },
    generate_input: Some(generate_input),
    reference: Some(reference),
    reference_summary: None,
    late: None,
    prefix_reference: None,
};

/// `(date, item, ext_sales_price)`
type Sale = (i64, i64, Option<i64>);

fn build(env: &StreamEnv, params: &JobParams) {
    let (manufact, month) = (params.get("manufact") as i64, params.get("month") as i64);
    let items = scan::<Item>(env, &ITEM)
        .filter(move |item: &Item| item.i_manufact_id == Some(manufact))
        .map(|item: Item| (item.i_item_sk, item.i_brand_id, item.i_brand))
        .name("Project item");
    let dates = scan::<DateDim>(env, &DATE_DIM)
        .filter(move |date: &DateDim| date.d_moy == month)
        .map(|date: DateDim| (date.d_date_sk, date.d_year))
        .name("Project date_dim");
    let sales = sale_prices(env);
    let with_item = sales.broadcast_join(
        &items,
        JoinType::Inner,
        |sale: &Sale| sale.1,
        |item: &(i64, Option<i64>, String)| item.0,
        |sale: &Sale, item: Option<&(i64, Option<i64>, String)>| {
            let (_, brand_id, brand) = item.expect("an inner join meets a build element");
            (sale.0, format!("{}|{brand}", show(*brand_id)), sale.2.unwrap_or(0))
        },
    );
    let grouped = with_item.broadcast_join(
        &dates,
        JoinType::Inner,
        |sale: &(i64, String, i64)| sale.0,
        |date: &(i64, i64)| date.0,
        |sale: &(i64, String, i64), date: Option<&(i64, i64)>| {
            let year = date.expect("an inner join meets a build element").1;
            (format!("{year}|{}", sale.1), sale.2)
        },
    );
    commit(grouped.key_by(|group: &(String, i64)| group.0.clone()).sum(), i64::to_string);
}

fn generate_input(params: &JobParams, prng: &mut sluice_engine::prng::Prng) -> ExternalInput {
    let wanted = generate::Wanted { manufact: Some(params.get("manufact") as i64), ..generate::Wanted::default() };
    generate::tables(params.get("scale"), &wanted, &[&STORE_SALES, &ITEM, &DATE_DIM], prng)
}

fn reference(params: &JobParams, input: &ExternalInput, mode: ExecutionMode) -> ExpectedOutput {
    let (manufact, month) = (params.get("manufact") as i64, params.get("month") as i64);
    let items = read::<Item>(input, &ITEM).into_iter().filter(|item| item.i_manufact_id == Some(manufact));
    let items: std::collections::BTreeMap<i64, Item> = items.map(|item| (item.i_item_sk, item)).collect();
    let dates = read::<DateDim>(input, &DATE_DIM).into_iter().filter(|date| date.d_moy == month);
    let years: std::collections::BTreeMap<i64, i64> = dates.map(|date| (date.d_date_sk, date.d_year)).collect();
    let mut groups = Groups::<i64>::new();
    for sale in read::<StoreSale>(input, &STORE_SALES) {
        let (Some(item), Some(year)) = (items.get(&sale.ss_item_sk), years.get(&sale.ss_sold_date_sk)) else {
            continue;
        };
        let key = format!("{year}|{}|{}", show(item.i_brand_id), item.i_brand);
        groups.add(key, |sum| *sum += sale.ss_ext_sales_price.unwrap_or(0));
    }
    groups.expected(i64::to_string, mode)
}
