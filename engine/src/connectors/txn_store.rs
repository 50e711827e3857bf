//! A transactional key/value store (think a database with staged transactions) and the
//! exactly-once [`TxnStoreSink`] that writes to it with two-phase commit.
//!
//! Protocol, per transaction id:
//!
//! ```text
//!   Begin(epoch) ──> Stage(batch 0..n) ──> Prepare(n batches) ──> Commit
//!        │                                                          │
//!        └─ AlreadyCommitted: a previous attempt committed it ──────┘ (idempotent)
//! ```
//!
//! The epoch is the job attempt: `Begin` with a newer epoch discards what an older attempt
//! staged (a repeated `Begin` with the same epoch changes nothing), and any request from an older epoch is rejected as fenced, so a zombie writer of a
//! failed attempt cannot mix its rows into the new attempt's transaction. Stage is idempotent per
//! batch number (a retried stage replaces the batch), commit is idempotent per transaction id,
//! and committed transactions are never rolled back.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::packed_rows::PackedRows;
pub use super::row::Row;
use super::{ServiceClient, TXN_STORE_SYSTEM};
use crate::api::{BoxFuture, Committer, DecodeError, OperatorError, Record, Sink, SinkWriter, TaskInfo};
use crate::rpc_request;

/// How a table applies committed rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SinkKind {
    /// Every committed row is kept: the table is a multiset of rows.
    Append,
    /// A committed row replaces the previous value of its key; a tombstone deletes the key.
    Upsert,
}

/// Why the store refused a request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TxnError {
    /// A newer epoch owns the transaction: the caller is a zombie of an older attempt.
    Fenced {
        /// The epoch that owns it.
        current_epoch: u64,
    },
    /// The transaction was never begun (or its begin was lost).
    UnknownTransaction,
    /// Prepare found fewer staged batches than the writer sent.
    MissingBatches {
        /// Batches the store holds.
        staged: u64,
        /// Batches the writer says it sent.
        expected: u64,
    },
    /// Commit of a transaction that was not prepared.
    NotPrepared,
    /// The store refused the request (an outage); retry later.
    Unavailable,
    /// The store failed the commit and applied nothing; retry.
    CommitFailed,
    /// A staged batch deletes a key of an append table, which has no keys to delete.
    TombstoneInAppendTable,
}

impl TxnError {
    /// True for errors that a later retry of the same request may not get.
    pub fn is_retriable(&self) -> bool {
        matches!(self, TxnError::Unavailable | TxnError::CommitFailed)
    }
}

impl fmt::Display for TxnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxnError::Fenced { current_epoch } => write!(f, "fenced by epoch {current_epoch}"),
            TxnError::UnknownTransaction => f.write_str("unknown transaction"),
            TxnError::MissingBatches { staged, expected } => write!(f, "{staged} of {expected} batches staged"),
            TxnError::NotPrepared => f.write_str("transaction not prepared"),
            TxnError::Unavailable => f.write_str("store unavailable"),
            TxnError::CommitFailed => f.write_str("commit failed"),
            TxnError::TombstoneInAppendTable => f.write_str("a deletion staged for an append table"),
        }
    }
}

/// Outcome of `Begin` and `Commit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TxnOutcome {
    /// Done now.
    Done,
    /// A previous attempt already committed this transaction.
    AlreadyCommitted,
}

/// Opens (or re-opens for a newer epoch) a transaction on a table.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BeginTransaction {
    /// The table.
    pub table: String,
    /// How the table applies rows.
    pub kind: SinkKind,
    /// Stable across attempts.
    pub txn_id: String,
    /// The writer's job attempt.
    pub epoch: u64,
}
rpc_request!(BeginTransaction => Result<TxnOutcome, TxnError>);

/// Stages one batch of rows.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StageRows {
    /// The transaction.
    pub txn_id: String,
    /// The writer's epoch.
    pub epoch: u64,
    /// Position of the batch; re-staging a batch replaces it.
    pub batch: u64,
    /// The rows, in write order.
    pub rows: PackedRows,
}
rpc_request!(StageRows => Result<TxnOutcome, TxnError>);

