//! TPC-DS-like tables at a scale, drawn from a seed: the sizes and the marginals the queries'
//! filters and joins see, as measured on dsdgen's SF 1 (`benches/tpcds/sf1.json`, written by
//! `benches/tpcds/measure_edges.py`), so that each edge of a query's plan carries about the share
//! of the fact table it carries at SF 1.
//!
//! What is kept: each table's size (fact tables in proportion to the scale; dimensions too, with
//! a floor so that a small scale still has the values the queries filter on; `date_dim` whole
//! over the years the facts cover); the distribution of sales over months; the share of items of
//! a query's manufacturer and managers; customer demographics as dsdgen's cross product. What is
//! not: correlations between columns (a sale's item, customer and date are independent draws),
//! and most text columns, which are derived from their ids.

use sluice_engine::api::InputSpec;
use sluice_engine::connectors::csv::Column;
use sluice_engine::prng::{Prng, Ratio};

use crate::ExternalInput;

/// The first day the generated `date_dim` holds, 1998-01-01, as its `d_date_sk` (a Julian day).
pub const FIRST_DAY: i64 = 2_450_815;
/// The `d_date_sk` of 1900-01-01 - 1 (`d_week_seq` counts weeks from 1900-01-01).
const WEEK_ORIGIN: i64 = 2_415_021;
/// Years of `date_dim`, from 1998.
const YEARS: i64 = 6;
/// Years of sales, from 1998 (dsdgen's sales run from 1998-01-02 to 2003-01-02).
const SALES_YEARS: u64 = 5;

/// Rows at SF 1 (dsdgen).
const STORE_SALES_SF1: u64 = 2_880_404;
const ITEMS_SF1: u64 = 18_000;
const CUSTOMERS_SF1: u64 = 100_000;
const ADDRESSES_SF1: u64 = 50_000;
const DEMOGRAPHICS_SF1: u64 = 1_920_800;
const PROMOTIONS_SF1: u64 = 300;
const STORES_SF1: u64 = 12;
const WEB_SALES_SF1: u64 = 719_384;
const CATALOG_SALES_SF1: u64 = 1_441_548;
/// Household demographics at every scale.
const HOUSEHOLDS: u64 = 7_200;
const WEB_SITES_SF1: u64 = 30;
/// Warehouses at every scale (dsdgen has 1 below SF 1, where no order ships from two).
const WAREHOUSES: u64 = 5;

/// The share of store sales per month of the year, in thousandths (SF 1: August to October
/// hold twice as much as the first half-year, November and December three times).
const MONTH_WEIGHTS: [u64; 12] = [58, 45, 48, 47, 49, 48, 48, 107, 109, 112, 159, 170];
/// The share of store sales of a query's manufacturer's items at SF 1 (128: 0.231 %), in
/// millionths.
const MANUFACT_SHARE_PPM: u64 = 2_310;
/// The share of items of one manager at SF 1 (1 and 8: 1.79 %; 28: 1.89 %), in millionths.
const MANAGER_SHARE_PPM: u64 = 18_000;
/// The promotions on e-mail and at events both, in millionths (SF 1: 1 of 300).
const PROMOTION_EVERYWHERE_PPM: u64 = 3_333;
/// The share of addresses in a query's state at SF 1 (Illinois: 3.19 %), in millionths.
const STATE_SHARE_PPM: u64 = 31_920;
/// The share of web sites of a query's company at SF 1 (`pri`: 4 of 30), in millionths.
const COMPANY_SHARE_PPM: u64 = 133_333;
/// The share of web orders returned at SF 1, in millionths.
const RETURNED_ORDER_PPM: u64 = 704_000;
/// A NULL in a fact table's foreign key or measure, in millionths (dsdgen: about 4.5 %).
const NULL_PPM: u64 = 45_000;
/// The share of items of a query's colors in its price band at SF 1 (q64: 12 of 18,000), in
/// millionths.
const COLOR_PRICE_SHARE_PPM: u64 = 667;
/// The share of store sales lines returned at SF 1 (287,514 of 2,880,404), in millionths.
const RETURNED_STORE_LINE_PPM: u64 = 99_818;
/// The share of catalog sales lines returned at SF 1 (144,067 of 1,441,548), in millionths.
const RETURNED_CATALOG_LINE_PPM: u64 = 99_939;
/// Income bands at every scale.
const INCOME_BANDS: u64 = 20;
/// Colors of items, as dsdgen names them (q64's defaults among them).
const COLORS: [&str; 24] = [
    "almond",
    "antique",
    "aquamarine",
    "azure",
    "beige",
    "bisque",
    "black",
    "blue",
    "burlywood",
    "chartreuse",
    "chiffon",
    "coral",
    "cornsilk",
    "cream",
    "floral",
    "indian",
    "khaki",
    "lace",
    "medium",
    "orchid",
    "purple",
    "rose",
    "spring",
    "tan",
];

