//! A directory of text files and the bounded [`FileSource`] that reads their lines (Flink's
//! `FileSource` with a text-line format).
//!
//! The files live on a storage node (the `files` external system), which serves them over the
//! storage protocol of [`crate::storage::remote`], read-only: a directory on a real disk, or the
//! simulation's files loaded into a simulated disk — the reader is the same. Each file is cut
//! into splits of at most [`SPLIT_BYTES`]; split `j` (files in name order, splits in file order)
//! belongs to subtask `j % parallelism`. A split `[start, end)` holds the lines that *start* in
//! it: a reader of a split that starts inside a line skips to the next line, and reads past `end`
//! to finish its last line, so every line is read exactly once whatever the split size. The
//! position, checkpointed, is each split's next line start and the next split to read; a reader
//! restored from it reads exactly the lines after it. A reader reads 1 MiB at a time and,
//! when it hands out a batch, starts reading the next one's bytes (on a task of its own), so
//! that the chain is not idle while they travel; a batch smaller than what was read (a source
//! with a small fetch size) leaves the rest for the split's next batches, which need no read
//! until it runs out (at most 4 MiB kept over all splits). What it has read ahead or kept is
//! never part of its position.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use super::csv::{Column, ColumnType, CsvRecord, parse_record};
use super::{ServiceClient, decode_position, encode_position};
use crate::api::registry::{InputFormat, InputSpec};
use crate::api::{BoxFuture, OperatorError, Source, SourceReader, TaskInfo};
use crate::rt::task::{JoinHandle, spawn};
use crate::storage::StorageError;
use crate::storage::remote::{StorageAnswer, StorageCall, StorageOperation};

/// The external system that serves the input files.
pub const FILES_SYSTEM: &str = "files";
/// The largest split, unless the source says otherwise.
pub const SPLIT_BYTES: u64 = 4 << 20;
/// Bytes read per request.
const CHUNK_BYTES: u64 = 1 << 20;
/// The most bytes a reader keeps read but not yet handed out, over all its splits.
const MAX_BUFFERED_BYTES: usize = 4 << 20;
/// The longest line a reader accepts: a file with a longer one is not a text file.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Reads every line of the files the `files` system serves, as `String`s (without the line
/// break; `\r\n` counts as one): all of them, or one named input's (the directory `<name>/`).
pub struct FileSource<T> {
    split_bytes: u64,
    /// The input whose files it reads (`None`: every file).
    input: Option<&'static str>,
    _type: PhantomData<fn() -> T>,
}

impl FileSource<String> {
    /// Lines of every file, in splits of [`SPLIT_BYTES`].
    pub fn lines() -> FileSource<String> {
        FileSource { split_bytes: SPLIT_BYTES, input: None, _type: PhantomData }
    }

    /// Lines of the files of one input the job declares (its format is `lines`).
    pub fn lines_of(input: &InputSpec) -> FileSource<String> {
        assert_eq!(input.format, InputFormat::Lines, "job bug: input `{}` is not declared as lines", input.name);
        FileSource { input: Some(input.name), ..FileSource::lines() }
    }

    /// Splits of at most `split_bytes` (at least 1).
    pub fn with_split_bytes(mut self, split_bytes: u64) -> FileSource<String> {
        assert!(split_bytes > 0, "a split holds at least one byte");
        self.split_bytes = split_bytes;
        self
    }
}

impl Source<String> for FileSource<String> {
    fn name(&self) -> String {
        self.input.map_or_else(|| "files".to_string(), |input| format!("files: {input}"))
    }

    fn create_reader(&self, task: &TaskInfo) -> Box<dyn SourceReader<String>> {
        Box::new(LineReader::new(task, self.split_bytes, self.input, false))
    }
}

/// Reads the records of a CSV input a job declares (Flink's `FileSource` with a `CsvReaderFormat`):
/// each file's header line is skipped, every other line becomes a `T`. A line that is not a
/// record of the input's columns fails the task with the file, where and why (the harness checks
/// a scenario's files before it runs them).
pub struct CsvSource<T> {
    lines: FileSource<String>,
    columns: &'static [Column],
    /// The most records one batch holds (every record of a read, 1 MiB, unless set).
    fetch_lines: usize,
    _type: PhantomData<fn() -> T>,
}

