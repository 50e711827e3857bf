//! `tpcds-q19`: a manager's sales in a month to customers living outside the store's zip code,
//! per brand and manufacturer (TPC-DS query 19).
//!
//! ```text
//!  store_sales ─FWD─ ⋈ date ─FWD─ ⋈ item ─FWD─ ⋈ store ─HASH(customer)─ ⋈ ─ zip ≠ ─ local sum ─HASH─ sum ─ sink
//!  date_dim, item, store ─────── BROADCAST ─────────┘                    │
//!  customer ─HASH(address)─ ⋈ ─HASH(customer)────────────────────────────┘
//!  customer_address ─HASH──┘
//! ```
//!
//! Broadcast joins on the fact side, then two hash joins (ALL_TO_ALL edges) for the customer
//! and their address. SF 1: 2,880,404 → 85,074 in November 1998 → 1,518 of manager 8's items
//! → 1,518 → 1,493 with their customer → 1,451 outside the store's zip → 160 groups.

use std::collections::BTreeMap;

use sluice_engine::api::{ExecutionMode, JobDefinition, JobParams, JoinType, ParamSpec, StreamEnv};
use sluice_engine::prng::Prng;

use super::tables::{
    CUSTOMER, CUSTOMER_ADDRESS, Customer, CustomerAddress, DATE_DIM, DateDim, ITEM, Item, STORE, STORE_SALES, Store,
    StoreSale,
};
use super::{Groups, SCALE, commit, generate, read, scan, show};
use crate::{ExpectedOutput, ExternalInput, SimJob};

pub(crate) const Q19: SimJob = SimJob {
    definition: JobDefinition {
        name: "tpcds-q19",
        description: "TPC-DS q19: a manager's sales in a month to customers from elsewhere, per brand and manufacturer",
        params: &[
            SCALE,
            ParamSpec::int("manager", 8, 1, 100, "the manager (i_manager_id)"),
            ParamSpec::int("year", 1998, 1998, 2002, "the year (d_year)"),
            ParamSpec::int("month", 11, 1, 12, "the month of the year (d_moy)"),
        ],
        inputs: &[STORE_SALES, DATE_DIM, ITEM, STORE, CUSTOMER, CUSTOMER_ADDRESS],
        build,
    },
    generate_input: Some(generate_input),
    reference: Some(reference),
    reference_summary: None,
    late: None,
    prefix_reference: None,
};

/// `(join key, customer, group, price)`; the group is the item's, once joined.
type Sale = (i64, i64, String, i64);

/// The group of an item's sales.
fn group(item: &Item) -> String {
    format!("{}|{}|{}|{}", show(item.i_brand_id), item.i_brand, show(item.i_manufact_id), item.i_manufact)
}

/// SQL's `SUBSTRING(a, 1, 5) <> SUBSTRING(b, 1, 5)`: false if either is NULL (empty).
fn zips_differ(a: &str, b: &str) -> bool {
    let zip5 = |zip: &str| zip.chars().take(5).collect::<String>();
    !a.is_empty() && !b.is_empty() && zip5(a) != zip5(b)
}

