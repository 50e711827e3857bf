//! Test-only crashes of the harness itself, as a scenario states them: what a sweep must survive.
//!
//! A scenario's `harness_crash: { seed: 3, how: abort }` makes the harness (never the engine)
//! crash when it runs seed 3, in one of the ways a process can die: a panic outside any
//! simulation, an abort, a stack overflow, a hang, or allocating until the memory limit stops
//! it. Tests use it to show that `sluice sweep` reports such a seed as crashed, with its replay
//! file, and finishes the others. It has no other use. The simulation carries it
//! out (`sluice_sim::harness_crash`): this crate never ends a process.

use serde::{Deserialize, Serialize};

/// Which seed crashes, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarnessCrash {
    /// The seed that crashes.
    pub seed: u64,
    /// How.
    pub how: CrashKind,
}

/// How the harness crashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CrashKind {
    /// Panics in the thread that runs the seed (not inside a simulation).
    Panic,
    /// Aborts the process.
    Abort,
    /// Recurses until the thread's stack overflows.
    StackOverflow,
    /// Never returns.
    Hang,
    /// Allocates until an allocation fails; only under a memory limit (`sluice` sets one).
    ExhaustMemory,
}
