//! Sluice for real: the engine's processes as OS processes on TCP and a real disk.
//!
//! The engine's code is the simulation's, unchanged: built without `--cfg madsim` (`cargo real`),
//! its runtime seam (`sluice_engine::rt`, `sluice_engine::rpc`) is tokio, the wall clock and real
//! TCP. What only a real cluster needs lives here:
//!
//! | module | owns |
//! |---|---|
//! | [`disk`] | [`disk::FileStorage`]: the storage trait on a directory, synced bytes only after a crash |
//! | [`cluster`] | the cluster file: every role's address |
//! | [`roles`] | one process per role (`sluice-real serve <node>`) |
//! | [`ready`] | readiness: waiting until roles answer the probe, and saying when one does |
//! | [`trace`] | each process's trace file, merged for the checks |
//! | [`local`] | `sluice-real local`: a loopback cluster of processes, SIGKILL faults, the verdict |
//! | [`calibrate`] | `sluice-real calibrate`: this machine's cost profile, measured and fitted |
//! | [`compare`] | `sluice-real compare`: each variant for real beside the simulator, the fidelity report |
//! | [`failure_curve`] | `sluice-real compare --failover --mtbf`: the failure-rate curve, real beside simulated |
//! | [`simulator`] | the `sluice` binary's run of a scenario file beside a real one, its job time |
//! | [`submit`] | `sluice-real submit`: a job on a cluster started by hand, checked |
//! | [`cli`] | the `sluice-real` command |
//!
//! It must never change what the engine does: no engine type learns here whether it is real.
//! It runs the services (`sluice_services`) as processes and is judged by the harness
//! (`sluice_harness`: the same scenario files, reports and checks as the simulation's); it never
//! depends on the simulation crate. It reads the wall clock and spawns processes.

pub mod calibrate;
pub mod cli;
pub mod cluster;
pub mod compare;
pub mod disk;
pub mod failure_curve;
pub mod local;
pub mod ready;
pub mod roles;
pub mod simulator;
pub mod submit;
pub mod trace;

/// True in a real build (without `--cfg madsim`): only then do its processes use real sockets.
pub const REAL_BUILD: bool = !cfg!(madsim);
