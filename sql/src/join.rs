//! Regular inner equi-joins (`a JOIN b ON …`, or `FROM a, b WHERE …`) of append-only relations:
//! Flink's regular join, whose result over two append-only inputs is append-only. A join's row
//! is its left row's columns, then its right row's.
//!
//! A join's condition (its `ON`, and a `WHERE` over it) is split into conjuncts: an equality
//! between an expression of each side becomes a key pair, a conjunct of one side's columns goes
//! down to that side (as Flink's filter push-down does), any other filters the join's rows. Rows
//! whose key holds a `NULL` meet nothing, as SQL's `=` says.

use crate::expr::{Expr, Op};
use crate::node::Node;

/// The conjuncts of `predicate`: `a AND b AND c` as `[a, b, c]`.
pub fn conjuncts(predicate: Expr) -> Vec<Expr> {
    match predicate {
        Expr::And(left, right) => {
            let mut all = conjuncts(*left);
            all.extend(conjuncts(*right));
            all
        }
        other => vec![other],
    }
}

/// `node` with `conjunct` applied: a join key, a filter pushed to the side
/// it reads, or a filter above.
pub fn attach(node: Node, conjunct: Expr) -> Node {
    let Node::Join { left, right, mut left_keys, mut right_keys, left_width } = node else {
        return Node::Filter { input: Box::new(node), predicate: conjunct };
    };
    let reads_left = conjunct.reads(&|index| index < left_width);
    let reads_right = conjunct.reads(&|index| index >= left_width);
    let shift = |expr: &Expr| expr.remap(&|index| index - left_width);
    let join = |left, right, left_keys, right_keys| Node::Join { left, right, left_keys, right_keys, left_width };
    match (reads_left, reads_right) {
        (true, false) => join(Box::new(attach(*left, conjunct)), right, left_keys, right_keys),
        (false, true) => {
            let right = attach(*right, shift(&conjunct));
            join(left, Box::new(right), left_keys, right_keys)
        }
        (true, true) => match key_pair(&conjunct, left_width) {
            Some((left_key, right_key)) => {
                left_keys.push(left_key);
                right_keys.push(shift(&right_key));
                join(left, right, left_keys, right_keys)
            }
            None => Node::Filter { input: Box::new(join(left, right, left_keys, right_keys)), predicate: conjunct },
        },
        (false, false) => {
            Node::Filter { input: Box::new(join(left, right, left_keys, right_keys)), predicate: conjunct }
        }
    }
}

/// `a = b` with `a` over the left side's columns and `b` over the right's (either way round).
fn key_pair(conjunct: &Expr, left_width: usize) -> Option<(Expr, Expr)> {
    let Expr::Binary(Op::Eq, a, b) = conjunct else { return None };
    let left_only = |expr: &Expr| !expr.reads(&|index| index >= left_width);
    let right_only = |expr: &Expr| !expr.reads(&|index| index < left_width);
    if left_only(a) && right_only(b) {
        return Some((*a.clone(), *b.clone()));
    }
    (left_only(b) && right_only(a)).then(|| (*b.clone(), *a.clone()))
}

/// Whether `node` holds a join without keys (a cross join, which Sluice does not plan).
pub fn has_cross_join(node: &Node) -> bool {
    node.any(&|node| matches!(node, Node::Join { left_keys, .. } if left_keys.is_empty()))
}

/// The rows of an inner equi-join, by a hash of the right side's keys: the reference.
pub fn evaluate(
    left: &[crate::value::Row],
    right: &[crate::value::Row],
    left_keys: &[Expr],
    right_keys: &[Expr],
) -> Vec<crate::value::Row> {
    use crate::value::{Row, Value};
    let key = |keys: &[Expr], row: &Row| -> Option<Vec<Value>> {
        let values: Vec<Value> = keys.iter().map(|key| key.eval(&row.0)).collect();
        (!values.contains(&Value::Null)).then_some(values)
    };
    let mut table: std::collections::BTreeMap<Vec<Value>, Vec<&Row>> = std::collections::BTreeMap::new();
    for row in right {
        if let Some(values) = key(right_keys, row) {
            table.entry(values).or_default().push(row);
        }
    }
    let mut rows = Vec::new();
    for row in left {
        let Some(values) = key(left_keys, row) else { continue };
        for other in table.get(&values).into_iter().flatten() {
            rows.push(Row(row.0.iter().chain(&other.0).cloned().collect()));
        }
    }
    rows
}
