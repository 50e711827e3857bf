//! `tpcds-q64`: items of some colors in a price band that were sold, returned, and sold through
//! the catalog for more than twice what was refunded on them; per store and pair of addresses,
//! this year's sales against next year's (TPC-DS query 64).
//!
//! ```text
//!  catalog_sales ─HASH(item, order)─ ⋈ catalog_returns ─HASH(item)─ group by item, HAVING (cs_ui)
//!     ─FWD─ ⋈ item (color, price; BROADCAST) ─HASH(item)─ ⋈ store_returns ─HASH(item, ticket)─ ⋈ store_sales
//!     ─FWD─ ⋈ d1 ─FWD─ ⋈ store ─FWD─ ⋈ promotion ─FWD─ ⋈ hd1 ⋈ ib1               (BROADCAST dims)
//!     ─HASH(cdemo)─ ⋈ cd1 ─HASH(addr)─ ⋈ ad1 ─HASH(customer)─ ⋈ customers
//!  customer ─FWD─ ⋈ hd2 ⋈ ib2 ─FWD─ ⋈ d2 ─FWD─ ⋈ d3 ─HASH─ ⋈ cd2 ─HASH─ ⋈ ad2 ──────────────┘
//!     ─ marital statuses differ ─HASH(group)─ group by 15 columns (cross_sales)
//!     ─HASH(item, store, zip)─ ⋈ self (this year against next, cnt ≤) ─ upsert sink (+I puts, -D deletes)
//! ```
//!
//! The shuffle-bound shape, joined in the order Flink's planner picks: from the few items of
//! `cs_ui` and the colors outward, so that the fact table (store sales) and the large
//! dimensions (demographics, addresses, customers) come in over HASH edges, and a FORWARD edge
//! carries only what is already joined. SF 1: catalog_sales ⋈ catalog_returns 144,067 → 17,862
//! items → HAVING 17,157 → 12 of the colors and band → 169 returns → 53 sales → 39 groups → 2
//! answer rows.
//!
//! The first query here whose streaming run updates a table by retracting: `cs_ui`'s HAVING can
//! stop holding for an item as its refunds grow, the groups of `cross_sales` shrink when it
//! does, and a pair of groups stops qualifying when next year's count passes this year's. The
//! plan carries Flink's changelog (`sluice_engine::api::changelog`): `cs_ui` and `cross_sales`
//! are `GroupAggregate`s, the joins that read them `ChangelogJoin`s, and the sink deletes the
//! pairs taken back. Batch reads only final rows and commits each pair once. Key and value as
//! `benches/tpcds/queries/q64.sql` writes them.

use std::collections::{BTreeMap, BTreeSet};

use sluice_engine::api::changelog::{Change, RetractableAggregate, RowKind, group_changelog, join_changelogs};
use sluice_engine::api::{DataStream, ExecutionMode, JobDefinition, JobParams, JoinType, ParamSpec, StreamEnv};
use sluice_engine::connectors::{Row, SinkKind, TxnStoreSink};
use sluice_engine::prng::Prng;

use super::tables::{
    CATALOG_RETURNS, CATALOG_SALES, CUSTOMER, CUSTOMER_ADDRESS, CUSTOMER_DEMOGRAPHICS, CatalogReturn, CatalogSale,
    Customer, CustomerAddress, CustomerDemographics, DATE_DIM, DateDim, HOUSEHOLD_DEMOGRAPHICS, HouseholdDemographics,
    INCOME_BAND, ITEM, IncomeBand, Item, PROMOTION, Promotion, STORE, STORE_RETURNS, STORE_SALES, Store, StoreReturn,
    StoreSale,
};
use super::{ANSWER, SCALE, generate, read, scan};
use crate::{ExpectedOutput, ExpectedTable, ExternalInput, SimJob, Updates};

