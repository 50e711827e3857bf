//! The processes of a real cluster, one per role: each binds its address from the cluster file
//! and runs the same code as its simulated node (`sluice_harness::cluster`), with a directory on the
//! real disk ([`FileStorage`]) where the simulation has a simulated one, and a trace file.
//!
//! | role | runs | its disk |
//! |---|---|---|
//! | `jm` | `run_job_master` | none: its metadata lives in the durable store |
//! | `tm-N` | `run_task_manager` | blocking partitions |
//! | `durable-store` | the storage protocol over [`FileStorage`] | job metadata, operation logs, checkpoints, committed sink files (`sinks/`) |
//! | `txn-store` | the transactional store, and reads of what it committed | its journal: every accepted request, replayed on restart |
//! | `log` | the log server, with the scenario's input for the seed | none: generated from the seed |
//! | `files` | the input files, read-only: a directory given with `--input`, or the files the scenario generates for the seed | the input directory |
//! | `shuffle-service` | `run_shuffle_service` | remote blocking partitions |

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_engine::resources::Resources;
use sluice_engine::rpc::serve;
use sluice_engine::runtime::jobmaster::{JobMasterConfig, run_job_master};
use sluice_engine::runtime::taskmanager::{TaskManagerConfig, run_task_manager};
use sluice_engine::shuffle::remote::{ShuffleServiceConfig, run_shuffle_service};
use sluice_engine::storage::remote::{RemoteStorage, StorageCall};
use sluice_engine::storage::{Storage, StorageFactory};
use sluice_engine::trace::TracerHandle;
use sluice_harness::report::{ClusterTiming, generate_input};
use sluice_harness::scenario::Scenario;
use sluice_services::durable_store::apply_traced;
use sluice_services::files::{load as load_files, run_file_server};
use sluice_services::log::run_log_server;
use sluice_services::txn_store::{TxnStoreState, serve_reads, serve_transactions};

use crate::cluster::ClusterFile;
use crate::disk::FileStorage;
use crate::trace::FileTracer;

/// A role and what it needs beyond the cluster file.
#[derive(Clone, Debug)]
pub enum Role {
    /// The JobMaster.
    JobMaster,
    /// TaskManager `tm-N`.
    TaskManager(u32),
    /// The durable store.
    DurableStore,
    /// The transactional store.
    TxnStore,
    /// The log, serving the input the scenario generates for a seed.
    Log {
        /// The scenario file.
        scenario: PathBuf,
        /// The seed.
        seed: u64,
    },
    /// The remote shuffle service.
    ShuffleService,
    /// The input files: a directory, or (none given) those the scenario generates for a seed.
    Files {
        /// The directory.
        input: Option<PathBuf>,
        /// The scenario file.
        scenario: PathBuf,
        /// The seed.
        seed: u64,
    },
}

impl Role {
    /// Its node name, as in simulation (`jm`, `tm-0`, …) and in the cluster file's roles.
    pub fn node(&self) -> String {
        match self {
            Role::JobMaster => "jm".to_string(),
            Role::TaskManager(index) => format!("tm-{index}"),
            Role::DurableStore => "durable-store".to_string(),
            Role::TxnStore => "txn-store".to_string(),
            Role::Log { .. } => "log".to_string(),
            Role::ShuffleService => "shuffle-service".to_string(),
            Role::Files { .. } => "files".to_string(),
        }
    }
}

/// Where a process keeps its files.
#[derive(Clone, Debug)]
pub struct Dirs {
    /// Its disk (a directory per node under it).
    pub data: PathBuf,
    /// Its trace file's directory.
    pub trace: PathBuf,
}

/// Runs `role` until the process is killed; an error is why it could not start.
pub fn run(role: &Role, cluster: &ClusterFile, dirs: &Dirs) -> Result<(), String> {
    let node = role.node();
    let own = cluster
        .roles()
        .into_iter()
        .find(|(name, _)| *name == node)
        .map(|(_, address)| address)
        .ok_or_else(|| format!("{node}: the cluster file has no address for it"))?;
    // Its clients bind where it listens, never to every interface.
    sluice_engine::rpc::set_client_ip(own.ip());
    let tracer: TracerHandle = Arc::new(
        FileTracer::open(&dirs.trace.join(format!("{node}.jsonl")), &node)
            .map_err(|error| format!("{node}: cannot open its trace file: {error}"))?,
    );
    // A task runs its operator chain without yielding for as long as a batch takes (a sort of
    // its whole input, in batch mode): with a thread per slot and two to spare, heartbeats and
    // RPC handlers always find a thread.
    let threads = match role {
        Role::TaskManager(_) => cluster.slots_per_task_manager as usize + 2,
        _ => 2,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .map_err(|error| format!("{node}: cannot start its runtime: {error}"))?;
    let (durable, reconnect) = (cluster.durable_store, cluster.reconnect());
    let durable_storage: StorageFactory =
        Arc::new(move || Arc::new(RemoteStorage::new(durable).with_reconnect(reconnect)) as Arc<dyn Storage>);
    // `serve` says when its role is ready (answers the readiness probe).
    runtime.spawn(crate::ready::announce_when_ready(node.clone(), own));
    let process = Process { node, cluster, dirs, tracer, durable_storage };
    runtime.block_on(process.serve(role))
}

/// A role's process: what every role is started with.
struct Process<'a> {
    node: String,
    cluster: &'a ClusterFile,
    dirs: &'a Dirs,
    tracer: TracerHandle,
    durable_storage: StorageFactory,
}