/// The values a query filters on: the generator gives them their SF 1 share of the rows.
#[derive(Clone, Debug, Default)]
pub struct Wanted {
    /// `i_manufact_id`.
    pub manufact: Option<i64>,
    /// `i_manager_id`s.
    pub managers: Vec<i64>,
    /// `ca_state` (Illinois if none).
    pub state: Option<String>,
    /// `web_company_name` (`pri` if none).
    pub company: Option<String>,
    /// `i_color`s a query asks for, with [`Wanted::price`]: its items have both.
    pub colors: Vec<String>,
    /// `i_current_price` in whole dollars: the items of [`Wanted::colors`] cost `price + 1` to
    /// `price + 10`.
    pub price: Option<i64>,
}

/// Rows of a table of `sf1` rows at SF 1, at `scale` (SF in thousandths), at least `floor`.
fn rows(sf1: u64, scale: u64, floor: u64) -> u64 {
    (sf1 * scale / 1_000).max(floor)
}

/// The sizes of the dimensions at a scale.
struct Sizes {
    items: u64,
    customers: u64,
    addresses: u64,
    demographics: u64,
    promotions: u64,
    stores: u64,
    web_sites: u64,
}

impl Sizes {
    fn at(scale: u64, wanted: &Wanted) -> Sizes {
        // A floor of items where a query filters on them, so that its values are there.
        let filtered = wanted.manufact.is_some() || !wanted.managers.is_empty();
        Sizes {
            items: rows(ITEMS_SF1, scale, if filtered { 1_000 } else { 20 }),
            customers: rows(CUSTOMERS_SF1, scale, 100),
            addresses: rows(ADDRESSES_SF1, scale, 50),
            // A whole number of gender × marital status × education combinations.
            demographics: rows(DEMOGRAPHICS_SF1, scale, 70) / 70 * 70,
            promotions: rows(PROMOTIONS_SF1, scale, 10),
            stores: rows(STORES_SF1, scale, 2),
            web_sites: rows(WEB_SITES_SF1, scale, 8),
        }
    }
}

/// The tables `inputs` at `scale`, as CSV files `<table>/part-00000`. Returns are drawn from
/// their sales' lines (the sales table is drawn again from its own seed when both are asked
/// for, or from a seed of the returns' own when the sales are not).
pub fn tables(scale: u64, wanted: &Wanted, inputs: &[&InputSpec], prng: &mut Prng) -> ExternalInput {
    let sizes = Sizes::at(scale, wanted);
    let seeds: Vec<u64> = inputs.iter().map(|_| prng.next_u64()).collect();
    let seed_of = |name: &str, or: u64| {
        inputs.iter().position(|spec| spec.name == name).map_or(or ^ 0x5a1e_5eed, |index| seeds[index])
    };
    let mut input = ExternalInput::default();
    for (spec, seed) in inputs.iter().zip(&seeds) {
        let mut prng = Prng::fork(*seed, spec.name);
        let lines: Vec<String> = match spec.name {
            "store_returns" => {
                let sales = table(scale, &sizes, wanted, "store_sales", seed_of("store_sales", *seed));
                store_returns(&sales, &mut prng)
            }
            "catalog_returns" => {
                let sales = table(scale, &sizes, wanted, "catalog_sales", seed_of("catalog_sales", *seed));
                catalog_returns(&sales, &mut prng)
            }
            name => table(scale, &sizes, wanted, name, *seed),
        };
        input.files.insert(format!("{}/part-00000", spec.name), csv(spec, lines));
    }
    input
}

/// The lines of table `name`, drawn from `seed`.
fn table(scale: u64, sizes: &Sizes, wanted: &Wanted, name: &str, seed: u64) -> Vec<String> {
    let mut prng = Prng::fork(seed, name);
    let prng = &mut prng;
    match name {
        "date_dim" => date_dim(),
        "item" => items(sizes, wanted, prng),
        "store_sales" => store_sales(rows(STORE_SALES_SF1, scale, 1), sizes, prng),
        "customer_demographics" => demographics(sizes),
        "promotion" => promotions(sizes, prng),
        "customer" => customers(sizes, prng),
        "customer_address" => addresses(sizes, wanted, prng),
        "web_sales" => web_sales(rows(WEB_SALES_SF1, scale, 16), sizes, prng),
        "web_returns" => web_returns(rows(WEB_SALES_SF1, scale, 16), prng),
        "web_site" => web_sites(sizes, wanted, prng),
        "catalog_sales" => catalog_sales(rows(CATALOG_SALES_SF1, scale, 10), sizes, prng),
        "household_demographics" => households(),
        "income_band" => (1..=INCOME_BANDS).map(|sk| sk.to_string()).collect(),
        "inventory" => inventory(sizes, prng),
        "warehouse" => (1..=WAREHOUSES).map(|sk| format!("{sk},warehouse {sk}")).collect(),
        "store" => stores(sizes, prng),
        other => panic!("job bug: no generator for TPC-DS table `{other}`"),
    }
}

