//! Validation of a parsed scenario: every value within its bound ([`super::limits`]), every
//! name known, nothing that could never take effect (a fault after the time limit, a subtask
//! the job does not have, a partition of a node from itself), and a job that fits its cluster.
//! Each error names its field and, found from the field's path, its line.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use sluice_catalog::SimJob;
use sluice_engine::api::JobConfig;
use sluice_engine::duration::format_duration;
use sluice_engine::failover::RestartStrategy;
use sluice_engine::graph::{ExchangeMode, ExecutionGraph, ExecutionMode, JobGraph};
use sluice_engine::resources::OperatorKind;
use sluice_engine::scheduler::SchedulingStrategy;
use sluice_engine::shuffle::ShuffleKind;

use super::Scenario;
use super::error::ScenarioError;
use super::limits::*;
use crate::cost::CostSpec;
use crate::faults::{CheckpointTrigger, FaultKind, ProtocolStep, Trigger};

type Checked = Result<(), ScenarioError>;

/// Checks a parsed scenario; see the module doc.
pub(super) fn validate(scenario: &Scenario, job: &SimJob, text: &str) -> Checked {
    let error = |field: &str, message: String| Err(ScenarioError::about(text, field, message));
    check_name(&scenario.name).or_else(|message| error("name", message))?;
    check_params(scenario, job, text)?;
    check_cluster(scenario, text)?;
    check_modes(scenario, text)?;
    check_times(scenario, text)?;
    check_settings(scenario, text)?;
    check_restart_strategy(&scenario.restart_strategy, text)?;
    if scenario.faults.len() > MAX_FAULTS {
        return error("faults", format!("{} faults; a scenario has at most {MAX_FAULTS}", scenario.faults.len()));
    }
    let plan = check_fits(scenario, job, text)?;
    for index in 0..scenario.faults.len() {
        check_fault(scenario, &plan, index, text)?;
    }
    check_random(scenario, text)
}

/// A name that is safe as part of a file name and on a terminal.
fn check_name(name: &str) -> Result<(), String> {
    let allowed = |character: char| character.is_ascii_alphanumeric() || "._-".contains(character);
    let first_ok = name.chars().next().is_some_and(|first| first.is_ascii_alphanumeric());
    if name.is_empty() || name.len() > MAX_NAME || !first_ok || !name.chars().all(allowed) {
        return Err(format!(
            "`{name}` is not a scenario name: 1 to {MAX_NAME} letters, digits, `.`, `_` or `-`, starting with a \
             letter or digit (it names replay files)"
        ));
    }
    Ok(())
}

fn check_params(scenario: &Scenario, job: &SimJob, text: &str) -> Checked {
    for (name, value) in &scenario.params {
        let field = format!("params.{name}");
        match job.definition.params.iter().find(|spec| spec.name == name.as_str()) {
            None => return Err(ScenarioError::about(text, &field, job.resolve_params(&scenario.params).unwrap_err())),
            Some(spec) => drop(spec.check(value).map_err(|message| ScenarioError::about(text, &field, message))?),
        }
    }
    Ok(())
}

/// `Ok` if `value` is in `range`, else an error about `field` saying so.
fn within<T: PartialOrd + std::fmt::Display>(text: &str, field: &str, value: T, low: T, high: T) -> Checked {
    if value < low || value > high {
        return Err(ScenarioError::about(text, field, format!("must be in {low}..={high}, not {value}")));
    }
    Ok(())
}

/// The same for a duration.
fn within_time(text: &str, field: &str, value: Duration, low: Duration, high: Duration) -> Checked {
    if value < low || value > high {
        let range = format!("{}..={}", format_duration(low), format_duration(high));
        return Err(ScenarioError::about(text, field, format!("must be in {range}, not {}", format_duration(value))));
    }
    Ok(())
}

fn check_cluster(scenario: &Scenario, text: &str) -> Checked {
    within(text, "cluster.task_managers", scenario.cluster.task_managers, 1, MAX_TASK_MANAGERS)?;
    within(text, "cluster.slots_per_task_manager", scenario.cluster.slots_per_task_manager, 1, MAX_SLOTS)?;
    within(text, "parallelism", scenario.parallelism, 1, MAX_PARALLELISM)
}

fn check_modes(scenario: &Scenario, text: &str) -> Checked {
    if scenario.modes.is_empty() {
        return Err(ScenarioError::about(text, "modes", "name at least one mode: streaming or batch"));
    }
    let mut seen = BTreeSet::new();
    for (index, mode) in scenario.modes.iter().enumerate() {
        if !seen.insert(*mode) {
            let message = format!("`{mode}` is listed twice: each mode runs once per seed");
            return Err(ScenarioError::about(text, &format!("modes[{index}]"), message));
        }
    }
    Ok(())
}

