//! A real process's trace: the same events as in simulation, one JSON line each in a file per
//! process (`trace/<node>.jsonl`), stamped with the wall clock so that the files of one machine
//! merge into one trace in the order things happened. The merged trace is what the simulation's
//! checks read (`sluice_harness::check`), and what `sluice timeline` draws.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use sluice_engine::trace::{TraceEvent, Tracer};
use sluice_harness::trace::{TraceRecord, from_json_lines, to_json_lines};

/// Writes one process's events to its trace file; each line is written whole and at once, so a
/// `kill -9` loses at most the event being recorded.
pub struct FileTracer {
    node: String,
    file: Mutex<File>,
}

impl FileTracer {
    /// Appends to `path` (a restarted process continues its predecessor's file).
    pub fn open(path: &Path, node: &str) -> io::Result<FileTracer> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(FileTracer { node: node.to_string(), file: Mutex::new(file) })
    }
}

/// Wall-clock time since the Unix epoch.
pub fn now() -> Duration {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default()
}

impl Tracer for FileTracer {
    fn record(&self, event: TraceEvent) {
        let line = to_json_lines(&[TraceRecord { time: now(), node: self.node.clone(), event }]);
        // A full disk must not stop the engine: the trace is evidence, not state.
        let _ = self.file.lock().expect("trace file lock").write_all(line.as_bytes());
    }
}

/// Every `*.jsonl` file in `directory`, merged by time and counted from `origin`.
pub fn merge(directory: &Path, origin: Duration) -> Result<Vec<TraceRecord>, String> {
    let mut records = Vec::new();
    let entries = std::fs::read_dir(directory).map_err(|error| format!("{}: {error}", directory.display()))?;
    let mut paths: Vec<_> = entries.filter_map(Result::ok).map(|entry| entry.path()).collect();
    paths.sort();
    for path in paths.into_iter().filter(|path| path.extension().is_some_and(|extension| extension == "jsonl")) {
        let text = std::fs::read_to_string(&path).map_err(|error| format!("{}: {error}", path.display()))?;
        // A process killed mid-line leaves a partial last line: the event it was recording.
        let whole = text.rsplit_once('\n').map_or("", |(whole, _)| whole);
        records.extend(from_json_lines(whole).map_err(|error| format!("{}: {error}", path.display()))?);
    }
    // Stable: events of one process keep their order when two share a timestamp.
    records.sort_by_key(|record| record.time);
    for record in &mut records {
        record.time = record.time.saturating_sub(origin);
    }
    Ok(records)
}
