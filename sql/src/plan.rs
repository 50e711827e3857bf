//! Binding a script's statements into a [`Plan`]: source tables, and for every `INSERT INTO` a
//! pipeline of relational nodes from a source table to a sink table.
//!
//! Views are bound where they are defined and inlined where they are read (Flink's views are
//! not materialized). A source table's computed columns are a projection over its physical
//! ones. What the planner does not support yet is an error that names it, never something
//! planned differently.

use std::collections::BTreeMap;

use sqlparser::ast;
use sqlparser::tokenizer::Location;

use crate::aggregate::{self, Call, GroupBy, Grouping};
use crate::expr::{self, Expr, Op, Scope};
use crate::functions;
use crate::group_window::{self, GroupWindow};
use crate::join;
use crate::nexmark;
pub use crate::node::{Node, Outer};
use crate::parse::{ColumnDef, Located, SqlError, Statement, TableDef};
use crate::topn;
use crate::value::{Row, SqlType, Value};
use crate::window::{self, WindowKind, WindowSpec};
use sluice_engine::time::TimeWindow;

/// A node and the columns it produces.
#[derive(Clone, Debug, PartialEq)]
pub struct Relation {
    /// The node.
    pub node: Node,
    /// Its columns.
    pub columns: Vec<(String, SqlType)>,
    /// Its time attribute column, if it has one: a source's `WATERMARK FOR` column, selected as
    /// it is, or a window table function's `window_time`. Window functions need one; its values
    /// are the rows' event timestamps.
    pub rowtime: Option<usize>,
    /// Its window columns, if its rows are a window aggregation's results (see
    /// [`WindowColumns`]).
    pub window: Option<WindowColumns>,
}

/// The `window_start` and `window_end` columns of a window aggregation's results, and the
/// windows' length. Each result row's event timestamp is its window's last millisecond, so a
/// `GROUP BY` of both columns is a window aggregation of the same windows (Flink's window
/// aggregation over a window aggregation, which q5 is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowColumns {
    /// `window_start`'s column.
    pub start: usize,
    /// `window_end`'s column.
    pub end: usize,
    /// The windows' length in milliseconds.
    pub size: i64,
}

impl WindowColumns {
    /// The same columns after a projection `exprs` that selects both as they are.
    fn selected(self, exprs: &[Expr]) -> Option<WindowColumns> {
        let start = selected_as_is(exprs, Some(self.start))?;
        Some(WindowColumns { start, end: selected_as_is(exprs, Some(self.end))?, size: self.size })
    }
}

/// A source table.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    /// The table's definition.
    pub def: TableDef,
    /// Its connector.
    pub connector: SourceConnector,
    /// `WATERMARK FOR`: the row-time column's index (after computed columns) and the bound of
    /// out-of-orderness in milliseconds.
    pub watermark: Option<(usize, i64)>,
}

/// Where a source table's rows come from.
#[derive(Clone, Debug, PartialEq)]
pub enum SourceConnector {
    /// Nexmark's generator.
    Nexmark(nexmark::Options),
    /// The literal rows of a `VALUES` clause, in order.
    Values(Vec<Row>),
}

/// A sink table: rows go to the transactional store's table of the same name.
#[derive(Clone, Debug, PartialEq)]
pub struct Sink {
    /// The table's name.
    pub name: String,
    /// Its columns.
    pub columns: Vec<(String, SqlType)>,
    /// The primary key's column indexes (an upsert table), or none (an append table).
    pub primary_key: Vec<usize>,
}

/// One `INSERT INTO`: a relation written to a sink.
#[derive(Clone, Debug, PartialEq)]
pub struct Insert {
    /// The sink.
    pub sink: Sink,
    /// What is written, already cast to the sink's column types.
    pub input: Relation,
}

/// A bound script.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Source tables by name.
    pub sources: BTreeMap<String, Source>,
    /// The inserts, in the script's order.
    pub inserts: Vec<Insert>,
    /// The inserts of `EXPLAIN` statements: planned to be printed, never run.
    pub explains: Vec<Insert>,
}

#[derive(Default)]
struct Catalog {
    sources: BTreeMap<String, Source>,
    sinks: BTreeMap<String, Sink>,
    views: BTreeMap<String, Relation>,
    /// The tables of the script's VALUES clauses, named `$values<n>` in the order bound.
    values: std::cell::RefCell<Vec<Source>>,
}

/// Binds a parsed script.
pub fn bind_script(statements: &[Located]) -> Result<Plan, SqlError> {
    let (catalog, inserts, explains) = bind_statements(statements)?;
    if inserts.is_empty() && explains.is_empty() {
        return Err(SqlError {
            line: 0,
            column: 0,
            message: "the script has no INSERT INTO: nothing to run".to_string(),
        });
    }
    let mut sources = catalog.sources;
    sources.extend(catalog.values.into_inner().into_iter().map(|source| (source.def.name.clone(), source)));
    Ok(Plan { sources, inserts, explains })
}

/// Binds a parsed script and returns its view `name`: what a tool asks of a query before it
/// declares a sink table for it (its columns, and whether and by what key it updates).
pub fn bind_view(statements: &[Located], name: &str) -> Result<Relation, SqlError> {
    let (catalog, _, _) = bind_statements(statements)?;
    let view = catalog.views.get(name).cloned();
    view.ok_or_else(|| SqlError { line: 0, column: 0, message: format!("the script has no view `{name}`") })
}

/// Binds a parsed script that may run nothing yet (declarations only): its errors, if any.
pub fn check_statements(statements: &[Located]) -> Result<(), SqlError> {
    bind_statements(statements).map(|_| ())
}

fn bind_statements(statements: &[Located]) -> Result<(Catalog, Vec<Insert>, Vec<Insert>), SqlError> {
    let mut catalog = Catalog::default();
    let (mut inserts, mut explains) = (Vec::new(), Vec::new());
    for Located { at, statement } in statements {
        match statement {
            Statement::CreateTable(def) => {
                catalog.check_new_name(&def.name, *at)?;
                catalog.create_table(def, *at)?;
            }
            Statement::CreateView { name, query } => {
                catalog.check_new_name(name, *at)?;
                let relation = catalog.bind_query(query, *at)?;
                catalog.views.insert(name.clone(), relation);
            }
            Statement::Insert { table, query } => inserts.push(catalog.bind_insert(table, query, *at)?),
            Statement::Explain { table, query } => explains.push(catalog.bind_insert(table, query, *at)?),
            Statement::CreateFunction { name, class } => check_function(name, class, *at)?,
        }
    }
    Ok((catalog, inserts, explains))
}

/// A select list's input, expressions and columns.
type Items = (Node, Vec<Expr>, Vec<(String, SqlType)>);

/// A plain select list over `input` (of `scope`'s columns): its expressions and columns, and the
/// input, numbered by a rank if an item is `ROW_NUMBER() OVER (…)` (its number is then column
/// `width` of the rank's rows).
fn bind_items(scope: &Scope, select: &ast::Select, input: Node, at: Location) -> Result<Items, SqlError> {
    let (mut exprs, mut columns, mut rank) = (Vec::new(), Vec::new(), None);
    let width = scope.columns.len();
    for item in &select.projection {
        let (expr, name) = match item {
            ast::SelectItem::UnnamedExpr(expr) => (expr, default_name(expr, columns.len())),
            ast::SelectItem::ExprWithAlias { expr, alias } => (expr, alias.value.clone()),
            _ => {
                bind_item(scope, item, at, &mut exprs, &mut columns)?;
                continue;
            }
        };
        let Some(numbering) = topn::bind_row_number(scope, expr, at)? else {
            bind_item(scope, item, at, &mut exprs, &mut columns)?;
            continue;
        };
        if rank.replace(numbering).is_some() {
            return Err(SqlError::at(at, "unsupported: two ROW_NUMBER() in one SELECT"));
        }
        exprs.push(Expr::Column(width));
        columns.push((unique_name(&columns, name), SqlType::BigInt));
    }
    let Some((partition, order)) = rank else { return Ok((input, exprs, columns)) };
    if is_updating(&input) {
        return Err(SqlError::at(at, "unsupported: ROW_NUMBER() over an updating input"));
    }
    Ok((Node::Rank { input: Box::new(input), partition, order, limit: None, width }, exprs, columns))
}

/// `node` filtered by `conjunct`, or, if `node` numbers rows and `conjunct` is `rn <= N` (or
/// `rn < N`, `rn = 1`) on its number, `node` keeping `N` rows per partition (Flink's Top-N).
fn filter_or_limit(node: Node, conjunct: Expr, at: Location) -> Result<Node, SqlError> {
    let Some(limit) = rank_limit(&node, &conjunct) else {
        return Ok(Node::Filter { input: Box::new(node), predicate: conjunct });
    };
    if !(1..=topn::MAX_LIMIT).contains(&limit) {
        return Err(SqlError::at(
            at,
            format!("a Top-N keeps 1 to {} rows per partition, not {limit}", topn::MAX_LIMIT),
        ));
    }
    let Node::Project { input, exprs } = node else { unreachable!("invariant: rank_limit found a projection") };
    let Node::Rank { input: rows, partition, order, width, .. } = *input else {
        unreachable!("invariant: rank_limit found a rank")
    };
    let rank = Node::Rank { input: rows, partition, order, limit: Some(limit as usize), width };
    Ok(Node::Project { input: Box::new(rank), exprs })
}