impl Process<'_> {
    /// Serves `role` until the process is killed.
    async fn serve(self, role: &Role) -> Result<(), String> {
        let (cluster, tracer) = (self.cluster, Arc::clone(&self.tracer));
        match role {
            Role::JobMaster => run_job_master(self.job_master_config()).await,
            Role::TaskManager(index) => run_task_manager(self.task_manager_config(*index)?).await,
            Role::DurableStore => serve_storage(cluster.durable_store, self.disk()?, tracer).await,
            Role::TxnStore => {
                let state =
                    TxnStoreState::recover(self.file_storage()?).map_err(|error| format!("{}: {error}", self.node))?;
                run_txn_store(cluster.txn_store, state, tracer).await
            }
            Role::Log { scenario, seed } => {
                let input = Arc::new(generate_input(&load_scenario(scenario)?, *seed));
                run_log_server(cluster.log, input).await
            }
            Role::Files { input, scenario, seed } => {
                run_file_server(cluster.files, self.input_files(input.as_deref(), scenario, *seed)?).await
            }
            Role::ShuffleService => {
                let storage = self.disk()?;
                let config = ShuffleServiceConfig {
                    address: cluster.shuffle_service,
                    storage,
                    resources: Arc::new(Resources::free()),
                    tracer,
                };
                run_shuffle_service(config).await
            }
        }
        Ok(())
    }

    /// The node's own disk: a directory under the data directory.
    fn disk(&self) -> Result<Arc<dyn Storage>, String> {
        Ok(self.file_storage()?)
    }

    fn file_storage(&self) -> Result<Arc<FileStorage>, String> {
        let root = self.dirs.data.join(&self.node);
        let storage =
            FileStorage::open(&root).map_err(|error| format!("{}: disk {}: {error}", self.node, root.display()))?;
        Ok(Arc::new(storage))
    }

    fn job_master_config(&self) -> JobMasterConfig {
        let timing = real_timing();
        JobMasterConfig {
            address: self.cluster.job_master,
            heartbeat_timeout: timing.heartbeat_timeout,
            slot_request_timeout: timing.slot_request_timeout,
            worker_recovery_timeout: timing.worker_recovery_timeout,
            external: self.cluster.external_systems(),
            jobs: sluice_catalog::registry(),
            storage: Arc::clone(&self.durable_storage),
            tracer: Arc::clone(&self.tracer),
        }
    }

    fn task_manager_config(&self, index: u32) -> Result<TaskManagerConfig, String> {
        let (cluster, timing) = (self.cluster, real_timing());
        let address = *cluster.task_managers.get(index as usize).ok_or_else(|| {
            format!("{}: the cluster file lists {} TaskManagers", self.node, cluster.task_managers.len())
        })?;
        Ok(TaskManagerConfig {
            name: self.node.clone(),
            address,
            slots: cluster.slots_per_task_manager,
            jobs: sluice_catalog::registry(),
            job_master: cluster.job_master,
            heartbeat_interval: timing.heartbeat_interval,
            job_master_timeout: timing.heartbeat_timeout,
            partition_grace: timing.partition_grace,
            storage: self.disk()?,
            checkpoint_storage: Arc::clone(&self.durable_storage),
            shuffle: sluice_engine::shuffle::ShuffleEnvironmentConfig::default(),
            // Real work takes real time: nothing is charged.
            resources: Arc::new(Resources::free()),
            tracer: Arc::clone(&self.tracer),
        })
    }

    /// What the files node serves: a directory, read-only, or the scenario's generated files.
    fn input_files(&self, input: Option<&Path>, scenario: &Path, seed: u64) -> Result<Arc<dyn Storage>, String> {
        Ok(match input {
            Some(directory) => Arc::new(
                FileStorage::read_only(directory)
                    .map_err(|error| format!("{}: input {}: {error}", self.node, directory.display()))?,
            ),
            None => Arc::new(load_files(&generate_input(&load_scenario(scenario)?, seed)).unwrap_or_default()),
        })
    }
}

/// The simulation's timing, with a heartbeat timeout a loaded machine can keep: real processes
/// share cores, and a TaskManager busy on both of them answers late (Flink's default is 50 s).
pub fn real_timing() -> ClusterTiming {
    ClusterTiming {
        heartbeat_interval: Duration::from_millis(250),
        heartbeat_timeout: Duration::from_secs(5),
        ..ClusterTiming::default()
    }
}

/// Loads a scenario, the error as the simulation reports it (file, line and field).
pub fn load_scenario(path: &Path) -> Result<Scenario, String> {
    Scenario::load(path).map_err(|error| error.to_string())
}

/// The durable store: [`StorageCall`]s applied to a real disk, commits of sink files traced.
async fn serve_storage(address: SocketAddr, storage: Arc<dyn Storage>, tracer: TracerHandle) {
    let endpoint = bind(address, "durable-store").await;
    serve(&endpoint, move |call: StorageCall| {
        let (storage, tracer) = (Arc::clone(&storage), Arc::clone(&tracer));
        async move { apply_traced(&*storage, call.operation, &tracer).await }
    });
    sluice_engine::rpc::serve_health(&endpoint, "durable-store");
    std::future::pending::<()>().await;
}

/// The transactional store, recovered from its journal, with reads of what it committed.
async fn run_txn_store(address: SocketAddr, state: TxnStoreState, tracer: TracerHandle) {
    let endpoint = bind(address, "txn-store").await;
    let state = Arc::new(Mutex::new(state));
    serve_transactions(&endpoint, Arc::clone(&state), tracer);
    serve_reads(&endpoint, state);
    sluice_engine::rpc::serve_health(&endpoint, sluice_engine::connectors::TXN_STORE_SYSTEM);
    std::future::pending::<()>().await;
}

async fn bind(address: SocketAddr, node: &str) -> sluice_engine::rpc::Endpoint {
    sluice_engine::rpc::bind(address).await.unwrap_or_else(|error| {
        eprintln!("{node}: cannot listen on {address}: {error}");
        std::process::exit(1)
    })
}