pub(crate) const Q64: SimJob = SimJob {
    definition: JobDefinition {
        name: "tpcds-q64",
        description: "TPC-DS q64: items sold, returned and sold on through the catalog, this year against next",
        params: &[
            SCALE,
            ParamSpec::int("year", 1999, 1998, 2001, "this year (cs1.syear; next year is cs2's)"),
            ParamSpec::int("price", 64, 0, 85, "the price band's base (i_current_price in price + 1 ..= price + 10)"),
            ParamSpec::text("colors", "purple,burlywood,indian,spring,floral,medium", "the item colors (i_color)"),
        ],
        inputs: &[
            STORE_SALES,
            STORE_RETURNS,
            CATALOG_SALES,
            CATALOG_RETURNS,
            DATE_DIM,
            STORE,
            CUSTOMER,
            CUSTOMER_DEMOGRAPHICS,
            PROMOTION,
            HOUSEHOLD_DEMOGRAPHICS,
            CUSTOMER_ADDRESS,
            INCOME_BAND,
            ITEM,
        ],
        build,
    },
    generate_input: Some(generate_input),
    reference: Some(reference),
    reference_summary: None,
    late: None,
    prefix_reference: None,
};

/// An address as q64 groups by it: street number, street name, city, zip.
type Address = (String, String, String, String);
/// A `cross_sales` group: product name, item, store name, store zip, the sale's address, the
/// customer's address, and the years of the sale, of the customer's first sale and first
/// shipment.
type Group = (String, i64, String, String, Address, Address, i64, i64, i64);
/// The measures summed: wholesale cost, list price, coupon amount.
type Measures = (Option<i64>, Option<i64>, Option<i64>);
/// A sale as the store side carries it: item, ticket, customer, cdemo, address, (product, store
/// name, store zip, year), measures.
type Sale = (i64, i64, i64, i64, i64, (String, String, String, i64), Measures);
/// A customer as the customer side carries it: its key, marital status, address, and the years
/// of its first sale and first shipment.
type CustomerSide = (i64, String, Address, i64, i64);
/// A `cross_sales` row: its group, count, and the sums (NULL when every value was).
type CrossSale = (Group, i64, Option<i64>, Option<i64>, Option<i64>);

/// Whether an item is of the colors and in the price band.
fn wanted_item(item: &Item, colors: &[String], price: i64) -> bool {
    let band = (price + 1) * 100..=(price + 10) * 100;
    colors.contains(&item.i_color) && item.i_current_price.is_some_and(|cents| band.contains(&cents))
}

fn address(a: &CustomerAddress) -> Address {
    (a.ca_street_number.clone(), a.ca_street_name.clone(), a.ca_city.clone(), a.ca_zip.clone())
}

/// `(key, sale)` of a catalog sale line joined with its return: item, list price, refund (NULL
/// when a part of it is).
fn returned_line(line: &CatalogSale, r: &CatalogReturn) -> (i64, Option<i64>, Option<i64>) {
    let refund = match (r.cr_refunded_cash, r.cr_reversed_charge, r.cr_store_credit) {
        (Some(cash), Some(charge), Some(credit)) => Some(cash + charge + credit),
        _ => None,
    };
    (line.cs_item_sk, line.cs_ext_list_price, refund)
}

/// `cs_ui`'s aggregate: per item, the list prices and refunds of its returned catalog lines
/// (sums and how many were not NULL); HAVING the prices are more than twice the refunds.
struct CsUi;

impl RetractableAggregate for CsUi {
    type In = (i64, Option<i64>, Option<i64>);
    type Acc = (i64, i64, (i64, i64), (i64, i64));
    type Out = i64;

    fn accumulate(&self, acc: &mut Self::Acc, row: &Self::In) {
        fold(acc, row, 1);
    }
    fn retract(&self, acc: &mut Self::Acc, row: &Self::In) {
        fold(acc, row, -1);
    }
    fn count(&self, acc: &Self::Acc) -> i64 {
        acc.1
    }
    fn result(&self, acc: &Self::Acc) -> Option<i64> {
        let ((sale, sales), (refund, refunds)) = (acc.2, acc.3);
        // SUM over NULLs only is NULL, and a comparison with NULL fails.
        (sales > 0 && refunds > 0 && sale > 2 * refund).then_some(acc.0)
    }
}

