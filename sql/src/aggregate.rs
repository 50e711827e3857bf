//! `GROUP BY` with `COUNT`, `SUM`, `MIN`, `MAX`, `AVG` and `HAVING`: Flink's unbounded group
//! aggregation, whose result is an updating table (`-U`/`+U` as a group's value changes, `-D`
//! when `HAVING` rejects a group it accepted before).
//!
//! Binding rewrites the select list and `HAVING` over the aggregation's output row: the group
//! keys first, then one column per aggregate call. The accumulator of a group is a [`Row`]:
//! its key values, how many rows it holds, then each call's state.

use sluice_engine::api::changelog::RetractableAggregate;
use sqlparser::ast;
use sqlparser::tokenizer::Location;

use crate::expr::{self, Expr, Scope};
use crate::parse::SqlError;
use sluice_engine::record::Record;

use crate::value::{Row, SqlType, Value};

/// An aggregate function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    /// `COUNT(*)`
    CountStar,
    /// `COUNT(x)`: non-null values.
    Count,
    /// `SUM(x)`
    Sum,
    /// `MIN(x)`
    Min,
    /// `MAX(x)`
    Max,
    /// `AVG(x)` of integers: an integer, as in Flink.
    Avg,
}

/// One aggregate call: the function and its argument over the input row.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The function.
    pub function: Function,
    /// Its argument (`COUNT(*)`: none).
    pub arg: Option<Expr>,
    /// `COUNT(DISTINCT x)`: distinct non-null values are counted.
    pub distinct: bool,
    /// `FILTER (WHERE p)`: only rows where `p` is TRUE are aggregated.
    pub filter: Option<Expr>,
}

/// A bound `GROUP BY`: keys and calls over the input, `HAVING` over the output row.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupBy {
    /// The group keys.
    pub keys: Vec<Expr>,
    /// The aggregate calls.
    pub calls: Vec<Call>,
    /// `HAVING`, over the output row (keys, then calls).
    pub having: Option<Expr>,
}

fn function_of(name: &str) -> Option<Function> {
    Some(match name {
        "COUNT" => Function::Count,
        "SUM" => Function::Sum,
        "MIN" => Function::Min,
        "MAX" => Function::Max,
        "AVG" => Function::Avg,
        _ => return None,
    })
}

/// What binding an expression over the aggregation's output needs: the group keys as written,
/// the input scope, and the calls found so far (with their types).
pub struct Grouping<'a> {
    /// The `GROUP BY` expressions.
    pub key_exprs: &'a [ast::Expr],
    /// Their types.
    pub key_types: Vec<SqlType>,
    /// The input's columns.
    pub input: &'a Scope,
    /// The calls, in the order first met.
    pub calls: Vec<(Call, SqlType, String)>,
    /// The group window among the keys (legacy `GROUP BY SESSION(…)`): its auxiliary functions
    /// name its columns.
    pub window: Option<&'a crate::group_window::GroupWindow>,
}

