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
    /// The local network stack refused.
    Io(String),
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RpcError::Timeout { peer, request } => write!(f, "{request} to {peer} timed out"),
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
            Err(error) if error.kind() == io::ErrorKind::TimedOut => {
                Err(RpcError::Timeout { peer, request: short_type_name::<R>() })
            }
            Err(error) => Err(RpcError::Io(error.to_string())),
        }
    }
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
