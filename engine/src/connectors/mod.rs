//! Connectors to external systems: a replayable log ([`log`]) and a directory of text or CSV
//! ([`csv`]) files ([`files`]) to read from, and a transactional store ([`txn_store`], its rows packed by [`packed_rows`]) and files in the durable
//! store ([`file_sink`]) to commit to.
//!
//! Each connector owns its wire protocol (the messages its external system answers), so that the
//! system's server, wherever it runs (the simulation harness runs both as nodes), speaks exactly
//! what the connector sends. Connectors reach the network only through [`crate::rpc`].
//!
//! Depends on: [`crate::api`] (source traits), [`crate::sink`], [`crate::rpc`]. Invariants:
//! a source reads by explicit offsets, so a restarted reader replays the same records; a sink's
//! transaction ids are stable across attempts and its commits are idempotent.

pub mod csv;
pub mod file_sink;
pub mod files;
pub mod log;
pub mod packed_rows;
pub mod txn_store;

pub use csv::{Column, ColumnType, CsvRecord};
pub use file_sink::{CsvField, CsvRow, DURABLE_STORE_SYSTEM, FileSink, Shown};
pub use files::{CsvSource, FILES_SYSTEM, FileSource};
pub use log::LogSource;
pub use packed_rows::{PackedRows, RowRef};
pub use txn_store::{Row, SinkKind, TxnCommittable, TxnStoreSink};

use std::net::SocketAddr;
use std::time::Duration;

use crate::graph::OperatorError;
use crate::record::Record;
use crate::rpc::{Request, RpcClient, RpcError};

/// The name under which the log's address is registered in `ExternalSystems`.
pub const LOG_SYSTEM: &str = "log";
/// The name under which the transactional store's address is registered in `ExternalSystems`.
pub const TXN_STORE_SYSTEM: &str = "txn-store";

/// How long a connector waits for one answer from an external system.
pub const CALL_TIMEOUT: Duration = Duration::from_millis(500);
/// How many times a connector retries an idempotent call before failing its task.
pub const CALL_ATTEMPTS: u32 = 10;

/// Calls an external system, retrying on timeouts: only for idempotent requests.
/// A bounded reader's checkpointed position: the current one once it opened, else the one it
/// was restored from (nothing was read since), `None` for a reader that starts from the start.
pub(crate) fn encode_position<P: crate::api::Record>(current: Option<P>, restored: &Option<P>) -> Vec<u8> {
    current.or_else(|| restored.clone()).to_bytes()
}

/// Reads back [`encode_position`]; `what` names the reader in errors.
pub(crate) fn decode_position<P: crate::api::Record>(state: &[u8], what: &str) -> Result<Option<P>, OperatorError> {
    Option::<P>::from_bytes(state).map_err(|error| OperatorError::new(format!("{what} state: {error}")))
}

pub(crate) async fn call_with_retries<R: Request + Clone>(
    client: &RpcClient,
    peer: SocketAddr,
    request: R,
    system: &str,
) -> Result<R::Response, OperatorError> {
    let mut last_error = None;
    for _ in 0..CALL_ATTEMPTS {
        match client.call(peer, request.clone(), CALL_TIMEOUT).await {
            Ok(response) => return Ok(response),
            Err(error @ RpcError::Timeout { .. }) => last_error = Some(error),
            Err(error) => return Err(OperatorError::new(format!("{system}: {error}"))),
        }
    }
    Err(OperatorError::new(format!(
        "{system} unreachable after {CALL_ATTEMPTS} attempts: {}",
        last_error.expect("at least one attempt")
    )))
}
