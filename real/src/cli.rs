//! The `sluice-real` command line. Exit statuses as `sluice`'s: 0 passed, 1 a check failed,
//! 2 usage or input error.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use sluice_engine::graph::ExecutionMode;

use crate::calibrate::{CalibrateOptions, run_calibrate};
use crate::cluster::ClusterFile;
use crate::compare::{CompareOptions, run_compare};
use crate::local::{Kill, LocalOptions, run_local};
use crate::roles::{Dirs, Role, run};
use crate::simulator::default_sluice;
use crate::submit::run_submit;

/// Sluice's engine as real processes on TCP and disk.
#[derive(Debug, Parser)]
#[command(name = "sluice-real", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start a local cluster of processes on 127.0.0.1, run a scenario's job to the end in each
    /// mode, and check what it committed against the reference.
    Local {
        /// The scenario (its `faults` are the simulation's and are not used).
        scenario: PathBuf,
        /// The seed the input is generated from [default: the scenario's first seed].
        #[arg(long)]
        seed: Option<u64>,
        /// Run only this mode (repeatable) [default: the scenario's modes].
        #[arg(long, value_parser = parse_mode)]
        mode: Vec<ExecutionMode>,
        /// SIGKILL a process and start it again (repeatable): NODE@TIME after the submission,
        /// such as tm-0@300ms or jm@1s.
        #[arg(long, value_name = "NODE@TIME")]
        kill: Vec<Kill>,
        /// Where to put each mode's directory [default: a fresh temporary directory].
        #[arg(long, value_name = "DIR")]
        work_dir: Option<PathBuf>,
        /// Keep the work directories of passing modes too.
        #[arg(long)]
        keep: bool,
        /// A directory of text files for a job that reads files (wordcount-files), instead of
        /// the files the scenario generates; read, never written.
        #[arg(long, value_name = "DIR")]
        input: Option<PathBuf>,
    },
    /// Run a scenario's job in one mode on a cluster started with `serve`, and check what it
    /// committed against the reference (on a store that held nothing before).
    Submit {
        /// The scenario (the log must serve the same scenario and seed).
        scenario: PathBuf,
        /// The cluster file.
        #[arg(long, value_name = "FILE")]
        cluster: PathBuf,
        /// The mode [default: the scenario's, if it has one].
        #[arg(long, value_parser = parse_mode)]
        mode: Option<ExecutionMode>,
        /// The seed the log's input was generated from [default: the scenario's first seed].
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Measure what work costs on this machine (disk, memory, loopback, RPC, task deployment,
    /// CPU per record of each operator kind from real runs of small jobs) and write a cost
    /// profile for simulated scenarios (`costs: { profile: FILE }`, `sluice … --profile FILE`).
    Calibrate {
        /// Where to write the profile.
        #[arg(long, value_name = "FILE", default_value = "profiles/this-machine.yaml")]
        out: PathBuf,
        /// Events in each source of the larger calibration runs (the smaller have a quarter).
        #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(4..=1_000_000))]
        elements: u64,
        /// MiB the disk and loopback probes move.
        #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=4096))]
        probe_mib: u64,
        /// Where to put the runs' files [default: a fresh temporary directory, removed after].
        #[arg(long, value_name = "DIR")]
        work_dir: Option<PathBuf>,
        /// A scenario whose real runs join the CPU fit (at most 3; repeatable): the profile
        /// names it, and `compare` judges it apart.
        #[arg(long = "shape", value_name = "FILE")]
        shapes: Vec<PathBuf>,
        /// The simulator binary, to fit the contention factor on the shapes [default:
        /// `release/sluice` in this binary's target directory].
        #[arg(long, value_name = "PATH")]
        sluice: Option<PathBuf>,
    },
    /// Run each scenario's variants (batch under every exchange mode, and streaming) for real,
    /// several times each, beside the simulator's run of each under a cost profile, and report
    /// the simulator's error, spread and ranking (Kendall's τ) per shape.
    Compare {
        /// The scenarios, one shape each.
        #[arg(required = true)]
        scenarios: Vec<PathBuf>,
        /// The cost profile the simulator charges (`sluice-real calibrate` writes one).
        #[arg(long, value_name = "FILE", default_value = "profiles/this-machine.yaml")]
        profile: PathBuf,
        /// Real runs of each variant.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
        runs: u32,
        /// The simulator binary [default: `release/sluice` in this binary's target directory].
        #[arg(long, value_name = "PATH")]
        sluice: Option<PathBuf>,
        /// Names of scenarios judged apart as calibrated on (repeatable), besides those the
        /// profile names.
        #[arg(long, value_name = "NAME")]
        calibrated_on: Vec<String>,
        /// Where to put the runs' files [default: a fresh temporary directory, removed after].
        #[arg(long, value_name = "DIR")]
        work_dir: Option<PathBuf>,
        /// Also draw the report as an SVG chart into this file.
        #[arg(long, value_name = "FILE", conflicts_with = "failover")]
        svg: Option<PathBuf>,
        /// Compare restart-all with region failover under TaskManager kills instead of exchange
        /// modes: the failure-rate curve, for real and simulated (give --mtbf).
        #[arg(long, requires = "mtbf")]
        failover: bool,
        /// With `--failover`: each value a mean time between TaskManager kills as a fraction of
        /// the fault-free makespan (`1,0.5,0.2`). Kills come at exponential intervals, the
        /// TaskManager starts again at once, restarts never give up, and a run may take 10
        /// fault-free makespans; --runs seeds per rate and strategy.
        #[arg(long, value_name = "FRACTIONS", value_delimiter = ',', requires = "failover", value_parser = sluice_harness::failure_curve::parse_fraction)]
        mtbf: Vec<f64>,
    },
    /// Run one process of a cluster: jm, tm-N, durable-store, txn-store, log or shuffle-service.
    Serve {
        /// The node.
        node: String,
        /// The cluster file: every role's address.
        #[arg(long, value_name = "FILE")]
        cluster: PathBuf,
        /// The directory under which the node keeps its disk (`<DIR>/<node>/`).
        #[arg(long, value_name = "DIR")]
        data: PathBuf,
        /// The directory of trace files (`<DIR>/<node>.jsonl`).
        #[arg(long, value_name = "DIR")]
        trace: PathBuf,
        /// The scenario whose input the log serves (the log only).
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// The seed of that input (the log and files only).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The directory the files node serves (the files only) [default: the scenario's
        /// generated files].
        #[arg(long, value_name = "DIR")]
        input: Option<PathBuf>,
        /// Exit when standard input closes: a launcher (`local`) holds the other end, so its
        /// processes never outlive it, however it ends.
        #[arg(long, hide = true)]
        exit_with_stdin: bool,
    },
}

fn parse_mode(text: &str) -> Result<ExecutionMode, String> {
    match text {
        "streaming" => Ok(ExecutionMode::Streaming),
        "batch" => Ok(ExecutionMode::Batch),
        _ => Err(format!("`{text}`: a mode is streaming or batch")),
    }
}

fn parse_role(node: &str, scenario: Option<PathBuf>, seed: u64, input: Option<PathBuf>) -> Result<Role, String> {
    if input.is_some() && node != "files" {
        return Err(format!("--input is the files node's; `{node}` takes none"));
    }
    match node {
        "jm" => Ok(Role::JobMaster),
        "durable-store" => Ok(Role::DurableStore),
        "txn-store" => Ok(Role::TxnStore),
        "shuffle-service" => Ok(Role::ShuffleService),
        "log" => match scenario {
            Some(scenario) => Ok(Role::Log { scenario, seed }),
            None => Err("the log serves a scenario's input: give --scenario".to_string()),
        },
        "files" => match (input, scenario) {
            (input @ Some(_), scenario) => Ok(Role::Files { input, scenario: scenario.unwrap_or_default(), seed }),
            (None, Some(scenario)) => Ok(Role::Files { input: None, scenario, seed }),
            (None, None) => Err("the files node serves --input, or a scenario's generated files: give one".to_string()),
        },
        _ => match node.strip_prefix("tm-").and_then(|index| index.parse::<u32>().ok()) {
            Some(index) => Ok(Role::TaskManager(index)),
            None => {
                Err(format!("`{node}`: not a node (jm, tm-N, durable-store, txn-store, log, files, shuffle-service)"))
            }
        },
    }
}

/// Runs the command with the process's arguments; returns its exit status.
pub fn main_process() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() { 2 } else { 0 };
        }
    };
    if !crate::REAL_BUILD {
        eprintln!(
            "sluice-real: this is a simulation build (built with --cfg madsim); build and run it with `cargo real`."
        );
        return 2;
    }
    let result = match cli.command {
        Command::Local { scenario, seed, mode, kill, work_dir, keep, input } => {
            run_local(&LocalOptions { scenario, seed, modes: mode, kills: kill, work_dir, keep, input })
        }
        Command::Calibrate { out, elements, probe_mib, work_dir, shapes, sluice } => {
            let sluice = sluice.unwrap_or_else(default_sluice);
            run_calibrate(&CalibrateOptions { out, elements, probe_mib, work_dir, shapes, sluice })
        }
        Command::Compare { scenarios, profile, runs, sluice, calibrated_on, work_dir, svg, failover: _, mtbf } => {
            let sluice = sluice.unwrap_or_else(default_sluice);
            run_compare(&CompareOptions { scenarios, profile, runs, sluice, calibrated_on, work_dir, svg, mtbf })
        }
        Command::Submit { scenario, cluster, mode, seed } => run_submit(&scenario, &cluster, mode, seed),
        Command::Serve { node, cluster, data, trace, scenario, seed, input, exit_with_stdin } => {
            if exit_with_stdin {
                exit_when_stdin_closes();
            }
            let role = parse_role(&node, scenario, seed, input);
            role.and_then(|role| serve(&role, &cluster, data, trace)).map(|()| 0)
        }
    };
    result.unwrap_or_else(|error| {
        eprintln!("sluice-real: {error}");
        2
    })
}

/// A thread that waits for the end of standard input and ends the process (the harness's own
/// thread, not the engine's: the engine never spawns one).
fn exit_when_stdin_closes() {
    std::thread::spawn(|| {
        let mut sink = [0u8; 64];
        while std::io::Read::read(&mut std::io::stdin(), &mut sink).is_ok_and(|read| read > 0) {}
        std::process::exit(0);
    });
}

fn serve(role: &Role, cluster: &std::path::Path, data: PathBuf, trace: PathBuf) -> Result<(), String> {
    let cluster = ClusterFile::load(cluster)?;
    run(role, &cluster, &Dirs { data, trace })
}
