//! [`Row`]: one row of a table, as a sink writes it and a store commits it (the transactional
//! store's tables and [`super::packed_rows`]'s packed batches of rows).

use serde::{Deserialize, Serialize};

/// One row written to a table.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Row {
    /// The row's key (for upsert tables, the primary key).
    pub key: String,
    /// The row's value.
    pub value: String,
}
