//! `tpcds-q72`: catalog sales of a year to one demographic and household band that shipped
//! late while the item's stock in some warehouse was short that week, with and without
//! promotion, per item, warehouse and week (TPC-DS query 72).
//!
//! ```text
//!  catalog_sales ─FWD─ ⋈ d1 ─FWD─ ⋈ hd ─FWD─ ⋈ cd ─FWD─ ⋈ d3 ─ late ─FWD─ ⋈ item ─FWD─ ⋈ d2 (×7)
//!      ─HASH(item, day)─ ⋈ inventory ─ short ─FWD─ ⋈ warehouse ─FWD─ ⟕ promotion ─FWD─ ⟕ catalog_returns ─HASH─ count ─ sink
//!  date_dim, household_demographics, customer_demographics, item, warehouse, promotion,
//!  catalog_returns ──────────────────────────── BROADCAST (each to its join)
//!  inventory ─HASH(item, day)──────────────────┘
//! ```
//!
//! A long broadcast cascade with a fan-out (every sale meets the 7 days of its week: ×7 at
//! SF 1) in front of a hash join with the largest table. SF 1: 1,441,548 sales → 285,626 in
//! 1999 → 46,057 → 9,104 → 8,689 shipped more than 5 days later → 8,689 → 60,823 → 2,024 short
//! of stock → 2,008 groups. The left outer join with `catalog_returns` (unique on item and
//! order, no column used) changes no row; it is broadcast, as a streaming left outer hash join
//! would need retractions an upsert sink cannot take.

use std::collections::{BTreeMap, BTreeSet};

use sluice_engine::api::{DataStream, ExecutionMode, JobDefinition, JobParams, JoinType, ParamSpec, StreamEnv};
use sluice_engine::prng::Prng;

use super::tables::{
    CATALOG_RETURNS, CATALOG_SALES, CUSTOMER_DEMOGRAPHICS, CatalogReturn, CatalogSale, CustomerDemographics, DATE_DIM,
    DateDim, HOUSEHOLD_DEMOGRAPHICS, HouseholdDemographics, INVENTORY, ITEM, Inventory, Item, PROMOTION, Promotion,
    WAREHOUSE, Warehouse,
};
use super::{Groups, SCALE, commit, generate, read, scan};
use crate::{ExpectedOutput, ExternalInput, SimJob};

pub(crate) const Q72: SimJob = SimJob {
    definition: JobDefinition {
        name: "tpcds-q72",
        description: "TPC-DS q72: late catalog sales short of stock, with and without promotion, per item, warehouse and week",
        params: &[
            SCALE,
            ParamSpec::int("year", 1999, 1998, 2002, "the year of the sale (d1.d_year)"),
            ParamSpec::text("buy_potential", ">10000", "the household band (hd_buy_potential)"),
            ParamSpec::text("marital_status", "D", "the demographic (cd_marital_status)"),
        ],
        inputs: &[
            CATALOG_SALES,
            DATE_DIM,
            HOUSEHOLD_DEMOGRAPHICS,
            CUSTOMER_DEMOGRAPHICS,
            ITEM,
            INVENTORY,
            WAREHOUSE,
            PROMOTION,
            CATALOG_RETURNS,
        ],
        build,
    },
    generate_input: Some(generate_input),
    reference: Some(reference),
    reference_summary: None,
    late: None,
    prefix_reference: None,
};

/// What a sale carries past its dimensions: `(item, promotion, order, quantity)`.
type Line = (i64, i64, i64, Option<i64>);
/// A sale with the key of its next join first: `(key, sold, ship, cdemo or week, line)`.
type Sale = (i64, i64, i64, i64, Line);
/// A sale that met its item and week: `((item, day), week, description, line)`.
type Stocked = ((i64, i64), i64, String, Line);
/// A short sale: `(warehouse, group without the warehouse, line)`.
type Short = (i64, (String, i64), Line);

/// Whether a sale shipped short of stock: SQL's `inv_quantity_on_hand < cs_quantity`, false if
/// either is NULL.
fn short(on_hand: Option<i64>, quantity: Option<i64>) -> bool {
    matches!((on_hand, quantity), (Some(on_hand), Some(quantity)) if on_hand < quantity)
}

/// The group of a short sale: `i_item_desc|w_warehouse_name|d1.d_week_seq`.
fn group(description: &str, warehouse: &str, week: i64) -> String {
    format!("{description}|{warehouse}|{week}")
}

