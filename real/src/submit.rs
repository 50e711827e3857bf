//! `sluice-real submit`: runs a scenario's job on a cluster started by hand (`sluice-real serve`
//! on each machine, one cluster file), as a client: it waits until every role is ready (answers
//! the readiness probe) and the TaskManagers registered, submits the job in one mode, waits for
//! its end, reads what the transactional store committed, and checks it against the reference.
//! The check needs a store that held nothing before the job (its tables are the job's output); on
//! a store already holding tables it says so and only runs the job.

use std::path::Path;
use std::time::Instant;

use sluice_engine::graph::ExecutionMode;
use sluice_harness::check::exactly_once;
use sluice_harness::client::submit_and_wait;
use sluice_harness::report::{RunOutcome, generate_input};
use sluice_harness::scenario::Scenario;
use sluice_harness::words::counted;

use crate::cluster::ClusterFile;
use crate::local::read_committed;
use crate::ready::wait_until_all_ready;
use sluice_services::durable_store::table_kinds;

/// How long it waits for the cluster's roles to be ready.
const READY_WITHIN: std::time::Duration = std::time::Duration::from_secs(120);

/// Runs the job once in `mode` (the scenario's only mode by default); the exit status.
pub fn run_submit(
    scenario_path: &Path,
    cluster: &Path,
    mode: Option<ExecutionMode>,
    seed: Option<u64>,
) -> Result<i32, String> {
    let scenario = Scenario::load(scenario_path).map_err(|error| error.to_string())?;
    let cluster = ClusterFile::load(cluster)?;
    let mode = match (mode, scenario.modes.as_slice()) {
        (Some(mode), _) => mode,
        (None, [mode]) => *mode,
        (None, _) => return Err("the scenario has several modes: choose one with --mode".to_string()),
    };
    let seed = seed.unwrap_or(scenario.seeds.start);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("the client's runtime: {error}"))?;
    let expected = scenario.job().expected(&scenario.job_params(), &generate_input(&scenario, seed), mode);
    let kinds = table_kinds(expected.as_ref());
    let started = Instant::now();
    let (before, outcome, committed) = runtime.block_on(async {
        // A cluster started by hand may still be starting: submit only once every role is ready.
        wait_until_all_ready(&cluster.roles(), READY_WITHIN, |_| None).await?;
        let before = read_committed(&cluster, &kinds).await?;
        let (submitted, _) = tokio::sync::oneshot::channel();
        let spec = scenario.job_spec(mode);
        let outcome = submit_and_wait(
            cluster.job_master,
            spec,
            u32::try_from(cluster.task_managers.len()).expect("a checked cluster file"),
            scenario.time_limit,
            submitted,
        )
        .await;
        let committed = read_committed(&cluster, &kinds).await?;
        Ok::<_, String>((before, outcome, committed))
    })?;
    let rows: usize = committed.values().map(|table| table.log.len()).sum();
    let wall = started.elapsed().as_secs_f64();
    println!(
        "scenario `{}` on {}: {mode} {outcome}, {} committed, wall {wall:.3}s",
        scenario.name,
        cluster.job_master,
        counted(rows as u64, "row")
    );
    if outcome != RunOutcome::Finished {
        return Ok(1);
    }
    if !before.is_empty() {
        println!("  not checked: the store held {} before the job", counted(before.len() as u64, "table"));
        return Ok(0);
    }
    let Some(expected) = expected else {
        println!("  not checked: job `{}` has no reference implementation", scenario.job);
        return Ok(0);
    };
    match exactly_once(&committed, &expected) {
        Ok(()) => {
            println!("  PASS  exactly the reference output, once");
            Ok(0)
        }
        Err(failure) => {
            println!("  FAIL  {failure}");
            Ok(1)
        }
    }
}
