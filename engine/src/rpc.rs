//! The network seam: typed request/response messages over `madsim::net` (simulated, or real
//! TCP in the real build; see [`crate::rt`]), always with a timeout.
//!
//! Every message between processes and to external systems goes through [`RpcClient::call`] or
//! a handler registered with [`serve`], so that message-level fault injection and accounting
//! have one place to live. A call that gets no answer in time is an error, never a hang: under
//! simulation a dead or partitioned peer is indistinguishable from a slow one.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// A bound network endpoint: it serves requests ([`serve`]) and makes calls ([`RpcClient`]).
pub use madsim::net::Endpoint;
pub use madsim::net::rpc::Request;

/// A stable request id derived from the request type's path (FNV-1a, usable in `const`).
pub const fn request_id(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut index = 0;
    while index < bytes.len() {
        hash ^= bytes[index] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        index += 1;
    }
    hash
}

/// Declares `Request => Response` for a serde message type.
#[macro_export]
macro_rules! rpc_request {
    ($request:ty => $response:ty) => {
        impl $crate::rpc::Request for $request {
            type Response = $response;
            const ID: u64 = $crate::rpc::request_id(concat!(module_path!(), "::", stringify!($request)));
        }
    };
}

/// Why a call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RpcError {
    /// No answer within the timeout: the peer is dead, partitioned, or slow.
    Timeout {
        /// The peer.
        peer: SocketAddr,
        /// The request type.
        request: &'static str,
    },
    /// The peer's address refused or dropped the connection (nothing listens there yet, or the
    /// process behind it died or restarted): in a real cluster, a service starting or
    /// restarting. A simulated peer that is down never answers instead ([`RpcError::Timeout`]).
    Connection(String),
    /// The local network stack refused.
    Io(String),
}

impl RpcError {
    /// The error of a failed call, by its kind: a timeout, a connection the peer refused or
    /// dropped, or anything else the network stack said.
    fn of(error: io::Error, peer: SocketAddr, request: &'static str) -> RpcError {
        use io::ErrorKind::*;
        match error.kind() {
            TimedOut => RpcError::Timeout { peer, request },
            ConnectionRefused | ConnectionReset | ConnectionAborted | BrokenPipe | NotConnected | UnexpectedEof => {
                RpcError::Connection(format!("{request} to {peer}: {error}"))
            }
            _ => RpcError::Io(error.to_string()),
        }
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RpcError::Timeout { peer, request } => write!(f, "{request} to {peer} timed out"),
            RpcError::Connection(message) => write!(f, "connection failed: {message}"),
            RpcError::Io(message) => write!(f, "network error: {message}"),
        }
    }
}

impl std::error::Error for RpcError {}

fn short_type_name<T>() -> &'static str {
    let name = std::any::type_name::<T>();
    name.rsplit("::").next().unwrap_or(name)
}

/// The address a real process's client endpoints bind to; unset, they bind to every address
/// of the node (`0.0.0.0`, a simulated node's one address).
static CLIENT_IP: std::sync::OnceLock<IpAddr> = std::sync::OnceLock::new();

/// Makes this process's client endpoints bind to `ip` (a real process's own address, such as
/// 127.0.0.1, rather than every interface). Only a real process calls it, once, as it starts:
/// a simulation runs many nodes in one process. False if it was already set.
pub fn set_client_ip(ip: IpAddr) -> bool {
    CLIENT_IP.set(ip).is_ok()
}

/// Binds an endpoint at `address` (a simulated node's address, or a real socket address).
pub async fn bind(address: SocketAddr) -> io::Result<Endpoint> {
    Endpoint::bind(address).await
}

/// How long the fault point `request-held-back` holds a request before sending it.
const HELD_BACK: Duration = Duration::from_millis(20);

/// A bound endpoint that makes calls.
#[derive(Clone)]
pub struct RpcClient {
    endpoint: Endpoint,
}

impl RpcClient {
    /// Wraps an endpoint (a process's own, which may also serve requests).
    pub fn new(endpoint: Endpoint) -> RpcClient {
        RpcClient { endpoint }
    }

    /// Binds a fresh endpoint on an ephemeral port of this node (of [`set_client_ip`]'s address
    /// in a real process).
    pub async fn bind_ephemeral() -> io::Result<RpcClient> {
        let ip = CLIENT_IP.get().copied().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        Ok(RpcClient { endpoint: bind(SocketAddr::new(ip, 0)).await? })
    }

    /// This endpoint's address.
    pub fn local_address(&self) -> SocketAddr {
        self.endpoint.local_addr().expect("a bound endpoint has an address")
    }

    /// Sends `request` and waits at most `timeout` for the response.
    ///
    /// Fault points: `request-held-back` delays the send so that later requests overtake it;
    /// `rpc-reply-late` lets a served request's answer arrive after the caller gave up, which
    /// the caller sees as a timeout after waiting its whole `timeout`.
    pub async fn call<R: Request>(
        &self,
        peer: SocketAddr,
        request: R,
        timeout: Duration,
    ) -> Result<R::Response, RpcError> {
        if crate::buggify!(RequestHeldBack) {
            crate::rt::time::sleep(HELD_BACK).await;
        }
        let started = crate::rt::time::Instant::now();
        match self.endpoint.call_timeout(peer, request, timeout).await {
            Ok(_) if crate::buggify!(RpcReplyLate) => {
                crate::rt::time::sleep(timeout.saturating_sub(started.elapsed())).await;
                Err(RpcError::Timeout { peer, request: short_type_name::<R>() })
            }
            Ok(response) => Ok(response),
            Err(error) => Err(RpcError::of(error, peer, short_type_name::<R>())),
        }
    }