/// The sales of the year, to the band and demographic, shipped more than 5 days after the sale:
/// `(week, item description, line)` after the item's join, keyed for the week's days.
fn late_sales(env: &StreamEnv, params: &JobParams) -> DataStream<(i64, i64, String, Line)> {
    let year = params.get("year") as i64;
    let (band, status) = (params.text("buy_potential").to_string(), params.text("marital_status").to_string());
    let d1 = scan::<DateDim>(env, &DATE_DIM).filter(move |d: &DateDim| d.d_year == year);
    let d1 = d1.map(|d: DateDim| (d.d_date_sk, d.d_week_seq)).name("Project d1");
    let hd = scan::<HouseholdDemographics>(env, &HOUSEHOLD_DEMOGRAPHICS)
        .filter(move |h: &HouseholdDemographics| h.hd_buy_potential == band);
    let hd = hd.map(|h: HouseholdDemographics| h.hd_demo_sk).name("Project household_demographics");
    let cd = scan::<CustomerDemographics>(env, &CUSTOMER_DEMOGRAPHICS)
        .filter(move |c: &CustomerDemographics| c.cd_marital_status == status);
    let cd = cd.map(|c: CustomerDemographics| c.cd_demo_sk).name("Project customer_demographics");
    let d3 = scan::<DateDim>(env, &DATE_DIM).map(|d: DateDim| d.d_date_sk).name("Project d3");
    let items = scan::<Item>(env, &ITEM).map(|i: Item| (i.i_item_sk, i.i_item_desc)).name("Project item");
    scan::<CatalogSale>(env, &CATALOG_SALES)
        .map(|c: CatalogSale| {
            let line = (c.cs_item_sk, c.cs_promo_sk, c.cs_order_number, c.cs_quantity);
            (c.cs_sold_date_sk, c.cs_ship_date_sk, c.cs_bill_cdemo_sk, c.cs_bill_hdemo_sk, line)
        })
        .name("Project catalog_sales")
        .broadcast_join(
            &d1,
            JoinType::Inner,
            |s: &Sale| s.0,
            |d: &(i64, i64)| d.0,
            |s: &Sale, d| (s.3, s.0, s.1, s.2, (s.4, d.expect("inner").1)),
        )
        .broadcast_join(
            &hd,
            JoinType::Inner,
            |s: &(i64, i64, i64, i64, (Line, i64))| s.0,
            |h: &i64| *h,
            |s, _| (s.3, s.1, s.2, s.4.1, s.4.0),
        )
        .broadcast_join(&cd, JoinType::Inner, |s: &Sale| s.0, |c: &i64| *c, |s: &Sale, _| (s.2, s.1, s.2, s.3, s.4))
        .broadcast_join(&d3, JoinType::Inner, |s: &Sale| s.0, |d: &i64| *d, |s: &Sale, _| *s)
        .filter(|s: &Sale| s.2 > s.1 + 5)
        .name("Shipped late")
        .broadcast_join(
            &items,
            JoinType::Inner,
            |s: &Sale| s.4.0,
            |i: &(i64, String)| i.0,
            |s: &Sale, item| (s.3, s.4.0, item.expect("inner").1.clone(), s.4),
        )
}

fn build(env: &StreamEnv, params: &JobParams) {
    let days = scan::<DateDim>(env, &DATE_DIM).map(|d: DateDim| (d.d_week_seq, d.d_date_sk)).name("Project d2");
    let stocked = late_sales(env, params).broadcast_join(
        &days,
        JoinType::Inner,
        |s: &(i64, i64, String, Line)| s.0,
        |day: &(i64, i64)| day.0,
        |s: &(i64, i64, String, Line), day| ((s.1, day.expect("inner").1), s.0, s.2.clone(), s.3),
    );
    let inventory = scan::<Inventory>(env, &INVENTORY)
        .map(|i: Inventory| ((i.inv_item_sk, i.inv_date_sk), i.inv_warehouse_sk, i.inv_quantity_on_hand))
        .name("Project inventory");
    let shorts = stocked
        .key_by(|s: &Stocked| s.0)
        .join(&inventory.key_by(|i: &((i64, i64), i64, Option<i64>)| i.0), |s: &Stocked, i| {
            (i.1, (s.2.clone(), s.1), s.3, short(i.2, s.3.3))
        })
        .filter(|s: &(i64, (String, i64), Line, bool)| s.3)
        .map(|s: (i64, (String, i64), Line, bool)| (s.0, s.1, s.2))
        .name("Short of stock");
    let warehouses = scan::<Warehouse>(env, &WAREHOUSE).map(|w: Warehouse| (w.w_warehouse_sk, w.w_warehouse_name));
    let promotions = scan::<Promotion>(env, &PROMOTION).map(|p: Promotion| p.p_promo_sk).name("Project promotion");
    let returns =
        scan::<CatalogReturn>(env, &CATALOG_RETURNS).map(|r: CatalogReturn| (r.cr_item_sk, r.cr_order_number));
    let counted = shorts
        .broadcast_join(
            &warehouses.name("Project warehouse"),
            JoinType::Inner,
            |s: &Short| s.0,
            |w: &(i64, String)| w.0,
            |s: &Short, w| (group(&s.1.0, &w.expect("inner").1, s.1.1), s.2),
        )
        .broadcast_join(
            &promotions,
            JoinType::LeftOuter,
            |s: &(String, Line)| s.1.1,
            |p: &i64| *p,
            |s, promotion| (s.0.clone(), s.1, promotion.is_some()),
        )
        .broadcast_join(
            &returns.name("Project catalog_returns"),
            JoinType::LeftOuter,
            |s: &(String, Line, bool)| (s.1.0, s.1.2),
            |r: &(i64, i64)| *r,
            |s: &(String, Line, bool), _| (s.0.clone(), (i64::from(!s.2), i64::from(s.2), 1)),
        );
    let counts = counted.key_by(|c: &(String, (i64, i64, i64))| c.0.clone());
    commit(counts.reduce(|a, b| (a.0, (a.1.0 + b.1.0, a.1.1 + b.1.1, a.1.2 + b.1.2))), shown);
}

