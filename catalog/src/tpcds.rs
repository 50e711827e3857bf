//! `tpcds`: a TPC-DS-like multi-stage report: revenue per item category from store and web
//! sales.
//!
//! ```text
//!  store_sales ─ map ─┐ FORWARD
//!                     ├─ union ─ filter ─RESCALE─ tax (2×p) ─HASH─┐
//!  web_sales ── map ──┘ FORWARD                                    ├─ join ─HASH─ sum ─ sink
//!  items ─────────────────────────────────────────────────HASH─────┘
//! ```
//!
//! Three sources, a union, a filter, a rescale to another parallelism, a two-input join on the
//! item, and an aggregation per category into an upsert table: POINTWISE (forward, rescale) and
//! ALL_TO_ALL (hash) edges, so the exchange mode matters. Streaming commits a running total per
//! joined sale; batch one total per category.

use std::collections::BTreeMap;

use super::{ExpectedOutput, ExpectedTable, ExternalInput, JobDefinition, JobParams, ParamSpec, SimJob, Updates};
use sluice_engine::api::{ExecutionMode, Record, StreamEnv};
use sluice_engine::connectors::{LogSource, Row, SinkKind, TxnStoreSink};
use sluice_engine::prng::{Prng, Ratio};

const STORE_SALES: &str = "store_sales";
const WEB_SALES: &str = "web_sales";
const ITEMS: &str = "items";
const TABLE: &str = "revenue_by_category";

pub(super) const TPCDS: SimJob = SimJob {
    definition: JobDefinition {
        name: "tpcds",
        description: "revenue per item category from store and web sales joined with items",
        params: &[
            ParamSpec::int("store_sales", 20_000, 0, 1_000_000, "store sales rows"),
            ParamSpec::int("web_sales", 10_000, 0, 1_000_000, "web sales rows"),
            ParamSpec::int("items", 1_000, 1, 100_000, "items (every sale refers to one)"),
            ParamSpec::int("categories", 20, 1, 1_000, "item categories"),
            ParamSpec::int("partitions", 4, 1, 64, "partitions of each sales topic"),
        ],
        inputs: &[],
        build,
    },
    generate_input: Some(generate_input),
    reference: Some(reference),
    reference_summary: None,
    late: None,
    prefix_reference: None,
};

/// (item, store, quantity, price in cents)
type StoreSale = (u64, u64, u64, u64);
/// (item, quantity, price in cents)
type WebSale = (u64, u64, u64);
/// (item, category)
type Item = (u64, String);

/// A sale's amount with tax, in cents: integer arithmetic, so both modes agree exactly.
fn with_tax(amount: u64) -> u64 {
    amount * 108 / 100
}

fn build(env: &StreamEnv, _params: &JobParams) {
    let parallelism = env.config().parallelism;
    let store = env
        .from_source(LogSource::<StoreSale>::new(STORE_SALES))
        .map(|(item, _store, quantity, price): StoreSale| (item, quantity * price))
        .name("Store amount");
    let web = env
        .from_source(LogSource::<WebSale>::new(WEB_SALES))
        .map(|(item, quantity, price): WebSale| (item, quantity * price))
        .name("Web amount");
    let sales = store
        .union(&[&web])
        .filter(|(_, amount): &(u64, u64)| *amount > 0)
        .name("Drop returns")
        .rescale()
        .map(|(item, amount): (u64, u64)| (item, with_tax(amount)))
        .name("Add tax")
        .set_parallelism(parallelism * 2);
    let items = env.from_source(LogSource::<Item>::new(ITEMS));
    sales
        .key_by(|sale: &(u64, u64)| sale.0)
        .join(&items.key_by(|item: &Item| item.0), |sale: &(u64, u64), item: &Item| (item.1.clone(), sale.1))
        .name("Join items")
        .key_by(|revenue: &(String, u64)| revenue.0.clone())
        .sum()
        .sink_to(TxnStoreSink::upsert(TABLE, |total: &(String, u64)| (total.0.clone(), total.1.to_string())))
        .name("Sink: revenue_by_category");
}

fn generate_input(params: &JobParams, prng: &mut Prng) -> ExternalInput {
    let items = params.get("items");
    let categories = params.get("categories");
    let partitions = params.get("partitions") as usize;
    let quantity = |prng: &mut Prng| if prng.chance(Ratio::new(1, 20)) { 0 } else { prng.range_inclusive(1, 10) };
    let mut store: Vec<Vec<Vec<u8>>> = vec![Vec::new(); partitions];
    for row in 0..params.get("store_sales") as usize {
        let sale: StoreSale = (prng.below(items), prng.below(50), quantity(prng), prng.range_inclusive(1, 10_000));
        store[row % partitions].push(sale.to_bytes());
    }
    let mut web: Vec<Vec<Vec<u8>>> = vec![Vec::new(); partitions];
    for row in 0..params.get("web_sales") as usize {
        let sale: WebSale = (prng.below(items), quantity(prng), prng.range_inclusive(1, 10_000));
        web[row % partitions].push(sale.to_bytes());
    }
    // Item categories are skewed: a few categories hold most items.
    let catalog: Vec<Vec<u8>> = (0..items)
        .map(|item| {
            let bound = prng.below(categories) + 1;
            let category = format!("category-{:02}", prng.below(bound));
            (item, category).to_bytes()
        })
        .collect();
    ExternalInput {
        topics: BTreeMap::from([
            (STORE_SALES.to_string(), store),
            (WEB_SALES.to_string(), web),
            (ITEMS.to_string(), vec![catalog]),
        ]),
        ..ExternalInput::default()
    }
}

fn decoded<T: Record>(input: &ExternalInput, topic: &str) -> Vec<T> {
    input.topics[topic].iter().flatten().map(|bytes| T::from_bytes(bytes).expect("generated records decode")).collect()
}

fn reference(_params: &JobParams, input: &ExternalInput, mode: ExecutionMode) -> ExpectedOutput {
    let category: BTreeMap<u64, String> = decoded::<Item>(input, ITEMS).into_iter().collect();
    let amounts = decoded::<StoreSale>(input, STORE_SALES)
        .into_iter()
        .map(|(item, _, quantity, price)| (item, quantity * price))
        .chain(
            decoded::<WebSale>(input, WEB_SALES).into_iter().map(|(item, quantity, price)| (item, quantity * price)),
        );
    let mut totals: BTreeMap<String, u64> = BTreeMap::new();
    let mut updates: BTreeMap<String, u64> = BTreeMap::new();
    for (item, amount) in amounts.filter(|(_, amount)| *amount > 0) {
        // An inner join: a sale of an unknown item joins nothing.
        if let Some(name) = category.get(&item) {
            *totals.entry(name.clone()).or_insert(0) += with_tax(amount);
            *updates.entry(name.clone()).or_insert(0) += 1;
        }
    }
    let rows = totals.into_iter().map(|(key, total)| Row::new(key, total.to_string())).collect();
    let updates = match mode {
        ExecutionMode::Streaming => Updates::CountPerKey(updates),
        ExecutionMode::Batch => Updates::CountPerKey(updates.into_keys().map(|key| (key, 1)).collect()),
    };
    BTreeMap::from([(TABLE.to_string(), ExpectedTable { kind: SinkKind::Upsert, rows, updates })])
}
