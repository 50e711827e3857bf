//! One simulated run: a fresh OS thread with its own madsim runtime, the cluster, the client
//! that submits the job and waits for it, and the faults injected from the acknowledged
//! submission on. Simulation builds only (it drives madsim's runtime); what the run reports is the
//! harness's [`RunReport`], as a real run's is.
//!
//! A fresh thread per run is what makes a seed replay: std's `HashMap` seeds are per thread, and
//! madsim seeds them only for a thread that has not made one yet.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use sluice_catalog::ExternalInput;
use sluice_engine::connectors::SinkKind;
use sluice_engine::graph::ExecutionMode;
use sluice_engine::trace::TraceEvent;

use crate::cluster::{CLIENT_IP, Cluster, JOB_MASTER_ADDRESS};
use sluice_harness::client::submit_and_wait;
use sluice_harness::coverage::Coverage;
use sluice_harness::faults::Fault;
use sluice_harness::faults::Pilot;
use sluice_harness::faults::buggify::Buggify;
use sluice_harness::faults::relative::{needs_pilot, resolve};
use sluice_harness::recovery::recovery_metrics;
use sluice_harness::report::{RunOutcome, RunReport, generate_input, with_late_data};
use sluice_harness::scenario::Scenario;
use sluice_harness::trace::{TraceLog, TraceRecord, trace_hash};
use sluice_services::durable_store::{file_tables, table_kinds};
use sluice_services::txn_store::CommittedView;

struct Simulated {
    outcome: RunOutcome,
    committed: CommittedView,
    trace: Vec<TraceRecord>,
    coverage: Coverage,
    open_transactions: Vec<String>,
}

/// Runs one seed of a scenario in one mode; see the module doc.
pub fn run(scenario: &Scenario, mode: ExecutionMode, seed: u64) -> RunReport {
    run_on(scenario, mode, seed, Arc::new(generate_input(scenario, seed)))
}

/// Runs one seed of a scenario in one mode on the given input (a batch run over a streaming
/// run's input without its late elements).
pub fn run_on(scenario: &Scenario, mode: ExecutionMode, seed: u64, input: Arc<ExternalInput>) -> RunReport {
    // Exact update streams a job summarizes are checked per key; the full reference runs again
    // only for a failure's witnesses (`check::full_reference`), which a job with late data could
    // not reproduce from the seed alone.
    let job = scenario.job();
    let expected = match job.late {
        None => job.expected_summary(&scenario.job_params(), &input, mode),
        Some(_) => job.expected(&scenario.job_params(), &input, mode),
    };
    let schedule = scenario.schedule(seed);
    let kinds = table_kinds(expected.as_ref());
    // Relative triggers land in this run: resolved against the same seed's fault-free run.
    let injected = if needs_pilot(&schedule) {
        resolve(&schedule, &pilot(scenario, (mode, seed), &input, &kinds))
    } else {
        schedule.clone()
    };
    let started = std::time::Instant::now();
    let simulated = simulate_on_thread(scenario, injected, (mode, seed), &input, &kinds);
    let wall_time = started.elapsed();
    let end = simulated
        .trace
        .iter()
        .rev()
        .find(|record| matches!(record.event, TraceEvent::JobFinished { .. } | TraceEvent::JobFailed { .. }));
    let (expected, late) = with_late_data(scenario, &input, &simulated.trace, &simulated.committed, expected);
    RunReport {
        late,
        scenario: scenario.name.clone(),
        source: Arc::new(scenario.clone()),
        mode,
        seed,
        makespan: end.map_or(Duration::ZERO, |record| record.time),
        recovery: recovery_metrics(&simulated.trace),
        outcome: simulated.outcome,
        committed: simulated.committed,
        expected,
        schedule,
        wall_time,
        trace_hash: trace_hash(&simulated.trace),
        trace: simulated.trace,
        coverage: simulated.coverage,
        open_transactions: Some(simulated.open_transactions),
    }
}

/// Pilots kept per process, most: a search runs one seed under many schedules, and a sweep's
/// determinism check runs each seed twice.
const PILOTS_KEPT: usize = 4096;

/// Pilots by (the fault-free scenario's fingerprint, mode, seed, the input's fingerprint), and
/// the order they were kept in (the oldest goes first).
type PilotCache =
    (BTreeMap<(String, ExecutionMode, u64, u64), Pilot>, std::collections::VecDeque<(String, ExecutionMode, u64, u64)>);

static PILOTS: std::sync::Mutex<PilotCache> =
    std::sync::Mutex::new((BTreeMap::new(), std::collections::VecDeque::new()));

