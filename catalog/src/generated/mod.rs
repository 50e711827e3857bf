//! `generated`: a job whose program is a parameter, in a small dataflow language
//! ([`program`]), with a sequential reference interpreter of that language ([`reference`]).
//!
//! Random job graphs are programs of this language (the property suites draw them), and a
//! failing one is a scenario like any other: `job: generated`, `params: { program: "…" }`. Its
//! sources read topics `s<i>` of `(key, time, value)` events paced as [`crate::event_time_input`]
//! says, so nothing is late; every leaf node gets a sink writing table `n<i>` (append; a reduce's
//! is an upsert table). The language's rules keep the output a function of the input alone, so
//! streaming and batch, any parallelism and any exchange mode must commit what the interpreter
//! computes.

mod build;
pub mod program;
mod reference;

use std::collections::BTreeMap;

use super::event_time_input::event_time;
use super::{ExpectedOutput, ExternalInput, JobDefinition, JobParams, ParamSpec, SimJob};
use program::{Event, Op, Program};
use sluice_engine::api::{ExecutionMode, Record, SlidingEventTimeWindows, StreamEnv, TumblingEventTimeWindows};
use sluice_engine::prng::Prng;

/// The program of a scenario that does not set one: every operator kind once.
pub const DEFAULT_PROGRAM: &str = "src(2); src(1); map(0,3,7); union(2,1~r); tumble(3,100,sum); process(1,50); \
                                   join(4,5); reduce(6,max); slide(3,200,100,count)";

