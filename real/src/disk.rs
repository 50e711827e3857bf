//! [`FileStorage`]: the engine's [`Storage`] on a real disk, a directory per node.
//!
//! It is an [`ImmediateStorage`] (each call completes before it returns). The trait's contract
//! is the simulated disk's: bytes are *pending* until [`Storage::sync`], and
//! a crash keeps exactly what was synced. A real file system keeps more than that after a
//! `kill -9` (the page cache survives the process), and less after a power cut, so the contract
//! is kept explicitly: `sync` is `fsync` of the file and of its directory, and then a record
//! `length path` appended to the directory's sync journal (`.synced`, itself fsynced). Opening
//! the directory is crash recovery: every file is cut back to its last synced length, and a file
//! never synced is deleted — what the engine reads after a restart is what it synced, on either
//! kind of disk.
//!
//! Paths are the engine's flat names (`partitions/…/data`, `jobs/j/log`), mapped to nested
//! directories; a path that could leave the directory (`..`, absolute, empty parts) is refused.
//! Listings are sorted; a missing file is `NotFound`, never empty data.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sluice_engine::storage::{ImmediateStorage, StorageError};

/// The sync journal's file name inside the root (not a valid engine path: it starts with `.`).
const JOURNAL: &str = ".synced";

/// A directory used as a node's disk; see the module doc.
pub struct FileStorage {
    root: PathBuf,
    /// `None` for a read-only directory (input files), which is never recovered or written.
    journal: Option<Mutex<File>>,
}

impl FileStorage {
    /// Opens (creating if needed) the directory `root` and recovers it: files are cut back to
    /// what was synced, unsynced files are deleted.
    pub fn open(root: impl Into<PathBuf>) -> io::Result<FileStorage> {
        let root = root.into();
        fs::create_dir_all(&root)?;
        let (synced, renames) = read_journal(&root.join(JOURNAL))?;
        finish_renames(&root, &synced, &renames)?;
        let mut kept = BTreeMap::new();
        for path in walk(&root)? {
            let file = root.join(&path);
            match synced.get(&path) {
                Some(&length) => {
                    let on_disk = fs::metadata(&file)?.len();
                    if on_disk > length {
                        OpenOptions::new().write(true).open(&file)?.set_len(length)?;
                    }
                    kept.insert(path, length.min(on_disk));
                }
                None => fs::remove_file(&file)?,
            }
        }
        rewrite_journal(&root, &kept)?;
        let journal = OpenOptions::new().append(true).open(root.join(JOURNAL))?;
        Ok(FileStorage { root, journal: Some(Mutex::new(journal)) })
    }

    /// A directory of files to read (input), as it is: no recovery, and every write refused.
    pub fn read_only(root: impl Into<PathBuf>) -> io::Result<FileStorage> {
        let root = root.into();
        if !fs::metadata(&root)?.is_dir() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} is not a directory", root.display())));
        }
        Ok(FileStorage { root, journal: None })
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn writable(&self) -> Result<&Mutex<File>, StorageError> {
        self.journal
            .as_ref()
            .ok_or_else(|| StorageError::Unavailable(format!("{} is read-only (input files)", self.root.display())))
    }

    fn file(&self, path: &str) -> Result<PathBuf, StorageError> {
        let valid = !path.is_empty()
            && !path.contains('\n')
            && path.split('/').all(|part| !part.is_empty() && part != "." && part != ".." && !part.starts_with('.'));
        if valid {
            Ok(self.root.join(path))
        } else {
            Err(StorageError::Unavailable(format!("`{}` is not a storage path", path.escape_debug())))
        }
    }

    fn record(&self, line: &str) -> Result<(), StorageError> {
        let mut journal = self.writable()?.lock().expect("journal lock");
        journal.write_all(line.as_bytes()).and_then(|()| journal.sync_data()).map_err(|error| failed(JOURNAL, &error))
    }
}

