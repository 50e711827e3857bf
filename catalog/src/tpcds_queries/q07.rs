//! `tpcds-q7`: average quantity and prices per item of a year's sales to one demographic under
//! promotions outside e-mail or events (TPC-DS query 7).
//!
//! ```text
//!  store_sales ─ project ─FWD─ ⋈ date ─FWD─ ⋈ cdemo ─FWD─ ⋈ promo ─FWD─ ⋈ item ─ local agg ─HASH─ agg ─ sink
//!  date_dim (d_year) ─────BROADCAST─┘         │              │             │
//!  customer_demographics (M, S, College) ─────┘              │             │
//!  promotion (email or event 'N') ─────────────BROADCAST─────┘             │
//!  item ──────────────────────────────────────────────────BROADCAST────────┘
//! ```
//!
//! The longest broadcast cascade: four pointwise edges between joins. SF 1: 2,880,404 sales →
//! 553,970 in 2000 → 7,885 of the demographic → 7,761 under such promotions → 7,761 → 5,159
//! items. Averages are committed as sums and counts of the non-NULL values.

use std::collections::BTreeMap;

use sluice_engine::api::{ExecutionMode, JobDefinition, JobParams, JoinType, ParamSpec, StreamEnv};
use sluice_engine::prng::Prng;

use super::tables::{
    CUSTOMER_DEMOGRAPHICS, CustomerDemographics, DATE_DIM, DateDim, ITEM, Item, PROMOTION, Promotion, STORE_SALES,
    StoreSale,
};
use super::{Groups, SCALE, commit, generate, read, scan};
use crate::{ExpectedOutput, ExternalInput, SimJob};

pub(crate) const Q7: SimJob = SimJob {
    definition: JobDefinition {
        name: "tpcds-q7",
        description: "TPC-DS q7: a year's average quantity and prices per item, for one demographic",
        params: &[SCALE, ParamSpec::int("year", 2000, 1998, 2002, "the year (d_year)")],
        inputs: &[STORE_SALES, DATE_DIM, CUSTOMER_DEMOGRAPHICS, PROMOTION, ITEM],
        build,
    },
    generate_input: Some(generate_input),
    reference: Some(reference),
    reference_summary: None,
    late: None,
    prefix_reference: None,
};

/// Sums and counts of quantity, list price, coupon amount and sales price.
type Averages = (i64, i64, i64, i64, i64, i64, i64, i64);
/// `(key, measures)`: a sale's join key of the next join, its measures.
type Sale = (i64, i64, i64, Averages);

/// One sale's measures: each value and whether it is there (SQL's `avg` skips NULLs).
fn measures(sale: &StoreSale) -> Averages {
    let pair = |value: Option<i64>| (value.unwrap_or(0), i64::from(value.is_some()));
    let (quantity, list, coupon, price) =
        (pair(sale.ss_quantity), pair(sale.ss_list_price), pair(sale.ss_coupon_amt), pair(sale.ss_sales_price));
    (quantity.0, quantity.1, list.0, list.1, coupon.0, coupon.1, price.0, price.1)
}

fn add(a: Averages, b: Averages) -> Averages {
    (a.0 + b.0, a.1 + b.1, a.2 + b.2, a.3 + b.3, a.4 + b.4, a.5 + b.5, a.6 + b.6, a.7 + b.7)
}

fn shown(value: &Averages) -> String {
    let (a, b, c, d, e, f, g, h) = value;
    format!("{a}|{b}|{c}|{d}|{e}|{f}|{g}|{h}")
}

fn wanted_demographic(cd: &CustomerDemographics) -> bool {
    cd.cd_gender == "M" && cd.cd_marital_status == "S" && cd.cd_education_status == "College"
}

fn wanted_promotion(promo: &Promotion) -> bool {
    promo.p_channel_email == "N" || promo.p_channel_event == "N"
}