    /// [`RpcClient::call`], riding out a peer that refuses or drops the connection: it tries
    /// again after each such failure, backing off as `reconnect` says, until its bound is spent
    /// (then the last connection error). Any other outcome, a timeout included, is returned as
    /// it is: only for a request that is safe to send again.
    pub async fn call_reconnecting<R: Request + Clone>(
        &self,
        peer: SocketAddr,
        request: R,
        timeout: Duration,
        reconnect: Reconnect,
    ) -> Result<R::Response, RpcError> {
        let started = crate::rt::time::Instant::now();
        let mut failures = 0;
        loop {
            match self.call(peer, request.clone(), timeout).await {
                Err(RpcError::Connection(detail)) => {
                    failures += 1;
                    match reconnect.pause(failures, started.elapsed()) {
                        Some(pause) => crate::rt::time::sleep(pause).await,
                        None => {
                            return Err(RpcError::Connection(format!(
                                "{detail} (still failing after {} ms and {}; the bound is {})",
                                started.elapsed().as_millis(),
                                crate::counted::counted(failures, "attempt"),
                                crate::duration::format_duration(reconnect.timeout)
                            )));
                        }
                    }
                }
                outcome => return outcome,
            }
        }
    }
}

/// How a client of an external system (the log, the files, the stores) rides out a connection
/// its peer refuses or drops, as Kafka's and JDBC clients do: it tries again after 50 ms, then
/// after twice as long each time up to 1 s, for at most `timeout` from the request's first try
/// (the cluster file's `reconnect_timeout`, 30 s unless set), and only then fails its task. A
/// service that is starting or restarting is a pause, not a failure. The bound is per request:
/// a request that also times out is tried again a few times by its client, each try with its
/// own bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Reconnect {
    /// How long it keeps trying one request, from its first try.
    #[serde(with = "crate::duration::text")]
    pub timeout: Duration,
}

impl Reconnect {
    /// The bound unless one is set.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
    /// The first pause.
    pub const FIRST_BACKOFF: Duration = Duration::from_millis(50);
    /// The longest pause.
    pub const MAX_BACKOFF: Duration = Duration::from_secs(1);

    /// Keeps trying for `timeout`.
    pub fn within(timeout: Duration) -> Reconnect {
        Reconnect { timeout }
    }

    /// The pause after the `failures`-th connection failure in a row, `elapsed` after the first
    /// try; `None` once trying again would outlast the bound.
    pub fn pause(&self, failures: u32, elapsed: Duration) -> Option<Duration> {
        let doublings = failures.saturating_sub(1).min(16);
        let pause = (Self::FIRST_BACKOFF * 2u32.pow(doublings)).min(Self::MAX_BACKOFF);
        (elapsed + pause <= self.timeout).then_some(pause)
    }
}

impl Default for Reconnect {
    fn default() -> Reconnect {
        Reconnect::within(Reconnect::DEFAULT_TIMEOUT)
    }
}

/// The readiness probe: every process of a cluster answers it once it is ready to work (a
/// JobMaster once it recovered what its predecessor left, a store once it recovered its disk),
/// and not before, so that an open port is not taken for a working service.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct Health;

/// A ready process's answer: its node name (`jm`, `tm-0`, `txn-store`…).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Healthy {
    /// The node that answered.
    pub node: String,
}

crate::rpc_request!(Health => Healthy);

/// Answers [`Health`] on `endpoint` from now on, as `node`: call it once the process is ready.
pub fn serve_health(endpoint: &Endpoint, node: &str) {
    let node = node.to_string();
    serve(endpoint, move |_: Health| std::future::ready(Healthy { node: node.clone() }));
}

/// Serves requests of type `R` on `endpoint`: every request runs `handler` in its own task.
pub fn serve<R, F, Fut>(endpoint: &Endpoint, handler: F)
where
    R: Request,
    F: Fn(R) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R::Response> + Send + 'static,
{
    endpoint.add_rpc_handler(move |request: R| handler(request));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnecting_backs_off_by_doubling_up_to_a_second_and_stops_at_its_bound() {
        let reconnect = Reconnect::within(Duration::from_secs(3));
        let pauses: Vec<u64> =
            (1..=6).map(|failures| reconnect.pause(failures, Duration::ZERO).unwrap().as_millis() as u64).collect();
        assert_eq!(pauses, [50, 100, 200, 400, 800, 1000]);
        assert_eq!(reconnect.pause(40, Duration::ZERO), Some(Reconnect::MAX_BACKOFF), "no overflow, however many");
        assert_eq!(reconnect.pause(1, Duration::from_millis(2950)), Some(Duration::from_millis(50)), "just fits");
        assert_eq!(reconnect.pause(1, Duration::from_millis(2951)), None, "would outlast the bound");
        assert_eq!(Reconnect::within(Duration::ZERO).pause(1, Duration::ZERO), None, "a zero bound never retries");
    }

    #[test]
    fn a_refused_or_dropped_connection_is_a_connection_error_and_a_timeout_is_a_timeout() {
        let peer: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let kind = |kind: io::ErrorKind| RpcError::of(io::Error::new(kind, "x"), peer, "Health");
        for refused in [io::ErrorKind::ConnectionRefused, io::ErrorKind::ConnectionReset, io::ErrorKind::BrokenPipe] {
            assert!(matches!(kind(refused), RpcError::Connection(_)), "{refused:?}");
        }
        assert_eq!(kind(io::ErrorKind::TimedOut), RpcError::Timeout { peer, request: "Health" });
        assert!(matches!(kind(io::ErrorKind::InvalidData), RpcError::Io(_)));
    }
}
