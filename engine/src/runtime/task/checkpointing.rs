//! A task's side of checkpoints and of Sink V2 commits: snapshots at barriers, the final snapshot
//! at end of input, restore, and when its committers commit.
//!
//! Committables are kept per (sink, checkpoint they were prepared for) until a checkpoint at
//! least that new completes; every snapshot carries those not yet committed, so a restore
//! commits them again (committers are idempotent). Committables prepared at end of input wait
//! for the final checkpoint.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::chain::OperatorChain;
use crate::checkpoint::{CheckpointId, SnapshotKind, StateHandle, TaskSnapshot, snapshot_path};
use crate::graph::operator::{ErasedCommitter, ErasedSourceReader};
use crate::record::Record;
use crate::rpc::RpcClient;
use crate::runtime::messages::{AcknowledgeCheckpoint, ExecutionAttemptId, TaskFailure};
use crate::storage::{Storage, StorageError, framed, read_all};
use crate::trace::{TraceEvent, TracerHandle};

/// What the JobMaster tells a running task, through its TaskManager.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskControl {
    /// A source task injects barrier `n` (other tasks ignore it).
    Trigger(CheckpointId),
    /// Checkpoint `id` completed: commit what was prepared up to it (everything if final).
    Complete {
        /// The checkpoint.
        id: CheckpointId,
        /// The final checkpoint: the task commits everything and finishes.
        is_final: bool,
    },
}

/// Where a task saves snapshots and whom it tells.
pub struct CheckpointEnvironment {
    /// The durable store.
    pub storage: Arc<dyn Storage>,
    /// The JobMaster.
    pub job_master: SocketAddr,
}

/// Committables prepared at end of input: committed with the final checkpoint.
const END_OF_INPUT: CheckpointId = CheckpointId::MAX;

/// How long between tries of a snapshot write or an acknowledgement the task insists on.
const RETRY: Duration = Duration::from_millis(200);
/// Tries of a barrier snapshot's write before the task gives up on that checkpoint (it then
/// times out on the JobMaster).
const BARRIER_WRITE_ATTEMPTS: u32 = 5;
const ACK_TIMEOUT: Duration = Duration::from_millis(500);

/// One sink of the task: its chain index, operator id and committer.
pub(super) struct SinkCommitter {
    pub(super) node: usize,
    pub(super) operator_id: u32,
    pub(super) committer: Box<dyn ErasedCommitter>,
}

/// The part of a task's snapshot taken before anything goes downstream: operator (and keyed)
/// state and the source's position.
fn operator_snapshot(chain: &OperatorChain, source: Option<&dyn ErasedSourceReader>) -> TaskSnapshot {
    TaskSnapshot {
        operators: chain.snapshot_operators(),
        source: source.map(|reader| reader.snapshot_state()),
        ..TaskSnapshot::default()
    }
}

/// Saves a snapshot and acknowledges it; owns what it needs, so that it can run beside the task.
struct SnapshotWriter {
    job_id: String,
    execution: ExecutionAttemptId,
    client: RpcClient,
    storage: Arc<dyn Storage>,
    job_master: SocketAddr,
    /// The last barrier the task took when the snapshot was taken.
    last_barrier: Option<CheckpointId>,
}

impl SnapshotWriter {
    /// Writes a snapshot (replacing any earlier file of that name) and syncs it.
    async fn save(&self, kind: SnapshotKind, snapshot: &TaskSnapshot, attempts: u32) -> Option<StateHandle> {
        let vertex = self.execution.vertex;
        let path = snapshot_path(&self.job_id, self.execution.attempt, kind, vertex.vertex.0, vertex.subtask);
        let bytes = framed::frame(&snapshot.to_bytes());
        let storage = self.storage.as_ref();
        for _ in 0..attempts {
            let written = async {
                storage.delete(&path).await?;
                crate::storage::append_durably(storage, &path, &bytes).await
            };
            if written.await.is_ok() {
                return Some(StateHandle { path, bytes: bytes.len() as u64 });
            }
            crate::rt::time::sleep(RETRY).await;
        }
        None
    }

