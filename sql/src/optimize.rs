//! Rewrites of a bound plan that keep its meaning: a pure function of the plan, applied before
//! it is built, so every process builds the same dataflow.
//!
//! - **Projection fusion:** a projection over a projection is one projection whose expressions
//!   are the outer ones with the inner ones substituted for the columns they produce (Flink's
//!   `CalcMergeRule`). A view over a source's computed columns, an `INSERT`'s cast to its sink's
//!   types and the select list each add one; fused, a row is projected once.
//! - **Interval joins:** a join whose conditions bound its sides' time attributes from below and
//!   above becomes an interval join (Flink's `StreamPhysicalIntervalJoinRule`), whose state the
//!   watermark bounds ([`crate::join::intervals`]).

use crate::expr::Expr;
use crate::plan::{Node, Plan};

/// `plan` with every rewrite applied.
pub fn optimize(mut plan: Plan) -> Plan {
    for insert in plan.inserts.iter_mut().chain(&mut plan.explains) {
        let node = std::mem::replace(&mut insert.input.node, Node::Scan { table: String::new() });
        insert.input.node = fuse_projections(crate::join::intervals(node));
    }
    plan
}

/// `node` with each chain of projections fused into one.
pub fn fuse_projections(node: Node) -> Node {
    match node {
        Node::Project { input, exprs } => match fuse_projections(*input) {
            Node::Project { input: inner_input, exprs: inner } => {
                let exprs = exprs.iter().map(|expr| substitute(expr, &inner)).collect();
                Node::Project { input: inner_input, exprs }
            }
            input => Node::Project { input: Box::new(input), exprs },
        },
        Node::Filter { input, predicate } => Node::Filter { input: Box::new(fuse_projections(*input)), predicate },
        Node::Aggregate { input, group_by } => Node::Aggregate { input: Box::new(fuse_projections(*input)), group_by },
        Node::Join { left, right, left_keys, right_keys, left_width, times, bounds, outer } => Node::Join {
            left: Box::new(fuse_projections(*left)),
            right: Box::new(fuse_projections(*right)),
            left_keys,
            right_keys,
            left_width,
            times,
            bounds,
            outer,
        },
        Node::Rank { input, partition, order, limit, width } => {
            Node::Rank { input: Box::new(fuse_projections(*input)), partition, order, limit, width }
        }
        Node::Window { input, time, spec, width } => {
            Node::Window { input: Box::new(fuse_projections(*input)), time, spec, width }
        }
        Node::WindowAggregate { input, time, spec, group_by, width } => {
            Node::WindowAggregate { input: Box::new(fuse_projections(*input)), time, spec, group_by, width }
        }
        scan @ Node::Scan { .. } => scan,
    }
}

/// `expr` with each column `i` replaced by `columns[i]`.
fn substitute(expr: &Expr, columns: &[Expr]) -> Expr {
    expr.replace_columns(&|index| columns[index].clone())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::expr::Op;
    use crate::plan::evaluate;
    use crate::value::{Row, Value};

    fn project(input: Node, exprs: Vec<Expr>) -> Node {
        Node::Project { input: Box::new(input), exprs }
    }

    #[test]
    fn projections_over_projections_fuse_into_one_that_computes_the_same_rows() {
        let scan = Node::Scan { table: "t".to_string() };
        let doubled = Expr::Binary(Op::Mul, Box::new(Expr::Column(0)), Box::new(Expr::Literal(Value::Int(2))));
        let inner = project(scan.clone(), vec![doubled, Expr::Column(1)]);
        let filtered = Node::Filter {
            input: Box::new(inner),
            predicate: Expr::Binary(Op::Gt, Box::new(Expr::Column(0)), Box::new(Expr::Literal(Value::Int(2)))),
        };
        let middle = project(filtered, vec![Expr::Column(1), Expr::Column(0)]);
        let outer = project(middle, vec![Expr::Binary(Op::Add, Box::new(Expr::Column(1)), Box::new(Expr::Column(0)))]);
        let fused = fuse_projections(outer.clone());
        let Node::Project { input, .. } = &fused else { panic!("a projection on top") };
        let Node::Filter { input, .. } = input.as_ref() else { panic!("one projection above the filter") };
        assert!(matches!(input.as_ref(), Node::Project { input, .. } if **input == scan), "one below it: {fused:?}");
        let rows = (0..6).map(|n| Row(vec![Value::Int(n), Value::Int(10 * n)])).collect();
        let inputs = BTreeMap::from([("t".to_string(), rows)]);
        assert_eq!(evaluate(&fused, &inputs), evaluate(&outer, &inputs));
        assert_eq!(evaluate(&fused, &inputs).len(), 4);
    }
}
