//! The external systems a Sluice job talks to, as they ship: the replayable log it reads
//! ([`log`]), the file server its file sources read ([`files`]), the transactional store it
//! commits to ([`txn_store`]), and the durable store the JobMaster keeps its metadata in and file
//! sinks their files ([`durable_store`]). Each is a state machine and a server over the engine's
//! RPC seam; the simulation starts them as madsim nodes (`sluice_sim::cluster`), `sluice-real`
//! as processes (`sluice_real::roles`), the same way.
//!
//! Their state lives outside the serving task, like a durable service's disks: killing and
//! restarting the node loses nothing. The harness reads the store's committed view to check a
//! run.
//!
//! **Architecture invariant:** the services depend on the engine and the catalog only; they
//! know nothing of scenarios, checks or fault injection, and keep the engine's determinism rules
//! (no wall clock, no OS threads, no unseeded randomness, no hash order in replies).

pub mod durable_store;
pub mod files;
pub mod log;
pub mod txn_store;
