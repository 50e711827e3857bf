//! The simulated cost model: how long CPU work, disk and network transfers take.
//!
//! A scenario's `costs:` sets it; the defaults describe a modest machine (1 µs per record per
//! chained operator, a 200 MiB/s disk, a 125 MiB/s — one gigabit — network interface, as many
//! cores as slots). The engine charges it through `sluice_engine::resources`.
//!
//! Each node with resources (a TaskManager, the shuffle service) gets its own [`NodeCosts`]: the
//! scenario's costs times the node's slowdown, which a `slow` fault raises for a while.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sluice_engine::resources::CostModel;

/// A scenario's `costs:`; see the module doc.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostSpec {
    /// CPU time per record per chained operator.
    #[serde(default = "default_cpu_per_record", with = "sluice_engine::duration::text")]
    pub cpu_per_record: Duration,
    /// Disk bandwidth, for reads and writes alike; 0 means free.
    #[serde(default = "default_disk")]
    pub disk_mib_per_second: u64,
    /// Network interface bandwidth; 0 means free.
    #[serde(default = "default_network")]
    pub network_mib_per_second: u64,
    /// Cores per TaskManager; as many as slots if unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores_per_task_manager: Option<u32>,
}

fn default_cpu_per_record() -> Duration {
    Duration::from_micros(1)
}
fn default_disk() -> u64 {
    200
}
fn default_network() -> u64 {
    125
}

impl Default for CostSpec {
    fn default() -> Self {
        CostSpec {
            cpu_per_record: default_cpu_per_record(),
            disk_mib_per_second: default_disk(),
            network_mib_per_second: default_network(),
            cores_per_task_manager: None,
        }
    }
}

impl CostSpec {
    /// True if every cost is the default (so replay files need not spell it out).
    pub fn is_default(&self) -> bool {
        *self == CostSpec::default()
    }
}

/// One node's costs: the scenario's, multiplied by the node's current slowdown (1 = normal).
#[derive(Clone)]
pub struct NodeCosts {
    spec: CostSpec,
    slowdown: Arc<AtomicU32>,
}

impl NodeCosts {
    /// The costs of `spec`, at normal speed.
    pub fn new(spec: CostSpec) -> NodeCosts {
        NodeCosts { spec, slowdown: Arc::new(AtomicU32::new(1)) }
    }

    /// Makes every cost `factor` times what it is normally (1 restores it).
    pub fn set_slowdown(&self, factor: u32) {
        self.slowdown.store(factor.max(1), Ordering::SeqCst);
    }

    fn slowed(&self, cost: Duration) -> Duration {
        cost.saturating_mul(self.slowdown.load(Ordering::SeqCst))
    }
}

impl CostModel for NodeCosts {
    fn cpu(&self, records: u64, operators: u64) -> Duration {
        self.slowed(self.spec.cpu(records, operators))
    }

    fn disk_write(&self, bytes: u64) -> Duration {
        self.slowed(self.spec.disk_write(bytes))
    }

    fn disk_read(&self, bytes: u64) -> Duration {
        self.slowed(self.spec.disk_read(bytes))
    }

    fn network(&self, bytes: u64) -> Duration {
        self.slowed(self.spec.network(bytes))
    }
}

fn transfer(bytes: u64, mib_per_second: u64) -> Duration {
    if mib_per_second == 0 {
        return Duration::ZERO;
    }
    let nanos = u128::from(bytes) * 1_000_000_000 / (u128::from(mib_per_second) << 20);
    Duration::from_nanos(nanos as u64)
}

impl CostModel for CostSpec {
    fn cpu(&self, records: u64, operators: u64) -> Duration {
        self.cpu_per_record.saturating_mul(u32::try_from(records.saturating_mul(operators)).unwrap_or(u32::MAX))
    }

    fn disk_write(&self, bytes: u64) -> Duration {
        transfer(bytes, self.disk_mib_per_second)
    }

    fn disk_read(&self, bytes: u64) -> Duration {
        transfer(bytes, self.disk_mib_per_second)
    }

    fn network(&self, bytes: u64) -> Duration {
        transfer(bytes, self.network_mib_per_second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_scale_with_work_and_zero_bandwidth_is_free() {
        let costs = CostSpec::default();
        assert_eq!(costs.cpu(1000, 3), Duration::from_millis(3));
        assert_eq!(costs.disk_write(200 << 20), Duration::from_secs(1));
        assert_eq!(costs.network(125 << 20), Duration::from_secs(1));
        let free = CostSpec { disk_mib_per_second: 0, network_mib_per_second: 0, ..CostSpec::default() };
        assert_eq!(free.disk_read(1 << 30), Duration::ZERO);
        assert_eq!(free.network(1 << 30), Duration::ZERO);
    }
}
