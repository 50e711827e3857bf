//! Builds a simulated cluster from a scenario: a JobMaster, TaskManagers with slots and disks,
//! the log and the transactional store, each a madsim node with its own address.
//!
//! Node names are the fault schedule's vocabulary: `jm`, `tm-0` … `tm-N`, `log`, `txn-store`.
//! A TaskManager's disk ([`MemoryStorage`]) and the store's state belong to the cluster, not to
//! the node, so they survive a node restart; killing a TaskManager crashes its disk (unsynced
//! bytes are lost).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use madsim::runtime::Handle;
use sluice_engine::catalog::ExternalInput;
use sluice_engine::connectors::{LOG_SYSTEM, TXN_STORE_SYSTEM};
use sluice_engine::graph::ExternalSystems;
use sluice_engine::runtime::jobmaster::{JobMasterConfig, run_job_master};
use sluice_engine::runtime::taskmanager::{TaskManagerConfig, run_task_manager};
use sluice_engine::shuffle::ShuffleConfig;
use sluice_engine::storage::{MemoryStorage, Storage};

use crate::external::log::run_log_server;
use crate::external::txn_store::{TxnStoreState, run_txn_store};
use crate::scenario::ClusterSpec;
use crate::trace::TraceLog;

/// The JobMaster's address.
pub const JOB_MASTER_ADDRESS: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 6123);
/// The client's IP (the node that submits the job and waits for it).
pub const CLIENT_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 9, 1));
const LOG_ADDRESS: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 2, 1)), 9092);
const TXN_STORE_ADDRESS: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 3, 1)), 5432);

fn task_manager_address(index: u32) -> SocketAddr {
    let index = u8::try_from(index + 1).expect("at most 254 TaskManagers");
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 1, index)), 6121)
}

/// Timing of the cluster's processes.
#[derive(Clone, Copy, Debug)]
pub struct ClusterTiming {
    /// TaskManager heartbeat interval.
    pub heartbeat_interval: Duration,
    /// Silence after which the JobMaster declares a TaskManager lost.
    pub heartbeat_timeout: Duration,
    /// How long a region may wait for slots it can never get.
    pub slot_request_timeout: Duration,
}

impl Default for ClusterTiming {
    fn default() -> Self {
        ClusterTiming {
            heartbeat_interval: Duration::from_millis(100),
            heartbeat_timeout: Duration::from_secs(1),
            slot_request_timeout: Duration::from_secs(10),
        }
    }
}

/// A running simulated cluster.
pub struct Cluster {
    handle: Handle,
    disks: BTreeMap<String, MemoryStorage>,
    store: Arc<Mutex<TxnStoreState>>,
    trace: TraceLog,
}

impl Cluster {
    /// Starts every node; call inside the simulation.
    pub fn start(spec: &ClusterSpec, shuffle: ShuffleConfig, input: Arc<ExternalInput>, trace: &TraceLog) -> Cluster {
        let handle = Handle::current();
        let timing = ClusterTiming::default();
        let external =
            ExternalSystems::default().with(LOG_SYSTEM, LOG_ADDRESS).with(TXN_STORE_SYSTEM, TXN_STORE_ADDRESS);

        let jm_config = JobMasterConfig {
            address: JOB_MASTER_ADDRESS,
            heartbeat_timeout: timing.heartbeat_timeout,
            slot_request_timeout: timing.slot_request_timeout,
            external,
            tracer: trace.tracer_for("jm"),
        };
        handle
            .create_node()
            .name("jm")
            .ip(JOB_MASTER_ADDRESS.ip())
            .init(move || run_job_master(jm_config.clone()))
            .build();

        let mut disks = BTreeMap::new();
        for index in 0..spec.task_managers {
            let name = format!("tm-{index}");
            let disk = MemoryStorage::new();
            let address = task_manager_address(index);
            let config = TaskManagerConfig {
                name: name.clone(),
                address,
                slots: spec.slots_per_task_manager,
                job_master: JOB_MASTER_ADDRESS,
                heartbeat_interval: timing.heartbeat_interval,
                storage: Arc::new(disk.clone()) as Arc<dyn Storage>,
                shuffle,
                tracer: trace.tracer_for(&name),
            };
            handle.create_node().name(&name).ip(address.ip()).init(move || run_task_manager(config.clone())).build();
            disks.insert(name, disk);
        }

        handle
            .create_node()
            .name(LOG_SYSTEM)
            .ip(LOG_ADDRESS.ip())
            .init(move || run_log_server(LOG_ADDRESS, Arc::clone(&input)))
            .build();

        let store = Arc::new(Mutex::new(TxnStoreState::default()));
        let shared = Arc::clone(&store);
        let store_tracer = trace.tracer_for(TXN_STORE_SYSTEM);
        handle
            .create_node()
            .name(TXN_STORE_SYSTEM)
            .ip(TXN_STORE_ADDRESS.ip())
            .init(move || run_txn_store(TXN_STORE_ADDRESS, Arc::clone(&shared), Arc::clone(&store_tracer)))
            .build();

        Cluster { handle, disks, store, trace: trace.clone() }
    }

    /// Kills a node: its processes stop at once; a TaskManager's disk loses unsynced bytes.
    pub fn kill(&self, node: &str) {
        self.handle.kill(node);
        if let Some(disk) = self.disks.get(node) {
            disk.crash();
        }
    }

    /// Restarts a killed node's process.
    pub fn restart(&self, node: &str) {
        self.handle.restart(node);
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
