//! `sluice sql`: run a Flink SQL script (files read in order, DDL first) in simulation, in both
//! modes, on one seed, and print the verdicts and the committed tables; `EXPLAIN` statements and
//! `--explain` print plans instead.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;
use sluice_catalog::ParamValue;
use sluice_catalog::sql::{Plan, SQL, explain};
use sluice_engine::api::JobConfig;
use sluice_engine::graph::ExecutionMode;

use super::{Mode, jobs, limit_memory};
use crate::seed::{DeterminismCheck, run_seed};
use crate::sweep::summary::status;
use sluice_harness::output::final_rows;
use sluice_harness::report::RunReport;
use sluice_harness::scenario::{MAX_PARALLELISM, ScriptError, SqlRun, read_script};
use sluice_harness::words::{counted, printable};

#[derive(Debug, Args)]
pub(super) struct SqlArgs {
    /// The SQL files, read in order as one script (say, the tables' DDL, then a query).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run only this mode [default: streaming and batch].
    #[arg(long, value_enum)]
    mode: Option<Mode>,
    /// The job's parallelism.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_PARALLELISM)))]
    parallelism: u32,
    /// Random faults per run: TaskManagers and the JobMaster crashed, partitions lost (0 to 20).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=20))]
    faults: u32,
    /// Print each INSERT INTO's plan and the JobGraph (of `--mode`, streaming by default), and run
    /// nothing.
    #[arg(long)]
    explain: bool,
    /// Print at most this many rows of each table.
    #[arg(long, default_value_t = 20, value_name = "N")]
    rows: usize,
    /// Where the replay file of a failed run goes.
    #[arg(long, value_name = "DIR", default_value = "failures")]
    failures: PathBuf,
}

pub(super) fn command(arguments: &SqlArgs) -> i32 {
    let (script, plan) = match read_script(&arguments.files) {
        Ok(read) => read,
        Err(ScriptError::Files(message)) => {
            eprintln!("sluice sql: {}", printable(&message));
            return status::USAGE;
        }
        Err(ScriptError::Sql(error)) => {
            eprintln!("sluice sql: {error}");
            return status::USAGE;
        }
    };
    if arguments.explain {
        return print_explained(arguments, &script, &plan);
    }
    if !plan.explains.is_empty() {
        print!("{}", explain(&plan, &plan.explains));
    }
    if plan.inserts.is_empty() {
        return status::PASSED;
    }
    run(arguments, &script, &plan)
}

/// `--explain`: every insert's plan tree, then the job's JobGraph and regions.
fn print_explained(arguments: &SqlArgs, script: &str, plan: &Plan) -> i32 {
    print!("{}", explain(plan, &plan.explains));
    print!("{}", explain(plan, &plan.inserts));
    if plan.inserts.is_empty() {
        return status::PASSED;
    }
    let mode = arguments.mode.map_or(ExecutionMode::Streaming, ExecutionMode::from);
    let params = BTreeMap::from([("script".to_string(), ParamValue::Text(script.to_string()))]);
    let graph =
        SQL.resolve_params(&params).and_then(|params| SQL.plan(&params, JobConfig::new(mode, arguments.parallelism)));
    match graph {
        Ok(graph) => {
            print!("{}", super::plan::text(graph));
            status::PASSED
        }
        Err(message) => {
            eprintln!("sluice sql: {}", printable(&message));
            status::USAGE
        }
    }
}

fn run(arguments: &SqlArgs, script: &str, plan: &Plan) -> i32 {
    let name = arguments
        .files
        .last()
        .and_then(|file| file.file_stem())
        .map_or_else(|| "sql".to_string(), |stem| stem.to_string_lossy().into_owned());
    let run = SqlRun {
        name: &name,
        script,
        parallelism: arguments.parallelism,
        faults: arguments.faults,
        seed: arguments.seed,
    };
    let scenario = match run.scenario(jobs()) {
        Ok(scenario) => scenario,
        Err(error) => {
            eprintln!("sluice sql: {error}");
            return status::USAGE;
        }
    };
    limit_memory(4 << 30);
    println!("{}", super::run::describe(&scenario));
    let modes = match arguments.mode {
        Some(mode) => vec![mode.into()],
        None => scenario.modes.clone(),
    };
    let result = run_seed(&scenario, arguments.seed, &modes, DeterminismCheck::Off);
    let printing = super::run::Printing { print_trace: false, trace: None, failures: Some(&arguments.failures) };
    let (failed, _) = super::run::print_seed(&scenario, &printing, &result, modes.len() == 1);
    if let Some((report, _)) = result.runs.first() {
        print_tables(report, plan, arguments.rows);
    }
    if failed { status::FAILED } else { status::PASSED }
}

/// Each sink table as the run committed it: its columns (an upsert table's key first), then at
/// most `limit` rows in key order.
fn print_tables(report: &RunReport, plan: &Plan, limit: usize) {
    for insert in &plan.inserts {
        let sink = &insert.sink;
        let mut columns: Vec<&str> = sink.primary_key.iter().map(|index| sink.columns[*index].0.as_str()).collect();
        let others = sink.columns.iter().enumerate().filter(|(index, _)| !sink.primary_key.contains(index));
        columns.extend(others.map(|(_, (name, _))| name.as_str()));
        let rows = report.committed.get(&sink.name).map(final_rows).unwrap_or_default();
        let kind = if sink.primary_key.is_empty() { "append" } else { "upsert" };
        let shown = if rows.len() > limit { format!("; the first {limit}") } else { String::new() };
        println!("table {} ({kind}, {} in {} mode{shown}):", sink.name, counted(rows.len() as u64, "row"), report.mode);
        println!("  {}", columns.join(", "));
        for (key, value) in rows.iter().take(limit) {
            let row = if value.is_empty() { (*key).to_string() } else { format!("{key}, {value}") };
            println!("  {}", printable(&row));
        }
    }
}