    async fn acknowledge(&self, kind: SnapshotKind, handle: StateHandle, attempts: u32) {
        let ack = AcknowledgeCheckpoint {
            job_id: self.job_id.clone(),
            execution: self.execution,
            kind,
            handle,
            last_barrier: self.last_barrier,
        };
        for _ in 0..attempts {
            if self.client.call(self.job_master, ack.clone(), ACK_TIMEOUT).await.is_ok() {
                return;
            }
            crate::rt::time::sleep(RETRY).await;
        }
    }
}

/// See the module doc.
pub(super) struct Checkpointing {
    job_id: String,
    execution: ExecutionAttemptId,
    client: RpcClient,
    environment: CheckpointEnvironment,
    sinks: Vec<SinkCommitter>,
    /// (sink operator id, checkpoint) → committables not yet committed.
    pending: BTreeMap<(u32, CheckpointId), Vec<Vec<u8>>>,
    /// The last barrier this task took (and forwarded).
    last_barrier: Option<CheckpointId>,
    /// The newest checkpoint the task's state holds: the last barrier it took, or the checkpoint
    /// it restored (0: neither).
    state_includes: CheckpointId,
    /// The asynchronous part of the last barrier snapshot: saving it and acknowledging.
    in_flight: Option<crate::rt::task::JoinHandle<()>>,
    tracer: TracerHandle,
}

impl Checkpointing {
    pub(super) fn new(
        job_id: String,
        execution: ExecutionAttemptId,
        client: RpcClient,
        environment: CheckpointEnvironment,
        sinks: Vec<SinkCommitter>,
        tracer: TracerHandle,
    ) -> Checkpointing {
        Checkpointing {
            job_id,
            execution,
            client,
            environment,
            sinks,
            pending: BTreeMap::new(),
            last_barrier: None,
            state_includes: 0,
            in_flight: None,
            tracer,
        }
    }

    /// The newest checkpoint the task's state holds (the last barrier it took, or the checkpoint
    /// it restored; 0: neither): what a restore of a checkpoint keeps of its work is what came
    /// before the snapshot of that checkpoint.
    pub(super) fn state_includes(&self) -> CheckpointId {
        self.state_includes
    }

    /// Restores operators, the source and sink writers from the task's snapshot in checkpoint
    /// `id`, then commits what the snapshot holds (it belongs to a completed checkpoint).
    pub(super) async fn restore(
        &mut self,
        id: CheckpointId,
        handle: &StateHandle,
        chain: &mut OperatorChain,
        source: Option<&mut Box<dyn ErasedSourceReader>>,
    ) -> Result<(), TaskFailure> {
        self.check_restores_first(id);
        let snapshot = self.read(id, handle).await?;
        chain.restore_operators(&snapshot.operators)?;
        self.state_includes = id;
        match (source, &snapshot.source) {
            (Some(reader), Some(state)) => {
                reader.restore_state(state).map_err(|error| TaskFailure::Operator(error.message))?
            }
            (None, None) => {}
            _ => {
                return Err(TaskFailure::Deployment(format!(
                    "checkpoint {id}'s snapshot of {} does not match its source",
                    self.execution
                )));
            }
        }
        for (operator_id, state) in &snapshot.sink_writers {
            chain.restore_sink(*operator_id, state)?;
        }
        if !snapshot.pending_committables.is_empty() {
            crate::cover!(RestoreWithPendingCommittables);
        }
        for (operator_id, checkpoint, committables) in snapshot.pending_committables {
            // What a snapshot of checkpoint `id` holds was prepared at `id` or before (or at the
            // task's end, which a snapshot standing in for `id` saw before it): committing it
            // now never runs ahead of a completed checkpoint.
            assert!(
                checkpoint <= id || checkpoint == END_OF_INPUT,
                "internal: {}'s snapshot of checkpoint {id} holds committables of checkpoint {checkpoint}",
                self.execution
            );
            let earlier = self.pending.insert((operator_id, checkpoint), committables);
            assert!(
                earlier.is_none(),
                "checkpoint invariant: {}'s snapshot {id} holds sink {operator_id}'s cp{checkpoint} committables once",
                self.execution
            );
        }
        self.commit_up_to(END_OF_INPUT).await
    }

