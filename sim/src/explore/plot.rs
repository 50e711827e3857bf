//! Coverage over runs as an SVG line chart: cells reached (marks × fault kinds) after each run,
//! one line per campaign (a guided one against a blind one of the same budget).

use std::fmt::Write as _;

/// One campaign's line.
pub struct Line<'a> {
    /// What the legend calls it.
    pub label: &'a str,
    /// Cells reached after each run.
    pub cells: &'a [u32],
    /// Its colour.
    pub colour: &'a str,
}

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 400.0;
const LEFT: f64 = 60.0;
const BOTTOM: f64 = 50.0;
const TOP: f64 = 40.0;
const RIGHT: f64 = 20.0;

/// The chart, titled `title`.
pub fn svg(title: &str, lines: &[Line]) -> String {
    let runs = lines.iter().map(|line| line.cells.len()).max().unwrap_or(0).max(1) as f64;
    let most = lines.iter().flat_map(|line| line.cells.iter().copied()).max().unwrap_or(0).max(1) as f64;
    let x = |run: f64| LEFT + (WIDTH - LEFT - RIGHT) * run / runs;
    let y = |cells: f64| HEIGHT - BOTTOM - (HEIGHT - BOTTOM - TOP) * cells / most;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{LEFT}\" y=\"20\" font-size=\"14\">{}</text>\n",
        escape(title)
    );
    let _ = writeln!(
        svg,
        "<line x1=\"{LEFT}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/><line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{}\" stroke=\"black\"/>",
        y(0.0),
        x(runs),
        y(0.0),
        y(0.0)
    );
    for tick in 0..=4 {
        let (run, cells) = (runs * f64::from(tick) / 4.0, most * f64::from(tick) / 4.0);
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{run:.0}</text>",
            x(run),
            y(0.0) + 18.0
        );
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{cells:.0}</text>",
            LEFT - 6.0,
            y(cells) + 4.0
        );
    }
    let _ =
        writeln!(svg, "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">runs</text>", x(runs / 2.0), HEIGHT - 12.0);
    let _ = writeln!(
        svg,
        "<text x=\"14\" y=\"{:.1}\" transform=\"rotate(-90 14 {:.1})\" text-anchor=\"middle\">cells reached</text>",
        y(most / 2.0),
        y(most / 2.0)
    );
    for (index, line) in lines.iter().enumerate() {
        let points: Vec<String> = std::iter::once((0.0, 0.0))
            .chain(line.cells.iter().enumerate().map(|(run, cells)| (run as f64 + 1.0, f64::from(*cells))))
            .map(|(run, cells)| format!("{:.1},{:.1}", x(run), y(cells)))
            .collect();
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>",
            line.colour,
            points.join(" ")
        );
        let legend_y = TOP + 16.0 * index as f64;
        let _ = writeln!(
            svg,
            "<line x1=\"{:.1}\" y1=\"{legend_y:.1}\" x2=\"{:.1}\" y2=\"{legend_y:.1}\" stroke=\"{}\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            WIDTH - 220.0,
            WIDTH - 200.0,
            line.colour,
            WIDTH - 194.0,
            legend_y + 4.0,
            escape(line.label)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_draws_each_line_from_the_origin_and_escapes_its_labels() {
        let chart = svg("a <b>", &[Line { label: "guided & co", cells: &[1, 3, 4], colour: "red" }]);
        assert!(chart.starts_with("<svg") && chart.ends_with("</svg>\n"));
        assert!(chart.contains("a &lt;b&gt;") && chart.contains("guided &amp; co"));
        assert_eq!(chart.matches("<polyline").count(), 1);
        assert_eq!(chart.matches("<polyline").count(), chart.matches("points=").count());
    }
}
