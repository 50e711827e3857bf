//! Builds a simulated cluster from a scenario: a JobMaster, TaskManagers with slots and disks,
//! the remote shuffle service, the durable store, the log and the transactional store, each a
//! madsim node with its own address.
//!
//! Node names are the fault schedule's vocabulary: `jm`, `tm-0` … `tm-N`, `shuffle-service`,
//! `durable-store`, `log`, `txn-store`. Disks ([`MemoryStorage`]) and the stores' state belong to
//! the cluster, not to the node, so they survive a node restart; killing a node crashes its disk
//! (unsynced bytes are lost). The shuffle service runs in every cluster; only jobs with
//! `shuffle: remote` use it.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use madsim::net::NetSim;
use madsim::runtime::Handle;
use madsim::task::NodeId;
use sluice_catalog::ExternalInput;
use sluice_engine::api::JobRegistry;
use sluice_engine::connectors::{DURABLE_STORE_SYSTEM, FILES_SYSTEM, LOG_SYSTEM, TXN_STORE_SYSTEM};
use sluice_engine::graph::ExternalSystems;
use sluice_engine::resources::{CostModel, Resources};
use sluice_engine::runtime::jobmaster::SHUFFLE_SERVICE;
use sluice_engine::runtime::jobmaster::{JobMasterConfig, run_job_master};
use sluice_engine::runtime::taskmanager::{TaskManagerConfig, run_task_manager};
use sluice_engine::shuffle::ShuffleEnvironmentConfig;
use sluice_engine::shuffle::remote::{ShuffleServiceConfig, run_shuffle_service};
use sluice_engine::storage::remote::RemoteStorage;
use sluice_engine::storage::{MemoryStorage, Storage, StorageFactory};

use sluice_harness::cost::NodeCosts;
pub use sluice_harness::report::ClusterTiming;
use sluice_harness::scenario::Scenario;
use sluice_harness::trace::TraceLog;
use sluice_services::durable_store::{DurableStoreState, run_durable_store};
use sluice_services::files::run_file_server;
use sluice_services::log::run_log_server;
use sluice_services::txn_store::{TxnStoreState, run_txn_store};

/// The JobMaster's address.
pub const JOB_MASTER_ADDRESS: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 6123);
/// The client's IP (the node that submits the job and waits for it).
pub const CLIENT_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 9, 1));
const LOG_ADDRESS: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 2, 1)), 9092);
const TXN_STORE_ADDRESS: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 3, 1)), 5432);
const SHUFFLE_SERVICE_ADDRESS: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 5, 1)), 9700);
const DURABLE_STORE_ADDRESS: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 6, 1)), 9800);
const FILES_ADDRESS: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 7, 1)), 9900);

/// The shuffle service's node name.
pub const SHUFFLE_SERVICE_NODE: &str = "shuffle-service";
/// The durable store's node name.
pub const DURABLE_STORE_NODE: &str = "durable-store";

fn task_manager_address(index: u32) -> SocketAddr {
    let index = u8::try_from(index + 1).expect("at most 254 TaskManagers");
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 1, index)), 6121)
}

/// A running simulated cluster.
pub struct Cluster {
    handle: Handle,
    nodes: BTreeMap<String, NodeId>,
    disks: BTreeMap<String, MemoryStorage>,
    store: Arc<Mutex<TxnStoreState>>,
    durable_store: DurableStoreState,
    /// The costs of each node with resources (TaskManagers, the shuffle service).
    costs: BTreeMap<String, NodeCosts>,
    trace: TraceLog,
    network: madsim::net::Config,
}

/// The nodes of a cluster being started, with their disks.
struct Nodes {
    handle: Handle,
    ids: BTreeMap<String, NodeId>,
    disks: BTreeMap<String, MemoryStorage>,
    /// The one machine every node with resources shares, if the costs say so.
    machine: Option<(NodeCosts, Arc<Resources>)>,
}