/// The `N` that `conjunct` bounds `node`'s row number to, if `node` is a projection of a rank
/// with no limit yet and `conjunct` bounds its number.
fn rank_limit(node: &Node, conjunct: &Expr) -> Option<i64> {
    let Node::Project { input, exprs } = node else { return None };
    let Node::Rank { limit: None, width, .. } = input.as_ref() else { return None };
    let Expr::Binary(op, left, right) = conjunct else { return None };
    let (Expr::Column(column), Expr::Literal(Value::Int(bound))) = (left.as_ref(), right.as_ref()) else {
        return None;
    };
    if exprs.get(*column) != Some(&Expr::Column(*width)) {
        return None;
    }
    match op {
        Op::LtEq => Some(*bound),
        Op::Lt => Some(bound.saturating_sub(1)),
        Op::Eq if *bound == 1 => Some(1),
        _ => None,
    }
}

/// Whether `node` numbers rows without a limit (`ROW_NUMBER()` with no `rn <= N` on it).
fn has_unlimited_rank(node: &Node) -> bool {
    node.any(&|node| matches!(node, Node::Rank { limit: None, .. }))
}

/// `predicate` bound over `scope`: a BOOLEAN (`clause` names it in errors).
fn bind_predicate(scope: &Scope, predicate: &ast::Expr, clause: &str, at: Location) -> Result<Expr, SqlError> {
    match expr::bind(scope, predicate, at)? {
        (bound, SqlType::Boolean) => Ok(bound),
        (_, ty) => Err(SqlError::at(at, format!("{clause} `{predicate}` is {ty}, not BOOLEAN"))),
    }
}

/// Two relations joined with no keys yet (`outer`: which sides are outer, if any): their
/// conditions attach to it ([`join::attach`], [`join::attach_on`]).
fn join_relations(
    (left, left_scope): (Relation, Scope),
    (right, right_scope): (Relation, Scope),
    outer: OuterSides,
) -> (Relation, Scope) {
    let left_width = left.columns.len();
    let right_width = right.columns.len();
    let mut columns = left.columns;
    columns.extend(right.columns);
    let node = Node::Join {
        left: Box::new(left.node),
        right: Box::new(right.node),
        left_keys: Vec::new(),
        right_keys: Vec::new(),
        left_width,
        times: left.rowtime.zip(right.rowtime),
        bounds: None,
        outer: outer.map(|(left, right)| Outer { left, right, condition: None, right_width }),
    };
    // A regular join's result has no time attribute (Flink's makes them plain timestamps); an
    // interval join's has its left side's, found once its conditions are attached.
    (Relation { node, columns, rowtime: None, window: None }, Scope::joined(left_scope, right_scope))
}

/// Which sides of a join are outer (left, right); `None`: an inner join.
type OuterSides = Option<(bool, bool)>;

/// A join of `FROM`: its `ON` and which sides are outer.
fn join_on(operator: &ast::JoinOperator, at: Location) -> Result<(&ast::Expr, OuterSides), SqlError> {
    use ast::JoinConstraint::On;
    use ast::JoinOperator::{FullOuter, Inner, Join, Left, LeftOuter, Right, RightOuter};
    match operator {
        Join(On(on)) | Inner(On(on)) => Ok((on, None)),
        Left(On(on)) | LeftOuter(On(on)) => Ok((on, Some((true, false)))),
        Right(On(on)) | RightOuter(On(on)) => Ok((on, Some((false, true)))),
        FullOuter(On(on)) => Ok((on, Some((true, true)))),
        other => {
            let kind = format!("{other:?}");
            let kind = kind.split('(').next().unwrap_or("this");
            Err(SqlError::at(
                at,
                format!("unsupported join ({kind}): Sluice plans inner, left, right and full outer joins with ON"),
            ))
        }
    }
}

/// `CREATE FUNCTION`: Sluice runs no Java; the one class it knows is Nexmark's `count_char`,
/// built in.
fn check_function(name: &str, class: &str, at: Location) -> Result<(), SqlError> {
    if name.eq_ignore_ascii_case("count_char") && class == functions::COUNT_CHAR_CLASS {
        return Ok(());
    }
    Err(SqlError::at(
        at,
        format!(
            "unsupported: CREATE FUNCTION {name} AS '{class}': Sluice runs no Java functions; it has Nexmark's \
             count_char ('{}') built in",
            functions::COUNT_CHAR_CLASS
        ),
    ))
}

impl Catalog {
    fn check_new_name(&self, name: &str, at: Location) -> Result<(), SqlError> {
        let taken = self.sources.contains_key(name) || self.sinks.contains_key(name) || self.views.contains_key(name);
        if taken {
            return Err(SqlError::at(at, format!("`{name}` is already defined")));
        }
        Ok(())
    }

    fn create_table(&mut self, def: &TableDef, at: Location) -> Result<(), SqlError> {
        let connector = def.options.get("connector").map(String::as_str);
        match connector {
            Some("nexmark") => {
                let source = bind_source(def, at)?;
                self.sources.insert(def.name.clone(), source);
            }
            Some("sluice") => {
                self.sinks.insert(def.name.clone(), bind_sink(def, at)?);
            }
            Some(other) => {
                return Err(SqlError::at(
                    at,
                    format!(
                        "unsupported connector '{other}': Sluice's are 'nexmark' (a source) and 'sluice' (its transactional store, a sink)"
                    ),
                ));
            }
            None => return Err(SqlError::at(at, format!("table `{}` has no 'connector' option", def.name))),
        }
        Ok(())
    }

    fn relation_of(&self, name: &str, at: Location) -> Result<Relation, SqlError> {
        if let Some(view) = self.views.get(name) {
            return Ok(view.clone());
        }
        if let Some(source) = self.sources.get(name) {
            return Ok(source_relation(source));
        }
        if self.sinks.contains_key(name) {
            return Err(SqlError::at(at, format!("`{name}` is a sink table: Sluice does not read its sinks back")));
        }
        Err(SqlError::at(at, format!("unknown table or view `{name}`")))
    }

    fn bind_query(&self, query: &ast::Query, at: Location) -> Result<Relation, SqlError> {
        if query.with.is_some() || query.order_by.is_some() || query.limit_clause.is_some() || query.fetch.is_some() {
            return Err(SqlError::at(at, "unsupported: WITH, ORDER BY, LIMIT and FETCH are not planned yet"));
        }
        let ast::SetExpr::Select(select) = query.body.as_ref() else {
            return Err(SqlError::at(at, format!("unsupported query `{}`: Sluice plans SELECT", query.body)));
        };
        self.bind_select(select, at)
    }

    fn bind_select(&self, select: &ast::Select, at: Location) -> Result<Relation, SqlError> {
        let keys = match &select.group_by {
            ast::GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => exprs.as_slice(),
            _ => return Err(SqlError::at(at, "unsupported: GROUP BY ALL, ROLLUP, CUBE and GROUPING SETS")),
        };
        if select.distinct.is_some() || !select.named_window.is_empty() {
            return Err(SqlError::at(at, "unsupported: DISTINCT and WINDOW are not planned yet"));
        }
        let (from, scope) = self.bind_from(&select.from, at)?;
        let input = match &select.selection {
            // Over a join, the WHERE's conjuncts go where they apply (keys, a side, above).
            Some(predicate) if matches!(from.node, Node::Join { .. }) => {
                let bound = bind_predicate(&scope, predicate, "WHERE", at)?;
                join::conjuncts(bound).into_iter().fold(from.node, join::attach)
            }
            Some(predicate) => {
                let bound = bind_predicate(&scope, predicate, "WHERE", at)?;
                join::conjuncts(bound)
                    .into_iter()
                    .try_fold(from.node, |node, conjunct| filter_or_limit(node, conjunct, at))?
            }
            None => from.node,
        };
        if join::has_cross_join(&input) {
            return Err(SqlError::at(at, "unsupported: a join with no equality between its sides (a cross join)"));
        }
        // An interval join's rows keep a time attribute: its left side's.
        let rowtime = from.rowtime.or_else(|| join::interval_time(&input));
        if !keys.is_empty() || select.having.is_some() || select.projection.iter().any(has_aggregate) {
            return match group_window::find(keys, at)? {
                Some(window) => bind_group_window(select, keys, &window, (input, rowtime), &scope, at),
                None => bind_grouped(select, keys, (input, from.window), &scope, None, at),
            };
        }
        let (input, exprs, columns) = bind_items(&scope, select, input, at)?;
        let rowtime = selected_as_is(&exprs, rowtime);
        let window = from.window.and_then(|window| window.selected(&exprs));
        Ok(Relation { node: Node::Project { input: Box::new(input), exprs }, columns, rowtime, window })
    }