fn fold(acc: &mut (i64, i64, (i64, i64), (i64, i64)), row: &(i64, Option<i64>, Option<i64>), sign: i64) {
    let sum = |(total, count): (i64, i64), value: Option<i64>| match value {
        Some(value) => (total + sign * value, count + sign),
        None => (total, count),
    };
    *acc = (row.0, acc.1 + sign, sum(acc.2, row.1), sum(acc.3, row.2));
}

/// `cross_sales`' aggregate: per group, the count and the three sums.
struct CrossSales;

type CrossAcc = (Group, i64, ((i64, i64), (i64, i64), (i64, i64)));

impl RetractableAggregate for CrossSales {
    type In = (Group, Measures);
    type Acc = CrossAcc;
    type Out = CrossSale;

    fn accumulate(&self, acc: &mut CrossAcc, row: &(Group, Measures)) {
        add_measures(acc, row, 1);
    }
    fn retract(&self, acc: &mut CrossAcc, row: &(Group, Measures)) {
        add_measures(acc, row, -1);
    }
    fn count(&self, acc: &CrossAcc) -> i64 {
        acc.1
    }
    fn result(&self, acc: &CrossAcc) -> Option<CrossSale> {
        let sum = |(total, count): (i64, i64)| (count > 0).then_some(total);
        Some((acc.0.clone(), acc.1, sum(acc.2.0), sum(acc.2.1), sum(acc.2.2)))
    }
}

fn add_measures(acc: &mut CrossAcc, (group, measures): &(Group, Measures), sign: i64) {
    let add = |sum: (i64, i64), value: Option<i64>| match value {
        Some(value) => (sum.0 + sign * value, sum.1 + sign),
        None => sum,
    };
    acc.2 = (add(acc.2.0, measures.0), add(acc.2.1, measures.1), add(acc.2.2, measures.2));
    acc.0 = group.clone();
    acc.1 += sign;
}

fn build(env: &StreamEnv, params: &JobParams) {
    let year = params.get("year") as i64;
    let sales = store_side(env, params);
    let customers = customer_side(env).map(Change::insert).name("Customers as inserts");
    let joined = join_changelogs(
        &sales,
        &customers,
        |s: &StoreRow| s.0,
        |c: &CustomerSide| c.0,
        |sale, customer| {
            let mut group = sale.1.clone();
            (group.5, group.7, group.8) = (customer.2.clone(), customer.3, customer.4);
            let differ = !sale.2.is_empty() && !customer.1.is_empty() && sale.2 != customer.1;
            differ.then(|| (group, sale.3))
        },
    );
    let cross_sales = group_changelog(
        &joined.name("Join customers, marital statuses differ"),
        |row: &(Group, Measures)| row.0.clone(),
        CrossSales,
        env.mode(),
    );
    let cross_sales = cross_sales.name("cross_sales");
    let of_year = |year: i64| cross_sales.filter(move |c: &Change<CrossSale>| c.row.0.6 == year);
    let key = |c: &CrossSale| (c.0.1, c.0.2.clone(), c.0.3.clone());
    let pairs = join_changelogs(&of_year(year), &of_year(year + 1), key, key, |cs1, cs2| {
        let same_store = !cs1.0.2.is_empty() && !cs1.0.3.is_empty();
        (same_store && cs2.1 <= cs1.1).then(|| pair(cs1, cs2))
    });
    let sink = TxnStoreSink::upsert_changelog(ANSWER, |change: &Change<(String, String)>| match change.kind {
        RowKind::Insert | RowKind::UpdateAfter => (change.row.0.clone(), Some(change.row.1.clone())),
        RowKind::UpdateBefore | RowKind::Delete => (change.row.0.clone(), None),
    });
    pairs.name("Pairs of years").sink_to(sink).name("Sink: answer");
}

