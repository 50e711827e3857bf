//! `wordcount`: lines of text from the log, split into words, counted per word; and
//! `wordcount-files`, the same count over the lines of a directory of text files, committed as
//! CSV files (`FileSink`).
//!
//! Streaming commits a running count per input word (an upsert changelog: `(w, 1)`, `(w, 2)`,
//! …); batch commits one final count per word. The final value per key agrees.

use std::collections::BTreeMap;

use super::{
    ExpectedOutput, ExpectedTable, ExternalInput, JobDefinition, JobParams, ParamSpec, SimJob, UpdateDigest, Updates,
};
use sluice_engine::api::DataStream;
use sluice_engine::api::{ExecutionMode, Record, StreamEnv};
use sluice_engine::connectors::{CsvRow, FileSink, FileSource, LogSource, Row, SinkKind, TxnStoreSink};
use sluice_engine::prng::Prng;

const TOPIC: &str = "lines";
const TABLE: &str = "word_counts";

/// The vocabulary, shared by both jobs' generators.
const DISTINCT_WORDS: ParamSpec =
    ParamSpec::int("distinct_words", 500, 1, 100_000, "vocabulary size (skewed towards low word numbers)");
const MAX_WORDS_PER_LINE: ParamSpec = ParamSpec::int("max_words_per_line", 12, 1, 1_000, "longest line, in words");

pub(super) const WORDCOUNT: SimJob = SimJob {
    definition: JobDefinition {
        name: "wordcount",
        description: "counts words of lines read from the log; upserts (word, count)",
        params: &[
            ParamSpec::int("words", 20_000, 0, 1_000_000, "total words in the input"),
            DISTINCT_WORDS,
            ParamSpec::int("partitions", 4, 1, 64, "partitions of the input topic"),
            MAX_WORDS_PER_LINE,
        ],
        inputs: &[],
        build,
    },
    generate_input: Some(generate_input),
    reference: Some(reference),
    reference_summary: Some(reference_summary),
    late: None,
    prefix_reference: None,
};

fn build(env: &StreamEnv, _params: &JobParams) {
    count_words(env.from_source(LogSource::<String>::new(TOPIC)))
        .sink_to(TxnStoreSink::upsert(TABLE, count_row))
        .name("Sink: word_counts");
}