fn build(env: &StreamEnv, params: &JobParams) {
    let year = params.get("year") as i64;
    let dates = scan::<DateDim>(env, &DATE_DIM).filter(move |date: &DateDim| date.d_year == year);
    let dates = dates.map(|date: DateDim| date.d_date_sk).name("Project date_dim");
    let cdemos = scan::<CustomerDemographics>(env, &CUSTOMER_DEMOGRAPHICS).filter(wanted_demographic);
    let cdemos = cdemos.map(|cd: CustomerDemographics| cd.cd_demo_sk).name("Project customer_demographics");
    let promos = scan::<Promotion>(env, &PROMOTION).filter(wanted_promotion);
    let promos = promos.map(|promo: Promotion| promo.p_promo_sk).name("Project promotion");
    let items = scan::<Item>(env, &ITEM).map(|item: Item| (item.i_item_sk, item.i_item_id)).name("Project item");
    // Each join keys on the sale's first field and moves the next join's key to the front.
    let sales = scan::<StoreSale>(env, &STORE_SALES)
        .map(|sale: StoreSale| {
            (sale.ss_sold_date_sk, sale.ss_cdemo_sk, sale.ss_promo_sk, sale.ss_item_sk, measures(&sale))
        })
        .name("Project store_sales")
        .broadcast_join(
            &dates,
            JoinType::Inner,
            |s: &(i64, i64, i64, i64, Averages)| s.0,
            |d: &i64| *d,
            |s, _| (s.1, s.2, s.3, s.4),
        )
        .broadcast_join(&cdemos, JoinType::Inner, |s: &Sale| s.0, |cd: &i64| *cd, |s: &Sale, _| (s.1, s.2, 0, s.3))
        .broadcast_join(&promos, JoinType::Inner, |s: &Sale| s.0, |p: &i64| *p, |s: &Sale, _| (s.1, 0, 0, s.3));
    let grouped = sales.broadcast_join(
        &items,
        JoinType::Inner,
        |s: &Sale| s.0,
        |item: &(i64, String)| item.0,
        |s: &Sale, item: Option<&(i64, String)>| (item.expect("inner").1.clone(), s.3),
    );
    let averages = grouped.key_by(|group: &(String, Averages)| group.0.clone()).reduce(|a, b| (a.0, add(a.1, b.1)));
    commit(averages, shown);
}

fn generate_input(params: &JobParams, prng: &mut Prng) -> ExternalInput {
    let tables = [&STORE_SALES, &DATE_DIM, &CUSTOMER_DEMOGRAPHICS, &PROMOTION, &ITEM];
    generate::tables(params.get("scale"), &generate::Wanted::default(), &tables, prng)
}

fn reference(params: &JobParams, input: &ExternalInput, mode: ExecutionMode) -> ExpectedOutput {
    let year = params.get("year") as i64;
    let dates: Vec<i64> =
        read::<DateDim>(input, &DATE_DIM).into_iter().filter(|d| d.d_year == year).map(|d| d.d_date_sk).collect();
    let cdemos = read::<CustomerDemographics>(input, &CUSTOMER_DEMOGRAPHICS).into_iter().filter(wanted_demographic);
    let cdemos: Vec<i64> = cdemos.map(|cd| cd.cd_demo_sk).collect();
    let promos = read::<Promotion>(input, &PROMOTION).into_iter().filter(wanted_promotion);
    let promos: Vec<i64> = promos.map(|promo| promo.p_promo_sk).collect();
    let items: BTreeMap<i64, String> =
        read::<Item>(input, &ITEM).into_iter().map(|item| (item.i_item_sk, item.i_item_id)).collect();
    let (dates, cdemos, promos) = (set(dates), set(cdemos), set(promos));
    let mut groups = Groups::<Averages>::new();
    for sale in read::<StoreSale>(input, &STORE_SALES) {
        let joined = dates.contains(&sale.ss_sold_date_sk)
            && cdemos.contains(&sale.ss_cdemo_sk)
            && promos.contains(&sale.ss_promo_sk);
        let Some(item_id) = items.get(&sale.ss_item_sk).filter(|_| joined) else { continue };
        groups.add(item_id.clone(), |averages| *averages = add(*averages, measures(&sale)));
    }
    groups.expected(shown, mode)
}

fn set(keys: Vec<i64>) -> std::collections::BTreeSet<i64> {
    keys.into_iter().collect()
}