impl Grouping<'_> {
    /// `expr` with each group key and each aggregate call replaced by a column `$k<i>` or
    /// `$a<j>` of the output row.
    pub fn rewrite(&mut self, expr: &ast::Expr, at: Location) -> Result<ast::Expr, SqlError> {
        if let Some(window) = self.window
            && let Some(column) = window.auxiliary(expr, at)?
        {
            return self.rewrite(&column, at);
        }
        if let Some(index) = self.key_exprs.iter().position(|key| key == expr) {
            return Ok(ident(&format!("$k{index}")));
        }
        let boxed = |this: &mut Self, inner: &ast::Expr| this.rewrite(inner, at).map(Box::new);
        Ok(match expr {
            ast::Expr::Function(function) => match self.call(function, at)? {
                Some(index) => ident(&format!("$a{index}")),
                None => expr.clone(),
            },
            ast::Expr::BinaryOp { left, op, right } => {
                ast::Expr::BinaryOp { left: boxed(self, left)?, op: op.clone(), right: boxed(self, right)? }
            }
            ast::Expr::UnaryOp { op, expr: inner } => ast::Expr::UnaryOp { op: *op, expr: boxed(self, inner)? },
            ast::Expr::Nested(inner) => ast::Expr::Nested(boxed(self, inner)?),
            ast::Expr::IsNull(inner) => ast::Expr::IsNull(boxed(self, inner)?),
            ast::Expr::IsNotNull(inner) => ast::Expr::IsNotNull(boxed(self, inner)?),
            ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) => {
                return Err(SqlError::at(at, format!("`{expr}` is neither in GROUP BY nor in an aggregate")));
            }
            ast::Expr::Case { .. } => {
                return Err(SqlError::at(at, format!("unsupported: CASE over a grouped row (`{expr}`)")));
            }
            other => other.clone(),
        })
    }

    /// The index of `function`'s call if it is an aggregate (registering it), else `None`.
    fn call(&mut self, function: &ast::Function, at: Location) -> Result<Option<usize>, SqlError> {
        let name = function.name.to_string().to_ascii_uppercase();
        let Some(aggregate) = function_of(&name) else { return Ok(None) };
        let ast::FunctionArguments::List(list) = &function.args else {
            return Err(SqlError::at(at, format!("unsupported call of {name}")));
        };
        if !list.clauses.is_empty() || function.over.is_some() || !function.within_group.is_empty() {
            return Err(SqlError::at(at, format!("unsupported: clauses or OVER in {name}")));
        }
        let distinct = matches!(list.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct));
        if distinct && aggregate != Function::Count {
            return Err(SqlError::at(at, format!("unsupported: DISTINCT in {name} (Sluice has COUNT(DISTINCT …))")));
        }
        let filter = match &function.filter {
            Some(predicate) => match expr::bind(self.input, predicate, at)? {
                (bound, SqlType::Boolean) => Some(bound),
                (_, ty) => return Err(SqlError::at(at, format!("FILTER (WHERE {predicate}) is {ty}, not BOOLEAN"))),
            },
            None => None,
        };
        let (call, ty) = match (aggregate, list.args.as_slice()) {
            (Function::Count, [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)]) if !distinct => {
                (Call { function: Function::CountStar, arg: None, distinct, filter }, SqlType::BigInt)
            }
            (_, [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))]) => {
                let (bound, ty) = expr::bind(self.input, arg, at)?;
                let ty = result_type(aggregate, &ty, &name, at)?;
                (Call { function: aggregate, arg: Some(bound), distinct, filter }, ty)
            }
            _ => return Err(SqlError::at(at, format!("{name} takes one argument"))),
        };
        let text = function.to_string();
        if let Some(index) = self.calls.iter().position(|(_, _, known)| *known == text) {
            return Ok(Some(index));
        }
        self.calls.push((call, ty, text));
        Ok(Some(self.calls.len() - 1))
    }

    /// The output row's scope: `$k<i>` for the keys, `$a<j>` for the calls.
    pub fn output_scope(&self) -> Scope {
        let keys = self.key_types.iter().enumerate().map(|(index, ty)| (format!("$k{index}"), ty.clone()));
        let calls = self.calls.iter().enumerate().map(|(index, (_, ty, _))| (format!("$a{index}"), ty.clone()));
        Scope::of(None, keys.chain(calls).collect())
    }
}

fn ident(name: &str) -> ast::Expr {
    ast::Expr::Identifier(ast::Ident::new(name))
}

/// Flink's result type of an aggregate over `ty`.
fn result_type(function: Function, ty: &SqlType, name: &str, at: Location) -> Result<SqlType, SqlError> {
    match function {
        Function::Count | Function::CountStar => Ok(SqlType::BigInt),
        Function::Min | Function::Max if !matches!(ty, SqlType::Row(_)) => Ok(ty.clone()),
        Function::Sum if matches!(ty, SqlType::Int | SqlType::BigInt) => Ok(SqlType::BigInt),
        Function::Sum => match ty {
            SqlType::Decimal { scale, .. } => Ok(SqlType::Decimal { precision: 38, scale: *scale }),
            _ => Err(SqlError::at(at, format!("{name} of {ty}: not a number"))),
        },
        Function::Avg if matches!(ty, SqlType::Int | SqlType::BigInt) => Ok(ty.clone()),
        _ => Err(SqlError::at(at, format!("unsupported: {name} of {ty}"))),
    }
}

/// The aggregation a group runs: its keys and calls, and `HAVING`.
#[derive(Clone, Debug)]
pub struct Aggregation(pub GroupBy);

