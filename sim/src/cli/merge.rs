//! `sluice merge`: the shards of a sweep, each the `--format json` output of one
//! `sluice sweep --shard K/N` (on one machine each, say), joined into the summary one unsharded
//! sweep would have printed.
//!
//! Every file must end with its sweep's summary line (a sweep that did not finish has none); all
//! must be shards of the same scenario and seed range, each shard at most once. Missing shards
//! are reported and make the merge exit with status 2: the summary would not be the whole.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use clap::Args;

use super::Format;
use super::sweep::render_summary;
use crate::sweep::junit;
use crate::sweep::record::{JsonLine, Outcome, SeedRecord};
use crate::sweep::shard::Shard;
use crate::sweep::summary::{Summary, SweepSummary, status};
use crate::words::{counted, printable};

#[derive(Debug, Args)]
pub(super) struct MergeArgs {
    /// Outputs of `sluice sweep --format json`, one per shard (`-` reads standard input).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// `json`: every seed's line, then the merged summary's (itself mergeable).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Also write a JUnit XML report to FILE, one test case per seed.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

/// The longest line read from a sweep's output.
const MAX_LINE: u64 = 4 << 20;

/// One file's seeds and summary.
struct Shardfile {
    seeds: Summary,
    records: Vec<SeedRecord>,
    summary: SweepSummary,
}

fn read(path: &Path, keep: bool) -> Result<Shardfile, String> {
    let name = path.display();
    let input: Box<dyn Read> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(path).map_err(|error| format!("cannot read {name}: {error}"))?)
    };
    let mut reader = BufReader::new(input);
    let (mut seeds, mut records, mut summary) = (None::<Summary>, Vec::new(), None);
    let mut line = String::new();
    for number in 1.. {
        line.clear();
        let read =
            (&mut reader).take(MAX_LINE).read_line(&mut line).map_err(|error| format!("{name}:{number}: {error}"))?;
        if read == 0 {
            break;
        }
        if !line.ends_with('\n') && read as u64 == MAX_LINE {
            return Err(format!("{name}:{number}: a line longer than 4 MiB is not a sweep's output"));
        }
        if summary.is_some() {
            return Err(format!("{name}:{number}: a line after the summary; is this one sweep's output?"));
        }
        match serde_json::from_str::<JsonLine>(line.trim_end()) {
            Ok(JsonLine::Seed(record)) => {
                seeds.get_or_insert_with(|| Summary::new(&record.scenario)).add(&record);
                if keep {
                    records.push(record);
                }
            }
            Ok(JsonLine::Summary(line)) => summary = Some(line),
            Err(error) => return Err(format!("{name}:{number}: not a line of `sluice sweep --format json`: {error}")),
        }
    }
    let summary = summary.ok_or_else(|| format!("{name}: no summary line at the end: that sweep did not finish"))?;
    let seeds = seeds.unwrap_or_else(|| Summary::new(&summary.summary.scenario));
    if seeds.seeds != summary.summary.seeds || (seeds.seeds > 0 && seeds.scenario != summary.summary.scenario) {
        return Err(format!(
            "{name}: its summary counts {} of `{}` but the file holds {}",
            counted(summary.summary.seeds, "seed"),
            printable(&summary.summary.scenario),
            counted(seeds.seeds, "seed")
        ));
    }
    Ok(Shardfile { seeds, records, summary })
}