fn check_times(scenario: &Scenario, text: &str) -> Checked {
    let millisecond = Duration::from_millis(1);
    within_time(text, "time_limit", scenario.time_limit, millisecond, MAX_TIME_LIMIT)?;
    within_time(text, "liveness_bound", scenario.liveness_bound, millisecond, MAX_TIME_LIMIT)?;
    if scenario.time_limit <= scenario.liveness_bound {
        let message = format!(
            "the time limit ({}) must exceed the liveness bound ({}) so that a slow recovery can be told from a hang",
            format_duration(scenario.time_limit),
            format_duration(scenario.liveness_bound)
        );
        return Err(ScenarioError::about(text, "time_limit", message));
    }
    Ok(())
}

/// Buffers, checkpoints, adaptive batch scheduling, costs and expectations.
fn check_settings(scenario: &Scenario, text: &str) -> Checked {
    within(text, "buffer_size", scenario.buffer_size, MIN_BUFFER_SIZE, MAX_BUFFER_SIZE)?;
    let (millisecond, hour) = (Duration::from_millis(1), Duration::from_secs(3600));
    if let Some(interval) = scenario.watermark_interval {
        within_time(text, "watermark_interval", interval, millisecond, hour)?;
    }
    if let Some(checkpoints) = &scenario.checkpoints {
        within_time(text, "checkpoints.interval", checkpoints.interval, millisecond, hour)?;
        within_time(text, "checkpoints.timeout", checkpoints.timeout, millisecond, hour)?;
        within(text, "checkpoints.retained", checkpoints.retained, 1, MAX_RETAINED)?;
        // A replay file of a batch run keeps the checkpoints of the scenario its faults were
        // drawn for; batch ignores them.
        if !scenario.modes.contains(&ExecutionMode::Streaming) && scenario.replay.is_none() {
            let message = "only streaming mode checkpoints; add `streaming` to `modes`";
            return Err(ScenarioError::about(text, "checkpoints", message));
        }
    }
    if let Some(adaptive) = &scenario.adaptive_batch {
        if scenario.exchange_mode != ExchangeMode::AllEdgesBlocking {
            let message = format!(
                "deciding parallelism at runtime needs `exchange_mode: all-edges-blocking`, not {}",
                scenario.exchange_mode
            );
            return Err(ScenarioError::about(text, "adaptive_batch", message));
        }
        within(text, "adaptive_batch.target_bytes_per_task", adaptive.target_bytes_per_task, 1, MAX_TARGET_BYTES)?;
        within(text, "adaptive_batch.max_parallelism", adaptive.max_parallelism, 1, MAX_PARALLELISM)?;
        within(text, "adaptive_batch.min_parallelism", adaptive.min_parallelism, 1, adaptive.max_parallelism)?;
    }
    check_costs(&scenario.costs, text, 0)?;
    if let Some(restarts) = scenario.expect.max_restarts {
        within(text, "expect.max_restarts", restarts, 0, MAX_ATTEMPTS)?;
    }
    Ok(())
}

