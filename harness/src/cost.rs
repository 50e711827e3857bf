//! The simulated cost model: how long CPU work, disk and network transfers, and deploying a
//! task take.
//!
//! A scenario's `costs:` sets it, inline or from a cost profile that `sluice-real calibrate`
//! measured ([`crate::scenario::profile`]); the defaults describe a modest machine that was never
//! measured (1 µs per record per chained operator, a 200 MiB/s disk with no page cache, a
//! 125 MiB/s — one gigabit — network interface with madsim's 1–10 ms latency, free deployment,
//! as many cores as slots). The engine charges it through `sluice_engine::resources`.
//!
//! Each node with resources (a TaskManager, the shuffle service) gets its own [`NodeCosts`]: the
//! scenario's costs times the node's slowdown, which a `slow` fault raises for a while. On a
//! shared machine (`shared_machine_cores`) they all get the same one, as the processes of a
//! one-machine cluster share its cores, disk, page cache and loopback.
//!
//! The page cache is a fluid model: of the blocking data a disk has had written, the fraction
//! that fits `page_cache_mib` is read back at memory speed, the rest at disk speed (released
//! partitions are not subtracted: a long run's reads grow colder).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sluice_engine::resources::{CostModel, OperatorKind, Work};

/// CPU per record for each operator kind; a kind left out costs `cpu_per_record`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuCosts {
    /// A source handing on what it read (decoding included).
    #[serde(default, with = "sluice_engine::duration::optional_text", skip_serializing_if = "Option::is_none")]
    pub scan: Option<Duration>,
    /// A map, filter or flat map.
    #[serde(default, with = "sluice_engine::duration::optional_text", skip_serializing_if = "Option::is_none")]
    pub map: Option<Duration>,
    /// A join's build side.
    #[serde(default, with = "sluice_engine::duration::optional_text", skip_serializing_if = "Option::is_none")]
    pub hash_build: Option<Duration>,
    /// A join's probe side.
    #[serde(default, with = "sluice_engine::duration::optional_text", skip_serializing_if = "Option::is_none")]
    pub hash_probe: Option<Duration>,
    /// Reduce, sum, combine, window, process function.
    #[serde(default, with = "sluice_engine::duration::optional_text", skip_serializing_if = "Option::is_none")]
    pub aggregate: Option<Duration>,
    /// Sorting a batch task's keyed input.
    #[serde(default, with = "sluice_engine::duration::optional_text", skip_serializing_if = "Option::is_none")]
    pub sort: Option<Duration>,
    /// A sink writer.
    #[serde(default, with = "sluice_engine::duration::optional_text", skip_serializing_if = "Option::is_none")]
    pub sink: Option<Duration>,
}

impl CpuCosts {
    /// The cost given for `kind`, if any.
    pub fn of(&self, kind: OperatorKind) -> Option<Duration> {
        match kind {
            OperatorKind::Scan => self.scan,
            OperatorKind::Map => self.map,
            OperatorKind::HashBuild => self.hash_build,
            OperatorKind::HashProbe => self.hash_probe,
            OperatorKind::Aggregate => self.aggregate,
            OperatorKind::Sort => self.sort,
            OperatorKind::Sink => self.sink,
        }
    }

    /// Sets the cost of `kind`.
    pub fn set(&mut self, kind: OperatorKind, cost: Duration) {
        let slot = match kind {
            OperatorKind::Scan => &mut self.scan,
            OperatorKind::Map => &mut self.map,
            OperatorKind::HashBuild => &mut self.hash_build,
            OperatorKind::HashProbe => &mut self.hash_probe,
            OperatorKind::Aggregate => &mut self.aggregate,
            OperatorKind::Sort => &mut self.sort,
            OperatorKind::Sink => &mut self.sink,
        };
        *slot = Some(cost);
    }

    fn is_empty(&self) -> bool {
        OperatorKind::ALL.iter().all(|kind| self.of(*kind).is_none())
    }
}

