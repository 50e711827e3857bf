//! A campaign's directory: `campaign.json`, what was done and what was kept, written after every
//! batch (to a temporary file, then renamed, so a killed campaign leaves the last whole one).
//!
//! A campaign resumes from its directory only if the file is whole and was written for the same
//! scenario (its fingerprint), campaign seed, shard, kind (guided or blind) and build: a corpus
//! from another build reached its features under other code, and resuming would mix two
//! campaigns. Anything else is refused with an error naming the file, never half-used.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Plan, State};
use crate::replay::GIT_REVISION;

/// The file's format, first in it.
const FORMAT: &str = "sluice-explore/1";

/// The file a campaign directory holds.
pub const FILE: &str = "campaign.json";

/// What `campaign.json` holds.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Saved {
    format: String,
    /// The scenario's name.
    pub scenario: String,
    /// The scenario's fingerprint.
    pub fingerprint: String,
    /// The build that ran it.
    pub git_revision: String,
    /// The campaign seed.
    pub campaign_seed: u64,
    /// `K/N`.
    pub shard: String,
    /// Guided (or blind).
    pub guided: bool,
    /// Where it stands.
    pub state: State,
}

impl Saved {
    /// A saved campaign with these fields (for tests of what reads them).
    #[cfg(test)]
    pub fn for_test(
        scenario: &str,
        fingerprint: &str,
        campaign_seed: u64,
        shard: &str,
        guided: bool,
        state: State,
    ) -> Saved {
        Saved {
            format: FORMAT.to_string(),
            scenario: scenario.to_string(),
            fingerprint: fingerprint.to_string(),
            git_revision: GIT_REVISION.to_string(),
            campaign_seed,
            shard: shard.to_string(),
            guided,
            state,
        }
    }
}

/// Whatever campaign `dir` holds, whole (for `sluice merge`): an error names the file if it is
/// missing, not a whole campaign, or of another format.
pub fn read(dir: &Path) -> Result<Saved, String> {
    let path = dir.join(FILE);
    let text = std::fs::read_to_string(&path).map_err(|error| format!("{}: {error}", path.display()))?;
    let saved: Saved = serde_json::from_str(&text)
        .map_err(|error| format!("{}: not a whole campaign file ({error})", path.display()))?;
    if saved.format != FORMAT {
        return Err(format!("{}: a campaign of format `{}`, not `{FORMAT}`", path.display(), saved.format));
    }
    check_whole(&saved.state).map_err(|problem| format!("{}: {problem}", path.display()))?;
    Ok(saved)
}

fn shard_text(plan: &Plan) -> String {
    format!("{}/{}", plan.shard.0, plan.shard.1)
}

/// The state saved in `dir` for `plan`, or a fresh one if `dir` holds no campaign yet; an error
/// (naming the file) if what it holds is not this campaign's.
pub fn load(dir: &Path, plan: &Plan) -> Result<State, String> {
    let path = dir.join(FILE);
    if !path.exists() {
        if dir.exists()
            && std::fs::read_dir(dir).map_err(|error| format!("{}: {error}", dir.display()))?.next().is_some()
        {
            return Err(format!("{}: not a campaign directory (no {FILE}, and not empty)", dir.display()));
        }
        return Ok(State::default());
    }
    let text = std::fs::read_to_string(&path).map_err(|error| format!("{}: {error}", path.display()))?;
    let saved: Saved = serde_json::from_str(&text).map_err(|error| {
        format!("{}: not a whole campaign file ({error}); start a new campaign elsewhere", path.display())
    })?;
    let refuse = |what: &str, theirs: &str, ours: &str| {
        Err(format!(
            "{}: a campaign of {what} `{theirs}`, not `{ours}`: start a new campaign elsewhere",
            path.display()
        ))
    };
    if saved.format != FORMAT {
        return refuse("format", &saved.format, FORMAT);
    }
    if saved.fingerprint != plan.scenario.fingerprint() {
        return refuse("scenario", &format!("{} {}", saved.scenario, saved.fingerprint), &plan.scenario.fingerprint());
    }
    if saved.git_revision != GIT_REVISION {
        return refuse("build", &saved.git_revision, GIT_REVISION);
    }
    if saved.campaign_seed != plan.campaign_seed {
        return refuse("campaign seed", &saved.campaign_seed.to_string(), &plan.campaign_seed.to_string());
    }
    if saved.shard != shard_text(plan) {
        return refuse("shard", &saved.shard, &shard_text(plan));
    }
    if saved.guided != plan.guided {
        let kind = |guided: bool| if guided { "guided" } else { "blind" };
        return refuse("kind", kind(saved.guided), kind(plan.guided));
    }
    check_whole(&saved.state)
        .map_err(|problem| format!("{}: {problem}; start a new campaign elsewhere", path.display()))?;
    Ok(saved.state)
}

/// What a whole state keeps: one count of cells per run, no more runs counted than done.
fn check_whole(state: &State) -> Result<(), String> {
    if state.corpus.runs != state.cells.len() as u64 {
        return Err(format!("{} runs in the corpus but {} in the cell counts", state.corpus.runs, state.cells.len()));
    }
    if state.found.iter().any(|found| found.run > state.corpus.runs) {
        return Err("a failure found after the last run".to_string());
    }
    Ok(())
}

/// The state saved in `dir` for `plan`, which must hold one: `--resume` refuses a directory
/// without a campaign, naming the file it looked for, rather than start a new one there.
pub fn resume(dir: &Path, plan: &Plan) -> Result<State, String> {
    let path = dir.join(FILE);
    if !path.is_file() {
        return Err(format!("{}: no campaign to resume (use --corpus to start one)", path.display()));
    }
    load(dir, plan)
}

/// Writes `plan`'s state into `dir`, creating it if needed.
pub fn save(dir: &Path, plan: &Plan, state: &State) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|error| format!("{}: {error}", dir.display()))?;
    let saved = Saved {
        format: FORMAT.to_string(),
        scenario: plan.scenario.name.clone(),
        fingerprint: plan.scenario.fingerprint(),
        git_revision: GIT_REVISION.to_string(),
        campaign_seed: plan.campaign_seed,
        shard: shard_text(plan),
        guided: plan.guided,
        state: state.clone(),
    };
    let text = serde_json::to_string(&saved).expect("a campaign always serializes");
    let path = dir.join(FILE);
    let partial: PathBuf = dir.join(format!("{FILE}.partial"));
    std::fs::write(&partial, text).map_err(|error| format!("{}: {error}", partial.display()))?;
    std::fs::rename(&partial, &path).map_err(|error| format!("{}: {error}", path.display()))
}
