//! Scalar expressions: bound from `sqlparser`'s AST against the columns in scope, typed as Flink
//! types them, and evaluated over a [`Row`].
//!
//! The surface so far: columns (`a`, `t.a`, a `ROW` column's field `bid.price`), literals
//! (whole, decimal, string, boolean, `NULL`), `+ - * /` and `%`/`MOD`, comparisons, `AND`, `OR`,
//! `NOT`, `IS [NOT] NULL`, `CASE`. `NULL` propagates as in SQL (three-valued logic for `AND`,
//! `OR`). Integer division by zero is `NULL` (Flink fails the job).

use sqlparser::ast::{self, BinaryOperator, UnaryOperator};
use sqlparser::tokenizer::Location;

use crate::functions::{self, Scalar};
use crate::parse::SqlError;
use crate::value::{MAX_DECIMAL_PRECISION, Row, SqlType, Value};

/// The columns an expression may name: the relation's columns and the name it goes by.
#[derive(Clone, Debug, PartialEq)]
pub struct Scope {
    /// The relation's name or alias, for `name.column`.
    pub qualifier: Option<String>,
    /// Its columns.
    pub columns: Vec<(String, SqlType)>,
    /// A join's relations: each one's name or alias and its columns' range in `columns`.
    pub tables: Vec<(String, std::ops::Range<usize>)>,
}

impl Scope {
    /// The scope of one relation's columns, named `qualifier`.
    pub fn of(qualifier: Option<String>, columns: Vec<(String, SqlType)>) -> Scope {
        Scope { qualifier, columns, tables: Vec::new() }
    }

    /// The scope of a join's row: `left`'s columns, then `right`'s, each named as before.
    pub fn joined(left: Scope, right: Scope) -> Scope {
        let tables_of = |scope: Scope, shift: usize| -> Vec<(String, std::ops::Range<usize>)> {
            if !scope.tables.is_empty() {
                return scope
                    .tables
                    .into_iter()
                    .map(|(name, range)| (name, range.start + shift..range.end + shift))
                    .collect();
            }
            scope.qualifier.map(|name| (name, shift..shift + scope.columns.len())).into_iter().collect()
        };
        let width = left.columns.len();
        let mut columns = left.columns.clone();
        columns.extend(right.columns.iter().cloned());
        let mut tables = tables_of(left, 0);
        tables.extend(tables_of(right, width));
        Scope { qualifier: None, columns, tables }
    }
}

/// An arithmetic or comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`, `MOD`
    Mod,
    /// `=`
    Eq,
    /// `<>`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
}

/// A bound expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// The input's column.
    Column(usize),
    /// A field of a `ROW` value.
    Field(Box<Expr>, usize),
    /// A constant.
    Literal(Value),
    /// An arithmetic operator or a comparison.
    Binary(Op, Box<Expr>, Box<Expr>),
    /// `AND`
    And(Box<Expr>, Box<Expr>),
    /// `OR`
    Or(Box<Expr>, Box<Expr>),
    /// `NOT`
    Not(Box<Expr>),
    /// `IS NULL` (or `IS NOT NULL` when negated).
    IsNull(Box<Expr>, bool),
    /// `CASE WHEN c THEN r … ELSE e END` (an operand form is bound as equalities).
    Case(Vec<(Expr, Expr)>, Box<Expr>),
    /// A number widened to a decimal of this scale.
    Rescale(Box<Expr>, u8),
    /// A scalar function's call.
    Call(Scalar, Vec<Expr>),
}