/// Pre-commits: the store checks it holds every batch and makes the transaction committable.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PrepareTransaction {
    /// The transaction.
    pub txn_id: String,
    /// The writer's epoch.
    pub epoch: u64,
    /// Number of batches the writer staged.
    pub batches: u64,
}
rpc_request!(PrepareTransaction => Result<TxnOutcome, TxnError>);

/// Commits a prepared transaction; idempotent.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CommitTransaction {
    /// The transaction.
    pub txn_id: String,
    /// The epoch that prepared it.
    pub epoch: u64,
}
rpc_request!(CommitTransaction => Result<TxnOutcome, TxnError>);

/// Aborts what older attempts of one writer left open (Flink's Kafka sink aborts lingering
/// transactions on restore): every transaction whose id starts with `prefix`, not committed,
/// and opened by an epoch below `epoch`, loses what it staged; none of those epochs may begin
/// one again. Commits of transactions they prepared stay possible (a restore re-commits them).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AbortLingeringTransactions {
    /// The writer's transaction ids: `job/table#operator/subtask/`.
    pub prefix: String,
    /// The writer's epoch.
    pub epoch: u64,
}
rpc_request!(AbortLingeringTransactions => Result<u64, TxnError>);

/// What a writer hands its committer: a prepared transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnCommittable {
    /// The transaction.
    pub txn_id: String,
    /// The epoch that prepared it.
    pub epoch: u64,
}

impl Record for TxnCommittable {
    fn encode(&self, out: &mut Vec<u8>) {
        self.txn_id.encode(out);
        self.epoch.encode(out);
    }
    fn decode(input: &mut &[u8]) -> Result<Self, DecodeError> {
        Ok(TxnCommittable { txn_id: String::decode(input)?, epoch: u64::decode(input)? })
    }
}

/// An element's row: its key, and its value or `None` for the key's deletion.
type RowFunction<T> = Arc<dyn Fn(&T) -> (String, Option<String>) + Send + Sync>;

/// An exactly-once sink into a table of the transactional store; see the module doc.
pub struct TxnStoreSink<T> {
    table: String,
    kind: SinkKind,
    to_row: RowFunction<T>,
    batch_rows: usize,
}

impl<T: Record> TxnStoreSink<T> {
    /// A sink whose committed rows replace earlier values of the same key.
    pub fn upsert(table: &str, to_row: impl Fn(&T) -> (String, String) + Send + Sync + 'static) -> TxnStoreSink<T> {
        TxnStoreSink::upsert_changelog(table, move |element| {
            let (key, value) = to_row(element);
            (key, Some(value))
        })
    }

    /// An upsert sink of an updating stream (Flink's upsert sink by primary key): an element
    /// whose value is `Some` puts it, one whose value is `None` deletes its key (`+I` and `+U`
    /// put, `-D` deletes; the caller drops `-U`, which the following `+U` replaces).
    pub fn upsert_changelog(
        table: &str,
        to_change: impl Fn(&T) -> (String, Option<String>) + Send + Sync + 'static,
    ) -> TxnStoreSink<T> {
        TxnStoreSink { table: table.to_string(), kind: SinkKind::Upsert, to_row: Arc::new(to_change), batch_rows: 512 }
    }

    /// A sink whose committed rows are all kept.
    pub fn append(table: &str, to_row: impl Fn(&T) -> (String, String) + Send + Sync + 'static) -> TxnStoreSink<T> {
        let to_row = move |element: &T| {
            let (key, value) = to_row(element);
            (key, Some(value))
        };
        TxnStoreSink { table: table.to_string(), kind: SinkKind::Append, to_row: Arc::new(to_row), batch_rows: 512 }
    }

    /// Sets how many rows one stage request carries.
    pub fn with_batch_rows(mut self, batch_rows: usize) -> TxnStoreSink<T> {
        assert!(batch_rows > 0, "batch size must be positive");
        self.batch_rows = batch_rows;
        self
    }
}

