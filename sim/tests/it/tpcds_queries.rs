//! The TPC-DS query jobs (`tpcds-q3`, …; catalog/src/tpcds_queries), each three ways: over
//! generated tables on a healthy cluster, under random crashes and lost partitions, and over
//! DuckDB's SF 0.01 tables, whose answer the catalog's tests hold against DuckDB's. Both modes,
//! exactly once, and the modes agree.

use super::support::{load, run_and_check, seeds};

/// Runs every seed of each of a query's scenarios.
fn query(q: &str) {
    query_of(q, &["", "-chaos", "-sf001"]);
}

fn query_of(q: &str, kinds: &[&str]) {
    for kind in kinds {
        let file = format!("scenarios/tpcds/{q}{kind}.yaml");
        let scenario = load(&file);
        let tally = run_and_check(&file, &scenario, seeds(&scenario));
        if *kind != "-chaos" {
            assert_eq!(tally.unrecoverable, 0, "{file}: a fault-free scenario is always recoverable");
        }
        assert!(tally.passed > 0, "{file}: no seed passed");
    }
}

#[test]
fn q3_a_broadcast_cascade_commits_its_answer_exactly_once() {
    query("q3");
}

#[test]
fn q7_four_broadcast_joins_commit_their_answer_exactly_once() {
    query("q7");
}

#[test]
fn q19_broadcast_and_hash_joins_commit_their_answer_exactly_once() {
    query("q19");
}

#[test]
fn q42_commits_its_answer_exactly_once() {
    query("q42");
}

#[test]
fn q55_commits_its_answer_exactly_once() {
    query("q55");
}

#[test]
fn q72_a_fan_out_before_a_hash_join_with_inventory_commits_its_answer_exactly_once() {
    query("q72");
}

/// The first query whose streaming run retracts: its committed table is a changelog of puts
/// and deletions that must end where batch's does.
#[test]
fn q64_a_self_join_of_an_aggregate_over_a_retracting_having_commits_its_answer_exactly_once() {
    query("q64");
}

/// No -sf001: at SF 0.01 no order ships from two warehouses, so q95's answer is empty there.
#[test]
fn q95_self_and_semi_joins_commit_their_answer_exactly_once() {
    query_of("q95", &["", "-chaos"]);
}
