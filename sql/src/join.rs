//! Regular equi-joins (`a JOIN b ON …`, or `FROM a, b WHERE …`; `LEFT`, `RIGHT` and `FULL`
//! outer): Flink's regular join. A join's row is its left row's columns, then its right row's.
//! An inner join of two append-only inputs is append-only; an outer join, or a join of an
//! updating input, is updating (the engine's changelog joins; see `crate::build`).
//!
//! A join's condition (its `ON`, and a `WHERE` over it) is split into conjuncts: an equality
//! between an expression of each side becomes a key pair, a conjunct of one side's columns goes
//! down to that side (as Flink's filter push-down does), any other filters the join's rows. Rows
//! whose key holds a `NULL` meet nothing, as SQL's `=` says. An outer join's `ON` differs
//! ([`attach_on`]): a conjunct goes down only to an inner side (an outer side keeps every row),
//! the other non-key conjuncts decide which rows are partners, and a `WHERE` stays above it.
//!
//! A join of two relations with time attributes whose conditions bound `left time − right time`
//! from below and above (`l.t BETWEEN r.t - INTERVAL '4' SECOND AND r.t`, or `>=`, `>`, `<=`, `<`
//! between the two times, each moved by an `INTERVAL`) is an interval join ([`intervals`], Flink's
//! rule): the same rows as the regular join filtered by those conditions, but a row is kept only
//! while the other side may still bring a partner (`sluice_engine::api::interval_join`). Its
//! result keeps the left side's time attribute ([`interval_time`]). Only inner joins become
//! interval joins.

use sluice_engine::api::interval_join::IntervalBounds;

use std::collections::BTreeMap;

use crate::expr::{Expr, Op};
use crate::node::{Node, Outer};
use crate::value::{Row, Value};

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

