//! `sluice-real local`: a whole cluster of real processes on 127.0.0.1, one per role, running a
//! scenario's job to its end in each of its modes and judged by the simulation's own checks.
//!
//! For each mode: a fresh work directory (`cluster.yaml`, `data/<node>/`, `trace/<node>.jsonl`,
//! `logs/<node>.log`), every role started as a child process (`sluice-real serve <node>`), the
//! client of the simulation (`sluice_harness::client`) submitting the job once every
//! TaskManager registered, and, from the acknowledged submission on, the `--kill` faults: SIGKILL
//! to a process at a wall-clock time, then the process started again on the same address and
//! disk. When the job ends the committed tables are read from the store, every process is
//! stopped, and the merged trace and the tables go through `check_run` (exactly-once against the
//! reference, nothing committed before its checkpoint, commits stay) and, across modes,
//! `modes_agree`. A passing mode's work directory is removed unless `--keep`; a failing one's is
//! kept and named.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sluice_catalog::ExternalInput;
use sluice_engine::connectors::SinkKind;
use sluice_engine::duration::{format_duration, parse_duration};
use sluice_engine::graph::ExecutionMode;
use sluice_engine::rpc::RpcClient;
use sluice_engine::runtime::messages::{JobStatus, RequestJobStatus};
use sluice_engine::storage::ImmediateStorage;
use sluice_engine::storage::remote::RemoteStorage;
use sluice_engine::trace::{TraceEvent, Tracer};
use sluice_harness::check::{CheckFailure, check_run, modes_agree};
use sluice_harness::client::submit_and_wait;
use sluice_harness::recovery::recovery_metrics;
use sluice_harness::report::{RunOutcome, RunReport, generate_input, with_late_data};
use sluice_harness::scenario::Scenario;
use sluice_harness::trace::trace_hash;
use sluice_harness::words::{counted, shell_word, size};
use sluice_services::durable_store::{file_tables, table_kinds};
use sluice_services::txn_store::{CommittedPage, CommittedView, ReadCommitted, table_from_log};

use crate::cluster::ClusterFile;
use crate::ready::wait_until_all_ready;
use crate::trace::{FileTracer, merge, now};

/// A process to kill with SIGKILL (`tm-0@300ms`: `tm-0`, 300 ms after the job's submission was
/// acknowledged) and start again at once on the same address and disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kill {
    /// The node (`jm`, `tm-N`, `durable-store`, `txn-store`, `log`, `files`, `shuffle-service`).
    pub node: String,
    /// When, counted from the acknowledged submission.
    pub after: Duration,
}

impl FromStr for Kill {
    type Err = String;

    fn from_str(text: &str) -> Result<Kill, String> {
        let (node, after) =
            text.split_once('@').ok_or_else(|| format!("`{text}`: expected NODE@TIME, such as tm-0@300ms"))?;
        let killable = ["jm", "durable-store", "txn-store", "log", "files", "shuffle-service"].contains(&node)
            || node.strip_prefix("tm-").is_some_and(|index| index.parse::<u32>().is_ok());
        if !killable {
            return Err(format!(
                "`{node}`: not a node of the cluster (jm, tm-N, durable-store, txn-store, log, files, \
                 shuffle-service)"
            ));
        }
        let after = parse_duration(after).map_err(|error| format!("`{text}`: {error}"))?;
        if after > Duration::from_secs(3600) {
            return Err(format!("`{text}`: at most 1h after the submission"));
        }
        Ok(Kill { node: node.to_string(), after })
    }
}

impl fmt::Display for Kill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.node, format_duration(self.after))
    }
}

/// What `sluice-real local` runs.
#[derive(Clone, Debug)]
pub struct LocalOptions {
    /// The scenario file (its faults are the simulation's and are not used here).
    pub scenario: PathBuf,
    /// The seed the input is generated from (the scenario's first seed by default).
    pub seed: Option<u64>,
    /// The modes (the scenario's by default).
    pub modes: Vec<ExecutionMode>,
    /// Processes to kill.
    pub kills: Vec<Kill>,
    /// Where the work directories go (a fresh temporary directory by default).
    pub work_dir: Option<PathBuf>,
    /// Keep passing modes' work directories.
    pub keep: bool,
    /// A directory of input files (for a job that reads files) instead of generated ones.
    pub input: Option<PathBuf>,
}

