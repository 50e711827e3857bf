//! `sluice merge`: the shards of a sweep, each the `--format json` output of one
//! `sluice sweep --shard K/N` (on one machine each, say), joined into the summary one unsharded
//! sweep would have printed.
//!
//! Every file must end with its sweep's summary line (a sweep that did not finish has none) and
//! hold every seed of its shard; all must be shards of one sweep: the same scenario (by its
//! fingerprint), seed range, modes and build, each shard at most once. Missing shards are
//! reported and make the merge exit with status 2: the summary would not be the whole. Seed
//! lines are folded as they are read (and, with `--format json`, printed as read), so a merge
//! keeps no more than a sweep does.
//!
//! Given directories, it merges the shards of a `sluice explore` campaign instead (see
//! `crate::explore::merge`).

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use clap::Args;

use super::Format;
use super::sweep::render_summary;
use crate::explore::merge::{ShardCampaign, merge};
use crate::sweep::junit::{self, Case};
use crate::sweep::shard::Shard;
use crate::sweep::summary::{JsonLine, Summary, SweepSummary, status};
use sluice_harness::words::{counted, printable};

#[derive(Debug, Args)]
pub(super) struct MergeArgs {
    /// Outputs of `sluice sweep --format json`, one per shard (`-` reads standard input); or the
    /// directories of a campaign's shards (`sluice explore --shard K/N --corpus DIR`).
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

/// One file: its seeds folded, and its summary line.
struct ShardFile {
    seeds: Summary,
    summary: SweepSummary,
}

/// Reads one file; `on_seed` gets each seed line (to print or keep).
fn read(path: &Path, mut on_seed: impl FnMut(&crate::sweep::record::SeedRecord, &str)) -> Result<ShardFile, String> {
    let name = path.display();
    let input: Box<dyn Read> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(path).map_err(|error| format!("cannot read {name}: {error}"))?)
    };
    let mut reader = BufReader::new(input);
    let (mut seeds, mut summary) = (None::<Summary>, None);
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
                on_seed(&record, line.trim_end());
            }
            Ok(JsonLine::Summary(line)) => summary = Some(*line),
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
    Ok(ShardFile { seeds, summary })
}

/// A file's shard, checked to hold all of its seeds.
fn shard_of(path: &Path, file: &ShardFile) -> Result<Shard, String> {
    let shard = match &file.summary.shard {
        Some(text) => Shard::parse(text).map_err(|message| format!("{}: {message}", path.display()))?,
        None => Shard::whole(),
    };
    let range = sluice_harness::scenario::parse_seeds(&file.summary.range)
        .map_err(|message| format!("{}: {message}", path.display()))?;
    if file.seeds.seeds != shard.len(range.clone()) {
        return Err(format!(
            "{} (shard {shard}) holds {} of its {}: its sweep did not run them all",
            path.display(),
            counted(file.seeds.seeds, "seed"),
            shard.len(range)
        ));
    }
    Ok(shard)
}

/// Checks that the files are distinct, complete shards of one sweep; the shards missing.
fn check_shards(files: &[(PathBuf, ShardFile)]) -> Result<Vec<String>, String> {
    let (first_path, first) = &files[0];
    let first_shard = shard_of(first_path, first)?;
    let identity = |file: &ShardFile| {
        let summary = &file.summary;
        (
            summary.summary.scenario.clone(),
            summary.range.clone(),
            summary.modes.clone(),
            summary.fingerprint.clone(),
            summary.git_revision.clone(),
        )
    };
    let mut present = BTreeSet::new();
    for (path, file) in files {
        if identity(file) != identity(first) {
            let (scenario, range, modes, _, revision) = identity(file);
            return Err(format!(
                "{} is a sweep of `{}` seeds {} in {modes:?} by build {}, unlike {}: not shards of one sweep \
                 (the same scenario file, seeds, modes and build)",
                path.display(),
                printable(&scenario),
                printable(&range),
                printable(&revision),
                first_path.display()
            ));
        }
        let shard = shard_of(path, file)?;
        if shard.count != first_shard.count {
            return Err(format!(
                "{} is shard {shard}, but {} is one of {}",
                path.display(),
                first_path.display(),
                first_shard.count
            ));
        }
        if !present.insert(shard.index) {
            return Err(format!("shard {shard} is given twice ({}): its seeds would count twice", path.display()));
        }
    }
    let count = first_shard.count;
    Ok((1..=count).filter(|index| !present.contains(index)).map(|index| format!("{index}/{count}")).collect())
}

