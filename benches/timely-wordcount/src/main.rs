//! WordCount in timely-dataflow, as the peers' figures measured it: each worker streams its share
//! of the file's lines (line `n` to worker `n % workers`) into an input, words are exchanged by
//! hash to a counting operator, which either emits every count once its input is complete
//! (`batch`) or a running count per word (`stream`). Prints the words counted, the distinct words
//! and the seconds taken.
//!
//! `timely-wordcount FILE batch|stream WORKERS`

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{BufRead, BufReader};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::{Exchange, Input, Inspect, Operator, Probe};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::{InputHandle, ProbeHandle};

fn hash(word: &String) -> u64 {
    let mut hasher = DefaultHasher::new();
    word.hash(&mut hasher);
    hasher.finish()
}

/// Lines per epoch: the input advances (and the dataflow catches up) every this many lines.
const EPOCH_LINES: usize = 50_000;

fn main() {
    let arguments: Vec<String> = std::env::args().collect();
    let (path, mode, workers) = match &arguments[1..] {
        [path, mode, workers] => (path.clone(), mode.clone(), workers.parse::<usize>().expect("a number of workers")),
        _ => panic!("usage: timely-wordcount FILE batch|stream WORKERS"),
    };
    let started = Instant::now();
    let streaming = mode == "stream";
    let (words, distinct) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (words_out, distinct_out) = (Arc::clone(&words), Arc::clone(&distinct));
    timely::execute(timely::Config::process(workers), move |worker| {
        let (index, peers) = (worker.index(), worker.peers());
        let (words, distinct) = (Arc::clone(&words), Arc::clone(&distinct));
        let mut input = InputHandle::<u64, CapacityContainerBuilder<Vec<String>>>::new();
        let probe = ProbeHandle::new();
        worker.dataflow::<u64, _, _>(|scope| {
            // The probe watches the exchanged words (a batch count holds its output back until
            // the end, so the input would never advance past its first epoch if the probe
            // watched that): flow control, so that the whole file is never in flight.
            let exchanged = scope.input_from(&mut input).exchange(hash).probe_with(&probe);
            exchanged
                .unary_frontier(Pipeline, "Count", move |_, _| {
                    let mut counts: HashMap<String, u64> = HashMap::new();
                    let mut held = None;
                    move |(input, frontier), output| {
                        input.for_each_stamp(|cap, data| {
                            let Some(cap) = cap.retain_least(output.output_index()) else { return };
                            {
                                let mut session = output.session(&cap);
                                for batch in data {
                                    for word in batch.drain(..) {
                                        let count = counts.entry(word).or_insert(0);
                                        *count += 1;
                                        if streaming {
                                            session.give(*count);
                                        }
                                    }
                                }
                            }
                            if !streaming && held.is_none() {
                                held = Some(cap);
                            }
                        });
                        // Batch: every count once the input is complete (the frontier is empty).
                        if !streaming && frontier.is_empty() {
                            if let Some(cap) = held.take() {
                                let mut session = output.session(&cap);
                                for (_, count) in counts.drain() {
                                    session.give(count);
                                }
                            }
                        }
                    }
                })
                .container::<Vec<u64>>()
                .inspect(move |count: &u64| {
                    // Streaming: a count of 1 is a new word; batch: each count is one word's.
                    if streaming {
                        words.fetch_add(1, Ordering::Relaxed);
                        if *count == 1 {
                            distinct.fetch_add(1, Ordering::Relaxed);
                        }
                    } else {
                        words.fetch_add(*count, Ordering::Relaxed);
                        distinct.fetch_add(1, Ordering::Relaxed);
                    }
                });
        });
        let file = BufReader::with_capacity(1 << 20, std::fs::File::open(&path).expect("a readable file"));
        let mut epoch = 0u64;
        for (number, line) in file.lines().enumerate() {
            let line = line.expect("text");
            if number % peers == index {
                for word in line.split_whitespace() {
                    input.send(word.to_string());
                }
            }
            if (number + 1) % EPOCH_LINES == 0 {
                epoch += 1;
                input.advance_to(epoch);
                while probe.less_than(input.time()) {
                    worker.step();
                }
            }
        }
        input.close();
        while worker.step() {}
    })
    .expect("timely runs");
    println!(
        "{} words, {} distinct, {:.3} s",
        words_out.load(Ordering::Relaxed),
        distinct_out.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
}
