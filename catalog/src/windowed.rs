//! `windowed`: click totals per user in event-time windows.
//!
//! ```text
//!  clicks ─ timestamps/watermarks ─┬─HASH(user)─ tumbling 1s: aggregate count+sum ─ sink clicks_per_second
//!                                  └─HASH(user)─ sliding 3s every 1s: reduce max ─── sink max_click_3s
//! ```
//!
//! Each click is `(user, timestamp, amount)`. Watermarks allow
//! [`OUT_OF_ORDERNESS_MS`](super::event_time_input::OUT_OF_ORDERNESS_MS) of disorder; the input
//! keeps within it ([`super::event_time_input`]), so no click is ever late and streaming
//! (windows fire as the watermark passes) and batch (every window fires at the end of its key)
//! commit the same rows: one per (user, window), exactly once.

use std::collections::BTreeMap;

use super::event_time_input::{FETCH_SIZE, OUT_OF_ORDERNESS_MS, event_time};
use super::{ExpectedOutput, ExpectedTable, ExternalInput, JobDefinition, JobParams, ParamSpec, SimJob, Updates};
use sluice_engine::api::{
    ExecutionMode, Record, SlidingEventTimeWindows, StreamEnv, TimeWindow, TumblingEventTimeWindows,
};
use sluice_engine::connectors::{LogSource, Row, SinkKind, TxnStoreSink};
use sluice_engine::prng::Prng;
use sluice_engine::time::WindowAssigner;

const TOPIC: &str = "clicks";
const TUMBLING_TABLE: &str = "clicks_per_second";
const SLIDING_TABLE: &str = "max_click_3s";

const TUMBLING_MS: i64 = 1_000;
const SLIDING_SIZE_MS: i64 = 3_000;
const SLIDING_SLIDE_MS: i64 = 1_000;