    /// The `FROM` clause: tables and views (with aliases), derived tables and window table
    /// functions, joined (`JOIN … ON`, or listed with commas and joined by the `WHERE`).
    fn bind_from(&self, from: &[ast::TableWithJoins], at: Location) -> Result<(Relation, Scope), SqlError> {
        let mut joined: Option<(Relation, Scope)> = None;
        for table in from {
            let mut current = self.bind_factor(&table.relation, at)?;
            for join in &table.joins {
                let (on, outer) = join_on(&join.join_operator, at)?;
                let (relation, scope) = join_relations(current, self.bind_factor(&join.relation, at)?, outer);
                let predicate = bind_predicate(&scope, on, "ON", at)?;
                let conjuncts = join::conjuncts(predicate).into_iter();
                let node = match outer {
                    None => conjuncts.fold(relation.node, join::attach),
                    Some(_) => conjuncts.fold(relation.node, join::attach_on),
                };
                current = (Relation { node, ..relation }, scope);
            }
            joined = Some(match joined {
                Some(left) => join_relations(left, current, None),
                None => current,
            });
        }
        joined.ok_or_else(|| SqlError::at(at, "a SELECT without FROM: Sluice reads tables"))
    }

    /// One relation of a `FROM`: a table or view, a derived table, or a window table function.
    fn bind_factor(&self, factor: &ast::TableFactor, at: Location) -> Result<(Relation, Scope), SqlError> {
        let (relation, qualifier) = match factor {
            ast::TableFactor::Table { name, alias, args: None, .. } => {
                let name = name.to_string();
                let relation = self.relation_of(&name, at)?;
                (relation, Some(alias.as_ref().map_or(name, |alias| alias.name.value.clone())))
            }
            ast::TableFactor::TableFunction { expr: ast::Expr::Function(function), alias } => {
                (self.bind_window(function, at)?, alias.as_ref().map(|alias| alias.name.value.clone()))
            }
            ast::TableFactor::Derived { lateral: false, subquery, alias } => match subquery.body.as_ref() {
                ast::SetExpr::Values(values) => (
                    self.bind_values(values, alias.as_ref(), at)?,
                    alias.as_ref().map(|alias| alias.name.value.clone()),
                ),
                _ => (self.bind_query(subquery, at)?, alias.as_ref().map(|alias| alias.name.value.clone())),
            },
            other => return Err(SqlError::at(at, format!("unsupported FROM `{other}`"))),
        };
        let scope = Scope::of(qualifier, relation.columns.clone());
        Ok((relation, scope))
    }

    /// `(VALUES …) AS t(a, b)`: a source table of its own, of the literal rows.
    fn bind_values(
        &self,
        values: &ast::Values,
        alias: Option<&ast::TableAlias>,
        at: Location,
    ) -> Result<Relation, SqlError> {
        let name = format!("$values{}", self.values.borrow().len() + 1);
        let (def, rows) = crate::values::bind(&name, values, alias, at)?;
        let source = Source { def, connector: SourceConnector::Values(rows), watermark: None };
        let relation = source_relation(&source);
        self.values.borrow_mut().push(source);
        Ok(relation)
    }

    /// `TABLE(TUMBLE(TABLE t, DESCRIPTOR(col), …))`: `t`'s rows with their windows.
    fn bind_window(&self, function: &ast::Function, at: Location) -> Result<Relation, SqlError> {
        let call = window::bind_call(function, at)?;
        let input = self.relation_of(&call.table, at)?;
        let Some(time) = input.columns.iter().position(|(name, _)| *name == call.time_column) else {
            return Err(SqlError::at(
                at,
                format!("DESCRIPTOR({}): `{}` has no such column", call.time_column, call.table),
            ));
        };
        if input.rowtime != Some(time) {
            return Err(SqlError::at(
                at,
                format!(
                    "DESCRIPTOR({}): not a time attribute; a window is over the source's WATERMARK FOR column, selected as it is",
                    call.time_column
                ),
            ));
        }
        let width = input.columns.len();
        let mut columns = input.columns;
        columns.extend(window::window_columns());
        let node = Node::Window { input: Box::new(input.node), time, spec: call.spec, width };
        // The rows' event timestamps are not their windows' ends: no window columns for a
        // later aggregation (grouping these by window is the window aggregation itself).
        Ok(Relation { node, columns, rowtime: Some(width + 2), window: None })
    }

    fn bind_insert(&self, table: &str, query: &ast::Query, at: Location) -> Result<Insert, SqlError> {
        let Some(sink) = self.sinks.get(table) else {
            return Err(SqlError::at(at, format!("INSERT INTO `{table}`: no sink table of that name")));
        };
        let input = self.bind_query(query, at)?;
        if has_unlimited_rank(&input.node) {
            return Err(SqlError::at(
                at,
                "ROW_NUMBER() with no `WHERE rn <= N` on it in the enclosing query: Sluice plans ROW_NUMBER() as Top-N",
            ));
        }
        if input.columns.len() != sink.columns.len() {
            return Err(SqlError::at(
                at,
                format!(
                    "INSERT INTO `{table}` writes {} columns; the table has {}",
                    input.columns.len(),
                    sink.columns.len()
                ),
            ));
        }
        let mut casts = Vec::new();
        for (index, ((name, from), (column, to))) in input.columns.iter().zip(&sink.columns).enumerate() {
            let cast = assign(Expr::Column(index), from, to).ok_or_else(|| {
                SqlError::at(at, format!("column `{name}` is {from}; the sink's column `{column}` is {to}"))
            })?;
            casts.push(cast);
        }
        if is_updating(&input.node) {
            check_upsert_sink(sink, &input, at)?;
        }
        let node = Node::Project { input: Box::new(input.node), exprs: casts };
        Ok(Insert {
            sink: sink.clone(),
            input: Relation { node, columns: sink.columns.clone(), rowtime: None, window: None },
        })
    }
}

/// Whether a select item calls an aggregate function at its top or inside.
fn has_aggregate(item: &ast::SelectItem) -> bool {
    match item {
        ast::SelectItem::UnnamedExpr(expr) | ast::SelectItem::ExprWithAlias { expr, .. } => calls_aggregate(expr),
        _ => false,
    }
}

fn calls_aggregate(expr: &ast::Expr) -> bool {
    match expr {
        ast::Expr::Function(function) => {
            let name = function.name.to_string().to_ascii_uppercase();
            let args = match &function.args {
                ast::FunctionArguments::List(list) => list.args.iter().any(|arg| match arg {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg)) => calls_aggregate(arg),
                    _ => false,
                }),
                _ => false,
            };
            ["COUNT", "SUM", "MIN", "MAX", "AVG"].contains(&name.as_str()) || args
        }
        ast::Expr::BinaryOp { left, right, .. } => calls_aggregate(left) || calls_aggregate(right),
        ast::Expr::UnaryOp { expr, .. } | ast::Expr::Nested(expr) => calls_aggregate(expr),
        ast::Expr::IsNull(expr) | ast::Expr::IsNotNull(expr) => calls_aggregate(expr),
        ast::Expr::Case { operand, conditions, else_result, .. } => {
            operand.as_deref().is_some_and(calls_aggregate)
                || conditions.iter().any(|arm| calls_aggregate(&arm.condition) || calls_aggregate(&arm.result))
                || else_result.as_deref().is_some_and(calls_aggregate)
        }
        _ => false,
    }
}

/// A `SELECT` grouped by a group window (`GROUP BY bidder, SESSION(dateTime, …)`): its input's
/// rows in their windows, grouped by the window's three columns in the window's place.
fn bind_group_window(
    select: &ast::Select,
    keys: &[ast::Expr],
    window: &GroupWindow,
    (input, rowtime): (Node, Option<usize>),
    scope: &Scope,
    at: Location,
) -> Result<Relation, SqlError> {
    let (time, _) = expr::bind(scope, &window.time, at)?;
    let time = match time {
        Expr::Column(column) if Some(column) == rowtime => column,
        _ => {
            let message = format!(
                "{}(`{}`, …): not a time attribute; a group window is over the source's WATERMARK FOR column",
                window.name, window.time
            );
            return Err(SqlError::at(at, message));
        }
    };
    let width = scope.columns.len();
    let mut columns = scope.columns.clone();
    columns.extend(group_window::COLUMNS.iter().map(|name| (name.to_string(), SqlType::Timestamp)));
    let scope = Scope { columns, ..scope.clone() };
    let node = Node::Window { input: Box::new(input), time, spec: window.spec, width };
    let relation = bind_grouped(select, &window.keys(keys), (node, None), &scope, Some(window), at)?;
    if !relation.node.any(&|node| matches!(node, Node::WindowAggregate { .. })) {
        let message =
            format!("unsupported: the columns of the group window {} read other than as they are", window.name);
        return Err(SqlError::at(at, message));
    }
    Ok(relation)
}