/// `node` with `conjunct` of a `WHERE` (or an inner join's `ON`) applied: a join key, a filter
/// pushed to the side it reads, or a filter above. Over an outer join it stays above: a
/// `WHERE` sees the padded rows.
pub fn attach(node: Node, conjunct: Expr) -> Node {
    let Node::Join { left, right, mut left_keys, mut right_keys, left_width, times, bounds, outer: None } = node else {
        return Node::Filter { input: Box::new(node), predicate: conjunct };
    };
    let reads_left = conjunct.reads(&|index| index < left_width);
    let reads_right = conjunct.reads(&|index| index >= left_width);
    let shift = |expr: &Expr| expr.remap(&|index| index - left_width);
    let join = |left, right, left_keys, right_keys| Node::Join {
        left,
        right,
        left_keys,
        right_keys,
        left_width,
        times,
        bounds,
        outer: None,
    };
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

/// `join`, an outer join, with `conjunct` of its `ON` applied: an equality of the two sides is
/// a key; a conjunct of an inner side's columns alone goes down to it (its rows that fail meet
/// nothing, as the `ON` says); any other is part of the condition two partners satisfy (an
/// outer side's rows that fail it are still in the result, padded).
pub fn attach_on(join: Node, conjunct: Expr) -> Node {
    let Node::Join { left, right, mut left_keys, mut right_keys, left_width, times, bounds, outer: Some(mut outer) } =
        join
    else {
        unreachable!("invariant: attach_on is given an outer join")
    };
    let reads_left = conjunct.reads(&|index| index < left_width);
    let reads_right = conjunct.reads(&|index| index >= left_width);
    let (mut left, mut right) = (left, right);
    match (reads_left, reads_right) {
        (true, false) if !outer.left => left = Box::new(attach(*left, conjunct)),
        (false, true) if !outer.right => {
            right = Box::new(attach(*right, conjunct.remap(&|index| index - left_width)));
        }
        _ => match key_pair(&conjunct, left_width).filter(|_| reads_left && reads_right) {
            Some((left_key, right_key)) => {
                left_keys.push(left_key);
                right_keys.push(right_key.remap(&|index| index - left_width));
            }
            None => {
                outer.condition = Some(match outer.condition.take() {
                    Some(condition) => Expr::And(Box::new(condition), Box::new(conjunct)),
                    None => conjunct,
                });
            }
        },
    }
    Node::Join { left, right, left_keys, right_keys, left_width, times, bounds, outer: Some(outer) }
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

/// `node` with each join whose conditions bound its sides' times from below and above made an
/// interval join: those conditions (the tightest of each) become its bounds; the others stay.
pub fn intervals(node: Node) -> Node {
    match node {
        Node::Filter { .. } => {
            let mut predicates = Vec::new();
            let mut base = node;
            while let Node::Filter { input, predicate } = base {
                predicates.push(predicate);
                base = *input;
            }
            let (base, rest) = bound(intervals(base), predicates);
            rest.into_iter().rev().fold(base, |input, predicate| Node::Filter { input: Box::new(input), predicate })
        }
        Node::Join { left, right, left_keys, right_keys, left_width, times, bounds, outer } => Node::Join {
            left: Box::new(intervals(*left)),
            right: Box::new(intervals(*right)),
            left_keys,
            right_keys,
            left_width,
            times,
            bounds,
            outer,
        },
        Node::Scan { .. } => node,
        Node::Project { input, exprs } => Node::Project { input: Box::new(intervals(*input)), exprs },
        Node::Aggregate { input, group_by } => Node::Aggregate { input: Box::new(intervals(*input)), group_by },
        Node::Rank { input, partition, order, limit, width } => {
            Node::Rank { input: Box::new(intervals(*input)), partition, order, limit, width }
        }
        Node::Window { input, time, spec, width } => {
            Node::Window { input: Box::new(intervals(*input)), time, spec, width }
        }
        Node::WindowAggregate { input, time, spec, group_by, width } => {
            Node::WindowAggregate { input: Box::new(intervals(*input)), time, spec, group_by, width }
        }
    }
}

/// The time attribute of `node`'s rows if it is an interval join (under filters, once its
/// conditions are made bounds): its left side's time, which the engine stamps each pair with.
pub fn interval_time(node: &Node) -> Option<usize> {
    let mut node = intervals(node.clone());
    while let Node::Filter { input, .. } = node {
        node = *input;
    }
    match node {
        Node::Join { times: Some((left_time, _)), bounds: Some(_), .. } => Some(left_time),
        _ => None,
    }
}

/// `base` and the filters above it (outermost first): if `base` is a join with times and the
/// filters bound them both ways, the interval join and the filters that are not bounds.
fn bound(base: Node, predicates: Vec<Expr>) -> (Node, Vec<Expr>) {
    let Node::Join { times: Some((left_time, right_time)), bounds: None, left_width, outer: None, .. } = base else {
        return (base, predicates);
    };
    let found: Vec<Option<Bound>> =
        predicates.iter().map(|predicate| time_bound(predicate, left_time, left_width + right_time)).collect();
    let lower = found.iter().flatten().filter_map(|bound| bound.lower()).max();
    let upper = found.iter().flatten().filter_map(|bound| bound.upper()).min();
    let (Some(lower), Some(upper)) = (lower, upper) else { return (base, predicates) };
    let rest = predicates.into_iter().zip(found).filter(|(_, bound)| bound.is_none()).map(|(p, _)| p).collect();
    let Node::Join { left, right, left_keys, right_keys, left_width, times, .. } = base else { unreachable!() };
    let bounds = Some(IntervalBounds { lower, upper });
    (Node::Join { left, right, left_keys, right_keys, left_width, times, bounds, outer: None }, rest)
}

/// A condition on `left time − right time`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bound {
    /// At least this.
    Lower(i64),
    /// At most this.
    Upper(i64),
}

impl Bound {
    fn lower(self) -> Option<i64> {
        match self {
            Bound::Lower(bound) => Some(bound),
            Bound::Upper(_) => None,
        }
    }

    fn upper(self) -> Option<i64> {
        match self {
            Bound::Upper(bound) => Some(bound),
            Bound::Lower(_) => None,
        }
    }
}

/// `predicate` as a bound on `left time − right time`, if it compares the two time columns
/// (each maybe moved by a constant): `l + p ≥ r + q` is `l − r ≥ q − p`.
fn time_bound(predicate: &Expr, left_time: usize, right_time: usize) -> Option<Bound> {
    let Expr::Binary(op, a, b) = predicate else { return None };
    let term = |expr: &Expr| -> Option<(bool, i64)> {
        let (column, offset) = match expr {
            Expr::Column(column) => (*column, 0),
            Expr::Binary(Op::Add, column, offset) => (column_of(column)?, int(offset)?),
            Expr::Binary(Op::Sub, column, offset) => (column_of(column)?, int(offset)?.checked_neg()?),
            _ => return None,
        };
        match column {
            _ if column == left_time => Some((true, offset)),
            _ if column == right_time => Some((false, offset)),
            _ => None,
        }
    };
    let ((a_left, p), (b_left, q)) = (term(a)?, term(b)?);
    if a_left == b_left {
        return None;
    }
    // With the left time on the left: `l OP r + (q − p)`; else `r OP l + …`, flipped.
    let (op, constant) = if a_left { (*op, q.checked_sub(p)?) } else { (flip(*op)?, p.checked_sub(q)?) };
    match op {
        Op::GtEq => Some(Bound::Lower(constant)),
        Op::Gt => Some(Bound::Lower(constant.checked_add(1)?)),
        Op::LtEq => Some(Bound::Upper(constant)),
        Op::Lt => Some(Bound::Upper(constant.checked_sub(1)?)),
        _ => None,
    }
}

/// `a OP b` as `b OP' a`.
fn flip(op: Op) -> Option<Op> {
    match op {
        Op::Lt => Some(Op::Gt),
        Op::LtEq => Some(Op::GtEq),
        Op::Gt => Some(Op::Lt),
        Op::GtEq => Some(Op::LtEq),
        _ => None,
    }
}

fn column_of(expr: &Expr) -> Option<usize> {
    match expr {
        Expr::Column(column) => Some(*column),
        _ => None,
    }
}

fn int(expr: &Expr) -> Option<i64> {
    match expr {
        Expr::Literal(Value::Int(value)) => Some(*value),
        _ => None,
    }
}

/// Whether `node` holds a join without keys (a cross join, which Sluice does not plan).
pub fn has_cross_join(node: &Node) -> bool {
    node.any(&|node| matches!(node, Node::Join { left_keys, .. } if left_keys.is_empty()))
}

/// The rows of an equi-join, by a hash of the right side's keys: the reference. An outer join's
/// partners also satisfy its condition, and its outer sides' rows without one are padded.
pub fn evaluate(
    (left, right): (&[Row], &[Row]),
    (left_keys, right_keys): (&[Expr], &[Expr]),
    left_width: usize,
    outer: Option<&Outer>,
) -> Vec<Row> {
    let key = |keys: &[Expr], row: &Row| -> Option<Vec<Value>> {
        let values: Vec<Value> = keys.iter().map(|key| key.eval(&row.0)).collect();
        (!values.contains(&Value::Null)).then_some(values)
    };
    let mut table: BTreeMap<Vec<Value>, Vec<usize>> = BTreeMap::new();
    for (index, row) in right.iter().enumerate() {
        if let Some(values) = key(right_keys, row) {
            table.entry(values).or_default().push(index);
        }
    }
    let condition = outer.and_then(|outer| outer.condition.as_ref());
    let mut matched = vec![false; right.len()];
    let mut rows = Vec::new();
    for row in left {
        let mut partners = 0;
        for &index in key(left_keys, row).and_then(|values| table.get(&values)).into_iter().flatten() {
            let pair = Row(row.0.iter().chain(&right[index].0).cloned().collect());
            if condition.is_none_or(|condition| condition.eval(&pair.0) == Value::Bool(true)) {
                matched[index] = true;
                partners += 1;
                rows.push(pair);
            }
        }
        if let Some(outer) = outer.filter(|outer| outer.left && partners == 0) {
            rows.push(Row(row.0.iter().cloned().chain(std::iter::repeat_n(Value::Null, outer.right_width)).collect()));
        }
    }
    if outer.is_some_and(|outer| outer.right) {
        let unmatched = right.iter().zip(matched).filter(|(_, matched)| !matched);
        rows.extend(
            unmatched.map(|(row, _)| Row(vec![Value::Null; left_width].into_iter().chain(row.0.clone()).collect())),
        );
    }
    rows
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::plan::{Plan, evaluate};
    use crate::plan_script;

    const DDL: &str = include_str!("../../scenarios/sql/nexmark/ddl.sql");

    fn planned(condition: &str) -> Plan {
        let script = format!(
            "{DDL}\nCREATE TABLE pairs (auction BIGINT, placed TIMESTAMP(3), opened TIMESTAMP(3)) WITH ('connector' = 'sluice');\n\
             INSERT INTO pairs SELECT B.auction, B.dateTime, A.dateTime FROM bid B JOIN auction A ON B.auction = A.id AND {condition};"
        );
        plan_script(&script).unwrap_or_else(|error| panic!("{error}"))
    }

    fn join_of(plan: &Plan) -> &Node {
        let mut node = &plan.inserts[0].input.node;
        while let Node::Project { input, .. } | Node::Filter { input, .. } = node {
            node = input;
        }
        node
    }

    fn bounds_of(plan: &Plan) -> Option<IntervalBounds> {
        let Node::Join { bounds, .. } = join_of(plan) else { panic!("a join: {:?}", plan.inserts[0].input.node) };
        *bounds
    }

    #[test]
    fn conditions_bounding_both_times_make_an_interval_join_of_the_same_rows() {
        let between = planned("B.dateTime BETWEEN A.dateTime AND A.dateTime + INTERVAL '10' SECOND");
        assert_eq!(bounds_of(&between), Some(IntervalBounds { lower: 0, upper: 10_000 }));
        let strict = planned(
            "B.dateTime > A.dateTime - INTERVAL '1' SECOND AND A.dateTime + INTERVAL '5' SECOND > B.dateTime \
             AND B.dateTime <= A.dateTime + INTERVAL '9' SECOND",
        );
        assert_eq!(bounds_of(&strict), Some(IntervalBounds { lower: -999, upper: 4999 }), "strict, flipped, tightest");
        // One bound only: a regular join, its condition a filter above it (Flink's rule too).
        let one = planned("B.dateTime >= A.dateTime");
        assert_eq!(bounds_of(&one), None);
        assert!(
            matches!(&one.inserts[0].input.node, Node::Project { input, .. } if matches!(**input, Node::Filter { .. }))
        );
        // Other conditions stay filters of the interval join.
        let mixed =
            planned("B.dateTime BETWEEN A.dateTime AND A.dateTime + INTERVAL '10' SECOND AND B.price > A.reserve");
        assert!(bounds_of(&mixed).is_some());
        // The interval join's rows are the regular join's filtered by its conditions.
        let sources = |plan: &Plan| -> BTreeMap<String, Vec<crate::value::Row>> {
            let crate::plan::SourceConnector::Nexmark(options) = &plan.sources["datagen"].connector else { panic!() };
            BTreeMap::from([("datagen".to_string(), crate::nexmark::events(options).collect())])
        };
        let inputs = sources(&between);
        let rows = evaluate(&between.inserts[0].input.node, &inputs);
        let Node::Join { left, right, left_keys, right_keys, left_width, times, .. } = join_of(&between).clone() else {
            unreachable!()
        };
        let regular = Node::Join { left, right, left_keys, right_keys, left_width, times, bounds: None, outer: None };
        let (placed, opened) = (times.unwrap().0, left_width + times.unwrap().1);
        let filtered: Vec<_> = evaluate(&regular, &inputs)
            .into_iter()
            .filter(|row| match (&row.0[placed], &row.0[opened]) {
                (Value::Timestamp(placed), Value::Timestamp(opened)) => (0..=10_000).contains(&(placed - opened)),
                _ => false,
            })
            .collect();
        assert!(!filtered.is_empty());
        assert_eq!(rows.len(), filtered.len());
    }

    #[test]
    fn an_interval_joins_left_time_stays_a_time_attribute_and_a_window_may_follow() {
        let window = |time: &str, condition: &str| {
            plan_script(&format!(
                "{DDL}\nCREATE TABLE counts (s TIMESTAMP(3), n BIGINT) WITH ('connector' = 'sluice');\n\
                 INSERT INTO counts SELECT TUMBLE_START({time}, INTERVAL '5' SECOND), COUNT(*) \
                 FROM bid B JOIN auction A ON B.auction = A.id AND {condition} \
                 GROUP BY TUMBLE({time}, INTERVAL '5' SECOND);"
            ))
        };
        let interval = "B.dateTime BETWEEN A.dateTime AND A.dateTime + INTERVAL '10' SECOND";
        let plan = window("B.dateTime", interval).unwrap_or_else(|error| panic!("{error}"));
        let windowed = |node: &Node| matches!(node, Node::WindowAggregate { input, .. } if input.any(&|n| matches!(n, Node::Join { bounds: Some(_), .. })));
        assert!(plan.inserts[0].input.node.any(&windowed), "{:?}", plan.inserts[0].input.node);
        let right_time = window("A.dateTime", interval).unwrap_err();
        assert!(right_time.message.contains("not a time attribute"), "only the left side's time is kept: {right_time}");
        let regular = window("B.dateTime", "B.dateTime >= A.dateTime").unwrap_err();
        assert!(regular.message.contains("not a time attribute"), "a regular join keeps none: {regular}");
    }

    fn outer_join(join: &str, on: &str, rest: &str) -> Result<Plan, crate::parse::SqlError> {
        plan_script(&format!(
            "{DDL}\nCREATE TABLE pairs (auction BIGINT, bidder BIGINT, price BIGINT, seller BIGINT, \
             PRIMARY KEY (auction, bidder, price) NOT ENFORCED) WITH ('connector' = 'sluice');\n\
             INSERT INTO pairs SELECT B.auction, B.bidder, B.price, A.seller FROM bid B {join} auction A ON {on} {rest};"
        ))
    }

    #[test]
    fn an_outer_join_keeps_its_outer_sides_conditions_in_the_join_and_pushes_only_the_inner_sides() {
        let on = "B.auction = A.id AND B.price > 100 AND A.category = 10 AND B.dateTime >= A.dateTime \
                  AND B.dateTime <= A.dateTime + INTERVAL '10' SECOND";
        let plan =
            outer_join("LEFT JOIN", on, "WHERE A.seller IS NULL OR B.price > 1000").unwrap_or_else(|e| panic!("{e}"));
        let mut node = &plan.inserts[0].input.node;
        while let Node::Project { input, .. } = node {
            node = input;
        }
        let Node::Filter { input: join, .. } = node else { panic!("the WHERE stays above: {node:?}") };
        let Node::Join { left, right, left_keys, outer: Some(outer), bounds, .. } = join.as_ref() else {
            panic!("an outer join: {join:?}")
        };
        assert_eq!((outer.left, outer.right, left_keys.len(), *bounds), (true, false, 1, None), "no interval join");
        assert!(matches!(**left, Node::Scan { .. } | Node::Project { .. }), "the outer side keeps every row: {left:?}");
        assert!(right.any(&|node| matches!(node, Node::Filter { .. })), "A.category = 10 goes down to the inner side");
        let condition = outer.condition.as_ref().map(ToString::to_string).unwrap_or_default();
        assert_eq!(condition.matches(" AND ").count(), 2, "the price and both time conditions: {condition}");
        assert!(crate::plan::is_updating(join) && crate::plan::needs_materializer(&plan.inserts[0]));
        let explained = crate::explain::explain(&plan, &plan.inserts);
        assert!(explained.contains("Join(joinType=[LeftOuterJoin], leftKeys="), "{explained}");
        // A full join pushes nothing; a right join pushes the left side's conditions.
        let ands = |plan: &Plan| match join_of(plan) {
            Node::Join { outer: Some(Outer { condition: Some(condition), .. }), .. } => {
                condition.to_string().matches(" AND ").count()
            }
            other => panic!("an outer join with a condition: {other:?}"),
        };
        let full = outer_join("FULL OUTER JOIN", on, "").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ands(&full), 3, "a full join pushes nothing down");
        let right_join = outer_join("RIGHT JOIN", on, "").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ands(&right_join), 2, "B.price > 100 goes down to the inner left side");
        let cross = outer_join("LEFT JOIN", "B.price > A.reserve", "").unwrap_err().message;
        assert!(cross.contains("cross join"), "{cross}");
    }

    #[test]
    fn an_outer_joins_rows_are_its_inner_joins_and_each_outer_row_without_partner_padded() {
        let plan = outer_join("LEFT JOIN", "B.auction = A.id AND B.price > A.initialBid", "")
            .unwrap_or_else(|e| panic!("{e}"));
        let crate::plan::SourceConnector::Nexmark(options) = &plan.sources["datagen"].connector else { panic!() };
        let inputs = BTreeMap::from([("datagen".to_string(), crate::nexmark::events(options).collect())]);
        let rows = evaluate(&plan.inserts[0].input.node, &inputs);
        let inner = plan_script(&format!(
            "{DDL}\nCREATE TABLE pairs (auction BIGINT, bidder BIGINT, price BIGINT, seller BIGINT) WITH ('connector' = 'sluice');\n\
             INSERT INTO pairs SELECT B.auction, B.bidder, B.price, A.seller FROM bid B JOIN auction A \
             ON B.auction = A.id AND B.price > A.initialBid;"
        ))
        .unwrap();
        let pairs = evaluate(&inner.inserts[0].input.node, &inputs);
        let bids = evaluate(&plan_script(&format!(
            "{DDL}\nCREATE TABLE b (auction BIGINT, bidder BIGINT, price BIGINT) WITH ('connector' = 'sluice');\nINSERT INTO b SELECT auction, bidder, price FROM bid;"
        ))
        .unwrap()
        .inserts[0]
            .input
            .node, &inputs);
        let padded = rows.iter().filter(|row| row.0[3] == Value::Null).count();
        assert!(padded > 0 && !pairs.is_empty(), "both kinds occur: {padded} padded, {} pairs", pairs.len());
        assert_eq!(rows.len() - padded, pairs.len(), "the pairs are the inner join's");
        // Each bid is padded exactly when the inner join pairs it with nothing.
        let paired: std::collections::BTreeSet<&[Value]> = pairs.iter().map(|row| &row.0[..3]).collect();
        let unpaired = bids.iter().filter(|row| !paired.contains(&row.0[..3])).count();
        assert_eq!(padded, unpaired);
    }
}
