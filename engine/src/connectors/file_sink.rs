//! [`FileSink`]: exactly-once rows as CSV files, with Flink's `FileSink` semantics.
//!
//! A file moves through three states, as in Flink's `FileSink` (FLIP-143) with its
//! `OnCheckpointRollingPolicy`:
//!
//! ```text
//!   in-progress ──(pre-commit: barrier or end of input, synced)──> pending ──(commit: rename)──> committed
//!   sinks/<table>/in-progress/part-<op>-<subtask>-<suffix>.attempt-<a>      sinks/<table>/part-<op>-<subtask>-<suffix>
//! ```
//!
//! The suffix is `c<N>` for the rows written before checkpoint `N`'s barrier (and after the
//! previous one's), `eoi` without checkpoints. Files live in the durable store (the cluster's
//! distributed file system: a directory on the real disk, `data/durable-store/sinks/`, in real
//! mode), so a reader sees only committed files (`part-*`) and never a partial one. A commit is
//! a rename, applied at most once: retried after a lost answer it finds the committed name
//! taken, and so does a later attempt that wrote the same rows again (its pending file is then
//! deleted). Pending files of failed
//! attempts stay under `in-progress/` (Flink too leaves them to the user).
//!
//! Rows are `key,value` CSV lines (RFC 4180 quoting where needed), in write order; a table
//! declared `upsert` reads as an upsert stream in commit order, the last row of a key winning.

use std::net::SocketAddr;
use std::sync::Arc;

use super::txn_store::{Row, SinkKind};
use crate::api::{BoxFuture, Committer, DecodeError, OperatorError, Record, Sink, SinkWriter, TaskInfo};
use crate::rt::task::{JoinHandle, spawn};
use crate::storage::remote::RemoteStorage;
use crate::storage::{Storage, StorageError};

/// The name under which the durable store's address is registered in `ExternalSystems`.
pub const DURABLE_STORE_SYSTEM: &str = "durable-store";
/// Where sinks keep their files in the durable store.
pub const SINKS_PREFIX: &str = "sinks/";
/// The transaction ids that commits of files are traced under: `files/<table>#<op>/<subtask>/<suffix>`.
pub const FILE_TXN_PREFIX: &str = "files/";
/// A writer ships its buffer to its in-progress file once it holds this many bytes.
const FLUSH_BYTES: usize = 256 * 1024;

/// Writes an element's row (Flink's row-format `Encoder`).
type RowEncoder<T> = Arc<dyn Fn(&T, &mut CsvRow) + Send + Sync>;

/// Where a [`FileSink`]'s encoder writes an element's row: straight into the file's buffer.
pub struct CsvRow<'a> {
    out: &'a mut Vec<u8>,
    /// A reused buffer a [`Shown`] field is formatted into before it is quoted.
    field: &'a mut String,
}

impl CsvRow<'_> {
    /// Writes one row: the key, then the value.
    pub fn write(&mut self, key: &dyn CsvField, value: &dyn CsvField) {
        key.write_field(self.out, self.field);
        self.out.push(b',');
        value.write_field(self.out, self.field);
        self.out.push(b'\n');
    }
}

/// A value a [`CsvRow`] writes as one field (quoted where RFC 4180 needs it). Strings and
/// integers are written directly; any other `Display` type through [`Shown`].
pub trait CsvField {
    /// Appends the field to `out`; `scratch` is a reused buffer to format into.
    fn write_field(&self, out: &mut Vec<u8>, scratch: &mut String);
}

/// A field written as its `Display` shows it: `row.write(&key, &Shown(&value))`.
pub struct Shown<T>(pub T);

impl<T: std::fmt::Display> CsvField for Shown<T> {
    fn write_field(&self, out: &mut Vec<u8>, scratch: &mut String) {
        scratch.clear();
        std::fmt::Write::write_fmt(scratch, format_args!("{}", self.0)).expect("formatting into a String");
        write_csv_field(out, scratch);
    }
}