/// The transaction id of a sink subtask's end-of-input transaction: stable across attempts.
pub fn end_of_input_txn_id(task: &TaskInfo, table: &str) -> String {
    format!("{}eoi", writer_txn_prefix(task, table))
}

/// The transaction id of the rows a sink subtask writes before checkpoint `checkpoint`'s barrier
/// (and after the previous one's): committed only once a checkpoint at least that new completed.
pub fn checkpoint_txn_id(task: &TaskInfo, table: &str, checkpoint: u64) -> String {
    format!("{}c{checkpoint}", writer_txn_prefix(task, table))
}

/// The table a sink transaction id writes to (ids are `job/table#operator/subtask/suffix`).
pub fn txn_table(txn_id: &str) -> Option<&str> {
    let (prefix, _) = txn_id.split_once('#')?;
    prefix.rsplit_once('/').map(|(_, table)| table)
}

/// The prefix of every transaction id a sink subtask writes.
pub fn writer_txn_prefix(task: &TaskInfo, table: &str) -> String {
    format!("{}/{}#{}/{}/", task.job_id, table, task.operator_id, task.subtask_index)
}

/// The checkpoint a transaction id of [`checkpoint_txn_id`] belongs to.
pub fn txn_checkpoint(txn_id: &str) -> Option<u64> {
    txn_id.rsplit_once("/c").and_then(|(_, number)| number.parse().ok())
}

/// The first transaction a subtask writes to: end of input without checkpoints, otherwise the
/// one for the checkpoint after the restored one.
fn first_txn_id(task: &TaskInfo, table: &str) -> String {
    if task.checkpointing {
        checkpoint_txn_id(task, table, task.restored_checkpoint.unwrap_or(0) + 1)
    } else {
        end_of_input_txn_id(task, table)
    }
}

impl<T: Record> Sink<T> for TxnStoreSink<T> {
    type Committable = TxnCommittable;

    fn create_writer(&self, task: &TaskInfo) -> Box<dyn SinkWriter<T, TxnCommittable>> {
        Box::new(TxnStoreWriter {
            table: self.table.clone(),
            kind: self.kind,
            to_row: Arc::clone(&self.to_row),
            batch_rows: self.batch_rows,
            txn_id: first_txn_id(task, &self.table),
            epoch: u64::from(task.attempt),
            task: task.clone(),
            connection: None,
            begun: false,
            buffer: PackedRows::new(),
            staged_batches: 0,
            already_committed: false,
        })
    }

    fn create_committer(&self, task: &TaskInfo) -> Box<dyn Committer<TxnCommittable>> {
        Box::new(TxnStoreCommitter { task: task.clone(), connection: None })
    }
}

struct Connection {
    store: ServiceClient,
}

async fn connect(task: &TaskInfo) -> Result<Connection, OperatorError> {
    Ok(Connection { store: ServiceClient::connect(task, TXN_STORE_SYSTEM).await? })
}

fn refused(request: &str, txn_id: &str, error: TxnError) -> OperatorError {
    OperatorError::new(format!("txn-store refused {request} of `{txn_id}`: {error}"))
}

/// Attempts at one store request that keeps failing with retriable errors before the task
/// fails: with [`STORE_BACKOFF`] between them, about four seconds of outage are ridden out.
const STORE_ATTEMPTS: u32 = 20;
const STORE_BACKOFF: std::time::Duration = std::time::Duration::from_millis(200);

impl Connection {
    /// Sends an idempotent request, retrying on timeouts and on retriable refusals.
    async fn call<R>(&self, request: R, what: &str, txn_id: &str) -> Result<TxnOutcome, OperatorError>
    where
        R: crate::rpc::Request<Response = Result<TxnOutcome, TxnError>> + Clone,
    {
        self.call_for(request, what, txn_id).await
    }