/// A CSV file: the header naming `spec`'s columns, then `lines`.
fn csv(spec: &InputSpec, lines: Vec<String>) -> Vec<u8> {
    let sluice_engine::api::InputFormat::Csv(columns) = spec.format else { panic!("job bug: a table is CSV") };
    let header: Vec<&str> = columns.iter().map(|column: &Column| column.name).collect();
    let mut text = header.join(",");
    text.push('\n');
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    text.into_bytes()
}

/// A year, month and day of the proleptic Gregorian calendar of a Julian day number.
fn civil(julian: i64) -> (i64, i64, i64) {
    // Richards' algorithm (Explanatory Supplement to the Astronomical Almanac, 15.11).
    let f = julian + 1401 + (((4 * julian + 274_277) / 146_097) * 3) / 4 - 38;
    let e = 4 * f + 3;
    let h = 5 * ((e % 1461) / 4) + 2;
    let day = (h % 153) / 5 + 1;
    let month = (h / 153 + 2) % 12 + 1;
    let year = e / 1461 - 4716 + (14 - month) / 12;
    (year, month, day)
}

fn date_dim() -> Vec<String> {
    let last = FIRST_DAY + 365 * YEARS + 1;
    (FIRST_DAY..last)
        .map(|sk| {
            let (year, month, _) = civil(sk);
            let week = (sk - WEEK_ORIGIN - 1) / 7 + 1;
            format!("{sk},{year},{month},{week}")
        })
        .collect()
}

/// A sale's date: a year of the sales, a month by [`MONTH_WEIGHTS`], a day of it; or NULL.
fn sale_date(prng: &mut Prng) -> i64 {
    if prng.chance(Ratio::new(NULL_PPM, 1_000_000)) { -1 } else { sale_day(prng) }
}

/// A day of the sales years, its month drawn by [`MONTH_WEIGHTS`].
fn sale_day(prng: &mut Prng) -> i64 {
    let year = 1998 + prng.below(SALES_YEARS) as i64;
    let mut pick = prng.below(MONTH_WEIGHTS.iter().sum());
    let month = MONTH_WEIGHTS.iter().position(|weight| pick.checked_sub(*weight).map(|rest| pick = rest).is_none());
    let month = month.expect("the pick is below the weights' sum") as i64 + 1;
    let first = first_day_of(year, month);
    let days = first_day_of(year + month / 12, month % 12 + 1) - first;
    first + prng.below(days as u64) as i64
}

/// The Julian day of the first of `month` of `year`.
fn first_day_of(year: i64, month: i64) -> i64 {
    let (a, y) = ((14 - month) / 12, year + 4800 - (14 - month) / 12);
    let m = month + 12 * a - 3;
    1 + (153 * m + 2) / 5 + 365 * y + y / 4 - y / 100 + y / 400 - 32045
}

/// A foreign key into a table of `size` rows (keys from 1), or NULL.
fn key(size: u64, prng: &mut Prng) -> i64 {
    if prng.chance(Ratio::new(NULL_PPM, 1_000_000)) { -1 } else { 1 + prng.below(size) as i64 }
}

/// A measure in `low..=high`, or NULL (the empty field).
fn measure(low: u64, high: u64, prng: &mut Prng) -> Option<u64> {
    (!prng.chance(Ratio::new(NULL_PPM, 1_000_000))).then(|| prng.range_inclusive(low, high))
}

fn field<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(String::new, |value| value.to_string())
}

fn store_sales(count: u64, sizes: &Sizes, prng: &mut Prng) -> Vec<String> {
    (0..count)
        .map(|ticket| {
            let date = sale_date(prng);
            // dsdgen's sales always name their item.
            let (item, customer) = (1 + prng.below(sizes.items) as i64, key(sizes.customers, prng));
            let (cdemo, hdemo, addr) = (key(sizes.demographics, prng), key(7_200, prng), key(sizes.addresses, prng));
            let (store, promo) = (key(sizes.stores, prng), key(sizes.promotions, prng));
            let quantity = measure(1, 100, prng);
            let wholesale = measure(100, 10_000, prng);
            let list = measure(100, 20_000, prng);
            let sales = list.map(|list| prng.range_inclusive(0, list));
            let coupon = measure(0, 100, prng);
            let ext = quantity.zip(sales).map(|(quantity, sales)| quantity * sales);
            format!(
                "{date},{item},{customer},{cdemo},{hdemo},{addr},{store},{promo},{},{},{},{},{},{},{}",
                ticket / 10 + 1,
                field(quantity),
                field(wholesale),
                field(list),
                field(sales),
                field(coupon),
                field(ext)
            )
        })
        .collect()
}

