//! `sluice-real calibrate`: measures what work costs on this machine and writes a cost profile
//! (`sluice_harness::scenario::profile`) that simulated scenarios and `compare` take.
//!
//! - **Devices**, probed directly: the disk's write bandwidth (written and synced), its read
//!   bandwidth (read with `O_DIRECT`, past the page cache), memory speed (the same file read back
//!   through the page cache), the page cache's budget (`MemAvailable`), loopback bandwidth (a TCP
//!   stream on 127.0.0.1).
//! - **Control plane**, from real runs: the engine's RPC round trip (readiness probes to the
//!   transactional store), whose half is the network latency, and each task's deployment (the
//!   JobMaster's `TaskDeployed` to the TaskManager's `TaskRunning`), less that latency.
//! - **CPU**, from real runs of small `generated` programs that vary one kind of work at a time
//!   (a scan, chained maps, a rebalance, an aggregation, a join, a window), at two sizes and in
//!   both modes: the CPU time every process of the cluster spent, against the work the trace
//!   says the tasks did, fitted by non-negative least squares
//!   (`sluice_harness::calibration::fit_cpu`).
//!
//! The profile describes the machine as the local cluster uses it: every TaskManager, store and
//! service shares its cores, disk and loopback (`shared_machine_cores`).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sluice_engine::duration::format_duration;
use sluice_engine::graph::ExecutionMode;
use sluice_harness::calibration::{CalibrationRun, deploy_latencies, fit_cpu, median, trace_features};
use sluice_harness::compare::job_time;
use sluice_harness::cost::CostSpec;
use sluice_harness::scenario::{CostProfile, Machine, Scenario};

use crate::local::run_mode;
use crate::simulator::simulate;
use crate::trace::now;

/// What `sluice-real calibrate` does.
#[derive(Clone, Debug)]
pub struct CalibrateOptions {
    /// Where the profile goes.
    pub out: PathBuf,
    /// Events in each source of the larger runs (the smaller ones have a quarter).
    pub elements: u64,
    /// MiB the disk and loopback probes move.
    pub probe_mib: u64,
    /// Where runs and probes put their files [default: a fresh temporary directory].
    pub work_dir: Option<PathBuf>,
    /// Scenarios (at most [`MAX_SHAPES`]) whose real runs join the CPU fit, each of its modes
    /// twice: query shapes whose scans, joins and exchanges the programs only approximate.
    pub shapes: Vec<PathBuf>,
    /// The `sluice` binary, which simulates the shapes to fit the contention factor.
    pub sluice: PathBuf,
}

/// The most shapes a profile is calibrated on: the others are what it is judged on.
pub const MAX_SHAPES: usize = 3;

/// The calibration programs (`generated` job): each adds one kind of work to a plain scan.
pub const PROGRAMS: &[(&str, &str, Keys)] = &[
    ("scan", "src(1)", Keys::Few),
    ("maps", "src(1); map(0,3,7); map(1,3,7); map(2,3,7); map(3,3,7)", Keys::Few),
    ("rebalance", "src(1); map(0~r,3,7)*2", Keys::Few),
    ("aggregate", "src(1); reduce(0,sum)", Keys::Few),
    ("join", "src(1); src(1); flat(1,3); join(0,2)", Keys::Many),
    ("window", "src(1); tumble(0,100,sum)", Keys::Few),
];

/// How many distinct keys a program's events have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keys {
    /// 100: aggregations emit few rows in batch.
    Few,
    /// One per element (at most 100,000): a join emits about as many pairs as elements.
    Many,
}