impl<T: CsvRecord> CsvSource<T> {
    /// The records of `input`, which must be declared as CSV with columns of `T`'s types.
    pub fn new(input: &InputSpec) -> CsvSource<T> {
        let InputFormat::Csv(columns) = input.format else {
            panic!("job bug: input `{}` is not declared as CSV", input.name)
        };
        let types: Vec<ColumnType> = columns.iter().map(|column| column.kind).collect();
        assert_eq!(
            types,
            T::TYPES,
            "job bug: input `{}` declares other column types than its records have",
            input.name
        );
        let lines = FileSource { input: Some(input.name), ..FileSource::lines() };
        CsvSource { lines, columns, fetch_lines: usize::MAX, _type: PhantomData }
    }

    /// Splits of at most `split_bytes` (at least 1).
    pub fn with_split_bytes(self, split_bytes: u64) -> CsvSource<T> {
        CsvSource { lines: self.lines.with_split_bytes(split_bytes), ..self }
    }

    /// Batches of at most `records` records (at least 1): how often the chain between a read's
    /// batches may emit a watermark or take a checkpoint.
    pub fn with_fetch_size(self, records: usize) -> CsvSource<T> {
        assert!(records > 0, "a batch holds at least one record");
        CsvSource { fetch_lines: records, ..self }
    }
}

impl<T: CsvRecord> Source<T> for CsvSource<T> {
    fn name(&self) -> String {
        self.lines.name()
    }

    fn create_reader(&self, task: &TaskInfo) -> Box<dyn SourceReader<T>> {
        let mut lines = LineReader::new(task, self.lines.split_bytes, self.lines.input, true);
        lines.fetch_lines = self.fetch_lines;
        Box::new(CsvReader { lines, columns: self.columns, _type: PhantomData })
    }
}

struct CsvReader<T> {
    lines: LineReader,
    columns: &'static [Column],
    _type: PhantomData<fn() -> T>,
}

impl<T: CsvRecord> CsvReader<T> {
    async fn next_records(&mut self) -> Result<Option<Vec<T>>, OperatorError> {
        let Some((path, offset, lines)) = self.lines.next_lines().await? else { return Ok(None) };
        let records = lines.iter().map(|line| {
            parse_record(line, self.columns).map_err(|error| {
                OperatorError::new(format!("{FILES_SYSTEM}: `{path}`, a line after byte {offset}: {error}"))
            })
        });
        records.collect::<Result<Vec<T>, _>>().map(Some)
    }
}

impl<T: CsvRecord> SourceReader<T> for CsvReader<T> {
    fn poll_next(&mut self) -> BoxFuture<'_, Result<Option<Vec<T>>, OperatorError>> {
        Box::pin(self.next_records())
    }

    fn snapshot_state(&self) -> Vec<u8> {
        self.lines.snapshot_state()
    }

    fn restore_state(&mut self, state: &[u8]) -> Result<(), OperatorError> {
        self.lines.restore_state(state)
    }
}

/// One split: file, end, the next line start, and whether that is known to start a line.
type Split = (String, u64, u64, bool);
/// A reader's position: its splits still unread and the next one to read.
type Position = (Vec<Split>, u64);

struct ReaderState {
    files: ServiceClient,
    splits: Vec<Split>,
    next_split: usize,
    /// The files' lengths, as far as known (the files do not change while they are read).
    lengths: BTreeMap<String, u64>,
    /// The read of the next batch's bytes, started when the last batch was handed out.
    ahead: Option<ReadAhead>,
    /// Per split (file, split end): the bytes read from its next line start on that the batches
    /// handed out so far did not take (a batch of a few lines takes a few of a chunk's lines;
    /// the next batch of that split starts with the rest instead of reading them again).
    buffered: BTreeMap<(String, u64), Buffered>,
}

/// Bytes of a file read but not handed out yet, from `offset` on.
struct Buffered {
    offset: u64,
    bytes: Vec<u8>,
}