/// The job.
pub const GENERATED: SimJob = SimJob {
    definition: JobDefinition {
        name: "generated",
        description: "a program in Sluice's small dataflow language, given as a parameter (random job graphs)",
        params: &[
            ParamSpec::checked_text(
                "program",
                DEFAULT_PROGRAM,
                program::check_text,
                "the program: nodes separated by `;` (see the `generated` job's documentation)",
            ),
            ParamSpec::int("elements", 500, 0, 1_000_000, "events in each source's topic"),
            ParamSpec::int("keys", 10, 1, 100_000, "distinct keys of the events"),
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

/// The table of the sink of node `index`.
pub fn table_name(index: usize) -> String {
    format!("n{index}")
}

fn tumbling(size: i64) -> TumblingEventTimeWindows {
    TumblingEventTimeWindows::of(size, 0).expect("internal: a checked program's window size is positive")
}

fn sliding(size: i64, slide: i64) -> SlidingEventTimeWindows {
    SlidingEventTimeWindows::of(size, slide, 0).expect("internal: a checked program's sliding window is valid")
}

/// The program of `params`, checked when the parameters were resolved.
pub fn program_of(params: &JobParams) -> Program {
    Program::parse(params.text("program"))
        .unwrap_or_else(|error| panic!("internal: the program parameter was checked: {error}"))
}

fn build(env: &StreamEnv, params: &JobParams) {
    build::build_program(env, &program_of(params));
}

fn generate_input(params: &JobParams, prng: &mut Prng) -> ExternalInput {
    let program = program_of(params);
    let (elements, keys) = (params.get("elements"), params.get("keys"));
    let mut topics = BTreeMap::new();
    for (index, node) in program.nodes.iter().enumerate() {
        let Op::Source { partitions } = node.op else { continue };
        let mut topic: Vec<Vec<Vec<u8>>> = vec![Vec::new(); partitions as usize];
        for element in 0..elements {
            let partition = &mut topic[(element % u64::from(partitions)) as usize];
            let event: Event = (prng.below(keys), event_time(partition.len(), prng), prng.range_inclusive(1, 1_000));
            partition.push(event.to_bytes());
        }
        topics.insert(format!("s{index}"), topic);
    }
    ExternalInput { topics, ..ExternalInput::default() }
}

/// Each source node's events, decoded from its topic, partition by partition.
fn source_events(program: &Program, input: &ExternalInput) -> BTreeMap<usize, Vec<Event>> {
    let mut sources = BTreeMap::new();
    for (index, node) in program.nodes.iter().enumerate() {
        if !matches!(node.op, Op::Source { .. }) {
            continue;
        }
        let events = input.topics.get(&format!("s{index}")).into_iter().flatten().flatten();
        let events = events.map(|bytes| Event::from_bytes(bytes).expect("internal: generated events decode"));
        sources.insert(index, events.collect());
    }
    sources
}

/// How many events the program's nodes output for `input`, all nodes together (a run's size,
/// known before running it: a join's output grows with the product of its inputs), if at most
/// `limit`.
pub fn events_computed(params: &JobParams, input: &ExternalInput, limit: usize) -> Option<usize> {
    let program = program_of(params);
    let outputs = reference::evaluate(&program, &source_events(&program, input), limit)?;
    Some(outputs.iter().map(Vec::len).sum())
}

fn reference(params: &JobParams, input: &ExternalInput, mode: ExecutionMode) -> ExpectedOutput {
    let program = program_of(params);
    let outputs = reference::evaluate(&program, &source_events(&program, input), usize::MAX)
        .expect("internal: an unlimited evaluation always finishes");
    reference::tables(&program, &outputs, mode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Updates;

    fn params(program: &str, elements: u64, keys: u64) -> JobParams {
        let mut params = JobParams::ints([("elements", elements), ("keys", keys)]);
        params.0.insert("program".to_string(), program.into());
        params
    }

    /// A topic of one partition holding `events`.
    fn input_of(topics: &[(&str, &[Event])]) -> ExternalInput {
        let topics = topics
            .iter()
            .map(|(name, events)| (name.to_string(), vec![events.iter().map(Record::to_bytes).collect()]))
            .collect();
        ExternalInput { topics, ..ExternalInput::default() }
    }

    fn rows(expected: &ExpectedOutput, table: &str) -> Vec<String> {
        expected[table].rows.iter().map(|row| format!("{}={}", row.key, row.shown_value())).collect()
    }

    #[test]
    fn the_interpreter_computes_each_operator_by_hand() {
        let events: &[Event] = &[(1, 5, 10), (2, 7, 3), (1, 120, 4), (1, 250, 6)];
        let program = "src(1); map(0,2,1); filter(1,2,1); flat(0,2); tumble(0,100,sum); slide(0,200,100,max); \
                       process(0,100); join(0,0); reduce(0,sum); union(0,0); rekey(0,5); map(0~b,1,0)*3";
        let expected = reference(&params(program, 0, 1), &input_of(&[("s0", events)]), ExecutionMode::Batch);
        // map: 2v+1 → 21, 7, 9, 13; the filter drops (k+v) odd: 1+21, 2+7, 1+9, 1+13 → keeps 21, 9, 13.
        assert_eq!(rows(&expected, "n2"), ["1=120:9", "1=250:13", "1=5:21"]);
        // flat: v % 3 copies → 10: 1 copy, 3: none, 4: 1, 6: none.
        assert_eq!(rows(&expected, "n3"), ["1=120:4", "1=5:10"]);
        assert_eq!(rows(&expected, "n4"), ["1=199:4", "1=299:6", "1=99:10", "2=99:3"]);
        // Sliding 200 by 100: [-100,100) [0,200) [100,300) [200,400).
        assert_eq!(rows(&expected, "n5"), ["1=199:10", "1=299:6", "1=399:6", "1=99:10", "2=199:3", "2=99:3"]);
        assert_eq!(rows(&expected, "n6"), ["1=199:14", "1=299:20", "1=99:10", "2=99:3"]);
        // A self-join: key 1 has 3 events, 9 pairs; key 2 one.
        assert_eq!(expected["n7"].rows.len(), 9 + 1);
        assert!(rows(&expected, "n7").contains(&format!("1=120:{}", (10 * 31 + 4) % program::MODULUS)));
        assert_eq!(rows(&expected, "n8"), ["1=20", "2=3"]);
        assert_eq!(expected["n9"].rows.len(), 8, "a union of a stream with itself doubles it");
        assert_eq!(rows(&expected, "n10"), ["0=120:4", "0=7:3", "1=5:10", "2=250:6"]);
        assert_eq!(expected["n11"].rows.len(), 12, "a broadcast into 3 subtasks copies each event 3 times");
        let streaming = reference(&params(program, 0, 1), &input_of(&[("s0", events)]), ExecutionMode::Streaming);
        let counts = BTreeMap::from([("1".to_string(), 3), ("2".to_string(), 1)]);
        assert_eq!(streaming["n8"].updates, Updates::CountPerKey(counts), "one update per element in streaming");
    }

    #[test]
    fn generated_input_fills_every_source_topic_and_the_default_program_plans_in_both_modes() {
        let params = params(DEFAULT_PROGRAM, 300, 7);
        let input = generate_input(&params, &mut Prng::from_seed(3));
        assert_eq!(input.topics.keys().collect::<Vec<_>>(), ["s0", "s1"]);
        assert_eq!(input.topics["s0"].len(), 2);
        assert_eq!(input.record_count(), 600);
        for mode in [ExecutionMode::Streaming, ExecutionMode::Batch] {
            let plan = GENERATED.plan(&params, sluice_engine::api::JobConfig::new(mode, 3)).unwrap();
            assert!(plan.vertices.len() >= 5, "{mode}: {:?}", plan.vertices);
            let expected = reference(&params, &input, mode);
            assert_eq!(expected.keys().collect::<Vec<_>>(), ["n7", "n8"]);
        }
        assert!(events_computed(&params, &input, usize::MAX).is_some_and(|events| events >= 600));
        assert_eq!(events_computed(&params, &input, 599), None, "the sources alone hold 600");
    }
}
