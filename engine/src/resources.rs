//! A TaskManager's resources (cores, a disk, a network interface) and the [`CostModel`] that
//! says how long work takes on them.
//!
//! madsim charges no CPU time and has no bandwidth: every message costs about the same whatever
//! its size, and computing takes no simulated time at all. Without a cost model every scheduling
//! strategy would cost the same. So work is charged here: a task charges CPU for the records
//! each of its chained operators is handed, by [`OperatorKind`], and for the bytes it
//! serializes and deserializes, holding one of its TaskManager's cores while it "computes";
//! writing and reading blocking partitions charges the TaskManager's disk; serving a buffer to a
//! consumer on another node charges its network interface (one on the same TaskManager reads it
//! in memory); deploying a task takes a while before it runs. Contention is real: tasks queue
//! for cores, and everything on a TaskManager queues for its disk and its network interface.
//! Several TaskManagers may share one [`Resources`], as the processes of a one-machine cluster
//! share its cores, disk and loopback.
//!
//! madsim sleeps at least a millisecond, so charges accumulate as a debt that is paid (slept)
//! once it reaches a millisecond; the remainder carries over. With [`ZeroCost`] (the default
//! outside simulation) nothing is ever slept.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Semaphore;

/// What a chained operator does with a record it is handed, for the cost model: each kind is
/// measured on its own (`sluice-real calibrate`), since a hash probe costs more than a filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatorKind {
    /// A source handing on what it read.
    Scan,
    /// A stateless record function: map, filter, flat map, a watermark generator.
    Map,
    /// Keeping a record in a hash table to be joined later (a join's build side).
    HashBuild,
    /// Looking a record up in a hash table (a join's probe side).
    HashProbe,
    /// Folding a record into keyed state: reduce, sum, combine, window, process function.
    Aggregate,
    /// Sorting a record into a task's keyed input (batch).
    Sort,
    /// A sink writer taking a record.
    Sink,
}

impl OperatorKind {
    /// Every kind, in declaration order.
    pub const ALL: [OperatorKind; 7] = [
        OperatorKind::Scan,
        OperatorKind::Map,
        OperatorKind::HashBuild,
        OperatorKind::HashProbe,
        OperatorKind::Aggregate,
        OperatorKind::Sort,
        OperatorKind::Sink,
    ];

    /// Its position in [`OperatorKind::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Its name as profiles and reports spell it.
    pub fn name(self) -> &'static str {
        match self {
            OperatorKind::Scan => "scan",
            OperatorKind::Map => "map",
            OperatorKind::HashBuild => "hash_build",
            OperatorKind::HashProbe => "hash_probe",
            OperatorKind::Aggregate => "aggregate",
            OperatorKind::Sort => "sort",
            OperatorKind::Sink => "sink",
        }
    }
}

/// CPU work a task did since it was last charged: records handed to operators of each kind, and
/// bytes it serialized into buffers or deserialized out of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Work {
    /// Records by [`OperatorKind::index`].
    pub records: [u64; 7],
    /// Bytes serialized or deserialized.
    pub serialized_bytes: u64,
}

impl Work {
    /// `records` records of one kind.
    pub fn of(kind: OperatorKind, records: u64) -> Work {
        let mut work = Work::default();
        work.records[kind.index()] = records;
        work
    }

    /// Adds `records` records of `kind`.
    pub fn add(&mut self, kind: OperatorKind, records: u64) {
        self.records[kind.index()] += records;
    }

    /// Adds another task's or step's work.
    pub fn merge(&mut self, other: &Work) {
        for (mine, theirs) in self.records.iter_mut().zip(other.records) {
            *mine += theirs;
        }
        self.serialized_bytes += other.serialized_bytes;
    }

    /// True if nothing was done.
    pub fn is_empty(&self) -> bool {
        self.serialized_bytes == 0 && self.records.iter().all(|records| *records == 0)
    }
}

/// How long work takes.
pub trait CostModel: Send + Sync {
    /// CPU time for `work`.
    fn cpu(&self, work: &Work) -> Duration;
    /// Disk time to write `bytes`.
    fn disk_write(&self, bytes: u64) -> Duration;
    /// Disk time to read `bytes` (less if the page cache holds them).
    fn disk_read(&self, bytes: u64) -> Duration;
    /// Network interface time to send `bytes`.
    fn network(&self, bytes: u64) -> Duration;
    /// Disk time to make a file durable (an fsync), beyond writing its bytes.
    fn disk_sync(&self) -> Duration {
        Duration::ZERO
    }
    /// Time a TaskManager takes to deploy a task before it runs (its slot is held meanwhile).
    fn deploy(&self) -> Duration {
        Duration::ZERO
    }
}