/// A fingerprint of a run's input: every topic's and file's bytes, in order.
fn input_fingerprint(input: &ExternalInput) -> u64 {
    // FNV-1a over every byte, each piece after its length, so that no two inputs run together.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |bytes: &[u8]| {
        for byte in (bytes.len() as u64).to_le_bytes().iter().chain(bytes) {
            hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for (name, partitions) in &input.topics {
        mix(name.as_bytes());
        for partition in partitions {
            mix(b"partition");
            for record in partition {
                mix(record);
            }
        }
    }
    for (path, contents) in &input.files {
        mix(path.as_bytes());
        mix(contents);
    }
    hash
}

/// The same seed's run in the same mode on the same input, without faults (neither scheduled
/// nor buggified): what relative triggers are relative to. A pure function of its key, so kept.
fn pilot(
    scenario: &Scenario,
    run: (ExecutionMode, u64),
    input: &Arc<ExternalInput>,
    kinds: &BTreeMap<String, SinkKind>,
) -> Pilot {
    let quiet = Scenario {
        faults: Vec::new(),
        random_faults: None,
        buggify: Buggify::Off,
        seeds: 0..1,
        replay: None,
        ..scenario.clone()
    };
    let key = (quiet.fingerprint(), run.0, run.1, input_fingerprint(input));
    if let Some(pilot) = PILOTS.lock().expect("pilot cache lock").0.get(&key) {
        return pilot.clone();
    }
    let pilot = Pilot::of(&simulate_on_thread(&quiet, Vec::new(), run, input, kinds).trace);
    let mut cache = PILOTS.lock().expect("pilot cache lock");
    if cache.0.insert(key.clone(), pilot.clone()).is_none() {
        cache.1.push_back(key);
    }
    while cache.1.len() > PILOTS_KEPT {
        let oldest = cache.1.pop_front().expect("a non-empty queue");
        cache.0.remove(&oldest);
    }
    pilot
}

/// Simulates on a fresh thread (see the module doc); a panic is the run's outcome.
fn simulate_on_thread(
    scenario: &Scenario,
    schedule: Vec<Fault>,
    (mode, seed): (ExecutionMode, u64),
    input: &Arc<ExternalInput>,
    kinds: &BTreeMap<String, SinkKind>,
) -> Simulated {
    let thread_scenario = scenario.clone();
    let thread_input = Arc::clone(input);
    let thread_kinds = kinds.clone();
    let records = Arc::new(std::sync::Mutex::new(Vec::new()));
    let thread_records = Arc::clone(&records);
    let joined = std::thread::Builder::new()
        .name(format!("sim-{}-{mode}-{seed}", scenario.name))
        .spawn(move || simulate(&thread_scenario, &schedule, (mode, seed), thread_input, &thread_kinds, thread_records))
        .expect("cannot spawn a simulation thread")
        .join();
    joined.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(ToString::to_string))
            .unwrap_or_else(|| "a panic without a message".to_string());
        Simulated {
            outcome: RunOutcome::Panicked(message),
            committed: CommittedView::new(),
            // What happened up to the panic, for the replay to show.
            trace: sluice_harness::trace::recorded(&records),
            coverage: Coverage::new(),
            open_transactions: Vec::new(),
        }
    })
}

fn simulate(
    scenario: &Scenario,
    schedule: &[Fault],
    (mode, seed): (ExecutionMode, u64),
    input: Arc<ExternalInput>,
    kinds: &BTreeMap<String, SinkKind>,
    records: Arc<std::sync::Mutex<Vec<sluice_harness::trace::TraceRecord>>>,
) -> Simulated {
    let runtime = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
    runtime.block_on(async move {
        let trace = TraceLog::start_into(records);
        // The simulation runs on this thread: every node's marks reach the run's recorder, and
        // every node's fault points ask the seed's policy.
        let _covering = trace.coverage().install();
        let _buggified =
            scenario.buggify.policy(seed).map(|policy| sluice_engine::buggify::install(std::rc::Rc::new(policy)));
        let cluster = Arc::new(Cluster::start(scenario, input, &trace));
        let spec = scenario.job_spec(mode);
        let client = madsim::runtime::Handle::current().create_node().name("client").ip(CLIENT_IP).build();
        let limit = scenario.time_limit;
        let task_managers = scenario.cluster.task_managers;
        let (submitted, on_submitted) = tokio::sync::oneshot::channel();
        let client_task = client
            .spawn(async move { submit_and_wait(JOB_MASTER_ADDRESS, spec, task_managers, limit, submitted).await });
        // Fault times count from the job's submission, once the cluster is up. The trace says
        // when that was, so that its readers (timelines) can count from there too. Nothing waits
        // on the trace before the faults are injected, so this record wakes no task and changes
        // nothing else in the run.
        if on_submitted.await.is_ok() {
            trace.record("client", TraceEvent::SubmissionAcknowledged { job_id: scenario.name.clone() });
            crate::inject::inject(&cluster, schedule);
        }
        let outcome = client_task.await.expect("internal: the client node is never killed");
        let (mut committed, open_transactions) = {
            let mut store = cluster.store().lock().expect("store lock");
            (store.take_committed(), store.open_transactions())
        };
        let files = file_tables(&cluster.durable_store().disk, kinds)
            .await
            .unwrap_or_else(|error| panic!("internal: a file sink committed what it cannot read back: {error}"));
        committed.extend(files);
        let coverage = trace.coverage().coverage();
        Simulated { outcome, committed, trace: trace.records(), coverage, open_transactions }
    })
}