/// Binds `expr` in `scope`: the bound expression and its type.
pub fn bind(scope: &Scope, expr: &ast::Expr, at: Location) -> Result<(Expr, SqlType), SqlError> {
    let fail = |message: String| Err(SqlError::at(at, message));
    match expr {
        ast::Expr::Identifier(ident) => column(scope, &ident.value, at),
        ast::Expr::CompoundIdentifier(parts) => compound(scope, parts, at),
        ast::Expr::Nested(inner) => bind(scope, inner, at),
        ast::Expr::Value(value) => literal(&value.value, at),
        ast::Expr::BinaryOp { left, op, right } => binary(scope, left, op, right, at),
        ast::Expr::UnaryOp { op: UnaryOperator::Not, expr } => {
            let (inner, ty) = bind(scope, expr, at)?;
            expect_boolean(&ty, expr, at)?;
            Ok((Expr::Not(Box::new(inner)), SqlType::Boolean))
        }
        ast::Expr::UnaryOp { op: UnaryOperator::Minus, expr } => {
            let zero = ast::Expr::value(ast::Value::Number("0".to_string(), false));
            binary(scope, &zero, &BinaryOperator::Minus, expr, at)
        }
        ast::Expr::IsNull(inner) | ast::Expr::IsNotNull(inner) => {
            let (bound, _) = bind(scope, inner, at)?;
            Ok((Expr::IsNull(Box::new(bound), matches!(expr, ast::Expr::IsNotNull(_))), SqlType::Boolean))
        }
        ast::Expr::Case { operand, conditions, else_result, .. } => {
            case(scope, operand.as_deref(), conditions, else_result.as_deref(), at)
        }
        ast::Expr::Function(function) => call(scope, function, at),
        ast::Expr::InList { expr, list, negated } => in_list(scope, expr, list, *negated, at),
        ast::Expr::Between { expr, negated, low, high } => {
            let (above, _) = binary(scope, expr, &BinaryOperator::GtEq, low, at)?;
            let (below, _) = binary(scope, expr, &BinaryOperator::LtEq, high, at)?;
            let both = Expr::And(Box::new(above), Box::new(below));
            Ok((if *negated { Expr::Not(Box::new(both)) } else { both }, SqlType::Boolean))
        }
        other => fail(format!("unsupported expression `{other}`")),
    }
}

fn column(scope: &Scope, name: &str, at: Location) -> Result<(Expr, SqlType), SqlError> {
    column_in(scope, name, 0..scope.columns.len(), at)
}

/// The column called `name` among `range` of the scope's columns.
fn column_in(
    scope: &Scope,
    name: &str,
    range: std::ops::Range<usize>,
    at: Location,
) -> Result<(Expr, SqlType), SqlError> {
    let mut found = range.clone().filter(|index| scope.columns[*index].0 == name);
    if let Some(index) = found.next() {
        if !scope.tables.is_empty() && found.next().is_some() {
            return Err(SqlError::at(at, format!("column `{name}` is ambiguous: name its table (`t.{name}`)")));
        }
        return Ok((Expr::Column(index), scope.columns[index].1.clone()));
    }
    let hint = match scope.columns.iter().find(|(column, _)| column.eq_ignore_ascii_case(name)) {
        Some((column, _)) => format!(" (Flink's names are case-sensitive: did you mean `{column}`?)"),
        None => {
            let names: Vec<&str> = scope.columns.iter().map(|(column, _)| column.as_str()).collect();
            format!("; the columns are {}", names.join(", "))
        }
    };
    Err(SqlError::at(at, format!("unknown column `{name}`{hint}")))
}

fn compound(scope: &Scope, parts: &[ast::Ident], at: Location) -> Result<(Expr, SqlType), SqlError> {
    let names: Vec<&str> = parts.iter().map(|part| part.value.as_str()).collect();
    let (base, fields) = match names.as_slice() {
        [qualifier, column_name, rest @ ..] if scope.qualifier.as_deref() == Some(*qualifier) => {
            (column(scope, column_name, at)?, rest)
        }
        [qualifier, column_name, rest @ ..] if scope.tables.iter().any(|(name, _)| name == qualifier) => {
            let range = scope.tables.iter().find(|(name, _)| name == qualifier).map(|(_, range)| range.clone());
            (column_in(scope, column_name, range.unwrap_or_default(), at)?, rest)
        }
        [column_name, rest @ ..] => (column(scope, column_name, at)?, rest),
        [] => return Err(SqlError::at(at, "an empty name")),
    };
    fields.iter().try_fold(base, |(expr, ty), field| {
        let SqlType::Row(row) = &ty else {
            return Err(SqlError::at(at, format!("`{}` is not a ROW: it has no field `{field}`", names.join("."))));
        };
        let index = row
            .iter()
            .position(|(name, _)| name == field)
            .ok_or_else(|| SqlError::at(at, format!("ROW `{}` has no field `{field}`", names.join("."))))?;
        Ok((Expr::Field(Box::new(expr), index), row[index].1.clone()))
    })
}