/// Checks that the files are distinct shards of one sweep; the shards missing, if any.
fn check_shards(files: &[(PathBuf, Shardfile)]) -> Result<Vec<String>, String> {
    let (first_path, first) = &files[0];
    let count = match &first.summary.shard {
        Some(text) => Shard::parse(text).map_err(|message| format!("{}: {message}", first_path.display()))?.count,
        None => 1,
    };
    let mut present = BTreeSet::new();
    for (path, file) in files {
        let same_sweep = file.summary.summary.scenario == first.summary.summary.scenario
            && file.summary.range == first.summary.range;
        if !same_sweep {
            return Err(format!(
                "{} is a sweep of `{}` seeds {}, {} of `{}` seeds {}: not shards of one sweep",
                path.display(),
                printable(&file.summary.summary.scenario),
                printable(&file.summary.range),
                first_path.display(),
                printable(&first.summary.summary.scenario),
                printable(&first.summary.range)
            ));
        }
        let shard = match &file.summary.shard {
            Some(text) => Shard::parse(text).map_err(|message| format!("{}: {message}", path.display()))?,
            None => Shard::whole(),
        };
        if shard.count != count {
            return Err(format!("{} is shard {shard}, but {} is one of {count}", path.display(), first_path.display()));
        }
        if !present.insert(shard.index) {
            return Err(format!("shard {shard} is given twice ({}): its seeds would count twice", path.display()));
        }
    }
    Ok((1..=count).filter(|index| !present.contains(index)).map(|index| format!("{index}/{count}")).collect())
}

pub(super) fn command(arguments: &MergeArgs) -> i32 {
    let keep = arguments.junit.is_some() || arguments.format == Format::Json;
    let mut files = Vec::new();
    for path in &arguments.files {
        match read(path, keep) {
            Ok(file) => files.push((path.clone(), file)),
            Err(message) => {
                eprintln!("sluice merge: {message}");
                return status::USAGE;
            }
        }
    }
    let missing = match check_shards(&files) {
        Ok(missing) => missing,
        Err(message) => {
            eprintln!("sluice merge: {message}");
            return status::USAGE;
        }
    };
    let mut merged = Summary::new(&files[0].1.summary.summary.scenario);
    let (mut elapsed_ms, mut supervisor) = (0, None::<u64>);
    for (_, file) in &files {
        merged.merge(&file.seeds);
        elapsed_ms = elapsed_ms.max(file.summary.elapsed_ms);
        supervisor = supervisor.max(file.summary.supervisor_peak_rss_kb);
    }
    let line = SweepSummary {
        summary: merged,
        range: files[0].1.summary.range.clone(),
        shard: None,
        elapsed_ms,
        supervisor_peak_rss_kb: supervisor,
    };
    print_merged(arguments, &files, &line, &missing)
}

fn print_merged(arguments: &MergeArgs, files: &[(PathBuf, Shardfile)], line: &SweepSummary, missing: &[String]) -> i32 {
    let records: Vec<&SeedRecord> = files.iter().flat_map(|(_, file)| &file.records).collect();
    match arguments.format {
        Format::Json => {
            for record in &records {
                println!("{}", serde_json::to_string(&JsonLine::Seed((*record).clone())).expect("a record serializes"));
            }
            println!("{}", serde_json::to_string(&JsonLine::Summary(line.clone())).expect("a summary serializes"));
        }
        Format::Text => {
            println!(
                "merge of {} of `{}` seeds {}",
                counted(files.len() as u64, "shard"),
                printable(&line.summary.scenario),
                printable(&line.range)
            );
            print!("{}", render_summary(line).replacen(" s wall", " s wall (the slowest shard)", 1));
        }
    }
    if let Some(file) = &arguments.junit {
        let kept: Vec<SeedRecord> = records
            .iter()
            .map(|record| {
                let mut entry = (*record).clone();
                if entry.outcome == Outcome::Passed {
                    entry.runs.clear();
                }
                entry
            })
            .collect();
        if let Err(error) =
            std::fs::write(file, junit::report(&format!("sluice sweep {}", line.summary.scenario), &kept))
        {
            eprintln!("sluice merge: cannot write {}: {error}", file.display());
            return status::USAGE;
        }
    }
    if !missing.is_empty() {
        eprintln!(
            "sluice merge: incomplete: shard {} missing; the summary covers only the shards given",
            missing.join(", ")
        );
        return status::USAGE;
    }
    line.summary.exit_status()
}