    /// [`Connection::call`] for any answer.
    async fn call_for<R, A>(&self, request: R, what: &str, txn_id: &str) -> Result<A, OperatorError>
    where
        R: crate::rpc::Request<Response = Result<A, TxnError>> + Clone,
    {
        let mut last = None;
        for _ in 0..STORE_ATTEMPTS {
            match self.store.call(request.clone()).await? {
                Ok(answer) => return Ok(answer),
                Err(error) if error.is_retriable() => {
                    last = Some(error);
                    crate::rt::time::sleep(STORE_BACKOFF).await;
                }
                Err(error) => return Err(refused(what, txn_id, error)),
            }
        }
        Err(refused(what, txn_id, last.expect("at least one attempt")))
    }
}

struct TxnStoreWriter<T> {
    table: String,
    kind: SinkKind,
    to_row: RowFunction<T>,
    batch_rows: usize,
    txn_id: String,
    epoch: u64,
    task: TaskInfo,
    connection: Option<Connection>,
    /// The current transaction was begun.
    begun: bool,
    /// Rows written and not staged yet, packed (no allocation per row).
    buffer: PackedRows,
    staged_batches: u64,
    already_committed: bool,
}

impl<T: Record> TxnStoreWriter<T> {
    /// Connects on first use. A restarted writer first aborts what older attempts left open,
    /// whether or not it writes anything itself; this runs after the restore committed the
    /// restored checkpoint's transactions.
    async fn connect_if_needed(&mut self) -> Result<(), OperatorError> {
        if self.connection.is_some() {
            return Ok(());
        }
        let connection = connect(&self.task).await?;
        if self.epoch > 0 {
            let prefix = writer_txn_prefix(&self.task, &self.table);
            let request = AbortLingeringTransactions { prefix: prefix.clone(), epoch: self.epoch };
            let aborted: u64 = connection.call_for(request, "abort lingering transactions", &prefix).await?;
            if aborted > 0 {
                crate::cover!(LingeringTransactionAborted);
            }
        }
        self.connection = Some(connection);
        Ok(())
    }

    async fn begin_if_needed(&mut self) -> Result<(), OperatorError> {
        if self.begun {
            return Ok(());
        }
        assert_eq!(
            self.staged_batches, 0,
            "sink invariant: nothing is staged before its transaction begins (`{}`)",
            self.txn_id
        );
        assert!(
            !self.already_committed,
            "sink invariant: a transaction is known committed only once begun (`{}`)",
            self.txn_id
        );
        self.connect_if_needed().await?;
        let connection = self.connection.as_ref().expect("connected above");
        let request = BeginTransaction {
            table: self.table.clone(),
            kind: self.kind,
            txn_id: self.txn_id.clone(),
            epoch: self.epoch,
        };
        let outcome = connection.call(request, "begin", &self.txn_id).await?;
        self.already_committed = outcome == TxnOutcome::AlreadyCommitted;
        self.begun = true;
        Ok(())
    }

    async fn stage(&mut self, end_of_input: bool) -> Result<(), OperatorError> {
        if self.buffer.is_empty() {
            return Ok(()); // nothing to stage: no transaction needed yet
        }
        self.begin_if_needed().await?;
        if self.already_committed {
            // A previous attempt committed this transaction; what this attempt computes again
            // is the same, and must not be written twice.
            assert_eq!(
                self.staged_batches, 0,
                "sink invariant: nothing is staged into a transaction an earlier attempt committed (`{}`)",
                self.txn_id
            );
            self.buffer.clear();
            return Ok(());
        }
        while self.buffer.len() >= self.batch_rows || (end_of_input && !self.buffer.is_empty()) {
            let rows = self.buffer.split_front(self.batch_rows);
            assert!(!rows.is_empty(), "sink invariant: a stage carries rows (`{}`)", self.txn_id);
            let connection = self.connection.as_ref().expect("begun above");
            let request =
                StageRows { txn_id: self.txn_id.clone(), epoch: self.epoch, batch: self.staged_batches, rows };
            connection.call(request, "stage", &self.txn_id).await?;
            self.staged_batches += 1;
        }
        self.check_staged(end_of_input);
        Ok(())
    }