/// `cs_ui`: the items whose returned catalog lines were listed at more than twice their
/// refunds, as a changelog.
fn cs_ui(env: &StreamEnv) -> DataStream<Change<i64>> {
    let lines = scan::<CatalogSale>(env, &CATALOG_SALES).key_by(|l: &CatalogSale| (l.cs_item_sk, l.cs_order_number));
    let returns =
        scan::<CatalogReturn>(env, &CATALOG_RETURNS).key_by(|r: &CatalogReturn| (r.cr_item_sk, r.cr_order_number));
    let returned = lines.join(&returns, returned_line).map(Change::insert).name("Returned lines");
    group_changelog(&returned, |line: &(i64, Option<i64>, Option<i64>)| line.0, CsUi, env.mode()).name("cs_ui")
}

/// A store sale before its dimensions: (item, ticket, customer, cdemo, address), (sold date,
/// store, promotion, hdemo), product name, measures.
type RawSale = ((i64, i64, i64, i64, i64), (i64, i64, i64, i64), String, Measures);
/// A store sale on its way to the customer join: customer, its group so far (the customer's
/// columns still to fill), the sale's marital status, measures.
type StoreRow = (i64, Group, String, Measures);

/// The store side in Flink's join order: `cs_ui` with its wanted items (few), their returns,
/// their sales (HASH on item and ticket: the fact table shuffled), then the sale's dimensions
/// (broadcast) and its demographics and address (hash joins). Every join after `cs_ui` reads a
/// changelog.
fn store_side(env: &StreamEnv, params: &JobParams) -> DataStream<Change<StoreRow>> {
    let colors: Vec<String> = params.text("colors").split(',').map(str::to_string).collect();
    let price = params.get("price") as i64;
    let items = scan::<Item>(env, &ITEM).filter(move |item: &Item| wanted_item(item, &colors, price));
    let items = items.map(|item: Item| (item.i_item_sk, item.i_product_name)).name("Project item");
    let ui_items = cs_ui(env).broadcast_join(
        &items,
        JoinType::Inner,
        |c: &Change<i64>| c.row,
        |i: &(i64, String)| i.0,
        |c, i| Change { kind: c.kind, row: (c.row, i.expect("inner").1.clone()) },
    );
    let returns = scan::<StoreReturn>(env, &STORE_RETURNS)
        .map(|r: StoreReturn| Change::insert((r.sr_item_sk, r.sr_ticket_number)))
        .name("Project store_returns");
    let returned = join_changelogs(
        &ui_items.name("Join item"),
        &returns,
        |i: &(i64, String)| i.0,
        |r: &(i64, i64)| r.0,
        |i, r| Some((i.0, r.1, i.1.clone())),
    );
    let sales = scan::<StoreSale>(env, &STORE_SALES)
        .map(|s: StoreSale| {
            let keys = (s.ss_item_sk, s.ss_ticket_number, s.ss_customer_sk, s.ss_cdemo_sk, s.ss_addr_sk);
            let dimensions = (s.ss_sold_date_sk, s.ss_store_sk, s.ss_promo_sk, s.ss_hdemo_sk);
            Change::insert((keys, dimensions, (s.ss_wholesale_cost, s.ss_list_price, s.ss_coupon_amt)))
        })
        .name("Project store_sales");
    type Projected = ((i64, i64, i64, i64, i64), (i64, i64, i64, i64), Measures);
    let sold = join_changelogs(
        &returned.name("Join store_returns"),
        &sales,
        |r: &(i64, i64, String)| (r.0, r.1),
        |s: &Projected| (s.0.0, s.0.1),
        |r, s| Some((s.0, s.1, r.2.clone(), s.2)),
    );
    with_dimensions(env, sold.name("Join store_sales"))
}

