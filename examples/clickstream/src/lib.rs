//! `clickstream`: a job from outside the engine, as a user writes one.
//!
//! ```text
//!  clicks.csv ─ timestamps/watermarks ─┬─HASH(user)─ `window` (tumbling, or sliding by `slide`): count ─ sink clicks_per_window (append)
//!                                      └─HASH(page)─ running count ─────────── sink clicks_per_page (upsert)
//! ```
//!
//! Its input is a CSV file of clicks (`user,page,time`, the time in milliseconds), given by a
//! scenario (`input: { clicks: { file: …, format: csv } }`) or generated from a seed for sweeps.
//! [`CLICKSTREAM`] is what the harness needs of it: the engine's [`JobDefinition`], the
//! generator, and a sequential reference of what it must commit. `src/main.rs` is the `sluice`
//! command over this job; `tests/` test it under faults in both modes.

use std::collections::BTreeMap;
use std::time::Duration;

use sluice_engine::api::{
    DataStream, ExecutionMode, InputFormat, InputSpec, JobDefinition, JobParams, KeyedStream, OutputTag, ParamSpec,
    StreamEnv,
};
use sluice_engine::connectors::csv::{Column, ColumnType, parse_record};
use sluice_engine::connectors::{CsvSource, Row, SinkKind, TxnStoreSink};
use sluice_engine::prng::Prng;
use sluice_engine::time::{SlidingEventTimeWindows, WindowAssigner};
use sluice_sim::{ExpectedOutput, ExpectedTable, ExternalInput, LateData, LateElements, SimJob, Updates};

/// A click: user, page, event time in milliseconds.
pub type Click = (String, String, i64);

/// The input: a CSV file of clicks.
pub const CLICKS: InputSpec = InputSpec {
    name: "clicks",
    format: InputFormat::Csv(&[
        Column::new("user", ColumnType::Text),
        Column::new("page", ColumnType::Text),
        Column::new("time", ColumnType::Int),
    ]),
    doc: "clicks: user, page, event time in milliseconds",
};

/// Clicks per user per window.
pub const WINDOW_TABLE: &str = "clicks_per_window";
/// A running count of clicks per page.
pub const PAGE_TABLE: &str = "clicks_per_page";
/// The clicks that arrived after their window fired: `(user, "time,page")`.
pub const LATE_TABLE: &str = "late_clicks";
/// The windows' late-data side output.
pub const LATE: OutputTag<Click> = OutputTag::new("late-clicks");

/// The job, as the harness runs and judges it.
pub const CLICKSTREAM: SimJob = SimJob {
    definition: DEFINITION,
    generate_input: Some(generate),
    reference: Some(reference),
    reference_summary: None,
    late: Some(LateData {
        table: LATE_TABLE,
        windowed: &[WINDOW_TABLE],
        timestamp: late_timestamp,
        windowed_reference: windowed_reference,
    }),
    prefix_reference: None,
};

/// The job, as a cluster runs it.
pub const DEFINITION: JobDefinition = JobDefinition {
    name: "clickstream",
    description: "clicks from a CSV file: per user in tumbling event-time windows, and a running count per page",
    params: &[
        ParamSpec::duration(
            "window",
            Duration::from_secs(1),
            Duration::from_millis(10),
            Duration::from_secs(3600),
            "the tumbling window's size",
        ),
        ParamSpec::duration(
            "slide",
            Duration::ZERO,
            Duration::ZERO,
            Duration::from_secs(3600),
            "how often a window starts: 0 for the window's size (tumbling windows), less for sliding ones",
        ),
        ParamSpec::duration(
            "out_of_orderness",
            Duration::from_millis(500),
            Duration::ZERO,
            Duration::from_secs(3600),
            "how far out of order clicks may arrive",
        ),
        ParamSpec::int(
            "clicks",
            2_000,
            0,
            100_000,
            "clicks a seed generates when no file is given (one split: at most 3 MB)",
        ),
        ParamSpec::int("fetch_size", 256, 1, 100_000, "clicks the source hands on at a time"),
    ],
    inputs: &[CLICKS],
    build,
};

/// Windows of `window`, starting every `slide` (tumbling when the slide is 0, the window's size).
fn windows(params: &JobParams) -> SlidingEventTimeWindows {
    let size = params.duration("window").as_millis() as i64;
    let slide = match params.duration("slide").as_millis() as i64 {
        0 => size,
        slide => slide,
    };
    SlidingEventTimeWindows::of(size, slide, 0).expect("the window is at least 10ms and the slide at least 1ms")
}

/// Clicks per page, keyed by page: `(page, 1)`.
pub type Pages = KeyedStream<(String, i64), String>;
/// A count per page: `(page, count)`.
pub type PageCounts = DataStream<(String, i64)>;

/// How the job counts a page's clicks: a running sum of ones.
pub fn running_count(pages: Pages) -> PageCounts {
    pages.sum()
}

fn build(env: &StreamEnv, params: &JobParams) {
    build_with(env, params, running_count);
}

