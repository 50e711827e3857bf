//! The external systems a job talks to, simulated as nodes: the replayable log it reads, the
//! transactional store it commits to, and the durable store the JobMaster keeps its metadata in
//! (and file sinks their files).
//!
//! Their state lives outside the node (in the cluster), like a durable service's disks: killing
//! and restarting the node loses nothing. The harness reads the store's committed view directly
//! to check the run.

pub mod durable_store;
pub mod files;
pub mod log;
pub mod txn_store;