/// Checks a `costs:` mapping: each value within its bound. With `least_bandwidth` 1 (a measured
/// profile), a bandwidth of 0 ("free") is refused: no machine has one.
pub(super) fn check_costs(costs: &CostSpec, text: &str, least_bandwidth: u64) -> Checked {
    let field = |name: &str| format!("costs.{name}");
    within_time(text, &field("cpu_per_record"), costs.cpu_per_record, Duration::ZERO, MAX_CPU_PER_RECORD)?;
    for kind in OperatorKind::ALL {
        if let Some(cost) = costs.cpu.of(kind) {
            within_time(text, &field(&format!("cpu.{}", kind.name())), cost, Duration::ZERO, MAX_CPU_PER_RECORD)?;
        }
    }
    within_time(
        text,
        &field("serialization_per_kib"),
        costs.serialization_per_kib,
        Duration::ZERO,
        MAX_CPU_PER_RECORD,
    )?;
    within(text, &field("disk_mib_per_second"), costs.disk_mib_per_second, least_bandwidth, MAX_BANDWIDTH)?;
    if let Some(read) = costs.disk_read_mib_per_second {
        within(text, &field("disk_read_mib_per_second"), read, least_bandwidth, MAX_BANDWIDTH)?;
    }
    within_time(text, &field("disk_sync"), costs.disk_sync, Duration::ZERO, MAX_DISK_SYNC)?;
    within(text, &field("page_cache_mib"), costs.page_cache_mib, 0, MAX_PAGE_CACHE_MIB)?;
    if costs.page_cache_mib > 0 {
        within(text, &field("memory_mib_per_second"), costs.memory_mib_per_second, least_bandwidth, MAX_BANDWIDTH)?;
    }
    within(text, &field("network_mib_per_second"), costs.network_mib_per_second, least_bandwidth, MAX_BANDWIDTH)?;
    if let Some(latency) = costs.network_latency {
        within_time(text, &field("network_latency"), latency, Duration::from_micros(1), MAX_NETWORK_LATENCY)?;
    }
    within_time(text, &field("deploy_task"), costs.deploy_task, Duration::ZERO, MAX_DEPLOY_TASK)?;
    if let Some(cores) = costs.cores_per_task_manager {
        within(text, &field("cores_per_task_manager"), cores, 1, MAX_CORES)?;
    }
    if let Some(cores) = costs.shared_machine_cores {
        within(text, &field("shared_machine_cores"), cores, 1, MAX_CORES)?;
    }
    Ok(())
}

fn check_restart_strategy(strategy: &RestartStrategy, text: &str) -> Checked {
    let field = |name: &str| format!("restart_strategy.{name}");
    if let Err(message) = strategy.validate() {
        let named = ["max_backoff", "initial_backoff", "multiplier", "jitter_factor", "failure_rate_interval"]
            .into_iter()
            .find(|name| message.contains(name));
        return Err(ScenarioError::about(text, &named.map_or_else(|| "restart_strategy".into(), field), message));
    }
    let day = Duration::from_secs(24 * 3600);
    match *strategy {
        RestartStrategy::None => Ok(()),
        RestartStrategy::FixedDelay { delay, attempts } => {
            within_time(text, &field("delay"), delay, Duration::ZERO, MAX_DELAY)?;
            within(text, &field("attempts"), attempts, 0, MAX_ATTEMPTS)
        }
        RestartStrategy::ExponentialDelay {
            initial_backoff,
            max_backoff,
            multiplier,
            reset_backoff_threshold,
            attempts,
            ..
        } => {
            within_time(text, &field("initial_backoff"), initial_backoff, Duration::from_millis(1), MAX_DELAY)?;
            within_time(text, &field("max_backoff"), max_backoff, initial_backoff, MAX_DELAY)?;
            within_time(text, &field("reset_backoff_threshold"), reset_backoff_threshold, Duration::ZERO, day)?;
            if multiplier.0 > MAX_MULTIPLIER_THOUSANDTHS {
                let message = format!("must be at most {}, not {multiplier}", MAX_MULTIPLIER_THOUSANDTHS / 1000);
                return Err(ScenarioError::about(text, &field("multiplier"), message));
            }
            within(text, &field("attempts"), attempts.unwrap_or(0), 0, MAX_ATTEMPTS)
        }
        RestartStrategy::FailureRate { max_failures_per_interval, failure_rate_interval, delay } => {
            within(text, &field("max_failures_per_interval"), max_failures_per_interval, 1, MAX_ATTEMPTS)?;
            within_time(text, &field("failure_rate_interval"), failure_rate_interval, Duration::from_millis(1), day)?;
            within_time(text, &field("delay"), delay, Duration::ZERO, MAX_DELAY)
        }
    }
}

/// Checks that each mode's plan fits the cluster; returns the plan of the first mode.
fn check_fits(scenario: &Scenario, job: &SimJob, text: &str) -> Result<JobGraph, ScenarioError> {
    let params =
        job.resolve_params(&scenario.params).map_err(|message| ScenarioError::about(text, "params", message))?;
    let cluster = &scenario.cluster;
    for mode in &scenario.modes {
        let plan = job
            .plan(&params, scenario.job_config(*mode))
            .map_err(|message| ScenarioError::about(text, "job", message))?;
        let needed = SchedulingStrategy::new(ExecutionGraph::new(Arc::new(plan))).slots_needed_at_once();
        if needed > cluster.total_slots() {
            let message = format!(
                "job `{}` in {mode} mode needs {needed} slots at once, but the cluster has {} \
                 ({} TaskManagers × {} slots); lower the parallelism or add slots",
                scenario.job,
                cluster.total_slots(),
                cluster.task_managers,
                cluster.slots_per_task_manager
            );
            return Err(ScenarioError::about(text, "parallelism", message));
        }
    }
    job.plan(&params, JobConfig::new(scenario.modes[0], scenario.parallelism))
        .map_err(|message| ScenarioError::about(text, "job", message))
}

