//! Flink's window table functions, `TUMBLE`, `HOP` and `CUMULATE`:
//! `FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))` is the input's
//! rows, each with `window_start`, `window_end` and `window_time` (`window_end` − 1 ms, the
//! new time attribute) of every window it falls in. Grouped by `window_start` and `window_end`
//! it is Flink's window aggregation: one final row per window and key, emitted once the
//! watermark passes the window's end (an append-only result, unlike a group aggregation).
//!
//! [`WindowSpec::windows`] enumerates a timestamp's windows from the definitions (the
//! reference's); the engine's assigners (`TumblingEventTimeWindows`, `SlidingEventTimeWindows`,
//! through [`SqlWindows`]) place elements when the job runs.

use std::fmt;

use sluice_engine::time::{
    EventTimeSessionWindows, SlidingEventTimeWindows, TimeWindow, Timestamp, TumblingEventTimeWindows, WindowAssigner,
};
use sqlparser::ast;
use sqlparser::tokenizer::Location;

use crate::expr::interval_millis;
use crate::parse::SqlError;
use crate::value::SqlType;

/// The columns a window table function adds, after its input's.
pub const WINDOW_COLUMNS: [&str; 3] = ["window_start", "window_end", "window_time"];

/// Which windows, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowKind {
    /// `TUMBLE(data, timecol, size [, offset])`: windows of `size`, one after the other.
    Tumble {
        /// The windows' length.
        size: i64,
    },
    /// `HOP(data, timecol, slide, size [, offset])`: windows of `size` starting every `slide`.
    Hop {
        /// How often a window starts.
        slide: i64,
        /// The windows' length.
        size: i64,
    },
    /// `CUMULATE(data, timecol, step, size [, offset])`: from each multiple of `size`, windows
    /// that end every `step` until the `size`-long one.
    Cumulate {
        /// How much each window is longer than the one before.
        step: i64,
        /// The longest window's length.
        size: i64,
    },
    /// Sessions (`GROUP BY key, SESSION(timecol, gap)`): a row opens `[t, t + gap)`, and a key's
    /// windows that touch merge, so a session ends `gap` after its last row. Only aggregated:
    /// a row's session is known once no row can join it.
    Session {
        /// How long a session stays open without a row.
        gap: i64,
    },
    /// The windows a window aggregation's result rows are of: a row whose event timestamp is
    /// `t` (its window's last millisecond) is in `[t + 1 − size, t + 1)`.
    Windowed {
        /// The windows' length.
        size: i64,
    },
}

/// A window table function's windows: its kind and the alignment offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowSpec {
    /// The kind and its lengths.
    pub kind: WindowKind,
    /// Window starts are aligned to multiples of the period plus this (`|offset|` below it).
    pub offset: i64,
}

impl WindowSpec {
    /// The windows `timestamp` is in, earliest start first (shortest first for `CUMULATE`).
    pub fn windows(&self, timestamp: Timestamp) -> Vec<TimeWindow> {
        let aligned = |period: i64| timestamp - (timestamp - self.offset).rem_euclid(period);
        match self.kind {
            WindowKind::Tumble { size } => {
                let start = aligned(size);
                vec![TimeWindow { start, end: start + size }]
            }
            WindowKind::Hop { slide, size } => {
                let last = aligned(slide);
                let first = last - (size / slide - 1) * slide;
                (0..size / slide)
                    .map(|index| first + index * slide)
                    .map(|start| TimeWindow { start, end: start + size })
                    .collect()
            }
            WindowKind::Cumulate { step, size } => {
                let start = aligned(size);
                (1..=size / step)
                    .map(|steps| TimeWindow { start, end: start + steps * step })
                    .filter(|window| window.end > timestamp)
                    .collect()
            }
            WindowKind::Windowed { size } => {
                let end = timestamp.saturating_add(1);
                vec![TimeWindow { start: end.saturating_sub(size), end }]
            }
            // The window a row opens; its session is the merge of those that touch.
            WindowKind::Session { gap } => vec![TimeWindow { start: timestamp, end: timestamp.saturating_add(gap) }],
        }
    }

    /// The windows' length, if they all have the same (a `CUMULATE`'s differ).
    pub fn size(&self) -> Option<i64> {
        match self.kind {
            WindowKind::Tumble { size } | WindowKind::Hop { size, .. } | WindowKind::Windowed { size } => Some(size),
            WindowKind::Cumulate { .. } | WindowKind::Session { .. } => None,
        }
    }

    /// True for sessions: windows that merge, so a row's window is not known from its time.
    pub fn is_merging(&self) -> bool {
        matches!(self.kind, WindowKind::Session { .. })
    }
}