fn literal(value: &ast::Value, at: Location) -> Result<(Expr, SqlType), SqlError> {
    let typed = |value: Value, ty: SqlType| Ok((Expr::Literal(value), ty));
    match value {
        ast::Value::Number(text, _) => match text.split_once('.') {
            None => match text.parse::<i64>() {
                Ok(number) if i32::try_from(number).is_ok() => typed(Value::Int(number), SqlType::Int),
                Ok(number) => typed(Value::Int(number), SqlType::BigInt),
                Err(_) => Err(SqlError::at(at, format!("the number {text} is out of BIGINT's range"))),
            },
            Some((whole, fraction)) => {
                let digits = format!("{whole}{fraction}");
                let units: i128 =
                    digits.parse().map_err(|_| SqlError::at(at, format!("the number {text} is out of range")))?;
                let precision = digits.trim_start_matches('0').len().max(fraction.len()).max(1);
                if precision > usize::from(MAX_DECIMAL_PRECISION) {
                    return Err(SqlError::at(at, format!("the number {text} has more than 38 digits")));
                }
                let scale = fraction.len() as u8;
                typed(Value::Decimal { units, scale }, SqlType::Decimal { precision: precision as u8, scale })
            }
        },
        ast::Value::SingleQuotedString(text) => typed(Value::Str(text.clone()), SqlType::Varchar),
        ast::Value::Boolean(value) => typed(Value::Bool(*value), SqlType::Boolean),
        ast::Value::Null => typed(Value::Null, SqlType::Int),
        other => Err(SqlError::at(at, format!("unsupported literal {other}"))),
    }
}

fn expect_boolean(ty: &SqlType, expr: &ast::Expr, at: Location) -> Result<(), SqlError> {
    match ty {
        SqlType::Boolean => Ok(()),
        other => Err(SqlError::at(at, format!("`{expr}` is {other}, where a BOOLEAN is needed"))),
    }
}

fn binary(
    scope: &Scope,
    left: &ast::Expr,
    op: &BinaryOperator,
    right: &ast::Expr,
    at: Location,
) -> Result<(Expr, SqlType), SqlError> {
    let (l, lt) = bind(scope, left, at)?;
    if let ast::Expr::Interval(interval) = right {
        return shift_time((l, lt), op, interval, at);
    }
    let (r, rt) = bind(scope, right, at)?;
    let op = match op {
        BinaryOperator::And | BinaryOperator::Or => {
            expect_boolean(&lt, left, at)?;
            expect_boolean(&rt, right, at)?;
            let (l, r) = (Box::new(l), Box::new(r));
            let expr = if *op == BinaryOperator::And { Expr::And(l, r) } else { Expr::Or(l, r) };
            return Ok((expr, SqlType::Boolean));
        }
        BinaryOperator::Plus => Op::Add,
        BinaryOperator::Minus => Op::Sub,
        BinaryOperator::Multiply => Op::Mul,
        BinaryOperator::Divide => Op::Div,
        BinaryOperator::Modulo => Op::Mod,
        BinaryOperator::Eq => Op::Eq,
        BinaryOperator::NotEq => Op::NotEq,
        BinaryOperator::Lt => Op::Lt,
        BinaryOperator::LtEq => Op::LtEq,
        BinaryOperator::Gt => Op::Gt,
        BinaryOperator::GtEq => Op::GtEq,
        other => return Err(SqlError::at(at, format!("unsupported operator {other}"))),
    };
    typed_binary(op, (l, lt), (r, rt), &format!("{left} {op:?} {right}"), at)
}

/// `ts + INTERVAL …` and `ts - INTERVAL …`: a timestamp moved by whole units.
fn shift_time(
    (l, lt): (Expr, SqlType),
    op: &BinaryOperator,
    interval: &ast::Interval,
    at: Location,
) -> Result<(Expr, SqlType), SqlError> {
    let op = match op {
        BinaryOperator::Plus => Op::Add,
        BinaryOperator::Minus => Op::Sub,
        other => return Err(SqlError::at(at, format!("unsupported: {other} of an INTERVAL"))),
    };
    if lt != SqlType::Timestamp {
        return Err(SqlError::at(at, format!("an INTERVAL moves a TIMESTAMP, not a {lt}")));
    }
    let millis =
        interval_millis(interval).ok_or_else(|| SqlError::at(at, format!("unsupported interval `{interval}`")))?;
    Ok((Expr::Binary(op, Box::new(l), Box::new(Expr::Literal(Value::Int(millis)))), SqlType::Timestamp))
}