/// One mode's run: its report and what the checks found.
pub struct ModeRun {
    /// The report the simulation's checks read.
    pub report: RunReport,
    /// Their failures.
    pub failures: Vec<CheckFailure>,
    /// What the kills did.
    pub kills: Vec<String>,
    /// The mode's work directory.
    pub work: PathBuf,
    /// Each process's peak resident memory (bytes) when the job ended, by node.
    pub peak_memory: BTreeMap<String, u64>,
    /// CPU time (user and system) all the cluster's processes spent from the submission to the
    /// job's end (Linux; zero elsewhere).
    pub cpu_time: Duration,
    /// The median round trip of the engine's RPC on this cluster (a readiness probe to the
    /// transactional store), measured before the job.
    pub rpc_round_trip: Duration,
}

/// Runs every mode and prints each verdict; the exit status (0 passed, 1 a check failed).
pub fn run_local(options: &LocalOptions) -> Result<i32, String> {
    let scenario = Scenario::load(&options.scenario).map_err(|error| error.to_string())?;
    let seed = options.seed.unwrap_or(scenario.seeds.start);
    let modes = if options.modes.is_empty() { scenario.modes.clone() } else { options.modes.clone() };
    check_options(options, &scenario, seed)?;
    // The launcher's own clients (submitting, reading the store) bind to loopback only.
    sluice_engine::rpc::set_client_ip(std::net::Ipv4Addr::LOCALHOST.into());
    let root = match &options.work_dir {
        Some(directory) => directory.clone(),
        None => std::env::temp_dir().join(format!("sluice-real-{}-{}", std::process::id(), now().as_nanos())),
    };
    println!(
        "scenario `{}`: job {}, {} × {}, parallelism {}, seed {seed}, real processes on 127.0.0.1",
        scenario.name,
        scenario.job,
        counted(scenario.cluster.task_managers, "TaskManager"),
        counted(scenario.cluster.slots_per_task_manager, "slot"),
        scenario.parallelism
    );
    let mut runs = Vec::new();
    for mode in modes {
        let work = root.join(mode.to_string());
        let run = run_mode(&options.scenario, &scenario, mode, seed, &options.kills, options.input.as_deref(), &work)?;
        println!("{}", report_line(&run));
        let keep = options.keep || !run.failures.is_empty();
        if keep {
            println!("             work directory: {}", work.display());
            let sinks = work.join("data/durable-store/sinks");
            if sinks.is_dir() {
                println!("             committed files: {}/<table>/part-*", sinks.display());
            }
        } else {
            let _ = std::fs::remove_dir_all(&work);
        }
        runs.push(run);
    }
    if options.work_dir.is_none() && !options.keep && runs.iter().all(|run| run.failures.is_empty()) {
        let _ = std::fs::remove_dir_all(&root);
    }
    let mut failed = runs.iter().any(|run| !run.failures.is_empty());
    if let [streaming, batch] = &runs[..]
        && streaming.report.outcome == RunOutcome::Finished
        && batch.report.outcome == RunOutcome::Finished
    {
        match modes_agree(&streaming.report, &batch.report) {
            Ok(()) => println!("  streaming == batch: agree"),
            Err(failure) => {
                println!("  streaming == batch: FAIL {failure}");
                failed = true;
            }
        }
    }
    if failed {
        // The command that runs this again: a real run is not deterministic, so it repeats
        // the run's setup (scenario, seed, modes, kills), not its interleaving.
        println!("rerun: {}", rerun_command(options, seed));
    }
    Ok(i32::from(failed))
}

/// The options that do not fit the scenario: `--input` for a job that reads no files, a
/// `--kill` of a TaskManager the scenario does not have.
fn check_options(options: &LocalOptions, scenario: &Scenario, seed: u64) -> Result<(), String> {
    // A job reads files when its input holds files (wordcount-files, or a scenario's `input:`):
    // the same test that decides whether a simulated cluster has a files node.
    if options.input.is_some() && generate_input(scenario, seed).files.is_empty() {
        return Err(format!("--input: job `{}` does not read files", scenario.job));
    }
    for kill in &options.kills {
        if let Some(index) = kill.node.strip_prefix("tm-").and_then(|index| index.parse::<u32>().ok())
            && index >= scenario.cluster.task_managers
        {
            return Err(format!(
                "--kill {kill}: the scenario has {}",
                counted(scenario.cluster.task_managers, "TaskManager")
            ));
        }
    }
    Ok(())
}

