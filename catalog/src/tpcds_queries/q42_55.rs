//! `tpcds-q42` and `tpcds-q55`: one manager's sales in a month of a year, per category (TPC-DS
//! query 42) or per brand (query 55). One shape:
//!
//! ```text
//!  store_sales ─ project ─FORWARD─ ⋈ date ─FORWARD─ ⋈ item ─ local sum ─HASH─ sum ─ sink
//!  date_dim (d_year, d_moy) ─ project ─BROADCAST─┘           │
//!  item (i_manager_id = manager) ─ project ─BROADCAST────────┘
//! ```
//!
//! SF 1: q42 (November 2000, manager 1) 2,880,404 sales → 88,149 in the month → 1,497 of the
//! manager's items → 10 groups; q55 (November 1999, manager 28) → 85,973 → 1,713 → 104.

use std::collections::BTreeMap;

use sluice_engine::api::{ExecutionMode, JobDefinition, JobParams, JoinType, ParamSpec, StreamEnv};
use sluice_engine::prng::Prng;

use super::tables::{DATE_DIM, DateDim, ITEM, Item, STORE_SALES, StoreSale};
use super::{Groups, SCALE, commit, generate, read, sale_prices, scan, show};
use crate::{ExpectedOutput, ExternalInput, SimJob};

pub(crate) const Q42: SimJob = SimJob {
    definition: JobDefinition {
        name: "tpcds-q42",
        description: "TPC-DS q42: a manager's sales in a month, per year and item category",
        params: &[
            SCALE,
            ParamSpec::int("manager", 1, 1, 100, "the manager (i_manager_id)"),
            ParamSpec::int("year", 2000, 1998, 2002, "the year (d_year)"),
            ParamSpec::int("month", 11, 1, 12, "the month of the year (d_moy)"),
        ],
        inputs: &[STORE_SALES, DATE_DIM, ITEM],
        build: |env, params| build(env, params, Grouping::Category),
    },
    generate_input: Some(generate_input),
    reference: Some(|params, input, mode| reference(params, input, mode, Grouping::Category)),
    reference_summary: None,
    late: None,
    prefix_reference: None,
};

pub(crate) const Q55: SimJob = SimJob {
    definition: JobDefinition {
        name: "tpcds-q55",
        description: "TPC-DS q55: a manager's sales in a month, per brand",
        params: &[
            SCALE,
            ParamSpec::int("manager", 28, 1, 100, "the manager (i_manager_id)"),
            ParamSpec::int("year", 1999, 1998, 2002, "the year (d_year)"),
            ParamSpec::int("month", 11, 1, 12, "the month of the year (d_moy)"),
        ],
        inputs: &[STORE_SALES, DATE_DIM, ITEM],
        build: |env, params| build(env, params, Grouping::Brand),
    },
    generate_input: Some(generate_input),
    reference: Some(|params, input, mode| reference(params, input, mode, Grouping::Brand)),
    reference_summary: None,
    late: None,
    prefix_reference: None,
};

/// What the sales are grouped by.
#[derive(Clone, Copy)]
enum Grouping {
    /// q42: `d_year|i_category_id|i_category`.
    Category,
    /// q55: `i_brand_id|i_brand`.
    Brand,
}

impl Grouping {
    /// The item's part of its sales' group.
    fn item_key(self, item: &Item) -> String {
        match self {
            Grouping::Category => format!("{}|{}", show(item.i_category_id), item.i_category),
            Grouping::Brand => format!("{}|{}", show(item.i_brand_id), item.i_brand),
        }
    }

    /// The group of a sale in `year` of an item whose part is `item_key`.
    fn group(self, year: i64, item_key: &str) -> String {
        match self {
            Grouping::Category => format!("{year}|{item_key}"),
            Grouping::Brand => item_key.to_string(),
        }
    }
}

/// `(item, ext_sales_price)` of a sale, after the date's join: `(year, item, price)`.
type Sale = (i64, i64, Option<i64>);

fn build(env: &StreamEnv, params: &JobParams, grouping: Grouping) {
    let (manager, year, month) = (params.get("manager") as i64, params.get("year") as i64, params.get("month") as i64);
    let dates = scan::<DateDim>(env, &DATE_DIM)
        .filter(move |date: &DateDim| date.d_year == year && date.d_moy == month)
        .map(|date: DateDim| (date.d_date_sk, date.d_year))
        .name("Project date_dim");
    let items = scan::<Item>(env, &ITEM)
        .filter(move |item: &Item| item.i_manager_id == Some(manager))
        .map(move |item: Item| (item.i_item_sk, grouping.item_key(&item)))
        .name("Project item");
    let sales = sale_prices(env);
    let in_month = sales.broadcast_join(
        &dates,
        JoinType::Inner,
        |sale: &Sale| sale.0,
        |date: &(i64, i64)| date.0,
        |sale: &Sale, date: Option<&(i64, i64)>| (date.expect("inner").1, sale.1, sale.2),
    );
    let grouped = in_month.broadcast_join(
        &items,
        JoinType::Inner,
        |sale: &Sale| sale.1,
        |item: &(i64, String)| item.0,
        move |sale: &Sale, item: Option<&(i64, String)>| {
            (grouping.group(sale.0, &item.expect("inner").1), sale.2.unwrap_or(0))
        },
    );
    commit(grouped.key_by(|group: &(String, i64)| group.0.clone()).sum(), i64::to_string);
}

fn generate_input(params: &JobParams, prng: &mut Prng) -> ExternalInput {
    let wanted = generate::Wanted { managers: vec![params.get("manager") as i64], ..generate::Wanted::default() };
    generate::tables(params.get("scale"), &wanted, &[&STORE_SALES, &DATE_DIM, &ITEM], prng)
}

fn reference(params: &JobParams, input: &ExternalInput, mode: ExecutionMode, grouping: Grouping) -> ExpectedOutput {
    let (manager, year, month) = (params.get("manager") as i64, params.get("year") as i64, params.get("month") as i64);
    let dates = read::<DateDim>(input, &DATE_DIM).into_iter().filter(|date| date.d_year == year && date.d_moy == month);
    let years: BTreeMap<i64, i64> = dates.map(|date| (date.d_date_sk, date.d_year)).collect();
    let items = read::<Item>(input, &ITEM).into_iter().filter(|item| item.i_manager_id == Some(manager));
    let items: BTreeMap<i64, Item> = items.map(|item| (item.i_item_sk, item)).collect();
    let mut groups = Groups::<i64>::new();
    for sale in read::<StoreSale>(input, &STORE_SALES) {
        let (Some(year), Some(item)) = (years.get(&sale.ss_sold_date_sk), items.get(&sale.ss_item_sk)) else {
            continue;
        };
        groups.add(grouping.group(*year, &grouping.item_key(item)), |sum| *sum += sale.ss_ext_sales_price.unwrap_or(0));
    }
    groups.expected(i64::to_string, mode)
}
