//! A TaskManager's resources (cores, a disk, a network interface) and the [`CostModel`] that
//! says how long work takes on them.
//!
//! madsim charges no CPU time and has no bandwidth: every message costs about the same whatever
//! its size, and computing takes no simulated time at all. Without a cost model every scheduling
//! strategy would cost the same. So work is charged here: a task charges CPU per record and
//! chained operator, holding one of its TaskManager's cores while it "computes"; writing and
//! reading blocking partitions charges the TaskManager's disk; serving a buffer to a consumer on another node
//! charges its network interface (one on the same TaskManager reads it in memory). Contention is real: tasks queue for cores, and everything on a
//! TaskManager queues for its disk and its network interface.
//!
//! madsim sleeps at least a millisecond, so charges accumulate as a debt that is paid (slept)
//! once it reaches a millisecond; the remainder carries over. With [`ZeroCost`] (the default
//! outside simulation) nothing is ever slept.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Semaphore;

/// How long work takes.
pub trait CostModel: Send + Sync {
    /// CPU time for `records` records passing through `operators` chained operators.
    fn cpu(&self, records: u64, operators: u64) -> Duration;
    /// Disk time to write `bytes`.
    fn disk_write(&self, bytes: u64) -> Duration;
    /// Disk time to read `bytes`.
    fn disk_read(&self, bytes: u64) -> Duration;
    /// Network interface time to send `bytes`.
    fn network(&self, bytes: u64) -> Duration;
}

/// Everything is free: the real-mode default.
pub struct ZeroCost;

impl CostModel for ZeroCost {
    fn cpu(&self, _records: u64, _operators: u64) -> Duration {
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
}

impl Resources {
    /// Resources of a TaskManager with `cores` cores, charged by `model`.
    pub fn new(model: Arc<dyn CostModel>, cores: usize) -> Resources {
        Resources { model, cores: Semaphore::new(cores.max(1)), disk: Device::new(1), network: Device::new(1) }
    }

    /// Free resources (real mode, tests).
    pub fn free() -> Resources {
        Resources::new(Arc::new(ZeroCost), 1)
    }

    /// Charges writing `bytes` to the disk.
    pub async fn disk_write(&self, bytes: u64) {
        self.disk.charge(self.model.disk_write(bytes)).await;
    }

    /// Charges reading `bytes` from the disk.
    pub async fn disk_read(&self, bytes: u64) {
        self.disk.charge(self.model.disk_read(bytes)).await;
    }

    /// Charges sending `bytes` over the network interface.
    pub async fn network(&self, bytes: u64) {
        self.network.charge(self.model.network(bytes)).await;
    }

    /// A meter for one task's CPU use.
    pub fn cpu_meter(&self) -> CpuMeter<'_> {
        CpuMeter { resources: self, debt: Duration::ZERO }
    }
}

/// One task's CPU debt: paid holding one of the TaskManager's cores.
pub struct CpuMeter<'a> {
    resources: &'a Resources,
    debt: Duration,
}

impl CpuMeter<'_> {
    /// Charges processing `records` through `operators` chained operators.
    pub async fn charge(&mut self, records: u64, operators: u64) {
        self.debt += self.resources.model.cpu(records, operators);
        if self.debt >= SHORTEST_SLEEP {
            self.pay().await;
        }
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