/// A sale's dimensions: its year (d1), store, promotion and household with its income band
/// (broadcast), then its demographics (cd1) and address (ad1), hash joins.
fn with_dimensions(env: &StreamEnv, sales: DataStream<Change<RawSale>>) -> DataStream<Change<StoreRow>> {
    let years = scan::<DateDim>(env, &DATE_DIM).map(|d: DateDim| (d.d_date_sk, d.d_year)).name("Project date_dim");
    let stores =
        scan::<Store>(env, &STORE).map(|s: Store| (s.s_store_sk, s.s_store_name, s.s_zip)).name("Project store");
    let promotions = scan::<Promotion>(env, &PROMOTION).map(|p: Promotion| p.p_promo_sk).name("Project promotion");
    type Dated = (RawSale, i64);
    let dated = sales.broadcast_join(
        &years,
        JoinType::Inner,
        |s: &Change<RawSale>| s.row.1.0,
        |d: &(i64, i64)| d.0,
        |s, d| Change { kind: s.kind, row: (s.row.clone(), d.expect("inner").1) },
    );
    type Stored = (Dated, (String, String));
    let stored = dated.broadcast_join(
        &stores,
        JoinType::Inner,
        |s: &Change<Dated>| s.row.0.1.1,
        |s| s.0,
        |s, store| {
            let store: &(i64, String, String) = store.expect("inner");
            Change { kind: s.kind, row: (s.row.clone(), (store.1.clone(), store.2.clone())) }
        },
    );
    let promoted = stored.broadcast_join(
        &promotions,
        JoinType::Inner,
        |s: &Change<Stored>| s.row.0.0.1.2,
        |p: &i64| *p,
        |s, _| s.clone(),
    );
    let banded = promoted.broadcast_join(
        &households(env),
        JoinType::Inner,
        |s: &Change<Stored>| s.row.0.0.1.3,
        |h: &i64| *h,
        |s, _| {
            let (((keys, _, product, measures), year), (store, zip)) = s.row.clone();
            let (item, ticket, customer, cdemo, addr) = keys;
            Change { kind: s.kind, row: (item, ticket, customer, cdemo, addr, (product, store, zip, year), measures) }
        },
    );
    with_demographics(env, banded.name("Join d1, store, promotion, hd1, ib1"))
}

/// Each customer demographic's marital status (cd1 and cd2).
fn marital_statuses(env: &StreamEnv) -> DataStream<(i64, String)> {
    scan::<CustomerDemographics>(env, &CUSTOMER_DEMOGRAPHICS)
        .map(|cd: CustomerDemographics| (cd.cd_demo_sk, cd.cd_marital_status))
        .name("Project customer_demographics")
}

/// Each address as q64 groups by it (ad1 and ad2).
fn addresses(env: &StreamEnv) -> DataStream<(i64, Address)> {
    scan::<CustomerAddress>(env, &CUSTOMER_ADDRESS)
        .map(|a: CustomerAddress| (a.ca_address_sk, address(&a)))
        .name("Project customer_address")
}

/// The household demographics whose income band exists (`hd ⋈ income_band`), broadcast to
/// both sides.
fn households(env: &StreamEnv) -> DataStream<i64> {
    let bands =
        scan::<IncomeBand>(env, &INCOME_BAND).map(|b: IncomeBand| b.ib_income_band_sk).name("Project income_band");
    let households = scan::<HouseholdDemographics>(env, &HOUSEHOLD_DEMOGRAPHICS)
        .map(|h: HouseholdDemographics| (h.hd_demo_sk, h.hd_income_band_sk))
        .name("Project household_demographics");
    households.broadcast_join(&bands, JoinType::Inner, |h: &(i64, i64)| h.1, |b: &i64| *b, |h, _| h.0)
}

