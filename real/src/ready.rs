//! Readiness: a role is ready when it answers the readiness probe ([`Health`]), which each
//! process serves only once it can work (a JobMaster once it recovered what its predecessor
//! left, a store once it recovered its disk, the log once it holds its input), not when its port
//! opens. `sluice-real local` and `submit` start a job only when every role is ready; `serve`
//! prints a line when its own role is.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use sluice_engine::rpc::{Health, RpcClient};

/// How long one probe waits for its answer.
const PROBE_TIMEOUT: Duration = Duration::from_millis(200);
/// The pause between two probes of a role that is not ready yet.
const PROBE_PAUSE: Duration = Duration::from_millis(5);

/// Waits until `node` at `address` answers the probe as `node`, for at most `within`;
/// `gone` says (with why) whether the process is known to have died meanwhile, which ends the
/// wait at once. The error names the node and what to read.
pub async fn wait_until_ready(
    node: &str,
    address: SocketAddr,
    within: Duration,
    gone: impl Fn() -> Option<String>,
) -> Result<(), String> {
    let client =
        RpcClient::bind_ephemeral().await.map_err(|error| format!("cannot bind a client to probe {node}: {error}"))?;
    let deadline = Instant::now() + within;
    loop {
        match client.call(address, Health, PROBE_TIMEOUT).await {
            Ok(healthy) if healthy.node == node => return Ok(()),
            Ok(healthy) => {
                return Err(format!(
                    "{address} answers as `{}`, not as {node}: is the cluster file right?",
                    healthy.node
                ));
            }
            Err(_) => {}
        }
        if let Some(why) = gone() {
            return Err(format!("a process exited while {node} was not ready yet ({why}): see its log"));
        }
        if Instant::now() >= deadline {
            return Err(format!("{node} at {address} was not ready within {}s: see its log", within.as_secs()));
        }
        tokio::time::sleep(PROBE_PAUSE).await;
    }
}

/// Waits until every `(node, address)` is ready (they start together, so waiting for one after
/// another takes as long as the slowest), for at most `within` in all; the first error.
pub async fn wait_until_all_ready(
    roles: &[(String, SocketAddr)],
    within: Duration,
    gone: impl Fn(&str) -> Option<String>,
) -> Result<(), String> {
    let deadline = Instant::now() + within;
    // Any role that exits meanwhile ends the wait, named, whichever role is being waited for.
    let any_gone = || roles.iter().find_map(|(node, _)| gone(node).map(|why| format!("{node}: {why}")));
    for (node, address) in roles {
        let left = deadline.saturating_duration_since(Instant::now());
        wait_until_ready(node, *address, left, any_gone).await?;
    }
    Ok(())
}

/// Prints `<node> ready on <address>` once the process's own role answers the probe (`serve`
/// says when it is ready, for whoever starts a cluster by hand).
pub async fn announce_when_ready(node: String, address: SocketAddr) {
    // A role that is never ready says so in its log; this waits as long as the process lives.
    if wait_until_ready(&node, address, Duration::from_secs(24 * 3600), || None).await.is_ok() {
        println!("{node} ready on {address}");
    }
}