fn typed_binary(
    op: Op,
    (l, lt): (Expr, SqlType),
    (r, rt): (Expr, SqlType),
    text: &str,
    at: Location,
) -> Result<(Expr, SqlType), SqlError> {
    let comparison = matches!(op, Op::Eq | Op::NotEq | Op::Lt | Op::LtEq | Op::Gt | Op::GtEq);
    let (Some(left), Some(right)) = (lt.as_decimal(), rt.as_decimal()) else {
        if comparison && lt == rt && !matches!(lt, SqlType::Row(_)) {
            return Ok((Expr::Binary(op, Box::new(l), Box::new(r)), SqlType::Boolean));
        }
        return Err(SqlError::at(at, format!("cannot apply {op:?} to {lt} and {rt} in `{text}`")));
    };
    let integers = matches!(lt, SqlType::Int | SqlType::BigInt) && matches!(rt, SqlType::Int | SqlType::BigInt);
    let expr = |l, r| Expr::Binary(op, Box::new(l), Box::new(r));
    if comparison {
        return Ok((expr(l, r), SqlType::Boolean));
    }
    if integers {
        let ty = if lt == SqlType::Int && rt == SqlType::Int { SqlType::Int } else { SqlType::BigInt };
        return Ok((expr(l, r), ty));
    }
    let ((p1, s1), (p2, s2)) = (left, right);
    let decimal =
        |precision: u8, scale: u8| SqlType::Decimal { precision: precision.min(MAX_DECIMAL_PRECISION), scale };
    match op {
        // Flink's rules (LogicalTypeMerging): the operands aligned to the larger scale.
        Op::Add | Op::Sub => {
            let scale = s1.max(s2);
            let precision = (p1 - s1).max(p2 - s2) + scale + 1;
            Ok((expr(Expr::Rescale(Box::new(l), scale), Expr::Rescale(Box::new(r), scale)), decimal(precision, scale)))
        }
        Op::Mul if s1 + s2 <= MAX_DECIMAL_PRECISION => Ok((expr(l, r), decimal(p1 + p2 + 1, s1 + s2))),
        Op::Mul => Err(SqlError::at(at, format!("unsupported: a product of scale {} (over 38) in `{text}`", s1 + s2))),
        _ => Err(SqlError::at(at, format!("unsupported: {op:?} of decimals in `{text}`"))),
    }
}

fn case(
    scope: &Scope,
    operand: Option<&ast::Expr>,
    conditions: &[ast::CaseWhen],
    otherwise: Option<&ast::Expr>,
    at: Location,
) -> Result<(Expr, SqlType), SqlError> {
    let mut arms = Vec::new();
    let mut result_type: Option<SqlType> = None;
    for arm in conditions {
        let condition = match operand {
            Some(operand) => ast::Expr::BinaryOp {
                left: Box::new(operand.clone()),
                op: BinaryOperator::Eq,
                right: Box::new(arm.condition.clone()),
            },
            None => arm.condition.clone(),
        };
        let (when, ty) = bind(scope, &condition, at)?;
        expect_boolean(&ty, &condition, at)?;
        let (then, ty) = bind(scope, &arm.result, at)?;
        result_type = Some(merge_case_type(result_type, ty, &arm.result, at)?);
        arms.push((when, then));
    }
    let otherwise = match otherwise {
        Some(expr) => {
            let (bound, ty) = bind(scope, expr, at)?;
            result_type = Some(merge_case_type(result_type, ty, expr, at)?);
            bound
        }
        None => Expr::Literal(Value::Null),
    };
    let ty = result_type.ok_or_else(|| SqlError::at(at, "a CASE needs a WHEN"))?;
    Ok((Expr::Case(arms, Box::new(otherwise)), ty))
}