const KEY: usize = 0;
const COUNT: usize = 1;
const STATES: usize = 2;

fn add(sum: &Value, value: &Value, negate: bool) -> Value {
    let value = match (value, negate) {
        (Value::Int(number), true) => Value::Int(number.wrapping_neg()),
        (Value::Decimal { units, scale }, true) => Value::Decimal { units: units.wrapping_neg(), scale: *scale },
        (other, _) => other.clone(),
    };
    match (sum, &value) {
        (Value::Null, _) => value,
        (Value::Int(a), Value::Int(b)) => Value::Int(a.wrapping_add(*b)),
        (Value::Decimal { units: a, scale }, Value::Decimal { units: b, .. }) => {
            Value::Decimal { units: a.wrapping_add(*b), scale: *scale }
        }
        _ => sum.clone(),
    }
}

/// Adds `delta` rows holding `value` to a `COUNT(DISTINCT …)` state: a sorted list of
/// `(value, rows)` pairs, a pair dropped when no row holds its value any more.
fn count_distinct(state: &mut Value, value: Value, delta: i64) {
    let Value::Row(pairs) = state else { return };
    let position = pairs.binary_search_by(|pair| match pair {
        Value::Row(pair) => pair[0].cmp(&value),
        _ => std::cmp::Ordering::Less,
    });
    match position {
        Ok(index) => {
            let Value::Row(pair) = &mut pairs[index] else { return };
            let Value::Int(rows) = &mut pair[1] else { return };
            *rows += delta;
            if *rows <= 0 {
                pairs.remove(index);
            }
        }
        Err(index) if delta > 0 => pairs.insert(index, Value::Row(vec![value, Value::Int(delta)])),
        Err(_) => {
            panic!("invariant: a retracted row was aggregated before (COUNT(DISTINCT) has no row holding its value)")
        }
    }
}

impl Aggregation {
    fn state(call: &Call) -> Value {
        if call.distinct {
            // (value, how many rows hold it), sorted by value
            return Value::Row(Vec::new());
        }
        match call.function {
            Function::Count | Function::CountStar => Value::Int(0),
            // (sum, non-null count)
            Function::Sum | Function::Avg => Value::Row(vec![Value::Null, Value::Int(0)]),
            Function::Min | Function::Max => Value::Null,
        }
    }

    /// Folds `row` into `acc` (takes it back if `retract`); the calls `in_view` keep only a
    /// result there, their values being counted in views ([`GroupAggregation`]): a
    /// `COUNT(DISTINCT …)` its count, a `MIN` or `MAX` its extreme.
    fn fold(&self, acc: &mut Row, row: &Row, retract: bool, in_view: &dyn Fn(&Call) -> bool) {
        if acc.0.is_empty() {
            let keys = self.0.keys.iter().map(|key| key.eval(&row.0)).collect();
            acc.0 = vec![Value::Row(keys), Value::Int(0)];
            acc.0.extend(self.0.calls.iter().map(|call| match (in_view(call), call.distinct) {
                (true, true) => Value::Int(0),
                (true, false) => Value::Null,
                (false, _) => Aggregation::state(call),
            }));
        }
        let delta = if retract { -1 } else { 1 };
        if let Value::Int(count) = &mut acc.0[COUNT] {
            *count += delta;
        }
        for (index, call) in self.0.calls.iter().enumerate() {
            if in_view(call) || call.filter.as_ref().is_some_and(|filter| filter.eval(&row.0) != Value::Bool(true)) {
                continue;
            }
            let value = call.arg.as_ref().map_or(Value::Int(1), |arg| arg.eval(&row.0));
            if value == Value::Null {
                continue;
            }
            let state = &mut acc.0[STATES + index];
            if call.distinct {
                count_distinct(state, value, delta);
                continue;
            }
            match (call.function, state) {
                (Function::Count | Function::CountStar, Value::Int(count)) => *count += delta,
                (Function::Sum | Function::Avg, Value::Row(pair)) => {
                    pair[0] = add(&pair[0], &value, retract);
                    pair[1] = add(&pair[1], &Value::Int(1), retract);
                }
                (Function::Min | Function::Max, state) => {
                    assert!(
                        !retract,
                        "invariant: MIN and MAX in the accumulator see no retraction (over an input that retracts, GroupAggregation keeps them in views)"
                    );
                    let better = match call.function {
                        Function::Min => *state == Value::Null || value < *state,
                        _ => *state == Value::Null || value > *state,
                    };
                    if better {
                        *state = value;
                    }
                }
                _ => {}
            }
        }
    }