impl Nodes {
    /// Creates the node `name` at `ip`, running `init` at every (re)start.
    fn add<F: Future + 'static>(&mut self, name: &str, ip: IpAddr, init: impl Fn() -> F + Send + Sync + 'static) {
        let node = self.handle.create_node().name(name).ip(ip).init(init).build();
        let previous = self.ids.insert(name.to_string(), node.id());
        assert!(previous.is_none(), "cluster invariant: one node per name, and `{name}` was started twice");
    }

    /// The files node, only for jobs that read files, so that no other run gains a node (a
    /// node changes the simulation's draws, and so every trace); the external systems the
    /// engine is told of.
    fn start_files(&mut self, input: &ExternalInput) -> ExternalSystems {
        let external = ExternalSystems::default()
            .with(LOG_SYSTEM, LOG_ADDRESS)
            .with(TXN_STORE_SYSTEM, TXN_STORE_ADDRESS)
            .with(SHUFFLE_SERVICE, SHUFFLE_SERVICE_ADDRESS)
            .with(DURABLE_STORE_SYSTEM, DURABLE_STORE_ADDRESS);
        let Some(files) = sluice_services::files::load(input) else { return external };
        let disk: Arc<dyn Storage> = Arc::new(files.clone());
        self.add(FILES_SYSTEM, FILES_ADDRESS.ip(), move || run_file_server(FILES_ADDRESS, Arc::clone(&disk)));
        self.disks.insert(FILES_SYSTEM.to_string(), files);
        external.with(FILES_SYSTEM, FILES_ADDRESS)
    }

    /// The durable store: where the JobMaster keeps submitted jobs and their attempts, so that a
    /// restarted JobMaster resumes them.
    fn start_durable_store(&mut self, trace: &TraceLog) -> DurableStoreState {
        let durable_store = DurableStoreState::default();
        self.disks.insert(DURABLE_STORE_NODE.to_string(), durable_store.disk.clone());
        let (state, tracer) = (durable_store.clone(), trace.tracer_for(DURABLE_STORE_NODE));
        self.add(DURABLE_STORE_NODE, DURABLE_STORE_ADDRESS.ip(), move || {
            run_durable_store(DURABLE_STORE_ADDRESS, state.clone(), Arc::clone(&tracer))
        });
        durable_store
    }

    fn start_job_master(
        &mut self,
        external: ExternalSystems,
        jobs: JobRegistry,
        durable_storage: &StorageFactory,
        trace: &TraceLog,
    ) {
        let timing = ClusterTiming::default();
        let config = JobMasterConfig {
            address: JOB_MASTER_ADDRESS,
            heartbeat_timeout: timing.heartbeat_timeout,
            slot_request_timeout: timing.slot_request_timeout,
            worker_recovery_timeout: timing.worker_recovery_timeout,
            external,
            jobs,
            storage: Arc::clone(durable_storage),
            tracer: trace.tracer_for("jm"),
        };
        self.add("jm", JOB_MASTER_ADDRESS.ip(), move || run_job_master(config.clone()));
    }

    /// A node's costs and resources: its own, or the shared machine's.
    fn resources(&mut self, scenario: &Scenario) -> (NodeCosts, Arc<Resources>) {
        let own = |cores: u32| {
            let costs = NodeCosts::new(scenario.costs.clone());
            let resources = Arc::new(Resources::new(Arc::new(costs.clone()) as Arc<dyn CostModel>, cores as usize));
            (costs, resources)
        };
        match scenario.costs.shared_machine_cores {
            None => own(scenario.cores()),
            Some(cores) => self.machine.get_or_insert_with(|| own(cores)).clone(),
        }
    }

    /// TaskManager `index`, with a disk of its own; its name and costs.
    fn start_task_manager(
        &mut self,
        scenario: &Scenario,
        index: u32,
        jobs: &JobRegistry,
        durable_storage: &StorageFactory,
        trace: &TraceLog,
    ) -> (String, NodeCosts) {
        let timing = ClusterTiming::default();
        let name = format!("tm-{index}");
        let disk = MemoryStorage::new();
        let address = task_manager_address(index);
        let (node_costs, resources) = self.resources(scenario);
        let config = TaskManagerConfig {
            name: name.clone(),
            address,
            slots: scenario.cluster.slots_per_task_manager,
            jobs: jobs.clone(),
            job_master: JOB_MASTER_ADDRESS,
            heartbeat_interval: timing.heartbeat_interval,
            job_master_timeout: timing.heartbeat_timeout,
            partition_grace: timing.partition_grace,
            storage: Arc::new(disk.clone()) as Arc<dyn Storage>,
            checkpoint_storage: Arc::clone(durable_storage),
            shuffle: ShuffleEnvironmentConfig::default(),
            resources,
            tracer: trace.tracer_for(&name),
        };
        self.add(&name, address.ip(), move || run_task_manager(config.clone()));
        self.disks.insert(name.clone(), disk);
        (name, node_costs)
    }

    /// The remote shuffle service, with a disk of its own; its costs.
    fn start_shuffle_service(&mut self, scenario: &Scenario, trace: &TraceLog) -> NodeCosts {
        let (service_costs, resources) = self.resources(scenario);
        let service_disk = MemoryStorage::new();
        self.disks.insert(SHUFFLE_SERVICE_NODE.to_string(), service_disk.clone());
        let config = ShuffleServiceConfig {
            address: SHUFFLE_SERVICE_ADDRESS,
            storage: Arc::new(service_disk) as Arc<dyn Storage>,
            resources,
            tracer: trace.tracer_for(SHUFFLE_SERVICE_NODE),
        };
        self.add(SHUFFLE_SERVICE_NODE, SHUFFLE_SERVICE_ADDRESS.ip(), move || run_shuffle_service(config.clone()));
        service_costs
    }
}