/// `sluice-real local …` with this run's scenario, seed, modes, kills and input.
fn rerun_command(options: &LocalOptions, seed: u64) -> String {
    let path = |path: &Path| shell_word(&path.display().to_string());
    let mut command = format!("cargo real local {} --seed {seed}", path(&options.scenario));
    for mode in &options.modes {
        command.push_str(&format!(" --mode {mode}"));
    }
    for kill in &options.kills {
        command.push_str(&format!(" --kill {kill}"));
    }
    if let Some(input) = &options.input {
        command.push_str(&format!(" --input {}", path(input)));
    }
    command
}

fn report_line(run: &ModeRun) -> String {
    let report = &run.report;
    let verdict = if run.failures.is_empty() { "PASS" } else { "FAIL" };
    let mut line = format!(
        "  {:<9} {verdict}  committed {:>6}  wall {:>8.3}s (job {:.3}s)  {}",
        report.mode.to_string(),
        counted(report.records_committed() as u64, "row"),
        report.wall_time.as_secs_f64(),
        sluice_harness::compare::job_time(&report.trace).unwrap_or(report.wall_time).as_secs_f64(),
        counted(report.restarts(), "restart"),
    );
    if let Some((node, bytes)) = run.peak_memory.iter().max_by_key(|(_, bytes)| **bytes) {
        line.push_str(&format!("  peak memory {} ({node})", size(*bytes)));
    }
    for kill in &run.kills {
        line.push_str(&format!("\n             {kill}"));
    }
    for failure in &run.failures {
        line.push_str(&format!("\n             {failure}"));
    }
    line
}

/// Runs the scenario's job once in `mode` on a fresh local cluster under `work`, and checks it.
pub fn run_mode(
    scenario_path: &Path,
    scenario: &Scenario,
    mode: ExecutionMode,
    seed: u64,
    kills: &[Kill],
    input: Option<&Path>,
    work: &Path,
) -> Result<ModeRun, String> {
    let io = |what: &str, error: std::io::Error| format!("{what}: {error}");
    std::fs::create_dir_all(work).map_err(|error| io(&work.display().to_string(), error))?;
    let cluster = ClusterFile::on_loopback(scenario.cluster.task_managers, scenario.cluster.slots_per_task_manager)
        .map_err(|error| io("choosing ports on 127.0.0.1", error))?;
    let cluster_file = work.join("cluster.yaml");
    std::fs::write(&cluster_file, cluster.to_yaml()).map_err(|error| io("cluster.yaml", error))?;
    let job = scenario.job();
    let job_input = match input {
        Some(directory) => input_files(directory)?,
        None => generate_input(scenario, seed),
    };
    let expected = job.expected(&scenario.job_params(), &job_input, mode);
    let kinds = table_kinds(expected.as_ref());
    // The launcher's own client first: building its runtime takes a while (200 ms here), and
    // that is not the cluster's time.
    let client_tracer = FileTracer::open(&work.join("trace/client.jsonl"), "client")
        .map_err(|error| io("the client's trace file", error))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| io("the client's runtime", error))?;
    let origin = now();
    let started = Instant::now();
    let processes = Arc::new(Mutex::new(Processes::new(&cluster_file, work, scenario_path, seed, input)?));
    runtime.block_on(start_cluster(&cluster, &processes))?;
    let rpc_round_trip = runtime.block_on(rpc_round_trip(cluster.txn_store));
    let spec = scenario.job_spec(mode);
    let cpu_at_start = processes.lock().expect("processes lock").cpu_time();
    let Driven { outcome, committed, kills, ended: job_ended, cpu_at_end } =
        runtime.block_on(drive(&cluster, spec, scenario, kills, Arc::clone(&processes), &client_tracer, &kinds));
    // The job's time ends when the JobMaster reports it finished; reading the committed output
    // back to check it is the launcher's work, not the job's.
    let wall_time = job_ended.duration_since(started);
    let peak_memory = processes.lock().expect("processes lock").peak_memory();
    processes.lock().expect("processes lock").stop_all();
    let trace = merge(&work.join("trace"), origin)?;
    let (expected, late) = with_late_data(scenario, &job_input, &trace, &committed, expected);
    let report = RunReport {
        scenario: scenario.name.clone(),
        source: Arc::new(scenario.clone()),
        mode,
        seed,
        outcome,
        committed,
        expected,
        schedule: Vec::new(),
        late,
        recovery: recovery_metrics(&trace),
        makespan: wall_time,
        wall_time,
        trace_hash: trace_hash(&trace),
        trace,
        // Coverage marks are counted in simulation only; a real process has no recorder.
        coverage: Default::default(),
        // The store is a process of its own; its state is not read back.
        open_transactions: None,
    };
    let failures = check_run(&report);
    let cpu_time = cpu_at_end.saturating_sub(cpu_at_start);
    Ok(ModeRun { report, failures, kills, work: work.to_path_buf(), peak_memory, cpu_time, rpc_round_trip })
}