impl ReaderState {
    /// What split `(path, end)` has read from `offset` on, taken out of the buffer.
    fn take_buffered(&mut self, path: &str, end: u64, offset: u64) -> Vec<u8> {
        match self.buffered.remove(&(path.to_string(), end)) {
            Some(buffered) if buffered.offset == offset => buffered.bytes,
            _ => Vec::new(),
        }
    }

    /// Keeps what split `(path, end)` read from `offset` on for its next batch (within the
    /// reader's budget: other splits' bytes go first, in split order).
    fn keep_buffered(&mut self, path: &str, end: u64, offset: u64, bytes: &[u8]) {
        let key = (path.to_string(), end);
        self.buffered.remove(&key);
        if bytes.is_empty() || offset >= end {
            return;
        }
        let mut total: usize = self.buffered.values().map(|buffered| buffered.bytes.len()).sum::<usize>() + bytes.len();
        while total > MAX_BUFFERED_BYTES {
            let Some((_, evicted)) = self.buffered.pop_first() else { break };
            total -= evicted.bytes.len();
        }
        self.buffered.insert(key, Buffered { offset, bytes: bytes.to_vec() });
    }

    /// The bytes split `(path, end)` holds from `offset` on, if any.
    fn buffered_at(&self, path: &str, end: u64, offset: u64) -> Option<&[u8]> {
        let buffered = self.buffered.get(&(path.to_string(), end))?;
        (buffered.offset == offset).then_some(buffered.bytes.as_slice())
    }
}

/// A read started before it is needed, so that the chain works on one batch while the next
/// one's bytes travel (Flink's `SplitFetcher` reads ahead of its `SourceReader` the same way).
struct ReadAhead {
    path: String,
    offset: u64,
    length: u64,
    read: JoinHandle<Result<Vec<u8>, OperatorError>>,
}

impl Drop for ReaderState {
    /// A cancelled task's read ahead stops with it.
    fn drop(&mut self) {
        if let Some(ahead) = self.ahead.take() {
            ahead.read.abort();
        }
    }
}

/// Bytes `[offset, offset + length)` of `path`.
async fn read_bytes(files: &ServiceClient, path: String, offset: u64, length: u64) -> Result<Vec<u8>, OperatorError> {
    let operation = StorageOperation::Read { path, offset, length };
    let answer = files.call(StorageCall { operation }).await?;
    match answer.map_err(|error: StorageError| OperatorError::new(format!("{FILES_SYSTEM}: {error}")))? {
        StorageAnswer::Bytes(bytes) => Ok(bytes),
        _ => Err(OperatorError::new("files: a read answered out of turn")),
    }
}

struct LineReader {
    task: TaskInfo,
    split_bytes: u64,
    /// The input whose files it reads (`None`: every file).
    input: Option<&'static str>,
    /// Each file's first line is a header, not data.
    skip_header: bool,
    /// The most lines one batch holds.
    fetch_lines: usize,
    state: Option<ReaderState>,
    restored: Option<Position>,
}

/// The splits of `split_bytes` of files (name, length) in order, those of subtask `index` of
/// `parallelism`.
pub fn assign_splits(files: &[(String, u64)], split_bytes: u64, index: u32, parallelism: u32) -> Vec<Split> {
    let all = files.iter().flat_map(|(path, length)| {
        (0..length.div_ceil(split_bytes)).map(move |split| {
            let start = split * split_bytes;
            (path.clone(), (start + split_bytes).min(*length), start, start == 0)
        })
    });
    all.enumerate()
        .filter(|(number, _)| *number as u64 % parallelism as u64 == index as u64)
        .map(|(_, split)| split)
        .collect()
}

/// What a split of a reader's position holds: a line start before its end, and a first
/// byte past the file's start where that is not known to start a line (the byte before it is read).
fn check_split((path, end, next, aligned): &Split) {
    assert!(next < end, "files invariant: a split of `{path}` in a position has bytes left ({next} of {end})");
    assert!(*aligned || *next > 0, "files invariant: a split of `{path}` not known to start a line starts past byte 0");
}