/// The sale's demographics (cd1) and address (ad1): hash joins of the changelog with the two
/// dimensions, as inserts.
fn with_demographics(env: &StreamEnv, sales: DataStream<Change<Sale>>) -> DataStream<Change<StoreRow>> {
    let demographics = marital_statuses(env).map(Change::insert).name("cd1 as inserts");
    let with_marital = join_changelogs(
        &sales,
        &demographics,
        |s: &Sale| s.3,
        |cd: &(i64, String)| cd.0,
        |s, cd| Some((s.clone(), cd.1.clone())),
    );
    let addresses = addresses(env).map(Change::insert).name("ad1 as inserts");
    let located = join_changelogs(
        &with_marital.name("Join cd1"),
        &addresses,
        |s: &(Sale, String)| s.0.4,
        |a: &(i64, Address)| a.0,
        |s, a| {
            let (sale, marital) = s;
            let (product, store, zip, year) = sale.5.clone();
            let empty = (String::new(), String::new(), String::new(), String::new());
            let group = (product, sale.0, store, zip, a.1.clone(), empty, year, 0, 0);
            Some((sale.2, group, marital.clone(), sale.6))
        },
    );
    located.name("Join ad1")
}

/// The customer side: each customer whose household's band exists, with the years of its first
/// sale and shipment, its demographics (cd2) and address (ad2).
fn customer_side(env: &StreamEnv) -> DataStream<CustomerSide> {
    let years = scan::<DateDim>(env, &DATE_DIM).map(|d: DateDim| (d.d_date_sk, d.d_year)).name("Project date_dim");
    let customers = scan::<Customer>(env, &CUSTOMER)
        .map(|c: Customer| {
            let keys = (c.c_current_cdemo_sk, c.c_current_addr_sk);
            (c.c_customer_sk, c.c_current_hdemo_sk, keys, (c.c_first_sales_date_sk, c.c_first_shipto_date_sk))
        })
        .name("Project customer");
    type Keys = (i64, i64, (i64, i64), (i64, i64));
    let banded =
        customers.broadcast_join(&households(env), JoinType::Inner, |c: &Keys| c.1, |h: &i64| *h, |c, _| c.clone());
    type Dated = (i64, (i64, i64), (i64, i64));
    let first = banded.broadcast_join(
        &years,
        JoinType::Inner,
        |c: &Keys| c.3.0,
        |d: &(i64, i64)| d.0,
        |c, d| (c.0, c.2, (d.expect("inner").1, c.3.1)),
    );
    let shipped = first.broadcast_join(
        &years,
        JoinType::Inner,
        |c: &Dated| c.2.1,
        |d: &(i64, i64)| d.0,
        |c, d| (c.0, c.1, (c.2.0, d.expect("inner").1)),
    );
    let demographics = marital_statuses(env);
    type Marital = (Dated, String);
    let with_marital = shipped
        .key_by(|c: &Dated| c.1.0)
        .join(&demographics.key_by(|cd: &(i64, String)| cd.0), |c, cd| (c.clone(), cd.1.clone()));
    let addresses = addresses(env);
    with_marital.key_by(|c: &Marital| c.0.1.1).join(&addresses.key_by(|a: &(i64, Address)| a.0), |c, a| {
        let ((customer, _, (sales_year, shipped_year)), marital) = c;
        (*customer, marital.clone(), a.1.clone(), *sales_year, *shipped_year)
    })
}

/// An answer row: `(key, value)` as q64.sql writes them.
fn pair(cs1: &CrossSale, cs2: &CrossSale) -> (String, String) {
    let group = |g: &Group, all: bool| {
        let (b, c) = (&g.4, &g.5);
        let addresses = format!("{}|{}|{}|{}|{}|{}|{}|{}", b.0, b.1, b.2, b.3, c.0, c.1, c.2, c.3);
        let years = format!("{}|{}|{}", g.6, g.7, g.8);
        if all {
            format!("{}|{}|{}|{}|{addresses}|{years}", g.0, g.1, g.2, g.3)
        } else {
            format!("{addresses}|{years}")
        }
    };
    let sum = |value: Option<i64>| value.map_or_else(String::new, |value| value.to_string());
    let key = format!("{}|{}", group(&cs1.0, true), group(&cs2.0, false));
    let value = format!(
        "{}|{}|{}|{}|{}|{}|{}|{}",
        cs1.1,
        sum(cs1.2),
        sum(cs1.3),
        sum(cs1.4),
        sum(cs2.2),
        sum(cs2.3),
        sum(cs2.4),
        cs2.1
    );
    (key, value)
}

