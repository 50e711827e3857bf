//! `sluice timeline`: draw a JSON lines trace as an SVG Gantt chart, or as text.

use super::Options;
use crate::timeline::build;
use crate::trace::from_json_lines;

pub(super) fn command(options: &Options) -> i32 {
    let text = match std::fs::read_to_string(&options.file) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("sluice timeline: cannot read {}: {error}", options.file.display());
            return 2;
        }
    };
    let records = match from_json_lines(&text) {
        Ok(records) => records,
        Err(message) => {
            eprintln!("sluice timeline: {}: {message}", options.file.display());
            return 2;
        }
    };
    let timeline = build(&records);
    if options.text {
        print!("{}", timeline.to_text(options.width.unwrap_or(100)));
        return 0;
    }
    let output = options.output.clone().unwrap_or_else(|| options.file.with_extension("svg"));
    match std::fs::write(&output, timeline.to_svg()) {
        Ok(()) => {
            println!("timeline written to {}", output.display());
            0
        }
        Err(error) => {
            eprintln!("sluice timeline: cannot write {}: {error}", output.display());
            1
        }
    }
}
