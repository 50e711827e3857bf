//! The transactional store server: staged transactions, idempotent commits, fencing by epoch.
//!
//! Implements the protocol documented in `sluice_engine::connectors::txn_store`. Invariants it
//! maintains (and the checks rely on): only committed transactions are visible in a table, a
//! transaction is applied at most once, and a committed transaction is never rolled back.
//!
//! In simulation the state outlives the store's node. A real store keeps a [`Journal`]: every
//! request that changed the state, appended to a file in the order applied. Replaying it
//! rebuilds the state exactly, because applying a request is a pure function of the state.
//! Begins, prepares, commits and aborts are synced before they are answered; stages are not
//! (they are many), and a prepare syncs them. A crash thus loses at most stages of unprepared
//! transactions: the writer's prepare then finds a batch missing and fails, and its task
//! restarts from its checkpoint. What was answered as begun, prepared, committed or fenced
//! survives. Once the journal outgrows the state it rebuilds (and 64 MiB), the store compacts
//! it: it writes an image of the whole state and starts a new journal after it (see [`image`]),
//! so its files and its recovery grow with what it holds, not with its history.

mod image;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use sluice_engine::connectors::txn_store::{
    AbortLingeringTransactions, BeginTransaction, CommitTransaction, PrepareTransaction, StageRows, TxnError,
    TxnOutcome,
};
use sluice_engine::connectors::{PackedRows, Row, SinkKind};
use sluice_engine::rpc::{Endpoint, serve};
use sluice_engine::rpc_request;
use sluice_engine::storage::framed::{frame, unframe};
use sluice_engine::storage::{ImmediateStorage, StorageError};
use sluice_engine::trace::{TraceEvent, TracerHandle};

/// A table's committed contents.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableView {
    /// How the table applies rows.
    pub kind: SinkKind,
    /// Every committed row, in commit order, packed (a million rows are a few allocations).
    pub log: PackedRows,
    /// The latest committed value per key (the upsert view).
    pub latest: BTreeMap<String, String>,
}

impl TableView {
    /// A table nothing was committed to yet.
    pub fn new(kind: SinkKind) -> TableView {
        TableView { kind, log: PackedRows::new(), latest: BTreeMap::new() }
    }

    /// Commits `rows`, in order.
    pub fn append(&mut self, rows: &PackedRows) {
        for row in rows.iter() {
            match (self.latest.get_mut(row.key), row.value) {
                (Some(value), Some(new)) => new.clone_into(value),
                (None, Some(new)) => drop(self.latest.insert(row.key.to_string(), new.to_string())),
                (_, None) => drop(self.latest.remove(row.key)),
            }
        }
        self.log.extend_from(rows);
    }
}

/// What the store holds as committed, by table: what a reader of the store sees.
pub type CommittedView = BTreeMap<String, TableView>;

#[derive(Debug, Serialize, Deserialize)]
struct Transaction {
    table: String,
    kind: SinkKind,
    epoch: u64,
    staged: BTreeMap<u64, PackedRows>,
    prepared: bool,
    committed: bool,
}

/// Faults the harness injects into the store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreFaults {
    /// Every request is refused with `Unavailable`.
    pub unavailable: bool,
    /// The next this many commits fail without applying.
    pub failing_commits: u32,
    /// The next this many commits apply but their replies are never sent.
    pub lost_commit_replies: u32,
}

/// The store's state; outlives the store node.
#[derive(Debug, Default)]
pub struct TxnStoreState {
    transactions: BTreeMap<String, Transaction>,
    tables: CommittedView,
    /// Transaction ids in the order they were committed.
    commit_order: Vec<String>,
    /// Writer prefix → the lowest epoch that may still begin a transaction under it.
    fences: BTreeMap<String, u64>,
    /// Injected faults.
    pub faults: StoreFaults,
    /// Where a real store journals what it accepts; `None` in simulation.
    journal: Option<Journal>,
    /// Why the journal could not be written: the store then refuses everything until it is
    /// restarted and recovers from what the journal holds (its memory may be ahead of it).
    broken: Option<String>,
}

pub use image::JOURNAL_PATH;

/// A journal is compacted once it holds this many bytes, and more than the image it follows.
const COMPACT_AFTER_BYTES: u64 = 64 << 20;

/// A real store's journal; see the module doc.
pub struct Journal {
    storage: Arc<dyn ImmediateStorage>,
    /// The journal's generation: it follows the image of that generation (none for 0).
    generation: u64,
    /// Bytes in the journal's file.
    bytes: u64,
    /// Bytes of the image the journal follows.
    image_bytes: u64,
    /// The journal is compacted once it holds this many bytes and more than its image.
    compact_after: u64,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Journal(generation {}, {} bytes)", self.generation, self.bytes)
    }
}