impl CsvField for str {
    fn write_field(&self, out: &mut Vec<u8>, _: &mut String) {
        write_csv_field(out, self);
    }
}

impl CsvField for String {
    fn write_field(&self, out: &mut Vec<u8>, _: &mut String) {
        write_csv_field(out, self);
    }
}

impl<T: CsvField + ?Sized> CsvField for &T {
    fn write_field(&self, out: &mut Vec<u8>, scratch: &mut String) {
        (**self).write_field(out, scratch);
    }
}

/// Appends `value`'s decimal digits (what `Display` writes, without its formatting machinery).
fn write_decimal(out: &mut Vec<u8>, negative: bool, mut value: u128) {
    let mut digits = [0u8; 40];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    if negative {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[start..]);
}

macro_rules! integer_fields {
    ($($integer:ty),+) => {$(
        impl CsvField for $integer {
            #[allow(unused_comparisons)]
            fn write_field(&self, out: &mut Vec<u8>, _: &mut String) {
                write_decimal(out, *self < 0, (*self as i128).unsigned_abs());
            }
        }
    )+};
}
integer_fields!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

/// An exactly-once sink of CSV files; see the module doc.
pub struct FileSink<T> {
    table: String,
    kind: SinkKind,
    to_row: RowEncoder<T>,
}

impl<T: Record> FileSink<T> {
    /// Files of rows read as an upsert stream (a key's last committed row is its value).
    pub fn upsert(table: &str, to_row: impl Fn(&T) -> (String, String) + Send + Sync + 'static) -> FileSink<T> {
        FileSink::new(table, SinkKind::Upsert, owned_rows(to_row))
    }

    /// Files of rows, every one kept.
    pub fn append(table: &str, to_row: impl Fn(&T) -> (String, String) + Send + Sync + 'static) -> FileSink<T> {
        FileSink::new(table, SinkKind::Append, owned_rows(to_row))
    }

    /// [`FileSink::upsert`] with an encoder that writes each row itself (Flink's row-format
    /// `Encoder`), from the element's fields, without making strings of them:
    /// `|pair, row| row.write(&pair.0, &pair.1)`.
    pub fn upsert_with_encoder(table: &str, encoder: impl Fn(&T, &mut CsvRow) + Send + Sync + 'static) -> FileSink<T> {
        FileSink::new(table, SinkKind::Upsert, Arc::new(encoder))
    }

    /// [`FileSink::append`] with an encoder, as [`FileSink::upsert_with_encoder`].
    pub fn append_with_encoder(table: &str, encoder: impl Fn(&T, &mut CsvRow) + Send + Sync + 'static) -> FileSink<T> {
        FileSink::new(table, SinkKind::Append, Arc::new(encoder))
    }

    fn new(table: &str, kind: SinkKind, to_row: RowEncoder<T>) -> FileSink<T> {
        let valid = !table.is_empty() && table.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        assert!(valid, "a file sink's table is a directory name of letters, digits, `-` and `_`: `{table}`");
        FileSink { table: table.to_string(), kind, to_row }
    }
}

/// The encoder of a function that makes a row's two strings.
fn owned_rows<T: 'static>(to_row: impl Fn(&T) -> (String, String) + Send + Sync + 'static) -> RowEncoder<T> {
    Arc::new(move |element: &T, row: &mut CsvRow| {
        let (key, value) = to_row(element);
        row.write(&key, &value);
    })
}

/// A pending file and the name that commits it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileCommittable {
    /// The synced in-progress file.
    pub pending: String,
    /// Its committed name.
    pub committed: String,
}

impl Record for FileCommittable {
    fn encode(&self, out: &mut Vec<u8>) {
        self.pending.encode(out);
        self.committed.encode(out);
    }
    fn decode(input: &mut &[u8]) -> Result<Self, DecodeError> {
        Ok(FileCommittable { pending: String::decode(input)?, committed: String::decode(input)? })
    }
}

