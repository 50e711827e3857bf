//! The cluster file: where each role of a real cluster listens. Every process of the cluster
//! reads the same file, so a cluster spread over several machines is one file copied to each.
//!
//! ```yaml
//! job_master: 10.0.0.1:6123
//! durable_store: 10.0.0.1:9800
//! txn_store: 10.0.0.2:5432
//! log: 10.0.0.2:9092
//! files: 10.0.0.2:9900
//! shuffle_service: 10.0.0.3:9700
//! task_managers: [10.0.0.4:6121, 10.0.0.5:6121]
//! slots_per_task_manager: 2
//! ```
//!
//! `sluice-real local` writes one for a cluster on 127.0.0.1 with free ports.

use std::collections::BTreeSet;
use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;

use serde::{Deserialize, Serialize};
use sluice_engine::connectors::{DURABLE_STORE_SYSTEM, FILES_SYSTEM, LOG_SYSTEM, TXN_STORE_SYSTEM};
use sluice_engine::graph::ExternalSystems;
use sluice_engine::runtime::jobmaster::SHUFFLE_SERVICE;
use sluice_sim::scenario::limits::{MAX_SLOTS, MAX_TASK_MANAGERS};

/// A cluster file is a few lines; anything larger is not one.
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// Where each role listens; see the module doc.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterFile {
    /// The JobMaster.
    pub job_master: SocketAddr,
    /// The durable store (the JobMaster's metadata and the checkpoints).
    pub durable_store: SocketAddr,
    /// The transactional store the sinks commit to.
    pub txn_store: SocketAddr,
    /// The log the sources read.
    pub log: SocketAddr,
    /// The input files the file sources read.
    pub files: SocketAddr,
    /// The remote shuffle service.
    pub shuffle_service: SocketAddr,
    /// The TaskManagers, `tm-0` first.
    pub task_managers: Vec<SocketAddr>,
    /// Slots each TaskManager offers.
    pub slots_per_task_manager: u32,
}

impl ClusterFile {
    /// A cluster on 127.0.0.1, each role on a port free when this runs.
    pub fn on_loopback(task_managers: u32, slots_per_task_manager: u32) -> std::io::Result<ClusterFile> {
        // Hold every listener until all ports are chosen, so that no two roles get one port.
        let listeners: Vec<TcpListener> =
            (0..6 + task_managers).map(|_| TcpListener::bind("127.0.0.1:0")).collect::<Result<_, _>>()?;
        let ports: Vec<SocketAddr> = listeners.iter().map(TcpListener::local_addr).collect::<Result<_, _>>()?;
        Ok(ClusterFile {
            job_master: ports[0],
            durable_store: ports[1],
            txn_store: ports[2],
            log: ports[3],
            shuffle_service: ports[4],
            files: ports[5],
            task_managers: ports[6..].to_vec(),
            slots_per_task_manager,
        })
    }

    /// Reads and checks a cluster file; the error names the file and what is wrong.
    pub fn load(path: &Path) -> Result<ClusterFile, String> {
        let name = path.display();
        let file = std::fs::File::open(path).map_err(|error| format!("{name}: {error}"))?;
        let mut text = String::new();
        file.take(MAX_FILE_BYTES + 1).read_to_string(&mut text).map_err(|error| format!("{name}: {error}"))?;
        if text.len() as u64 > MAX_FILE_BYTES {
            return Err(format!("{name}: larger than {MAX_FILE_BYTES} bytes: not a cluster file"));
        }
        let cluster: ClusterFile = serde_yaml::from_str(&text).map_err(|error| format!("{name}: {error}"))?;
        cluster.check().map_err(|error| format!("{name}: {error}"))?;
        Ok(cluster)
    }

    fn check(&self) -> Result<(), String> {
        let count = self.task_managers.len();
        if count == 0 || count > MAX_TASK_MANAGERS as usize {
            return Err(format!("task_managers: {count} listed; a cluster has 1 to {MAX_TASK_MANAGERS}"));
        }
        if !(1..=MAX_SLOTS).contains(&self.slots_per_task_manager) {
            return Err(format!("slots_per_task_manager: {}; must be 1 to {MAX_SLOTS}", self.slots_per_task_manager));
        }
        let mut seen = BTreeSet::new();
        for (role, address) in self.roles() {
            if !seen.insert(address) {
                return Err(format!("{role}: {address} is also another role's address"));
            }
        }
        Ok(())
    }

    /// Every role's name (`jm`, `tm-0`, …, as in simulation) and address.
    pub fn roles(&self) -> Vec<(String, SocketAddr)> {
        let mut roles = vec![
            ("jm".to_string(), self.job_master),
            ("durable-store".to_string(), self.durable_store),
            (TXN_STORE_SYSTEM.to_string(), self.txn_store),
            (LOG_SYSTEM.to_string(), self.log),
            ("shuffle-service".to_string(), self.shuffle_service),
            (FILES_SYSTEM.to_string(), self.files),
        ];
        roles.extend(self.task_managers.iter().enumerate().map(|(index, address)| (format!("tm-{index}"), *address)));
        roles
    }

    /// Where the external systems are, as every task is told.
    pub fn external_systems(&self) -> ExternalSystems {
        ExternalSystems::default()
            .with(LOG_SYSTEM, self.log)
            .with(TXN_STORE_SYSTEM, self.txn_store)
            .with(SHUFFLE_SERVICE, self.shuffle_service)
            .with(FILES_SYSTEM, self.files)
            .with(DURABLE_STORE_SYSTEM, self.durable_store)
    }

    /// The file's text.
    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(self).expect("a cluster file serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_cluster_round_trips_and_a_bad_one_is_named() {
        let cluster = ClusterFile::on_loopback(2, 3).unwrap();
        assert_eq!(cluster.roles().len(), 8);
        assert_eq!(serde_yaml::from_str::<ClusterFile>(&cluster.to_yaml()).unwrap(), cluster);
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("cluster.yaml");
        std::fs::write(&path, cluster.to_yaml()).unwrap();
        assert_eq!(ClusterFile::load(&path).unwrap(), cluster);

        let mut twice = cluster.clone();
        twice.task_managers[1] = twice.job_master;
        std::fs::write(&path, twice.to_yaml()).unwrap();
        let error = ClusterFile::load(&path).unwrap_err();
        assert!(error.contains("tm-1") && error.contains("also another role"), "{error}");

        std::fs::write(&path, cluster.to_yaml().replace("log:", "logs:")).unwrap();
        let error = ClusterFile::load(&path).unwrap_err();
        assert!(error.contains("logs"), "{error}");
    }
}
