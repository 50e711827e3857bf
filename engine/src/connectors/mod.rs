//! Connectors to external systems: a replayable log ([`log`]) and a directory of text or CSV
//! ([`csv`]) files ([`files`]) to read from, and a transactional store ([`txn_store`], its [`row`]s packed by [`packed_rows`]) and files in the durable
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
pub mod row;
pub mod txn_store;

pub use csv::{Column, ColumnType, CsvRecord};
pub use file_sink::{CsvField, CsvRow, DURABLE_STORE_SYSTEM, FileSink, Shown};
pub use files::{CsvSource, FILES_SYSTEM, FileSource};
pub use log::LogSource;
pub use packed_rows::{PackedRows, RowRef};
pub use row::Row;
pub use txn_store::{SinkKind, TxnCommittable, TxnStoreSink};

use std::net::SocketAddr;
use std::time::Duration;

use crate::graph::OperatorError;
use crate::record::Record;
use crate::rpc::{Reconnect, Request, RpcClient, RpcError};

/// The name under which the log's address is registered in `ExternalSystems`.
pub const LOG_SYSTEM: &str = "log";
/// The name under which the transactional store's address is registered in `ExternalSystems`.
pub const TXN_STORE_SYSTEM: &str = "txn-store";

/// How long a connector waits for one answer from an external system.
pub const CALL_TIMEOUT: Duration = Duration::from_millis(500);
/// How many times a connector retries an idempotent call before failing its task.
pub const CALL_ATTEMPTS: u32 = 10;

/// A bounded reader's checkpointed position: the current one once it opened, else the one it
/// was restored from (nothing was read since), `None` for a reader that starts from the start.
pub(crate) fn encode_position<P: crate::api::Record>(current: Option<P>, restored: &Option<P>) -> Vec<u8> {
    current.or_else(|| restored.clone()).to_bytes()
}

/// Reads back [`encode_position`]; `what` names the reader in errors.
pub(crate) fn decode_position<P: crate::api::Record>(state: &[u8], what: &str) -> Result<Option<P>, OperatorError> {
    Option::<P>::from_bytes(state).map_err(|error| OperatorError::new(format!("{what} state: {error}")))
}

/// A connector's client of one external system: where it is, and how to ride out its being
/// slow, starting or restarting.
#[derive(Clone)]
pub(crate) struct ServiceClient {
    client: RpcClient,
    address: SocketAddr,
    /// The system's name in [`crate::graph::ExternalSystems`], for errors.
    system: &'static str,
    reconnect: Reconnect,
}

impl ServiceClient {
    /// A client of the external system `system` the task was told of.
    pub(crate) async fn connect(
        task: &crate::graph::operator::TaskInfo,
        system: &'static str,
    ) -> Result<ServiceClient, OperatorError> {
        let address = task.external.address(system)?;
        let client = RpcClient::bind_ephemeral().await.map_err(|error| OperatorError::new(error.to_string()))?;
        Ok(ServiceClient { client, address, system, reconnect: task.external.reconnect() })
    }

    /// Calls the system, for idempotent requests only: a timeout is tried again, up to
    /// [`CALL_ATTEMPTS`] in a row, and a refused or dropped connection is ridden out as
    /// [`Reconnect`] says; anything else fails the task.
    pub(crate) async fn call<R: Request + Clone>(&self, request: R) -> Result<R::Response, OperatorError> {
        let mut last_error = None;
        for _ in 0..CALL_ATTEMPTS {
            let outcome =
                self.client.call_reconnecting(self.address, request.clone(), CALL_TIMEOUT, self.reconnect).await;
            match outcome {
                Ok(response) => return Ok(response),
                Err(error @ RpcError::Timeout { .. }) => last_error = Some(error),
                Err(error) => return Err(OperatorError::new(format!("{}: {error}", self.system))),
            }
        }
        Err(OperatorError::new(format!(
            "{} unreachable after {CALL_ATTEMPTS} attempts: {}",
            self.system,
            last_error.expect("at least one attempt")
        )))
    }
}