/// How long a role may take to become ready (the log and the files hold the whole input first).
const READY_WITHIN: Duration = Duration::from_secs(120);

/// Starts every role and returns once each is ready (answers the readiness probe), so that the
/// job never meets a service that is not up yet. The durable store first: the JobMaster's first
/// act is to read what it keeps there, and finding it down it would wait out a retry (200 ms).
async fn start_cluster(cluster: &ClusterFile, processes: &Arc<Mutex<Processes>>) -> Result<(), String> {
    let gone = |node: &str| processes.lock().expect("processes lock").exited(node);
    let (durable, rest): (Vec<_>, Vec<_>) =
        cluster.roles().into_iter().partition(|(_, address)| *address == cluster.durable_store);
    for (node, _) in durable.iter().chain(&rest) {
        processes.lock().expect("processes lock").start(node)?;
        if durable.iter().any(|(first, _)| first == node) {
            wait_until_all_ready(&durable, READY_WITHIN, gone).await?;
        }
    }
    wait_until_all_ready(&rest, READY_WITHIN, gone).await
}

/// A directory's files, as a job that reads files sees them (for its reference): in name order,
/// hidden files left out, as the file source lists them.
fn input_files(directory: &Path) -> Result<ExternalInput, String> {
    let storage = crate::disk::FileStorage::read_only(directory)
        .map_err(|error| format!("--input {}: {error}", directory.display()))?;
    let paths = storage.list_now("").map_err(|error| format!("--input {}: {error}", directory.display()))?;
    let mut files = BTreeMap::new();
    for path in paths {
        let contents = std::fs::read(directory.join(&path)).map_err(|error| format!("{path}: {error}"))?;
        files.insert(path, contents);
    }
    Ok(ExternalInput { files, ..ExternalInput::default() })
}

/// Submits the job, injects the kills from the acknowledged submission on, waits for the end,
/// and reads what the store committed.
async fn drive(
    cluster: &ClusterFile,
    spec: sluice_engine::runtime::JobSpec,
    scenario: &Scenario,
    kills: &[Kill],
    processes: Arc<Mutex<Processes>>,
    tracer: &FileTracer,
    kinds: &BTreeMap<String, SinkKind>,
) -> Driven {
    let (submitted, on_submitted) = tokio::sync::oneshot::channel();
    let job_id = spec.job_id.clone();
    let (master, task_managers, limit) = (cluster.job_master, scenario.cluster.task_managers, scenario.time_limit);
    // The job's end is when the client saw it end, whatever kills are still to come.
    let mut client = tokio::spawn(async move {
        let outcome = submit_and_wait(master, spec, task_managers, limit, submitted).await;
        (outcome, Instant::now())
    });
    let mut ended = None;
    let mut done = Vec::new();
    if on_submitted.await.is_ok() {
        tracer.record(TraceEvent::SubmissionAcknowledged { job_id: job_id.clone() });
        let submitted_at = Instant::now();
        let mut kills = kills.to_vec();
        kills.sort_by_key(|kill| kill.after);
        for (index, kill) in kills.iter().enumerate() {
            if ended.is_none() {
                let wait = kill.after.saturating_sub(submitted_at.elapsed());
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    joined = &mut client => ended = Some(joined),
                }
            }
            if ended.is_some() || !job_running(cluster, &job_id).await {
                done.push(format!("never fired: kill {kill}: the job was no longer running"));
                continue;
            }
            let detail = format!("kill -9 {} (restarted at once)", kill.node);
            tracer.record(TraceEvent::FaultInjected { index, kind: "kill".to_string(), detail: detail.clone() });
            let result = processes.lock().expect("processes lock").restart(&kill.node);
            match result {
                Ok(()) => {
                    tracer.record(TraceEvent::FaultHealed { index, kind: "kill".to_string(), detail: detail.clone() });
                    done.push(format!("at {:.3}s: {detail}", submitted_at.elapsed().as_secs_f64()));
                }
                Err(error) => done.push(format!("kill {kill} failed: {error}")),
            }
        }
    }
    let joined = match ended {
        Some(joined) => joined,
        None => client.await,
    };
    let (mut outcome, job_ended) =
        joined.unwrap_or_else(|error| (RunOutcome::Panicked(error.to_string()), Instant::now()));
    // Before the output is read back: that is the launcher's work, not the job's.
    let cpu_at_end = processes.lock().expect("processes lock").cpu_time();
    let committed = match read_committed(cluster, kinds).await {
        Ok(committed) => committed,
        Err(error) => {
            if outcome == RunOutcome::Finished {
                outcome = RunOutcome::JobFailed(format!("finished, but its output could not be read: {error}"));
            }
            CommittedView::new()
        }
    };
    Driven { outcome, committed, kills: done, ended: job_ended, cpu_at_end }
}