pub(super) fn command(arguments: &MergeArgs) -> i32 {
    if arguments.files.iter().all(|path| path.is_dir()) {
        return merge_campaigns(&arguments.files);
    }
    let mut cases: Vec<Case> = Vec::new();
    let mut files = Vec::new();
    for path in &arguments.files {
        let on_seed = |record: &crate::sweep::record::SeedRecord, line: &str| {
            if arguments.format == Format::Json {
                println!("{line}");
            }
            if arguments.junit.is_some() {
                cases.push(Case::of(record));
            }
        };
        match read(path, on_seed) {
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
    let first = &files[0].1.summary;
    let mut line = SweepSummary { summary: Summary::new(&first.summary.scenario), shard: None, ..first.clone() };
    for (_, file) in &files {
        line.summary.merge(&file.seeds);
        line.elapsed_ms = line.elapsed_ms.max(file.summary.elapsed_ms);
        line.supervisor_peak_rss_kb = line.supervisor_peak_rss_kb.max(file.summary.supervisor_peak_rss_kb);
    }
    print_merged(arguments, files.len(), &line, &mut cases, &missing)
}

fn print_merged(
    arguments: &MergeArgs,
    shards: usize,
    line: &SweepSummary,
    cases: &mut [Case],
    missing: &[String],
) -> i32 {
    match arguments.format {
        Format::Json => {
            println!(
                "{}",
                serde_json::to_string(&JsonLine::Summary(Box::new(line.clone()))).expect("a summary serializes")
            );
        }
        Format::Text => {
            println!(
                "merge of {} of `{}` seeds {}",
                counted(shards as u64, "shard"),
                printable(&line.summary.scenario),
                printable(&line.range)
            );
            print!("{}", render_summary(line).replacen(" s wall", " s wall (the slowest shard)", 1));
        }
    }
    if let Some(file) = &arguments.junit {
        let name = format!("sluice sweep {}", line.summary.scenario);
        if let Err(error) = std::fs::write(file, junit::report(&name, &line.summary.scenario, cases)) {
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

/// `sluice merge DIR…`: the shards of a campaign joined; exit 2 if one is missing, 1 if any
/// found a failure.
fn merge_campaigns(dirs: &[PathBuf]) -> i32 {
    let mut campaigns = Vec::new();
    for dir in dirs {
        match crate::explore::store::read(dir) {
            Ok(saved) => campaigns.push(ShardCampaign { origin: dir.display().to_string(), saved }),
            Err(message) => {
                eprintln!("sluice merge: {}", printable(&message));
                return status::USAGE;
            }
        }
    }
    let merged = match merge(&campaigns) {
        Ok(merged) => merged,
        Err(message) => {
            eprintln!("sluice merge: {}", printable(&message));
            return status::USAGE;
        }
    };
    println!(
        "campaign `{}` ({}): {} of {} shards, {}, {} cells, {} kept, {}",
        merged.scenario,
        if merged.guided { "guided" } else { "blind" },
        merged.shards.0,
        merged.shards.1,
        counted(merged.runs, "run"),
        merged.cell_runs.len(),
        merged.kept,
        counted(merged.found.len() as u64, "failure")
    );
    for (shard, found) in &merged.found {
        println!(
            "  FAIL shard {shard} run {} seed {} ({}): {}",
            found.run,
            found.seed,
            found.mutation,
            found.checks.join(", ")
        );
        if let Some(file) = &found.replay_file {
            println!("    replay: {}", crate::replay::command("replay", printable(file)));
        }
    }
    if !merged.missing.is_empty() {
        let missing: Vec<String> = merged.missing.iter().map(|index| format!("{index}/{}", merged.shards.1)).collect();
        eprintln!("sluice merge: shards missing: {} (the merge is not the whole campaign)", missing.join(", "));
        return status::USAGE;
    }
    if merged.found.is_empty() { status::PASSED } else { status::FAILED }
}