/// A grouped `SELECT`: the aggregation over `input`, then the select list over its output row.
fn bind_grouped(
    select: &ast::Select,
    keys: &[ast::Expr],
    (input, window): (Node, Option<WindowColumns>),
    scope: &Scope,
    group_window: Option<&GroupWindow>,
    at: Location,
) -> Result<Relation, SqlError> {
    let mut bound_keys = Vec::new();
    let mut key_types = Vec::new();
    for key in keys {
        let (bound, ty) = expr::bind(scope, key, at)?;
        bound_keys.push(bound);
        key_types.push(ty);
    }
    let mut grouping = Grouping { key_exprs: keys, key_types, input: scope, calls: Vec::new(), window: group_window };
    let mut items = Vec::new();
    for item in &select.projection {
        let (expr, name) = match item {
            ast::SelectItem::UnnamedExpr(expr) => (expr, default_name(expr, items.len())),
            ast::SelectItem::ExprWithAlias { expr, alias } => (expr, alias.value.clone()),
            other => return Err(SqlError::at(at, format!("unsupported select item `{other}` in a grouped query"))),
        };
        if items.iter().any(|(_, known)| *known == name) {
            return Err(SqlError::at(at, format!("the query has two columns named `{name}`: give one an alias")));
        }
        items.push((grouping.rewrite(expr, at)?, name));
    }
    let having = select.having.as_ref().map(|having| grouping.rewrite(having, at)).transpose()?;
    let output = grouping.output_scope();
    let having = match having {
        Some(having) => match expr::bind(&output, &having, at)? {
            (bound, SqlType::Boolean) => Some(bound),
            (_, ty) => return Err(SqlError::at(at, format!("HAVING is {ty}, not BOOLEAN"))),
        },
        None => None,
    };
    let mut exprs = Vec::new();
    let mut columns = Vec::new();
    for (expr, name) in items {
        let (bound, ty) = expr::bind(&output, &expr, at)?;
        exprs.push(bound);
        columns.push((name, ty));
    }
    let calls: Vec<Call> = grouping.calls.into_iter().map(|(call, _, _)| call).collect();
    let group_by = GroupBy { keys: bound_keys, calls, having };
    let aggregate = aggregate_node(input, group_by, window, scope.columns.len());
    // A window aggregation's `window_time`, grouped and selected as it is, stays a time attribute;
    // its `window_start` and `window_end`, selected as they are, stay its window columns.
    let (rowtime, window) = match &aggregate {
        Node::WindowAggregate { group_by, width, spec, time, .. } => {
            let key = |column: usize| group_by.keys.iter().position(|key| *key == Expr::Column(column));
            let (start, end) = match spec.kind {
                WindowKind::Windowed { .. } => (window.map(|window| window.start), Some(*time)),
                _ => (Some(*width), Some(width + 1)),
            };
            let columns = match (start.and_then(key), end.and_then(key), spec.size()) {
                (Some(start), Some(end), Some(size)) => WindowColumns { start, end, size }.selected(&exprs),
                _ => None,
            };
            (selected_as_is(&exprs, key(width + 2)), columns)
        }
        _ => (None, None),
    };
    Ok(Relation { node: Node::Project { input: Box::new(aggregate), exprs }, columns, rowtime, window })
}

/// The output column of `exprs` that is input column `column` as it is.
fn selected_as_is(exprs: &[Expr], column: Option<usize>) -> Option<usize> {
    let column = column?;
    exprs.iter().position(|expr| *expr == Expr::Column(column))
}

/// The aggregation of `group_by` over `input`: a window aggregation if `input` is a window
/// table function (under a filter of its input's columns, at most) and the keys hold its
/// `window_start` and `window_end` as they are, and read the window's columns no other way;
/// else a group aggregation.
fn aggregate_node(input: Node, group_by: GroupBy, window: Option<WindowColumns>, width: usize) -> Node {
    if !is_window_aggregation(&input, &group_by) {
        let grouped = |column: usize| group_by.keys.contains(&Expr::Column(column));
        return match window {
            // Grouped by a window aggregation's window: the same windows again.
            Some(window) if grouped(window.start) && grouped(window.end) && !is_updating(&input) => {
                let spec = WindowSpec { kind: WindowKind::Windowed { size: window.size }, offset: 0 };
                Node::WindowAggregate { input: Box::new(input), time: window.end, spec, group_by, width }
            }
            _ => Node::Aggregate { input: Box::new(input), group_by },
        };
    }
    let (window, filter) = match input {
        Node::Filter { input, predicate } => (*input, Some(predicate)),
        window => (window, None),
    };
    let Node::Window { input: rows, time, spec, width } = window else {
        unreachable!("invariant: is_window_aggregation found a window table function")
    };
    // The filter reads the input's columns only: it runs on the rows before their windows.
    let rows = match filter {
        Some(predicate) => Box::new(Node::Filter { input: rows, predicate }),
        None => rows,
    };
    Node::WindowAggregate { input: rows, time, spec, group_by, width }
}

fn is_window_aggregation(input: &Node, group_by: &GroupBy) -> bool {
    let (window, filter) = match input {
        Node::Filter { input, predicate } => (input.as_ref(), Some(predicate)),
        other => (other, None),
    };
    let Node::Window { width, .. } = window else { return false };
    let width = *width;
    let windowed = |index: usize| index >= width;
    let keys = &group_by.keys;
    keys.contains(&Expr::Column(width))
        && keys.contains(&Expr::Column(width + 1))
        && keys.iter().all(|key| matches!(key, Expr::Column(index) if windowed(*index)) || !key.reads(&windowed))
        && group_by.calls.iter().all(|call| call.arg.as_ref().is_none_or(|arg| !arg.reads(&windowed)))
        && filter.is_none_or(|predicate| !predicate.reads(&windowed))
}

/// Whether `node`'s rows are updated (it aggregates, ranks or outer-joins somewhere).
pub fn is_updating(node: &Node) -> bool {
    match node {
        Node::Scan { .. } | Node::WindowAggregate { .. } => false,
        Node::Join { left, right, outer, .. } => outer.is_some() || is_updating(left) || is_updating(right),
        Node::Aggregate { .. } | Node::Rank { .. } => true,
        Node::Filter { input, .. } | Node::Project { input, .. } | Node::Window { input, .. } => is_updating(input),
    }
}

/// The columns of `node` that identify an updated row (its group keys, where the select list
/// keeps them as they are), if it keeps them all.
pub fn upsert_key(node: &Node) -> Option<Vec<usize>> {
    match node {
        Node::Scan { .. } | Node::Window { .. } | Node::WindowAggregate { .. } | Node::Join { .. } => None,
        Node::Aggregate { group_by, .. } => Some((0..group_by.keys.len()).collect()),
        // A partition's first row is identified by the partition; the others by their number too.
        Node::Rank { partition, limit, width, .. } => {
            let mut key: Vec<usize> = partition
                .iter()
                .map(|key| match key {
                    Expr::Column(index) => Some(*index),
                    _ => None,
                })
                .collect::<Option<_>>()?;
            if *limit != Some(1) {
                key.push(*width);
            }
            Some(key)
        }
        Node::Filter { input, .. } => upsert_key(input),
        Node::Project { input, exprs } => {
            upsert_key(input)?.into_iter().map(|key| exprs.iter().position(|expr| *expr == Expr::Column(key))).collect()
        }
    }
}

fn bind_item(
    scope: &Scope,
    item: &ast::SelectItem,
    at: Location,
    exprs: &mut Vec<Expr>,
    columns: &mut Vec<(String, SqlType)>,
) -> Result<(), SqlError> {
    let (expr, name) = match item {
        ast::SelectItem::UnnamedExpr(expr) => (expr, default_name(expr, columns.len())),
        ast::SelectItem::ExprWithAlias { expr, alias } => (expr, alias.value.clone()),
        ast::SelectItem::Wildcard(_) => {
            for (index, column) in scope.columns.iter().enumerate() {
                exprs.push(Expr::Column(index));
                columns.push(column.clone());
            }
            return Ok(());
        }
        ast::SelectItem::QualifiedWildcard(ast::SelectItemQualifiedWildcardKind::ObjectName(name), _) => {
            let name = name.to_string();
            let range = match scope.tables.iter().find(|(table, _)| *table == name) {
                Some((_, range)) => range.clone(),
                None if scope.qualifier.as_deref() == Some(name.as_str()) => 0..scope.columns.len(),
                None => return Err(SqlError::at(at, format!("`{name}.*`: no table `{name}` in FROM"))),
            };
            for index in range {
                exprs.push(Expr::Column(index));
                columns.push((unique_name(columns, scope.columns[index].0.clone()), scope.columns[index].1.clone()));
            }
            return Ok(());
        }
        other => return Err(SqlError::at(at, format!("unsupported select item `{other}`"))),
    };
    let (bound, ty) = expr::bind(scope, expr, at)?;
    exprs.push(bound);
    columns.push((unique_name(columns, name), ty));
    Ok(())
}

/// `name`, or if a column has it already, `name` with the first number that makes it unique
/// (`dateTime0`), as Calcite names a query's repeated columns.
fn unique_name(columns: &[(String, SqlType)], name: String) -> String {
    let taken = |candidate: &str| columns.iter().any(|(column, _)| column == candidate);
    if !taken(&name) {
        return name;
    }
    (0..).map(|suffix| format!("{name}{suffix}")).find(|candidate| !taken(candidate)).unwrap_or(name)
}

/// Flink's name of an unaliased select item: a column's (or field's) own name, else `EXPR$n`.
fn default_name(expr: &ast::Expr, index: usize) -> String {
    match expr {
        ast::Expr::Identifier(ident) => ident.value.clone(),
        ast::Expr::CompoundIdentifier(parts) => parts.last().map_or_else(String::new, |part| part.value.clone()),
        _ => format!("EXPR${index}"),
    }
}