/// Measures, writes the profile, prints what it found; the exit status.
pub fn run_calibrate(options: &CalibrateOptions) -> Result<i32, String> {
    if !options.shapes.is_empty() && !options.sluice.is_file() {
        // Found before the runs, not after them: the shapes are simulated last.
        return Err(format!(
            "--shape needs the simulator at {} (build it with `cargo build --release -p sluice-sim`, or give --sluice)",
            options.sluice.display()
        ));
    }
    let root = match &options.work_dir {
        Some(directory) => directory.clone(),
        None => std::env::temp_dir().join(format!("sluice-calibrate-{}-{}", std::process::id(), now().as_nanos())),
    };
    std::fs::create_dir_all(&root).map_err(|error| format!("{}: {error}", root.display()))?;
    let result = calibrate(options, &root);
    if options.work_dir.is_none() {
        let _ = std::fs::remove_dir_all(&root);
    }
    let profile = result?;
    std::fs::write(&options.out, profile.to_yaml()).map_err(|error| format!("{}: {error}", options.out.display()))?;
    println!("{}", profile.to_yaml());
    println!("wrote {}", options.out.display());
    Ok(0)
}

fn calibrate(options: &CalibrateOptions, root: &Path) -> Result<CostProfile, String> {
    let machine = Machine::this();
    println!("machine: {} with {} cores and {} MiB", machine.kind, machine.cores, machine.memory_mib);
    let devices = probe_devices(options, root, &machine)?;
    let mut runs = run_programs(options, root)?;
    let shapes = run_shapes(&options.shapes, root, &mut runs.cpu)?;
    let fit = fit_cpu(&runs.cpu);
    let latency = runs.rpc_round_trip / 2;
    let fitted = CostSpec {
        cpu_per_record: fit.cpu.map.unwrap_or_default(),
        cpu: fit.cpu.clone(),
        serialization_per_kib: fit.serialization_per_kib,
        network_latency: Some(latency.max(Duration::from_micros(1))),
        deploy_task: runs.deploy.saturating_sub(latency),
        shared_machine_cores: Some(machine.cores),
        ..devices.costs.clone()
    };
    let (factor, how) = contention_factor(&options.sluice, &shapes, &fitted, root)?;
    let mut measured = vec![
        format!(
            "sluice-real calibrate --elements {} --probe-mib {}{}",
            options.elements,
            options.probe_mib,
            options.shapes.iter().map(|shape| format!(" --shape {}", shape.display())).collect::<String>()
        ),
        format!(
            "cpu: {} real runs of {} `generated` programs at 2 sizes in both modes and of {} shapes, \
             fitted to the processes' CPU time (median error {:.1}%); per task {}, per job {} (not charged)",
            runs.cpu.len(),
            PROGRAMS.len(),
            shapes.len(),
            fit.median_error * 100.0,
            format_duration(fit.per_task),
            format_duration(fit.per_job)
        ),
        how,
    ];
    measured.extend(devices.measured);
    measured.push(format!(
        "network latency: half the median RPC round trip ({}); deploy: median TaskDeployed → TaskRunning ({}) \
         less the latency",
        format_duration(runs.rpc_round_trip),
        format_duration(runs.deploy)
    ));
    let calibrated_on = shapes.iter().map(|shape| shape.scenario.name.clone()).collect();
    let costs = fitted.with_cpu_scaled(factor);
    let text = CostProfile { machine, measured, calibrated_on, costs }.to_yaml();
    CostProfile::parse("the measured profile", &text).map_err(|error| error.to_string())
}

/// The devices' costs and how they were measured.
struct Devices {
    costs: CostSpec,
    measured: Vec<String>,
}

fn probe_devices(options: &CalibrateOptions, root: &Path, machine: &Machine) -> Result<Devices, String> {
    let disk = probe_disk(&root.join("probe.bin"), options.probe_mib)?;
    println!(
        "disk: write {} MiB/s (synced), read {} MiB/s ({}), sync {}, memory {} MiB/s",
        disk.write,
        disk.read,
        disk.read_how,
        format_duration(disk.sync),
        disk.memory
    );
    let loopback = probe_loopback(options.probe_mib)?;
    println!("loopback: {loopback} MiB/s");
    let page_cache_mib = available_memory_mib().unwrap_or(machine.memory_mib / 2).min(machine.memory_mib);
    let costs = CostSpec {
        disk_mib_per_second: disk.write,
        disk_read_mib_per_second: Some(disk.read),
        disk_sync: disk.sync,
        page_cache_mib,
        memory_mib_per_second: disk.memory,
        network_mib_per_second: loopback,
        ..CostSpec::default()
    };
    let measured = vec![
        format!(
            "disk: {} MiB written and synced, read back {}; memory: read back through the page cache; \
             sync: the median fsync of 4 KiB, 20 times",
            options.probe_mib, disk.read_how
        ),
        "page cache: MemAvailable when calibrated".to_string(),
        format!("network: {} MiB over loopback TCP", options.probe_mib),
    ];
    Ok(Devices { costs, measured })
}