/// The committed file of a subtask's rows for `suffix` (`c<N>` or `eoi`).
pub fn committed_path(table: &str, task: &TaskInfo, suffix: &str) -> String {
    format!("{SINKS_PREFIX}{table}/part-{}-{}-{suffix}", task.operator_id, task.subtask_index)
}

/// The in-progress file an attempt writes those rows to.
pub fn in_progress_path(table: &str, task: &TaskInfo, suffix: &str) -> String {
    format!(
        "{SINKS_PREFIX}{table}/in-progress/part-{}-{}-{suffix}.attempt-{}",
        task.operator_id, task.subtask_index, task.attempt
    )
}

/// A committed file's parts: its table and the transaction id its commit is traced under
/// (so that `txn_table` and `txn_checkpoint` read them as a store's); `None` for other paths.
pub fn committed_file_txn(path: &str) -> Option<(&str, String)> {
    let (table, name) = path.strip_prefix(SINKS_PREFIX)?.split_once('/')?;
    let mut parts = name.strip_prefix("part-")?.splitn(3, '-');
    let (operator, subtask, suffix) = (parts.next()?, parts.next()?, parts.next()?);
    let numeric = |text: &str| !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit());
    (numeric(operator) && numeric(subtask) && !suffix.contains('/'))
        .then(|| (table, format!("{FILE_TXN_PREFIX}{table}#{operator}/{subtask}/{suffix}")))
}

/// The attempt that wrote an in-progress file.
pub fn in_progress_attempt(path: &str) -> Option<u64> {
    path.rsplit_once(".attempt-")?.1.parse().ok()
}

/// Appends one CSV record of two fields.
pub fn write_csv_row(out: &mut Vec<u8>, key: &str, value: &str) {
    write_csv_field(out, key);
    out.push(b',');
    write_csv_field(out, value);
    out.push(b'\n');
}

fn write_csv_field(out: &mut Vec<u8>, field: &str) {
    // By byte: these are ASCII, and no byte of a multi-byte UTF-8 character is.
    if field.bytes().any(|byte| matches!(byte, b',' | b'"' | b'\n' | b'\r')) {
        out.push(b'"');
        out.extend_from_slice(field.replace('"', "\"\"").as_bytes());
        out.push(b'"');
    } else {
        out.extend_from_slice(field.as_bytes());
    }
}

/// The rows of a CSV file of two-field records, as [`write_csv_row`] writes them; an error
/// names the record that is not one.
pub fn parse_csv_rows(bytes: &[u8]) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    super::csv::for_each_record(bytes, |record, fields| {
        let [key, value]: [String; 2] = std::mem::take(fields)
            .try_into()
            .map_err(|fields: Vec<String>| format!("record {record} has {} fields, not 2", fields.len()))?;
        rows.push(Row::new(key, value));
        Ok(())
    })?;
    Ok(rows)
}

/// Counts the CSV records of a file fed in pieces of any size (a quoted newline is not a
/// record's end), without holding the file or its rows.
#[derive(Clone, Copy, Debug, Default)]
pub struct CsvRecordCounter {
    quoted: bool,
    /// Records ended so far.
    pub records: u64,
}

impl CsvRecordCounter {
    /// Counts the records that end in `bytes`: the newlines outside quotes, a run between two
    /// quotes at a time (`""` inside quotes toggles twice: still quoted). A store counts a
    /// committed file's rows with this, so it must keep up with the disk: the runs are found with
    /// `memchr` and their newlines counted by a loop the compiler vectorizes.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        loop {
            let quote = memchr::memchr(b'"', bytes);
            if !self.quoted {
                self.records += newlines(&bytes[..quote.unwrap_or(bytes.len())]);
            }
            let Some(at) = quote else { return };
            self.quoted = !self.quoted;
            bytes = &bytes[at + 1..];
        }
    }
}