/// A value of type `from` written to a column of type `to`: the cast, if the types allow it.
fn assign(expr: Expr, from: &SqlType, to: &SqlType) -> Option<Expr> {
    match (from, to) {
        _ if from == to => Some(expr),
        (SqlType::Int, SqlType::BigInt) => Some(expr),
        (_, SqlType::Decimal { scale, .. }) if from.is_numeric() => Some(Expr::Rescale(Box::new(expr), *scale)),
        _ => None,
    }
}

/// Whether `node`'s changes are a join's, seen through filters and projections: rows a join
/// takes back and gives again, with no key the planner knows (a sink's primary key says which
/// row is which, through an upsert materializer: [`needs_materializer`]).
pub fn changes_of_a_join(node: &Node) -> bool {
    match node {
        Node::Join { .. } => is_updating(node),
        Node::Filter { input, .. } | Node::Project { input, .. } => changes_of_a_join(input),
        _ => false,
    }
}

/// Whether an insert's changes go to its sink through an upsert materializer keyed by the sink's
/// primary key (Flink's `SinkUpsertMaterializer`): a join's changes, which have no upsert key.
pub fn needs_materializer(insert: &Insert) -> bool {
    changes_of_a_join(&insert.input.node)
}

/// An updating query goes only to a sink whose primary key is the query's upsert key; a join's
/// changes, to any sink with a primary key (the key it must hold each row under).
fn check_upsert_sink(sink: &Sink, input: &Relation, at: Location) -> Result<(), SqlError> {
    if changes_of_a_join(&input.node) {
        if sink.primary_key.is_empty() {
            let message = format!(
                "sink `{}` cannot take the query's updates (an outer join, or a join of an updating input, takes rows back): it needs a PRIMARY KEY",
                sink.name
            );
            return Err(SqlError::at(at, message));
        }
        return Ok(());
    }
    let key = upsert_key(&input.node);
    let mut wanted = key.clone().unwrap_or_default();
    wanted.sort_unstable();
    let mut given = sink.primary_key.clone();
    given.sort_unstable();
    if key.is_some() && !wanted.is_empty() && wanted == given {
        return Ok(());
    }
    let names: Vec<&str> = wanted.iter().map(|index| sink.columns[*index].0.as_str()).collect();
    let message = match key {
        Some(_) if names.is_empty() => {
            "unsupported: an aggregate without GROUP BY (Sluice's sinks upsert by the group key)".to_string()
        }
        Some(_) => format!(
            "the query updates its rows by ({0}): sink `{1}` needs PRIMARY KEY ({0}) NOT ENFORCED",
            names.join(", "),
            sink.name
        ),
        None => format!(
            "sink `{}` cannot take the query's updates: the select list must keep every GROUP BY key (a Top-N's PARTITION BY keys, as columns, and its row number)",
            sink.name
        ),
    };
    Err(SqlError::at(at, message))
}

fn bind_source(def: &TableDef, at: Location) -> Result<Source, SqlError> {
    let physical = physical_columns(def);
    nexmark::check_schema(&physical).map_err(|message| SqlError::at(at, message))?;
    check_computed(def)?;
    let options = nexmark::Options::from_table(&def.options).map_err(|message| SqlError::at(at, message))?;
    let mut source = Source { def: def.clone(), connector: SourceConnector::Nexmark(options), watermark: None };
    let columns = source_relation(&source).columns;
    if let Some((column, expr, expr_at)) = &def.watermark {
        let index = columns
            .iter()
            .position(|(name, _)| name == column)
            .ok_or_else(|| SqlError::at(*expr_at, format!("WATERMARK FOR `{column}`: no such column")))?;
        if columns[index].1 != SqlType::Timestamp {
            return Err(SqlError::at(
                *expr_at,
                format!("WATERMARK FOR `{column}`: the column is {}, not TIMESTAMP(3)", columns[index].1),
            ));
        }
        source.watermark = Some((index, watermark_delay(column, expr, *expr_at)?));
    }
    Ok(source)
}

/// The out-of-orderness of `WATERMARK FOR c AS c` or `c - INTERVAL 'n' unit`, in milliseconds.
fn watermark_delay(column: &str, expr: &ast::Expr, at: Location) -> Result<i64, SqlError> {
    let unsupported = || {
        SqlError::at(
            at,
            format!("unsupported watermark `{expr}`: Sluice takes `{column}` or `{column} - INTERVAL 'n' SECOND`"),
        )
    };
    match expr {
        ast::Expr::Identifier(ident) if ident.value == column => Ok(0),
        ast::Expr::BinaryOp { left, op: ast::BinaryOperator::Minus, right } => {
            let (ast::Expr::Identifier(ident), ast::Expr::Interval(interval)) = (left.as_ref(), right.as_ref()) else {
                return Err(unsupported());
            };
            if ident.value != column {
                return Err(unsupported());
            }
            expr::interval_millis(interval).ok_or_else(unsupported)
        }
        _ => Err(unsupported()),
    }
}

fn bind_sink(def: &TableDef, at: Location) -> Result<Sink, SqlError> {
    if def.watermark.is_some() {
        return Err(SqlError::at(at, format!("sink table `{}` cannot have a WATERMARK", def.name)));
    }
    let mut columns = Vec::new();
    for column in &def.columns {
        match column {
            ColumnDef::Physical { name, ty } => columns.push((name.clone(), ty.clone())),
            ColumnDef::Computed { name, .. } => {
                return Err(SqlError::at(
                    at,
                    format!("sink table `{}` cannot have a computed column (`{name}`)", def.name),
                ));
            }
        }
    }
    let mut primary_key = Vec::new();
    for key in &def.primary_key {
        let index = columns
            .iter()
            .position(|(name, _)| name == key)
            .ok_or_else(|| SqlError::at(at, format!("PRIMARY KEY column `{key}` is not a column")))?;
        primary_key.push(index);
    }
    Ok(Sink { name: def.name.clone(), columns, primary_key })
}

/// A table's physical columns: those its connector provides.
pub(crate) fn physical_columns(def: &TableDef) -> Vec<(String, SqlType)> {
    def.columns
        .iter()
        .filter_map(|column| match column {
            ColumnDef::Physical { name, ty } => Some((name.clone(), ty.clone())),
            ColumnDef::Computed { .. } => None,
        })
        .collect()
}

/// A source table's relation: its physical rows, then its computed columns where declared (a
/// projection over the scan, only if there are any).
pub fn source_relation(source: &Source) -> Relation {
    let physical = physical_columns(&source.def);
    let scope = Scope::of(Some(source.def.name.clone()), physical.clone());
    let mut exprs = Vec::new();
    let mut columns = Vec::new();
    let mut next_physical = 0;
    for column in &source.def.columns {
        match column {
            ColumnDef::Physical { name, ty } => {
                exprs.push(Expr::Column(next_physical));
                columns.push((name.clone(), ty.clone()));
                next_physical += 1;
            }
            ColumnDef::Computed { name, expr, at } => {
                // Checked when the table was created (`check_computed`).
                let (bound, ty) = expr::bind(&scope, expr, *at).unwrap_or((Expr::Literal(Value::Null), SqlType::Int));
                exprs.push(bound);
                columns.push((name.clone(), ty));
            }
        }
    }
    let scan = Node::Scan { table: source.def.name.clone() };
    let rowtime = source.watermark.map(|(column, _)| column);
    if exprs.len() == next_physical {
        // No computed columns: the physical rows as they are.
        return Relation { node: scan, columns, rowtime, window: None };
    }
    Relation { node: Node::Project { input: Box::new(scan), exprs }, columns, rowtime, window: None }
}

/// Checks a source table's computed columns bind over its physical ones.
pub fn check_computed(def: &TableDef) -> Result<(), SqlError> {
    let physical = physical_columns(def);
    let scope = Scope::of(Some(def.name.clone()), physical);
    for column in &def.columns {
        if let ColumnDef::Computed { expr, at, .. } = column {
            expr::bind(&scope, expr, *at)?;
        }
    }
    Ok(())
}

/// The rows `node` computes from the sources' rows, in order: the sequential reference a
/// distributed run is checked against.
pub fn evaluate(node: &Node, inputs: &BTreeMap<String, Vec<Row>>) -> Vec<Row> {
    match node {
        Node::Scan { table } => inputs.get(table).cloned().unwrap_or_default(),
        Node::Filter { input, predicate } => {
            evaluate(input, inputs).into_iter().filter(|row| predicate.eval(&row.0) == Value::Bool(true)).collect()
        }
        Node::Project { input, exprs } => evaluate(input, inputs).iter().map(|row| expr::project(exprs, row)).collect(),
        Node::Aggregate { input, group_by } => aggregate::evaluate(group_by, &evaluate(input, inputs)),
        Node::Window { input, time, spec, .. } => evaluate(input, inputs)
            .into_iter()
            .flat_map(|row| {
                let Value::Timestamp(timestamp) = row.0[*time] else { return Vec::new() };
                spec.windows(timestamp).into_iter().map(|window| with_window(&row, window)).collect()
            })
            .collect(),
        Node::Rank { input, partition, order, limit, .. } => {
            topn::evaluate(evaluate(input, inputs), partition, order, limit.unwrap_or(0))
        }
        Node::Join { left, right, left_keys, right_keys, left_width, times, bounds, outer } => {
            let sides = (evaluate(left, inputs), evaluate(right, inputs));
            let pairs = join::evaluate((&sides.0, &sides.1), (left_keys, right_keys), *left_width, outer.as_ref());
            match (times, bounds) {
                (Some((left_time, right_time)), Some(bounds)) => pairs
                    .into_iter()
                    .filter(|row| {
                        let (left, right) = (&row.0[*left_time], &row.0[left_width + right_time]);
                        matches!((left, right), (Value::Timestamp(l), Value::Timestamp(r)) if bounds.contains(*l, *r))
                    })
                    .collect(),
                _ => pairs,
            }
        }
        Node::WindowAggregate {
            input, spec: WindowSpec { kind: WindowKind::Windowed { .. }, .. }, group_by, ..
        } => aggregate::evaluate(group_by, &evaluate(input, inputs)),
        Node::WindowAggregate {
            input,
            time,
            spec: WindowSpec { kind: WindowKind::Session { gap }, .. },
            group_by,
            width,
        } => aggregate::evaluate(group_by, &sessions(evaluate(input, inputs), *time, *gap, group_by, *width)),
        Node::WindowAggregate { input, time, spec, group_by, width } => {
            let window = Node::Window { input: input.clone(), time: *time, spec: *spec, width: *width };
            aggregate::evaluate(group_by, &evaluate(&window, inputs))
        }
    }
}