/// Items; [`Wanted`] values get their SF 1 share (at least one item each).
fn items(sizes: &Sizes, wanted: &Wanted, prng: &mut Prng) -> Vec<String> {
    let share = |ppm: u64| ((sizes.items * ppm + 500_000) / 1_000_000).max(1);
    let mut manufacts: Vec<i64> = Vec::new();
    if let Some(manufact) = wanted.manufact {
        manufacts.extend(std::iter::repeat_n(manufact, share(MANUFACT_SHARE_PPM) as usize));
    }
    let mut managers: Vec<i64> = Vec::new();
    for manager in &wanted.managers {
        managers.extend(std::iter::repeat_n(*manager, share(MANAGER_SHARE_PPM) as usize));
    }
    let mut colored: Vec<i64> = match wanted.price {
        Some(_) if !wanted.colors.is_empty() => (0..share(COLOR_PRICE_SHARE_PPM) as i64).collect(),
        _ => Vec::new(),
    };
    let others: Vec<&str> = COLORS.iter().copied().filter(|color| !wanted.colors.iter().any(|w| w == color)).collect();
    (1..=sizes.items as i64)
        .map(|sk| {
            // The planted values go to random items, every one of them to some item.
            let left = sizes.items - sk as u64 + 1;
            let manufact = planted(&mut manufacts, left, prng).unwrap_or_else(|| other(1_000, &wanted.manufact, prng));
            let manager = planted(&mut managers, left, prng).unwrap_or_else(|| other(100, &wanted.managers, prng));
            let (category, class) = (1 + prng.below(10) as i64, 1 + prng.below(16) as i64);
            let brand = category * 1_000_000 + class * 1_000 + 1 + prng.below(10) as i64;
            let (color, price) = match (planted(&mut colored, left, prng), wanted.price) {
                (Some(index), Some(dollars)) => {
                    let color = wanted.colors[index as usize % wanted.colors.len()].as_str();
                    (color, prng.range_inclusive((dollars as u64 + 1) * 100, (dollars as u64 + 10) * 100))
                }
                _ => {
                    let price = prng.range_inclusive(9, 9_999);
                    (*prng.pick(&others), price)
                }
            };
            format!(
                "{sk},AAAAAAAA{:08},item {sk},{brand},brand #{brand},{manufact},manufact #{manufact},{manager},{category},category {category},{price},{color},product {sk}",
                (sk + 1) / 2,
            )
        })
        .collect()
}

/// One of the `planted` values, with the chance that leaves none of them over after `left` more
/// draws.
fn planted(planted: &mut Vec<i64>, left: u64, prng: &mut Prng) -> Option<i64> {
    let take = !planted.is_empty() && prng.chance(Ratio::new((planted.len() as u64).min(left), left));
    if take { planted.pop() } else { None }
}

/// An id in `1..=count` other than the `wanted` ones (which have their planted share).
fn other<'a>(count: u64, wanted: impl IntoIterator<Item = &'a i64> + Copy, prng: &mut Prng) -> i64 {
    loop {
        let id = 1 + prng.below(count) as i64;
        if !wanted.into_iter().any(|wanted| *wanted == id) {
            return id;
        }
    }
}

/// dsdgen's cross product: gender fastest, then marital status, then education.
fn demographics(sizes: &Sizes) -> Vec<String> {
    const GENDERS: [&str; 2] = ["M", "F"];
    const MARITAL: [&str; 5] = ["M", "S", "D", "W", "U"];
    const EDUCATION: [&str; 7] =
        ["Primary", "Secondary", "College", "2 yr Degree", "4 yr Degree", "Advanced Degree", "Unknown"];
    (0..sizes.demographics as usize)
        .map(|index| {
            let (gender, marital, education) = (index % 2, index / 2 % 5, index / 10 % 7);
            format!("{},{},{},{}", index + 1, GENDERS[gender], MARITAL[marital], EDUCATION[education])
        })
        .collect()
}