/// A journal entry as written: the request as applied.
#[derive(Serialize)]
enum EntryRef<'a> {
    Begin(&'a BeginTransaction),
    Stage(&'a StageRows),
    Prepare(&'a PrepareTransaction),
    Commit(&'a CommitTransaction),
    Abort(&'a AbortLingeringTransactions),
}

/// A journal entry as read back (the same encoding as [`EntryRef`]).
#[derive(Deserialize)]
enum Entry {
    Begin(BeginTransaction),
    Stage(StageRows),
    Prepare(PrepareTransaction),
    Commit(CommitTransaction),
    Abort(AbortLingeringTransactions),
}

impl Journal {
    fn write(&mut self, entry: &[u8], sync: bool) -> Result<(), StorageError> {
        let path = image::journal_path(self.generation);
        self.storage.append_now(&path, entry)?;
        self.bytes += entry.len() as u64;
        if sync { self.storage.sync_now(&path) } else { Ok(()) }
    }

    /// The invariant of an answer that promises durability: the journal is synced whole.
    fn check_synced(&self, promise: &str) {
        let path = image::journal_path(self.generation);
        sluice_engine::storage::check_synced(self.storage.synced_length_now(&path), &path, self.bytes, promise);
    }

    fn due(&self) -> bool {
        self.bytes >= self.compact_after.max(self.image_bytes)
    }
}

/// A writer of an older epoch is refused: a zombie fenced off.
fn fenced(current_epoch: u64) -> TxnError {
    sluice_engine::cover!(ZombieWriterFenced);
    TxnError::Fenced { current_epoch }
}

/// What a committed transaction holds: it was prepared, and its rows moved into its table.
fn check_committed(txn_id: &str, transaction: &Transaction) {
    assert!(transaction.prepared, "txn-store invariant: a committed transaction was prepared ({txn_id})");
    assert!(
        transaction.staged.is_empty(),
        "txn-store invariant: a committed transaction's rows left its staging ({txn_id})"
    );
}

/// What a commit relies on: an open transaction of the committing epoch, prepared with every
/// batch from 0 on, of an epoch no abort of lingering transactions fenced off (`fence`).
fn check_committing(request: &CommitTransaction, transaction: &Transaction, fence: Option<u64>) {
    let txn_id = &request.txn_id;
    assert!(!transaction.committed, "txn-store invariant: only an open transaction commits ({txn_id})");
    assert_eq!(
        transaction.epoch, request.epoch,
        "txn-store invariant: a transaction commits in the epoch that owns it ({txn_id})"
    );
    assert!(transaction.prepared, "txn-store invariant: only a prepared transaction commits ({txn_id})");
    assert!(
        transaction.staged.keys().copied().eq(0..transaction.staged.len() as u64),
        "txn-store invariant: a prepared transaction holds batches 0..{} ({txn_id})",
        transaction.staged.len()
    );
    assert!(
        fence.is_none_or(|fence| transaction.epoch >= fence),
        "txn-store invariant: an open transaction's epoch {} is not fenced off (fence {fence:?}, {txn_id})",
        transaction.epoch
    );
}

impl TxnStoreState {
    /// A real store's state: its newest complete image, if it compacted, and what the journal
    /// after it holds, replayed; journaling from now on. An error (a damaged journal, an entry
    /// that no longer applies, a damaged image with nothing before it) is why the store must not
    /// start: serving anyway could roll back a commit.
    pub fn recover(storage: Arc<dyn ImmediateStorage>) -> Result<TxnStoreState, String> {
        let (durable, generation, image_bytes) = image::read_newest_image(storage.as_ref())?;
        let mut state = TxnStoreState {
            transactions: durable.transactions,
            tables: durable.tables,
            commit_order: durable.commit_order,
            fences: durable.fences,
            ..TxnStoreState::default()
        };
        let path = image::journal_path(generation);
        let bytes = image::read_file(storage.as_ref(), &path)?;
        let (entries, damaged) = unframe(&bytes);
        if damaged {
            return Err(format!("the journal `{path}` is damaged after entry {}", entries.len()));
        }
        for (index, bytes) in entries.iter().enumerate() {
            let entry: Entry = rmp_serde::from_slice(bytes)
                .map_err(|error| format!("journal entry {index} does not decode: {error}"))?;
            state.replay(entry).map_err(|error| format!("journal entry {index} does not apply again: {error}"))?;
        }
        state.check_recovered();
        image::delete_other_generations(storage.as_ref(), generation)?;
        let bytes = bytes.len() as u64;
        state.journal = Some(Journal { storage, generation, bytes, image_bytes, compact_after: COMPACT_AFTER_BYTES });
        Ok(state)
    }

    /// Writes the image of the state as the next generation and journals after it from then
    /// on. A failed image leaves the journal as it was (it is tried again once the journal has
    /// doubled); the old generation's files are deleted, or else by the next recovery.
    fn compact(&mut self) {
        let Some(journal) = self.journal.as_mut() else { return };
        let next = journal.generation + 1;
        let state = image::StateRef {
            transactions: &self.transactions,
            tables: &self.tables,
            commit_order: &self.commit_order,
            fences: &self.fences,
        };
        match image::write_image(journal.storage.as_ref(), next, &state) {
            Ok(image_bytes) => {
                (journal.generation, journal.bytes, journal.image_bytes) = (next, 0, image_bytes);
                let _ = image::delete_other_generations(journal.storage.as_ref(), next);
            }
            Err(error) => {
                eprintln!("txn-store: cannot compact its journal, it goes on journaling: {error}");
                journal.compact_after = journal.bytes.saturating_mul(2);
            }
        }
    }

    /// Applies a journaled request again: it must be accepted as it was the first time.
    fn replay(&mut self, entry: Entry) -> Result<(), String> {
        let outcome = self.replay_outcome(entry).map_err(|error| error.to_string())?;
        // Only requests answered `Done` are journaled, and applying one is a pure function of
        // the state, which the journal before it rebuilt: the replay is done again. (A journal
        // is data on a disk, so a replay that differs is refused, not a panic.)
        match outcome {
            None | Some((TxnOutcome::Done, _)) => Ok(()),
            Some((outcome, txn_id)) => Err(format!("`{txn_id}` replays as {outcome:?}, not as it was journaled")),
        }
    }

    /// Applies a journaled request again; its outcome and transaction (none for an abort).
    fn replay_outcome(&mut self, entry: Entry) -> Result<Option<(TxnOutcome, String)>, TxnError> {
        let (outcome, txn_id) = match entry {
            Entry::Begin(request) => {
                let txn_id = request.txn_id.clone();
                (self.begin(request)?, txn_id)
            }
            Entry::Stage(request) => {
                let txn_id = request.txn_id.clone();
                (self.stage(request)?, txn_id)
            }
            Entry::Prepare(request) => {
                let txn_id = request.txn_id.clone();
                (self.prepare(request)?, txn_id)
            }
            Entry::Commit(request) => {
                let txn_id = request.txn_id.clone();
                (self.commit_rows(request)?.0, txn_id)
            }
            Entry::Abort(request) => {
                self.abort_lingering(request);
                return Ok(None);
            }
        };
        Ok(Some((outcome, txn_id)))
    }

    /// What recovery rebuilt holds together: the committed transactions are exactly those in the
    /// commit order (a committed transaction is never removed, and commits once).
    fn check_recovered(&self) {
        let committed = self.transactions.values().filter(|transaction| transaction.committed).count();
        assert_eq!(
            committed,
            self.commit_order.len(),
            "txn-store invariant: after recovery, every committed transaction is in the commit order once"
        );
        for txn_id in &self.commit_order {
            assert!(
                self.transactions.get(txn_id).is_some_and(|transaction| transaction.committed),
                "txn-store invariant: after recovery, a transaction of the commit order is committed ({txn_id})"
            );
        }
    }

    /// True while the store refuses every request.
    fn refuses(&self) -> bool {
        self.faults.unavailable || self.broken.is_some()
    }

    /// The framed journal entry of a request, if this store journals.
    fn entry(&self, entry: EntryRef<'_>) -> Option<Vec<u8>> {
        self.journal
            .as_ref()
            .map(|_| frame(&rmp_serde::to_vec(&entry).expect("internal: a transaction request encodes as MessagePack")))
    }

    /// Journals an accepted request (synced if `sync`) before its answer goes out; an answer
    /// that changed nothing is not journaled. A failed write breaks the store.
    fn persist<A>(
        &mut self,
        entry: Option<Vec<u8>>,
        answer: Result<A, TxnError>,
        accepted: bool,
        sync: bool,
    ) -> Result<A, TxnError> {
        assert!(!accepted || answer.is_ok(), "txn-store invariant: only a request the store applied is journaled");
        let (Some(entry), Some(journal), true) = (entry, &mut self.journal, accepted) else { return answer };
        match journal.write(&entry, sync) {
            Ok(()) => {
                if journal.due() {
                    self.compact();
                }
                answer
            }
            Err(error) => {
                eprintln!("txn-store: cannot write its journal, refusing every request until restarted: {error}");
                self.broken = Some(error.to_string());
                Err(TxnError::Unavailable)
            }
        }
    }

    /// Serves a begin, a stage or a prepare: refused while the store refuses, applied, and
    /// journaled if it was done (synced if `sync`).
    fn serve_step<R>(
        &mut self,
        request: R,
        entry: fn(&R) -> EntryRef<'_>,
        apply: fn(&mut TxnStoreState, R) -> Result<TxnOutcome, TxnError>,
        sync: bool,
    ) -> Result<TxnOutcome, TxnError> {
        if self.refuses() {
            return Err(TxnError::Unavailable);
        }
        let entry = self.entry(entry(&request));
        let answer = apply(self, request);
        let accepted = answer == Ok(TxnOutcome::Done);
        self.persist(entry, answer, accepted, sync)
    }

    /// Serves a begin.
    fn serve_begin(&mut self, request: BeginTransaction) -> Result<TxnOutcome, TxnError> {
        let answer = self.serve_step(request, |request| EntryRef::Begin(request), TxnStoreState::begin, true);
        let applied = answer == Ok(TxnOutcome::Done);
        self.check_durable(answer, applied, "a begun transaction's fence survives a crash")
    }

    /// What an answer that applied a request and promises its durability checks before it
    /// goes out: a journaling store (a real one) synced everything it journaled, whatever its
    /// `sync` flags said. (An answer to a retry that changed nothing relies on an entry synced
    /// when it was first applied.)
    fn check_durable<A>(&self, answer: Result<A, TxnError>, applied: bool, promise: &str) -> Result<A, TxnError> {
        if let (true, Ok(_), Some(journal)) = (applied, &answer, &self.journal) {
            journal.check_synced(promise);
        }
        answer
    }

    /// Serves a stage (journaled, not synced: a prepare syncs it).
    fn serve_stage(&mut self, request: StageRows) -> Result<TxnOutcome, TxnError> {
        self.serve_step(request, |request| EntryRef::Stage(request), TxnStoreState::stage, false)
    }

    /// Serves a prepare.
    fn serve_prepare(&mut self, request: PrepareTransaction) -> Result<TxnOutcome, TxnError> {
        let answer = self.serve_step(request, |request| EntryRef::Prepare(request), TxnStoreState::prepare, true);
        let applied = answer == Ok(TxnOutcome::Done);
        self.check_durable(answer, applied, "a prepared transaction survives a crash")
    }

    /// Serves an abort of lingering transactions (it always raises a fence).
    fn serve_abort(&mut self, request: AbortLingeringTransactions) -> Result<u64, TxnError> {
        if self.refuses() {
            return Err(TxnError::Unavailable);
        }
        let entry = self.entry(EntryRef::Abort(&request));
        let aborted = self.abort_lingering(request);
        let answer = self.persist(entry, Ok(aborted), true, true);
        self.check_durable(answer, true, "an abort's fence survives a crash")
    }

    /// The committed view.
    pub fn committed(&self) -> CommittedView {
        self.tables.clone()
    }

    /// The committed view, taken out of a store whose run is over (not copied: a large table
    /// would be held twice).
    pub fn take_committed(&mut self) -> CommittedView {
        std::mem::take(&mut self.tables)
    }

    /// Transactions begun and neither committed nor aborted, in id order: what a finished job
    /// must not leave behind (`txn-id (epoch E, prepared, N batches staged)`).
    pub fn open_transactions(&self) -> Vec<String> {
        self.transactions
            .iter()
            .filter(|(_, transaction)| !transaction.committed)
            .map(|(txn_id, transaction)| {
                let state = if transaction.prepared { "prepared" } else { "not prepared" };
                let staged = transaction.staged.len();
                let batches = if staged == 1 { "batch" } else { "batches" };
                format!("{txn_id} (epoch {}, {state}, {staged} {batches} staged)", transaction.epoch)
            })
            .collect()
    }

    /// Transactions committed, in order.
    pub fn commit_order(&self) -> &[String] {
        &self.commit_order
    }

    /// The epoch below which a writer of `txn_id` is fenced off, if any.
    fn fence_of(&self, txn_id: &str) -> Option<u64> {
        self.fences.iter().filter(|(prefix, _)| txn_id.starts_with(prefix.as_str())).map(|(_, epoch)| *epoch).max()
    }

    /// Aborts the open transactions older epochs left under `prefix`; returns how many.
    fn abort_lingering(&mut self, request: AbortLingeringTransactions) -> u64 {
        let fence = self.fences.entry(request.prefix.clone()).or_insert(0);
        *fence = (*fence).max(request.epoch);
        let lingering: Vec<String> = self
            .transactions
            .iter()
            .filter(|(txn_id, transaction)| {
                txn_id.starts_with(&request.prefix) && !transaction.committed && transaction.epoch < request.epoch
            })
            .map(|(txn_id, _)| txn_id.clone())
            .collect();
        // Prepared ones too: the writer aborts only after its restore committed every
        // transaction the restored checkpoint holds, so what is left open belongs to no
        // completed checkpoint.
        for txn_id in &lingering {
            let aborted = self.transactions.remove(txn_id);
            assert!(
                aborted.is_some_and(|transaction| !transaction.committed),
                "txn-store invariant: a committed transaction is never aborted ({txn_id})"
            );
        }
        lingering.len() as u64
    }

    fn begin(&mut self, request: BeginTransaction) -> Result<TxnOutcome, TxnError> {
        if let Some(fence) = self.fence_of(&request.txn_id)
            && request.epoch < fence
            && !self.transactions.get(&request.txn_id).is_some_and(|transaction| transaction.committed)
        {
            return Err(fenced(fence));
        }
        match self.transactions.get_mut(&request.txn_id) {
            None => {
                self.transactions.insert(
                    request.txn_id,
                    Transaction {
                        table: request.table,
                        kind: request.kind,
                        epoch: request.epoch,
                        staged: BTreeMap::new(),
                        prepared: false,
                        committed: false,
                    },
                );
                Ok(TxnOutcome::Done)
            }
            Some(transaction) if transaction.committed => Ok(TxnOutcome::AlreadyCommitted),
            Some(transaction) if request.epoch < transaction.epoch => Err(fenced(transaction.epoch)),
            Some(transaction) => {
                if request.epoch > transaction.epoch {
                    // A newer attempt takes over: what older attempts staged is aborted.
                    assert!(
                        !transaction.committed,
                        "txn-store invariant: a newer epoch never takes over a committed transaction ({})",
                        request.txn_id
                    );
                    transaction.epoch = request.epoch;
                    transaction.staged.clear();
                    transaction.prepared = false;
                }
                Ok(TxnOutcome::Done)
            }
        }
    }

    fn owned(&mut self, txn_id: &str, epoch: u64) -> Result<&mut Transaction, Result<TxnOutcome, TxnError>> {
        if !self.transactions.contains_key(txn_id) {
            // Aborted as lingering by a newer attempt, whose fence a zombie writer runs into.
            return Err(Err(match self.fence_of(txn_id) {
                Some(fence) if epoch < fence => fenced(fence),
                _ => TxnError::UnknownTransaction,
            }));
        }
        let transaction = self.transactions.get_mut(txn_id).expect("present: checked above");
        if transaction.committed {
            check_committed(txn_id, transaction);
            return Err(Ok(TxnOutcome::AlreadyCommitted));
        }
        if epoch < transaction.epoch {
            return Err(Err(fenced(transaction.epoch)));
        }
        if epoch > transaction.epoch {
            return Err(Err(TxnError::UnknownTransaction)); // its begin never arrived
        }
        Ok(transaction)
    }

    fn stage(&mut self, request: StageRows) -> Result<TxnOutcome, TxnError> {
        let transaction = match self.owned(&request.txn_id, request.epoch) {
            Ok(transaction) => transaction,
            Err(answer) => return answer,
        };
        if transaction.prepared {
            // A stage retried after prepare: it must carry what prepare already counted.
            return match transaction.staged.get(&request.batch) {
                Some(rows) if *rows == request.rows => Ok(TxnOutcome::Done),
                _ => Err(TxnError::NotPrepared),
            };
        }
        if transaction.kind == SinkKind::Append && request.rows.has_tombstones() {
            return Err(TxnError::TombstoneInAppendTable);
        }
        transaction.staged.insert(request.batch, request.rows);
        Ok(TxnOutcome::Done)
    }

    fn prepare(&mut self, request: PrepareTransaction) -> Result<TxnOutcome, TxnError> {
        let transaction = match self.owned(&request.txn_id, request.epoch) {
            Ok(transaction) => transaction,
            Err(answer) => return answer,
        };
        let complete = transaction.staged.len() as u64 == request.batches
            && transaction.staged.keys().copied().eq(0..request.batches);
        if !complete {
            return Err(TxnError::MissingBatches {
                staged: transaction.staged.len() as u64,
                expected: request.batches,
            });
        }
        transaction.prepared = true;
        Ok(TxnOutcome::Done)
    }

    #[cfg(test)]
    fn commit(&mut self, request: CommitTransaction) -> Result<TxnOutcome, TxnError> {
        self.commit_rows(request).map(|(outcome, _)| outcome)
    }

    /// A commit as the store serves it, with the injected faults: refused while unavailable,
    /// failed without applying while commits fail, applied but unanswered (the returned flag)
    /// while replies are lost.
    fn commit_with_faults(&mut self, request: CommitTransaction) -> (Result<(TxnOutcome, u64), TxnError>, bool) {
        if self.refuses() {
            return (Err(TxnError::Unavailable), false);
        }
        if self.faults.failing_commits > 0 {
            self.faults.failing_commits -= 1;
            return (Err(TxnError::CommitFailed), false);
        }
        let entry = self.entry(EntryRef::Commit(&request));
        let answer = self.commit_rows(request);
        let accepted = matches!(answer, Ok((TxnOutcome::Done, _)));
        let answer = self.persist(entry, answer, accepted, true);
        let answer = self.check_durable(answer, accepted, "a committed transaction survives a crash");
        let lose_reply = self.faults.lost_commit_replies > 0;
        if lose_reply {
            self.faults.lost_commit_replies -= 1;
        }
        (answer, lose_reply)
    }

    /// Commits and says how many rows became visible.
    fn commit_rows(&mut self, request: CommitTransaction) -> Result<(TxnOutcome, u64), TxnError> {
        let fence = self.fence_of(&request.txn_id);
        let transaction = match self.owned(&request.txn_id, request.epoch) {
            Ok(transaction) => transaction,
            Err(answer) => return answer.map(|outcome| (outcome, 0)),
        };
        if !transaction.prepared {
            return Err(TxnError::NotPrepared);
        }
        check_committing(&request, transaction, fence);
        transaction.committed = true;
        let batches = std::mem::take(&mut transaction.staged);
        let (name, kind) = (transaction.table.clone(), transaction.kind);
        let table = self.tables.entry(name).or_insert_with(|| TableView::new(kind));
        let count: u64 = batches.values().map(|rows| rows.len() as u64).sum();
        let before = table.log.len() as u64;
        for rows in batches.values() {
            table.append(rows);
        }
        assert_eq!(
            table.log.len() as u64 - before,
            count,
            "txn-store invariant: a commit makes exactly its staged rows visible ({})",
            request.txn_id
        );
        assert!(
            !self.commit_order.contains(&request.txn_id),
            "txn-store invariant: a transaction commits once ({})",
            request.txn_id
        );
        self.commit_order.push(request.txn_id);
        Ok((TxnOutcome::Done, count))
    }
}

/// Serves the store at `address` until the node is killed.
pub async fn run_txn_store(address: SocketAddr, state: Arc<Mutex<TxnStoreState>>, tracer: TracerHandle) {
    let endpoint = sluice_engine::rpc::bind(address)
        .await
        .unwrap_or_else(|error| panic!("internal: txn-store cannot bind {address}: {error}"));
    serve_transactions(&endpoint, state, tracer);
    sluice_engine::rpc::serve_health(&endpoint, sluice_engine::connectors::TXN_STORE_SYSTEM);
    std::future::pending::<()>().await;
}

/// A reader → the store: one page of a table's committed rows, in commit order (what a user of
/// the real store reads the job's output with; pages keep every message small).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReadCommitted {
    /// The table; `None` asks only for the names of the tables.
    pub table: Option<String>,
    /// The first row (its position in the table's commit log).
    pub from: u64,
    /// At most this many rows.
    pub max_rows: u64,
}

/// Answer to [`ReadCommitted`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CommittedPage {
    /// The store's tables.
    Tables(Vec<String>),
    /// Rows of the table, and how the table applies them.
    Rows {
        /// How the table applies rows.
        kind: SinkKind,
        /// The rows from `from`; fewer than asked for only at the end of the table.
        rows: Vec<Row>,
    },
    /// No such table.
    NoTable,
}
rpc_request!(ReadCommitted => CommittedPage);

/// The page [`ReadCommitted`] asks for.
pub fn read_page(view: &CommittedView, request: &ReadCommitted) -> CommittedPage {
    let Some(name) = &request.table else { return CommittedPage::Tables(view.keys().cloned().collect()) };
    let Some(table) = view.get(name) else { return CommittedPage::NoTable };
    let from = usize::try_from(request.from).unwrap_or(usize::MAX).min(table.log.len());
    let count = usize::try_from(request.max_rows).unwrap_or(usize::MAX).min(table.log.len() - from);
    CommittedPage::Rows { kind: table.kind, rows: table.log.rows(from, count) }
}

/// A table from its commit log (the latest value per key is the log's last).
pub fn table_from_log(kind: SinkKind, log: Vec<Row>) -> TableView {
    let mut table = TableView::new(kind);
    table.append(&PackedRows::from(log));
    table
}

/// Serves [`ReadCommitted`] on `endpoint` (the real store; simulations read the state directly).
pub fn serve_reads(endpoint: &Endpoint, state: Arc<Mutex<TxnStoreState>>) {
    serve(endpoint, move |request: ReadCommitted| {
        let state = state.lock().expect("store lock");
        std::future::ready(read_page(&state.tables, &request))
    });
}

/// Serves the transaction protocol on `endpoint`.
pub fn serve_transactions(endpoint: &Endpoint, state: Arc<Mutex<TxnStoreState>>, tracer: TracerHandle) {
    let endpoint = endpoint.clone();
    let shared = Arc::clone(&state);
    serve(&endpoint, move |request: BeginTransaction| {
        let answer = shared.lock().expect("store lock").serve_begin(request);
        async move { answer }
    });
    let shared = Arc::clone(&state);
    let abort_tracer = tracer.clone();
    serve(&endpoint, move |request: AbortLingeringTransactions| {
        let (prefix, epoch) = (request.prefix.clone(), request.epoch);
        let answer = shared.lock().expect("store lock").serve_abort(request);
        if let Ok(transactions @ 1..) = answer {
            abort_tracer.record(TraceEvent::TransactionsAborted { prefix, epoch, transactions });
        }
        std::future::ready(answer)
    });
    let shared = Arc::clone(&state);
    serve(&endpoint, move |request: StageRows| {
        let answer = shared.lock().expect("store lock").serve_stage(request);
        async move { answer }
    });
    let shared = Arc::clone(&state);
    let prepare_tracer = tracer.clone();
    serve(&endpoint, move |request: PrepareTransaction| {
        let (txn_id, epoch) = (request.txn_id.clone(), request.epoch);
        let mut state = shared.lock().expect("store lock");
        let was_prepared = state.transactions.get(&txn_id).is_some_and(|transaction| transaction.prepared);
        let answer = state.serve_prepare(request);
        drop(state);
        if answer == Ok(TxnOutcome::Done) && !was_prepared {
            prepare_tracer.record(TraceEvent::TransactionPrepared { txn_id, epoch });
        }
        std::future::ready(answer)
    });
    let shared = Arc::clone(&state);
    serve(&endpoint, move |request: CommitTransaction| {
        let (txn_id, epoch) = (request.txn_id.clone(), request.epoch);
        let (answer, lose_reply) = shared.lock().expect("store lock").commit_with_faults(request);
        if let Ok((TxnOutcome::Done, rows)) = answer {
            tracer.record(TraceEvent::TransactionCommitted { txn_id: txn_id.clone(), epoch, rows });
        }
        if answer == Err(TxnError::CommitFailed) {
            tracer.record(TraceEvent::Harness { detail: format!("failed the commit of {txn_id} (injected fault)") });
        }
        if lose_reply {
            tracer.record(TraceEvent::Harness {
                detail: format!("applied the commit of {txn_id} and lost its reply (injected fault)"),
            });
        }
        async move {
            if lose_reply {
                std::future::pending::<()>().await; // the caller times out, not knowing the outcome
            }
            answer.map(|(outcome, _)| outcome)
        }
    });
}

#[cfg(test)]
mod tests {
    use sluice_engine::storage::MemoryStorage;

    use super::*;

    fn row(key: &str, value: &str) -> Row {
        Row::new(key.to_string(), value.to_string())
    }

    fn begin(state: &mut TxnStoreState, epoch: u64) -> Result<TxnOutcome, TxnError> {
        state.begin(BeginTransaction { table: "t".into(), kind: SinkKind::Upsert, txn_id: "x".into(), epoch })
    }

    fn stage(state: &mut TxnStoreState, epoch: u64, batch: u64, rows: Vec<Row>) -> Result<TxnOutcome, TxnError> {
        state.stage(StageRows { txn_id: "x".into(), epoch, batch, rows: rows.into() })
    }

    #[test]
    fn commit_is_idempotent_and_applies_once() {
        let mut state = TxnStoreState::default();
        assert_eq!(begin(&mut state, 0), Ok(TxnOutcome::Done));
        assert_eq!(stage(&mut state, 0, 0, vec![row("a", "1")]), Ok(TxnOutcome::Done));
        // A retried stage replaces its batch rather than adding to it.
        assert_eq!(stage(&mut state, 0, 0, vec![row("a", "1")]), Ok(TxnOutcome::Done));
        assert_eq!(
            state.prepare(PrepareTransaction { txn_id: "x".into(), epoch: 0, batches: 1 }),
            Ok(TxnOutcome::Done)
        );
        let commit = CommitTransaction { txn_id: "x".into(), epoch: 0 };
        assert_eq!(state.commit(commit.clone()), Ok(TxnOutcome::Done));
        assert_eq!(state.commit(commit), Ok(TxnOutcome::AlreadyCommitted));
        assert_eq!(state.committed()["t"].log.to_rows(), vec![row("a", "1")]);
        assert_eq!(begin(&mut state, 1), Ok(TxnOutcome::AlreadyCommitted));
    }

    #[test]
    fn a_tombstone_deletes_its_key_from_an_upsert_table_and_is_refused_by_an_append_table() {
        let mut state = TxnStoreState::default();
        begin(&mut state, 0).unwrap();
        let changes = vec![row("a", "1"), row("b", "1"), Row::tombstone("a"), Row::tombstone("c"), row("b", "2")];
        stage(&mut state, 0, 0, changes.clone()).unwrap();
        state.prepare(PrepareTransaction { txn_id: "x".into(), epoch: 0, batches: 1 }).unwrap();
        state.commit(CommitTransaction { txn_id: "x".into(), epoch: 0 }).unwrap();
        let table = &state.committed()["t"];
        assert_eq!(table.latest, BTreeMap::from([("b".to_string(), "2".to_string())]));
        assert_eq!(table.log.to_rows(), changes, "the log keeps the deletions in order");
        assert_eq!(table_from_log(SinkKind::Upsert, changes), *table);
        let append = BeginTransaction { table: "log".into(), kind: SinkKind::Append, txn_id: "y".into(), epoch: 0 };
        state.begin(append).unwrap();
        let staged = StageRows { txn_id: "y".into(), epoch: 0, batch: 0, rows: vec![Row::tombstone("a")].into() };
        assert_eq!(state.stage(staged), Err(TxnError::TombstoneInAppendTable));
    }

    #[test]
    fn injected_faults_fail_commits_without_applying_and_lose_replies_after_applying() {
        let mut state = TxnStoreState::default();
        begin(&mut state, 0).unwrap();
        stage(&mut state, 0, 0, vec![row("a", "1")]).unwrap();
        state.prepare(PrepareTransaction { txn_id: "x".into(), epoch: 0, batches: 1 }).unwrap();
        let commit = CommitTransaction { txn_id: "x".into(), epoch: 0 };
        state.faults = StoreFaults { unavailable: true, failing_commits: 1, lost_commit_replies: 1 };
        assert_eq!(state.commit_with_faults(commit.clone()), (Err(TxnError::Unavailable), false));
        state.faults.unavailable = false;
        assert_eq!(state.commit_with_faults(commit.clone()), (Err(TxnError::CommitFailed), false));
        assert!(state.committed().is_empty(), "a failed commit applies nothing");
        assert_eq!(state.commit_with_faults(commit.clone()), (Ok((TxnOutcome::Done, 1)), true));
        assert_eq!(state.committed()["t"].log.to_rows(), vec![row("a", "1")], "a lost reply's commit applied");
        // The caller, not knowing, retries: the store answers and applies nothing more.
        assert_eq!(state.commit_with_faults(commit), (Ok((TxnOutcome::AlreadyCommitted, 0)), false));
        assert_eq!(state.committed()["t"].log.len(), 1);
        assert_eq!(state.faults, StoreFaults::default(), "each injected fault is used up");
    }

    #[test]
    fn aborting_lingering_transactions_spares_commits_and_fences_older_epochs() {
        let mut state = TxnStoreState::default();
        let open = |state: &mut TxnStoreState, txn_id: &str, epoch: u64, prepare: bool| {
            state
                .begin(BeginTransaction { table: "t".into(), kind: SinkKind::Append, txn_id: txn_id.into(), epoch })
                .unwrap();
            state
                .stage(StageRows { txn_id: txn_id.into(), epoch, batch: 0, rows: vec![row("k", txn_id)].into() })
                .unwrap();
            if prepare {
                state.prepare(PrepareTransaction { txn_id: txn_id.into(), epoch, batches: 1 }).unwrap();
            }
        };
        open(&mut state, "j/t#1/0/c1", 0, true);
        state.commit(CommitTransaction { txn_id: "j/t#1/0/c1".into(), epoch: 0 }).unwrap();
        open(&mut state, "j/t#1/0/c2", 0, true);
        open(&mut state, "j/t#1/0/c3", 0, false);
        open(&mut state, "j/t#1/1/c2", 0, false);
        let aborted = state.abort_lingering(AbortLingeringTransactions { prefix: "j/t#1/0/".into(), epoch: 1 });
        assert_eq!(aborted, 2, "c2 and c3 of subtask 0; c1 is committed, subtask 1 is not this writer's");
        assert_eq!(
            state.commit(CommitTransaction { txn_id: "j/t#1/0/c2".into(), epoch: 0 }),
            Err(TxnError::Fenced { current_epoch: 1 }),
            "an aborted transaction's writer of an older epoch is fenced"
        );
        let zombie =
            BeginTransaction { table: "t".into(), kind: SinkKind::Append, txn_id: "j/t#1/0/c4".into(), epoch: 0 };
        assert_eq!(state.begin(zombie), Err(TxnError::Fenced { current_epoch: 1 }));
        let fresh =
            BeginTransaction { table: "t".into(), kind: SinkKind::Append, txn_id: "j/t#1/0/c2".into(), epoch: 1 };
        assert_eq!(state.begin(fresh), Ok(TxnOutcome::Done));
        assert_eq!(state.committed()["t"].log.len(), 1);
        assert!(state.transactions.contains_key("j/t#1/1/c2"));
    }

    #[test]
    fn a_newer_epoch_aborts_older_staging_and_fences_the_zombie() {
        let mut state = TxnStoreState::default();
        begin(&mut state, 0).unwrap();
        stage(&mut state, 0, 0, vec![row("zombie", "1")]).unwrap();
        assert_eq!(begin(&mut state, 1), Ok(TxnOutcome::Done));
        assert_eq!(stage(&mut state, 0, 1, vec![row("zombie", "2")]), Err(TxnError::Fenced { current_epoch: 1 }));
        assert_eq!(
            state.prepare(PrepareTransaction { txn_id: "x".into(), epoch: 1, batches: 1 }),
            Err(TxnError::MissingBatches { staged: 0, expected: 1 })
        );
        stage(&mut state, 1, 0, vec![row("fresh", "1")]).unwrap();
        state.prepare(PrepareTransaction { txn_id: "x".into(), epoch: 1, batches: 1 }).unwrap();
        assert_eq!(
            state.commit(CommitTransaction { txn_id: "x".into(), epoch: 0 }),
            Err(TxnError::Fenced { current_epoch: 1 })
        );
        state.commit(CommitTransaction { txn_id: "x".into(), epoch: 1 }).unwrap();
        assert_eq!(state.committed()["t"].log.to_rows(), vec![row("fresh", "1")]);
    }

    #[test]
    fn a_zombie_staging_into_a_transaction_aborted_as_lingering_is_fenced() {
        let mut state = TxnStoreState::default();
        begin(&mut state, 0).unwrap();
        assert_eq!(state.abort_lingering(AbortLingeringTransactions { prefix: "x".into(), epoch: 1 }), 1);
        assert_eq!(stage(&mut state, 0, 0, vec![row("zombie", "1")]), Err(TxnError::Fenced { current_epoch: 1 }));
        let unknown = state.stage(StageRows { txn_id: "y".into(), epoch: 0, batch: 0, rows: PackedRows::new() });
        assert_eq!(unknown, Err(TxnError::UnknownTransaction), "no fence covers it");
    }

    #[test]
    fn open_transactions_are_those_neither_committed_nor_aborted() {
        let mut state = TxnStoreState::default();
        assert_eq!(state.open_transactions(), Vec::<String>::new());
        begin(&mut state, 0).unwrap();
        stage(&mut state, 0, 0, vec![row("k", "1")]).unwrap();
        assert_eq!(state.open_transactions(), ["x (epoch 0, not prepared, 1 batch staged)"]);
        state.prepare(PrepareTransaction { txn_id: "x".into(), epoch: 0, batches: 1 }).unwrap();
        assert_eq!(state.open_transactions(), ["x (epoch 0, prepared, 1 batch staged)"]);
        state.commit(CommitTransaction { txn_id: "x".into(), epoch: 0 }).unwrap();
        assert_eq!(state.open_transactions(), Vec::<String>::new(), "committed");
        state
            .begin(BeginTransaction { table: "t".into(), kind: SinkKind::Append, txn_id: "y".into(), epoch: 0 })
            .unwrap();
        assert_eq!(state.open_transactions().len(), 1);
        assert_eq!(state.abort_lingering(AbortLingeringTransactions { prefix: "y".into(), epoch: 1 }), 1);
        assert_eq!(state.open_transactions(), Vec::<String>::new(), "aborted");
    }

    #[test]
    fn committed_tables_read_page_by_page_rebuild_the_view() {
        let mut state = TxnStoreState::default();
        begin(&mut state, 0).unwrap();
        let rows: Vec<Row> = (0..5).map(|index| row(&format!("k{}", index % 2), &index.to_string())).collect();
        stage(&mut state, 0, 0, rows).unwrap();
        state.prepare(PrepareTransaction { txn_id: "x".into(), epoch: 0, batches: 1 }).unwrap();
        state.commit(CommitTransaction { txn_id: "x".into(), epoch: 0 }).unwrap();
        let view = state.committed();
        let ask = |table: Option<&str>, from| ReadCommitted { table: table.map(String::from), from, max_rows: 2 };
        assert_eq!(read_page(&view, &ask(None, 0)), CommittedPage::Tables(vec!["t".to_string()]));
        assert_eq!(read_page(&view, &ask(Some("u"), 0)), CommittedPage::NoTable);
        let mut log = Vec::new();
        loop {
            let CommittedPage::Rows { kind, rows } = read_page(&view, &ask(Some("t"), log.len() as u64)) else {
                panic!("a table's page")
            };
            assert_eq!(kind, SinkKind::Upsert);
            let last = rows.len() < 2;
            log.extend(rows);
            if last {
                break;
            }
        }
        assert_eq!(table_from_log(SinkKind::Upsert, log), view["t"]);
    }

    /// What a recovered store must hold exactly as the store that wrote the journal did.
    fn durable_state(state: &TxnStoreState) -> String {
        format!("{:?} {:?} {:?} {:?}", state.transactions, state.tables, state.commit_order, state.fences)
    }

    /// Two transactions of one writer: `c1` committed, `c2` prepared, `c3` staged only; a
    /// second writer's older attempt fenced.
    fn journaled_history(state: &mut TxnStoreState) {
        let open = |state: &mut TxnStoreState, txn_id: &str, epoch: u64, prepare: bool| {
            let begin = BeginTransaction { table: "t".into(), kind: SinkKind::Upsert, txn_id: txn_id.into(), epoch };
            assert_eq!(state.serve_begin(begin), Ok(TxnOutcome::Done));
            for batch in 0..2 {
                let rows = vec![row(txn_id, &batch.to_string())];
                assert_eq!(
                    state.serve_stage(StageRows { txn_id: txn_id.into(), epoch, batch, rows: rows.into() }),
                    Ok(TxnOutcome::Done)
                );
            }
            if prepare {
                let request = PrepareTransaction { txn_id: txn_id.into(), epoch, batches: 2 };
                assert_eq!(state.serve_prepare(request), Ok(TxnOutcome::Done));
            }
        };
        open(state, "j/t#1/0/c1", 0, true);
        let commit = CommitTransaction { txn_id: "j/t#1/0/c1".into(), epoch: 0 };
        assert_eq!(state.commit_with_faults(commit).0, Ok((TxnOutcome::Done, 2)));
        open(state, "j/t#1/0/c2", 0, true);
        open(state, "j/t#1/1/c2", 0, false);
        let abort = AbortLingeringTransactions { prefix: "j/t#1/1/".into(), epoch: 1 };
        assert_eq!(state.serve_abort(abort), Ok(1));
        open(state, "j/t#1/0/c3", 0, false);
    }

    #[test]
    fn a_recovered_store_holds_exactly_what_its_journal_accepted() {
        let disk = Arc::new(MemoryStorage::new());
        let mut state = TxnStoreState::recover(disk.clone()).expect("an empty disk recovers");
        journaled_history(&mut state);
        // Refused requests change nothing and are not journaled.
        let zombie =
            BeginTransaction { table: "t".into(), kind: SinkKind::Upsert, txn_id: "j/t#1/1/c9".into(), epoch: 0 };
        assert_eq!(state.serve_begin(zombie), Err(TxnError::Fenced { current_epoch: 1 }));
        let entries = unframe(&disk.read_now(JOURNAL_PATH, 0, disk.length_now(JOURNAL_PATH).unwrap()).unwrap()).0.len();
        assert_eq!(entries, 4 + 8 + 2 + 1 + 1, "4 begins, 8 stages, 2 prepares, a commit, an abort");
        let recovered = TxnStoreState::recover(disk.clone()).expect("the journal recovers");
        assert_eq!(durable_state(&recovered), durable_state(&state));
        assert_eq!(recovered.committed()["t"].log.to_rows(), vec![row("j/t#1/0/c1", "0"), row("j/t#1/0/c1", "1")]);
    }

    #[test]
    fn a_crash_loses_only_stages_of_unprepared_transactions() {
        let disk = Arc::new(MemoryStorage::new());
        let mut state = TxnStoreState::recover(disk.clone()).unwrap();
        journaled_history(&mut state);
        disk.crash(); // c3's two stages were never synced
        let mut recovered = TxnStoreState::recover(disk.clone()).unwrap();
        let c3 = &recovered.transactions["j/t#1/0/c3"];
        assert!(c3.staged.is_empty() && !c3.prepared, "c3 was begun (synced) but its stages were not");
        // Its writer's prepare finds the batches missing: the task restarts, nothing is lost.
        let prepare = PrepareTransaction { txn_id: "j/t#1/0/c3".into(), epoch: 0, batches: 2 };
        assert_eq!(recovered.serve_prepare(prepare), Err(TxnError::MissingBatches { staged: 0, expected: 2 }));
        // What was answered as prepared, committed or fenced survived.
        assert!(recovered.transactions["j/t#1/0/c2"].prepared);
        assert_eq!(recovered.commit_order(), ["j/t#1/0/c1"]);
        assert_eq!(recovered.fence_of("j/t#1/1/c2"), Some(1));
        let commit = CommitTransaction { txn_id: "j/t#1/0/c2".into(), epoch: 0 };
        assert_eq!(recovered.commit_with_faults(commit).0, Ok((TxnOutcome::Done, 2)));
    }

    #[test]
    fn a_damaged_journal_is_refused_and_a_failed_write_stops_the_store() {
        let disk = Arc::new(MemoryStorage::new());
        let mut state = TxnStoreState::recover(disk.clone()).unwrap();
        journaled_history(&mut state);
        assert!(disk.corrupt(JOURNAL_PATH, 30));
        let error = TxnStoreState::recover(disk.clone()).expect_err("a damaged journal must not start a store");
        assert!(error.contains("damaged after entry 0"), "{error}");

        let mut state = TxnStoreState::recover(Arc::new(Unwritable)).expect("no journal yet");
        let begin = BeginTransaction { table: "t".into(), kind: SinkKind::Upsert, txn_id: "x".into(), epoch: 0 };
        assert_eq!(state.serve_begin(begin.clone()), Err(TxnError::Unavailable));
        assert!(state.broken.is_some());
        assert_eq!(state.serve_begin(begin), Err(TxnError::Unavailable), "a broken store refuses until restarted");
    }

    /// A store on `disk` that compacts once its journal holds `bytes`.
    fn compacting(disk: &Arc<MemoryStorage>, bytes: u64) -> TxnStoreState {
        let mut state = TxnStoreState::recover(disk.clone()).expect("the disk recovers");
        state.journal.as_mut().expect("a real store journals").compact_after = bytes;
        state
    }

    #[test]
    fn a_compacted_store_recovers_exactly_what_it_held_from_its_image_and_journal() {
        // After every entry (as the image allows), a few times, once.
        for bytes in [1, 200, 400] {
            let disk = Arc::new(MemoryStorage::new());
            let mut state = compacting(&disk, bytes);
            journaled_history(&mut state);
            let generation = state.journal.as_ref().expect("journals").generation;
            assert!(generation > 0, "a journal of {bytes} bytes is compacted");
            let files = disk.list_now("txn-store/").expect("lists");
            assert!(
                files.iter().all(|file| file.ends_with(&format!("-{generation}"))),
                "{files:?}: only generation {generation}'s files are left"
            );
            let recovered = TxnStoreState::recover(disk.clone()).expect("the image and journal recover");
            assert_eq!(durable_state(&recovered), durable_state(&state), "compacting after {bytes} bytes");
            assert_eq!(recovered.committed(), state.committed());
            // A crash after compacting loses no more than one before it would.
            disk.crash();
            let crashed = TxnStoreState::recover(disk.clone()).expect("recovers after a crash");
            assert_eq!(crashed.commit_order(), ["j/t#1/0/c1"]);
            assert!(crashed.transactions["j/t#1/0/c2"].prepared);
            assert_eq!(crashed.fence_of("j/t#1/1/c2"), Some(1));
        }
    }

    /// A disk whose syncs of compaction images fail (a real disk that is full or failing).
    struct ImageSyncFails(MemoryStorage);

    impl ImmediateStorage for ImageSyncFails {
        fn append_now(&self, path: &str, bytes: &[u8]) -> Result<(), StorageError> {
            self.0.append_now(path, bytes)
        }
        fn sync_now(&self, path: &str) -> Result<(), StorageError> {
            match path.contains("image") {
                true => Err(StorageError::SyncFailed(path.to_string())),
                false => self.0.sync_now(path),
            }
        }
        fn read_now(&self, path: &str, offset: u64, length: u64) -> Result<Vec<u8>, StorageError> {
            self.0.read_now(path, offset, length)
        }
        fn length_now(&self, path: &str) -> Result<u64, StorageError> {
            self.0.length_now(path)
        }
        fn delete_now(&self, path: &str) -> Result<(), StorageError> {
            self.0.delete_now(path)
        }
        fn list_now(&self, prefix: &str) -> Result<Vec<String>, StorageError> {
            self.0.list_now(prefix)
        }
        fn rename_now(&self, from: &str, to: &str) -> Result<(), StorageError> {
            self.0.rename_now(from, to)
        }
    }

    #[test]
    fn a_compaction_whose_image_fails_to_sync_loses_no_commit_journaled_after_it() {
        let disk = Arc::new(ImageSyncFails(MemoryStorage::new()));
        let mut state = TxnStoreState::recover(disk.clone()).expect("an empty disk recovers");
        state.journal.as_mut().expect("a real store journals").compact_after = 1;
        journaled_history(&mut state);
        assert_eq!(state.journal.as_ref().expect("journals").generation, 0, "no compaction succeeded");
        let files = disk.list_now("txn-store/").expect("lists");
        assert!(files.iter().all(|file| !file.contains("image")), "{files:?}: a failed image is removed");
        let recovered = TxnStoreState::recover(disk.clone()).expect("the journal recovers");
        assert_eq!(durable_state(&recovered), durable_state(&state), "every journaled commit is kept");
    }

    #[test]
    fn an_image_cut_short_leaves_the_generation_before_it_and_nothing_else_starts_a_store() {
        let disk = Arc::new(MemoryStorage::new());
        let mut state = TxnStoreState::recover(disk.clone()).expect("an empty disk recovers");
        journaled_history(&mut state);
        // A compaction to generation 1 that crashed while writing its image's last part.
        let view = image::StateRef {
            transactions: &state.transactions,
            tables: &state.tables,
            commit_order: &state.commit_order,
            fences: &state.fences,
        };
        let written = image::write_image(disk.as_ref(), 1, &view).expect("the memory disk writes");
        assert!(disk.corrupt("txn-store/image-1", written - 1));
        let recovered = TxnStoreState::recover(disk.clone()).expect("generation 0 recovers");
        assert_eq!(durable_state(&recovered), durable_state(&state));
        assert_eq!(recovered.journal.as_ref().expect("journals").generation, 0);
        assert_eq!(disk.list_now("txn-store/").expect("lists"), [JOURNAL_PATH], "the image cut short is deleted");
        // The same image without the journal before it: starting would lose every commit.
        image::write_image(disk.as_ref(), 1, &view).expect("the memory disk writes");
        assert!(disk.corrupt("txn-store/image-1", written - 1));
        disk.delete_now(JOURNAL_PATH).expect("deletes");
        let error = TxnStoreState::recover(disk.clone()).expect_err("nothing to recover from must not start a store");
        assert!(error.contains("`txn-store/image-1` is damaged"), "{error}");
    }

    /// A disk whose every write fails.
    struct Unwritable;

    impl ImmediateStorage for Unwritable {
        fn append_now(&self, path: &str, _: &[u8]) -> Result<(), StorageError> {
            Err(StorageError::Unavailable(format!("{path}: disk full")))
        }
        fn sync_now(&self, path: &str) -> Result<(), StorageError> {
            Err(StorageError::Unavailable(format!("{path}: disk full")))
        }
        fn read_now(&self, path: &str, _: u64, _: u64) -> Result<Vec<u8>, StorageError> {
            Err(StorageError::NotFound(path.to_string()))
        }
        fn length_now(&self, path: &str) -> Result<u64, StorageError> {
            Err(StorageError::NotFound(path.to_string()))
        }
        fn delete_now(&self, _: &str) -> Result<(), StorageError> {
            Ok(())
        }
        fn list_now(&self, _: &str) -> Result<Vec<String>, StorageError> {
            Ok(Vec::new())
        }
        fn rename_now(&self, from: &str, _: &str) -> Result<(), StorageError> {
            Err(StorageError::NotFound(from.to_string()))
        }
    }

    #[test]
    fn nothing_is_visible_before_commit() {
        let mut state = TxnStoreState::default();
        begin(&mut state, 0).unwrap();
        stage(&mut state, 0, 0, vec![row("a", "1")]).unwrap();
        state.prepare(PrepareTransaction { txn_id: "x".into(), epoch: 0, batches: 1 }).unwrap();
        assert!(state.committed().is_empty());
    }
}