/// How a driven job ended: its outcome, what it committed, what the kills did, when it ended
/// and the cluster's CPU time then.
struct Driven {
    outcome: RunOutcome,
    committed: CommittedView,
    kills: Vec<String>,
    ended: Instant,
    cpu_at_end: Duration,
}

/// The median of 50 round trips of a readiness probe to `address` (zero if none answered).
async fn rpc_round_trip(address: std::net::SocketAddr) -> Duration {
    let Ok(client) = RpcClient::bind_ephemeral().await else { return Duration::ZERO };
    let mut trips = Vec::new();
    for _ in 0..50 {
        let started = Instant::now();
        if client.call(address, sluice_engine::rpc::Health, Duration::from_millis(200)).await.is_ok() {
            trips.push(started.elapsed());
        }
    }
    trips.sort();
    trips.get(trips.len() / 2).copied().unwrap_or(Duration::ZERO)
}

async fn job_running(cluster: &ClusterFile, job_id: &str) -> bool {
    let Ok(client) = RpcClient::bind_ephemeral().await else { return false };
    let request = RequestJobStatus { job_id: job_id.to_string() };
    // A JobMaster that does not answer (being restarted by an earlier kill) counts as running.
    match client.call(cluster.job_master, request, Duration::from_secs(1)).await {
        Ok(Some(report)) => matches!(report.status, JobStatus::Running | JobStatus::Restarting),
        Ok(None) => false,
        Err(_) => true,
    }
}

/// Rows per page when reading the store (a page stays far below the largest message).
const PAGE_ROWS: u64 = 20_000;

/// Everything the cluster committed: the transactional store's tables, page by page, and the
/// files sinks committed to the durable store, their tables applying rows as `kinds` says; an
/// error says why it could not be read.
pub async fn read_committed(
    cluster: &ClusterFile,
    kinds: &BTreeMap<String, SinkKind>,
) -> Result<CommittedView, String> {
    let mut view = read_transactions(cluster.txn_store).await?;
    let files = file_tables(&RemoteStorage::new(cluster.durable_store), kinds)
        .await
        .map_err(|error| format!("reading the durable store at {}: {error}", cluster.durable_store))?;
    view.extend(files);
    Ok(view)
}