impl Cluster {
    /// Starts every node; call inside the simulation. Nodes are created in a fixed order (each
    /// creation draws from the simulation's generator, so the order is part of every trace).
    pub fn start(scenario: &Scenario, input: Arc<ExternalInput>, trace: &TraceLog) -> Cluster {
        let mut nodes =
            Nodes { handle: Handle::current(), ids: BTreeMap::new(), disks: BTreeMap::new(), machine: None };
        let external = nodes.start_files(&input);
        let durable_store = nodes.start_durable_store(trace);
        let durable_storage: StorageFactory =
            Arc::new(|| Arc::new(RemoteStorage::new(DURABLE_STORE_ADDRESS)) as Arc<dyn Storage>);
        // The scenario's jobs (the built-in ones, or a user's), registered with the cluster.
        let jobs = scenario.jobs.registry();
        nodes.start_job_master(external, jobs.clone(), &durable_storage, trace);
        let mut costs = BTreeMap::new();
        for index in 0..scenario.cluster.task_managers {
            let (name, node_costs) = nodes.start_task_manager(scenario, index, &jobs, &durable_storage, trace);
            costs.insert(name, node_costs);
        }
        costs.insert(SHUFFLE_SERVICE_NODE.to_string(), nodes.start_shuffle_service(scenario, trace));
        nodes.add(LOG_SYSTEM, LOG_ADDRESS.ip(), move || run_log_server(LOG_ADDRESS, Arc::clone(&input)));
        let store = Arc::new(Mutex::new(TxnStoreState::default()));
        let (shared, store_tracer) = (Arc::clone(&store), trace.tracer_for(TXN_STORE_SYSTEM));
        nodes.add(TXN_STORE_SYSTEM, TXN_STORE_ADDRESS.ip(), move || {
            run_txn_store(TXN_STORE_ADDRESS, Arc::clone(&shared), Arc::clone(&store_tracer))
        });
        let Nodes { handle, ids: nodes, disks, .. } = nodes;
        let mut network = madsim::net::Config::default();
        if let Some(latency) = scenario.costs.latency_range() {
            // A latency given is the whole of it: without exact send delays madsim adds 1 ms
            // to every message (third_party/madsim/PATCHES.md).
            network.send_latency = latency;
            network.exact_send_delay = true;
            let baseline = network.clone();
            NetSim::current().update_config(|config| *config = baseline);
        }
        Cluster { handle, nodes, disks, store, durable_store, costs, trace: trace.clone(), network }
    }

    fn node(&self, name: &str) -> NodeId {
        *self.nodes.get(name).unwrap_or_else(|| panic!("internal: no node `{name}` (scenarios are validated)"))
    }

    /// Kills a node: its processes stop at once; its disk loses unsynced bytes.
    pub fn kill(&self, node: &str) {
        self.handle.kill(self.node(node));
        if let Some(disk) = self.disks.get(node) {
            disk.crash();
        }
    }

