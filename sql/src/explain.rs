//! `EXPLAIN`: a plan as text, one tree per `INSERT INTO`, as Flink's optimized plan prints it
//! (`Sink`, `Calc`, `GroupAggregate`, `TableSourceScan`; a column is `$i` of its input, as in
//! Calcite), with each node's changelog mode (`[I]` append-only, `[I,UB,UA,D]` updating).

use std::fmt::{self, Write as _};

use sluice_engine::api::interval_join::IntervalBounds;

use crate::aggregate::{Call, Function, GroupBy};
use crate::expr::{Expr, Op};
use crate::plan::{Insert, Node, Outer, Plan, is_updating, physical_columns};

/// The plan tree of each of `inserts` (of `plan`).
pub fn explain(plan: &Plan, inserts: &[Insert]) -> String {
    let mut text = String::new();
    for insert in inserts {
        let fields: Vec<&str> = insert.sink.columns.iter().map(|(name, _)| name.as_str()).collect();
        let key: Vec<&str> = insert.sink.primary_key.iter().map(|index| fields[*index]).collect();
        let key = if key.is_empty() { String::new() } else { format!(", primaryKey=[{}]", key.join(", ")) };
        let mode = changelog_mode(&insert.input.node);
        let _ = writeln!(text, "Sink(table=[{}], fields=[{}]{key}) {mode}", insert.sink.name, fields.join(", "));
        node(&mut text, plan, &insert.input.node, 1);
        text.push('\n');
    }
    text
}

fn changelog_mode(node: &Node) -> &'static str {
    if is_updating(node) { "[I,UB,UA,D]" } else { "[I]" }
}

fn node(text: &mut String, plan: &Plan, current: &Node, depth: usize) {
    let indent = format!("{}+- ", "   ".repeat(depth - 1));
    let mode = changelog_mode(current);
    let input = match current {
        Node::Scan { table } => {
            let columns = plan.sources.get(table).map(|source| physical_columns(&source.def)).unwrap_or_default();
            let fields: Vec<&str> = columns.iter().map(|(name, _)| name.as_str()).collect();
            let _ = writeln!(text, "{indent}TableSourceScan(table=[{table}], fields=[{}]) {mode}", fields.join(", "));
            return;
        }
        Node::Filter { input, predicate } => {
            let _ = writeln!(text, "{indent}Calc(where=[{predicate}]) {mode}");
            input
        }
        Node::Project { input, exprs } => {
            let _ = writeln!(text, "{indent}Calc(select=[{}]) {mode}", list(exprs));
            input
        }
        Node::Aggregate { input, group_by } => {
            let _ = writeln!(text, "{indent}GroupAggregate({}) {mode}", aggregate(group_by));
            input
        }
        Node::Window { input, time, spec, .. } => {
            let _ = writeln!(text, "{indent}WindowTableFunction(window=[{spec}], time_col=[${time}]) {mode}");
            input
        }
        Node::WindowAggregate { input, time, spec, group_by, .. } => {
            let window = format!("window=[{spec}], time_col=[${time}]");
            let _ = writeln!(text, "{indent}WindowAggregate({window}, {}) {mode}", aggregate(group_by));
            input
        }
        Node::Rank { input, partition, order, limit, .. } => {
            let order: Vec<String> = order
                .0
                .iter()
                .map(|(expr, descending)| format!("{expr} {}", if *descending { "DESC" } else { "ASC" }))
                .collect();
            let limit = limit.map_or("none".to_string(), |limit| limit.to_string());
            let spec = format!("partitionBy=[{}], orderBy=[{}], rankEnd=[{limit}]", list(partition), order.join(", "));
            let _ = writeln!(text, "{indent}Rank(rankType=[ROW_NUMBER], {spec}, outputRankNumber=[true]) {mode}");
            input
        }
        Node::Join { left, right, left_keys, right_keys, times, bounds, outer, .. } => {
            let mut keys = format!("leftKeys=[{}], rightKeys=[{}]", list(left_keys), list(right_keys));
            if let Some(condition) = outer.as_ref().and_then(|outer| outer.condition.as_ref()) {
                let _ = write!(keys, ", where=[{condition}]");
            }
            match times.zip(*bounds) {
                Some(((left_time, right_time), IntervalBounds { lower, upper })) => {
                    let window = format!(
                        "windowBounds=[isRowTime=true, leftLowerBound={lower}, leftUpperBound={upper}, \
                         leftTimeIndex={left_time}, rightTimeIndex={right_time}]"
                    );
                    let _ = writeln!(text, "{indent}IntervalJoin(joinType=[InnerJoin], {window}, {keys}) {mode}");
                }
                None => {
                    let join_type = Outer::join_type(outer.as_ref());
                    let _ = writeln!(text, "{indent}Join(joinType=[{join_type}], {keys}) {mode}");
                }
            }
            node(text, plan, left, depth + 1);
            right
        }
    };
    node(text, plan, input, depth + 1);
}