/// What a reader's position holds, checkpointed and restored alike.
fn check_position(splits: &[Split]) {
    splits.iter().for_each(check_split);
}

/// The lines that start in `bytes` (read from `offset` of a file of `length` bytes) before
/// `end`, and where the next unread line starts; `None` if no line ends in `bytes` (read more).
fn lines_in(bytes: &[u8], offset: u64, end: u64, length: u64, max_lines: usize) -> Option<(Vec<String>, u64)> {
    let mut lines = Vec::new();
    let mut start = 0usize;
    while offset + (start as u64) < end && lines.len() < max_lines {
        let rest = &bytes[start..];
        let line_end = match rest.iter().position(|byte| *byte == b'\n') {
            Some(newline) => newline,
            // The file's last line need not end with a newline.
            None if offset + bytes.len() as u64 == length => rest.len(),
            None => break,
        };
        let line = &rest[..line_end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        lines.push(String::from_utf8_lossy(line).into_owned());
        start += (line_end + 1).min(rest.len());
        if start >= bytes.len() {
            break;
        }
    }
    assert!(lines.len() <= max_lines, "files invariant: a batch holds at most {max_lines} lines");
    assert!(start <= bytes.len(), "files invariant: the next line starts within the bytes read (at {offset})");
    (start > 0 || offset + (bytes.len() as u64) >= length).then_some((lines, offset + start as u64))
}

impl LineReader {
    fn new(task: &TaskInfo, split_bytes: u64, input: Option<&'static str>, skip_header: bool) -> LineReader {
        let fetch_lines = usize::MAX;
        LineReader { task: task.clone(), split_bytes, input, skip_header, fetch_lines, state: None, restored: None }
    }

    async fn call(&self, operation: StorageOperation) -> Result<StorageAnswer, OperatorError> {
        let state = self.state.as_ref().expect("opened");
        let answer = state.files.call(StorageCall { operation }).await?;
        answer.map_err(|error: StorageError| OperatorError::new(format!("{FILES_SYSTEM}: {error}")))
    }

    async fn open(&mut self) -> Result<(), OperatorError> {
        let files = ServiceClient::connect(&self.task, FILES_SYSTEM).await?;
        self.state = Some(ReaderState {
            files,
            splits: Vec::new(),
            next_split: 0,
            lengths: BTreeMap::new(),
            ahead: None,
            buffered: BTreeMap::new(),
        });
        if let Some((splits, next_split)) = self.restored.take() {
            check_position(&splits);
            let state = self.state.as_mut().expect("set above");
            state.splits = splits;
            state.next_split = next_split as usize;
            return Ok(());
        }
        let StorageAnswer::Paths(paths) = self
            .call(StorageOperation::List { prefix: self.input.map_or_else(String::new, |input| format!("{input}/")) })
            .await?
        else {
            return Err(OperatorError::new("files: a listing answered out of turn"));
        };
        let mut files = Vec::new();
        for path in paths {
            let StorageAnswer::Length(length) = self.call(StorageOperation::Length { path: path.clone() }).await?
            else {
                return Err(OperatorError::new("files: a length answered out of turn"));
            };
            files.push((path, length));
        }
        let state = self.state.as_mut().expect("set above");
        state.splits = assign_splits(&files, self.split_bytes, self.task.subtask_index, self.task.parallelism);
        state.lengths = files.into_iter().collect();
        Ok(())
    }

    /// Bytes `[offset, offset + length)` of `path`: the read ahead if it is that one.
    async fn read(&mut self, path: &str, offset: u64, length: u64) -> Result<Vec<u8>, OperatorError> {
        let state = self.state.as_mut().expect("opened");
        if let Some(ahead) = state.ahead.take() {
            if (ahead.path.as_str(), ahead.offset, ahead.length) == (path, offset, length) {
                return ahead
                    .read
                    .await
                    .map_err(|error| OperatorError::new(format!("files: reading `{path}`: {error}")))?;
            }
            ahead.read.abort();
        }
        read_bytes(&state.files, path.to_string(), offset, length).await
    }

    async fn file_length(&mut self, path: &str) -> Result<u64, OperatorError> {
        if let Some(length) = self.state.as_ref().expect("opened").lengths.get(path) {
            return Ok(*length);
        }
        let StorageAnswer::Length(length) = self.call(StorageOperation::Length { path: path.to_string() }).await?
        else {
            return Err(OperatorError::new("files: a length answered out of turn"));
        };
        self.state.as_mut().expect("opened").lengths.insert(path.to_string(), length);
        Ok(length)
    }

    /// Starts reading what the next batch reads first: the next split's next chunk (from the
    /// byte before its position if that is not known to start a line), after what the split
    /// holds read already, if its length is known and what it holds is not a whole line.
    fn read_ahead(&mut self) {
        let state = self.state.as_mut().expect("opened");
        if state.splits.is_empty() {
            return;
        }
        let (path, end, next, aligned) = &state.splits[state.next_split % state.splits.len()];
        let Some(length) = state.lengths.get(path) else { return };
        let start = if *aligned { *next } else { next - 1 };
        let held = state.buffered_at(path, *end, start).unwrap_or_default();
        if held.contains(&b'\n') {
            return;
        }
        let offset = start + held.len() as u64;
        let want = CHUNK_BYTES.min(length.saturating_sub(offset));
        if want == 0 {
            return;
        }
        let (files, file) = (state.files.clone(), path.clone());
        let read = spawn(async move { read_bytes(&files, file, offset, want).await });
        state.ahead = Some(ReadAhead { path: path.clone(), offset, length: want, read });
    }

    /// At most `max_lines` lines that start in `[offset, end)` of `path`, and where the next
    /// starts: from what the split (`path`, ending at `split_end`) kept of its last read if that
    /// holds a whole batch, else with one read more; what the batch does not take stays kept.
    async fn read_lines_from(
        &mut self,
        (path, split_end): (&str, u64),
        offset: u64,
        end: u64,
        max_lines: usize,
    ) -> Result<(Vec<String>, u64), OperatorError> {
        let length = self.file_length(path).await?;
        let mut bytes = self.state.as_mut().expect("opened").take_buffered(path, split_end, offset);
        // What the split read before serves a whole batch (or the rest of the split) alone.
        if let Some(found) = Some(&bytes)
            .filter(|bytes| !bytes.is_empty())
            .and_then(|bytes| lines_in(bytes, offset, end, length, max_lines))
            .filter(|(lines, after)| lines.len() == max_lines || *after >= end)
        {
            let rest = bytes.get((found.1 - offset) as usize..).unwrap_or_default();
            self.state.as_mut().expect("opened").keep_buffered(path, split_end, found.1, rest);
            return Ok(found);
        }
        loop {
            let at = offset + bytes.len() as u64;
            let want = CHUNK_BYTES.min(length.saturating_sub(at));
            bytes.extend(self.read(path, at, want).await?);
            if let Some(found) = lines_in(&bytes, offset, end, length, max_lines) {
                let rest = bytes.get((found.1 - offset) as usize..).unwrap_or_default();
                self.state.as_mut().expect("opened").keep_buffered(path, split_end, found.1, rest);
                return Ok(found);
            }
            if bytes.len() > MAX_LINE_BYTES {
                return Err(OperatorError::new(format!(
                    "files: `{path}` has a line longer than {MAX_LINE_BYTES} bytes at byte {offset}: not a text file"
                )));
            }
        }
    }

    /// The next batch of lines, with the file they are from and the byte their first starts at.
    async fn next_lines(&mut self) -> Result<Option<(String, u64, Vec<String>)>, OperatorError> {
        if self.state.is_none() {
            self.open().await?;
        }
        let state = self.state.as_ref().expect("opened above");
        if state.splits.is_empty() {
            return Ok(None);
        }
        let index = state.next_split % state.splits.len();
        let (path, end, mut next, aligned) = state.splits[index].clone();
        check_split(&state.splits[index]);
        if !aligned {
            // The split starts inside a line or at a line's start: the line that holds byte
            // `next - 1` belongs to the split before.
            let (_, after) = self.read_lines_from((&path, end), next - 1, next, usize::MAX).await?;
            next = after;
        }
        let (mut lines, after) = if next < end {
            self.read_lines_from((&path, end), next, end, self.fetch_lines).await?
        } else {
            (Vec::new(), next)
        };
        assert!(after >= next, "files invariant: `{path}`'s position never goes back (from {next} to {after})");
        let first = next;
        if self.skip_header && first == 0 && !lines.is_empty() {
            lines.remove(0);
        }
        let state = self.state.as_mut().expect("opened above");
        if after >= end {
            state.splits.remove(index);
        } else {
            state.splits[index] = (path.clone(), end, after, true);
            state.next_split = index + 1;
        }
        self.read_ahead();
        Ok(Some((path, first, lines)))
    }
}

impl SourceReader<String> for LineReader {
    fn poll_next(&mut self) -> BoxFuture<'_, Result<Option<Vec<String>>, OperatorError>> {
        Box::pin(async move { Ok(self.next_lines().await?.map(|(_, _, lines)| lines)) })
    }

    fn snapshot_state(&self) -> Vec<u8> {
        let current: Option<Position> =
            self.state.as_ref().map(|state| (state.splits.clone(), state.next_split as u64));
        if let Some((splits, _)) = &current {
            check_position(splits);
        }
        encode_position(current, &self.restored)
    }

    fn restore_state(&mut self, state: &[u8]) -> Result<(), OperatorError> {
        self.restored = decode_position(state, "file reader")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads a split of `text` the way a reader does, from `lines_in` alone.
    fn read_split(text: &[u8], (_, end, next, aligned): Split) -> Vec<String> {
        let length = text.len() as u64;
        let mut next = next;
        if !aligned {
            next = lines_in(&text[next as usize - 1..], next - 1, next, length, usize::MAX).expect("whole file").1;
        }
        let mut lines = Vec::new();
        while next < end {
            let (found, after) = lines_in(&text[next as usize..], next, end, length, usize::MAX).expect("whole file");
            lines.extend(found);
            next = after;
        }
        lines
    }

    #[test]
    fn every_line_is_read_once_whatever_the_split_size() {
        let text = b"alpha beta\ngamma\r\n\ndelta epsilon zeta\nlast line without a newline";
        let want: Vec<String> = String::from_utf8_lossy(text).lines().map(str::to_string).collect();
        for split_bytes in 1..=text.len() as u64 + 1 {
            for parallelism in 1..=3 {
                let mut lines = Vec::new();
                for index in 0..parallelism {
                    for split in assign_splits(&[("f".to_string(), text.len() as u64)], split_bytes, index, parallelism)
                    {
                        lines.extend(read_split(text, split));
                    }
                }
                let (mut got, mut expected) = (lines.clone(), want.clone());
                got.sort();
                expected.sort();
                assert_eq!(got, expected, "split {split_bytes} bytes, parallelism {parallelism}");
            }
        }
    }

    #[test]
    fn splits_are_dealt_round_robin_over_files_in_order() {
        let files = [("a".to_string(), 10), ("b".to_string(), 0), ("c".to_string(), 5)];
        let splits = |index| assign_splits(&files, 4, index, 2);
        assert_eq!(splits(0), vec![("a".into(), 4, 0, true), ("a".into(), 10, 8, false), ("c".into(), 5, 4, false)]);
        assert_eq!(splits(1), vec![("a".into(), 8, 4, false), ("c".into(), 4, 0, true)]);
    }

    #[test]
    fn an_unfinished_line_asks_for_more_bytes() {
        assert_eq!(lines_in(b"no newline yet", 0, 100, 1000, usize::MAX), None);
        assert_eq!(lines_in(b"one\ntwo", 0, 100, 1000, usize::MAX), Some((vec!["one".to_string()], 4)));
        assert_eq!(lines_in(b"one\ntwo", 0, 100, 7, usize::MAX), Some((vec!["one".to_string(), "two".to_string()], 7)));
        assert_eq!(lines_in(b"one\ntwo", 0, 100, 7, 1), Some((vec!["one".to_string()], 4)), "at most one line");
    }
}
