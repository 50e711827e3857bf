//! Runs one scenario for one seed in one mode, in a fresh OS thread with its own madsim runtime.
//!
//! A fresh thread per run is what makes a seed replay: std's `HashMap` seeds are per thread, and
//! madsim seeds them only for a thread that has not made one yet. The job's input is generated
//! from the seed (its own `workload` stream) before the simulation starts, so both modes of one
//! seed read the same input.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use sluice_engine::catalog::{self, ExpectedOutput, ExternalInput};
use sluice_engine::graph::ExecutionMode;
use sluice_engine::prng::Prng;
use sluice_engine::rpc::RpcClient;
use sluice_engine::runtime::JobSpec;
use sluice_engine::runtime::messages::{JobStatus, RequestClusterOverview, RequestJobStatus, SubmitJob};
use sluice_engine::runtime::trace::TraceEvent;
use sluice_engine::shuffle::ShuffleConfig;

use crate::cluster::{CLIENT_IP, Cluster, JOB_MASTER_ADDRESS};
use crate::external::txn_store::CommittedView;
use crate::faults::{self, Fault};
use crate::recovery::{RecoveryMetrics, recovery_metrics};
use crate::scenario::Scenario;
use crate::trace::{TraceLog, TraceRecord, trace_hash};

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    /// The job finished.
    Finished,
    /// The JobMaster rejected the job or failed it.
    JobFailed(String),
    /// The job did not finish within the scenario's time limit.
    TimedOut(Duration),
    /// A process panicked: an internal invariant broke.
    Panicked(String),
}

impl fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunOutcome::Finished => f.write_str("finished"),
            RunOutcome::JobFailed(reason) => write!(f, "job failed: {reason}"),
            RunOutcome::TimedOut(limit) => {
                write!(f, "did not finish within {} s of simulated time", limit.as_secs_f64())
            }
            RunOutcome::Panicked(message) => write!(f, "panicked: {message}"),
        }
    }
}

/// Everything observed in one run.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// The scenario's name.
    pub scenario: String,
    /// The scenario it ran, as given (so that a test can write a replay file of the run).
    pub source: Arc<Scenario>,
    /// The mode.
    pub mode: ExecutionMode,
    /// The seed.
    pub seed: u64,
    /// How it ended.
    pub outcome: RunOutcome,
    /// What the store committed.
    pub committed: CommittedView,
    /// What the reference implementation says must be committed.
    pub expected: ExpectedOutput,
    /// The fault schedule it ran with (explicit and random faults).
    pub schedule: Vec<Fault>,
    /// What recovering from failures cost.
    pub recovery: RecoveryMetrics,
    /// Simulated time from start to the job's end.
    pub makespan: Duration,
    /// Wall-clock time the simulation took.
    pub wall_time: Duration,
    /// The event trace.
    pub trace: Vec<TraceRecord>,
    /// Its canonical hash.
    pub trace_hash: u64,
}

impl RunReport {
    /// Rows committed over all tables.
    pub fn records_committed(&self) -> usize {
        self.committed.values().map(|table| table.log.len()).sum()
    }

    /// Restarts the job took (see [`RecoveryMetrics::restarts`]).
    pub fn restarts(&self) -> u64 {
        self.recovery.restarts
    }

    /// Positions in the schedule of the faults that never fired in this run.
    pub fn unfired_faults(&self) -> Vec<usize> {
        let fired: std::collections::BTreeSet<usize> = self
            .trace
            .iter()
            .filter_map(|record| match record.event {
                TraceEvent::FaultInjected { index, .. } => Some(index),
                _ => None,
            })
            .collect();
        (0..self.schedule.len()).filter(|index| !fired.contains(index)).collect()
    }
}

/// The job's input for a seed: the same in every mode.
pub fn generate_input(scenario: &Scenario, seed: u64) -> ExternalInput {
    let job = catalog::find(&scenario.job).expect("validated when the scenario was loaded");
    (job.generate_input)(&scenario.job_params(), &mut Prng::fork(seed, "workload"))
}

struct Simulated {
    outcome: RunOutcome,
    committed: CommittedView,
    trace: Vec<TraceRecord>,
}

