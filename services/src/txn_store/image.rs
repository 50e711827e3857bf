//! A real transactional store's files: the journal of a generation, and the image a compaction
//! writes of the whole durable state, so that the journal holds only what came after it.
//!
//! Generation 0 is `txn-store/journal` alone. A compaction writes `txn-store/image-<g+1>` (the
//! state as the journal of generation `g` left it), syncs it, and from then on journals to
//! `txn-store/journal-<g+1>`; the files of generation `g` are deleted after. An image is a
//! sequence of framed parts ending with a part that counts them, so an image cut short by a
//! crash reads as incomplete, never as a smaller state: recovery then takes the generation before
//! it, whose journal is still there. Recovery deletes the files of every other generation.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sluice_engine::connectors::{PackedRows, RowRef, SinkKind};
use sluice_engine::storage::framed::{frame, unframe};
use sluice_engine::storage::{ImmediateStorage, StorageError};

use super::{CommittedView, TableView, Transaction};

/// The journal's file of generation 0 (a store that never compacted).
pub const JOURNAL_PATH: &str = "txn-store/journal";
const IMAGE_PREFIX: &str = "txn-store/image-";
/// Rows, transaction ids or transactions per framed part of an image.
const PART_ITEMS: usize = 4096;

/// The journal of `generation`.
pub fn journal_path(generation: u64) -> String {
    if generation == 0 { JOURNAL_PATH.to_string() } else { format!("{JOURNAL_PATH}-{generation}") }
}

fn image_path(generation: u64) -> String {
    format!("{IMAGE_PREFIX}{generation}")
}

/// The durable state, borrowed from the store to write its image.
pub struct StateRef<'a> {
    pub transactions: &'a BTreeMap<String, Transaction>,
    pub tables: &'a CommittedView,
    pub commit_order: &'a [String],
    pub fences: &'a BTreeMap<String, u64>,
}

/// The durable state: what a journal replayed rebuilds, and what an image holds.
#[derive(Debug, Default)]
pub struct DurableState {
    pub transactions: BTreeMap<String, Transaction>,
    pub tables: CommittedView,
    pub commit_order: Vec<String>,
    pub fences: BTreeMap<String, u64>,
}

