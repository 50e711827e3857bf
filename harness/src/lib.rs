//! The Sluice harness: everything that judges a run, whoever ran it. The simulation (`sim`, on
//! madsim) and the real cluster (`real`, OS processes on TCP and disk) both read scenarios with
//! it, report runs in its [`report::RunReport`], and judge them with its checks.
//!
//! | module | owns |
//! |---|---|
//! | [`scenario`] | the YAML format; errors that name file, line and field |
//! | [`faults`] | fault schedules as data: kinds, triggers, random and buggify swarms |
//! | [`harness_crash`] | a scenario's test-only crash of the harness (the simulation carries it out) |
//! | [`compare`] | what a run cost (makespan, slot-time, disk bytes, peak slots), per exchange mode or failover strategy |
//! | [`failure_curve`] | the failure-rate curve: a scenario under kills at a rate, its table, real beside simulated |
//! | [`cost`] | the scenario's cost model: what a simulated CPU, disk and network charge |
//! | [`search`] | coverage-guided search: a run's features, schedule mutations, the corpus |
//! | [`report`] | what one run reports (outcome, committed view, trace, late data); a seed's input |
//! | [`client`] | the client that submits a job and waits for it, on either cluster |
//! | [`check`] | exactly-once, streaming == batch, failover sets, determinism: the verdict |
//! | [`failover_sets`] | the oracle of which subtasks a restart must re-run, from the trace |
//! | [`late`] | late data from the trace: the elements left out of fired windows that shaped the output |
//! | [`prefix`] | the checkpoint-prefix oracle: each completed checkpoint's tables against the reference over the input read before its barrier |
//! | [`recovery`] | restarts and recovery times from the trace, defined once for both clusters |
//! | [`trace`] | the event trace, its JSON lines and its hash |
//! | [`coverage`] | the engine's coverage marks a run reached, against the faults active |
//! | [`timeline`] | a run drawn as text or SVG (`sluice timeline`) |
//! | [`output`] | committed tables written as CSV (`run --output`), and two outputs compared (`diff`) |
//! | [`words`] | counts in the singular when they are one; user text made safe for a terminal |
//!
//! **Architecture invariant:** the harness runs nothing. It depends on the engine, the catalog
//! and the services' formats, never on the simulator (`sluice-sim`) or the real processes
//! (`sluice-real`), which both sit above it; it starts no process, no thread and no simulation,
//! and reads no clock but the runtime seam's (the trace's times).

pub mod calibration;
pub mod check;
pub mod client;
pub mod compare;
pub mod cost;
pub mod coverage;
pub mod failover_sets;
pub mod failure_curve;
pub mod faults;
pub mod fidelity;
pub mod harness_crash;
pub mod late;
pub mod output;
pub mod prefix;
pub mod recovery;
pub mod report;
pub mod scenario;
pub mod search;
pub mod timeline;
pub mod trace;
pub mod words;

pub use scenario::{JobCatalog, Scenario};
/// What a job brings to be judged: re-exported so that a user's crate needs only this one.
pub use sluice_catalog::{ExpectedOutput, ExpectedTable, ExternalInput, LateData, LateElements, SimJob, Updates};