/// The job's program with its per-page count given (so that a test can break that one operator).
pub fn build_with(env: &StreamEnv, params: &JobParams, count_pages: fn(Pages) -> PageCounts) {
    let bound = params.duration("out_of_orderness").as_millis() as i64;
    let clicks = env
        .from_source(CsvSource::<Click>::new(&CLICKS).with_fetch_size(params.get("fetch_size") as usize))
        .assign_timestamps_and_watermarks(bound, |click: &Click| click.2);
    let per_window = clicks
        .key_by(|click: &Click| click.0.clone())
        .window(windows(params))
        .side_output_late_data(&LATE)
        .aggregate(
            || 0u64,
            |count: u64, _: Click| count + 1,
            |user: &String, window, count| (format!("{user}@{}", window.start), count.to_string()),
        )
        .name("Clicks per window");
    per_window
        .sink_to(TxnStoreSink::append(WINDOW_TABLE, |row: &(String, String)| row.clone()))
        .name("Sink: clicks_per_window");
    per_window.side_output(&LATE).sink_to(TxnStoreSink::append(LATE_TABLE, late_row)).name("Sink: late_clicks");
    count_pages(clicks.map(|click: Click| (click.1, 1i64)).name("Page").key_by(|pair: &(String, i64)| pair.0.clone()))
        .sink_to(TxnStoreSink::upsert(PAGE_TABLE, |pair: &(String, i64)| (pair.0.clone(), pair.1.to_string())))
        .name("Sink: clicks_per_page");
}

/// `clicks` clicks by 12 users on 8 pages, about 10 ms apart and up to 300 ms out of order.
fn generate(params: &JobParams, prng: &mut Prng) -> ExternalInput {
    const PAGES: [&str; 8] = ["/", "/search", "/cart", "/checkout", "/help", "/item?id=7", "/item?id=42", "/about, us"];
    let mut csv = String::from("user,page,time\n");
    let mut time = 0u64;
    for _ in 0..params.get("clicks") {
        time += prng.below(21);
        let bound = prng.below(12) + 1;
        let user = prng.below(bound);
        let page = PAGES[prng.below(PAGES.len() as u64) as usize];
        let page = if page.contains(',') { format!("\"{page}\"") } else { page.to_string() };
        csv.push_str(&format!("user-{user},{page},{}\n", time.saturating_sub(prng.below(301))));
    }
    ExternalInput {
        files: BTreeMap::from([("clicks/generated.csv".to_string(), csv.into_bytes())]),
        ..Default::default()
    }
}

/// A late click as its table holds it.
fn late_row(click: &Click) -> (String, String) {
    (click.0.clone(), format!("{},{}", click.2, click.1))
}

/// A late click's event time, from its row.
fn late_timestamp(row: &Row) -> Option<i64> {
    row.value.as_deref()?.split_once(',')?.0.parse().ok()
}

/// The clicks of every file of the input, in file order.
pub fn read_clicks(input: &ExternalInput) -> Vec<Click> {
    let InputFormat::Csv(columns) = CLICKS.format else { unreachable!("CLICKS is CSV") };
    let lines = input.input_files(CLICKS.name).flat_map(|(_, contents)| {
        String::from_utf8_lossy(contents).lines().skip(1).map(str::to_string).collect::<Vec<_>>()
    });
    lines.map(|line| parse_record(&line, columns).expect("the harness checked the file")).collect()
}

/// The windowed table: one row per (user, window) of the clicks in it, each click left out of
/// the windows a run's windows left it out of (`late`; none in batch).
fn windowed_reference(params: &JobParams, input: &ExternalInput, late: &mut LateElements) -> ExpectedOutput {
    let windows = windows(params);
    let mut per_window: BTreeMap<(String, i64), u64> = BTreeMap::new();
    for click in read_clicks(input) {
        for window in windows.assign(click.2) {
            if !late.missed(&click, window) {
                *per_window.entry((click.0.clone(), window.start)).or_insert(0) += 1;
            }
        }
    }
    let mut rows: Vec<Row> = per_window
        .into_iter()
        .map(|((user, start), count)| Row::new(format!("{user}@{start}"), count.to_string()))
        .collect();
    rows.sort();
    BTreeMap::from([(
        WINDOW_TABLE.to_string(),
        ExpectedTable { kind: SinkKind::Append, rows, updates: Updates::Exact },
    )])
}

/// What the job must commit: one row per (user, window) in both modes (the late clicks a
/// streaming run leaves out are the harness's to take out: [`windowed_reference`]), and per
/// page every count from 1 up in streaming, the final count in batch.
fn reference(params: &JobParams, input: &ExternalInput, mode: ExecutionMode) -> ExpectedOutput {
    let mut per_page: BTreeMap<String, i64> = BTreeMap::new();
    let mut page_updates = Vec::new();
    for (_, page, _) in read_clicks(input) {
        let count = per_page.entry(page.clone()).or_insert(0);
        *count += 1;
        page_updates.push(Row::new(page, count.to_string()));
    }
    let mut tables = windowed_reference(params, input, &mut LateElements::none());
    let mut page_rows = match mode {
        ExecutionMode::Streaming => page_updates,
        ExecutionMode::Batch => per_page.into_iter().map(|(key, count)| Row::new(key, count.to_string())).collect(),
    };
    page_rows.sort();
    tables.insert(
        PAGE_TABLE.to_string(),
        ExpectedTable { kind: SinkKind::Upsert, rows: page_rows, updates: Updates::Exact },
    );
    // The reference leaves nothing out as late: the harness holds a run's late table to the
    // clicks its windows left out of every window.
    tables.insert(
        LATE_TABLE.to_string(),
        ExpectedTable { kind: SinkKind::Append, rows: Vec::new(), updates: Updates::Exact },
    );
    tables
}