/// The factor on every CPU cost that makes the simulator's job times of the shapes' runs best
/// match the real ones (least median absolute error over 0.8, 0.85, … 2.0), and how it was
/// found. CPU time measures what work costs a core; on a machine every process of the cluster
/// shares, a record takes longer than that (switching between processes and runtimes, caches).
/// 1 without shapes.
fn contention_factor(
    sluice: &Path,
    shapes: &[ShapeRuns],
    costs: &CostSpec,
    root: &Path,
) -> Result<(f64, String), String> {
    if shapes.is_empty() {
        return Ok((1.0, "contention: 1 (no shapes to fit it to)".to_string()));
    }
    let mut best: Option<(f64, f64)> = None;
    for step in 0..=24 {
        let factor = 0.8 + f64::from(step) * 0.05;
        let mut errors = Vec::new();
        for shape in shapes {
            for (mode, real) in &shape.job_times {
                let file = root.join(format!("{}-{mode}-contention.yaml", shape.scenario.name));
                let scenario =
                    Scenario { modes: vec![*mode], costs: costs.with_cpu_scaled(factor), ..shape.scenario.clone() };
                std::fs::write(&file, scenario.to_yaml()).map_err(|error| format!("{}: {error}", file.display()))?;
                let trace = root.join(format!("{}-{mode}-contention.jsonl", shape.scenario.name));
                let simulated = simulate(sluice, &file, shape.scenario.seeds.start, &trace)?;
                errors.push((simulated.as_secs_f64() / real.as_secs_f64() - 1.0).abs());
            }
        }
        let error = median(&errors).unwrap_or(f64::MAX);
        println!("  contention {factor:.2}: median error {:.1}%", error * 100.0);
        if best.is_none_or(|(_, least)| error < least) {
            best = Some((factor, error));
        }
    }
    let (factor, error) = best.expect("at least one factor was tried");
    let how = format!(
        "contention: CPU costs are the fit's × {factor:.2}, the factor that best matches the simulated job times \
         of the shapes' real runs (median error {:.1}%)",
        error * 100.0
    );
    Ok((factor, how))
}

/// What the real runs measured.
struct ProgramRuns {
    cpu: Vec<CalibrationRun>,
    rpc_round_trip: Duration,
    deploy: Duration,
}

