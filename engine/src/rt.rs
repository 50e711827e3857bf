//! The runtime seam: the one place the engine takes time, tasks and randomness from.
//!
//! Everything here is madsim's, which is two runtimes behind one API: built with `--cfg madsim`
//! (plain `cargo test`) it is the simulation — a virtual clock, a deterministic scheduler and a
//! seeded generator, so a whole distributed run replays from one seed; built without it (the real
//! build, `cargo real`) it is tokio, the operating system's clock, real TCP and rand's
//! generator. The engine names neither: it uses this module and [`crate::rpc`] (which owns the
//! network: [`crate::rpc::bind`]), so no engine logic can tell a simulated run from a real one.
//!
//! **Invariant:** no other engine file names `madsim`, `tokio::time`, `tokio::spawn` or a
//! random source (the tidy test enforces it); `cfg(madsim)` appears nowhere in the engine.

/// Time: a monotonic [`time::Instant`], [`time::sleep`] and [`time::timeout`] (simulated or real).
pub mod time {
    use std::time::Duration;

    pub use madsim::time::{Instant, timeout};

    /// The most the fault point `timer-late` adds to a sleep.
    const MOST_LATE: Duration = Duration::from_millis(250);

    /// Waits `duration`. The fault point `timer-late` makes the timer fire late: the sleep lasts
    /// half as long again, at most 250 ms more (a loaded machine's timers do).
    pub async fn sleep(duration: Duration) {
        let late = if crate::buggify!(TimerLate) { (duration / 2).min(MOST_LATE) } else { Duration::ZERO };
        madsim::time::sleep(duration + late).await
    }
}

/// Tasks: [`task::spawn`] onto the current runtime (the current simulated node, or tokio).
pub mod task {
    pub use madsim::task::{JoinHandle, spawn};
}

/// A random `u64`: seeded by the simulation, or from the operating system's generator for real.
/// Only for identities that must differ between process incarnations (a TaskManager's instance
/// id); decisions draw from a seeded [`crate::prng::Prng`] instead.
pub fn random_u64() -> u64 {
    madsim::rand::random()
}