impl ImmediateStorage for FileStorage {
    fn append_now(&self, path: &str, bytes: &[u8]) -> Result<(), StorageError> {
        self.writable()?;
        let file = self.file(path)?;
        if let Some(parent) = file.parent() {
            fs::create_dir_all(parent).map_err(|error| failed(path, &error))?;
        }
        let mut handle =
            OpenOptions::new().create(true).append(true).open(&file).map_err(|error| failed(path, &error))?;
        handle.write_all(bytes).map_err(|error| failed(path, &error))
    }

    fn sync_now(&self, path: &str) -> Result<(), StorageError> {
        self.writable()?;
        let file = self.file(path)?;
        let handle = File::open(&file).map_err(|error| failed(path, &error))?;
        handle.sync_all().map_err(|error| failed(path, &error))?;
        let length = handle.metadata().map_err(|error| failed(path, &error))?.len();
        sync_directories(&self.root, &file).map_err(|error| failed(path, &error))?;
        self.record(&format!("{length} {path}\n"))
    }

    fn read_now(&self, path: &str, offset: u64, length: u64) -> Result<Vec<u8>, StorageError> {
        let mut handle = File::open(self.file(path)?).map_err(|error| failed(path, &error))?;
        let size = handle.metadata().map_err(|error| failed(path, &error))?.len();
        let end = offset.checked_add(length).filter(|end| *end <= size);
        if end.is_none() {
            return Err(StorageError::OutOfRange { path: path.to_string(), length: size });
        }
        // Read into reserved, unzeroed memory: zeroing a piece first would write it twice.
        let mut bytes = Vec::with_capacity(usize::try_from(length).expect("a range within a file fits in memory"));
        handle
            .seek(SeekFrom::Start(offset))
            .and_then(|_| (&mut handle).take(length).read_to_end(&mut bytes))
            .map_err(|error| failed(path, &error))?;
        if bytes.len() as u64 != length {
            return Err(StorageError::OutOfRange { path: path.to_string(), length: offset + bytes.len() as u64 });
        }
        Ok(bytes)
    }

    fn length_now(&self, path: &str) -> Result<u64, StorageError> {
        fs::metadata(self.file(path)?).map(|metadata| metadata.len()).map_err(|error| failed(path, &error))
    }

    fn delete_now(&self, path: &str) -> Result<(), StorageError> {
        self.writable()?;
        match fs::remove_file(self.file(path)?) {
            Ok(()) => self.record(&format!("- {path}\n")),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(failed(path, &error)),
        }
    }

    fn list_now(&self, prefix: &str) -> Result<Vec<String>, StorageError> {
        let mut paths = walk(&self.root).map_err(|error| failed(prefix, &error))?;
        paths.retain(|path| path.starts_with(prefix));
        Ok(paths)
    }

    /// The journal records the rename first (one line, so all or nothing), then the file system
    /// does it; opening the directory finishes a rename the journal holds and the disk does not.
    fn rename_now(&self, from: &str, to: &str) -> Result<(), StorageError> {
        self.writable()?;
        let (source, target) = (self.file(from)?, self.file(to)?);
        if target.exists() {
            return Err(StorageError::AlreadyExists(to.to_string()));
        }
        if !source.is_file() {
            return Err(StorageError::NotFound(from.to_string()));
        }
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(|error| failed(to, &error))?;
        }
        self.record(&format!("> {} {from}{to}\n", from.len()))?;
        fs::rename(&source, &target).map_err(|error| failed(from, &error))?;
        sync_directories(&self.root, &source)
            .and_then(|()| sync_directories(&self.root, &target))
            .map_err(|error| failed(to, &error))
    }
}