    /// A restore is the first thing a task's checkpointing does: nothing taken, prepared or
    /// written before it.
    fn check_restores_first(&self, id: CheckpointId) {
        let execution = self.execution;
        assert_eq!(self.last_barrier, None, "checkpoint invariant: {execution} restores {id} before any barrier");
        assert_eq!(self.state_includes, 0, "checkpoint invariant: {execution} restores checkpoint {id} once");
        assert!(self.pending.is_empty(), "checkpoint invariant: {execution} restores {id} with nothing prepared");
        assert!(self.in_flight.is_none(), "checkpoint invariant: {execution} restores {id} with no snapshot in flight");
    }

    async fn read(&self, id: CheckpointId, handle: &StateHandle) -> Result<TaskSnapshot, TaskFailure> {
        let lost = |detail: String| {
            TaskFailure::Deployment(format!("cannot restore checkpoint {id} from `{}`: {detail}", handle.path))
        };
        let mut last = String::new();
        for _ in 0..BARRIER_WRITE_ATTEMPTS {
            match read_all(self.environment.storage.as_ref(), &handle.path).await {
                Ok(bytes) => {
                    let (records, damaged) = framed::unframe(&bytes);
                    return match (records.as_slice(), damaged) {
                        ([record], false) => TaskSnapshot::from_bytes(record).map_err(|error| lost(error.to_string())),
                        _ => Err(lost("the snapshot is damaged".to_string())),
                    };
                }
                Err(error @ StorageError::NotFound(_)) => return Err(lost(error.to_string())),
                Err(error) => last = error.to_string(),
            }
            crate::rt::time::sleep(RETRY).await;
        }
        Err(lost(last))
    }

    /// Takes the task's snapshot for barrier `id`: operator state and the source position
    /// first, then the barrier goes downstream, then the sinks pre-commit. Saving and
    /// acknowledging go on beside the task (the asynchronous phase), after the previous
    /// snapshot's. A snapshot that cannot be saved is not acknowledged: the checkpoint times
    /// out.
    pub(super) async fn checkpoint(
        &mut self,
        id: CheckpointId,
        chain: &mut OperatorChain,
        source: Option<&dyn ErasedSourceReader>,
    ) -> Result<(), TaskFailure> {
        self.check_barrier_is_new(id);
        let mut snapshot = operator_snapshot(chain, source);
        self.trace_source_offsets(id, source);
        chain.flush(false).await?;
        chain.broadcast_barrier(id).await?;
        self.last_barrier = Some(id);
        self.state_includes = id;
        snapshot.sink_writers = self.prepare_sinks(id, chain).await?;
        snapshot.pending_committables = self.pending_list();
        self.check_barrier_snapshot(id, &snapshot);
        // The asynchronous phase (Flink's): the task goes on processing while the snapshot is
        // written and acknowledged. One at a time, so acknowledgements keep barrier order.
        if let Some(previous) = self.in_flight.take() {
            let _ = previous.await;
        }
        let (kind, attempts) = (SnapshotKind::Barrier(id), BARRIER_WRITE_ATTEMPTS);
        let writer = self.snapshot_writer();
        self.in_flight = Some(crate::rt::task::spawn(async move {
            if let Some(handle) = writer.save(kind, &snapshot, attempts).await {
                writer.acknowledge(kind, handle, 3).await;
            }
        }));
        Ok(())
    }

    /// Traces how far the source had read when it took barrier `id` (or, with `END_OF_INPUT`,
    /// when it finished: a finished source takes no more barriers, and read all it had).
    fn trace_source_offsets(&self, id: CheckpointId, source: Option<&dyn ErasedSourceReader>) {
        let Some(offsets) = source.and_then(|reader| reader.read_offsets()) else { return };
        self.tracer.record(TraceEvent::SourceCheckpointed {
            attempt: self.execution.attempt,
            checkpoint: id,
            vertex: self.execution.vertex.vertex.0,
            subtask: self.execution.vertex.subtask,
            stream: offsets.stream,
            splits: offsets.splits,
        });
    }