/// One framed part of an image, as written.
#[derive(Serialize)]
enum PartRef<'a> {
    Transactions(Vec<(&'a String, &'a Transaction)>),
    /// Rows of a table's log, in commit order (a table's first part creates it).
    Rows {
        table: &'a str,
        kind: SinkKind,
        rows: Vec<RowRef<'a>>,
    },
    CommitOrder(&'a [String]),
    Fences(&'a BTreeMap<String, u64>),
    /// The last part: how many came before it.
    End(u64),
}

/// One framed part of an image, as read back.
#[derive(Deserialize)]
enum Part {
    Transactions(Vec<(String, Transaction)>),
    Rows { table: String, kind: SinkKind, rows: PackedRows },
    CommitOrder(Vec<String>),
    Fences(BTreeMap<String, u64>),
    End(u64),
}

/// Writes and syncs the image of `state` as generation `generation`; returns its size.
pub fn write_image(storage: &dyn ImmediateStorage, generation: u64, state: &StateRef<'_>) -> Result<u64, StorageError> {
    // Generation 0 is the journal alone: an image always follows a journal it replaces.
    assert!(generation > 0, "txn-store invariant: an image starts a generation after the first ({generation})");
    let path = image_path(generation);
    storage.delete_now(&path)?; // what a compaction cut short left
    let transactions: Vec<(&String, &Transaction)> = state.transactions.iter().collect();
    let mut parts: Vec<PartRef<'_>> =
        transactions.chunks(PART_ITEMS).map(|chunk| PartRef::Transactions(chunk.to_vec())).collect();
    for (table, view) in state.tables {
        // An empty table is still a table: it gets one part, without rows.
        let starts = (0..view.log.len().max(1)).step_by(PART_ITEMS);
        parts.extend(starts.map(|from| PartRef::Rows {
            table,
            kind: view.kind,
            rows: view.log.iter().skip(from).take(PART_ITEMS).collect(),
        }));
    }
    parts.extend(state.commit_order.chunks(PART_ITEMS).map(PartRef::CommitOrder));
    parts.push(PartRef::Fences(state.fences));
    parts.push(PartRef::End(parts.len() as u64));
    assert!(
        matches!(parts.last(), Some(PartRef::End(count)) if *count as usize == parts.len() - 1),
        "txn-store invariant: an image ends with the count of the parts before it (generation {generation})"
    );
    let written = append_parts(storage, &path, &parts);
    if written.is_err() {
        // A complete image whose sync failed would still be read at recovery as the newest
        // generation, with an empty journal after it, while the store goes on journaling to
        // the old generation: every commit since would be lost. What failed is removed.
        let _ = storage.delete_now(&path);
    }
    written
}

/// Appends an image's parts to `path` and syncs it; the bytes written.
fn append_parts(storage: &dyn ImmediateStorage, path: &str, parts: &[PartRef<'_>]) -> Result<u64, StorageError> {
    let mut bytes = 0u64;
    for part in parts {
        let framed = frame(&rmp_serde::to_vec(part).expect("internal: an image part encodes as MessagePack"));
        bytes += framed.len() as u64;
        storage.append_now(path, &framed)?;
    }
    storage.sync_now(path)?;
    Ok(bytes)
}

/// What recovery starts from: the newest complete image's state (an empty one without any), its
/// generation and its size.
pub fn read_newest_image(storage: &dyn ImmediateStorage) -> Result<(DurableState, u64, u64), String> {
    let mut generations: Vec<u64> =
        files(storage)?.into_iter().filter_map(|(image, generation)| image.then_some(generation)).collect();
    generations.sort_unstable_by(|left, right| right.cmp(left));
    let mut incomplete = None;
    for generation in generations {
        let bytes = read_file(storage, &image_path(generation))?;
        match decode_image(&bytes) {
            Some(state) => return Ok((state, generation, bytes.len() as u64)),
            None => incomplete = incomplete.or(Some(generation)),
        }
    }
    match incomplete {
        // Generation 0's journal is there unless nothing was ever journaled, and then no
        // compaction could have begun.
        Some(generation) if !exists(storage, JOURNAL_PATH)? => {
            Err(format!("the image `{}` is damaged and no journal before it is left", image_path(generation)))
        }
        _ => Ok((DurableState::default(), 0, 0)),
    }
}

fn decode_image(bytes: &[u8]) -> Option<DurableState> {
    let (records, damaged) = unframe(bytes);
    let (last, parts) = records.split_last()?;
    if damaged || !matches!(rmp_serde::from_slice(last), Ok(Part::End(count)) if count == parts.len() as u64) {
        return None;
    }
    let mut state = DurableState::default();
    for record in parts {
        match rmp_serde::from_slice(record).ok()? {
            Part::Transactions(transactions) => state.transactions.extend(transactions),
            Part::Rows { table, kind, rows } => {
                state.tables.entry(table).or_insert_with(|| TableView::new(kind)).append(&rows);
            }
            Part::CommitOrder(order) => state.commit_order.extend(order),
            Part::Fences(fences) => state.fences = fences,
            Part::End(_) => return None,
        }
    }
    Some(state)
}

/// A file's bytes; a file that does not exist has none.
pub fn read_file(storage: &dyn ImmediateStorage, path: &str) -> Result<Vec<u8>, String> {
    match storage.length_now(path) {
        Ok(length) => storage.read_now(path, 0, length),
        Err(StorageError::NotFound(_)) => Ok(Vec::new()),
        Err(error) => Err(error),
    }
    .map_err(|error| format!("cannot read `{path}`: {error}"))
}

fn exists(storage: &dyn ImmediateStorage, path: &str) -> Result<bool, String> {
    match storage.length_now(path) {
        Ok(_) => Ok(true),
        Err(StorageError::NotFound(_)) => Ok(false),
        Err(error) => Err(format!("cannot read `{path}`: {error}")),
    }
}

/// The store's files: (is an image, generation) of each.
fn files(storage: &dyn ImmediateStorage) -> Result<Vec<(bool, u64)>, String> {
    let paths = storage.list_now("txn-store/").map_err(|error| format!("cannot list `txn-store/`: {error}"))?;
    Ok(paths.iter().filter_map(|path| generation_of(path)).collect())
}

fn generation_of(path: &str) -> Option<(bool, u64)> {
    if path == JOURNAL_PATH {
        return Some((false, 0));
    }
    if let Some(generation) = path.strip_prefix(IMAGE_PREFIX) {
        return generation.parse().ok().map(|generation| (true, generation));
    }
    path.strip_prefix(JOURNAL_PATH)?.strip_prefix('-')?.parse().ok().map(|generation| (false, generation))
}

/// Deletes the journals and images of every generation but `generation` (its image stays).
pub fn delete_other_generations(storage: &dyn ImmediateStorage, generation: u64) -> Result<(), String> {
    for (image, other) in files(storage)? {
        if other != generation {
            let path = if image { image_path(other) } else { journal_path(other) };
            storage.delete_now(&path).map_err(|error| format!("cannot delete `{path}`: {error}"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_say_their_generation() {
        assert_eq!(generation_of("txn-store/journal"), Some((false, 0)));
        assert_eq!(generation_of("txn-store/journal-12"), Some((false, 12)));
        assert_eq!(generation_of("txn-store/image-3"), Some((true, 3)));
        assert_eq!(generation_of("txn-store/journalx"), None);
        assert_eq!(generation_of("txn-store/image-3.tmp"), None);
        assert_eq!(journal_path(0), JOURNAL_PATH);
        assert_eq!(generation_of(&journal_path(7)), Some((false, 7)));
        assert_eq!(generation_of(&image_path(7)), Some((true, 7)));
    }
}
