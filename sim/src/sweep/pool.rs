//! The supervisor side of a sweep: a pool of worker processes, each re-executing the `sluice`
//! binary as `sluice __worker` (as cargo-nextest runs each test in a process of its own).
//!
//! Each of `jobs` slots keeps one worker and hands it one seed at a time, so a seed that takes
//! its process down (a panic outside the simulation, an abort, a stack overflow, the memory
//! limit) or never answers (the wall-clock watchdog kills it) is known exactly: it is recorded
//! as crashed with why, gets a replay file, and the slot starts a new worker for the next seed.
//! A worker is also replaced after `seeds_per_worker` seeds, so that whatever one might leak is
//! returned to the system. Workers set their own memory limit (`RLIMIT_DATA`) before anything
//! else.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sluice_engine::duration::format_duration;
use sluice_engine::graph::ExecutionMode;

use super::record::SeedRecord;
use super::worker::{WorkerRequest, WorkerSetup};
use crate::replay::write_crash;
use sluice_harness::scenario::Scenario;

/// How a sweep runs its seeds.
#[derive(Clone, Debug)]
pub struct SweepConfig {
    /// The scenario.
    pub scenario: Scenario,
    /// Its file, for messages.
    pub file: String,
    /// The modes each seed runs in.
    pub modes: Vec<ExecutionMode>,
    /// Where replay files go.
    pub failures: PathBuf,
    /// Worker processes at once.
    pub jobs: usize,
    /// Check determinism on every seed (else on every twentieth).
    pub check_all_determinism: bool,
    /// A seed that takes longer than this, in wall time, is killed and reported as crashed.
    pub seed_timeout: Duration,
    /// Each worker's memory limit, in bytes.
    pub memory_limit: u64,
    /// Seeds a worker runs before it is replaced.
    pub seeds_per_worker: u64,
    /// The `sluice` binary, run as `PROGRAM __worker`.
    pub program: PathBuf,
}

/// Runs `seeds` on the pool and hands each seed's record to `on_record` as it arrives (in
/// completion order). An error if a worker cannot be started at all.
pub fn sweep(
    config: &SweepConfig,
    seeds: impl Iterator<Item = u64> + Send,
    mut on_record: impl FnMut(SeedRecord),
) -> Result<(), String> {
    let seeds = Mutex::new(seeds);
    let (sender, receiver) = mpsc::channel::<SeedRecord>();
    std::thread::scope(|scope| {
        let slots: Vec<_> = (0..config.jobs.max(1))
            .map(|_| {
                let sender = sender.clone();
                let seeds = &seeds;
                scope.spawn(move || slot(config, seeds, &sender))
            })
            .collect();
        drop(sender);
        for record in receiver {
            on_record(record);
        }
        slots.into_iter().try_for_each(|slot| slot.join().expect("internal: a sweep slot never panics"))
    })
}

/// One slot: seeds one at a time, through one worker at a time.
fn slot(
    config: &SweepConfig,
    seeds: &Mutex<impl Iterator<Item = u64>>,
    sender: &Sender<SeedRecord>,
) -> Result<(), String> {
    let mut worker: Option<Worker> = None;
    loop {
        let Some(seed) = seeds.lock().expect("internal: the seed iterator lock").next() else { break };
        let started = Instant::now();
        let mut current = match worker.take().map_or_else(|| Worker::start(config), Ok) {
            Ok(current) => current,
            Err(message) => {
                // The seed was taken: it is recorded, and this slot stops.
                let _ = sender.send(crashed(config, seed, message.clone(), started.elapsed()));
                return Err(message);
            }
        };
        let determinism = config.check_all_determinism || seed % 20 == 0;
        match current.run(WorkerRequest { seed, determinism }, config) {
            Ok(record) => {
                if current.served < config.seeds_per_worker {
                    worker = Some(current);
                } else {
                    current.finish();
                }
                if sender.send(record).is_err() {
                    break;
                }
            }
            Err(crash) => {
                let record = crashed(config, seed, crash, started.elapsed());
                if sender.send(record).is_err() {
                    break;
                }
            }
        }
    }
    if let Some(worker) = worker {
        worker.finish();
    }
    Ok(())
}

/// The record of a crashed seed, with its replay file.
fn crashed(config: &SweepConfig, seed: u64, crash: String, wall: Duration) -> SeedRecord {
    // The schedule is a pure function of the seed; should it panic all the same, the crash is
    // still recorded (without its fault kinds) rather than taking the sweep down.
    let schedule = std::panic::catch_unwind(|| config.scenario.schedule(seed)).unwrap_or_default();
    let faults = schedule.iter().map(|fault| fault.kind.name().to_string()).collect();
    let mut record = SeedRecord::crashed(&config.scenario.name, seed, faults, crash, wall.as_millis() as u64);
    match write_crash(&config.failures, &config.scenario, seed, record.crash.as_deref().unwrap_or("")) {
        Ok(path) => record.replay_file = Some(path.display().to_string()),
        Err(error) => eprintln!("sluice: cannot write a replay file: {error}"),
    }
    record
}