fn shown(counts: &(i64, i64, i64)) -> String {
    format!("{}|{}|{}", counts.0, counts.1, counts.2)
}

fn generate_input(params: &JobParams, prng: &mut Prng) -> ExternalInput {
    let tables = [
        &CATALOG_SALES,
        &DATE_DIM,
        &HOUSEHOLD_DEMOGRAPHICS,
        &CUSTOMER_DEMOGRAPHICS,
        &ITEM,
        &INVENTORY,
        &WAREHOUSE,
        &PROMOTION,
        &CATALOG_RETURNS,
    ];
    generate::tables(params.get("scale"), &generate::Wanted::default(), &tables, prng)
}

fn reference(params: &JobParams, input: &ExternalInput, mode: ExecutionMode) -> ExpectedOutput {
    let year = params.get("year") as i64;
    let (band, status) = (params.text("buy_potential"), params.text("marital_status"));
    let dates = read::<DateDim>(input, &DATE_DIM);
    let weeks: BTreeMap<i64, i64> =
        dates.iter().filter(|d| d.d_year == year).map(|d| (d.d_date_sk, d.d_week_seq)).collect();
    let all_days: BTreeSet<i64> = dates.iter().map(|d| d.d_date_sk).collect();
    let mut days_of_week: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    dates.iter().for_each(|d| days_of_week.entry(d.d_week_seq).or_default().push(d.d_date_sk));
    let bands: BTreeSet<i64> = read::<HouseholdDemographics>(input, &HOUSEHOLD_DEMOGRAPHICS)
        .into_iter()
        .filter(|h| h.hd_buy_potential == band)
        .map(|h| h.hd_demo_sk)
        .collect();
    let statuses: BTreeSet<i64> = read::<CustomerDemographics>(input, &CUSTOMER_DEMOGRAPHICS)
        .into_iter()
        .filter(|c| c.cd_marital_status == status)
        .map(|c| c.cd_demo_sk)
        .collect();
    let items: BTreeMap<i64, String> =
        read::<Item>(input, &ITEM).into_iter().map(|i| (i.i_item_sk, i.i_item_desc)).collect();
    let mut stock: BTreeMap<(i64, i64), Vec<(i64, Option<i64>)>> = BTreeMap::new();
    for i in read::<Inventory>(input, &INVENTORY) {
        stock.entry((i.inv_item_sk, i.inv_date_sk)).or_default().push((i.inv_warehouse_sk, i.inv_quantity_on_hand));
    }
    let warehouses: BTreeMap<i64, String> =
        read::<Warehouse>(input, &WAREHOUSE).into_iter().map(|w| (w.w_warehouse_sk, w.w_warehouse_name)).collect();
    let promotions: BTreeSet<i64> = read::<Promotion>(input, &PROMOTION).into_iter().map(|p| p.p_promo_sk).collect();
    let mut groups = Groups::<(i64, i64, i64)>::new();
    for sale in read::<CatalogSale>(input, &CATALOG_SALES) {
        let Some(week) = weeks.get(&sale.cs_sold_date_sk) else { continue };
        let joined = bands.contains(&sale.cs_bill_hdemo_sk) && statuses.contains(&sale.cs_bill_cdemo_sk);
        let late = all_days.contains(&sale.cs_ship_date_sk) && sale.cs_ship_date_sk > sale.cs_sold_date_sk + 5;
        let Some(description) = items.get(&sale.cs_item_sk).filter(|_| joined && late) else { continue };
        let promoted = i64::from(promotions.contains(&sale.cs_promo_sk));
        for day in &days_of_week[week] {
            for (warehouse, on_hand) in stock.get(&(sale.cs_item_sk, *day)).into_iter().flatten() {
                let Some(name) = warehouses.get(warehouse).filter(|_| short(*on_hand, sale.cs_quantity)) else {
                    continue;
                };
                groups.add(group(description, name, *week), |c| *c = (c.0 + 1 - promoted, c.1 + promoted, c.2 + 1));
            }
        }
    }
    groups.expected(shown, mode)
}