/// The field of a fault kind's node, for errors about it.
fn node_field(kind: &FaultKind) -> &'static str {
    match kind {
        FaultKind::Kill { .. } => "kill",
        FaultKind::Slow { .. } => "slow.node",
        FaultKind::LosePartition { .. } => "lose_partition",
        FaultKind::CorruptPartition { .. } => "corrupt_partition",
        FaultKind::LoseDisk { .. } => "lose_disk",
        _ => "partition.between",
    }
}

fn check_fault(scenario: &Scenario, plan: &JobGraph, index: usize, text: &str) -> Checked {
    let fault = &scenario.faults[index];
    let prefix = format!("faults[{index}]");
    let nodes = scenario.cluster.node_names();
    if let Some(node) = fault.kind.nodes().into_iter().find(|node| !nodes.iter().any(|known| known == node)) {
        let message = format!("no node `{node}` in this cluster; nodes: {}", nodes.join(", "));
        return Err(ScenarioError::about(text, &format!("{prefix}.{}", node_field(&fault.kind)), message));
    }
    check_trigger(scenario, plan, &fault.trigger, &prefix, text)?;
    check_kind(scenario, &fault.kind, &prefix, text)
}

fn check_trigger(scenario: &Scenario, plan: &JobGraph, trigger: &Trigger, prefix: &str, text: &str) -> Checked {
    let field = |name: &str| format!("{prefix}.{name}");
    let needs_checkpoints = |name: &str| {
        let message = "waits for a checkpoint, but the scenario takes none: add `checkpoints: { interval: 100ms }`";
        if scenario.checkpoints.is_none() { Err(ScenarioError::about(text, &field(name), message)) } else { Ok(()) }
    };
    match *trigger {
        Trigger::At(at) => {
            if at >= scenario.time_limit {
                let message = format!(
                    "fires at {}, not before the time limit ({}): it never would",
                    format_duration(at),
                    format_duration(scenario.time_limit)
                );
                return Err(ScenarioError::about(text, &field("at"), message));
            }
            Ok(())
        }
        Trigger::Task { vertex, subtask, .. } => {
            let vertices = plan.vertices.len() as u32;
            within(text, &field("when.vertex"), vertex, 0, vertices.saturating_sub(1)).map_err(|_| {
                let message = format!("job `{}` has vertices 0..{vertices}, not {vertex}", scenario.job);
                ScenarioError::about(text, &field("when.vertex"), message)
            })?;
            let job_vertex = &plan.vertices[vertex as usize];
            let subtasks = match (job_vertex.auto_parallelism, &scenario.adaptive_batch) {
                (true, Some(adaptive)) => adaptive.max_parallelism,
                _ => job_vertex.parallelism,
            };
            match subtask {
                Some(subtask) if subtask >= subtasks => {
                    let message = format!("v{vertex} has subtasks 0..{subtasks}, not {subtask}: it would never fire");
                    Err(ScenarioError::about(text, &field("when.subtask"), message))
                }
                _ => Ok(()),
            }
        }
        Trigger::RecordsCommitted(rows) => within(text, &field("after_committed"), rows, 0, MAX_ROWS),
        Trigger::Checkpoint(CheckpointTrigger::Id(id)) => {
            within(text, &field("after_checkpoint"), id, 1, MAX_CHECKPOINT_ID)?;
            needs_checkpoints("after_checkpoint")
        }
        Trigger::Checkpoint(CheckpointTrigger::Final(_) | CheckpointTrigger::Share(_)) => {
            needs_checkpoints("after_checkpoint")
        }
        Trigger::PreparedShare(_) => needs_checkpoints("after_prepared"),
        Trigger::AtShare(_) => Ok(()),
        Trigger::Prepared(id) => {
            within(text, &field("after_prepared"), id, 1, MAX_CHECKPOINT_ID)?;
            needs_checkpoints("after_prepared")
        }
        Trigger::Step { step, nth } => {
            within(text, &field("after.nth"), u64::from(nth), 1, MAX_STEP_OCCURRENCE)?;
            match step {
                ProtocolStep::CheckpointTriggered => needs_checkpoints("after"),
                _ => check_step(scenario, step, nth, &field("after"), text),
            }
        }
        Trigger::Mark { nth, .. } => within(text, &field("after_mark.nth"), u64::from(nth), 1, MAX_STEP_OCCURRENCE),
    }
}