/// The last bytes a worker wrote to standard error since its current seed started.
type StderrTail = Arc<Mutex<Vec<u8>>>;

/// How much of a worker's standard error is kept.
const STDERR_KEPT: usize = 16 * 1024;

/// A running worker process.
struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: StderrTail,
    stderr_reader: Option<JoinHandle<()>>,
    served: u64,
}

impl Worker {
    fn start(config: &SweepConfig) -> Result<Worker, String> {
        let mut child = Command::new(&config.program)
            .arg("__worker")
            .arg("--memory-limit")
            .arg(config.memory_limit.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("cannot start a worker process ({}): {error}", config.program.display()))?;
        let stdout = child.stdout.take().expect("piped");
        let stderr_pipe = child.stderr.take().expect("piped");
        let (line_sender, lines) = mpsc::channel();
        std::thread::spawn(move || read_lines(stdout, &line_sender));
        let stderr: StderrTail = Arc::default();
        let tail = Arc::clone(&stderr);
        let stderr_reader = Some(std::thread::spawn(move || keep_tail(stderr_pipe, &tail)));
        let mut worker = Worker { child, stdin: None, lines, stderr, stderr_reader, served: 0 };
        let setup = WorkerSetup {
            revision: crate::replay::GIT_REVISION.to_string(),
            file: config.file.clone(),
            scenario: config.scenario.to_yaml(),
            modes: config.modes.clone(),
            failures: config.failures.clone(),
        };
        let mut stdin = worker.child.stdin.take().expect("piped");
        let line = serde_json::to_string(&setup).expect("internal: a worker setup serializes");
        // A worker that cannot read its setup dies; its first seed then says why.
        let _ = writeln!(stdin, "{line}").and_then(|()| stdin.flush());
        worker.stdin = Some(stdin);
        Ok(worker)
    }

    /// Runs one seed; the crash, if the worker died or the watchdog killed it.
    fn run(&mut self, request: WorkerRequest, config: &SweepConfig) -> Result<SeedRecord, String> {
        self.stderr.lock().expect("internal: the stderr lock").clear();
        self.served += 1;
        let line = serde_json::to_string(&request).expect("internal: a request serializes");
        let stdin = self.stdin.as_mut().expect("internal: a running worker has its input");
        if writeln!(stdin, "{line}").and_then(|()| stdin.flush()).is_err() {
            return Err(self.died(config));
        }
        let deadline = Instant::now() + config.seed_timeout;
        loop {
            match self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => match serde_json::from_str::<SeedRecord>(&line) {
                    Ok(record) if record.seed == request.seed => return Ok(record),
                    _ => self.note(&line),
                },
                Err(RecvTimeoutError::Disconnected) => return Err(self.died(config)),
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(format!(
                        "no result within {} of wall time: the watchdog killed its worker (--seed-timeout){}",
                        format_duration(config.seed_timeout),
                        self.last_words().map(|words| format!("; it said: {words}")).unwrap_or_default()
                    ));
                }
            }
        }
    }

    /// A line on standard output that is not a record: kept with what the worker said.
    fn note(&self, line: &str) {
        let mut tail = self.stderr.lock().expect("internal: the stderr lock");
        tail.extend_from_slice(line.as_bytes());
        tail.push(b'\n');
        trim_tail(&mut tail);
    }

    /// Why the worker died: how it ended and what it said last.
    fn died(&mut self, config: &SweepConfig) -> String {
        self.stdin = None;
        // Its output ended: it is exiting, or (a line too long, say) it must be made to.
        let deadline = Instant::now() + Duration::from_secs(5);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let status = self.child.wait();
        if let Some(reader) = self.stderr_reader.take() {
            let _ = reader.join();
        }
        let how = match status {
            Ok(status) => describe_exit(status),
            Err(error) => format!("its worker could not be waited for: {error}"),
        };
        let mut crash = match self.last_words() {
            Some(words) => format!("{how}: {words}"),
            None => how,
        };
        if crash.contains("memory allocation of") {
            crash.push_str(&format!(
                " (the worker's memory limit is {}; see --memory-limit)",
                sluice_harness::words::size(config.memory_limit)
            ));
        }
        crash
    }

    fn last_words(&self) -> Option<String> {
        let tail = self.stderr.lock().expect("internal: the stderr lock");
        crash_message(&String::from_utf8_lossy(&tail))
    }

    /// Ends the worker: closes its input and waits for it.
    fn finish(mut self) {
        self.stdin = None;
        let _ = self.child.wait();
        if let Some(reader) = self.stderr_reader.take() {
            let _ = reader.join();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The longest line read from a worker's standard output: a record is far smaller.
const MAX_LINE: u64 = 1 << 20;

/// Forwards a worker's output lines (lossy UTF-8); stops at the end, or at a line longer than
/// [`MAX_LINE`].
fn read_lines(stdout: impl Read, sender: &Sender<String>) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader).take(MAX_LINE).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line.last() != Some(&b'\n') && line.len() as u64 == MAX_LINE => return,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line).trim_end_matches(['\n', '\r']).to_string();
                if sender.send(text).is_err() {
                    return;
                }
            }
        }
    }
}

