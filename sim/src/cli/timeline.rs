//! `sluice timeline`: draw a JSON lines trace as an SVG Gantt chart, or as text.

use std::path::PathBuf;

use clap::Args;

use crate::sweep::summary::status;
use sluice_harness::timeline::try_build;
use sluice_harness::trace::from_json_lines;

#[derive(Debug, Args)]
pub(super) struct TimelineArgs {
    /// A JSON lines trace (`sluice run --trace PATH`).
    trace: PathBuf,
    /// Where the SVG goes [default: TRACE with `.svg` for its extension].
    #[arg(short, long, value_name = "OUT.svg")]
    output: Option<PathBuf>,
    /// Print a fixed-width text chart instead.
    #[arg(long)]
    text: bool,
    /// Columns of the text chart.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(20..=1000))]
    width: u16,
}

/// The largest trace file read, in bytes.
const MAX_TRACE_BYTES: u64 = 256 << 20;

/// A trace file's text, at most [`MAX_TRACE_BYTES`] (read so, not checked first: a device or a
/// pipe has no size).
fn read_bounded(path: &std::path::Path) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    let mut text = String::new();
    file.take(MAX_TRACE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    if text.len() as u64 > MAX_TRACE_BYTES {
        return Err(format!("{} is larger than 256 MiB; draw a shorter run", path.display()));
    }
    Ok(text)
}

pub(super) fn command(arguments: &TimelineArgs) -> i32 {
    let path = &arguments.trace;
    let text = match read_bounded(path) {
        Ok(text) => text,
        Err(message) => {
            eprintln!("sluice timeline: {message}");
            return status::USAGE;
        }
    };
    let records = match from_json_lines(&text) {
        Ok(records) => records,
        Err(message) => {
            eprintln!("sluice timeline: {}: {message}", path.display());
            return status::USAGE;
        }
    };
    let timeline = match try_build(&records) {
        Ok(timeline) => timeline,
        Err(error) => {
            eprintln!("sluice timeline: {}: {error}", path.display());
            return status::USAGE;
        }
    };
    if arguments.text {
        print!("{}", timeline.to_text(usize::from(arguments.width)));
        return status::PASSED;
    }
    let output = arguments.output.clone().unwrap_or_else(|| path.with_extension("svg"));
    match std::fs::write(&output, timeline.to_svg()) {
        Ok(()) => {
            println!("timeline written to {}", output.display());
            status::PASSED
        }
        Err(error) => {
            eprintln!("sluice timeline: cannot write {}: {error}", output.display());
            status::USAGE
        }
    }
}