/// What a step other than a checkpoint's needs: the fault it follows, or the remote shuffle.
fn check_step(scenario: &Scenario, step: ProtocolStep, nth: u32, field: &str, text: &str) -> Checked {
    match step {
        ProtocolStep::FaultInjected if nth as usize >= scenario.faults.len() => {
            let others = scenario.faults.len().saturating_sub(1);
            let message = format!(
                "waits for fault number {nth} of the others to fire, but the schedule has {others} other faults"
            );
            Err(ScenarioError::about(text, field, message))
        }
        ProtocolStep::PartitionStored if scenario.shuffle != ShuffleKind::Remote => {
            let message = "waits for the remote shuffle service, but the scenario has none: add `shuffle: remote`";
            Err(ScenarioError::about(text, field, message))
        }
        _ => Ok(()),
    }
}

/// The most occurrences of a protocol step (or hits of a mark) a trigger may wait for.
const MAX_STEP_OCCURRENCE: u64 = 1_000_000;

fn check_kind(scenario: &Scenario, kind: &FaultKind, prefix: &str, text: &str) -> Checked {
    let field = |name: &str| format!("{prefix}.{name}");
    let lasting = |name: &str, duration: Duration| {
        within_time(text, &field(name), duration, Duration::from_millis(1), scenario.time_limit)
    };
    match kind {
        FaultKind::Kill { restart_after: Some(delay), .. } => {
            within_time(text, &field("restart_after"), *delay, Duration::ZERO, scenario.time_limit)
        }
        FaultKind::Partition { sides, duration, .. } => {
            for (side, nodes) in sides.iter().enumerate() {
                let mut seen = BTreeSet::new();
                if let Some(node) = nodes.iter().find(|node| !seen.insert(node.as_str())) {
                    let message = format!("`{node}` is listed twice on side {side}");
                    return Err(ScenarioError::about(text, &field("partition.between"), message));
                }
            }
            if let Some(node) = sides[0].iter().find(|node| sides[1].contains(node)) {
                let message = format!("`{node}` is on both sides: a node cannot be partitioned from itself");
                return Err(ScenarioError::about(text, &field("partition.between"), message));
            }
            lasting("partition.for", *duration)
        }
        FaultKind::PacketLoss { duration, .. } => lasting("packet_loss.for", *duration),
        FaultKind::Latency { max, duration, .. } => {
            within_time(text, &field("latency.max"), *max, Duration::ZERO, MAX_LATENCY)?;
            lasting("latency.for", *duration)
        }
        FaultKind::Slow { factor, duration, .. } => {
            within(text, &field("slow.factor"), *factor, 2, MAX_SLOW_FACTOR)?;
            lasting("slow.for", *duration)
        }
        FaultKind::StoreUnavailable { duration } => lasting("store_unavailable", *duration),
        FaultKind::DurableStoreUnavailable { duration } => lasting("durable_store_unavailable", *duration),
        FaultKind::CommitFails { count } => within(text, &field("commit_fails"), *count, 1, MAX_FAULT_COUNT),
        FaultKind::CommitReplyLost { count } => within(text, &field("commit_reply_lost"), *count, 1, MAX_FAULT_COUNT),
        FaultKind::LoseNewestObjects { count } => {
            within(text, &field("lose_newest_objects"), *count, 1, MAX_FAULT_COUNT)
        }
        FaultKind::Kill { restart_after: None, .. }
        | FaultKind::LosePartition { .. }
        | FaultKind::CorruptPartition { .. }
        | FaultKind::LoseDisk { .. } => Ok(()),
    }
}

fn check_random(scenario: &Scenario, text: &str) -> Checked {
    let Some(random) = &scenario.random_faults else { return Ok(()) };
    within(text, "random_faults.count", random.count, 0, MAX_RANDOM_FAULTS)?;
    if let Some(window) = random.window {
        within_time(text, "random_faults.window", window, Duration::from_millis(1), scenario.time_limit)?;
    }
    random.validate().map_err(|message| ScenarioError::about(text, "random_faults.kinds", message))?;
    let mut seen = BTreeSet::new();
    for (index, kind) in random.kinds.iter().enumerate() {
        if !seen.insert(kind.as_str()) {
            let message = format!("`{kind}` is listed twice");
            return Err(ScenarioError::about(text, &format!("random_faults.kinds[{index}]"), message));
        }
    }
    Ok(())
}