fn run_programs(options: &CalibrateOptions, root: &Path) -> Result<ProgramRuns, String> {
    let (mut cpu, mut trips, mut deploys) = (Vec::new(), Vec::new(), Vec::new());
    for (name, program, keys) in PROGRAMS {
        for elements in [options.elements / 4, options.elements] {
            let keys = match keys {
                Keys::Few => 100,
                Keys::Many => elements.clamp(1, 100_000),
            };
            let scenario_path = root.join(format!("{name}-{elements}.yaml"));
            let text = format!(
                "name: calibrate-{name}\njob: generated\nparams: {{ program: \"{program}\", elements: {elements}, keys: {keys} }}\n\
                 cluster: {{ task_managers: 2, slots_per_task_manager: 2 }}\nparallelism: 1\nseeds: 1..2\ntime_limit: 1h\n"
            );
            std::fs::write(&scenario_path, text).map_err(|error| format!("{}: {error}", scenario_path.display()))?;
            let scenario = Scenario::load(&scenario_path).map_err(|error| error.to_string())?;
            for mode in ExecutionMode::ALL {
                let work = root.join(format!("{name}-{elements}-{mode}"));
                let run = run_mode(&scenario_path, &scenario, mode, 1, &[], None, &work)?;
                if let Some(failure) = run.failures.first() {
                    return Err(format!("calibration run {name} ({elements} elements, {mode}) failed: {failure}"));
                }
                let features = trace_features(&run.report.trace);
                println!(
                    "  {name:<10} {elements:>8} {mode:<9} cpu {:>7.3}s  job {:>7.3}s",
                    run.cpu_time.as_secs_f64(),
                    job_time(&run.report.trace).unwrap_or_default().as_secs_f64()
                );
                cpu.push(CalibrationRun { features, cpu_time: run.cpu_time });
                trips.push(run.rpc_round_trip.as_secs_f64());
                deploys.extend(deploy_latencies(&run.report.trace).iter().map(Duration::as_secs_f64));
                let _ = std::fs::remove_dir_all(&work);
            }
        }
    }
    let seconds = |values: &[f64]| Duration::from_secs_f64(median(values).unwrap_or(0.0).max(0.0));
    Ok(ProgramRuns { cpu, rpc_round_trip: seconds(&trips), deploy: seconds(&deploys) })
}

/// A shape's real runs: the scenario, and each mode's median job time.
struct ShapeRuns {
    scenario: Scenario,
    job_times: Vec<(ExecutionMode, Duration)>,
}

/// Runs each shape's modes twice for real, adding what they did and their CPU time to `cpu`.
fn run_shapes(shapes: &[PathBuf], root: &Path, cpu: &mut Vec<CalibrationRun>) -> Result<Vec<ShapeRuns>, String> {
    if shapes.len() > MAX_SHAPES {
        return Err(format!(
            "--shape: {} shapes; calibrate on at most {MAX_SHAPES} and judge on the rest",
            shapes.len()
        ));
    }
    let mut measured = Vec::new();
    for path in shapes {
        let scenario = Scenario::load(path).map_err(|error| error.to_string())?;
        let mut job_times = Vec::new();
        for mode in scenario.modes.clone() {
            let mut times = Vec::new();
            for run in 0..2 {
                let work = root.join(format!("{}-{mode}-{run}", scenario.name));
                let result = run_mode(path, &scenario, mode, scenario.seeds.start, &[], None, &work)?;
                if let Some(failure) = result.failures.first() {
                    return Err(format!("calibration run of {} ({mode}) failed: {failure}", path.display()));
                }
                let time = job_time(&result.report.trace).unwrap_or(result.report.wall_time);
                println!(
                    "  {:<19} {mode:<9} cpu {:>7.3}s  job {:>7.3}s",
                    scenario.name,
                    result.cpu_time.as_secs_f64(),
                    time.as_secs_f64()
                );
                cpu.push(CalibrationRun { features: trace_features(&result.report.trace), cpu_time: result.cpu_time });
                times.push(time.as_secs_f64());
                let _ = std::fs::remove_dir_all(&work);
            }
            job_times.push((mode, Duration::from_secs_f64(median(&times).unwrap_or(0.0))));
        }
        measured.push(ShapeRuns { scenario, job_times });
    }
    Ok(measured)
}

/// Disk and memory bandwidths, MiB/s.
struct DiskProbe {
    write: u64,
    sync: Duration,
    read: u64,
    read_how: &'static str,
    memory: u64,
}

fn mib_per_second(mib: u64, took: Duration) -> u64 {
    ((mib as f64 / took.as_secs_f64().max(1e-9)) as u64).max(1)
}