/// The engine's assigner of a window table function's windows: the engine's own tumbling and
/// sliding assigners (those Flink's DataStream API has), and `CUMULATE`'s from its definition
/// (Flink's `CumulativeWindowAssigner` of window aggregation).
#[derive(Clone, Copy, Debug)]
pub struct SqlWindows(pub WindowSpec);

impl WindowAssigner for SqlWindows {
    fn assign(&self, timestamp: Timestamp) -> Vec<TimeWindow> {
        let checked = "internal: a window's lengths were checked when it was bound";
        let spec = self.0;
        match spec.kind {
            WindowKind::Tumble { size } => {
                TumblingEventTimeWindows::of(size, spec.offset).expect(checked).assign(timestamp)
            }
            WindowKind::Hop { slide, size } => {
                SlidingEventTimeWindows::of(size, slide, spec.offset).expect(checked).assign(timestamp)
            }
            WindowKind::Session { gap } => EventTimeSessionWindows::with_gap(gap).expect(checked).assign(timestamp),
            WindowKind::Cumulate { .. } | WindowKind::Windowed { .. } => spec.windows(timestamp),
        }
    }

    fn is_merging(&self) -> bool {
        self.0.is_merging()
    }
}

impl fmt::Display for WindowSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            WindowKind::Tumble { size } => write!(f, "TUMBLE(size=[{size} ms]")?,
            WindowKind::Hop { slide, size } => write!(f, "HOP(slide=[{slide} ms], size=[{size} ms]")?,
            WindowKind::Cumulate { step, size } => write!(f, "CUMULATE(step=[{step} ms], size=[{size} ms]")?,
            WindowKind::Windowed { size } => write!(f, "WINDOWED(size=[{size} ms]")?,
            WindowKind::Session { gap } => write!(f, "SESSION(gap=[{gap} ms]")?,
        }
        if self.offset != 0 {
            write!(f, ", offset=[{} ms]", self.offset)?;
        }
        f.write_str(")")
    }
}

/// A window table function call as written: its input table and time column's names and its
/// windows.
pub struct WindowCall {
    /// The table or view the function reads (`TABLE name`).
    pub table: String,
    /// The time column (`DESCRIPTOR(col)`).
    pub time_column: String,
    /// The windows.
    pub spec: WindowSpec,
}

/// Binds `TABLE(TUMBLE(…))`'s function call. `TABLE name` arguments reach here as `name` (see
/// `parse`): sqlparser reads no table argument.
pub fn bind_call(function: &ast::Function, at: Location) -> Result<WindowCall, SqlError> {
    let fail = |message: String| SqlError::at(at, message);
    let name = function.name.to_string().to_ascii_uppercase();
    let ast::FunctionArguments::List(list) = &function.args else {
        return Err(fail(format!("{name} takes its arguments in parentheses")));
    };
    let mut args = Vec::new();
    for arg in &list.args {
        match arg {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(expr)) => args.push(expr),
            other => return Err(fail(format!("unsupported argument `{other}` of {name}: give them in order"))),
        }
    }
    let lengths = match (name.as_str(), args.len()) {
        ("TUMBLE", 3 | 4) => 1,
        ("HOP" | "CUMULATE", 4 | 5) => 2,
        ("TUMBLE", _) => {
            return Err(fail("TUMBLE(TABLE t, DESCRIPTOR(col), size [, offset]) takes 3 or 4 arguments".into()));
        }
        ("HOP" | "CUMULATE", _) => {
            return Err(fail(format!(
                "{name}(TABLE t, DESCRIPTOR(col), step, size [, offset]) takes 4 or 5 arguments"
            )));
        }
        ("SESSION", _) => {
            return Err(fail(
                "unsupported: SESSION windows as a table function; Sluice has the group window \
                 `GROUP BY key, SESSION(timecol, gap)` with SESSION_START and SESSION_END"
                    .into(),
            ));
        }
        _ => return Err(fail(format!("unsupported table function {name}: Sluice has TUMBLE, HOP and CUMULATE"))),
    };
    let table = match args[0] {
        ast::Expr::Identifier(ident) => ident.value.clone(),
        other => return Err(fail(format!("{name}'s first argument is `TABLE name`, not `{other}`"))),
    };
    let time_column =
        descriptor(args[1]).ok_or_else(|| fail(format!("{name}'s second argument is DESCRIPTOR(column)")))?;
    let mut millis = Vec::new();
    for arg in &args[2..] {
        let ast::Expr::Interval(interval) = arg else {
            return Err(fail(format!("{name}'s `{arg}`: a length is an INTERVAL such as INTERVAL '10' SECOND")));
        };
        millis.push(interval_millis(interval).ok_or_else(|| fail(format!("unsupported interval `{arg}`")))?);
    }
    let offset = millis.get(lengths).copied().unwrap_or(0);
    let kind = match (name.as_str(), millis[0], millis.get(1).copied().unwrap_or(0)) {
        ("TUMBLE", size, _) => WindowKind::Tumble { size },
        ("HOP", slide, size) => WindowKind::Hop { slide, size },
        (_, step, size) => WindowKind::Cumulate { step, size },
    };
    let spec = WindowSpec { kind, offset };
    check(&spec).map_err(fail)?;
    Ok(WindowCall { table, time_column, spec })
}