/// A scenario's `costs:`; see the module doc and docs/scenarios.md.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostSpec {
    /// A cost profile file to take every other value from (relative to the scenario). It is
    /// read when the scenario loads, and a replay file holds the values, not the path.
    #[serde(default, skip_serializing)]
    pub profile: Option<String>,
    /// CPU time per record per chained operator, for kinds `cpu` leaves out.
    #[serde(default = "default_cpu_per_record", with = "sluice_engine::duration::text")]
    pub cpu_per_record: Duration,
    /// CPU time per record by operator kind.
    #[serde(default, skip_serializing_if = "CpuCosts::is_empty")]
    pub cpu: CpuCosts,
    /// CPU time per KiB a task serializes into buffers or deserializes out of them.
    #[serde(default, with = "sluice_engine::duration::text", skip_serializing_if = "Duration::is_zero")]
    pub serialization_per_kib: Duration,
    /// Disk bandwidth for writes (and reads, unless `disk_read_mib_per_second`); 0 means free.
    #[serde(default = "default_disk")]
    pub disk_mib_per_second: u64,
    /// Disk time to make a blocking partition's file durable (an fsync), beyond its bytes.
    #[serde(default, with = "sluice_engine::duration::text", skip_serializing_if = "Duration::is_zero")]
    pub disk_sync: Duration,
    /// Disk bandwidth for reads of what the page cache does not hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_read_mib_per_second: Option<u64>,
    /// Blocking data a disk keeps in memory; 0 means none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub page_cache_mib: u64,
    /// Speed of reading what the page cache holds; 0 means free.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub memory_mib_per_second: u64,
    /// Network interface bandwidth; 0 means free.
    #[serde(default = "default_network")]
    pub network_mib_per_second: u64,
    /// A message's one-way latency (drawn within ±20%), all of it (madsim's minimum of 1 ms
    /// per message is lifted); madsim's 1–10 ms, plus that 1 ms, if unset.
    #[serde(default, with = "sluice_engine::duration::optional_text", skip_serializing_if = "Option::is_none")]
    pub network_latency: Option<Duration>,
    /// Time a TaskManager takes to deploy a task before it runs.
    #[serde(default, with = "sluice_engine::duration::text", skip_serializing_if = "Duration::is_zero")]
    pub deploy_task: Duration,
    /// Cores per TaskManager; as many as slots if unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores_per_task_manager: Option<u32>,
    /// If set, every TaskManager and the shuffle service share one machine with this many
    /// cores, one disk and one network interface (`cores_per_task_manager` then means nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_machine_cores: Option<u32>,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
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
            profile: None,
            cpu_per_record: default_cpu_per_record(),
            cpu: CpuCosts::default(),
            serialization_per_kib: Duration::ZERO,
            disk_mib_per_second: default_disk(),
            disk_read_mib_per_second: None,
            disk_sync: Duration::ZERO,
            page_cache_mib: 0,
            memory_mib_per_second: 0,
            network_mib_per_second: default_network(),
            network_latency: None,
            deploy_task: Duration::ZERO,
            cores_per_task_manager: None,
            shared_machine_cores: None,
        }
    }
}

impl CostSpec {
    /// True if every cost is the default (so replay files need not spell it out).
    pub fn is_default(&self) -> bool {
        *self == CostSpec::default()
    }

    /// CPU per record of `kind`.
    pub fn cpu_of(&self, kind: OperatorKind) -> Duration {
        self.cpu.of(kind).unwrap_or(self.cpu_per_record)
    }

    /// The same costs with every CPU cost (per record and per KiB) times `factor`.
    pub fn with_cpu_scaled(&self, factor: f64) -> CostSpec {
        let scale = |cost: Duration| Duration::from_secs_f64(cost.as_secs_f64() * factor.max(0.0));
        let mut scaled = self.clone();
        scaled.cpu_per_record = scale(self.cpu_per_record);
        for kind in OperatorKind::ALL {
            if let Some(cost) = self.cpu.of(kind) {
                scaled.cpu.set(kind, scale(cost));
            }
        }
        scaled.serialization_per_kib = scale(self.serialization_per_kib);
        scaled
    }

    /// madsim's `send_latency` range for `network_latency`, if set.
    pub fn latency_range(&self) -> Option<std::ops::Range<Duration>> {
        self.network_latency.map(|latency| {
            let low = latency * 4 / 5;
            (low)..(latency * 6 / 5).max(low + Duration::from_nanos(1))
        })
    }
}

/// One node's costs: the scenario's, multiplied by the node's current slowdown (1 = normal),
/// with the page cache of its disk.
#[derive(Clone)]
pub struct NodeCosts {
    spec: CostSpec,
    slowdown: Arc<AtomicU32>,
    /// Blocking bytes written to its disk so far.
    written: Arc<AtomicU64>,
}

