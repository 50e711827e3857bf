//! Property: random job graphs. For any program of the `generated` job's dataflow language (1–3
//! sources; chains of map, rekey, filter and flat map; unions; joins; tumbling and sliding
//! windows; keyed process functions with state and timers; reduces into upsert tables; every
//! edge kind; a parallelism per operator), on any cluster, shuffle, batch exchange mode,
//! failover strategy and checkpoint interval, under random faults (and BUGGIFY, half the
//! cases): streaming and batch commit exactly what the sequential reference interpreter
//! computes, the two modes agree, and batch at parallelism 1 under another exchange mode commits
//! the same final tables as batch at parallelism N.
//!
//! A case is a list of *steps*, decoded into a program that keeps the language's rules
//! ([`decode`]): each step's numbers choose an operator, its inputs, edge and parameters among
//! what is allowed at that point, and the value 0 always chooses the simplest (a map of the
//! latest stream over its default edge). Shrinking a failing case therefore shrinks the graph:
//! fewer steps, simpler operators, default edges and parallelism. The failure prints the
//! minimal program as a replayable scenario (`job: generated`, `params: { program: "…" }`).
//!
//! `PROPTEST_CASES=5000 cargo test --release -p sluice-properties --test random_graphs` is the
//! deep run; `SLUICE_SEED=N` reruns one case.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use proptest::prelude::*;
use sluice_catalog::generated::program::{Agg, Edge, Input, MODULUS, Node, Op, Program};
use sluice_catalog::generated::{GENERATED, events_computed};
use sluice_engine::api::JobConfig;
use sluice_engine::graph::{ExchangeMode, ExecutionGraph, ExecutionMode};
use sluice_engine::prng::Prng;
use sluice_engine::scheduler::SchedulingStrategy;
use sluice_properties::{CaseResult, case_seeds_or, check};
use sluice_sim::check::{Verdict, modes_agree};
use sluice_sim::replay::write_failure;
use sluice_sim::scenario::Scenario;
use sluice_sim::seed::{DeterminismCheck, run_seed};

/// One step of a case: the numbers that choose one node ([`decode_step`]).
#[derive(Clone, Copy, Debug)]
struct Step {
    kind: u8,
    input: u8,
    other: u8,
    edge: u8,
    parallelism: Option<u8>,
    a: u32,
    b: u32,
    agg: u8,
}

/// The job and cluster of a case.
#[derive(Clone, Debug)]
struct Case {
    /// Each source: its topic's partitions and its parallelism, if set.
    sources: Vec<(u32, Option<u8>)>,
    steps: Vec<Step>,
    elements: u64,
    keys: u64,
    /// TaskManagers, slots per TaskManager, default parallelism.
    cluster: (u32, u32, u32),
    /// The batch exchange mode (an index into [`EXCHANGE_MODES`]) and whether to fail over by region.
    exchange: (usize, bool),
    checkpoint_ms: Option<u64>,
    /// Random faults per seed, BUGGIFY, the remote shuffle service.
    faults: (u32, bool, bool),
}

const EXCHANGE_MODES: [&str; 4] =
    ["all-edges-blocking", "forward-edges-pipelined", "pointwise-edges-pipelined", "all-edges-pipelined"];

const FAULT_KINDS: &str = "[tm-crash, jm-crash, partition, packet-loss, slow-node, store-unavailable, commit-fails, \
                           commit-reply-lost, partition-loss, partition-corruption, disk-loss]";

/// Most events a case's nodes output, all together: beyond it, the case's input is halved until
/// it fits (a join of large inputs grows with the product of their sizes).
const EVENT_BUDGET: usize = 20_000;

/// The operators a step may choose, simplest first.
const STEP_KINDS: [&str; 10] =
    ["map", "rekey", "filter", "flat", "union", "tumble", "slide", "process", "join", "reduce"];

