//! Sluice's Flink SQL front end: a script of `CREATE TABLE`, `CREATE VIEW` and `INSERT INTO`
//! statements, parsed ([`parse`]), bound to its tables and views and typed as Flink types it
//! ([`plan`], [`expr`]), and planned onto the engine's DataStream API ([`build`]): the same plan
//! in streaming and batch mode, as in Flink.
//!
//! | module | owns |
//! |---|---|
//! | [`parse`] | the script's text to statements; Flink's DDL; errors with line and column |
//! | [`topn`] | `ROW_NUMBER() OVER` with `rn <= N`: Top-N and deduplication |
//! | [`value`] | SQL types, values and the [`value::Row`] operators pass |
//! | [`values`] | `FROM (VALUES …) AS t(a, b)`: a bounded table of literal rows |
//! | [`expr`] | scalar expressions: binding, typing, evaluation |
//! | [`functions`] | scalar functions (`LOWER`, `HOUR`, `DATE_FORMAT`, `SPLIT_INDEX`, `REGEXP_EXTRACT`, …) |
//! | [`aggregate`] | `GROUP BY`: aggregate calls, their accumulators, `HAVING` |
//! | [`join`] | regular inner equi-joins: keys and pushed-down filters from their conditions |
//! | [`node`] | the relational nodes of a plan |
//! | [`plan`] | the catalog of a script, its [`plan::Plan`], and the sequential reference evaluation |
//! | [`explain`] | `EXPLAIN`: a plan as a tree with changelog modes |
//! | [`optimize`] | rewrites that keep a plan's meaning (projection fusion) |
//! | [`build`] | a plan onto a `StreamEnv` |
//! | [`window`] | window table functions `TUMBLE`, `HOP`, `CUMULATE` and sessions: their windows and assigners |
//! | [`group_window`] | group windows, `GROUP BY k, SESSION(time, gap)` and `SESSION_START(…)`: rewritten as a window aggregation |
//! | [`nexmark`] | the `nexmark` connector's schema and events |
//!
//! Depends on the engine's public API only. Must never read the clock, draw randomness, or let
//! a hash map's order reach a plan: every process builds the same plan from the same text.

pub mod aggregate;
pub mod build;
pub mod explain;
pub mod expr;
pub mod functions;
pub mod group_window;
pub mod join;
pub mod nexmark;
pub mod node;
pub mod optimize;
pub mod parse;
pub mod plan;
pub mod topn;
pub mod value;
pub mod values;
pub mod window;

pub use parse::SqlError;
pub use plan::Plan;

/// Parses, binds and optimizes a script: the plan every process builds.
pub fn plan_script(text: &str) -> Result<Plan, SqlError> {
    Ok(optimize::optimize(plan::bind_script(&parse::parse_script(text)?)?))
}

/// Checks a script of declarations (tables, views, functions; INSERTs optional): its first
/// error, with line and column.
pub fn check_declarations(text: &str) -> Result<(), SqlError> {
    plan::check_statements(&parse::parse_script(text)?)
}

/// The relation of `query` (a SELECT) over the tables and views `script` declares: its columns,
/// and whether it updates and by what key ([`plan::is_updating`], [`plan::upsert_key`]). A tool
/// that runs ad-hoc queries (the sqllogictest runner) declares their sink tables from it.
pub fn query_relation(script: &str, query: &str) -> Result<plan::Relation, SqlError> {
    const VIEW: &str = "sluice_query";
    let text = format!("{script}\nCREATE VIEW {VIEW} AS {query};\n");
    plan::bind_view(&parse::parse_script(&text)?, VIEW)
}