fn build(env: &StreamEnv, params: &JobParams) {
    let (manager, year, month) = (params.get("manager") as i64, params.get("year") as i64, params.get("month") as i64);
    let dates = scan::<DateDim>(env, &DATE_DIM).filter(move |d: &DateDim| d.d_year == year && d.d_moy == month);
    let dates = dates.map(|date: DateDim| date.d_date_sk).name("Project date_dim");
    let items = scan::<Item>(env, &ITEM).filter(move |item: &Item| item.i_manager_id == Some(manager));
    let items = items.map(|item: Item| (item.i_item_sk, group(&item))).name("Project item");
    let stores = scan::<Store>(env, &STORE).map(|store: Store| (store.s_store_sk, store.s_zip)).name("Project store");
    let sales = scan::<StoreSale>(env, &STORE_SALES)
        .map(|s: StoreSale| (s.ss_sold_date_sk, s.ss_item_sk, s.ss_store_sk, s.ss_customer_sk, s.ss_ext_sales_price))
        .name("Project store_sales")
        .broadcast_join(
            &dates,
            JoinType::Inner,
            |s: &(i64, i64, i64, i64, Option<i64>)| s.0,
            |d: &i64| *d,
            |s, _| (s.1, s.2, s.3, s.4.unwrap_or(0)),
        )
        .broadcast_join(
            &items,
            JoinType::Inner,
            |s: &(i64, i64, i64, i64)| s.0,
            |i: &(i64, String)| i.0,
            |s, item| (s.1, s.2, item.expect("inner").1.clone(), s.3),
        )
        .broadcast_join(
            &stores,
            JoinType::Inner,
            |s: &Sale| s.0,
            |st: &(i64, String)| st.0,
            |s: &Sale, store| (s.1, s.2.clone(), store.expect("inner").1.clone(), s.3),
        );
    let addresses = scan::<CustomerAddress>(env, &CUSTOMER_ADDRESS)
        .map(|a: CustomerAddress| (a.ca_address_sk, a.ca_zip))
        .name("Project customer_address");
    let customers = scan::<Customer>(env, &CUSTOMER)
        .map(|c: Customer| (c.c_customer_sk, c.c_current_addr_sk))
        .name("Project customer")
        .key_by(|c: &(i64, i64)| c.1)
        .join(&addresses.key_by(|a: &(i64, String)| a.0), |c: &(i64, i64), a: &(i64, String)| (c.0, a.1.clone()));
    let grouped = sales
        .key_by(|s: &(i64, String, String, i64)| s.0)
        .join(&customers.key_by(|c: &(i64, String)| c.0), |s: &(i64, String, String, i64), c: &(i64, String)| {
            (s.1.clone(), zips_differ(&c.1, &s.2), s.3)
        })
        .filter(|row: &(String, bool, i64)| row.1)
        .map(|row: (String, bool, i64)| (row.0, row.2))
        .name("Zips differ");
    commit(grouped.key_by(|group: &(String, i64)| group.0.clone()).sum(), i64::to_string);
}

fn generate_input(params: &JobParams, prng: &mut Prng) -> ExternalInput {
    let wanted = generate::Wanted { managers: vec![params.get("manager") as i64], ..generate::Wanted::default() };
    let tables = [&STORE_SALES, &DATE_DIM, &ITEM, &STORE, &CUSTOMER, &CUSTOMER_ADDRESS];
    generate::tables(params.get("scale"), &wanted, &tables, prng)
}

fn reference(params: &JobParams, input: &ExternalInput, mode: ExecutionMode) -> ExpectedOutput {
    let (manager, year, month) = (params.get("manager") as i64, params.get("year") as i64, params.get("month") as i64);
    let dates = read::<DateDim>(input, &DATE_DIM).into_iter().filter(|d| d.d_year == year && d.d_moy == month);
    let dates: std::collections::BTreeSet<i64> = dates.map(|d| d.d_date_sk).collect();
    let items = read::<Item>(input, &ITEM).into_iter().filter(|item| item.i_manager_id == Some(manager));
    let items: BTreeMap<i64, String> = items.map(|item| (item.i_item_sk, group(&item))).collect();
    let stores: BTreeMap<i64, String> =
        read::<Store>(input, &STORE).into_iter().map(|s| (s.s_store_sk, s.s_zip)).collect();
    let zips: BTreeMap<i64, String> =
        read::<CustomerAddress>(input, &CUSTOMER_ADDRESS).into_iter().map(|a| (a.ca_address_sk, a.ca_zip)).collect();
    let homes = read::<Customer>(input, &CUSTOMER).into_iter();
    let homes: BTreeMap<i64, &String> =
        homes.filter_map(|c| Some((c.c_customer_sk, zips.get(&c.c_current_addr_sk)?))).collect();
    let mut groups = Groups::<i64>::new();
    for sale in read::<StoreSale>(input, &STORE_SALES).into_iter().filter(|s| dates.contains(&s.ss_sold_date_sk)) {
        let (Some(item), Some(store_zip), Some(home)) =
            (items.get(&sale.ss_item_sk), stores.get(&sale.ss_store_sk), homes.get(&sale.ss_customer_sk))
        else {
            continue;
        };
        if zips_differ(home, store_zip) {
            groups.add(item.clone(), |sum| *sum += sale.ss_ext_sales_price.unwrap_or(0));
        }
    }
    groups.expected(i64::to_string, mode)
}
