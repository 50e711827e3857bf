//! `alerts`: spending alerts per user from a keyed process function with state and event-time
//! timers.
//!
//! ```text
//!  purchases ─ timestamps/watermarks ─HASH(user)─ KeyedProcess ─ sink alerts (append)
//! ```
//!
//! Each purchase is `(user, timestamp, merchant, amount)`. Purchases may arrive out of order
//! (within the watermark's [`OUT_OF_ORDERNESS_MS`](super::event_time_input::OUT_OF_ORDERNESS_MS)), so the function buffers them in list state
//! and sets a timer at the end of each purchase's [`BUCKET_MS`] bucket; when the watermark passes
//! it, the purchases due by then are applied in event-time order (ties by merchant, then amount): a running total in value
//! state and a count per merchant in map state. It alerts when a user's total crosses a multiple
//! of [`SPENDING_STEP`] and on a user's third purchase at one merchant. Because purchases are
//! applied in event-time order, the alerts do not depend on arrival order: streaming (timers fire
//! as the watermark passes) and batch (a user's timers fire when its key ends) commit the same
//! alerts.
//!
//! The input keeps within the bound as [`super::event_time_input`] describes.

use std::collections::BTreeMap;

use super::event_time_input::{FETCH_SIZE, OUT_OF_ORDERNESS_MS, event_time};
use super::{ExpectedOutput, ExpectedTable, ExternalInput, JobDefinition, JobParams, ParamSpec, SimJob, Updates};
use sluice_engine::api::{
    ExecutionMode, KeyedContext, KeyedProcessFunction, ListState, MapState, OperatorError, Record, StreamEnv,
    Timestamp, ValueState,
};
use sluice_engine::connectors::{LogSource, Row, SinkKind, TxnStoreSink};
use sluice_engine::prng::Prng;

const TOPIC: &str = "purchases";
const TABLE: &str = "alerts";

/// Purchases are applied in batches: everything due by the end of each bucket of this many ms.
pub const BUCKET_MS: i64 = 100;
/// An alert each time a user's total spending crosses a multiple of this.
pub const SPENDING_STEP: u64 = 5_000;