pub(super) const WINDOWED: SimJob = SimJob {
    definition: JobDefinition {
        name: "windowed",
        description: "clicks per user in 1s tumbling windows (count, sum) and the largest click in 3s windows sliding by 1s",
        params: &[
            ParamSpec::int("clicks", 20_000, 0, 1_000_000, "total clicks in the input"),
            ParamSpec::int("users", 100, 1, 100_000, "distinct users (skewed towards low user numbers)"),
            ParamSpec::int("partitions", 4, 1, 64, "partitions of the clicks topic"),
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

/// A click: user, event time in milliseconds, amount.
type Click = (String, i64, u64);

fn tumbling() -> TumblingEventTimeWindows {
    TumblingEventTimeWindows::of(TUMBLING_MS, 0).expect("valid window")
}

fn sliding() -> SlidingEventTimeWindows {
    SlidingEventTimeWindows::of(SLIDING_SIZE_MS, SLIDING_SLIDE_MS, 0).expect("valid window")
}

/// A table key for one user's window.
fn window_key(user: &str, window: TimeWindow) -> String {
    format!("{user}@{}", window.start)
}

fn build(env: &StreamEnv, _params: &JobParams) {
    let clicks = env
        .from_source(LogSource::<Click>::new(TOPIC).with_fetch_size(FETCH_SIZE))
        .assign_timestamps_and_watermarks(OUT_OF_ORDERNESS_MS, |click: &Click| click.1);
    clicks
        .key_by(|click: &Click| click.0.clone())
        .window(tumbling())
        .aggregate(
            || (0u64, 0u64),
            |(count, sum): (u64, u64), click: Click| (count + 1, sum + click.2),
            |user: &String, window, (count, sum)| (window_key(user, window), format!("{count} clicks, {sum} total")),
        )
        .name("Clicks per second")
        .sink_to(TxnStoreSink::upsert(TUMBLING_TABLE, |row: &(String, String)| row.clone()))
        .name("Sink: clicks_per_second");
    clicks
        .key_by(|click: &Click| click.0.clone())
        .window(sliding())
        .reduce(
            |left: Click, right: Click| if right.2 > left.2 { right } else { left },
            |user: &String, window, largest: Click| (window_key(user, window), largest.2.to_string()),
        )
        .name("Largest click in 3s")
        .sink_to(TxnStoreSink::upsert(SLIDING_TABLE, |row: &(String, String)| row.clone()))
        .name("Sink: max_click_3s");
}

fn generate_input(params: &JobParams, prng: &mut Prng) -> ExternalInput {
    let clicks = params.get("clicks");
    let users = params.get("users");
    let partitions = params.get("partitions") as usize;
    let mut topic: Vec<Vec<Vec<u8>>> = vec![Vec::new(); partitions];
    for index in 0..clicks {
        let partition = (index % partitions as u64) as usize;
        let timestamp = event_time(topic[partition].len(), prng);
        // Skewed: low user numbers click much more.
        let bound = prng.below(users) + 1;
        let user = format!("u{}", prng.below(bound));
        let amount = prng.range_inclusive(1, 1_000);
        topic[partition].push((user, timestamp, amount).to_bytes());
    }
    ExternalInput { topics: BTreeMap::from([(TOPIC.to_string(), topic)]), ..ExternalInput::default() }
}

fn reference(_params: &JobParams, input: &ExternalInput, _mode: ExecutionMode) -> ExpectedOutput {
    let mut totals: BTreeMap<(String, TimeWindow), (u64, u64)> = BTreeMap::new();
    let mut largest: BTreeMap<(String, TimeWindow), u64> = BTreeMap::new();
    let (tumbling, sliding) = (tumbling(), sliding());
    for partition in &input.topics[TOPIC] {
        for bytes in partition {
            let (user, timestamp, amount) = Click::from_bytes(bytes).expect("generated clicks decode");
            for window in tumbling.assign(timestamp) {
                let total = totals.entry((user.clone(), window)).or_insert((0, 0));
                *total = (total.0 + 1, total.1 + amount);
            }
            for window in sliding.assign(timestamp) {
                let max = largest.entry((user.clone(), window)).or_insert(0);
                *max = (*max).max(amount);
            }
        }
    }
    // Every window fires exactly once, in both modes: one row per (user, window).
    let mut tumbling_rows: Vec<Row> = totals
        .into_iter()
        .map(|((user, window), (count, sum))| {
            Row::new(window_key(&user, window), format!("{count} clicks, {sum} total"))
        })
        .collect();
    let mut sliding_rows: Vec<Row> = largest
        .into_iter()
        .map(|((user, window), amount)| Row::new(window_key(&user, window), amount.to_string()))
        .collect();
    tumbling_rows.sort();
    sliding_rows.sort();
    BTreeMap::from([
        (
            TUMBLING_TABLE.to_string(),
            ExpectedTable { kind: SinkKind::Upsert, rows: tumbling_rows, updates: Updates::Exact },
        ),
        (
            SLIDING_TABLE.to_string(),
            ExpectedTable { kind: SinkKind::Upsert, rows: sliding_rows, updates: Updates::Exact },
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_input_keeps_within_the_watermark_bound_for_any_round_robin_reader() {
        let params = JobParams::ints([("clicks", 5_000), ("users", 10), ("partitions", 4)]);
        let input = generate_input(&params, &mut Prng::from_seed(7));
        let partitions = &input.topics[TOPIC];
        // Read the way a source subtask holding every partition does: FETCH_SIZE at a time,
        // round robin; no click may be at or below the watermark when it is read.
        let mut offsets = vec![0usize; partitions.len()];
        let mut max = i64::MIN;
        let mut read = 0;
        while offsets.iter().zip(partitions).any(|(offset, partition)| *offset < partition.len()) {
            for (offset, partition) in offsets.iter_mut().zip(partitions) {
                let end = (*offset + FETCH_SIZE as usize).min(partition.len());
                for bytes in &partition[*offset..end] {
                    let (_, timestamp, _) = Click::from_bytes(bytes).unwrap();
                    assert!(
                        timestamp > max.saturating_sub(OUT_OF_ORDERNESS_MS + 1),
                        "click at {timestamp} is late after {max}"
                    );
                    max = max.max(timestamp);
                    read += 1;
                }
                *offset = end;
            }
        }
        assert_eq!(read, 5_000);
    }

    #[test]
    fn both_modes_expect_one_row_per_user_and_window() {
        let params = JobParams::ints([("clicks", 2_000), ("users", 5), ("partitions", 2)]);
        let input = generate_input(&params, &mut Prng::from_seed(1));
        let streaming = reference(&params, &input, ExecutionMode::Streaming);
        assert_eq!(streaming, reference(&params, &input, ExecutionMode::Batch));
        let tumbling = &streaming[TUMBLING_TABLE].rows;
        let counted: u64 =
            tumbling.iter().map(|row| row.shown_value().split(' ').next().unwrap().parse::<u64>().unwrap()).sum();
        assert_eq!(counted, 2_000, "every click is in exactly one tumbling window");
        let keys: std::collections::BTreeSet<&String> =
            streaming[SLIDING_TABLE].rows.iter().map(|row| &row.key).collect();
        assert_eq!(keys.len(), streaming[SLIDING_TABLE].rows.len(), "one row per user and window");
    }
}