    /// Restarts a node's process. A node that is still running (two kill faults overlapped,
    /// and the first restarted it) is killed first: madsim's `restart` alone would leave the old
    /// process's sockets bound.
    pub fn restart(&self, node: &str) {
        self.kill(node);
        self.handle.restart(self.node(node));
    }

    /// Multiplies a node's CPU, disk and network costs by `factor` (1 restores them); false if
    /// the node does no costed work (the JobMaster, the stores, the log).
    pub fn set_slowdown(&self, node: &str, factor: u32) -> bool {
        self.costs.get(node).map(|costs| costs.set_slowdown(factor)).is_some()
    }

    /// Pauses a node: its tasks stop being scheduled until resumed.
    pub fn pause(&self, node: &str) {
        self.handle.pause(self.node(node));
    }

    /// Resumes a paused node.
    pub fn resume(&self, node: &str) {
        self.handle.resume(self.node(node));
    }

    /// Drops (`cut`) or lets through again every message from `left` to `right`, and back unless
    /// `one_way`.
    pub fn partition(&self, left: &[String], right: &[String], one_way: bool, cut: bool) {
        let network = NetSim::current();
        for from in left {
            for to in right {
                let (from, to) = (self.node(from), self.node(to));
                let mut links = vec![(from, to)];
                if !one_way {
                    links.push((to, from));
                }
                for (source, destination) in links {
                    if cut {
                        network.clog_link(source, destination);
                    } else {
                        network.unclog_link(source, destination);
                    }
                }
            }
        }
    }

    /// Drops this fraction of all messages until [`Cluster::restore_network`].
    pub fn set_packet_loss(&self, rate: f64) {
        NetSim::current().update_config(|config| config.packet_loss_rate = rate);
    }

    /// Delays every message by `min..max` until [`Cluster::restore_network`].
    pub fn set_latency(&self, min: Duration, max: Duration) {
        // madsim draws from a half-open range, which must not be empty.
        let max = max.max(min + Duration::from_micros(1));
        NetSim::current().update_config(|config| config.send_latency = min..max);
    }

    /// Restores the network's loss and latency to the cluster's baseline.
    pub fn restore_network(&self) {
        let baseline = self.network.clone();
        NetSim::current().update_config(|config| *config = baseline);
    }

    fn disk(&self, node: &str) -> &MemoryStorage {
        self.disks.get(node).unwrap_or_else(|| panic!("internal: node `{node}` has no disk (scenarios are validated)"))
    }

    /// The newest partition data file on a node's disk (a TaskManager's or the shuffle service's).
    fn newest_partition(&self, node: &str) -> Option<String> {
        let prefix = if node == SHUFFLE_SERVICE_NODE { "shuffle/" } else { "partitions/" };
        let disk = self.disk(node);
        disk.paths(prefix)
            .into_iter()
            .filter(|path| path.ends_with("/data"))
            .filter_map(|path| disk.write_order(&path).map(|order| (order, path)))
            .max()
            .map(|(_, path)| path)
    }

    /// Loses every file of the partition written last on a node; returns its directory.
    pub fn lose_partition(&self, node: &str) -> Option<String> {
        let data = self.newest_partition(node)?;
        let directory = data.trim_end_matches("/data").to_string();
        for path in self.disk(node).paths(&format!("{directory}/")) {
            self.disk(node).lose(&path);
        }
        Some(directory)
    }

    /// Flips a byte in the middle of the partition written last on a node; returns its file.
    pub fn corrupt_partition(&self, node: &str) -> Option<String> {
        let data = self.newest_partition(node)?;
        let disk = self.disk(node);
        disk.corrupt(&data, disk.used_bytes_of(&data) / 2).then_some(data)
    }

    /// Loses a node's whole disk, synced bytes included.
    pub fn lose_disk(&self, node: &str) {
        self.disk(node).wipe();
    }

    /// The durable store's state.
    pub fn durable_store(&self) -> &DurableStoreState {
        &self.durable_store
    }

    /// The transactional store's state.
    pub fn store(&self) -> &Arc<Mutex<TxnStoreState>> {
        &self.store
    }

    /// The run's trace.
    pub fn trace(&self) -> &TraceLog {
        &self.trace
    }
}
