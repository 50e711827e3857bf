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
//! reconnect_timeout: 30s      # optional: see below
//! ```
//!
//! `reconnect_timeout` (30 s unless set, at most 1 h) is how long a client of the log, the files
//! or the stores keeps trying a connection the service refuses or drops (a service starting or
//! restarting) before it fails its task, backing off from 50 ms to 1 s between tries, as
//! Kafka's and JDBC clients do (`sluice_engine::rpc::Reconnect`).
//!
//! `sluice-real local` writes one for a cluster on 127.0.0.1 with free ports.

use std::collections::BTreeSet;
use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sluice_engine::connectors::{DURABLE_STORE_SYSTEM, FILES_SYSTEM, LOG_SYSTEM, TXN_STORE_SYSTEM};
use sluice_engine::duration::format_duration;
use sluice_engine::graph::ExternalSystems;
use sluice_engine::rpc::Reconnect;
use sluice_engine::runtime::jobmaster::SHUFFLE_SERVICE;
use sluice_harness::scenario::limits::{MAX_SLOTS, MAX_TASK_MANAGERS};

/// The longest `reconnect_timeout`.
const MAX_RECONNECT_TIMEOUT: Duration = Duration::from_secs(3600);

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
    /// How long clients of the external systems ride out a refused or dropped connection
    /// ([`Reconnect::DEFAULT_TIMEOUT`] unless set).
    #[serde(default, with = "sluice_engine::duration::optional_text", skip_serializing_if = "Option::is_none")]
    pub reconnect_timeout: Option<Duration>,
}

impl ClusterFile {
    /// A cluster on 127.0.0.1, each role on a port free when this runs (see [`free_ports`]).
    pub fn on_loopback(task_managers: u32, slots_per_task_manager: u32) -> std::io::Result<ClusterFile> {
        // Hold every listener until all ports are chosen, so that no two roles get one port.
        let listeners = free_ports(6 + task_managers as usize)?;
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
            reconnect_timeout: None,
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
        if let Some(timeout) = self.reconnect_timeout
            && timeout > MAX_RECONNECT_TIMEOUT
        {
            return Err(format!(
                "reconnect_timeout: {}; at most {}",
                format_duration(timeout),
                format_duration(MAX_RECONNECT_TIMEOUT)
            ));
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
            .with_reconnect(self.reconnect())
            .with(LOG_SYSTEM, self.log)
            .with(TXN_STORE_SYSTEM, self.txn_store)
            .with(SHUFFLE_SERVICE, self.shuffle_service)
            .with(FILES_SYSTEM, self.files)
            .with(DURABLE_STORE_SYSTEM, self.durable_store)
    }

    /// How the clients of the external systems ride out a refused or dropped connection.
    pub fn reconnect(&self) -> Reconnect {
        Reconnect::within(self.reconnect_timeout.unwrap_or(Reconnect::DEFAULT_TIMEOUT))
    }

    /// The file's text.
    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(self).expect("a cluster file serializes")
    }
}

/// The lowest port [`free_ports`] chooses.
const LOWEST_PORT: u16 = 10_000;

/// The ports the kernel hands out for outgoing connections and binds to port 0
/// (`/proc/sys/net/ipv4/ip_local_port_range`; Linux's default if it cannot be read).
fn ephemeral_ports() -> std::ops::RangeInclusive<u16> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap_or_default();
    let mut bounds = text.split_whitespace().map(str::parse::<u16>);
    match (bounds.next(), bounds.next()) {
        (Some(Ok(low)), Some(Ok(high))) if low <= high => low..=high,
        _ => 32768..=60999,
    }
}

/// `count` listeners on 127.0.0.1, on free ports below the ephemeral range. A port the kernel
/// chose for port 0 could be handed to some process's outgoing connection between the moment
/// it is chosen and the moment its role binds it (or while a killed role restarts): the role
/// would then fail with "address in use". Ports below the range are never handed out that way.
/// The scan starts at an offset taken from the process id, so that launchers running at once
/// rarely try the same ports first; where the range leaves no room below it, port 0 it is.
pub fn free_ports(count: usize) -> std::io::Result<Vec<TcpListener>> {
    let highest = ephemeral_ports().start().saturating_sub(1);
    if highest < LOWEST_PORT || usize::from(highest - LOWEST_PORT) < 4 * count {
        return (0..count).map(|_| TcpListener::bind("127.0.0.1:0")).collect();
    }
    let span = u32::from(highest - LOWEST_PORT) + 1;
    let start = std::process::id().wrapping_mul(7919) % span;
    let mut listeners = Vec::with_capacity(count);
    for step in 0..span {
        let port = LOWEST_PORT + ((start + step) % span) as u16;
        if let Ok(listener) = TcpListener::bind(("127.0.0.1", port)) {
            listeners.push(listener);
            if listeners.len() == count {
                return Ok(listeners);
            }
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AddrNotAvailable,
        format!("fewer than {count} free ports on 127.0.0.1 from {LOWEST_PORT} to {highest}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_cluster_round_trips_and_a_bad_one_is_named() {
        let cluster = ClusterFile::on_loopback(2, 3).unwrap();
        assert_eq!(cluster.roles().len(), 8);
        let below = *ephemeral_ports().start();
        if below > LOWEST_PORT + 32 {
            for (node, address) in cluster.roles() {
                let port = address.port();
                assert!((LOWEST_PORT..below).contains(&port), "{node} on {port}: not below the ephemeral ports");
            }
        }
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

        assert_eq!(cluster.reconnect(), Reconnect::default(), "30 s unless set");
        std::fs::write(&path, cluster.to_yaml() + "reconnect_timeout: 2s\n").unwrap();
        let set = ClusterFile::load(&path).unwrap();
        assert_eq!(set.reconnect(), Reconnect::within(Duration::from_secs(2)));
        assert_eq!(set.external_systems().reconnect(), set.reconnect(), "every task is told");
        std::fs::write(&path, cluster.to_yaml() + "reconnect_timeout: 2h\n").unwrap();
        let error = ClusterFile::load(&path).unwrap_err();
        assert!(error.contains("reconnect_timeout: 7200s; at most 3600s"), "{error}");
    }
}