fn step() -> impl Strategy<Value = Step> {
    (
        0u8..10,
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        proptest::option::weighted(0.4, any::<u8>()),
        any::<u32>(),
        any::<u32>(),
        any::<u8>(),
    )
        .prop_map(|(kind, input, other, edge, parallelism, a, b, agg)| Step {
            kind,
            input,
            other,
            edge,
            parallelism,
            a,
            b,
            agg,
        })
}

fn strategy() -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec((1u32..=4, proptest::option::weighted(0.3, any::<u8>())), 1..=3),
        proptest::collection::vec(step(), 1..=12),
        (1u64..=300, 1u64..=20),
        (1u32..=4, 1u32..=3, 1u32..=4),
        (0usize..EXCHANGE_MODES.len(), any::<bool>()),
        proptest::option::weighted(0.7, 10u64..200),
        (0u32..=4, any::<bool>(), proptest::bool::weighted(0.2)),
    )
        .prop_map(|(sources, steps, (elements, keys), cluster, exchange, checkpoint_ms, faults)| Case {
            sources,
            steps,
            elements,
            keys,
            cluster,
            exchange,
            checkpoint_ms,
            faults,
        })
}

/// What decoding knows of the program so far.
struct Decoder {
    nodes: Vec<Node>,
    /// The largest parallelism a node may set: what the cluster holds, at most 4.
    max_parallelism: u32,
}

impl Decoder {
    fn program(&self) -> Program {
        Program { nodes: self.nodes.clone() }
    }

    /// The nodes a step may read (not a reduce), newest first; only those with event time if `timed`.
    fn readable(&self, timed: bool) -> Vec<usize> {
        let program = self.program();
        (0..self.nodes.len())
            .rev()
            .filter(|index| !matches!(self.nodes[*index].op, Op::Reduce { .. }))
            .filter(|index| !timed || program.is_timed(*index))
            .collect()
    }

    fn parallelism(&self, choice: Option<u8>) -> Option<u32> {
        choice.map(|choice| 1 + u32::from(choice) % self.max_parallelism)
    }

    /// The edges allowed from `producer` into a non-keyed, non-union node of `parallelism`.
    fn edges(&self, producer: usize, parallelism: Option<u32>) -> Vec<Edge> {
        let mut edges = vec![Edge::Default, Edge::Rebalance, Edge::Rescale];
        let from_union = matches!(self.nodes[producer].op, Op::Union { .. });
        if !from_union && parallelism.is_some() {
            edges.push(Edge::Broadcast);
        }
        if !from_union && self.nodes[producer].parallelism == parallelism {
            edges.push(Edge::Forward);
        }
        edges
    }
}

/// The node a step chooses; its operator falls back to a map where the choice is not allowed.
fn decode_step(decoder: &Decoder, step: &Step) -> Node {
    let kind = STEP_KINDS[usize::from(step.kind) % STEP_KINDS.len()];
    let timed = matches!(kind, "tumble" | "slide" | "process");
    let readable = decoder.readable(timed);
    let pick = |choice: u8| readable[usize::from(choice) % readable.len()];
    let keyed = |node: usize| Input { node, edge: Edge::Default };
    let (a, b) = (u64::from(step.a), u64::from(step.b));
    let mut parallelism = decoder.parallelism(step.parallelism);
    let op = match kind {
        "union" => {
            parallelism = None;
            let edge = |choice: u8| [Edge::Default, Edge::Rebalance, Edge::Rescale][usize::from(choice) % 3];
            Op::Union {
                inputs: vec![
                    Input { node: pick(step.input), edge: edge(step.edge) },
                    Input { node: pick(step.other), edge: edge(step.edge / 3) },
                ],
            }
        }
        "tumble" => {
            Op::Tumble { input: keyed(pick(step.input)), size: 10 + (a % 50) as i64 * 10, agg: agg(step.agg, 3) }
        }
        "slide" => {
            let slide = 10 + (b % 10) as i64 * 10;
            Op::Slide {
                input: keyed(pick(step.input)),
                size: slide * (1 + (a % 4) as i64),
                slide,
                agg: agg(step.agg, 3),
            }
        }
        "process" => Op::Process { input: keyed(pick(step.input)), bucket: 10 + (a % 30) as i64 * 10 },
        "join" => Op::Join { left: keyed(pick(step.input)), right: keyed(pick(step.other)) },
        "reduce" => Op::Reduce { input: keyed(pick(step.input)), agg: agg(step.agg, 2) },
        _ => {
            let producer = pick(step.input);
            let edges = decoder.edges(producer, parallelism);
            let input = Input { node: producer, edge: edges[usize::from(step.edge) % edges.len()] };
            match kind {
                "rekey" => Op::Rekey { input, modulus: 1 + a % 20 },
                "filter" => Op::Filter { input, modulus: 2 + a % 5, drop: b % (2 + a % 5) },
                "flat" => Op::Flat { input, copies: a % 4 },
                _ => Op::Map { input, mul: a % MODULUS, add: b % MODULUS },
            }
        }
    };
    Node { op, parallelism }
}