    /// What barrier `id` relies on: barriers only grow (a task with inputs drops stale ones in
    /// its aligner, a source ignores a stale trigger), and every barrier of an attempt is newer
    /// than the checkpoint it restored.
    fn check_barrier_is_new(&self, id: CheckpointId) {
        let execution = self.execution;
        assert!(
            self.last_barrier.is_none_or(|last| last < id),
            "checkpoint invariant: {execution} takes barrier {id} after barrier {:?}: barriers only grow",
            self.last_barrier
        );
        if self.last_barrier.is_none() {
            assert!(
                id > self.state_includes,
                "checkpoint invariant: {execution}'s first barrier {id} is newer than the checkpoint it restored ({})",
                self.state_includes
            );
        }
    }

    /// What a snapshot for barrier `id` holds, before it is written; `restore` checks the same
    /// when it reads one back. No committables of the end of input yet, and, since barriers only
    /// grow, none prepared after `id`.
    fn check_barrier_snapshot(&self, id: CheckpointId, snapshot: &TaskSnapshot) {
        for (operator_id, checkpoint, _) in &snapshot.pending_committables {
            assert_ne!(
                *checkpoint, END_OF_INPUT,
                "checkpoint invariant: {}'s snapshot {id} holds sink {operator_id}'s end-of-input committables",
                self.execution
            );
            assert!(
                *checkpoint <= id,
                "checkpoint invariant: {}'s snapshot {id} holds sink {operator_id}'s cp{checkpoint} committables",
                self.execution
            );
        }
    }

    /// Takes the final snapshot once the task reached the end of its input and finished its
    /// outputs; saves it (insisting) and acknowledges it (insisting).
    pub(super) async fn end_of_input(
        &mut self,
        chain: &mut OperatorChain,
        source: Option<&dyn ErasedSourceReader>,
    ) -> Result<(), TaskFailure> {
        let mut snapshot = operator_snapshot(chain, source);
        self.trace_source_offsets(END_OF_INPUT, source);
        for (node, operator_id) in self.sink_nodes() {
            let committables = chain.prepare_commit(node).await?;
            if !committables.is_empty() {
                let earlier = self.pending.insert((operator_id, END_OF_INPUT), committables);
                assert!(
                    earlier.is_none(),
                    "checkpoint invariant: sink {operator_id} of {} prepares its end-of-input committables once",
                    self.execution
                );
            }
        }
        snapshot.pending_committables = self.pending_list();
        if let Some(previous) = self.in_flight.take() {
            let _ = previous.await; // the barrier snapshot is acknowledged first
        }
        let writer = self.snapshot_writer();
        let handle = writer.save(SnapshotKind::EndOfInput, &snapshot, u32::MAX).await.expect("saving retries forever");
        writer.acknowledge(SnapshotKind::EndOfInput, handle, u32::MAX).await;
        Ok(())
    }

    async fn prepare_sinks(
        &mut self,
        id: CheckpointId,
        chain: &mut OperatorChain,
    ) -> Result<Vec<(u32, Vec<u8>)>, TaskFailure> {
        let mut states = Vec::new();
        for (node, operator_id) in self.sink_nodes() {
            let committables = chain.prepare_commit(node).await?;
            if !committables.is_empty() {
                self.pending.insert((operator_id, id), committables);
            }
            let state = chain.snapshot_sink(node, id)?;
            if !state.is_empty() {
                states.push((operator_id, state));
            }
        }
        Ok(states)
    }

    fn sink_nodes(&self) -> Vec<(usize, u32)> {
        self.sinks.iter().map(|sink| (sink.node, sink.operator_id)).collect()
    }

    fn pending_list(&self) -> Vec<(u32, CheckpointId, Vec<Vec<u8>>)> {
        self.pending
            .iter()
            .map(|((operator_id, checkpoint), committables)| (*operator_id, *checkpoint, committables.clone()))
            .collect()
    }