/// The newlines in `bytes`, 64 at a time (a byte counter cannot overflow in a chunk).
fn newlines(bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(64);
    let mut count = 0;
    for chunk in &mut chunks {
        count += u64::from(chunk.iter().fold(0u8, |sum, byte| sum + u8::from(*byte == b'\n')));
    }
    count + chunks.remainder().iter().filter(|byte| **byte == b'\n').count() as u64
}

/// A piece of a file read from a remote store: few round trips, each well within a frame.
pub const REMOTE_PIECE: u64 = 4 * 1024 * 1024;

/// A piece of a file read from a local disk: small enough that its buffer is reused warm
/// (a fresh 4 MiB buffer is fresh pages for the kernel to zero, every piece).
pub const LOCAL_PIECE: u64 = 256 * 1024;

/// Reads a whole file in pieces of at most `piece` bytes, one storage call each.
pub async fn read_in_pieces(
    storage: &dyn Storage,
    path: &str,
    piece: u64,
    mut visit: impl FnMut(&[u8]),
) -> Result<(), StorageError> {
    assert!(piece > 0, "a file is read in pieces of at least a byte");
    let length = storage.length(path).await?;
    let mut offset = 0;
    while offset < length {
        let piece = piece.min(length - offset);
        visit(&storage.read(path, offset, piece).await?);
        offset += piece;
    }
    Ok(())
}

fn storage_of(task: &TaskInfo) -> Result<RemoteStorage, OperatorError> {
    let address: SocketAddr = task.external.address(DURABLE_STORE_SYSTEM)?;
    Ok(RemoteStorage::new(address).with_reconnect(task.external.reconnect()))
}

fn failed(what: &str, path: &str, error: StorageError) -> OperatorError {
    OperatorError::new(format!("{DURABLE_STORE_SYSTEM}: {what} `{path}`: {error}"))
}

impl<T: Record> Sink<T> for FileSink<T> {
    type Committable = FileCommittable;

    fn create_writer(&self, task: &TaskInfo) -> Box<dyn SinkWriter<T, FileCommittable>> {
        let suffix = if task.checkpointing {
            format!("c{}", task.restored_checkpoint.unwrap_or(0) + 1)
        } else {
            "eoi".to_string()
        };
        Box::new(FileWriter {
            table: self.table.clone(),
            to_row: Arc::clone(&self.to_row),
            task: task.clone(),
            storage: None,
            shipping: None,
            spare: Vec::new(),
            suffix,
            buffer: Vec::new(),
            field: String::new(),
            written: false,
            shipped_bytes: 0,
        })
    }

    fn create_committer(&self, task: &TaskInfo) -> Box<dyn Committer<FileCommittable>> {
        Box::new(FileCommitter { task: task.clone(), storage: None })
    }
}

impl<T> FileSink<T> {
    /// How the table's rows apply.
    pub fn kind(&self) -> SinkKind {
        self.kind
    }
}

/// An append under way: it hands its buffer back when done.
type Append = JoinHandle<Result<Vec<u8>, StorageError>>;

struct FileWriter<T> {
    table: String,
    to_row: RowEncoder<T>,
    task: TaskInfo,
    storage: Option<Arc<RemoteStorage>>,
    /// The append under way, if any, and the file it appends to. At most one: a file's appends
    /// must arrive in order. The task writes the next buffer's rows meanwhile, so that the
    /// store's round trips are not the sink's time (Flink's writer hands its bytes to a
    /// buffered output stream the same way).
    shipping: Option<(String, Append)>,
    /// The buffer of the last append done, emptied: the next buffer (no allocation a ship).
    spare: Vec<u8>,
    /// The suffix of the file being written: `c<N>` or `eoi`.
    suffix: String,
    buffer: Vec<u8>,
    /// A reused buffer for formatting a field.
    field: String,
    /// The in-progress file has bytes.
    written: bool,
    /// The bytes shipped to the in-progress file: where the next append must start, and what
    /// its sync must find (a crash of the store that lost an append is an error, never a
    /// committed file without those rows).
    shipped_bytes: u64,
}