fn agg(choice: u8, of: u8) -> Agg {
    [Agg::Sum, Agg::Max, Agg::Count][usize::from(choice % of)]
}

/// The program of a case: its sources, then a node per step.
fn decode(case: &Case) -> Program {
    let (task_managers, slots, _) = case.cluster;
    let mut decoder = Decoder { nodes: Vec::new(), max_parallelism: (task_managers * slots).min(4) };
    for (partitions, parallelism) in &case.sources {
        let parallelism = decoder.parallelism(*parallelism);
        decoder.nodes.push(Node { op: Op::Source { partitions: *partitions }, parallelism });
    }
    for step in &case.steps {
        let node = decode_step(&decoder, step);
        decoder.nodes.push(node);
    }
    let program = decoder.program();
    program
        .check()
        .unwrap_or_else(|error| panic!("internal: the decoder broke a rule of the language: {error}\n  {program}"));
    program
}

/// The input size of a case: its elements, halved until its events fit [`EVENT_BUDGET`].
fn fitted_elements(program: &Program, case: &Case, seed: u64) -> u64 {
    let mut elements = case.elements;
    while elements > 1 {
        let params = params(program, elements, case.keys);
        let input = (GENERATED.generate_input.expect("the generated job generates its input"))(
            &params,
            &mut Prng::from_seed(seed),
        );
        if events_computed(&params, &input, EVENT_BUDGET).is_some() {
            break;
        }
        elements /= 2;
    }
    elements
}

fn params(program: &Program, elements: u64, keys: u64) -> sluice_catalog::JobParams {
    let given = BTreeMap::from([
        ("program".to_string(), program.to_string().as_str().into()),
        ("elements".to_string(), elements.into()),
        ("keys".to_string(), keys.into()),
    ]);
    GENERATED.resolve_params(&given).unwrap_or_else(|error| panic!("internal: a decoded program is valid: {error}"))
}

/// The TaskManagers a case runs on: its own, or as many more as streaming needs to deploy every
/// region of the program at once.
fn task_managers(case: &Case, program: &Program, parallelism: u32) -> u32 {
    let (task_managers, slots, _) = case.cluster;
    let config = JobConfig::new(ExecutionMode::Streaming, parallelism);
    let plan = GENERATED
        .plan(&params(program, 1, 1), config)
        .unwrap_or_else(|error| panic!("internal: `{program}` plans: {error}"));
    let needed = SchedulingStrategy::new(ExecutionGraph::new(Arc::new(plan))).slots_needed_at_once();
    task_managers.max(needed.div_ceil(slots))
}

