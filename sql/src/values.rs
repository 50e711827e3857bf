//! `FROM (VALUES (…), (…)) AS t(a, b)`: a bounded table of literal rows (Flink's `Values`), read
//! like any source table: its rows are written to a log topic of their own before the job, in
//! order, and read in both modes.
//!
//! Owns the binding of a VALUES clause: each entry a constant expression, evaluated when the
//! script is planned; a column's type the one its entries share (INT and BIGINT widen to BIGINT,
//! an integer beside a DECIMAL to that DECIMAL, NULL takes the others' type). Must never: plan
//! an entry that reads a column, or a column whose entries have types no rule joins (an error
//! names the column and both types).

use sqlparser::ast;
use sqlparser::tokenizer::Location;

use crate::expr::{self, Scope, rescale};
use crate::parse::{ColumnDef, SqlError, TableDef};
use crate::value::{Row, SqlType, Value};

/// The most rows a VALUES clause may hold (a test table, not a data set).
pub const MAX_ROWS: usize = 10_000;

/// A VALUES clause bound: the table it reads as (named `name`) and its rows.
pub fn bind(
    name: &str,
    values: &ast::Values,
    alias: Option<&ast::TableAlias>,
    at: Location,
) -> Result<(TableDef, Vec<Row>), SqlError> {
    let fail = |message: String| Err(SqlError::at(at, message));
    let Some(width) = values.rows.first().map(Vec::len) else { return fail("VALUES with no rows".to_string()) };
    if values.rows.len() > MAX_ROWS {
        return fail(format!("VALUES with {} rows: Sluice takes at most {MAX_ROWS}", values.rows.len()));
    }
    let names = column_names(alias, width, at)?;
    let empty = Scope::of(None, Vec::new());
    let mut rows: Vec<Vec<(Value, SqlType)>> = Vec::new();
    for (index, row) in values.rows.iter().enumerate() {
        if row.len() != width {
            return fail(format!("VALUES row {} has {} values, the first has {width}", index + 1, row.len()));
        }
        let bound = row
            .iter()
            .map(|entry| {
                let (bound, ty) = expr::bind(&empty, entry, at)?;
                Ok((bound.eval(&[]), ty))
            })
            .collect::<Result<Vec<_>, SqlError>>()?;
        rows.push(bound);
    }
    let types =
        (0..width).map(|column| column_type(&rows, column, &names[column], at)).collect::<Result<Vec<_>, _>>()?;
    let rows = rows
        .into_iter()
        .map(|row| Row(row.into_iter().zip(&types).map(|((value, _), ty)| coerce(value, ty)).collect()))
        .collect();
    let columns = names.into_iter().zip(types).map(|(name, ty)| ColumnDef::Physical { name, ty }).collect();
    let def = TableDef {
        name: name.to_string(),
        columns,
        watermark: None,
        primary_key: Vec::new(),
        options: Default::default(),
    };
    Ok((def, rows))
}

/// `AS t(a, b)`'s names, or Flink's `EXPR$0`, `EXPR$1`… without them.
fn column_names(alias: Option<&ast::TableAlias>, width: usize, at: Location) -> Result<Vec<String>, SqlError> {
    let named: Vec<String> =
        alias.map(|alias| alias.columns.iter().map(|column| column.name.value.clone()).collect()).unwrap_or_default();
    if named.is_empty() {
        return Ok((0..width).map(|index| format!("EXPR${index}")).collect());
    }
    if named.len() != width {
        return Err(SqlError::at(at, format!("VALUES has {width} columns, its alias names {}", named.len())));
    }
    Ok(named)
}

/// The type a column's entries share; see the module doc.
fn column_type(rows: &[Vec<(Value, SqlType)>], column: usize, name: &str, at: Location) -> Result<SqlType, SqlError> {
    let mut joined: Option<SqlType> = None;
    for (value, ty) in rows.iter().map(|row| &row[column]) {
        if *value == Value::Null {
            continue;
        }
        joined = Some(match joined {
            None => ty.clone(),
            Some(so_far) => join(&so_far, ty).ok_or_else(|| {
                SqlError::at(at, format!("VALUES column `{name}` holds both {so_far} and {ty}: give them one type"))
            })?,
        });
    }
    Ok(joined.unwrap_or(SqlType::Int))
}

fn join(a: &SqlType, b: &SqlType) -> Option<SqlType> {
    let digits = |ty: &SqlType| match ty {
        SqlType::Int => Some((10, 0)),
        SqlType::BigInt => Some((19, 0)),
        SqlType::Decimal { precision, scale } => Some((*precision, *scale)),
        _ => None,
    };
    match (a, b) {
        _ if a == b => Some(a.clone()),
        (SqlType::Int | SqlType::BigInt, SqlType::Int | SqlType::BigInt) => Some(SqlType::BigInt),
        _ => {
            let ((pa, sa), (pb, sb)) = (digits(a)?, digits(b)?);
            let scale = sa.max(sb);
            let precision = ((pa - sa).max(pb - sb) + scale).min(38);
            Some(SqlType::Decimal { precision, scale })
        }
    }
}

fn coerce(value: Value, ty: &SqlType) -> Value {
    match (ty, &value) {
        (SqlType::Decimal { scale, .. }, Value::Int(_) | Value::Decimal { .. }) => rescale(value, *scale),
        _ => value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan_script;

    fn table_of(values: &str) -> Result<(TableDef, Vec<Row>), SqlError> {
        let script = format!(
            "CREATE TABLE out_t (a BIGINT, b VARCHAR) WITH ('connector' = 'sluice');
             INSERT INTO out_t SELECT * FROM {values};"
        );
        let plan = plan_script(&script)?;
        let source = plan.sources.values().next().expect("the VALUES table");
        let crate::plan::SourceConnector::Values(rows) = &source.connector else { panic!("a values source") };
        Ok((source.def.clone(), rows.clone()))
    }

    #[test]
    fn values_rows_are_constants_of_one_type_per_column() {
        let (def, rows) = table_of("(VALUES (1, 'a'), (3000000000, 'b'), (NULL, 'c')) AS t(a, b)").unwrap();
        let types: Vec<String> = def.columns.iter().map(|column| format!("{column:?}")).collect();
        assert!(types[0].contains("BigInt") && types[1].contains("Varchar"), "{types:?}");
        assert_eq!(rows[2].0, vec![Value::Null, Value::Str("c".to_string())]);
    }

    #[test]
    fn values_name_what_is_wrong() {
        let error = |values: &str| table_of(values).unwrap_err().message;
        assert!(error("(VALUES (1, 'a'), ('x', 'b')) AS t(a, b)").contains("column `a` holds both INT and VARCHAR"));
        assert!(error("(VALUES (1, 'a'), (2)) AS t(a, b)").contains("VALUES row 2 has 1 values"));
        assert!(error("(VALUES (1, 'a')) AS t(a)").contains("its alias names 1"));
    }
}