/// Runs one seed of a scenario in one mode; see the module doc.
pub fn run(scenario: &Scenario, mode: ExecutionMode, seed: u64) -> RunReport {
    let input = Arc::new(generate_input(scenario, seed));
    let job = catalog::find(&scenario.job).expect("validated when the scenario was loaded");
    let expected = (job.reference)(&scenario.job_params(), &input, mode);
    let schedule = scenario.schedule(seed);
    let thread_scenario = scenario.clone();
    let thread_schedule = schedule.clone();
    let started = std::time::Instant::now();
    let joined = std::thread::Builder::new()
        .name(format!("sim-{}-{mode}-{seed}", scenario.name))
        .spawn(move || simulate(&thread_scenario, &thread_schedule, mode, seed, input))
        .expect("cannot spawn a simulation thread")
        .join();
    let wall_time = started.elapsed();
    let simulated = joined.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(ToString::to_string))
            .unwrap_or_else(|| "a panic without a message".to_string());
        Simulated { outcome: RunOutcome::Panicked(message), committed: CommittedView::new(), trace: Vec::new() }
    });
    let end = simulated
        .trace
        .iter()
        .rev()
        .find(|record| matches!(record.event, TraceEvent::JobFinished { .. } | TraceEvent::JobFailed { .. }));
    RunReport {
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
    }
}

fn simulate(
    scenario: &Scenario,
    schedule: &[Fault],
    mode: ExecutionMode,
    seed: u64,
    input: Arc<ExternalInput>,
) -> Simulated {
    let runtime = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
    runtime.block_on(async move {
        let trace = TraceLog::start();
        let shuffle =
            ShuffleConfig { buffer_size: scenario.buffer_size, kind: scenario.shuffle, ..ShuffleConfig::default() };
        let cluster = Arc::new(Cluster::start(scenario, shuffle, input, &trace));
        let spec = JobSpec {
            job_id: scenario.name.clone(),
            job_name: scenario.job.clone(),
            params: scenario.job_params(),
            mode,
            parallelism: scenario.parallelism,
            max_parallelism: sluice_engine::graph::partitioner::default_max_parallelism(scenario.parallelism),
            exchange_mode: scenario.exchange_mode,
            adaptive: scenario.adaptive_batch,
            restart_strategy: scenario.restart_strategy,
            failover_strategy: scenario.failover_strategy,
            shuffle,
            checkpoint: scenario.checkpoints,
        };
        let client = madsim::runtime::Handle::current().create_node().name("client").ip(CLIENT_IP).build();
        let limit = scenario.time_limit;
        let task_managers = scenario.cluster.task_managers;
        let (submitted, on_submitted) = tokio::sync::oneshot::channel();
        let client_task = client.spawn(async move { submit_and_wait(spec, task_managers, limit, submitted).await });
        // Fault times count from the job's submission, once the cluster is up. The trace says
        // when that was, so that its readers (timelines) can count from there too. Nothing waits
        // on the trace before the faults are injected, so this record wakes no task and changes
        // nothing else in the run.
        if on_submitted.await.is_ok() {
            trace.record("client", TraceEvent::SubmissionAcknowledged { job_id: scenario.name.clone() });
            faults::inject::inject(&cluster, schedule);
        }
        let outcome = client_task.await.expect("internal: the client node is never killed");
        let committed = cluster.store().lock().expect("store lock").committed();
        Simulated { outcome, committed, trace: trace.records() }
    })
}

/// Waits until every TaskManager registered (as one submits to a running session cluster),
/// submits the job, and polls its status until it ends or the time limit passes.
async fn submit_and_wait(
    spec: JobSpec,
    task_managers: u32,
    limit: Duration,
    submitted: tokio::sync::oneshot::Sender<()>,
) -> RunOutcome {
    let started = madsim::time::Instant::now();
    let timeout = Duration::from_millis(500);
    let client = RpcClient::bind_ephemeral().await.expect("internal: the client can bind");
    let job_id = spec.job_id.clone();
    loop {
        if let Ok(overview) = client.call(JOB_MASTER_ADDRESS, RequestClusterOverview, timeout).await
            && overview.task_managers >= task_managers
        {
            break;
        }
        if started.elapsed() >= limit {
            return RunOutcome::TimedOut(limit);
        }
        madsim::time::sleep(Duration::from_millis(10)).await;
    }
    loop {
        match client.call(JOB_MASTER_ADDRESS, SubmitJob { spec: spec.clone() }, timeout).await {
            Ok(Ok(())) => {
                let _ = submitted.send(());
                break;
            }
            Ok(Err(reason)) => return RunOutcome::JobFailed(reason),
            Err(_) if started.elapsed() >= limit => return RunOutcome::TimedOut(limit),
            Err(_) => madsim::time::sleep(Duration::from_millis(50)).await,
        }
    }
    loop {
        madsim::time::sleep(Duration::from_millis(20)).await;
        if started.elapsed() >= limit {
            return RunOutcome::TimedOut(limit);
        }
        if let Ok(Some(report)) =
            client.call(JOB_MASTER_ADDRESS, RequestJobStatus { job_id: job_id.clone() }, timeout).await
        {
            match report.status {
                JobStatus::Finished => return RunOutcome::Finished,
                JobStatus::Failed(reason) => return RunOutcome::JobFailed(reason),
                JobStatus::Running | JobStatus::Restarting => {}
            }
        }
    }
}