/// The scenario of a case at `parallelism` with batch exchange mode `exchange`.
fn case_scenario(case: &Case, program: &Program, elements: u64, parallelism: u32, exchange: usize) -> Scenario {
    let (_, slots, _) = case.cluster;
    let task_managers = task_managers(case, program, parallelism);
    let (_, region) = case.exchange;
    let (faults, buggify, remote) = case.faults;
    let mut text = format!(
        "name: random-graph\njob: generated\nparams: {{ program: \"{program}\", elements: {elements}, keys: {} }}\n\
         cluster: {{ task_managers: {task_managers}, slots_per_task_manager: {slots} }}\nparallelism: {parallelism}\n\
         exchange_mode: {}\nfailover_strategy: {}\nshuffle: {}\nbuggify: {buggify}\n",
        case.keys,
        EXCHANGE_MODES[exchange],
        if region { "region" } else { "restart-all" },
        if remote { "remote" } else { "task-manager" },
    );
    if let Some(interval) = case.checkpoint_ms {
        text.push_str(&format!("checkpoints: {{ interval: {interval}ms }}\n"));
    }
    if faults > 0 {
        text.push_str(&format!("random_faults: {{ count: {faults}, kinds: {FAULT_KINDS} }}\n"));
    }
    Scenario::parse("random-graph", &text)
        .unwrap_or_else(|error| panic!("internal: a case's scenario is valid: {error}\n{text}"))
}

/// Runs a case: streaming and batch at the case's parallelism, and batch at parallelism 1 under
/// the next exchange mode; a failure gets a replay file.
fn run_case(case: &Case, seed: u64) -> CaseResult {
    let program = decode(case);
    let elements = fitted_elements(&program, case, seed);
    let (task_managers, slots, parallelism) = case.cluster;
    let parallelism = parallelism.min(task_managers * slots);
    let (exchange, _) = case.exchange;
    let scenario = case_scenario(case, &program, elements, parallelism, exchange);
    let result = run_seed(&scenario, seed, &[ExecutionMode::Streaming, ExecutionMode::Batch], DeterminismCheck::Off);
    let mut failures: Vec<String> =
        result.failures().iter().map(|(mode, failure)| format!("{mode:?}: {failure}")).collect();
    let mut failed = (scenario, result);
    let mut disagreed = None;
    if failures.is_empty() {
        let alone = case_scenario(case, &program, elements, 1, (exchange + 1) % EXCHANGE_MODES.len());
        let result = run_seed(&alone, seed, &[ExecutionMode::Batch], DeterminismCheck::Off);
        // Only two runs that both finished can agree; a run the faults made unrecoverable
        // commits nothing and was judged as such.
        let agreement = match (&failed.1.runs[1], &result.runs[0]) {
            ((batch, Verdict::Pass), (single, Verdict::Pass)) => modes_agree(batch, single)
                .err()
                .map(|failure| format!("parallelism {parallelism} and 1 differ: {failure}")),
            _ => None,
        };
        failures
            .extend(result.failures().iter().map(|(mode, failure)| format!("{mode:?} at parallelism 1: {failure}")));
        if agreement.is_some() {
            disagreed = Some(format!(
                "\nboth runs passed their own checks; the two scenarios (batch of each):\n{}\n---\n{}",
                failed.0.to_yaml(),
                alone.to_yaml()
            ));
        }
        failures.extend(agreement);
        failed = (alone, result);
    }
    if failures.is_empty() {
        return CaseResult::Pass;
    }
    let message = format!("program `{program}`: {}{}", failures.join("; "), disagreed.unwrap_or_default());
    if failed.1.failures().is_empty() {
        // Only the two shapes disagree: no one seed failed, so there is no replay file to write.
        return CaseResult::Fail { message, replay_file: None };
    }
    let directory = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../failures");
    let replay_file = write_failure(&directory, &failed.0, &failed.1).ok().map(|path| path.display().to_string());
    CaseResult::Fail { message, replay_file }
}

#[test]
fn random_job_graphs_commit_what_the_reference_interpreter_computes_in_every_mode_and_shape() {
    check(
        "random_job_graphs_commit_what_the_reference_interpreter_computes_in_every_mode_and_shape",
        strategy(),
        run_case,
    );
}

