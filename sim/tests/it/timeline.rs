//! Timeline snapshots (being written).