/// Every table the transactional store committed, page by page.
async fn read_transactions(txn_store: std::net::SocketAddr) -> Result<CommittedView, String> {
    let client = RpcClient::bind_ephemeral().await.map_err(|error| format!("cannot bind a client: {error}"))?;
    let ask = |table: Option<&String>, from| ReadCommitted { table: table.cloned(), from, max_rows: PAGE_ROWS };
    let call = |request: ReadCommitted| {
        let client = client.clone();
        async move {
            let mut last = String::new();
            for _ in 0..10 {
                match client.call(txn_store, request.clone(), Duration::from_secs(5)).await {
                    Ok(page) => return Ok(page),
                    Err(error) => last = error.to_string(),
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(format!("reading the txn-store at {txn_store}: {last}"))
        }
    };
    let CommittedPage::Tables(tables) = call(ask(None, 0)).await? else {
        return Err("the txn-store answered a list of tables with rows".to_string());
    };
    let mut view = CommittedView::new();
    for table in tables {
        let mut log = Vec::new();
        let kind = loop {
            let CommittedPage::Rows { kind, rows } = call(ask(Some(&table), log.len() as u64)).await? else {
                return Err(format!("table `{table}` vanished while it was read"));
            };
            let last = (rows.len() as u64) < PAGE_ROWS;
            log.extend(rows);
            if last {
                break kind;
            }
        };
        view.insert(table, table_from_log(kind, log));
    }
    Ok(view)
}

/// The cluster's child processes, by node.
struct Processes {
    executable: PathBuf,
    cluster_file: PathBuf,
    work: PathBuf,
    scenario: PathBuf,
    seed: u64,
    input: Option<PathBuf>,
    children: BTreeMap<String, Child>,
}

impl Processes {
    fn new(
        cluster_file: &Path,
        work: &Path,
        scenario: &Path,
        seed: u64,
        input: Option<&Path>,
    ) -> Result<Processes, String> {
        let executable = std::env::current_exe().map_err(|error| format!("cannot find sluice-real itself: {error}"))?;
        Ok(Processes {
            executable,
            cluster_file: cluster_file.to_path_buf(),
            work: work.to_path_buf(),
            scenario: scenario.to_path_buf(),
            seed,
            input: input.map(Path::to_path_buf),
            children: BTreeMap::new(),
        })
    }

    fn start(&mut self, node: &str) -> Result<(), String> {
        let logs = self.work.join("logs");
        std::fs::create_dir_all(&logs).map_err(|error| format!("{}: {error}", logs.display()))?;
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(logs.join(format!("{node}.log")))
            .map_err(|error| format!("{node}'s log: {error}"))?;
        let error_log: File = log.try_clone().map_err(|error| format!("{node}'s log: {error}"))?;
        let mut command = Command::new(&self.executable);
        command
            .arg("serve")
            .arg(node)
            .arg("--cluster")
            .arg(&self.cluster_file)
            .arg("--data")
            .arg(self.work.join("data"))
            .arg("--trace")
            .arg(self.work.join("trace"))
            .arg("--scenario")
            .arg(&self.scenario)
            .arg("--seed")
            .arg(self.seed.to_string())
            .arg("--exit-with-stdin")
            .args(
                self.input
                    .iter()
                    .filter(|_| node == "files")
                    .flat_map(|input| [OsStr::new("--input"), input.as_os_str()]),
            )
            .stdin(Stdio::piped())
            .stdout(log)
            .stderr(error_log);
        let child = command.spawn().map_err(|error| format!("cannot start {node}: {error}"))?;
        self.children.insert(node.to_string(), child);
        Ok(())
    }

    /// SIGKILL, then the same process again.
    fn restart(&mut self, node: &str) -> Result<(), String> {
        if let Some(mut child) = self.children.remove(node) {
            child.kill().map_err(|error| format!("cannot kill {node}: {error}"))?;
            let _ = child.wait();
        }
        self.start(node)
    }

    /// Each running process's peak resident memory (Linux's `VmHWM`; empty elsewhere).
    fn peak_memory(&self) -> BTreeMap<String, u64> {
        let peak = |pid: u32| -> Option<u64> {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
            let kilobytes: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kilobytes * 1024)
        };
        self.children.iter().filter_map(|(node, child)| Some((node.clone(), peak(child.id())?))).collect()
    }

    /// CPU time (user and system) the running processes spent so far (Linux's
    /// `/proc/<pid>/stat`, in clock ticks of 10 ms; zero elsewhere).
    fn cpu_time(&self) -> Duration {
        let ticks = |pid: u32| -> Option<u64> {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // After the command name, which may hold spaces: state is field 3, utime 14, stime 15.
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
        };
        let total: u64 = self.children.values().filter_map(|child| ticks(child.id())).sum();
        Duration::from_millis(total * 10)
    }

    /// Why `node`'s process ended, if it did.
    fn exited(&mut self, node: &str) -> Option<String> {
        let child = self.children.get_mut(node)?;
        match child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) | Err(_) => None,
        }
    }

    fn stop_all(&mut self) {
        for (_, mut child) in std::mem::take(&mut self.children) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        self.stop_all();
    }
}