impl NodeCosts {
    /// The costs of `spec`, at normal speed, with a cold page cache.
    pub fn new(spec: CostSpec) -> NodeCosts {
        NodeCosts { spec, slowdown: Arc::new(AtomicU32::new(1)), written: Arc::new(AtomicU64::new(0)) }
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
    fn cpu(&self, work: &Work) -> Duration {
        self.slowed(self.spec.cpu(work))
    }

    fn disk_write(&self, bytes: u64) -> Duration {
        self.written.fetch_add(bytes, Ordering::SeqCst);
        self.slowed(self.spec.disk_write(bytes))
    }

    fn disk_read(&self, bytes: u64) -> Duration {
        let cached = cached_share(self.spec.page_cache_mib << 20, self.written.load(Ordering::SeqCst));
        let from_memory = (bytes as f64 * cached) as u64;
        let from_disk = bytes - from_memory;
        self.slowed(
            transfer(from_memory, self.spec.memory_mib_per_second).saturating_add(self.spec.disk_read(from_disk)),
        )
    }

    fn network(&self, bytes: u64) -> Duration {
        self.slowed(self.spec.network(bytes))
    }

    fn disk_sync(&self) -> Duration {
        self.slowed(self.spec.disk_sync)
    }

    fn deploy(&self) -> Duration {
        self.slowed(self.spec.deploy_task)
    }
}

/// The share of what was written that a page cache of `cache` bytes still holds.
fn cached_share(cache: u64, written: u64) -> f64 {
    if written <= cache { 1.0 } else { cache as f64 / written as f64 }
}

fn transfer(bytes: u64, mib_per_second: u64) -> Duration {
    if mib_per_second == 0 {
        return Duration::ZERO;
    }
    let nanos = u128::from(bytes) * 1_000_000_000 / (u128::from(mib_per_second) << 20);
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

impl CostModel for CostSpec {
    fn cpu(&self, work: &Work) -> Duration {
        let mut nanos: u128 = OperatorKind::ALL
            .iter()
            .map(|kind| u128::from(work.records[kind.index()]) * self.cpu_of(*kind).as_nanos())
            .sum();
        nanos += u128::from(work.serialized_bytes) * self.serialization_per_kib.as_nanos() / 1024;
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    fn disk_write(&self, bytes: u64) -> Duration {
        transfer(bytes, self.disk_mib_per_second)
    }

    fn disk_read(&self, bytes: u64) -> Duration {
        transfer(bytes, self.disk_read_mib_per_second.unwrap_or(self.disk_mib_per_second))
    }

    fn network(&self, bytes: u64) -> Duration {
        transfer(bytes, self.network_mib_per_second)
    }

    fn deploy(&self) -> Duration {
        self.deploy_task
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_scale_with_work_and_zero_bandwidth_is_free() {
        let costs = CostSpec::default();
        let mut work = Work::of(OperatorKind::Scan, 1000);
        work.add(OperatorKind::Map, 1000);
        work.add(OperatorKind::Sink, 1000);
        assert_eq!(costs.cpu(&work), Duration::from_millis(3));
        assert_eq!(costs.disk_write(200 << 20), Duration::from_secs(1));
        assert_eq!(costs.network(125 << 20), Duration::from_secs(1));
        let free = CostSpec { disk_mib_per_second: 0, network_mib_per_second: 0, ..CostSpec::default() };
        assert_eq!(free.disk_read(1 << 30), Duration::ZERO);
        assert_eq!(free.network(1 << 30), Duration::ZERO);
    }

    #[test]
    fn each_operator_kind_and_serialized_byte_costs_its_own() {
        let mut costs = CostSpec { serialization_per_kib: Duration::from_micros(2), ..CostSpec::default() };
        costs.cpu.set(OperatorKind::HashProbe, Duration::from_nanos(300));
        costs.cpu.set(OperatorKind::Map, Duration::from_nanos(50));
        let mut work = Work::of(OperatorKind::HashProbe, 1000);
        work.add(OperatorKind::Map, 2000);
        work.add(OperatorKind::Aggregate, 10);
        work.serialized_bytes = 512 << 10;
        // 300 µs of probes, 100 µs of maps, 10 µs of the default, 1024 µs of bytes.
        assert_eq!(costs.cpu(&work), Duration::from_micros(300 + 100 + 10 + 1024));
    }

    #[test]
    fn blocking_data_that_fits_the_page_cache_is_read_at_memory_speed() {
        let spec = CostSpec {
            disk_mib_per_second: 100,
            page_cache_mib: 10,
            memory_mib_per_second: 1000,
            ..CostSpec::default()
        };
        let node = NodeCosts::new(spec);
        assert_eq!(node.disk_write(5 << 20), Duration::from_millis(50), "writes go to the disk (synced)");
        assert_eq!(node.disk_read(5 << 20), Duration::from_millis(5), "all of it is cached");
        node.disk_write(15 << 20);
        // 20 MiB written, 10 cached: half of a read comes from memory, half from the disk.
        assert_eq!(node.disk_read(2 << 20), Duration::from_millis(1) + Duration::from_millis(10));
        let cold = NodeCosts::new(CostSpec { page_cache_mib: 0, ..node.spec.clone() });
        cold.disk_write(1 << 20);
        assert_eq!(cold.disk_read(1 << 20), Duration::from_millis(10), "no cache, all from the disk");
    }

    #[test]
    fn scaling_cpu_scales_every_cpu_cost_and_nothing_else() {
        let mut costs = CostSpec { serialization_per_kib: Duration::from_micros(2), ..CostSpec::default() };
        costs.cpu.set(OperatorKind::Scan, Duration::from_nanos(400));
        let scaled = costs.with_cpu_scaled(1.5);
        assert_eq!(scaled.cpu.scan, Some(Duration::from_nanos(600)));
        assert_eq!(scaled.cpu.map, None, "a kind left out stays left out");
        assert_eq!(scaled.cpu_per_record, Duration::from_nanos(1500));
        assert_eq!(scaled.serialization_per_kib, Duration::from_micros(3));
        assert_eq!(scaled.disk_mib_per_second, costs.disk_mib_per_second);
    }

    #[test]
    fn latency_is_drawn_around_the_one_given() {
        let spec = CostSpec { network_latency: Some(Duration::from_micros(100)), ..CostSpec::default() };
        assert_eq!(spec.latency_range(), Some(Duration::from_micros(80)..Duration::from_micros(120)));
        assert_eq!(CostSpec::default().latency_range(), None);
    }
}