fn generate_input(params: &JobParams, prng: &mut Prng) -> ExternalInput {
    let wanted = generate::Wanted {
        colors: params.text("colors").split(',').map(str::to_string).collect(),
        price: Some(params.get("price") as i64),
        ..generate::Wanted::default()
    };
    generate::tables(params.get("scale"), &wanted, Q64.definition.inputs.iter().collect::<Vec<_>>().as_slice(), prng)
}

/// The items of `cs_ui`, from the tables.
fn reference_cs_ui(input: &ExternalInput) -> BTreeSet<i64> {
    let mut returns: BTreeMap<(i64, i64), Vec<CatalogReturn>> = BTreeMap::new();
    for r in read::<CatalogReturn>(input, &CATALOG_RETURNS) {
        returns.entry((r.cr_item_sk, r.cr_order_number)).or_default().push(r);
    }
    let mut items: BTreeMap<i64, <CsUi as RetractableAggregate>::Acc> = BTreeMap::new();
    for line in read::<CatalogSale>(input, &CATALOG_SALES) {
        for r in returns.get(&(line.cs_item_sk, line.cs_order_number)).into_iter().flatten() {
            CsUi.accumulate(items.entry(line.cs_item_sk).or_default(), &returned_line(&line, r));
        }
    }
    items.values().filter_map(|acc| CsUi.result(acc)).collect()
}

/// The customers of the customer side, by key.
fn reference_customers(input: &ExternalInput, ctx: &Dimensions) -> BTreeMap<i64, CustomerSide> {
    let mut customers = BTreeMap::new();
    for c in read::<Customer>(input, &CUSTOMER) {
        let Some(marital) = ctx.marital.get(&c.c_current_cdemo_sk) else { continue };
        let Some(address) = ctx.addresses.get(&c.c_current_addr_sk) else { continue };
        let (Some(sales), Some(shipped)) =
            (ctx.years.get(&c.c_first_sales_date_sk), ctx.years.get(&c.c_first_shipto_date_sk))
        else {
            continue;
        };
        if ctx.households.contains(&c.c_current_hdemo_sk) {
            customers.insert(c.c_customer_sk, (c.c_customer_sk, marital.clone(), address.clone(), *sales, *shipped));
        }
    }
    customers
}

/// The dimensions both sides look up, by key.
struct Dimensions {
    years: BTreeMap<i64, i64>,
    marital: BTreeMap<i64, String>,
    addresses: BTreeMap<i64, Address>,
    households: BTreeSet<i64>,
}

fn dimensions(input: &ExternalInput) -> Dimensions {
    let bands: BTreeSet<i64> =
        read::<IncomeBand>(input, &INCOME_BAND).into_iter().map(|b| b.ib_income_band_sk).collect();
    let households = read::<HouseholdDemographics>(input, &HOUSEHOLD_DEMOGRAPHICS).into_iter();
    Dimensions {
        years: read::<DateDim>(input, &DATE_DIM).into_iter().map(|d| (d.d_date_sk, d.d_year)).collect(),
        marital: read::<CustomerDemographics>(input, &CUSTOMER_DEMOGRAPHICS)
            .into_iter()
            .map(|cd| (cd.cd_demo_sk, cd.cd_marital_status))
            .collect(),
        addresses: read::<CustomerAddress>(input, &CUSTOMER_ADDRESS)
            .iter()
            .map(|a| (a.ca_address_sk, address(a)))
            .collect(),
        households: households.filter(|h| bands.contains(&h.hd_income_band_sk)).map(|h| h.hd_demo_sk).collect(),
    }
}

