//! The client: waits for the cluster, submits the job and polls its status until it ends, as
//! one submits to a running session cluster. The same code drives a simulated cluster and a
//! real one (`sluice-real`): its time is the runtime seam's.

use std::net::SocketAddr;
use std::time::Duration;

use sluice_engine::rpc::RpcClient;
use sluice_engine::runtime::JobSpec;
use sluice_engine::runtime::messages::{JobStatus, RequestClusterOverview, RequestJobStatus, SubmitJob};

use crate::report::RunOutcome;

/// Waits until every TaskManager registered (as one submits to a running session cluster),
/// submits the job, and polls its status until it ends or the time limit passes.
pub async fn submit_and_wait(
    job_master: SocketAddr,
    spec: JobSpec,
    task_managers: u32,
    limit: Duration,
    submitted: tokio::sync::oneshot::Sender<()>,
) -> RunOutcome {
    let started = sluice_engine::rt::time::Instant::now();
    let timeout = Duration::from_millis(500);
    let client = RpcClient::bind_ephemeral().await.expect("internal: the client can bind");
    let job_id = spec.job_id.clone();
    loop {
        if let Ok(overview) = client.call(job_master, RequestClusterOverview, timeout).await
            && overview.task_managers >= task_managers
        {
            break;
        }
        if started.elapsed() >= limit {
            return RunOutcome::TimedOut(limit);
        }
        sluice_engine::rt::time::sleep(Duration::from_millis(10)).await;
    }
    loop {
        match client.call(job_master, SubmitJob { spec: spec.clone() }, timeout).await {
            Ok(Ok(())) => {
                let _ = submitted.send(());
                break;
            }
            Ok(Err(reason)) => return RunOutcome::JobFailed(reason),
            Err(_) if started.elapsed() >= limit => return RunOutcome::TimedOut(limit),
            Err(_) => sluice_engine::rt::time::sleep(Duration::from_millis(50)).await,
        }
    }
    loop {
        sluice_engine::rt::time::sleep(Duration::from_millis(20)).await;
        if started.elapsed() >= limit {
            return RunOutcome::TimedOut(limit);
        }
        if let Ok(Some(report)) = client.call(job_master, RequestJobStatus { job_id: job_id.clone() }, timeout).await {
            match report.status {
                JobStatus::Finished => return RunOutcome::Finished,
                JobStatus::Failed(reason) => return RunOutcome::JobFailed(reason),
                JobStatus::Running | JobStatus::Restarting => {}
            }
        }
    }
}