    fn snapshot_writer(&self) -> SnapshotWriter {
        SnapshotWriter {
            job_id: self.job_id.clone(),
            execution: self.execution,
            client: self.client.clone(),
            storage: Arc::clone(&self.environment.storage),
            job_master: self.environment.job_master,
            last_barrier: self.last_barrier,
        }
    }

    /// Checkpoint `id` completed (or the final one): commits what was prepared up to it.
    pub(super) async fn on_complete(&mut self, id: CheckpointId, is_final: bool) -> Result<(), TaskFailure> {
        self.commit_up_to(if is_final { END_OF_INPUT } else { id }).await
    }

    async fn commit_up_to(&mut self, id: CheckpointId) -> Result<(), TaskFailure> {
        let due: Vec<(u32, CheckpointId)> =
            self.pending.range(..).filter(|((_, checkpoint), _)| *checkpoint <= id).map(|(key, _)| *key).collect();
        for sink in &mut self.sinks {
            let mine: Vec<(u32, CheckpointId)> =
                due.iter().filter(|(operator_id, _)| *operator_id == sink.operator_id).copied().collect();
            if mine.is_empty() {
                continue;
            }
            let committables: Vec<Vec<u8>> = mine.iter().flat_map(|key| self.pending[key].clone()).collect();
            sink.committer.commit(committables).await.map_err(|error| TaskFailure::Operator(error.message))?;
            for key in mine {
                self.pending.remove(&key);
            }
        }
        Ok(())
    }

    /// Without checkpoints: every sink pre-commits and commits at end of input.
    pub(super) async fn commit_at_end_of_input(&mut self, chain: &mut OperatorChain) -> Result<(), TaskFailure> {
        for sink in &mut self.sinks {
            let committables = chain.prepare_commit(sink.node).await?;
            sink.committer.commit(committables).await.map_err(|error| TaskFailure::Operator(error.message))?;
        }
        Ok(())
    }

    /// Handles every control message already queued; a source task takes the checkpoints it
    /// was asked for.
    pub(super) async fn poll_controls(
        &mut self,
        controls: &mut mpsc::UnboundedReceiver<TaskControl>,
        chain: &mut OperatorChain,
        source: Option<&dyn ErasedSourceReader>,
    ) -> Result<(), TaskFailure> {
        while let Ok(control) = controls.try_recv() {
            self.on_control(control, chain, source).await?;
        }
        Ok(())
    }

    /// Handles one control message.
    pub(super) async fn on_control(
        &mut self,
        control: TaskControl,
        chain: &mut OperatorChain,
        source: Option<&dyn ErasedSourceReader>,
    ) -> Result<(), TaskFailure> {
        match control {
            // A trigger the network delayed past a newer one (its checkpoint already aborted) is
            // stale: taking it would put a barrier older than the last one into the stream, and
            // a sink chained here would file the transaction it pre-commits under the older id.
            // Flink's subtask checkpoint coordinator declines such a barrier the same way.
            TaskControl::Trigger(id) if id <= self.state_includes => Ok(()),
            TaskControl::Trigger(id) if source.is_some() => self.checkpoint(id, chain, source).await,
            TaskControl::Trigger(_) => Ok(()), // barriers reach other tasks through their inputs
            TaskControl::Complete { id, is_final } => self.on_complete(id, is_final).await,
        }
    }

    /// After the final snapshot: waits for the final checkpoint, committing as checkpoints
    /// complete, and returns once everything is committed.
    pub(super) async fn wait_for_final(
        &mut self,
        controls: &mut mpsc::UnboundedReceiver<TaskControl>,
    ) -> Result<(), TaskFailure> {
        loop {
            match controls.recv().await {
                Some(TaskControl::Complete { id, is_final }) => {
                    self.on_complete(id, is_final).await?;
                    if is_final {
                        return Ok(());
                    }
                }
                Some(TaskControl::Trigger(_)) => {} // the final snapshot stands for this task
                None => std::future::pending::<()>().await, // the TaskManager is cancelling it
            }
        }
    }
}
