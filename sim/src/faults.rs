//! Injects a scenario's faults into a running cluster, at their simulated times.
//!
//! Faults are data decided before the run; nothing here draws randomness. Each fault is recorded
//! in the trace when it fires, so the trace shows the schedule that was realized.

use std::sync::Arc;

use sluice_engine::runtime::trace::TraceEvent;

use crate::cluster::Cluster;
use crate::scenario::{FaultSpec, format_duration};

/// Starts one task per fault on the current (harness) node; fault times count from now.
pub fn inject(cluster: &Arc<Cluster>, faults: &[FaultSpec]) {
    for fault in faults.iter().cloned() {
        let cluster = Arc::clone(cluster);
        madsim::task::spawn(async move {
            madsim::time::sleep(fault.at).await;
            cluster.kill(&fault.kill);
            cluster.trace().record("harness", TraceEvent::Harness { detail: format!("kill {}", fault.kill) });
            if let Some(delay) = fault.restart_after {
                madsim::time::sleep(delay).await;
                cluster.restart(&fault.kill);
                cluster.trace().record(
                    "harness",
                    TraceEvent::Harness { detail: format!("restart {} after {}", fault.kill, format_duration(delay)) },
                );
            }
        });
    }
}