/// Finishes the renames a crash interrupted: a file the journal names (`to`, never deleted
/// since) that is missing, while the file it was renamed from is still there and was not synced
/// again under its old name.
fn finish_renames(root: &Path, synced: &BTreeMap<String, u64>, renames: &BTreeMap<String, String>) -> io::Result<()> {
    for (to, from) in renames {
        let (source, target) = (root.join(from), root.join(to));
        if synced.contains_key(to) && !synced.contains_key(from) && !target.exists() && source.is_file() {
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent)?;
            }
            fs::rename(&source, &target)?;
        }
    }
    Ok(())
}

fn failed(path: &str, error: &io::Error) -> StorageError {
    if error.kind() == io::ErrorKind::NotFound {
        StorageError::NotFound(path.to_string())
    } else {
        StorageError::Unavailable(format!("`{path}`: {error}"))
    }
}

/// Fsyncs every directory from the file's parent up to the root, so that the file's name (and
/// its parents' names) survive a crash as well as its bytes.
fn sync_directories(root: &Path, file: &Path) -> io::Result<()> {
    let mut directory = file.parent();
    while let Some(current) = directory {
        File::open(current)?.sync_all()?;
        if current == root {
            break;
        }
        directory = current.parent();
    }
    Ok(())
}

/// A rename record's paths: `> <length of from> <from><to>` (paths may hold spaces).
fn rename_record(record: &str) -> Option<(&str, &str)> {
    let (length, paths) = record.split_once(' ')?;
    let length: usize = length.parse().ok()?;
    Some((paths.get(..length)?, paths.get(length..)?))
}

/// The journal's last word per path: its synced length (a deleted path has none); and, by
/// new name, the last rename to it.
type Journal = (BTreeMap<String, u64>, BTreeMap<String, String>);

fn read_journal(journal: &Path) -> io::Result<Journal> {
    let text = match fs::read(journal) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Journal::default()),
        Err(error) => return Err(error),
    };
    let mut synced = BTreeMap::new();
    let mut renames = BTreeMap::new();
    // A record cut short by a crash has no newline and was never acknowledged: ignore it.
    let complete = text.iter().rposition(|byte| *byte == b'\n').map_or(&[][..], |end| &text[..end]);
    for line in String::from_utf8_lossy(complete).lines() {
        match line.split_once(' ') {
            Some(("-", path)) => {
                synced.remove(path);
            }
            Some((">", record)) => {
                if let Some((from, to)) = rename_record(record)
                    && let Some(length) = synced.remove(from)
                {
                    synced.insert(to.to_string(), length);
                    renames.insert(to.to_string(), from.to_string());
                }
            }
            Some((length, path)) => {
                if let Ok(length) = length.parse::<u64>() {
                    synced.insert(path.to_string(), length);
                }
            }
            None => {}
        }
    }
    Ok((synced, renames))
}

/// Replaces the journal with one record per kept file, atomically (write, fsync, rename, fsync).
fn rewrite_journal(root: &Path, kept: &BTreeMap<String, u64>) -> io::Result<()> {
    let fresh = root.join(".synced.new");
    let mut file = File::create(&fresh)?;
    for (path, length) in kept {
        writeln!(file, "{length} {path}")?;
    }
    file.sync_all()?;
    fs::rename(&fresh, root.join(JOURNAL))?;
    File::open(root)?.sync_all()
}