    /// What a stage leaves: less than a batch buffered, nothing at the end of input.
    fn check_staged(&self, end_of_input: bool) {
        assert!(
            self.buffer.len() < self.batch_rows,
            "sink invariant: a stage leaves less than a batch of rows buffered (`{}`)",
            self.txn_id
        );
        assert!(
            !end_of_input || self.buffer.is_empty(),
            "sink invariant: a stage at the end of input ships every row (`{}`)",
            self.txn_id
        );
    }

    async fn prepare(&mut self) -> Result<Vec<TxnCommittable>, OperatorError> {
        if self.task.checkpointing && !self.begun && self.buffer.is_empty() {
            // Nothing written since the last checkpoint: no transaction. A restarted writer
            // that writes nothing must still abort what its older attempts left open.
            if self.epoch > 0 {
                self.connect_if_needed().await?;
            }
            return Ok(Vec::new());
        }
        self.begin_if_needed().await?;
        self.stage(true).await?;
        assert!(self.begun, "sink invariant: a transaction is begun before it is prepared (`{}`)", self.txn_id);
        assert!(
            self.buffer.is_empty(),
            "sink invariant: a prepare stages every row written before it (`{}`)",
            self.txn_id
        );
        let committable = TxnCommittable { txn_id: self.txn_id.clone(), epoch: self.epoch };
        if self.already_committed {
            return Ok(vec![committable]);
        }
        let connection = self.connection.as_ref().expect("begun by stage");
        let request =
            PrepareTransaction { txn_id: self.txn_id.clone(), epoch: self.epoch, batches: self.staged_batches };
        connection.call(request, "prepare", &self.txn_id).await?;
        Ok(vec![committable])
    }
}

impl<T: Record> SinkWriter<T, TxnCommittable> for TxnStoreWriter<T> {
    fn write(&mut self, element: T) -> Result<(), OperatorError> {
        let (key, value) = (self.to_row)(&element);
        match value {
            Some(value) => self.buffer.push(&key, &value),
            None => self.buffer.push_tombstone(&key),
        }
        Ok(())
    }

    fn flush(&mut self, end_of_input: bool) -> BoxFuture<'_, Result<(), OperatorError>> {
        Box::pin(async move {
            if end_of_input || self.buffer.len() >= self.batch_rows {
                self.stage(end_of_input).await?;
            }
            Ok(())
        })
    }

    fn prepare_commit(&mut self) -> BoxFuture<'_, Result<Vec<TxnCommittable>, OperatorError>> {
        Box::pin(self.prepare())
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> Result<Vec<u8>, OperatorError> {
        // The engine pre-commits at the barrier before it snapshots: nothing is left behind.
        assert!(
            self.buffer.is_empty(),
            "sink invariant: barrier {checkpoint_id}'s pre-commit staged every row before it (`{}`)",
            self.txn_id
        );
        // What follows the barrier goes into the next checkpoint's transaction.
        self.txn_id = checkpoint_txn_id(&self.task, &self.table, checkpoint_id + 1);
        self.begun = false;
        self.staged_batches = 0;
        self.already_committed = false;
        Ok(Vec::new())
    }
}

struct TxnStoreCommitter {
    task: TaskInfo,
    connection: Option<Connection>,
}

impl TxnStoreCommitter {
    async fn commit_all(&mut self, committables: Vec<TxnCommittable>) -> Result<(), OperatorError> {
        if self.connection.is_none() {
            self.connection = Some(connect(&self.task).await?);
        }
        let connection = self.connection.as_ref().expect("connected above");
        for committable in committables {
            let request = CommitTransaction { txn_id: committable.txn_id.clone(), epoch: committable.epoch };
            // Commit is idempotent, so a lost reply is retried safely: the retry answers
            // AlreadyCommitted.
            if connection.call(request, "commit", &committable.txn_id).await? == TxnOutcome::AlreadyCommitted {
                crate::cover!(CommitRetried);
            }
        }
        Ok(())
    }
}

impl Committer<TxnCommittable> for TxnStoreCommitter {
    fn commit(&mut self, committables: Vec<TxnCommittable>) -> BoxFuture<'_, Result<(), OperatorError>> {
        Box::pin(self.commit_all(committables))
    }
}