/// Each row with its session, from the definition: per value of the keys that are not the
/// window's, rows in time order, a session going on while the next row comes within `gap` of
/// its end (`[t, t + gap)` windows that touch merge).
fn sessions(rows: Vec<Row>, time: usize, gap: i64, group_by: &GroupBy, width: usize) -> Vec<Row> {
    let keys: Vec<&Expr> =
        group_by.keys.iter().filter(|key| !matches!(key, Expr::Column(index) if *index >= width)).collect();
    let mut groups: BTreeMap<Vec<Value>, Vec<(i64, Row)>> = BTreeMap::new();
    for row in rows {
        let Value::Timestamp(timestamp) = row.0[time] else { continue };
        groups.entry(keys.iter().map(|key| key.eval(&row.0)).collect()).or_default().push((timestamp, row));
    }
    let mut windowed = Vec::new();
    for mut group in groups.into_values() {
        group.sort_by_key(|(timestamp, _)| *timestamp);
        let mut session: Vec<Row> = Vec::new();
        let mut window = TimeWindow { start: 0, end: 0 };
        for (timestamp, row) in group {
            if !session.is_empty() && timestamp > window.end {
                windowed.extend(session.drain(..).map(|row| with_window(&row, window)));
            }
            if session.is_empty() {
                window = TimeWindow { start: timestamp, end: timestamp };
            }
            window.end = window.end.max(timestamp.saturating_add(gap));
            session.push(row);
        }
        windowed.extend(session.drain(..).map(|row| with_window(&row, window)));
    }
    windowed
}