/// Every file under `root` as an engine path (`a/b/c`), sorted; hidden names are not files.
fn walk(root: &Path) -> io::Result<Vec<String>> {
    let mut paths = Vec::new();
    let mut pending = vec![(root.to_path_buf(), String::new())];
    while let Some((directory, prefix)) = pending.pop() {
        for entry in fs::read_dir(&directory)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = format!("{prefix}{name}");
            if entry.file_type()?.is_dir() {
                pending.push((entry.path(), format!("{path}/")));
            } else {
                paths.push(path);
            }
        }
    }
    paths.sort();
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_engine::future::BoxFuture;
    use sluice_engine::storage::Storage;

    /// FileStorage's futures are ready at once (its calls are synchronous).
    fn now<T>(future: BoxFuture<'_, T>) -> T {
        let mut future = future;
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        match future.as_mut().poll(&mut context) {
            std::task::Poll::Ready(value) => value,
            std::task::Poll::Pending => panic!("a FileStorage call waited"),
        }
    }

    #[test]
    fn reopening_keeps_exactly_what_was_synced() {
        let directory = tempfile::tempdir().unwrap();
        {
            let disk = FileStorage::open(directory.path()).unwrap();
            now(disk.append("jobs/j/log", b"synced")).unwrap();
            now(disk.sync("jobs/j/log")).unwrap();
            now(disk.append("jobs/j/log", b" pending")).unwrap();
            now(disk.append("partitions/p/data", b"never synced")).unwrap();
            assert_eq!(now(disk.length("jobs/j/log")).unwrap(), 14, "pending bytes are readable before a crash");
        } // the process dies: the page cache kept everything, the contract keeps only what was synced
        let disk = FileStorage::open(directory.path()).unwrap();
        assert_eq!(now(disk.read("jobs/j/log", 0, 6)).unwrap(), b"synced");
        assert_eq!(now(disk.length("jobs/j/log")).unwrap(), 6);
        assert_eq!(now(disk.length("partitions/p/data")), Err(StorageError::NotFound("partitions/p/data".into())));
        assert_eq!(now(disk.list("")).unwrap(), vec!["jobs/j/log".to_string()]);
        // And again: recovery is idempotent, and appends continue from the synced end.
        now(disk.append("jobs/j/log", b"!")).unwrap();
        now(disk.sync("jobs/j/log")).unwrap();
        drop(disk);
        let disk = FileStorage::open(directory.path()).unwrap();
        assert_eq!(now(disk.read("jobs/j/log", 0, 7)).unwrap(), b"synced!");
    }

    #[test]
    fn listings_are_sorted_and_errors_say_what_is_missing() {
        let directory = tempfile::tempdir().unwrap();
        let disk = FileStorage::open(directory.path()).unwrap();
        for path in ["b/2", "a/1", "b/1/x", "c"] {
            now(disk.append(path, b"x")).unwrap();
        }
        assert_eq!(now(disk.list("")).unwrap(), vec!["a/1", "b/1/x", "b/2", "c"]);
        assert_eq!(now(disk.list("b/")).unwrap(), vec!["b/1/x", "b/2"]);
        assert_eq!(now(disk.read("c", 0, 2)), Err(StorageError::OutOfRange { path: "c".into(), length: 1 }));
        assert_eq!(now(disk.read("d", 0, 1)), Err(StorageError::NotFound("d".into())));
        now(disk.sync("c")).unwrap();
        now(disk.delete("c")).unwrap();
        now(disk.delete("c")).unwrap();
        assert_eq!(now(disk.length("c")), Err(StorageError::NotFound("c".into())));
        drop(disk);
        let disk = FileStorage::open(directory.path()).unwrap();
        assert_eq!(
            now(disk.length("c")),
            Err(StorageError::NotFound("c".into())),
            "a synced file deleted stays deleted"
        );
    }

    #[test]
    fn a_path_that_could_leave_the_directory_is_refused() {
        let directory = tempfile::tempdir().unwrap();
        let disk = FileStorage::open(directory.path().join("node")).unwrap();
        for path in ["../escape", "/etc/passwd", "a//b", "", ".synced", "a/./b", "line\nbreak"] {
            assert!(
                matches!(now(disk.append(path, b"x")), Err(StorageError::Unavailable(_))),
                "`{}` must be refused",
                path.escape_debug()
            );
        }
        assert!(!directory.path().join("escape").exists());
        assert_eq!(now(disk.list("")).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn a_read_only_directory_is_read_as_it_is_and_never_written() {
        let directory = tempfile::tempdir().unwrap();
        std::fs::write(directory.path().join("words.txt"), b"never synced by us").unwrap();
        let input = FileStorage::read_only(directory.path()).unwrap();
        assert_eq!(now(input.list("")).unwrap(), vec!["words.txt".to_string()]);
        assert_eq!(now(input.read("words.txt", 0, 5)).unwrap(), b"never");
        assert!(matches!(now(input.append("words.txt", b"!")), Err(StorageError::Unavailable(_))));
        assert!(matches!(now(input.delete("words.txt")), Err(StorageError::Unavailable(_))));
        assert_eq!(std::fs::read(directory.path().join("words.txt")).unwrap(), b"never synced by us");
        assert!(FileStorage::read_only(directory.path().join("words.txt")).is_err());
    }

    #[test]
    fn a_journal_record_cut_short_by_a_crash_is_ignored() {
        let directory = tempfile::tempdir().unwrap();
        {
            let disk = FileStorage::open(directory.path()).unwrap();
            now(disk.append("f", b"abcdef")).unwrap();
            now(disk.sync("f")).unwrap();
            now(disk.append("f", b"ghi")).unwrap();
        }
        // The record of a second sync, torn: its bytes never counted as synced.
        let mut journal = OpenOptions::new().append(true).open(directory.path().join(JOURNAL)).unwrap();
        journal.write_all(b"9 f").unwrap();
        drop(journal);
        let disk = FileStorage::open(directory.path()).unwrap();
        assert_eq!(now(disk.length("f")).unwrap(), 6);
    }

    #[test]
    fn a_rename_is_durable_refuses_to_replace_and_moves_pending_bytes_as_pending() {
        let directory = tempfile::tempdir().unwrap();
        {
            let disk = FileStorage::open(directory.path()).unwrap();
            now(disk.append("sinks/t/in progress/a", b"rows\n")).unwrap();
            now(disk.sync("sinks/t/in progress/a")).unwrap();
            now(disk.append("sinks/t/in progress/a", b"unsynced")).unwrap();
            now(disk.rename("sinks/t/in progress/a", "sinks/t/part a")).unwrap();
            assert_eq!(
                now(disk.rename("sinks/t/in progress/a", "sinks/t/part a")),
                Err(StorageError::AlreadyExists("sinks/t/part a".into())),
                "a rename is applied once: its retry finds the name taken"
            );
            now(disk.append("b", b"b")).unwrap();
            assert_eq!(
                now(disk.rename("b", "sinks/t/part a")),
                Err(StorageError::AlreadyExists("sinks/t/part a".into()))
            );
        }
        let disk = FileStorage::open(directory.path()).unwrap();
        assert_eq!(now(disk.list("")).unwrap(), vec!["sinks/t/part a".to_string()]);
        assert_eq!(now(disk.read("sinks/t/part a", 0, 5)).unwrap(), b"rows\n");
        assert_eq!(now(disk.length("sinks/t/part a")).unwrap(), 5, "the pending bytes were lost with the crash");
    }

    #[test]
    fn a_rename_the_journal_holds_and_a_crash_interrupted_is_finished_on_open() {
        let directory = tempfile::tempdir().unwrap();
        {
            let disk = FileStorage::open(directory.path()).unwrap();
            now(disk.append("pending/x", b"done")).unwrap();
            now(disk.sync("pending/x")).unwrap();
        }
        // The journal's record of the rename was written; the crash came before the rename.
        let mut journal = OpenOptions::new().append(true).open(directory.path().join(JOURNAL)).unwrap();
        journal.write_all(b"> 9 pending/xfinal/x\n").unwrap();
        drop(journal);
        let disk = FileStorage::open(directory.path()).unwrap();
        assert_eq!(now(disk.list("")).unwrap(), vec!["final/x".to_string()]);
        assert_eq!(now(disk.read("final/x", 0, 4)).unwrap(), b"done");
        drop(disk);
        let disk = FileStorage::open(directory.path()).unwrap();
        assert_eq!(now(disk.list("")).unwrap(), vec!["final/x".to_string()], "and it stays finished");
    }
}