pub(super) const ALERTS: SimJob = SimJob {
    definition: JobDefinition {
        name: "alerts",
        description: "spending alerts per user: total crossing each 5000 and a third purchase at one merchant",
        params: &[
            ParamSpec::int("purchases", 20_000, 0, 1_000_000, "total purchases in the input"),
            ParamSpec::int("users", 50, 1, 100_000, "distinct users (skewed towards low user numbers)"),
            ParamSpec::int("merchants", 40, 1, 10_000, "distinct merchants"),
            ParamSpec::int("partitions", 4, 1, 64, "partitions of the purchases topic"),
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

/// A purchase: user, event time in milliseconds, merchant, amount.
type Purchase = (String, i64, u32, u64);

/// An alert: user, what happened.
type Alert = (String, String);

const PENDING: ListState<Purchase> = ListState::new("pending");
const TOTAL: ValueState<u64> = ValueState::new("total");
const PER_MERCHANT: MapState<u32, u64> = MapState::new("per-merchant");

/// Applies one user's purchase to its total and merchant counts; returns the alerts it raises.
/// The reference applies the same rules sequentially.
fn apply(user: &str, (_, timestamp, merchant, amount): &Purchase, total: &mut u64, count: &mut u64) -> Vec<Alert> {
    let mut alerts = Vec::new();
    let before = *total;
    *total += amount;
    if *total / SPENDING_STEP > before / SPENDING_STEP {
        let crossed = *total / SPENDING_STEP * SPENDING_STEP;
        alerts.push((user.to_string(), format!("spent over {crossed} at {timestamp} (total {total})")));
    }
    *count += 1;
    if *count == 3 {
        alerts.push((user.to_string(), format!("third purchase at m{merchant} at {timestamp}")));
    }
    alerts
}

/// Orders purchases of one user the way both the job and the reference apply them.
fn event_order(left: &Purchase, right: &Purchase) -> std::cmp::Ordering {
    (left.1, left.2, left.3).cmp(&(right.1, right.2, right.3))
}

struct SpendingAlerts;

impl KeyedProcessFunction<String, Purchase, Alert> for SpendingAlerts {
    fn process_element(
        &self,
        purchase: Purchase,
        context: &mut KeyedContext<'_, String, Alert>,
    ) -> Result<(), OperatorError> {
        // One timer per user and bucket, at the bucket's last millisecond.
        let time = purchase.1 - purchase.1.rem_euclid(BUCKET_MS) + BUCKET_MS - 1;
        PENDING.add(context.state(), &purchase);
        context.register_event_time_timer(time);
        Ok(())
    }

    fn on_timer(&self, time: Timestamp, context: &mut KeyedContext<'_, String, Alert>) -> Result<(), OperatorError> {
        let (mut due, later): (Vec<Purchase>, Vec<Purchase>) =
            PENDING.get(context.state())?.into_iter().partition(|purchase| purchase.1 <= time);
        due.sort_by(event_order);
        PENDING.update(context.state(), &later);
        let user = context.key().clone();
        let mut total = TOTAL.value(context.state())?.unwrap_or(0);
        let mut counts = PER_MERCHANT.entries(context.state())?;
        for purchase in &due {
            let count = counts.entry(purchase.2).or_insert(0);
            for alert in apply(&user, purchase, &mut total, count) {
                context.collect(alert);
            }
        }
        PER_MERCHANT.update(context.state(), counts);
        TOTAL.update(context.state(), &total);
        Ok(())
    }
}

fn build(env: &StreamEnv, _params: &JobParams) {
    env.from_source(LogSource::<Purchase>::new(TOPIC).with_fetch_size(FETCH_SIZE))
        .assign_timestamps_and_watermarks(OUT_OF_ORDERNESS_MS, |purchase: &Purchase| purchase.1)
        .key_by(|purchase: &Purchase| purchase.0.clone())
        .process(SpendingAlerts)
        .name("Spending alerts")
        .sink_to(TxnStoreSink::append(TABLE, |alert: &Alert| alert.clone()))
        .name("Sink: alerts");
}

fn generate_input(params: &JobParams, prng: &mut Prng) -> ExternalInput {
    let purchases = params.get("purchases");
    let users = params.get("users");
    let merchants = params.get("merchants");
    let partitions = params.get("partitions") as usize;
    let mut topic: Vec<Vec<Vec<u8>>> = vec![Vec::new(); partitions];
    for index in 0..purchases {
        let partition = (index % partitions as u64) as usize;
        let timestamp = event_time(topic[partition].len(), prng);
        let bound = prng.below(users) + 1;
        let user = format!("u{}", prng.below(bound));
        let merchant = prng.below(merchants) as u32;
        let amount = prng.range_inclusive(1, 500);
        topic[partition].push((user, timestamp, merchant, amount).to_bytes());
    }
    ExternalInput { topics: BTreeMap::from([(TOPIC.to_string(), topic)]), ..ExternalInput::default() }
}

fn reference(_params: &JobParams, input: &ExternalInput, _mode: ExecutionMode) -> ExpectedOutput {
    let mut by_user: BTreeMap<String, Vec<Purchase>> = BTreeMap::new();
    for partition in &input.topics[TOPIC] {
        for bytes in partition {
            let purchase = Purchase::from_bytes(bytes).expect("generated purchases decode");
            by_user.entry(purchase.0.clone()).or_default().push(purchase);
        }
    }
    let mut rows = Vec::new();
    for (user, mut purchases) in by_user {
        purchases.sort_by(event_order);
        let mut total = 0;
        let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
        for purchase in &purchases {
            let count = counts.entry(purchase.2).or_insert(0);
            for (key, value) in apply(&user, purchase, &mut total, count) {
                rows.push(Row::new(key, value));
            }
        }
    }
    rows.sort();
    BTreeMap::from([(TABLE.to_string(), ExpectedTable { kind: SinkKind::Append, rows, updates: Updates::Exact })])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_raises_both_kinds_of_alert_and_agrees_across_modes() {
        let params = JobParams::ints([("purchases", 3_000), ("users", 10), ("merchants", 5), ("partitions", 3)]);
        let input = generate_input(&params, &mut Prng::from_seed(3));
        let streaming = reference(&params, &input, ExecutionMode::Streaming);
        assert_eq!(streaming, reference(&params, &input, ExecutionMode::Batch));
        let rows = &streaming[TABLE].rows;
        assert!(rows.iter().any(|row| row.shown_value().starts_with("spent over")), "{rows:?}");
        assert!(rows.iter().any(|row| row.shown_value().starts_with("third purchase")), "{rows:?}");
    }

    #[test]
    fn an_alert_is_raised_once_when_the_total_crosses_a_step() {
        let mut total = 4_900;
        let mut count = 0;
        let alerts = apply("u1", &("u1".to_string(), 7, 2, 200), &mut total, &mut count);
        assert_eq!(alerts, vec![("u1".to_string(), "spent over 5000 at 7 (total 5100)".to_string())]);
        assert!(apply("u1", &("u1".to_string(), 8, 2, 1), &mut total, &mut count).is_empty());
        let third = apply("u1", &("u1".to_string(), 9, 2, 1), &mut total, &mut count);
        assert_eq!(third, vec![("u1".to_string(), "third purchase at m2 at 9".to_string())]);
    }
}
