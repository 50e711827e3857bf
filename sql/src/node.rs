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
    /// A regular equi-join (see [`crate::join`]): each pair of rows with equal keys, none
    /// `NULL`, as the left row's columns then the right's; an interval join if it has `bounds`;
    /// with `outer`, also each row of an outer side that has no partner, padded with `NULL`s.
    /// Append-only if it is inner and both its inputs are; else updating.
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
        /// An outer join's outer sides and the conditions of its `ON` that are not keys; `None`
        /// for an inner join (whose other conditions are filters above it).
        outer: Option<Outer>,
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

/// What makes a join outer: which sides keep their rows that meet no partner, and what else
/// two rows of the same key must satisfy to be partners.
#[derive(Clone, Debug, PartialEq)]
pub struct Outer {
    /// `LEFT` or `FULL`: every left row is in the result.
    pub left: bool,
    /// `RIGHT` or `FULL`: every right row is in the result.
    pub right: bool,
    /// The `ON` conditions that are neither keys nor pushed to the inner side, over the joined
    /// row's columns.
    pub condition: Option<Expr>,
    /// The right input's columns (a padded left row has as many `NULL`s).
    pub right_width: usize,
}

impl Outer {
    /// Flink's name of the join type.
    pub fn join_type(outer: Option<&Outer>) -> &'static str {
        match outer.map(|outer| (outer.left, outer.right)) {
            None | Some((false, false)) => "InnerJoin",
            Some((true, false)) => "LeftOuterJoin",
            Some((false, true)) => "RightOuterJoin",
            Some((true, true)) => "FullOuterJoin",
        }
    }
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