/// Lines → words → a running count per word → the `word_counts` table.
fn count_words(lines: DataStream<String>) -> DataStream<(String, i64)> {
    lines
        .flat_map(|line: String| line.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .name("Tokenize")
        .map(|word: String| (word, 1i64))
        .name("Pair")
        .key_by_ref(|pair: &(String, i64)| &pair.0)
        .sum()
}

fn count_row(pair: &(String, i64)) -> (String, String) {
    (pair.0.clone(), pair.1.to_string())
}

fn generate_input(params: &JobParams, prng: &mut Prng) -> ExternalInput {
    let partitions = params.get("partitions") as usize;
    let mut topic: Vec<Vec<Vec<u8>>> = vec![Vec::new(); partitions];
    for (line_number, line) in generate_lines(params, prng).into_iter().enumerate() {
        topic[line_number % partitions].push(line.to_bytes());
    }
    ExternalInput { topics: BTreeMap::from([(TOPIC.to_string(), topic)]), ..ExternalInput::default() }
}

/// `words` words drawn from `distinct_words`, in lines of 1 to `max_words_per_line`.
fn generate_lines(params: &JobParams, prng: &mut Prng) -> Vec<String> {
    let words = params.get("words");
    let distinct = params.get("distinct_words");
    let max_per_line = params.get("max_words_per_line");
    let mut lines = Vec::new();
    let mut written = 0;
    while written < words {
        let length = prng.range_inclusive(1, max_per_line).min(words - written);
        let mut line = String::new();
        for index in 0..length {
            // Skewed: low word numbers are much more frequent, as in real text.
            let bound = prng.below(distinct) + 1;
            let word = prng.below(bound);
            let separator = if index == 0 { "" } else { " " };
            std::fmt::Write::write_fmt(&mut line, format_args!("{separator}w{word}"))
                .expect("a String takes any write");
        }
        lines.push(line);
        written += length;
    }
    lines
}

fn reference(_params: &JobParams, input: &ExternalInput, mode: ExecutionMode) -> ExpectedOutput {
    let lines =
        input.topics[TOPIC].iter().flatten().map(|bytes| String::from_bytes(bytes).expect("generated lines decode"));
    reference_of_lines(lines, mode)
}

fn reference_summary(_params: &JobParams, input: &ExternalInput, mode: ExecutionMode) -> Option<ExpectedOutput> {
    let lines =
        input.topics[TOPIC].iter().flatten().map(|bytes| String::from_bytes(bytes).expect("generated lines decode"));
    summarize(mode).then(|| summary_of_lines(lines))
}

fn reference_summary_files(_params: &JobParams, input: &ExternalInput, mode: ExecutionMode) -> Option<ExpectedOutput> {
    let files = input.files.values();
    let lines =
        files.flat_map(|contents| String::from_utf8_lossy(contents).lines().map(str::to_string).collect::<Vec<_>>());
    summarize(mode).then(|| summary_of_lines(lines))
}

/// Only streaming commits an update per word (checked per key by digest: linear, and without
/// a row per update held); batch commits one row per key, checked row by row.
fn summarize(mode: ExecutionMode) -> bool {
    mode == ExecutionMode::Streaming
}

/// Counts per word: a hash map with a fixed hasher (a million lookups cost a fraction of a sorted
/// map's), ordered before anything reaches an expectation.
type Counts<V> = std::collections::HashMap<String, V, foldhash::fast::FixedState>;

/// [`reference_of_lines`] in streaming mode, its updates summarized per key as they are counted.
fn summary_of_lines(lines: impl Iterator<Item = String>) -> ExpectedOutput {
    let mut counts: Counts<(i64, UpdateDigest)> = Counts::default();
    let mut value = String::new();
    for line in lines {
        for word in line.split_whitespace() {
            let (count, digest) = match counts.get_mut(word) {
                Some(entry) => entry,
                None => counts.entry(word.to_string()).or_insert((0, UpdateDigest::default())),
            };
            *count += 1;
            value.clear();
            std::fmt::Write::write_fmt(&mut value, format_args!("{count}")).expect("a String takes any write");
            digest.add(&value);
        }
    }
    let counts: BTreeMap<String, (i64, UpdateDigest)> = counts.into_iter().collect();
    let rows = counts.iter().map(|(key, (count, _))| Row::new(key.clone(), count.to_string())).collect();
    let digests = counts.into_iter().map(|(key, (_, digest))| (key, digest)).collect();
    let table = ExpectedTable { kind: SinkKind::Upsert, rows, updates: Updates::Digest(digests) };
    BTreeMap::from([(TABLE.to_string(), table)])
}

/// The table the count of `lines` commits in `mode`: in streaming every update, in batch only
/// each key's final count (the updates are never built).
fn reference_of_lines(lines: impl Iterator<Item = String>, mode: ExecutionMode) -> ExpectedOutput {
    let mut counts: Counts<i64> = Counts::default();
    let mut updates = Vec::new();
    for line in lines {
        for word in line.split_whitespace() {
            let count = match counts.get_mut(word) {
                Some(count) => count,
                None => counts.entry(word.to_string()).or_insert(0),
            };
            *count += 1;
            if mode == ExecutionMode::Streaming {
                updates.push(Row::new(word.to_string(), count.to_string()));
            }
        }
    }
    let mut rows = match mode {
        ExecutionMode::Streaming => updates,
        ExecutionMode::Batch => counts.into_iter().map(|(key, count)| Row::new(key, count.to_string())).collect(),
    };
    rows.sort_unstable(); // the hash map's order never reaches the expectation
    BTreeMap::from([(TABLE.to_string(), ExpectedTable { kind: SinkKind::Upsert, rows, updates: Updates::Exact })])
}

pub(super) const WORDCOUNT_FILES: SimJob = SimJob {
    definition: JobDefinition {
        name: "wordcount-files",
        description: "counts words of the lines of text files; writes (word, count) as CSV files",
        params: &[
            ParamSpec::int(
                "words",
                20_000,
                0,
                1_000_000,
                "total words in the generated files (a real run may read a directory instead)",
            ),
            DISTINCT_WORDS,
            ParamSpec::int("files", 3, 1, 64, "files the words are written to"),
            ParamSpec::int(
                "split_bytes",
                sluice_engine::connectors::files::SPLIT_BYTES,
                1,
                1 << 30,
                "the largest split of a file (splits are line-aligned)",
            ),
            MAX_WORDS_PER_LINE,
        ],
        inputs: &[],
        build: build_files,
    },
    generate_input: Some(generate_files),
    reference: Some(reference_files),
    reference_summary: Some(reference_summary_files),
    late: None,
    prefix_reference: None,
};

fn build_files(env: &StreamEnv, params: &JobParams) {
    count_words(env.from_source(FileSource::lines().with_split_bytes(params.get("split_bytes"))))
        .sink_to(FileSink::upsert_with_encoder(TABLE, |pair: &(String, i64), row: &mut CsvRow| {
            row.write(&pair.0, &pair.1)
        }))
        .name("Sink: word_counts");
}

/// The generated lines, dealt round-robin into `files` files of newline-ended lines.
fn generate_files(params: &JobParams, prng: &mut Prng) -> ExternalInput {
    let mut files = vec![Vec::new(); params.get("files") as usize];
    let count = files.len();
    for (line_number, line) in generate_lines(params, prng).into_iter().enumerate() {
        let file = &mut files[line_number % count];
        file.extend_from_slice(line.as_bytes());
        file.push(b'\n');
    }
    let files = files.into_iter().enumerate().map(|(index, contents)| (format!("part-{index:05}"), contents));
    ExternalInput { files: files.collect(), ..ExternalInput::default() }
}

fn reference_files(_params: &JobParams, input: &ExternalInput, mode: ExecutionMode) -> ExpectedOutput {
    let files = input.files.values();
    let lines =
        files.flat_map(|contents| String::from_utf8_lossy(contents).lines().map(str::to_string).collect::<Vec<_>>());
    reference_of_lines(lines, mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines() -> Vec<String> {
        let params = WORDCOUNT.resolve_params(&BTreeMap::new()).expect("defaults resolve");
        generate_lines(&params, &mut Prng::from_seed(7))
    }

    #[test]
    fn the_summary_is_the_streaming_reference_summarized_per_key() {
        let full = reference_of_lines(lines().into_iter(), ExecutionMode::Streaming).remove(TABLE).expect("the table");
        let summary = summary_of_lines(lines().into_iter()).remove(TABLE).expect("the table");
        assert_eq!(summary.updates, full.summarized().updates);
        let Updates::Digest(digests) = &summary.updates else { panic!("an exact table summarizes") };
        let updates: u64 = digests.values().map(|digest| digest.count).sum();
        assert_eq!(updates, 20_000, "one update per word");
        let batch = reference_of_lines(lines().into_iter(), ExecutionMode::Batch).remove(TABLE).expect("the table");
        assert_eq!(summary.rows, batch.rows, "each key ends at its count");
    }

    #[test]
    fn only_streaming_is_summarized() {
        assert!(summarize(ExecutionMode::Streaming));
        assert!(!summarize(ExecutionMode::Batch));
    }
}