    /// The accumulator of two groups' rows together (windows that merge into a session): the
    /// older one's keys, counts and sums added, the extremes of both, distinct values united.
    pub fn merge(&self, older: Row, newer: Row) -> Row {
        if older.0.is_empty() || newer.0.is_empty() {
            return if older.0.is_empty() { newer } else { older };
        }
        let mut merged = older;
        merged.0[COUNT] = add(&merged.0[COUNT], &newer.0[COUNT], false);
        for (index, call) in self.0.calls.iter().enumerate() {
            let (state, other) = (&mut merged.0[STATES + index], &newer.0[STATES + index]);
            if call.distinct {
                let Value::Row(pairs) = other else { continue };
                for pair in pairs {
                    if let Value::Row(pair) = pair
                        && let [value, Value::Int(rows)] = pair.as_slice()
                    {
                        count_distinct(state, value.clone(), *rows);
                    }
                }
                continue;
            }
            match (call.function, other) {
                (Function::Count | Function::CountStar, _) => *state = add(state, other, false),
                (Function::Sum | Function::Avg, Value::Row(theirs)) => {
                    if let Value::Row(pair) = state {
                        pair[0] = add(&pair[0], &theirs[0], false);
                        pair[1] = add(&pair[1], &theirs[1], false);
                    }
                }
                (Function::Min | Function::Max, Value::Null) | (Function::Sum | Function::Avg, _) => {}
                (Function::Min | Function::Max, other) => {
                    let better = match call.function {
                        Function::Min => *state == Value::Null || other < state,
                        _ => *state == Value::Null || other > state,
                    };
                    if better {
                        *state = other.clone();
                    }
                }
            }
        }
        merged
    }

    /// The group's output row (keys, then results), before `HAVING`.
    pub fn output(&self, acc: &Row) -> Row {
        let Value::Row(keys) = &acc.0[KEY] else { return Row::default() };
        let mut row = keys.clone();
        for (index, call) in self.0.calls.iter().enumerate() {
            row.push(match (call.function, &acc.0[STATES + index]) {
                (_, Value::Row(values)) if call.distinct => Value::Int(values.len() as i64),
                (Function::Sum, Value::Row(pair)) if pair[1] != Value::Int(0) => pair[0].clone(),
                (Function::Sum, _) => Value::Null,
                (Function::Avg, Value::Row(pair)) => match (&pair[0], &pair[1]) {
                    (Value::Int(sum), Value::Int(count)) if *count != 0 => Value::Int(sum / count),
                    _ => Value::Null,
                },
                (_, state) => state.clone(),
            });
        }
        Row(row)
    }
}

impl RetractableAggregate for Aggregation {
    type In = Row;
    type Acc = Row;
    type Out = Row;

    fn accumulate(&self, acc: &mut Row, row: &Row) {
        self.fold(acc, row, false, &|_| false);
    }

    fn retract(&self, acc: &mut Row, row: &Row) {
        self.fold(acc, row, true, &|_| false);
    }

    fn count(&self, acc: &Row) -> i64 {
        match acc.0.get(COUNT) {
            Some(Value::Int(count)) => *count,
            _ => 0,
        }
    }

    fn result(&self, acc: &Row) -> Option<Row> {
        let row = self.output(acc);
        match &self.0.having {
            Some(having) if having.eval(&row.0) != Value::Bool(true) => None,
            _ => Some(row),
        }
    }
}

/// The engine's group aggregation of a `GROUP BY` (Flink's `GroupAggFunction` with its
/// `MapView`s): [`Aggregation`]'s accumulator, but a `COUNT(DISTINCT …)` keeps only its count
/// there, and over an input that retracts a `MIN` or `MAX` only its extreme (Flink's
/// `MinWithRetractAggFunction`); their values are counted in the group's map state, one entry
/// per value ([`RetractableAggregate::view_values`]), so a row costs the values it holds,
/// not the size of the group's views, and an extreme taken back is found again among the values
/// still held. Window aggregations (whose sessions merge sets) and the reference keep the sets in
/// the accumulator.
#[derive(Clone, Debug)]
pub struct GroupAggregation {
    /// The keys, calls and `HAVING`.
    pub aggregation: Aggregation,
    /// Whether the input retracts rows (is updating): `MIN` and `MAX` then keep views too.
    pub retracting: bool,
}