/// Writes `mib` MiB to `path` and syncs it; reads it past the page cache, then through it.
fn probe_disk(path: &Path, mib: u64) -> Result<DiskProbe, String> {
    let io = |error: std::io::Error| format!("probing the disk at {}: {error}", path.display());
    let chunk = vec![0x5au8; 1 << 20];
    let started = Instant::now();
    let mut file = std::fs::File::create(path).map_err(io)?;
    for _ in 0..mib {
        file.write_all(&chunk).map_err(io)?;
    }
    file.sync_all().map_err(io)?;
    let write = mib_per_second(mib, started.elapsed());
    drop(file);
    let (read, read_how) = match read_direct(path, mib) {
        Ok(took) => (mib_per_second(mib, took), "with O_DIRECT"),
        Err(_) => (write, "O_DIRECT refused here: taken as the write bandwidth"),
    };
    // Once to fill the page cache, once to time it.
    read_all(path).map_err(io)?;
    let started = Instant::now();
    read_all(path).map_err(io)?;
    let memory = mib_per_second(mib, started.elapsed());
    std::fs::remove_file(path).map_err(io)?;
    let sync = probe_sync(&path.with_extension("sync")).map_err(io)?;
    Ok(DiskProbe { write, sync, read, read_how, memory })
}

/// The median time to write 4 KiB to a fresh file and fsync it, over 20 files.
fn probe_sync(path: &Path) -> std::io::Result<Duration> {
    let mut times = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let mut file = std::fs::File::create(path)?;
        file.write_all(&[0x5a; 4096])?;
        file.sync_all()?;
        times.push(started.elapsed());
        std::fs::remove_file(path)?;
    }
    times.sort();
    Ok(times[times.len() / 2])
}

fn read_all(path: &Path) -> std::io::Result<()> {
    let mut file = std::fs::File::open(path)?;
    let mut buffer = vec![0u8; 1 << 20];
    while file.read(&mut buffer)? > 0 {}
    Ok(())
}

/// Reads the file with `O_DIRECT` (past the page cache) into a 4 KiB-aligned buffer.
fn read_direct(path: &Path, mib: u64) -> std::io::Result<Duration> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(path)?;
    let mut backing = vec![0u8; (1 << 20) + 4096];
    let offset = (4096 - backing.as_ptr() as usize % 4096) % 4096;
    let buffer = &mut backing[offset..offset + (1 << 20)];
    let started = Instant::now();
    let mut read = 0u64;
    loop {
        let got = file.read(buffer)?;
        if got == 0 {
            break;
        }
        read += got as u64;
    }
    if read < mib << 20 {
        return Err(std::io::Error::other("short read"));
    }
    Ok(started.elapsed())
}

/// Sends `mib` MiB over a TCP connection on 127.0.0.1 to a thread that reads it (the
/// launcher's own thread, not the engine's); MiB/s.
fn probe_loopback(mib: u64) -> Result<u64, String> {
    let io = |error: std::io::Error| format!("probing loopback: {error}");
    let listener = TcpListener::bind("127.0.0.1:0").map_err(io)?;
    let address = listener.local_addr().map_err(io)?;
    let reader = std::thread::spawn(move || -> std::io::Result<u64> {
        let (mut stream, _) = listener.accept()?;
        let mut buffer = vec![0u8; 1 << 20];
        let mut total = 0u64;
        loop {
            let got = stream.read(&mut buffer)?;
            if got == 0 {
                return Ok(total);
            }
            total += got as u64;
        }
    });
    let chunk = vec![0xa5u8; 1 << 20];
    let started = Instant::now();
    let mut stream = TcpStream::connect(address).map_err(io)?;
    for _ in 0..mib {
        stream.write_all(&chunk).map_err(io)?;
    }
    drop(stream);
    let received = reader.join().map_err(|_| "probing loopback: the reader panicked".to_string())?.map_err(io)?;
    let took = started.elapsed();
    if received != mib << 20 {
        return Err(format!("probing loopback: {received} bytes arrived of {}", mib << 20));
    }
    Ok(mib_per_second(mib, took))
}

/// `MemAvailable` of `/proc/meminfo`, MiB.
fn available_memory_mib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|line| line.starts_with("MemAvailable:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? / 1024)
}