/// Everything is free: the real-mode default.
pub struct ZeroCost;

impl CostModel for ZeroCost {
    fn cpu(&self, _work: &Work) -> Duration {
        Duration::ZERO
    }
    fn disk_write(&self, _bytes: u64) -> Duration {
        Duration::ZERO
    }
    fn disk_read(&self, _bytes: u64) -> Duration {
        Duration::ZERO
    }
    fn network(&self, _bytes: u64) -> Duration {
        Duration::ZERO
    }
}

/// Debts below this are carried, not slept: madsim's shortest sleep.
const SHORTEST_SLEEP: Duration = Duration::from_millis(1);

/// Deployments a TaskManager pays for at once (more than any slot count a scenario allows).
const DEPLOYMENTS_AT_ONCE: usize = 1024;

/// A device that one user at a time holds while paying a debt.
struct Device {
    permits: Semaphore,
    debt: Mutex<Duration>,
}

impl Device {
    fn new(permits: usize) -> Device {
        Device { permits: Semaphore::new(permits.max(1)), debt: Mutex::new(Duration::ZERO) }
    }

    /// Adds to the device's shared debt, and pays it if it reached the shortest sleep.
    async fn charge(&self, cost: Duration) {
        if cost.is_zero() {
            return;
        }
        let due = {
            let mut debt = self.debt.lock().expect("device debt lock");
            *debt += cost;
            if *debt < SHORTEST_SLEEP {
                return;
            }
            std::mem::take(&mut *debt)
        };
        let _permit = self.permits.acquire().await.expect("device semaphores are never closed");
        crate::rt::time::sleep(due).await;
    }
}

/// One TaskManager's cores, disk and network interface; see the module doc.
pub struct Resources {
    model: Arc<dyn CostModel>,
    cores: Semaphore,
    disk: Device,
    network: Device,
    /// Deployments run side by side: a device with a permit for each slot there could be.
    deployments: Device,
}

impl Resources {
    /// Resources of a TaskManager with `cores` cores, charged by `model`.
    pub fn new(model: Arc<dyn CostModel>, cores: usize) -> Resources {
        Resources {
            model,
            cores: Semaphore::new(cores.max(1)),
            disk: Device::new(1),
            network: Device::new(1),
            deployments: Device::new(DEPLOYMENTS_AT_ONCE),
        }
    }

    /// Free resources (real mode, tests).
    pub fn free() -> Resources {
        Resources::new(Arc::new(ZeroCost), 1)
    }

    /// Charges writing `bytes` to the disk.
    pub async fn disk_write(&self, bytes: u64) {
        self.disk.charge(self.model.disk_write(bytes)).await;
    }

    /// Charges making a file durable.
    pub async fn disk_sync(&self) {
        self.disk.charge(self.model.disk_sync()).await;
    }

    /// Charges reading `bytes` from the disk.
    pub async fn disk_read(&self, bytes: u64) {
        self.disk.charge(self.model.disk_read(bytes)).await;
    }

    /// Charges sending `bytes` over the network interface.
    pub async fn network(&self, bytes: u64) {
        self.network.charge(self.model.network(bytes)).await;
    }

    /// Waits for a task's deployment (not holding a core: deploying is mostly waiting).
    pub async fn deploy(&self) {
        self.deployments.charge(self.model.deploy()).await;
    }

    /// A meter for one task's CPU use.
    pub fn cpu_meter(&self) -> CpuMeter<'_> {
        CpuMeter { resources: self, debt: Duration::ZERO, total: Work::default() }
    }
}

/// One task's CPU debt: paid holding one of the TaskManager's cores.
pub struct CpuMeter<'a> {
    resources: &'a Resources,
    debt: Duration,
    /// Everything charged so far.
    total: Work,
}

impl CpuMeter<'_> {
    /// Charges `work`.
    pub async fn charge(&mut self, work: Work) {
        if work.is_empty() {
            return;
        }
        self.total.merge(&work);
        self.debt += self.resources.model.cpu(&work);
        if self.debt >= SHORTEST_SLEEP {
            self.pay().await;
        }
    }

    /// Everything charged so far.
    pub fn total(&self) -> Work {
        self.total
    }

    /// Pays whatever is owed (at the end of a task).
    pub async fn pay(&mut self) {
        if self.debt.is_zero() {
            return;
        }
        let due = std::mem::take(&mut self.debt);
        let _core = self.resources.cores.acquire().await.expect("core semaphores are never closed");
        crate::rt::time::sleep(due).await;
    }
}