fn trim_tail(tail: &mut Vec<u8>) {
    if tail.len() > STDERR_KEPT {
        let excess = tail.len() - STDERR_KEPT;
        tail.drain(..excess);
    }
}

/// Reads a worker's standard error to its end, keeping the last [`STDERR_KEPT`] bytes.
fn keep_tail(mut pipe: impl Read, tail: &StderrTail) {
    let mut buffer = [0u8; 4096];
    while let Ok(read) = pipe.read(&mut buffer) {
        if read == 0 {
            break;
        }
        let mut tail = tail.lock().expect("internal: the stderr lock");
        tail.extend_from_slice(&buffer[..read]);
        trim_tail(&mut tail);
    }
}

/// How a worker process ended, in words.
pub fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(signal) = status.signal() {
        let name = match signal {
            4 => " (SIGILL)",
            6 => " (SIGABRT)",
            7 => " (SIGBUS)",
            8 => " (SIGFPE)",
            9 => " (SIGKILL)",
            11 => " (SIGSEGV)",
            15 => " (SIGTERM)",
            _ => "",
        };
        return format!("its worker was killed by signal {signal}{name}");
    }
    match status.code() {
        Some(101) => "its worker panicked outside the simulation (exit status 101)".to_string(),
        Some(code) => format!("its worker exited with status {code} before answering"),
        None => "its worker ended without an exit status".to_string(),
    }
}

/// Lines a process prints as it dies of something other than a panic.
const FATAL: [&str; 3] = ["has overflowed its stack", "memory allocation of", "fatal runtime error"];

fn is_fatal(line: &str) -> bool {
    FATAL.iter().any(|marker| line.contains(marker))
}

/// What a dying process said that explains it: a panic's location and message, a fatal
/// runtime error, a failed allocation; else its last line. `None` if it said nothing.
pub fn crash_message(stderr: &str) -> Option<String> {
    let lines: Vec<&str> = stderr.lines().map(str::trim_end).filter(|line| !line.trim().is_empty()).collect();
    let last_panic = lines.iter().rposition(|line| line.contains("panicked at"));
    let last_fatal = lines.iter().rposition(|line| is_fatal(line));
    let message = match (last_panic, last_fatal) {
        (Some(panic), fatal) if fatal.is_none_or(|fatal| fatal < panic) => {
            let body = lines[panic + 1..]
                .iter()
                .take_while(|line| !line.starts_with("note:") && !line.starts_with("stack backtrace:"))
                .take(5);
            std::iter::once(lines[panic]).chain(body.copied()).collect::<Vec<_>>().join(" ")
        }
        (_, Some(fatal)) => {
            let first = lines[..fatal].iter().rposition(|line| !is_fatal(line)).map_or(0, |index| index + 1);
            lines[first..=fatal].join(" ")
        }
        _ => lines.last()?.to_string(),
    };
    Some(sluice_harness::words::printable(&message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_told_by_its_location_and_message_without_the_backtrace() {
        let stderr = "noise\nthread 'main' panicked at sim/src/seed.rs:40:9:\nthe harness crashes on seed 3\n\
                      stack backtrace:\n   0: rust_begin_unwind\n             at /rustc/x\n";
        assert_eq!(
            crash_message(stderr).unwrap(),
            "thread 'main' panicked at sim/src/seed.rs:40:9: the harness crashes on seed 3"
        );
    }

    #[test]
    fn fatal_runtime_errors_and_failed_allocations_are_kept_whole() {
        let stderr = "\nthread 'sim-x' has overflowed its stack\nfatal runtime error: stack overflow, aborting\n";
        assert_eq!(
            crash_message(stderr).unwrap(),
            "thread 'sim-x' has overflowed its stack fatal runtime error: stack overflow, aborting"
        );
        assert_eq!(
            crash_message("memory allocation of 16777216 bytes failed\n").unwrap(),
            "memory allocation of 16777216 bytes failed"
        );
        assert_eq!(crash_message("just this\n").unwrap(), "just this");
        assert_eq!(crash_message("\n  \n"), None);
        assert_eq!(crash_message("a \u{1b}[2J clear\n").unwrap(), "a \\u{1b}[2J clear");
    }
}
