//! `wordcount`: lines of text from the log, split into words, counted per word.
//!
//! Streaming commits a running count per input word (an upsert changelog: `(w, 1)`, `(w, 2)`,
//! …); batch commits one final count per word. The final value per key agrees.

use std::collections::BTreeMap;

use super::{CatalogJob, ExpectedOutput, ExpectedTable, ExternalInput, JobParams, ParamSpec, Updates};
use crate::api::{ExecutionMode, Record, StreamEnv};
use crate::connectors::{LogSource, Row, SinkKind, TxnStoreSink};
use crate::prng::Prng;

const TOPIC: &str = "lines";
const TABLE: &str = "word_counts";

pub(super) const WORDCOUNT: CatalogJob = CatalogJob {
    name: "wordcount",
    description: "counts words of lines read from the log; upserts (word, count)",
    params: &[
        ParamSpec { name: "words", default: 20_000, min: 0, max: 1_000_000, doc: "total words in the input" },
        ParamSpec {
            name: "distinct_words",
            default: 500,
            min: 1,
            max: 100_000,
            doc: "vocabulary size (skewed towards low word numbers)",
        },
        ParamSpec { name: "partitions", default: 4, min: 1, max: 64, doc: "partitions of the input topic" },
        ParamSpec { name: "max_words_per_line", default: 12, min: 1, max: 1_000, doc: "longest line, in words" },
    ],
    build,
    generate_input,
    reference,
};

fn build(env: &StreamEnv, _params: &JobParams) {
    env.from_source(LogSource::<String>::new(TOPIC))
        .flat_map(|line: String| line.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .name("Tokenize")
        .map(|word: String| (word, 1i64))
        .name("Pair")
        .key_by(|pair: &(String, i64)| pair.0.clone())
        .sum()
        .sink_to(TxnStoreSink::upsert(TABLE, |pair: &(String, i64)| (pair.0.clone(), pair.1.to_string())))
        .name("Sink: word_counts");
}

fn generate_input(params: &JobParams, prng: &mut Prng) -> ExternalInput {
    let words = params.get("words");
    let distinct = params.get("distinct_words");
    let partitions = params.get("partitions") as usize;
    let max_per_line = params.get("max_words_per_line");
    let mut topic: Vec<Vec<Vec<u8>>> = vec![Vec::new(); partitions];
    let mut written = 0;
    let mut line_number = 0usize;
    while written < words {
        let length = prng.range_inclusive(1, max_per_line).min(words - written);
        let line: Vec<String> = (0..length)
            .map(|_| {
                // Skewed: low word numbers are much more frequent, as in real text.
                let bound = prng.below(distinct) + 1;
                let word = prng.below(bound);
                format!("w{word}")
            })
            .collect();
        topic[line_number % partitions].push(line.join(" ").to_bytes());
        written += length;
        line_number += 1;
    }
    ExternalInput { topics: BTreeMap::from([(TOPIC.to_string(), topic)]) }
}

fn reference(_params: &JobParams, input: &ExternalInput, mode: ExecutionMode) -> ExpectedOutput {
    let mut counts: BTreeMap<String, i64> = BTreeMap::new();
    let mut updates = Vec::new();
    for partition in &input.topics[TOPIC] {
        for bytes in partition {
            let line = String::from_bytes(bytes).expect("generated lines decode");
            for word in line.split_whitespace() {
                let count = counts.entry(word.to_string()).or_insert(0);
                *count += 1;
                updates.push(Row { key: word.to_string(), value: count.to_string() });
            }
        }
    }
    let mut rows = match mode {
        ExecutionMode::Streaming => updates,
        ExecutionMode::Batch => counts.into_iter().map(|(key, count)| Row { key, value: count.to_string() }).collect(),
    };
    rows.sort();
    BTreeMap::from([(TABLE.to_string(), ExpectedTable { kind: SinkKind::Upsert, rows, updates: Updates::Exact })])
}
