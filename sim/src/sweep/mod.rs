//! Sweeps: many seeds of one scenario, each in an isolated worker process, folded into a
//! summary that shards of the same sweep, run on other machines, merge into.
//!
//! | module | owns |
//! |---|---|
//! | [`pool`] | the supervisor: worker processes, one seed at a time each, the watchdog, crashes |
//! | [`worker`] | the worker: `sluice __worker`, its JSON lines protocol |
//! | [`record`] | [`record::SeedRecord`], what is kept of a seed |
//! | [`summary`] | [`summary::Summary`], the counts, how they print, exit statuses; the JSON lines format |
//! | [`shard`] | [`shard::Shard`], the K-th of N slices of a seed range |
//! | [`junit`] | JUnit XML of a sweep's records |
//!
//! A sweep folds each seed's record into its summary as it arrives and keeps nothing else per
//! seed (only `--junit` keeps a few bytes per seed, for the report), so its memory does not grow
//! with its seed count; nor does a worker's, which runs one simulation at a time.

pub mod junit;
pub mod pool;
pub mod record;
pub mod shard;
pub mod summary;
pub mod worker;