impl<T> FileWriter<T> {
    fn in_progress(&self) -> String {
        in_progress_path(&self.table, &self.task, &self.suffix)
    }

    /// Starts appending the buffer to the in-progress file, once the append before it is done.
    async fn ship(&mut self) -> Result<(), OperatorError> {
        self.shipped().await?;
        assert!(self.shipping.is_none(), "sink invariant: at most one append to `{}` is under way", self.in_progress());
        if self.buffer.is_empty() {
            return Ok(());
        }
        let storage = match &self.storage {
            Some(storage) => Arc::clone(storage),
            None => Arc::clone(self.storage.insert(Arc::new(storage_of(&self.task)?))),
        };
        let path = self.in_progress();
        let bytes = std::mem::replace(&mut self.buffer, std::mem::take(&mut self.spare));
        assert!(self.buffer.is_empty(), "sink invariant: a ship of `{path}` starts the next buffer empty");
        let file = path.clone();
        let offset = self.shipped_bytes;
        self.shipped_bytes += bytes.len() as u64;
        let append = spawn(async move { storage.append_at(&file, offset, &bytes).await.map(|()| bytes) });
        self.shipping = Some((path, append));
        self.written = true;
        Ok(())
    }

    /// Waits for the append under way; its buffer, emptied, is the one after the next.
    async fn shipped(&mut self) -> Result<(), OperatorError> {
        let Some((path, append)) = self.shipping.take() else { return Ok(()) };
        let joined = append.await.map_err(|error| OperatorError::new(format!("appending to `{path}`: {error}")))?;
        let mut bytes = joined.map_err(|error| failed("append to", &path, error))?;
        bytes.clear();
        self.spare = bytes;
        Ok(())
    }

    async fn prepare(&mut self) -> Result<Vec<FileCommittable>, OperatorError> {
        self.ship().await?;
        self.shipped().await?;
        self.check_shipped();
        if !self.written {
            return Ok(Vec::new()); // no rows since the last checkpoint: no file
        }
        let pending = self.in_progress();
        let storage = self.storage.as_ref().expect("written through it");
        storage.sync_through(&pending, self.shipped_bytes).await.map_err(|error| failed("sync", &pending, error))?;
        let committed = committed_path(&self.table, &self.task, &self.suffix);
        // The durable store traces the rename to `committed` as this file's commit, and the
        // commit's attempt is read from `pending`'s name.
        assert!(
            committed_file_txn(&committed).is_some(),
            "sink invariant: a committed file's name says its transaction (`{committed}`)"
        );
        assert_eq!(
            in_progress_attempt(&pending),
            Some(u64::from(self.task.attempt)),
            "sink invariant: a pending file's name says its attempt (`{pending}`)"
        );
        Ok(vec![FileCommittable { pending, committed }])
    }

    /// What a pre-commit relies on: every row written is shipped, and no append is under way;
    /// the file has bytes exactly when some were shipped to it.
    fn check_shipped(&self) {
        assert!(self.buffer.is_empty(), "sink invariant: every row written is shipped to `{}`", self.in_progress());
        assert!(self.shipping.is_none(), "sink invariant: no append to `{}` is under way", self.in_progress());
        assert_eq!(
            self.written,
            self.shipped_bytes > 0,
            "sink invariant: `{}` has bytes exactly when some were shipped to it",
            self.in_progress()
        );
    }
}

impl<T: Record> SinkWriter<T, FileCommittable> for FileWriter<T> {
    fn write(&mut self, element: T) -> Result<(), OperatorError> {
        (self.to_row)(&element, &mut CsvRow { out: &mut self.buffer, field: &mut self.field });
        Ok(())
    }