fn aggregate(group_by: &GroupBy) -> String {
    let calls: Vec<String> = group_by.calls.iter().map(Call::to_string).collect();
    let mut text = format!("groupBy=[{}], select=[{}]", list(&group_by.keys), calls.join(", "));
    if let Some(having) = &group_by.having {
        let _ = write!(text, ", having=[{having}]");
    }
    text
}

fn list(exprs: &[Expr]) -> String {
    exprs.iter().map(Expr::to_string).collect::<Vec<_>>().join(", ")
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_call(f, self)?;
        match &self.filter {
            Some(filter) => write!(f, " FILTER {filter}"),
            None => Ok(()),
        }
    }
}

fn write_call(f: &mut fmt::Formatter<'_>, call: &Call) -> fmt::Result {
    {
        let name = match call.function {
            Function::CountStar => return write!(f, "COUNT(*)"),
            Function::Count => "COUNT",
            Function::Sum => "SUM",
            Function::Min => "MIN",
            Function::Max => "MAX",
            Function::Avg => "AVG",
        };
        let distinct = if call.distinct { "DISTINCT " } else { "" };
        match &call.arg {
            Some(arg) => write!(f, "{name}({distinct}{arg})"),
            None => write!(f, "{name}()"),
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Add => "+",
            Op::Sub => "-",
            Op::Mul => "*",
            Op::Div => "/",
            Op::Mod => "%",
            Op::Eq => "=",
            Op::NotEq => "<>",
            Op::Lt => "<",
            Op::LtEq => "<=",
            Op::Gt => ">",
            Op::GtEq => ">=",
        })
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Column(index) => write!(f, "${index}"),
            Expr::Field(row, index) => write!(f, "{row}.${index}"),
            Expr::Literal(value) => write!(f, "{}", value.to_sql()),
            Expr::Binary(op, left, right) => write!(f, "({left} {op} {right})"),
            Expr::And(left, right) => write!(f, "({left} AND {right})"),
            Expr::Or(left, right) => write!(f, "({left} OR {right})"),
            Expr::Not(inner) => write!(f, "NOT({inner})"),
            Expr::IsNull(inner, false) => write!(f, "IS NULL({inner})"),
            Expr::IsNull(inner, true) => write!(f, "IS NOT NULL({inner})"),
            Expr::Case(arms, otherwise) => {
                f.write_str("CASE(")?;
                for (condition, result) in arms {
                    write!(f, "{condition}, {result}, ")?;
                }
                write!(f, "{otherwise})")
            }
            Expr::Rescale(inner, scale) => write!(f, "CAST({inner} AS DECIMAL(_, {scale}))"),
            Expr::Call(function, args) => write!(f, "{function}({})", list(args)),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::plan_script;

    #[test]
    fn a_grouped_insert_explains_as_a_tree_with_changelog_modes() {
        let script = format!(
            "CREATE TABLE datagen ({}) WITH ('connector' = 'nexmark');
            CREATE TABLE out (auction BIGINT, bids BIGINT, PRIMARY KEY (auction) NOT ENFORCED)
              WITH ('connector' = 'sluice');
            INSERT INTO out SELECT bid.auction, COUNT(*) FROM datagen WHERE event_type = 2
              GROUP BY bid.auction HAVING MAX(bid.price) > 10;",
            crate::nexmark::DATAGEN_COLUMNS
        );
        let plan = plan_script(&script).unwrap();
        let text = super::explain(&plan, &plan.inserts);
        let expected = "\
Sink(table=[out], fields=[auction, bids], primaryKey=[auction]) [I,UB,UA,D]
+- Calc(select=[$0, $1]) [I,UB,UA,D]
   +- GroupAggregate(groupBy=[$3.$0], select=[COUNT(*), MAX($3.$2)], having=[($2 > 10)]) [I,UB,UA,D]
      +- Calc(where=[($0 = 2)]) [I]
         +- TableSourceScan(table=[datagen], fields=[event_type, person, auction, bid]) [I]
";
        assert_eq!(text.trim_end(), expected.trim_end(), "{text}");
    }
}
