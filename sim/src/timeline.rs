//! Timelines of a run (being written).
