//! [`Row`]: one row of a table, as a sink writes it and a store commits it (the transactional
//! store's tables and [`super::packed_rows`]'s packed batches of rows).

use serde::{Deserialize, Serialize};

/// One row written to a table: a value for its key, or, in an upsert table, the key's deletion
/// (a tombstone, as an upsert Kafka topic's null value: Flink's `-D` at an upsert sink).
///
/// A tombstone encodes as a null value; a row with a value encodes exactly as a `(key, value)`
/// pair of strings, so rows written before deletes existed read back unchanged.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Row {
    /// The row's key (for upsert tables, the primary key).
    pub key: String,
    /// The row's value; `None` deletes the key from an upsert table.
    pub value: Option<String>,
}

impl Row {
    /// A row with a value.
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Row {
        Row { key: key.into(), value: Some(value.into()) }
    }

    /// The deletion of `key` from an upsert table.
    pub fn tombstone(key: impl Into<String>) -> Row {
        Row { key: key.into(), value: None }
    }

    /// The value, or `""` for a tombstone (for messages and CSV, where a deletion shows empty).
    pub fn shown_value(&self) -> &str {
        self.value.as_deref().unwrap_or("")
    }
}
