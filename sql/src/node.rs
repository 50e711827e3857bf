//! The relational nodes a plan is made of: what each operator chain computes.

use sluice_engine::api::interval_join::IntervalBounds;

use crate::aggregate::GroupBy;
use crate::expr::Expr;
use crate::topn::Order;
use crate::window::WindowSpec;

/// A relational node: what an operator chain computes.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// Reads a source table's physical rows.
    Scan {
        /// The table.
        table: String,
    },
    /// Keeps the rows where the predicate is TRUE.
    Filter {
        /// The input.
        input: Box<Node>,
        /// The predicate.
        predicate: Expr,
    },
    /// Flink's unbounded group aggregation: an updating relation of one row per group (the
    /// group keys, then the aggregates), filtered by `HAVING`.
    Aggregate {
        /// The input (append-only).
        input: Box<Node>,
        /// Keys, calls and `HAVING`.
        group_by: GroupBy,
    },
    /// A window table function: each row once per window it is in, with the window's start,
    /// end and time (`end` − 1 ms) after its columns. Append-only.
    Window {
        /// The input (append-only).
        input: Box<Node>,
        /// The time attribute column the windows are of.
        time: usize,
        /// The windows.
        spec: WindowSpec,
        /// The input's columns.
        width: usize,
    },
    /// Flink's window aggregation: a group aggregation over a window table function's rows
    /// grouped by `window_start` and `window_end` (and other keys), one final row per window and
    /// group once the watermark passes the window's end. Append-only.
    WindowAggregate {
        /// The window table function's input (append-only).
        input: Box<Node>,
        /// The time attribute column the windows are of.
        time: usize,
        /// The windows.
        spec: WindowSpec,
        /// Keys, calls and `HAVING` over the window function's rows: the input's `width`
        /// columns, then the window's start, end and time. Only keys read the window columns,
        /// each as it is.
        group_by: GroupBy,
        /// The input's columns.
        width: usize,
    },
    /// A regular inner equi-join of two append-only relations (see [`crate::join`]): each pair
    /// of rows with equal keys, none `NULL`, as the left row's columns then the right's; an
    /// interval join if it has `bounds`. Append-only.
    Join {
        /// The left input.
        left: Box<Node>,
        /// The right input.
        right: Box<Node>,
        /// The keys over the left row.
        left_keys: Vec<Expr>,
        /// The keys over the right row, one per left key.
        right_keys: Vec<Expr>,
        /// The left input's columns.
        left_width: usize,
        /// Each side's time attribute, if both have one: the left's column, the right's (as a
        /// column of the right row).
        times: Option<(usize, usize)>,
        /// An interval join's bounds on `left time − right time` (see [`crate::join`]), taken
        /// from its conditions over `times`; `None` for a regular join.
        bounds: Option<IntervalBounds>,
    },
    /// `ROW_NUMBER() OVER (PARTITION BY … ORDER BY …)` kept to `rn <= limit` (see
    /// [`crate::topn`]): each partition's first rows in the order, each with its number after
    /// its columns. Updating.
    Rank {
        /// The input (append-only).
        input: Box<Node>,
        /// The partition keys.
        partition: Vec<Expr>,
        /// The order within a partition.
        order: Order,
        /// How many rows a partition keeps: set by the enclosing query's filter on the number
        /// (a rank without one is refused).
        limit: Option<usize>,
        /// The input's columns (the number is column `width`).
        width: usize,
    },
    /// Computes a row of expressions from each row.
    Project {
        /// The input.
        input: Box<Node>,
        /// One expression per output column.
        exprs: Vec<Expr>,
    },
}

impl Node {
    /// Whether `matches` holds for this node or any node below it.
    pub fn any(&self, matches: &dyn Fn(&Node) -> bool) -> bool {
        if matches(self) {
            return true;
        }
        match self {
            Node::Scan { .. } => false,
            Node::Join { left, right, .. } => left.any(matches) || right.any(matches),
            Node::Rank { input, .. }
            | Node::Filter { input, .. }
            | Node::Project { input, .. }
            | Node::Aggregate { input, .. }
            | Node::Window { input, .. }
            | Node::WindowAggregate { input, .. } => input.any(matches),
        }
    }
}