fn promotions(sizes: &Sizes, prng: &mut Prng) -> Vec<String> {
    (1..=sizes.promotions)
        .map(|sk| match prng.chance(Ratio::new(PROMOTION_EVERYWHERE_PPM, 1_000_000)) {
            true => format!("{sk},Y,Y"),
            false => format!("{sk},{}", prng.pick(&["N,N", "N,Y", "Y,N"])),
        })
        .collect()
}

fn customers(sizes: &Sizes, prng: &mut Prng) -> Vec<String> {
    (1..=sizes.customers)
        .map(|sk| {
            let (cdemo, hdemo, addr) = (key(sizes.demographics, prng), key(7_200, prng), key(sizes.addresses, prng));
            let (shipto, sales) = (FIRST_DAY + prng.below(1_800) as i64, FIRST_DAY + prng.below(1_800) as i64);
            format!("{sk},{cdemo},{hdemo},{addr},{shipto},{sales}")
        })
        .collect()
}

/// States other than a query's.
const STATES: [&str; 8] = ["IL", "TX", "GA", "VA", "KY", "MO", "OH", "TN"];

fn addresses(sizes: &Sizes, wanted: &Wanted, prng: &mut Prng) -> Vec<String> {
    let state = wanted.state.as_deref().unwrap_or("IL");
    let others: Vec<&str> = STATES.iter().copied().filter(|other| *other != state).collect();
    (1..=sizes.addresses)
        .map(|sk| {
            let state = if prng.chance(Ratio::new(STATE_SHARE_PPM, 1_000_000)) { state } else { *prng.pick(&others) };
            format!("{sk},{},Main,City {},{:05},{state}", prng.below(1_000), prng.below(100), zip(prng))
        })
        .collect()
}

/// Web sales: orders of 8 to 16 lines (`count` lines in all), each line from any warehouse,
/// shipped on a day of the sales years.
fn web_sales(count: u64, sizes: &Sizes, prng: &mut Prng) -> Vec<String> {
    let mut lines = Vec::with_capacity(count as usize);
    let mut order = 0;
    while (lines.len() as u64) < count {
        order += 1;
        for _ in 0..prng.range_inclusive(8, 16).min(count - lines.len() as u64) {
            // dsdgen ships a web sale 1 to 120 days after it.
            let null = prng.chance(Ratio::new(240, 1_000_000));
            let ship = if null { -1 } else { sale_day(prng) + prng.range_inclusive(1, 120) as i64 };
            let (addr, site, warehouse) =
                (key(sizes.addresses, prng), key(sizes.web_sites, prng), key(WAREHOUSES, prng));
            let cost = field(measure(0, 10_000, prng));
            let profit = field(measure(0, 20_000, prng).map(|profit| profit as i64 - 10_000));
            lines.push(format!("{ship},{addr},{site},{warehouse},{order},{cost},{profit}"));
        }
    }
    lines
}

/// Web returns: lines of the orders [`web_sales`] draws from the same count (1 to 3 lines for a
/// returned order).
fn web_returns(count: u64, prng: &mut Prng) -> Vec<String> {
    let orders = count / 12 + 1;
    let mut lines = Vec::new();
    for order in 1..=orders {
        if prng.chance(Ratio::new(RETURNED_ORDER_PPM, 1_000_000)) {
            let returned = 1 + prng.below(2) + u64::from(prng.chance(Ratio::new(1, 5)));
            lines.extend((0..returned).map(|_| order.to_string()));
        }
    }
    lines
}

/// Catalog sales: orders of 10 lines, shipped 2 to 90 days after the sale (dsdgen's lag),
/// NULLs at 0.5 %.
fn catalog_sales(count: u64, sizes: &Sizes, prng: &mut Prng) -> Vec<String> {
    let null = |prng: &mut Prng| prng.chance(Ratio::new(5, 1_000));
    (0..count)
        .map(|line| {
            let sold = if null(prng) { -1 } else { sale_day(prng) };
            let ship = if null(prng) || sold == -1 { -1 } else { sold + prng.range_inclusive(2, 90) as i64 };
            let cdemo = if null(prng) { -1 } else { 1 + prng.below(sizes.demographics) as i64 };
            let hdemo = if null(prng) { -1 } else { 1 + prng.below(HOUSEHOLDS) as i64 };
            let (item, promo) = (current_item(sold, sizes.items, prng), 1 + prng.below(sizes.promotions) as i64);
            let quantity = (!null(prng)).then(|| prng.range_inclusive(1, 100));
            let price = (!null(prng)).then(|| prng.range_inclusive(100, 30_000));
            format!(
                "{sold},{ship},{cdemo},{hdemo},{item},{promo},{},{},{}",
                line / 10 + 1,
                field(quantity),
                field(price)
            )
        })
        .collect()
}

