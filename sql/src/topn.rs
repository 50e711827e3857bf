//! Flink's Top-N: `SELECT … FROM (SELECT …, ROW_NUMBER() OVER (PARTITION BY k ORDER BY o) AS rn
//! FROM t) WHERE rn <= N`, the first `N` rows of each partition in the order, each with its row
//! number; with `N = 1` and `ORDER BY` a time, Flink's deduplication. Over an append-only input
//! the result is updating: a row that enters a partition's first `N` pushes the rows after it
//! down a place (`-U` then `+U` of each), and the `N`-th out.
//!
//! Rows equal in the order are ranked by their values (Flink ranks them by arrival, which a
//! distributed run does not make deterministic): the same rows get the same numbers in every
//! mode and run, as the oracle needs.

use std::cmp::Ordering;

use sluice_engine::api::changelog::{Change, RetractableAggregate};
use sqlparser::ast;
use sqlparser::tokenizer::Location;

use crate::expr::{self, Expr, Scope};
use crate::parse::SqlError;
use crate::value::{Row, Value};

/// The largest `N` a Top-N may keep per partition (its state holds that many rows).
pub const MAX_LIMIT: i64 = 10_000;

/// A partition's order: expressions, each ascending or descending.
#[derive(Clone, Debug, PartialEq)]
pub struct Order(pub Vec<(Expr, bool)>);

impl Order {
    /// Whether `a` comes before `b`: by the order's expressions (`NULL` first ascending, last
    /// descending, as Flink's defaults), then by the rows' values.
    pub fn compare(&self, a: &Row, b: &Row) -> Ordering {
        for (expr, descending) in &self.0 {
            let ordering = expr.eval(&a.0).cmp(&expr.eval(&b.0));
            let ordering = if *descending { ordering.reverse() } else { ordering };
            if ordering != Ordering::Equal {
                return ordering;
            }
        }
        a.cmp(b)
    }
}

/// The call `ROW_NUMBER() OVER (…)` bound over `scope`: its partition keys and order, or `None`
/// if `expr` is not one.
pub fn bind_row_number(scope: &Scope, expr: &ast::Expr, at: Location) -> Result<Option<(Vec<Expr>, Order)>, SqlError> {
    let ast::Expr::Function(function) = expr else { return Ok(None) };
    let name = function.name.to_string().to_ascii_uppercase();
    let Some(over) = &function.over else {
        return match name.as_str() {
            "ROW_NUMBER" | "RANK" | "DENSE_RANK" => Err(SqlError::at(at, format!("{name}() needs OVER (…)"))),
            _ => Ok(None),
        };
    };
    if name != "ROW_NUMBER" {
        return Err(SqlError::at(at, format!("unsupported: {name}() OVER; Sluice plans ROW_NUMBER() for Top-N")));
    }
    let ast::WindowType::WindowSpec(spec) = over else {
        return Err(SqlError::at(at, "unsupported: a named window"));
    };
    if spec.window_frame.is_some() || spec.order_by.is_empty() {
        return Err(SqlError::at(at, "ROW_NUMBER() OVER needs ORDER BY and takes no frame"));
    }
    let partition = spec
        .partition_by
        .iter()
        .map(|key| expr::bind(scope, key, at).map(|(bound, _)| bound))
        .collect::<Result<_, _>>()?;
    let mut order = Vec::new();
    for item in &spec.order_by {
        if item.options.nulls_first.is_some() {
            return Err(SqlError::at(at, "unsupported: NULLS FIRST or LAST in a Top-N's order"));
        }
        let (bound, _) = expr::bind(scope, &item.expr, at)?;
        order.push((bound, item.options.asc == Some(false)));
    }
    Ok(Some((partition, Order(order))))
}

/// The first `limit` rows of a partition, in order: the accumulator and result of the
/// engine's group aggregation (each kept row a `ROW` value).
#[derive(Clone, Debug)]
pub struct TopN {
    /// The order.
    pub order: Order,
    /// How many rows a partition keeps.
    pub limit: usize,
}

impl RetractableAggregate for TopN {
    type In = Row;
    type Acc = Row;
    type Out = Row;

    fn accumulate(&self, acc: &mut Row, row: &Row) {
        let position = acc.0.partition_point(|kept| match kept {
            Value::Row(kept) => self.order.compare(&Row(kept.clone()), row) != Ordering::Greater,
            _ => true,
        });
        if position < self.limit {
            acc.0.insert(position, Value::Row(row.0.clone()));
            acc.0.truncate(self.limit);
        }
    }

    fn retract(&self, _: &mut Row, _: &Row) {
        panic!("invariant: a Top-N runs over append-only input only (the planner refuses others)");
    }

    fn count(&self, acc: &Row) -> i64 {
        acc.0.len() as i64
    }

    fn result(&self, acc: &Row) -> Option<Row> {
        Some(acc.clone())
    }
}

/// A partition's change as changes of its ranked rows (each row with its number after its
/// columns): a `-U` of the old first rows, then a `+U` of the new.
pub fn ranked_changes(change: Change<Row>) -> Vec<Change<Row>> {
    let kind = change.kind;
    ranked(change.row.0.into_iter().filter_map(|row| match row {
        Value::Row(values) => Some(Row(values)),
        _ => None,
    }))
    .map(|row| Change { kind, row })
    .collect()
}

/// Rows in their order, each with its number (from 1) after its columns.
pub fn ranked(rows: impl Iterator<Item = Row>) -> impl Iterator<Item = Row> {
    rows.enumerate().map(|(index, mut row)| {
        row.0.push(Value::Int(index as i64 + 1));
        row
    })
}

/// The reference: each partition's rows sorted, the first `limit` ranked.
pub fn evaluate(rows: Vec<Row>, partition: &[Expr], order: &Order, limit: usize) -> Vec<Row> {
    let mut partitions: std::collections::BTreeMap<Vec<Value>, Vec<Row>> = std::collections::BTreeMap::new();
    for row in rows {
        partitions.entry(partition.iter().map(|key| key.eval(&row.0)).collect()).or_default().push(row);
    }
    partitions
        .into_values()
        .flat_map(|mut rows| {
            rows.sort_by(|a, b| order.compare(a, b));
            rows.truncate(limit);
            ranked(rows.into_iter()).collect::<Vec<_>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(price: i64, id: i64) -> Row {
        Row(vec![Value::Int(price), Value::Int(id)])
    }

    #[test]
    fn the_kept_rows_are_the_first_in_the_order_whatever_the_arrival() {
        let top = TopN { order: Order(vec![(Expr::Column(0), true)]), limit: 2 };
        let arrivals = [row(5, 1), row(9, 2), row(7, 3), row(9, 0), row(1, 4)];
        let mut acc = Row::default();
        for arrival in &arrivals {
            top.accumulate(&mut acc, arrival);
        }
        let kept: Vec<Row> = ranked_changes(Change::insert(acc)).into_iter().map(|change| change.row).collect();
        let expected = vec![
            Row(vec![Value::Int(9), Value::Int(0), Value::Int(1)]),
            Row(vec![Value::Int(9), Value::Int(2), Value::Int(2)]),
        ];
        // Ties in the order (price 9) are ranked by the rows' values, ascending.
        assert_eq!(kept, expected);
        assert_eq!(evaluate(arrivals.to_vec(), &[], &top.order, 2), expected, "the reference agrees");
    }
}