fn descriptor(expr: &ast::Expr) -> Option<String> {
    let ast::Expr::Function(function) = expr else { return None };
    if !function.name.to_string().eq_ignore_ascii_case("DESCRIPTOR") {
        return None;
    }
    let ast::FunctionArguments::List(list) = &function.args else { return None };
    match list.args.as_slice() {
        [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Identifier(ident)))] => {
            Some(ident.value.clone())
        }
        _ => None,
    }
}

/// Flink's rules for window lengths: positive; a hop's size and a cumulation's size whole
/// multiples of the slide and step; the offset shorter than the period it shifts.
pub(crate) fn check(spec: &WindowSpec) -> Result<(), String> {
    let (period, size, part) = match spec.kind {
        WindowKind::Tumble { size } => (size, size, size),
        WindowKind::Hop { slide, size } => (slide, size, slide),
        WindowKind::Cumulate { step, size } => (size, size, step),
        WindowKind::Windowed { size } | WindowKind::Session { gap: size } => (size, size, size),
    };
    if part <= 0 || size <= 0 {
        return Err(format!("{spec}: a window's lengths are positive"));
    }
    if size % part != 0 {
        return Err(format!("{spec}: the size must be a whole multiple of the slide or step"));
    }
    if size / part > 1000 {
        return Err(format!("{spec}: at most 1000 windows per row"));
    }
    if spec.offset.unsigned_abs() >= period.unsigned_abs() {
        return Err(format!("{spec}: the offset must be shorter than {period} ms"));
    }
    Ok(())
}

/// The columns a window table function adds.
pub fn window_columns() -> Vec<(String, SqlType)> {
    WINDOW_COLUMNS.iter().map(|name| (name.to_string(), SqlType::Timestamp)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: WindowKind, offset: i64) -> WindowSpec {
        WindowSpec { kind, offset }
    }

    fn starts_ends(spec: &WindowSpec, timestamp: i64) -> Vec<(i64, i64)> {
        spec.windows(timestamp).into_iter().map(|window| (window.start, window.end)).collect()
    }

    #[test]
    fn each_kind_puts_a_timestamp_in_the_windows_flink_defines() {
        let tumble = spec(WindowKind::Tumble { size: 10 }, 0);
        assert_eq!(starts_ends(&tumble, 25), [(20, 30)]);
        assert_eq!(starts_ends(&tumble, -1), [(-10, 0)]);
        let hop = spec(WindowKind::Hop { slide: 5, size: 15 }, 0);
        assert_eq!(starts_ends(&hop, 12), [(0, 15), (5, 20), (10, 25)]);
        let cumulate = spec(WindowKind::Cumulate { step: 5, size: 20 }, 0);
        assert_eq!(starts_ends(&cumulate, 27), [(20, 30), (20, 35), (20, 40)]);
        assert_eq!(starts_ends(&cumulate, 20), [(20, 25), (20, 30), (20, 35), (20, 40)]);
        let shifted = spec(WindowKind::Tumble { size: 10 }, 3);
        assert_eq!(starts_ends(&shifted, 2), [(-7, 3)]);
    }

    #[test]
    fn the_engine_assigners_agree_with_the_definitions() {
        let specs = [
            spec(WindowKind::Tumble { size: 1000 }, 0),
            spec(WindowKind::Hop { slide: 250, size: 1000 }, 100),
            spec(WindowKind::Cumulate { step: 200, size: 1000 }, 0),
        ];
        for spec in &specs {
            for timestamp in [-1001, -1, 0, 1, 199, 200, 999, 1000, 12_345] {
                let mut assigned = SqlWindows(*spec).assign(timestamp);
                assigned.sort();
                assert_eq!(assigned, spec.windows(timestamp), "{spec} at {timestamp}");
            }
        }
    }

    #[test]
    fn lengths_are_checked_as_flink_checks_them() {
        assert!(check(&spec(WindowKind::Hop { slide: 4, size: 10 }, 0)).unwrap_err().contains("whole multiple"));
        assert!(check(&spec(WindowKind::Tumble { size: 0 }, 0)).unwrap_err().contains("positive"));
        assert!(check(&spec(WindowKind::Tumble { size: 10 }, 10)).unwrap_err().contains("offset"));
        assert!(check(&spec(WindowKind::Cumulate { step: 1, size: 10_000 }, 0)).unwrap_err().contains("1000"));
    }
}