/// `row` with `window`'s start, end and time after its columns.
pub fn with_window(row: &Row, window: TimeWindow) -> Row {
    let mut values = row.0.clone();
    values.extend([window.start, window.end, window.end - 1].map(Value::Timestamp));
    Row(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan_script;

    const SOURCE: &str = "CREATE TABLE datagen (event_type INT, \
        person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR, dateTime TIMESTAMP(3), extra VARCHAR>, \
        auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, dateTime TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR>, \
        bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime TIMESTAMP(3), extra VARCHAR>) \
        WITH ('connector' = 'nexmark', 'events.num' = '500');\n";

    fn error(script: &str) -> String {
        plan_script(&format!("{SOURCE}{script}")).expect_err("the script is refused").to_string()
    }

    /// Nexmark's bids as a view with the time attribute, 100 events per second.
    fn windowed_source() -> String {
        format!(
            "CREATE TABLE datagen ({}, dateTime AS bid.dateTime, WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND) \
             WITH ('connector' = 'nexmark', 'events.num' = '2000', 'first-event.rate' = '100');\n\
             CREATE VIEW bids AS SELECT bid.auction, bid.price, dateTime FROM datagen WHERE event_type = 2;\n\
             CREATE VIEW shifted AS SELECT auction, CASE WHEN TRUE THEN dateTime ELSE dateTime END AS dateTime FROM bids;\n\
             CREATE TABLE out (s TIMESTAMP(3), e TIMESTAMP(3), n BIGINT) WITH ('connector' = 'sluice');\n",
            crate::nexmark::DATAGEN_COLUMNS
        )
    }

    fn windowed(query: &str) -> Result<Plan, SqlError> {
        plan_script(&format!("{}INSERT INTO out {query};", windowed_source()))
    }

    #[test]
    fn a_window_aggregation_is_append_only_and_window_functions_need_a_time_attribute() {
        let tumble = "FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))";
        let plan =
            windowed(&format!("SELECT window_start, window_end, COUNT(*) {tumble} GROUP BY window_start, window_end"))
                .expect("a window aggregation plans into an append table");
        // The select list and the cast to the sink's types, fused.
        let Node::Project { input, .. } = &plan.inserts[0].input.node else { panic!("a projection") };
        assert!(matches!(input.as_ref(), Node::WindowAggregate { width: 3, .. }), "{input:?}");
        assert!(!is_updating(input));
        // Grouped by the start alone, it is a group aggregation: updating, so keyed sinks only.
        let by_start =
            windowed(&format!("SELECT window_start, window_start AS e, COUNT(*) {tumble} GROUP BY window_start"));
        let message = by_start.unwrap_err().message;
        assert!(message.contains("needs PRIMARY KEY"), "{message}");
        let not_time = windowed(
            "SELECT window_start, window_end, COUNT(*) FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(price), \
             INTERVAL '10' SECOND)) GROUP BY window_start, window_end",
        );
        assert!(not_time.unwrap_err().message.contains("DESCRIPTOR(price): not a time attribute"));
        let computed = windowed(
            "SELECT window_start, window_end, COUNT(*) FROM TABLE(TUMBLE(TABLE shifted, \
             DESCRIPTOR(dateTime), INTERVAL '10' SECOND)) GROUP BY window_start, window_end",
        );
        assert!(computed.unwrap_err().message.contains("not a time attribute"), "a computed column is none");
        for (function, error) in [
            ("HOP(TABLE bids, DESCRIPTOR(dateTime), INTERVAL '3' SECOND, INTERVAL '10' SECOND)", "whole multiple"),
            ("SESSION(TABLE bids, DESCRIPTOR(dateTime), INTERVAL '3' SECOND)", "unsupported: SESSION"),
            ("TUMBLE(TABLE bids, DESCRIPTOR(dateTime))", "takes 3 or 4 arguments"),
            ("TUMBLE(TABLE bids, dateTime, INTERVAL '1' SECOND)", "DESCRIPTOR(column)"),
            ("TUMBLE(TABLE nowhere, DESCRIPTOR(dateTime), INTERVAL '1' SECOND)", "unknown table or view `nowhere`"),
        ] {
            let text = format!(
                "SELECT window_start, window_end, COUNT(*) FROM TABLE({function}) GROUP BY window_start, window_end"
            );
            let message = windowed(&text).unwrap_err().message;
            assert!(message.contains(error), "{function}: {message}");
        }
    }

    #[test]
    fn window_aggregates_count_the_rows_of_each_window_as_flink_defines_them() {
        let query = "SELECT window_start, window_end, COUNT(*) FROM TABLE(HOP(TABLE bids, DESCRIPTOR(dateTime), \
             INTERVAL '2' SECOND, INTERVAL '6' SECOND)) GROUP BY window_start, window_end";
        let plan = windowed(query).expect("it plans");
        let SourceConnector::Nexmark(options) = &plan.sources["datagen"].connector else { panic!("a nexmark source") };
        let events: Vec<Row> = nexmark::events(options).collect();
        let times: Vec<i64> = events
            .iter()
            .filter_map(|event| match &event.0[3] {
                Value::Row(bid) => match bid[5] {
                    Value::Timestamp(millis) => Some(millis),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        let rows = evaluate(&plan.inserts[0].input.node, &BTreeMap::from([("datagen".to_string(), events)]));
        assert!(rows.len() > 5, "{rows:?}");
        for row in rows {
            let [Value::Timestamp(start), Value::Timestamp(end), Value::Int(count)] = row.0[..] else {
                panic!("{row:?}")
            };
            assert_eq!((end - start, start.rem_euclid(2000)), (6000, 0), "a 6-second window every 2 seconds");
            let inside = times.iter().filter(|time| (start..end).contains(*time)).count() as i64;
            assert_eq!(count, inside, "window [{start}, {end})");
        }
    }

    #[test]
    fn a_session_group_window_merges_each_keys_rows_that_come_within_the_gap() {
        let session = |gap: &str| format!("dateTime, INTERVAL '{gap}' SECOND");
        let script = format!(
            "{}CREATE TABLE per_auction (a BIGINT, s TIMESTAMP(3), e TIMESTAMP(3), n BIGINT) WITH ('connector' = 'sluice');\n\
             INSERT INTO per_auction SELECT auction, SESSION_START({}), SESSION_END({}), COUNT(*) FROM bids \
             GROUP BY auction, SESSION({});",
            windowed_source(),
            session("1"),
            session("1"),
            session("1")
        );
        let plan = plan_script(&script).expect("q11's form plans");
        let gap = |node: &Node| {
            matches!(
                node,
                Node::WindowAggregate { spec: WindowSpec { kind: WindowKind::Session { gap: 1000 }, .. }, .. }
            )
        };
        assert!(plan.inserts[0].input.node.any(&gap), "{:?}", plan.inserts[0].input.node);
        let SourceConnector::Nexmark(options) = &plan.sources["datagen"].connector else { panic!("a nexmark source") };
        let events: Vec<Row> = nexmark::events(options).collect();
        let mut bids: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
        for event in &events {
            if let Value::Row(bid) = &event.0[3]
                && let (Value::Int(auction), Value::Timestamp(time)) = (&bid[0], &bid[5])
            {
                bids.entry(*auction).or_default().push(*time);
            }
        }
        let rows = evaluate(&plan.inserts[0].input.node, &BTreeMap::from([("datagen".to_string(), events)]));
        let mut sessions: BTreeMap<i64, Vec<(i64, i64, i64)>> = BTreeMap::new();
        for row in &rows {
            let [Value::Int(auction), Value::Timestamp(start), Value::Timestamp(end), Value::Int(count)] = row.0[..]
            else {
                panic!("{row:?}")
            };
            let times = &bids[&auction];
            let inside = times.iter().filter(|time| (start..=end - 1000).contains(*time)).count() as i64;
            assert_eq!(count, inside, "auction {auction}'s session [{start}, {end})");
            assert!(times.contains(&start) && times.contains(&(end - 1000)), "a session spans its first and last bid");
            sessions.entry(auction).or_default().push((start, end, count));
        }
        for (auction, mut list) in sessions {
            list.sort();
            assert!(list.windows(2).all(|pair| pair[1].0 > pair[0].1), "auction {auction}'s sessions touch: {list:?}");
            assert_eq!(list.iter().map(|(_, _, count)| count).sum::<i64>(), bids[&auction].len() as i64);
        }
        assert!(rows.len() > bids.len(), "some auction has two sessions");
        let group = "GROUP BY auction, SESSION(dateTime, INTERVAL '1' SECOND)";
        let other = windowed(&format!(
            "SELECT SESSION_START({}), SESSION_END({}), COUNT(*) FROM bids {group}",
            session("2"),
            session("1")
        ));
        assert!(other.unwrap_err().message.contains("is not of the query's group window, SESSION(dateTime"));
        let untimed = windowed(
            "SELECT SESSION_START(dateTime, INTERVAL '1' SECOND), SESSION_END(dateTime, INTERVAL '1' SECOND), COUNT(*) \
             FROM shifted GROUP BY auction, SESSION(dateTime, INTERVAL '1' SECOND)",
        );
        assert!(untimed.unwrap_err().message.contains("not a time attribute"));
    }

    #[test]
    fn a_tumble_or_hop_group_window_gives_the_rows_of_the_window_table_function() {
        for (group, tvf) in [
            ("TUMBLE(dateTime, INTERVAL '2' SECOND)", "TUMBLE(TABLE bids, DESCRIPTOR(dateTime), INTERVAL '2' SECOND)"),
            (
                "HOP(dateTime, INTERVAL '1' SECOND, INTERVAL '3' SECOND)",
                "HOP(TABLE bids, DESCRIPTOR(dateTime), INTERVAL '1' SECOND, INTERVAL '3' SECOND)",
            ),
        ] {
            let name = &group[..group.find('(').unwrap()];
            let legacy = windowed(&format!(
                "SELECT {name}_START({args}), {name}_END({args}), COUNT(*) FROM bids GROUP BY auction, {group}",
                args = &group[name.len() + 1..group.len() - 1]
            ))
            .expect("a group window plans");
            let table = windowed(&format!(
                "SELECT window_start, window_end, COUNT(*) FROM TABLE({tvf}) GROUP BY auction, window_start, window_end"
            ))
            .expect("the window table function plans");
            let SourceConnector::Nexmark(options) = &legacy.sources["datagen"].connector else { panic!("nexmark") };
            let inputs = BTreeMap::from([("datagen".to_string(), nexmark::events(options).collect())]);
            let mut rows = [&legacy, &table].map(|plan| evaluate(&plan.inserts[0].input.node, &inputs));
            rows.iter_mut().for_each(|rows| rows.sort());
            assert!(rows[0].len() > 10, "{group}: {:?}", rows[0]);
            assert_eq!(rows[0], rows[1], "{group}");
        }
    }

    #[test]
    fn functions_bind_with_their_types_and_unknown_java_classes_are_refused() {
        let sink = "CREATE TABLE out (c VARCHAR, n BIGINT) WITH ('connector' = 'sluice');\n";
        let ok = |query: &str| plan_script(&format!("{SOURCE}{sink}INSERT INTO out {query};"));
        assert!(
            ok("SELECT lower(bid.channel), HOUR(bid.dateTime) FROM datagen WHERE bid.channel IN ('a', 'b')").is_ok()
        );
        let wrong = ok("SELECT lower(bid.price), 1 FROM datagen").unwrap_err().message;
        assert_eq!(wrong, "LOWER(BIGINT): no such signature");
        let pattern = ok("SELECT REGEXP_EXTRACT(bid.url, bid.channel, 1), 1 FROM datagen").unwrap_err().message;
        assert!(pattern.contains("must be a string literal"), "{pattern}");
        let java = error("CREATE FUNCTION f AS 'com.example.F';");
        assert!(java.contains("unsupported: CREATE FUNCTION f AS 'com.example.F'"), "{java}");
        let known = format!(
            "{SOURCE}CREATE TEMPORARY FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar';\n{sink}\
             INSERT INTO out SELECT bid.extra, count_char(bid.extra, 'c') FROM datagen;"
        );
        assert!(plan_script(&known).is_ok(), "{:?}", plan_script(&known).err());
    }

    #[test]
    fn a_join_s_equalities_become_keys_its_one_side_conjuncts_go_down_and_null_keys_meet_nothing() {
        let script = format!(
            "{}CREATE TABLE pairs (a BIGINT, b BIGINT) WITH ('connector' = 'sluice');\n\
             INSERT INTO pairs SELECT B.auction, A.id FROM bids AS B, auctions A \
             WHERE B.auction = A.id AND A.category = 10 AND B.price > A.id;",
            "CREATE TABLE datagen (".to_string()
                + crate::nexmark::DATAGEN_COLUMNS
                + ") WITH ('connector' = 'nexmark', 'events.num' = '2000');\n\
                   CREATE VIEW bids AS SELECT bid.auction, bid.price FROM datagen WHERE event_type = 2;\n\
                   CREATE VIEW auctions AS SELECT auction.id, auction.category FROM datagen WHERE event_type = 1;\n"
        );
        let plan = plan_script(&script).expect("a comma join with its condition in WHERE plans");
        let Node::Project { input, .. } = &plan.inserts[0].input.node else { panic!("a projection") };
        let Node::Filter { input: join, predicate } = input.as_ref() else { panic!("the residual above: {input:?}") };
        assert_eq!(predicate.to_string(), "($1 > $2)", "B.price > A.id reads both sides");
        let Node::Join { left_keys, right_keys, right, .. } = join.as_ref() else { panic!("a join") };
        assert_eq!((left_keys[0].to_string(), right_keys[0].to_string()), ("$0".to_string(), "$0".to_string()));
        assert!(matches!(right.as_ref(), Node::Filter { .. }), "A.category = 10 went down to the right side");
        let rows = |values: &[Option<i64>]| -> Vec<Row> {
            values.iter().map(|value| Row(vec![value.map_or(Value::Null, Value::Int)])).collect()
        };
        let (left, right) = (rows(&[Some(1), None, Some(2)]), rows(&[None, Some(1), Some(1)]));
        let keys = [Expr::Column(0)];
        let joined = join::evaluate((&left, &right), (&keys, &keys), 1, None);
        assert_eq!(joined.len(), 2, "1 meets both 1s; NULL meets nothing: {joined:?}");
        let full = Outer { left: true, right: true, condition: None, right_width: 1 };
        let joined = join::evaluate((&left, &right), (&keys, &keys), 1, Some(&full));
        let shown: Vec<String> = joined.iter().map(|row| format!("{:?}", row.0)).collect();
        assert_eq!(
            shown,
            ["[Int(1), Int(1)]", "[Int(1), Int(1)]", "[Null, Null]", "[Int(2), Null]", "[Null, Null]"],
            "a full join keeps each side's NULL-keyed row, padded"
        );
        let ambiguous = plan_script(&script.replace("SELECT B.auction, A.id", "SELECT auction, id, price"));
        assert!(ambiguous.is_err(), "three columns for two");
        let cross = plan_script(&script.replace("B.auction = A.id AND ", "")).unwrap_err().message;
        assert!(cross.contains("cross join"), "{cross}");
        let outer = plan_script(&script.replace(
            "FROM bids AS B, auctions A WHERE B.auction = A.id AND",
            "FROM bids AS B LEFT JOIN auctions A ON B.auction = A.id WHERE",
        ));
        let outer = outer.unwrap_err().message;
        assert!(
            outer.contains("sink `pairs` cannot take the query's updates") && outer.contains("PRIMARY KEY"),
            "{outer}"
        );
        let semi = plan_script(
            &script.replace("FROM bids AS B, auctions A WHERE", "FROM bids AS B LEFT SEMI JOIN auctions A ON"),
        );
        assert!(semi.unwrap_err().message.contains("unsupported join (LeftSemi)"));
        let both = plan_script(&script.replace("SELECT B.auction, A.id", "SELECT id, id"));
        assert!(both.is_ok(), "a repeated column is renamed, as Calcite does: {:?}", both.err());
    }

    #[test]
    fn row_number_bounded_by_the_enclosing_query_is_a_top_n_keyed_by_partition_and_number() {
        let top = |sink_key: &str, bound: &str| {
            plan_script(&format!(
                "{}CREATE TABLE top (auction BIGINT, price BIGINT, rn BIGINT, PRIMARY KEY ({sink_key}) NOT ENFORCED) \
                 WITH ('connector' = 'sluice');\n\
                 INSERT INTO top SELECT auction, price, rn FROM (SELECT auction, price, \
                 ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rn FROM bids){bound};",
                windowed_source()
            ))
        };
        let plan = top("auction, rn", " WHERE rn <= 3").expect("a Top-N plans");
        let SourceConnector::Nexmark(options) = &plan.sources["datagen"].connector else { panic!("a nexmark source") };
        let inputs = BTreeMap::from([("datagen".to_string(), nexmark::events(options).collect())]);
        let rows = evaluate(&plan.inserts[0].input.node, &inputs);
        let mut by_auction: BTreeMap<Value, Vec<(Value, Value)>> = BTreeMap::new();
        for row in rows {
            by_auction.entry(row.0[0].clone()).or_default().push((row.0[1].clone(), row.0[2].clone()));
        }
        assert!(by_auction.len() > 5);
        for (auction, ranked) in by_auction {
            assert!(ranked.len() <= 3, "auction {auction}: {ranked:?}");
            let numbers: Vec<Value> = ranked.iter().map(|(_, number)| number.clone()).collect();
            assert_eq!(numbers, (1..=ranked.len() as i64).map(Value::Int).collect::<Vec<_>>());
            assert!(ranked.windows(2).all(|pair| pair[0].0 >= pair[1].0), "prices descend: {ranked:?}");
        }
        let missing = top("auction, rn", "").unwrap_err().message;
        assert!(missing.contains("ROW_NUMBER() with no `WHERE rn <= N`"), "{missing}");
        assert!(top("auction, rn", " WHERE rn <= 0").unwrap_err().message.contains("keeps 1 to"));
        let key = top("auction", " WHERE rn <= 3").unwrap_err().message;
        assert!(key.contains("needs PRIMARY KEY (auction, rn)"), "{key}");
        // With one row per partition, the partition is the key (Flink's deduplication).
        assert!(top("auction", " WHERE rn = 1").is_ok());
    }

    #[test]
    fn a_window_aggregation_of_a_window_aggregation_keeps_its_windows_and_is_append_only() {
        let counts = "SELECT auction, COUNT(*) AS n, window_start AS s, window_end AS e FROM TABLE(TUMBLE(TABLE bids, \
             DESCRIPTOR(dateTime), INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end";
        let plan = windowed(&format!("SELECT s, e, MAX(n) FROM ({counts}) C GROUP BY s, e")).expect("it plans");
        let node = &plan.inserts[0].input.node;
        assert!(!is_updating(node), "a window aggregation of one is append-only: {node:?}");
        assert!(node.any(&|node| matches!(
            node,
            Node::WindowAggregate { spec: WindowSpec { kind: WindowKind::Windowed { size: 10_000 }, .. }, .. }
        )));
        // Grouped by the start alone, it is a group aggregation again.
        let by_start = windowed(&format!("SELECT s, s AS e2, MAX(n) FROM ({counts}) C GROUP BY s"));
        assert!(by_start.unwrap_err().message.contains("needs PRIMARY KEY"));
        // An aggregate over updating rows takes their retractions.
        let grouped = "SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction";
        let sum = plan_script(&format!(
            "{}CREATE TABLE totals (n BIGINT, c BIGINT, PRIMARY KEY (n) NOT ENFORCED) WITH ('connector' = 'sluice');\n\
             INSERT INTO totals SELECT n, COUNT(*) FROM ({grouped}) G GROUP BY n;",
            windowed_source()
        ));
        assert!(sum.is_ok(), "{:?}", sum.err());
        // MIN and MAX too: over an input that retracts, they keep their values in views.
        let max = plan_script(&format!(
            "{}CREATE TABLE tops (n BIGINT, top BIGINT, PRIMARY KEY (n) NOT ENFORCED) WITH ('connector' = 'sluice');\n\
             INSERT INTO tops SELECT n, MAX(auction) FROM ({grouped}) G GROUP BY n;",
            windowed_source()
        ));
        assert!(max.is_ok(), "{:?}", max.err());
    }

    #[test]
    fn an_updating_query_needs_a_sink_keyed_by_its_group_key() {
        let grouped = "INSERT INTO out SELECT bid.auction, COUNT(*) FROM datagen GROUP BY bid.auction;";
        let no_key = error(&format!("CREATE TABLE out (a BIGINT, n BIGINT) WITH ('connector' = 'sluice');\n{grouped}"));
        assert!(no_key.contains("needs PRIMARY KEY (a) NOT ENFORCED"), "{no_key}");
        let wrong_key = error(&format!(
            "CREATE TABLE out (a BIGINT, n BIGINT, PRIMARY KEY (n) NOT ENFORCED) WITH ('connector' = 'sluice');\n{grouped}"
        ));
        assert!(wrong_key.contains("needs PRIMARY KEY (a)"), "{wrong_key}");
        let keyed = format!(
            "{SOURCE}CREATE TABLE out (a BIGINT, n BIGINT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'sluice');\n{grouped}"
        );
        assert!(plan_script(&keyed).is_ok(), "{:?}", plan_script(&keyed).err());
    }

    #[test]
    fn a_column_neither_grouped_nor_aggregated_and_unsupported_features_are_named() {
        let sink =
            "CREATE TABLE out (a BIGINT, n BIGINT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'sluice');\n";
        let ungrouped =
            error(&format!("{sink}INSERT INTO out SELECT bid.auction, bid.price FROM datagen GROUP BY bid.auction;"));
        assert!(ungrouped.contains("neither in GROUP BY nor in an aggregate"), "{ungrouped}");
        let distinct = error(&format!(
            "{sink}INSERT INTO out SELECT bid.auction, SUM(DISTINCT bid.bidder) FROM datagen GROUP BY bid.auction;"
        ));
        assert!(distinct.contains("unsupported: DISTINCT"), "{distinct}");
        let join = error(&format!(
            "{sink}INSERT INTO out SELECT 1, 2 FROM datagen a FULL OUTER JOIN datagen b USING (event_type);"
        ));
        assert!(join.contains("unsupported join (FullOuter)"), "{join}");
        assert!(error("INSERT INTO nowhere SELECT 1 FROM datagen;").contains("no sink table"));
        let text = format!(
            "{SOURCE}CREATE TABLE words (w VARCHAR, a BIGINT) WITH ('connector' = 'sluice');\n\
             INSERT INTO words SELECT 'COUNT(*)', bid.auction FROM datagen;"
        );
        assert!(plan_script(&text).is_ok(), "a string naming an aggregate is not one: {:?}", plan_script(&text).err());
    }

    #[test]
    fn a_group_s_aggregates_and_having_evaluate_as_flink_defines_them() {
        let script = format!(
            "{SOURCE}CREATE TABLE out (a BIGINT, n BIGINT, s BIGINT, lo BIGINT, hi BIGINT, mean BIGINT, \
             PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'sluice');\n\
             INSERT INTO out SELECT bid.auction, COUNT(*), SUM(bid.price), MIN(bid.price), MAX(bid.price), AVG(bid.price) \
             FROM datagen WHERE event_type = 2 GROUP BY bid.auction HAVING COUNT(*) > 2;"
        );
        let plan = plan_script(&script).expect("it plans");
        let SourceConnector::Nexmark(options) = &plan.sources["datagen"].connector else { panic!("a nexmark source") };
        let events: Vec<Row> = nexmark::events(options).collect();
        let inputs = BTreeMap::from([("datagen".to_string(), events.clone())]);
        let rows = evaluate(&plan.inserts[0].input.node, &inputs);
        assert!(!rows.is_empty());
        for row in rows {
            let Value::Int(auction) = row.0[0] else { panic!("an auction id") };
            let prices: Vec<i64> = events
                .iter()
                .filter_map(|event| match &event.0[3] {
                    Value::Row(bid) if bid[0] == Value::Int(auction) => match bid[2] {
                        Value::Int(price) => Some(price),
                        _ => None,
                    },
                    _ => None,
                })
                .collect();
            let (count, sum) = (prices.len() as i64, prices.iter().sum::<i64>());
            assert!(count > 2, "HAVING COUNT(*) > 2 kept auction {auction} of {count} bids");
            let expected =
                [auction, count, sum, *prices.iter().min().unwrap(), *prices.iter().max().unwrap(), sum / count];
            assert_eq!(row.0, expected.map(Value::Int).to_vec(), "auction {auction}");
        }
    }
}