    fn flush(&mut self, end_of_input: bool) -> BoxFuture<'_, Result<(), OperatorError>> {
        Box::pin(async move {
            if end_of_input || self.buffer.len() >= FLUSH_BYTES {
                self.ship().await?;
            }
            if end_of_input {
                self.shipped().await?;
            }
            Ok(())
        })
    }

    fn prepare_commit(&mut self) -> BoxFuture<'_, Result<Vec<FileCommittable>, OperatorError>> {
        Box::pin(self.prepare())
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> Result<Vec<u8>, OperatorError> {
        // The engine pre-commits at the barrier before it snapshots: nothing is left behind.
        self.check_shipped();
        // What follows the barrier goes into the next checkpoint's file.
        self.suffix = format!("c{}", checkpoint_id + 1);
        self.written = false;
        self.shipped_bytes = 0;
        Ok(Vec::new())
    }
}

impl<T> Drop for FileWriter<T> {
    /// A cancelled task's append stops with it (it could only reach its own attempt's file).
    fn drop(&mut self) {
        if let Some((_, append)) = self.shipping.take() {
            append.abort();
        }
    }
}

struct FileCommitter {
    task: TaskInfo,
    storage: Option<RemoteStorage>,
}

impl FileCommitter {
    async fn commit_all(&mut self, committables: Vec<FileCommittable>) -> Result<(), OperatorError> {
        if self.storage.is_none() {
            self.storage = Some(storage_of(&self.task)?);
        }
        let storage = self.storage.as_ref().expect("set above");
        for FileCommittable { pending, committed } in committables {
            match storage.rename(&pending, &committed).await {
                Ok(()) => {}
                // Committed already: by this committer, whose answer was lost, or by an earlier
                // attempt that wrote the same rows (this attempt's file is then not needed).
                Err(StorageError::AlreadyExists(_)) => {
                    storage.delete(&pending).await.map_err(|error| failed("delete", &pending, error))?;
                }
                // A retry of a rename that was applied (its answer was lost), or a pending file lost.
                Err(StorageError::NotFound(_)) => match storage.length(&committed).await {
                    Ok(_) => {}
                    Err(error) => return Err(failed("commit (the pending file is gone)", &pending, error)),
                },
                Err(error) => return Err(failed("commit", &pending, error)),
            }
        }
        Ok(())
    }
}

impl Committer<FileCommittable> for FileCommitter {
    fn commit(&mut self, committables: Vec<FileCommittable>) -> BoxFuture<'_, Result<(), OperatorError>> {
        Box::pin(self.commit_all(committables))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_counted_alike_however_a_file_is_cut_into_pieces() {
        // Quoted newlines, escaped quotes, runs longer than a 64-byte chunk, a file ending
        // inside quotes: counted byte by byte, as CSV defines a record's end.
        let long = format!("{},1\n", "w".repeat(150));
        let files = [
            format!("a,1\n\"multi\nline\",2\n\"say \"\"hi\"\"\",3\n{long}{long}\"x\n"),
            "\n\n\"\"\n\"\n\"\n".repeat(20),
            String::new(),
        ];
        for file in files {
            let bytes = file.as_bytes();
            let (mut quoted, mut expected) = (false, 0);
            for byte in bytes {
                match byte {
                    b'"' => quoted = !quoted,
                    b'\n' if !quoted => expected += 1,
                    _ => {}
                }
            }
            for cut in 0..=bytes.len() {
                let mut counter = CsvRecordCounter::default();
                counter.feed(&bytes[..cut]);
                counter.feed(&bytes[cut..]);
                assert_eq!(counter.records, expected, "cut at {cut} of {file:?}");
                assert_eq!(counter.quoted, quoted, "cut at {cut} of {file:?}");
            }
        }
    }