/// The kinds of what a decoded program holds: operators, edges, sources, set parallelism.
fn features(program: &Program) -> BTreeSet<String> {
    let mut features = BTreeSet::new();
    let sources = program.nodes.iter().filter(|node| matches!(node.op, Op::Source { .. })).count();
    features.insert(format!("{sources} sources"));
    for node in &program.nodes {
        features.insert(node.kind().to_string());
        if let Op::Tumble { agg, .. } | Op::Slide { agg, .. } | Op::Reduce { agg, .. } = node.op {
            features.insert(format!("{} {agg:?}", node.kind()));
        }
        for input in node.inputs() {
            features.insert(format!("edge {:?}", input.edge));
        }
        if node.parallelism.is_some() {
            features.insert("set parallelism".to_string());
        }
    }
    features
}

#[test]
fn the_generator_builds_every_operator_and_edge_kind_and_every_program_plans() {
    let mut seen = BTreeSet::new();
    let mut exchange_modes = BTreeSet::new();
    for seed in case_seeds_or(400).into_iter().take(400) {
        let case = sluice_properties::draw(&strategy(), seed);
        let program = decode(&case);
        assert_eq!(Program::parse(&program.to_string()).as_ref(), Ok(&program), "the text form reads back");
        for mode in [ExecutionMode::Streaming, ExecutionMode::Batch] {
            for parallelism in [1, 4] {
                let config = JobConfig::new(mode, parallelism).with_exchange_mode(ExchangeMode::AllEdgesPipelined);
                if let Err(error) = GENERATED.plan(&params(&program, 10, 3), config) {
                    panic!("`{program}` does not plan in {mode} mode at parallelism {parallelism}: {error}");
                }
            }
        }
        seen.extend(features(&program));
        exchange_modes.insert(case.exchange.0);
    }
    let mut wanted: BTreeSet<String> =
        ["src", "map", "rekey", "filter", "flat", "union", "tumble", "slide", "process", "join", "reduce"]
            .iter()
            .map(|kind| kind.to_string())
            .collect();
    wanted.extend(Edge::ALL.iter().map(|edge| format!("edge {edge:?}")));
    wanted.extend(["1 sources", "2 sources", "3 sources", "set parallelism"].map(str::to_string));
    wanted.extend(
        [
            "tumble Sum",
            "tumble Max",
            "tumble Count",
            "slide Sum",
            "slide Max",
            "slide Count",
            "reduce Sum",
            "reduce Max",
        ]
        .map(str::to_string),
    );
    let missing: Vec<&String> = wanted.difference(&seen).collect();
    assert!(missing.is_empty(), "400 cases never built {missing:?}");
    assert_eq!(exchange_modes.len(), EXCHANGE_MODES.len());
}

#[test]
fn a_case_of_zero_steps_decodes_to_maps_of_the_latest_stream() {
    let zero = Step { kind: 0, input: 0, other: 0, edge: 0, parallelism: None, a: 0, b: 0, agg: 0 };
    let case = Case {
        sources: vec![(1, None)],
        steps: vec![zero; 2],
        elements: 10,
        keys: 2,
        cluster: (1, 1, 1),
        exchange: (0, true),
        checkpoint_ms: None,
        faults: (0, false, false),
    };
    assert_eq!(decode(&case).to_string(), "src(1); map(0,0,0); map(1,0,0)");
    let windows = Step { kind: 5, ..zero };
    let after_join = Case {
        sources: vec![(1, None), (2, Some(1))],
        steps: vec![Step { kind: 8, other: 1, ..zero }, windows],
        ..case
    };
    // A window needs event time: it reads the newest stream that has it, not the join.
    assert_eq!(decode(&after_join).to_string(), "src(1); src(2)*1; join(1,0); tumble(1,10,sum)");
}