fn merge_case_type(so_far: Option<SqlType>, ty: SqlType, expr: &ast::Expr, at: Location) -> Result<SqlType, SqlError> {
    match so_far {
        None => Ok(ty),
        Some(so_far) if so_far == ty => Ok(ty),
        Some(SqlType::Int) if ty == SqlType::BigInt => Ok(ty),
        Some(SqlType::BigInt) if ty == SqlType::Int => Ok(SqlType::BigInt),
        Some(so_far) => Err(SqlError::at(at, format!("CASE results differ in type: {so_far} and {ty} (`{expr}`)"))),
    }
}

/// `COALESCE(a, b, …, z)`: the first argument that is not `NULL`, as
/// `CASE WHEN a IS NOT NULL THEN a WHEN b IS NOT NULL THEN b … ELSE z END`.
fn coalesce(scope: &Scope, init: &[&ast::Expr], last: &ast::Expr, at: Location) -> Result<(Expr, SqlType), SqlError> {
    let mut arms = Vec::new();
    let mut result_type = None;
    for arg in init {
        let (bound, ty) = bind(scope, arg, at)?;
        result_type = Some(merge_case_type(result_type, ty, arg, at)?);
        arms.push((Expr::IsNull(Box::new(bound.clone()), true), bound));
    }
    let (otherwise, ty) = bind(scope, last, at)?;
    let ty = merge_case_type(result_type, ty, last, at)?;
    Ok((Expr::Case(arms, Box::new(otherwise)), ty))
}