impl GroupAggregation {
    fn in_view(&self, call: &Call) -> bool {
        call.distinct || (self.retracting && matches!(call.function, Function::Min | Function::Max))
    }

    /// The viewed calls' values `row` adds to their views (filters and `NULL`s as in `fold`).
    fn views(&self, row: &Row) -> impl Iterator<Item = (u32, Value)> {
        let calls = self.aggregation.0.calls.iter().enumerate();
        calls.filter(|(_, call)| self.in_view(call)).filter_map(move |(index, call)| {
            if call.filter.as_ref().is_some_and(|filter| filter.eval(&row.0) != Value::Bool(true)) {
                return None;
            }
            let value = call.arg.as_ref().map_or(Value::Int(1), |arg| arg.eval(&row.0));
            (value != Value::Null).then_some((index as u32, value))
        })
    }
}

/// A viewed value, decoded (the engine hands back what [`GroupAggregation::view_values`]
/// encoded).
fn viewed(bytes: &[u8]) -> Value {
    let row = Row::from_bytes(bytes).expect("invariant: a view holds the values the aggregation encoded");
    row.0.into_iter().next().unwrap_or(Value::Null)
}

/// Whether `value` is a better `function` extreme than `state` (`NULL`: none yet).
fn better(function: Function, value: &Value, state: &Value) -> bool {
    *state == Value::Null || if function == Function::Min { value < state } else { value > state }
}

impl RetractableAggregate for GroupAggregation {
    type In = Row;
    type Acc = Row;
    type Out = Row;

    fn accumulate(&self, acc: &mut Row, row: &Row) {
        self.aggregation.fold(acc, row, false, &|call| self.in_view(call));
    }

    fn retract(&self, acc: &mut Row, row: &Row) {
        self.aggregation.fold(acc, row, true, &|call| self.in_view(call));
    }

    fn count(&self, acc: &Row) -> i64 {
        self.aggregation.count(acc)
    }

    fn result(&self, acc: &Row) -> Option<Row> {
        self.aggregation.result(acc)
    }

    fn view_values(&self, row: &Row) -> Vec<(u32, Vec<u8>)> {
        self.views(row).map(|(view, value)| (view, Row(vec![value]).to_bytes())).collect()
    }

    fn view_changed(&self, acc: &mut Row, view: u32, value: &[u8], entered: bool) -> bool {
        let call = &self.aggregation.0.calls[view as usize];
        let state = &mut acc.0[STATES + view as usize];
        match (call.distinct, state) {
            (true, Value::Int(count)) => *count += if entered { 1 } else { -1 },
            (false, state) => {
                let value = viewed(value);
                if entered && better(call.function, &value, state) {
                    *state = value;
                } else if !entered && *state == value {
                    // The extreme left: the next one is among the values still held.
                    return true;
                }
            }
            (true, _) => {}
        }
        false
    }

    fn view_rescanned(&self, acc: &mut Row, view: u32, values: Vec<&[u8]>) {
        let function = self.aggregation.0.calls[view as usize].function;
        let state = &mut acc.0[STATES + view as usize];
        *state = Value::Null;
        for value in values.into_iter().map(viewed) {
            if better(function, &value, state) {
                *state = value;
            }
        }
    }
}

/// The final groups of `rows`: what a batch run commits, and what streaming's updates end at.
pub fn evaluate(group_by: &GroupBy, rows: &[Row]) -> Vec<Row> {
    let aggregation = Aggregation(group_by.clone());
    let mut groups: std::collections::BTreeMap<Row, Row> = std::collections::BTreeMap::new();
    for row in rows {
        let key = Row(group_by.keys.iter().map(|key| key.eval(&row.0)).collect());
        aggregation.accumulate(groups.entry(key).or_default(), row);
    }
    groups.values().filter_map(|acc| aggregation.result(acc)).collect()
}