/// The inventory week of the `d_week_seq` week holding `day`: dsdgen counts stock on one day of
/// each week, [`FIRST_DAY`] and every 7th after it.
fn inventory_week(day: i64) -> i64 {
    let week_start = day - (day - WEEK_ORIGIN - 1).rem_euclid(7);
    (week_start + (FIRST_DAY - WEEK_ORIGIN - 1).rem_euclid(7) - FIRST_DAY).div_euclid(7)
}

/// Whether the inventory of `week` holds `item` (half of the items, as dsdgen's holds one
/// version of each).
fn in_inventory(item: u64, week: i64) -> bool {
    (item as i64 + week).rem_euclid(2) == 0
}

/// An item sold on `day`: one the inventory of its week holds, as dsdgen sells the version
/// current on the day (any item if the day is NULL).
fn current_item(day: i64, items: u64, prng: &mut Prng) -> i64 {
    loop {
        let item = 1 + prng.below(items);
        if day == -1 || items < 2 || in_inventory(item, inventory_week(day)) {
            return item as i64;
        }
    }
}

/// Catalog returns: a tenth of the catalog sales lines `sales` (as [`catalog_sales`] writes
/// them), each (item, order) once, as dsdgen's are; what a return gives back (cash, reversed
/// charge, store credit) is up to three fifths of the line's list price, each part NULL at 2 %.
fn catalog_returns(sales: &[String], prng: &mut Prng) -> Vec<String> {
    let mut returned = std::collections::BTreeSet::new();
    let mut lines = Vec::new();
    for line in sales {
        let fields: Vec<&str> = line.split(',').collect();
        let (item, order, price) = (fields[4], fields[6], fields[8].parse::<u64>().unwrap_or(10_000));
        if !prng.chance(Ratio::new(RETURNED_CATALOG_LINE_PPM, 1_000_000)) || !returned.insert((item, order)) {
            continue;
        }
        let back = price * prng.below(61) / 100;
        let cash = prng.below(back + 1);
        let reversed = prng.below(back - cash + 1);
        let mut money = |amount: u64| field((!prng.chance(Ratio::new(2, 100))).then_some(amount));
        let (cash, reversed, credit) = (money(cash), money(reversed), money(back - cash - reversed));
        lines.push(format!("{item},{order},{cash},{reversed},{credit}"));
    }
    lines
}

/// Store returns: a tenth of the store sales lines `sales` (as [`store_sales`] writes them),
/// each (item, ticket) once.
fn store_returns(sales: &[String], prng: &mut Prng) -> Vec<String> {
    let mut returned = std::collections::BTreeSet::new();
    let mut lines = Vec::new();
    for line in sales {
        let fields: Vec<&str> = line.split(',').collect();
        let (item, ticket) = (fields[1], fields[8]);
        if prng.chance(Ratio::new(RETURNED_STORE_LINE_PPM, 1_000_000)) && returned.insert((item, ticket)) {
            lines.push(format!("{item},{ticket}"));
        }
    }
    lines
}

/// dsdgen's household demographics: income band and buying potential from the key.
fn households() -> Vec<String> {
    const POTENTIAL: [&str; 6] = ["0-500", "501-1000", "1001-5000", "5001-10000", ">10000", "Unknown"];
    (1..=HOUSEHOLDS).map(|sk| format!("{sk},{},{}", sk % 20 + 1, POTENTIAL[(sk / 20 % 6) as usize])).collect()
}

/// Inventory: every Thursday, every warehouse, the half of the items current that week (as
/// dsdgen's, which holds one version of each item at a time); 5 % NULL quantities.
fn inventory(sizes: &Sizes, prng: &mut Prng) -> Vec<String> {
    let mut rows = Vec::new();
    for week in 0..261i64 {
        let day = FIRST_DAY + 7 * week;
        for item in 1..=sizes.items {
            if !in_inventory(item, week) {
                continue;
            }
            for warehouse in 1..=WAREHOUSES {
                let on_hand = (!prng.chance(Ratio::new(1, 20))).then(|| prng.below(1_001));
                rows.push(format!("{day},{item},{warehouse},{}", field(on_hand)));
            }
        }
    }
    rows
}

/// Company names of web sites other than a query's.
const COMPANIES: [&str; 6] = ["pri", "able", "ought", "ese", "anti", "cally"];

fn web_sites(sizes: &Sizes, wanted: &Wanted, prng: &mut Prng) -> Vec<String> {
    let company = wanted.company.as_deref().unwrap_or("pri");
    let others: Vec<&str> = COMPANIES.iter().copied().filter(|other| *other != company).collect();
    (1..=sizes.web_sites)
        .map(|sk| match sk == 1 || prng.chance(Ratio::new(COMPANY_SHARE_PPM, 1_000_000)) {
            true => format!("{sk},{company}"),
            false => format!("{sk},{}", prng.pick(&others)),
        })
        .collect()
}