fn call(scope: &Scope, function: &ast::Function, at: Location) -> Result<(Expr, SqlType), SqlError> {
    let name = function.name.to_string().to_ascii_uppercase();
    let ast::FunctionArguments::List(list) = &function.args else {
        return Err(SqlError::at(at, format!("unsupported call of {name}")));
    };
    let mut args = Vec::new();
    for arg in &list.args {
        match arg {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(expr)) => args.push(expr),
            other => return Err(SqlError::at(at, format!("unsupported argument `{other}` of {name}"))),
        }
    }
    if let ("MOD", [left, right]) = (name.as_str(), args.as_slice()) {
        return binary(scope, left, &BinaryOperator::Modulo, right, at);
    }
    if let ("COALESCE", [init @ .., last]) = (name.as_str(), args.as_slice()) {
        return coalesce(scope, init, last, at);
    }
    let bound = args.iter().map(|arg| bind(scope, arg, at)).collect::<Result<Vec<_>, _>>()?;
    let types: Vec<&SqlType> = bound.iter().map(|(_, ty)| ty).collect();
    let literals: Vec<Option<&str>> = bound
        .iter()
        .map(|(expr, _)| match expr {
            Expr::Literal(Value::Str(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    match functions::bind(&name, &types, &literals) {
        Some(Ok((function, ty))) => Ok((Expr::Call(function, bound.into_iter().map(|(expr, _)| expr).collect()), ty)),
        Some(Err(message)) => Err(SqlError::at(at, message)),
        None => Err(SqlError::at(at, format!("unsupported function {name}({} arguments)", args.len()))),
    }
}

/// `x [NOT] IN (a, b, …)`: `x = a OR x = b …` (three-valued, as Flink's).
fn in_list(
    scope: &Scope,
    expr: &ast::Expr,
    list: &[ast::Expr],
    negated: bool,
    at: Location,
) -> Result<(Expr, SqlType), SqlError> {
    let mut any: Option<Expr> = None;
    for item in list {
        let (equal, _) = binary(scope, expr, &BinaryOperator::Eq, item, at)?;
        any = Some(match any {
            Some(before) => Expr::Or(Box::new(before), Box::new(equal)),
            None => equal,
        });
    }
    let any = any.ok_or_else(|| SqlError::at(at, "IN () lists nothing"))?;
    Ok((if negated { Expr::Not(Box::new(any)) } else { any }, SqlType::Boolean))
}

/// An `INTERVAL 'n' unit` of whole units, in milliseconds.
pub fn interval_millis(interval: &ast::Interval) -> Option<i64> {
    let ast::Expr::Value(value) = interval.value.as_ref() else { return None };
    let (ast::Value::SingleQuotedString(text) | ast::Value::Number(text, _)) = &value.value else { return None };
    let count: i64 = text.trim().parse().ok()?;
    let unit = match interval.leading_field.as_ref()? {
        ast::DateTimeField::Second | ast::DateTimeField::Seconds => 1000,
        ast::DateTimeField::Minute | ast::DateTimeField::Minutes => 60_000,
        ast::DateTimeField::Hour | ast::DateTimeField::Hours => 3_600_000,
        ast::DateTimeField::Day | ast::DateTimeField::Days => 86_400_000,
        _ => return None,
    };
    count.checked_mul(unit).filter(|millis| *millis >= 0)
}

impl Expr {
    /// The expression with each column `i` read as column `map(i)`.
    pub fn remap(&self, map: &dyn Fn(usize) -> usize) -> Expr {
        self.replace_columns(&|index| Expr::Column(map(index)))
    }

    /// The expression with each column `i` replaced by `by(i)`.
    pub fn replace_columns(&self, by: &dyn Fn(usize) -> Expr) -> Expr {
        let boxed = |inner: &Expr| Box::new(inner.replace_columns(by));
        match self {
            Expr::Column(index) => by(*index),
            Expr::Literal(value) => Expr::Literal(value.clone()),
            Expr::Field(inner, index) => Expr::Field(boxed(inner), *index),
            Expr::Binary(op, left, right) => Expr::Binary(*op, boxed(left), boxed(right)),
            Expr::And(left, right) => Expr::And(boxed(left), boxed(right)),
            Expr::Or(left, right) => Expr::Or(boxed(left), boxed(right)),
            Expr::Not(inner) => Expr::Not(boxed(inner)),
            Expr::IsNull(inner, negated) => Expr::IsNull(boxed(inner), *negated),
            Expr::Case(arms, otherwise) => Expr::Case(
                arms.iter().map(|(when, then)| (when.replace_columns(by), then.replace_columns(by))).collect(),
                boxed(otherwise),
            ),
            Expr::Rescale(inner, scale) => Expr::Rescale(boxed(inner), *scale),
            Expr::Call(function, args) => {
                Expr::Call(function.clone(), args.iter().map(|arg| arg.replace_columns(by)).collect())
            }
        }
    }

    /// Whether the expression reads a column that `matches`.
    pub fn reads(&self, matches: &dyn Fn(usize) -> bool) -> bool {
        match self {
            Expr::Column(index) => matches(*index),
            Expr::Literal(_) => false,
            Expr::Field(inner, _) | Expr::Not(inner) | Expr::IsNull(inner, _) | Expr::Rescale(inner, _) => {
                inner.reads(matches)
            }
            Expr::Binary(_, left, right) | Expr::And(left, right) | Expr::Or(left, right) => {
                left.reads(matches) || right.reads(matches)
            }
            Expr::Case(arms, otherwise) => {
                arms.iter().any(|(when, then)| when.reads(matches) || then.reads(matches)) || otherwise.reads(matches)
            }
            Expr::Call(_, args) => args.iter().any(|arg| arg.reads(matches)),
        }
    }

    /// The expression's value on `row`.
    pub fn eval(&self, row: &[Value]) -> Value {
        match self {
            Expr::Column(index) => row[*index].clone(),
            Expr::Field(inner, index) => match inner.eval(row) {
                Value::Row(mut fields) => fields.swap_remove(*index),
                _ => Value::Null,
            },
            Expr::Literal(value) => value.clone(),
            Expr::Binary(op, l, r) => apply(*op, l.eval(row), r.eval(row)),
            Expr::And(l, r) => logic(l.eval(row), r.eval(row), false),
            Expr::Or(l, r) => logic(l.eval(row), r.eval(row), true),
            Expr::Not(inner) => match inner.eval(row) {
                Value::Bool(value) => Value::Bool(!value),
                _ => Value::Null,
            },
            Expr::IsNull(inner, negated) => Value::Bool((inner.eval(row) == Value::Null) != *negated),
            Expr::Case(arms, otherwise) => arms
                .iter()
                .find(|(when, _)| when.eval(row) == Value::Bool(true))
                .map_or_else(|| otherwise.eval(row), |(_, then)| then.eval(row)),
            Expr::Rescale(inner, scale) => rescale(inner.eval(row), *scale),
            Expr::Call(function, args) => function.eval(&args.iter().map(|arg| arg.eval(row)).collect::<Vec<_>>()),
        }
    }
}

/// Three-valued `AND` (`or == false`) and `OR`.
fn logic(l: Value, r: Value, or: bool) -> Value {
    match (l, r) {
        (Value::Bool(a), _) | (_, Value::Bool(a)) if a == or => Value::Bool(or),
        (Value::Bool(_), Value::Bool(_)) => Value::Bool(!or),
        _ => Value::Null,
    }
}

/// `value` as a decimal of `scale` (a number of a smaller scale multiplied up).
pub fn rescale(value: Value, scale: u8) -> Value {
    let (units, from) = match value {
        Value::Int(number) => (i128::from(number), 0),
        Value::Decimal { units, scale } => (units, scale),
        _ => return Value::Null,
    };
    match scale.checked_sub(from) {
        Some(up) => Value::Decimal { units: units.wrapping_mul(10i128.pow(u32::from(up))), scale },
        None => Value::Decimal { units: units / 10i128.pow(u32::from(from - scale)), scale },
    }
}

fn apply(op: Op, l: Value, r: Value) -> Value {
    match (op, &l, &r) {
        (_, Value::Null, _) | (_, _, Value::Null) => Value::Null,
        (Op::Eq, ..) => Value::Bool(compare(&l, &r) == std::cmp::Ordering::Equal),
        (Op::NotEq, ..) => Value::Bool(compare(&l, &r) != std::cmp::Ordering::Equal),
        (Op::Lt, ..) => Value::Bool(compare(&l, &r).is_lt()),
        (Op::LtEq, ..) => Value::Bool(compare(&l, &r).is_le()),
        (Op::Gt, ..) => Value::Bool(compare(&l, &r).is_gt()),
        (Op::GtEq, ..) => Value::Bool(compare(&l, &r).is_ge()),
        (_, Value::Int(a), Value::Int(b)) => integer(op, *a, *b),
        (Op::Add, Value::Timestamp(time), Value::Int(millis)) => Value::Timestamp(time.saturating_add(*millis)),
        (Op::Sub, Value::Timestamp(time), Value::Int(millis)) => Value::Timestamp(time.saturating_sub(*millis)),
        (Op::Mul, _, _) => match (rescale(l.clone(), scale_of(&l)), rescale(r.clone(), scale_of(&r))) {
            (Value::Decimal { units: a, scale: sa }, Value::Decimal { units: b, scale: sb }) => {
                Value::Decimal { units: a.wrapping_mul(b), scale: sa + sb }
            }
            _ => Value::Null,
        },
        (Op::Add | Op::Sub, Value::Decimal { units: a, scale }, Value::Decimal { units: b, .. }) => {
            let units = if op == Op::Add { a.wrapping_add(*b) } else { a.wrapping_sub(*b) };
            Value::Decimal { units, scale: *scale }
        }
        _ => Value::Null,
    }
}

fn scale_of(value: &Value) -> u8 {
    match value {
        Value::Decimal { scale, .. } => *scale,
        _ => 0,
    }
}

fn integer(op: Op, a: i64, b: i64) -> Value {
    match op {
        Op::Add => Value::Int(a.wrapping_add(b)),
        Op::Sub => Value::Int(a.wrapping_sub(b)),
        Op::Mul => Value::Int(a.wrapping_mul(b)),
        Op::Div => a.checked_div(b).map_or(Value::Null, Value::Int),
        Op::Mod => a.checked_rem(b).map_or(Value::Null, Value::Int),
        _ => Value::Null,
    }
}

/// SQL's order of two non-null values of comparable types (numbers compared exactly).
fn compare(l: &Value, r: &Value) -> std::cmp::Ordering {
    match (l, r) {
        (Value::Int(_) | Value::Decimal { .. }, Value::Int(_) | Value::Decimal { .. }) => {
            let scale = scale_of(l).max(scale_of(r));
            match (rescale(l.clone(), scale), rescale(r.clone(), scale)) {
                (Value::Decimal { units: a, .. }, Value::Decimal { units: b, .. }) => a.cmp(&b),
                _ => std::cmp::Ordering::Equal,
            }
        }
        _ => l.cmp(r),
    }
}

/// Evaluates `exprs` on `row`: the projected row.
pub fn project(exprs: &[Expr], row: &Row) -> Row {
    Row(exprs.iter().map(|expr| expr.eval(&row.0)).collect())
}
