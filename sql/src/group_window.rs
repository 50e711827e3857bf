//! Flink's group windows, the older form of window aggregation that Nexmark's q11 is written in:
//! `GROUP BY bidder, SESSION(dateTime, INTERVAL '10' SECOND)` (or `TUMBLE(time, size)`,
//! `HOP(time, slide, size)`), with `SESSION_START(…)`, `SESSION_END(…)` and `SESSION_ROWTIME(…)`
//! of the same arguments naming the window's start, end and time attribute.
//!
//! Planned as the window table function's aggregation: the group window becomes a window over
//! the input's rows with three columns, `$window_start`, `$window_end` and `$window_time`,
//! grouped by all three in its place; the auxiliary functions become those columns. Owns the
//! recognition and the rewrite of the `GROUP BY` and select list; never plans anything else.

use sqlparser::ast;
use sqlparser::tokenizer::Location;

use crate::expr::interval_millis;
use crate::parse::SqlError;
use crate::window::{WindowKind, WindowSpec, check};

/// The window columns a group window adds after its input's, named so that no query can name
/// them itself.
pub const COLUMNS: [&str; 3] = ["$window_start", "$window_end", "$window_time"];

/// A group window found among the `GROUP BY` keys.
#[derive(Clone, Debug)]
pub struct GroupWindow {
    /// Its index among the keys.
    pub position: usize,
    /// `TUMBLE`, `HOP` or `SESSION`.
    pub name: String,
    /// The call as written (its auxiliary functions take the same arguments).
    pub args: ast::FunctionArguments,
    /// Its time column as written.
    pub time: ast::Expr,
    /// The windows.
    pub spec: WindowSpec,
}

fn unnamed_args(function: &ast::Function) -> Option<Vec<&ast::Expr>> {
    let ast::FunctionArguments::List(list) = &function.args else { return None };
    list.args
        .iter()
        .map(|arg| match arg {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(expr)) => Some(expr),
            _ => None,
        })
        .collect()
}

/// The group window among `keys`, if there is one; an error for a malformed one or two.
pub fn find(keys: &[ast::Expr], at: Location) -> Result<Option<GroupWindow>, SqlError> {
    let mut found = None;
    for (position, key) in keys.iter().enumerate() {
        let ast::Expr::Function(function) = key else { continue };
        let name = function.name.to_string().to_ascii_uppercase();
        if !["TUMBLE", "HOP", "SESSION"].contains(&name.as_str()) {
            continue;
        }
        if found.is_some() {
            return Err(SqlError::at(at, format!("a GROUP BY holds one group window; `{key}` is a second")));
        }
        found = Some(bind(position, name, function, at)?);
    }
    Ok(found)
}

fn bind(position: usize, name: String, function: &ast::Function, at: Location) -> Result<GroupWindow, SqlError> {
    let fail = |message: String| SqlError::at(at, message);
    let usage = match name.as_str() {
        "TUMBLE" => "TUMBLE(time, size)",
        "HOP" => "HOP(time, slide, size)",
        _ => "SESSION(time, gap)",
    };
    let lengths = if name == "HOP" { 2 } else { 1 };
    let args = unnamed_args(function).filter(|args| args.len() == 1 + lengths);
    let Some(args) = args else {
        return Err(fail(format!("the group window {usage} takes {} arguments", 1 + lengths)));
    };
    let mut millis = Vec::new();
    for arg in &args[1..] {
        let ast::Expr::Interval(interval) = arg else {
            return Err(fail(format!("{name}'s `{arg}`: a length is an INTERVAL such as INTERVAL '10' SECOND")));
        };
        millis.push(interval_millis(interval).ok_or_else(|| fail(format!("unsupported interval `{arg}`")))?);
    }
    let kind = match name.as_str() {
        "TUMBLE" => WindowKind::Tumble { size: millis[0] },
        "HOP" => WindowKind::Hop { slide: millis[0], size: millis[1] },
        _ => WindowKind::Session { gap: millis[0] },
    };
    let spec = WindowSpec { kind, offset: 0 };
    check(&spec).map_err(fail)?;
    Ok(GroupWindow { position, name, args: function.args.clone(), time: args[0].clone(), spec })
}