/// A zip code among a few hundred (customers and stores share some).
fn zip(prng: &mut Prng) -> u64 {
    10_000 + prng.below(400) * 211
}

fn stores(sizes: &Sizes, prng: &mut Prng) -> Vec<String> {
    (1..=sizes.stores).map(|sk| format!("{sk},store {sk},{:05}", zip(prng))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn julian_days_map_to_the_calendar() {
        assert_eq!(civil(FIRST_DAY), (1998, 1, 1));
        assert_eq!(civil(2_451_545), (2000, 1, 1));
        assert_eq!(civil(2_451_604), (2000, 2, 29));
        assert_eq!(first_day_of(2000, 3), 2_451_605);
        assert_eq!(first_day_of(1998, 1), FIRST_DAY);
        assert_eq!(first_day_of(1999, 1), FIRST_DAY + 365);
    }

    /// `part / whole` is within 20 % of `sf1`, or three binomial standard deviations.
    fn near(what: &str, part: usize, whole: usize, sf1: f64) {
        let ratio = part as f64 / whole as f64;
        let sigma = (sf1 * (1.0 - sf1) / whole as f64).sqrt();
        let tolerance = (0.2 * sf1).max(3.0 * sigma);
        assert!((ratio - sf1).abs() <= tolerance, "{what}: {part} / {whole} = {ratio:.5}, SF 1 has {sf1:.5}");
    }

    #[test]
    fn each_query_edge_carries_its_sf1_share_of_the_rows_at_scale_50() {
        use crate::tpcds_queries::read;
        use crate::tpcds_queries::tables::*;
        let wanted = Wanted { manufact: Some(128), managers: vec![1], ..Wanted::default() };
        let input = tables(
            50,
            &wanted,
            &[&STORE_SALES, &DATE_DIM, &ITEM, &CUSTOMER_DEMOGRAPHICS, &PROMOTION],
            &mut Prng::from_seed(7),
        );
        let sales = read::<StoreSale>(&input, &STORE_SALES);
        let dates: std::collections::BTreeMap<i64, DateDim> =
            read::<DateDim>(&input, &DATE_DIM).into_iter().map(|date| (date.d_date_sk, date)).collect();
        let items: std::collections::BTreeMap<i64, Item> =
            read::<Item>(&input, &ITEM).into_iter().map(|item| (item.i_item_sk, item)).collect();
        let date = |sale: &&StoreSale| dates.get(&sale.ss_sold_date_sk);
        let item = |sale: &&StoreSale| items.get(&sale.ss_item_sk);
        let q3_items: Vec<&StoreSale> =
            sales.iter().filter(|s| item(s).is_some_and(|i| i.i_manufact_id == Some(128))).collect();
        near("q3 ⋈ item", q3_items.len(), sales.len(), 6_656.0 / 2_880_404.0);
        let november = q3_items.iter().filter(|s| date(s).is_some_and(|d| d.d_moy == 11)).count();
        near("q3 ⋈ date", november, q3_items.len(), 971.0 / 6_656.0);
        let q42_month: Vec<&StoreSale> =
            sales.iter().filter(|s| date(s).is_some_and(|d| (d.d_year, d.d_moy) == (2000, 11))).collect();
        near("q42 ⋈ date", q42_month.len(), sales.len(), 88_756.0 / 2_880_404.0);
        let managed = q42_month.iter().filter(|s| item(s).is_some_and(|i| i.i_manager_id == Some(1))).count();
        near("q42 ⋈ item", managed, q42_month.len(), 1_497.0 / 88_756.0);
        let q7_year: Vec<&StoreSale> = sales.iter().filter(|s| date(s).is_some_and(|d| d.d_year == 2000)).collect();
        near("q7 ⋈ date", q7_year.len(), sales.len(), 553_970.0 / 2_880_404.0);
        let demographic = |sk: i64| sk > 0 && (sk - 1) % 2 == 0 && (sk - 1) / 2 % 5 == 1 && (sk - 1) / 10 % 7 == 2;
        let q7_cd = q7_year.iter().filter(|s| demographic(s.ss_cdemo_sk)).count();
        near("q7 ⋈ cdemo", q7_cd, q7_year.len(), 7_885.0 / 553_970.0);
        let promos = read::<Promotion>(&input, &PROMOTION);
        let open = promos.iter().filter(|p| p.p_channel_email == "N" || p.p_channel_event == "N").count();
        near("q7 promotions", open, promos.len(), 0.996_667);
    }

    #[test]
    fn a_sales_inventory_day_is_the_one_of_its_week() {
        assert_eq!(inventory_week(FIRST_DAY), 0);
        assert_eq!(inventory_week(FIRST_DAY - 2), 0, "the first day of FIRST_DAY's week_seq week");
        assert_eq!(inventory_week(FIRST_DAY + 4), 0, "its last day");
        assert_eq!(inventory_week(FIRST_DAY + 5), 1);
        assert_eq!(inventory_week(FIRST_DAY + 7 * 30 + 1), 30);
    }

    #[test]
    fn q72_and_q95_edges_carry_their_sf1_share_of_the_rows_at_scale_50() {
        use crate::tpcds_queries::read;
        use crate::tpcds_queries::tables::*;
        let tables =
            [&CATALOG_SALES, &DATE_DIM, &HOUSEHOLD_DEMOGRAPHICS, &INVENTORY, &WEB_SALES, &CUSTOMER_ADDRESS, &WEB_SITE];
        let input = super::tables(50, &Wanted::default(), &tables, &mut Prng::from_seed(11));
        let weeks: std::collections::BTreeMap<i64, DateDim> =
            read::<DateDim>(&input, &DATE_DIM).into_iter().map(|d| (d.d_date_sk, d)).collect();
        let sales = read::<CatalogSale>(&input, &CATALOG_SALES);
        let d1: Vec<&CatalogSale> =
            sales.iter().filter(|s| weeks.get(&s.cs_sold_date_sk).is_some_and(|d| d.d_year == 1999)).collect();
        near("q72 ⋈ d1", d1.len(), sales.len(), 285_626.0 / 1_441_548.0);
        let rich = |sk: i64| sk > 0 && (sk / 20) % 6 == 4;
        let hd: Vec<&&CatalogSale> = d1.iter().filter(|s| rich(s.cs_bill_hdemo_sk)).collect();
        near("q72 ⋈ hd", hd.len(), d1.len(), 46_057.0 / 285_626.0);
        let late = hd.iter().filter(|s| s.cs_ship_date_sk > s.cs_sold_date_sk + 5).count();
        near("q72 late", late, hd.len(), 8_689.0 / 9_104.0);
        let mut stock: std::collections::BTreeMap<(i64, i64), Vec<Option<i64>>> = Default::default();
        for i in read::<Inventory>(&input, &INVENTORY) {
            stock.entry((i.inv_item_sk, i.inv_date_sk)).or_default().push(i.inv_quantity_on_hand);
        }
        let (mut pairs, mut short) = (0, 0);
        for sale in &d1 {
            let week = weeks[&sale.cs_sold_date_sk].d_week_seq;
            for day in weeks.values().filter(|d| d.d_week_seq == week) {
                pairs += 1;
                let on_hand = stock.get(&(sale.cs_item_sk, day.d_date_sk)).into_iter().flatten();
                short += on_hand.filter(|q| matches!((q, sale.cs_quantity), (Some(q), Some(c)) if *q < c)).count();
            }
        }
        near("q72 ⋈ inventory", short, pairs, 2_024.0 / 60_823.0);
        let lines = read::<WebSale>(&input, &WEB_SALES);
        let window = |sk: i64| (2_451_211..=2_451_271).contains(&sk);
        let shipped: Vec<&WebSale> = lines.iter().filter(|l| window(l.ws_ship_date_sk)).collect();
        near("q95 ⋈ date", shipped.len(), lines.len(), 30_466.0 / 719_384.0);
        let addresses = read::<CustomerAddress>(&input, &CUSTOMER_ADDRESS);
        near("q95 addresses in IL", addresses.iter().filter(|a| a.ca_state == "IL").count(), addresses.len(), 0.031_92);
        let sites = read::<WebSite>(&input, &WEB_SITE);
        near("q95 sites of pri", sites.iter().filter(|s| s.web_company_name == "pri").count(), sites.len(), 0.133_3);
    }

    #[test]
    fn sale_dates_fall_in_the_sales_years_with_november_heavier() {
        let mut prng = Prng::from_seed(3);
        let mut months = [0u64; 13];
        for _ in 0..20_000 {
            match sale_date(&mut prng) {
                -1 => months[0] += 1,
                sk => {
                    let (year, month, _) = civil(sk);
                    assert!((1998..2003).contains(&year), "{year}");
                    months[month as usize] += 1;
                }
            }
        }
        assert!(months[11] > 2 * months[2], "{months:?}");
        assert!((700..1_100).contains(&months[0]), "about 4.5 % NULL dates: {}", months[0]);
    }
}