    #[test]
    fn csv_rows_round_trip_with_quoting_where_needed() {
        let rows = [("plain", "1"), ("a,b", "say \"hi\""), ("multi\nline", ""), ("", "\r\n")];
        let mut bytes = Vec::new();
        for (key, value) in rows {
            write_csv_row(&mut bytes, key, value);
        }
        assert!(bytes.starts_with(b"plain,1\n\"a,b\",\"say \"\"hi\"\"\"\n"));
        let parsed = parse_csv_rows(&bytes).unwrap();
        let expected: Vec<Row> = rows.iter().map(|(key, value)| Row::new(key.to_string(), value.to_string())).collect();
        assert_eq!(parsed, expected);
        assert_eq!(parse_csv_rows(b"a,b\r\nc,d\n").unwrap().len(), 2, "CRLF records too");
        assert!(parse_csv_rows(b"a,b,c\n").unwrap_err().contains("3 fields"));
        assert!(parse_csv_rows(b"a,b").unwrap_err().contains("cut short"));
        assert!(parse_csv_rows(b"\"a,b\n").unwrap_err().contains("cut short"));
        for piece in [1, 3, bytes.len()] {
            let mut counter = CsvRecordCounter::default();
            bytes.chunks(piece).for_each(|chunk| counter.feed(chunk));
            assert_eq!(counter.records, 4, "counted in pieces of {piece} bytes");
        }
    }

    #[test]
    fn an_encoder_writes_the_rows_write_csv_row_writes() {
        let rows = [("plain", 1i64), ("a,b", -2), ("say \"hi\"", 30), ("min", i64::MIN), ("max", i64::MAX), ("0", 0)];
        let (mut encoded, mut field, mut expected) = (Vec::new(), String::new(), Vec::new());
        for (key, value) in rows {
            CsvRow { out: &mut encoded, field: &mut field }.write(&key, &value);
            write_csv_row(&mut expected, key, &value.to_string());
            // Through `Display`, the same row.
            CsvRow { out: &mut encoded, field: &mut field }.write(&Shown(key), &Shown(value));
            write_csv_row(&mut expected, key, &value.to_string());
        }
        for value in [u64::MAX, 0, 7] {
            CsvRow { out: &mut encoded, field: &mut field }.write(&value.to_string(), &value);
            write_csv_row(&mut expected, &value.to_string(), &value.to_string());
        }
        CsvRow { out: &mut encoded, field: &mut field }.write(&Shown(1.5f64), &Shown("x,y"));
        write_csv_row(&mut expected, "1.5", "x,y");
        assert_eq!(String::from_utf8(encoded).unwrap(), String::from_utf8(expected).unwrap());
        // The encoding constructors and the string ones make sinks of the same kind.
        let encoder = |pair: &(String, i64), row: &mut CsvRow| row.write(&pair.0, &pair.1);
        assert_eq!(FileSink::upsert_with_encoder("t", encoder).kind(), SinkKind::Upsert);
        assert_eq!(FileSink::append_with_encoder("t", encoder).kind(), SinkKind::Append);
    }

    #[test]
    fn committed_files_name_their_table_and_a_transaction_the_checks_read() {
        let (table, txn_id) = committed_file_txn("sinks/counts/part-4-1-c7").unwrap();
        assert_eq!(table, "counts");
        assert_eq!(txn_id, "files/counts#4/1/c7");
        assert_eq!(super::super::txn_store::txn_table(&txn_id), Some("counts"));
        assert_eq!(super::super::txn_store::txn_checkpoint(&txn_id), Some(7));
        assert_eq!(super::super::txn_store::txn_checkpoint("files/counts#4/1/eoi"), None);
        assert_eq!(committed_file_txn("sinks/counts/in-progress/part-4-1-c7.attempt-0"), None);
        assert_eq!(committed_file_txn("checkpoints/1"), None);
        assert_eq!(in_progress_attempt("sinks/counts/in-progress/part-4-1-c7.attempt-12"), Some(12));
    }
}