fn column(name: &str) -> ast::Expr {
    ast::Expr::Identifier(ast::Ident::new(name))
}

impl GroupWindow {
    /// The keys with the group window replaced by the three window columns.
    pub fn keys(&self, keys: &[ast::Expr]) -> Vec<ast::Expr> {
        let mut keys = keys.to_vec();
        keys.splice(self.position..=self.position, COLUMNS.map(column));
        keys
    }

    /// The window column `expr` names, if it is one of the window's auxiliary functions
    /// (`SESSION_START(…)`: the start); an error if it is one of another window or arguments.
    pub fn auxiliary(&self, expr: &ast::Expr, at: Location) -> Result<Option<ast::Expr>, SqlError> {
        let ast::Expr::Function(function) = expr else { return Ok(None) };
        let name = function.name.to_string().to_ascii_uppercase();
        let Some((window, part)) = name.rsplit_once('_') else { return Ok(None) };
        let index = match part {
            "START" => 0,
            "END" => 1,
            "ROWTIME" => 2,
            _ => return Ok(None),
        };
        if !["TUMBLE", "HOP", "SESSION"].contains(&window) {
            return Ok(None);
        }
        if window != self.name || function.args != self.args {
            let message = format!("`{expr}` is not of the query's group window, {}{}", self.name, self.args);
            return Err(SqlError::at(at, message));
        }
        Ok(Some(column(COLUMNS[index])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exprs(sql: &str) -> Vec<ast::Expr> {
        let dialect = sqlparser::dialect::GenericDialect {};
        let select = format!("SELECT 1 FROM t GROUP BY {sql}");
        let statements = sqlparser::parser::Parser::parse_sql(&dialect, &select).unwrap();
        let ast::Statement::Query(query) = &statements[0] else { panic!() };
        let ast::SetExpr::Select(select) = query.body.as_ref() else { panic!() };
        let ast::GroupByExpr::Expressions(keys, _) = &select.group_by else { panic!() };
        keys.clone()
    }

    fn at() -> Location {
        Location { line: 1, column: 1 }
    }

    #[test]
    fn a_group_window_becomes_the_window_columns_and_its_auxiliary_functions_name_them() {
        let keys = exprs("bidder, SESSION(dateTime, INTERVAL '10' SECOND)");
        let window = find(&keys, at()).unwrap().expect("a group window");
        assert_eq!(window.spec, WindowSpec { kind: WindowKind::Session { gap: 10_000 }, offset: 0 });
        assert_eq!(window.time.to_string(), "dateTime");
        let rewritten: Vec<String> = window.keys(&keys).iter().map(ToString::to_string).collect();
        assert_eq!(rewritten, ["bidder", "$window_start", "$window_end", "$window_time"]);
        let aux = |sql: &str| window.auxiliary(&exprs(sql)[0], at()).map(|column| column.map(|c| c.to_string()));
        assert_eq!(aux("session_end(dateTime, INTERVAL '10' SECOND)").unwrap().as_deref(), Some("$window_end"));
        assert_eq!(aux("SESSION_ROWTIME(dateTime, INTERVAL '10' SECOND)").unwrap().as_deref(), Some("$window_time"));
        assert_eq!(aux("bidder").unwrap(), None);
        assert!(
            aux("SESSION_START(dateTime, INTERVAL '5' SECOND)").unwrap_err().message.contains("not of the query's")
        );
        assert!(aux("TUMBLE_START(dateTime, INTERVAL '10' SECOND)").unwrap_err().message.contains("SESSION("));
    }

    #[test]
    fn malformed_group_windows_are_named() {
        let error = |sql: &str| find(&exprs(sql), at()).unwrap_err().message;
        assert!(error("HOP(t, INTERVAL '1' SECOND)").contains("HOP(time, slide, size) takes 3 arguments"));
        assert!(error("SESSION(t, 10)").contains("a length is an INTERVAL"));
        assert!(error("SESSION(t, INTERVAL '0' SECOND)").contains("positive"));
        assert!(error("TUMBLE(t, INTERVAL '1' SECOND), SESSION(t, INTERVAL '1' SECOND)").contains("one group window"));
        assert!(find(&exprs("a, b"), at()).unwrap().is_none());
    }
}