/// `cross_sales`, from the tables.
fn reference_cross_sales(params: &JobParams, input: &ExternalInput) -> Vec<CrossSale> {
    let colors: Vec<String> = params.text("colors").split(',').map(str::to_string).collect();
    let price = params.get("price") as i64;
    let cs_ui = reference_cs_ui(input);
    let items: BTreeMap<i64, String> = read::<Item>(input, &ITEM)
        .into_iter()
        .filter(|item| wanted_item(item, &colors, price) && cs_ui.contains(&item.i_item_sk))
        .map(|item| (item.i_item_sk, item.i_product_name))
        .collect();
    let stores: BTreeMap<i64, (String, String)> =
        read::<Store>(input, &STORE).into_iter().map(|s| (s.s_store_sk, (s.s_store_name, s.s_zip))).collect();
    let promotions: BTreeSet<i64> = read::<Promotion>(input, &PROMOTION).into_iter().map(|p| p.p_promo_sk).collect();
    let mut returns: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for r in read::<StoreReturn>(input, &STORE_RETURNS) {
        *returns.entry((r.sr_item_sk, r.sr_ticket_number)).or_default() += 1;
    }
    let ctx = dimensions(input);
    let customers = reference_customers(input, &ctx);
    let mut groups: BTreeMap<Group, CrossAcc> = BTreeMap::new();
    for s in read::<StoreSale>(input, &STORE_SALES) {
        let (Some(product), Some(year), Some(store)) =
            (items.get(&s.ss_item_sk), ctx.years.get(&s.ss_sold_date_sk), stores.get(&s.ss_store_sk))
        else {
            continue;
        };
        let times = returns.get(&(s.ss_item_sk, s.ss_ticket_number)).copied().unwrap_or(0);
        let banded = promotions.contains(&s.ss_promo_sk) && ctx.households.contains(&s.ss_hdemo_sk);
        let (Some(marital), Some(address), Some(customer)) =
            (ctx.marital.get(&s.ss_cdemo_sk), ctx.addresses.get(&s.ss_addr_sk), customers.get(&s.ss_customer_sk))
        else {
            continue;
        };
        if !banded || marital.is_empty() || customer.1.is_empty() || *marital == customer.1 {
            continue;
        }
        let group = (
            product.clone(),
            s.ss_item_sk,
            store.0.clone(),
            store.1.clone(),
            address.clone(),
            customer.2.clone(),
            *year,
            customer.3,
            customer.4,
        );
        let measures = (s.ss_wholesale_cost, s.ss_list_price, s.ss_coupon_amt);
        for _ in 0..times {
            CrossSales.accumulate(groups.entry(group.clone()).or_default(), &(group.clone(), measures));
        }
    }
    groups.values().filter_map(|acc| CrossSales.result(acc)).collect()
}

fn reference(params: &JobParams, input: &ExternalInput, mode: ExecutionMode) -> ExpectedOutput {
    let year = params.get("year") as i64;
    let cross_sales = reference_cross_sales(params, input);
    let mut rows = Vec::new();
    for cs1 in cross_sales.iter().filter(|c| c.0.6 == year && !c.0.2.is_empty() && !c.0.3.is_empty()) {
        let next = cross_sales
            .iter()
            .filter(|c| c.0.6 == year + 1 && (c.0.1, &c.0.2, &c.0.3) == (cs1.0.1, &cs1.0.2, &cs1.0.3));
        for cs2 in next.filter(|cs2| cs2.1 <= cs1.1) {
            let (key, value) = pair(cs1, cs2);
            rows.push(Row::new(key, value));
        }
    }
    rows.sort();
    // Streaming takes pairs back as the counts move; only where the table ends is known.
    let updates = match mode {
        ExecutionMode::Streaming => Updates::FinalOnly,
        ExecutionMode::Batch => Updates::Exact,
    };
    BTreeMap::from([(ANSWER.to_string(), ExpectedTable { kind: SinkKind::Upsert, rows, updates })])
}
