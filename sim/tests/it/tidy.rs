//! Tidy: the rules of the codebase that a compiler does not check, checked on every `cargo test`.
//!
//! - every source file opens with a `//!` doc saying what it is;
//! - the engine uses none of the APIs that would break determinism (wall clock, OS threads,
//!   unseeded randomness, real files, hash sets and maps whose order could leak);
//! - no test is skipped with an ignore attribute;
//! - ARCHITECTURE.md names every module of the engine, the services, the harness, the simulation
//!   and the real processes, so the code map stays current;
//! - every injected bug in `benches/injected-bugs/` still applies to the tree (a patch that no
//!   longer applies measures nothing).
//!
//! The layout's own rules (crate arrows, no circles) are in `layout.rs`.

use std::path::{Path, PathBuf};

use super::support::workspace;

pub(super) fn rust_files(directory: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(directory) else { return };
    let mut entries: Vec<PathBuf> = entries.map(|entry| entry.expect("readable").path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
}

fn sources(folders: &[&str]) -> Vec<(String, String)> {
    let root = workspace();
    let mut files = Vec::new();
    for folder in folders {
        rust_files(&root.join(folder), &mut files);
    }
    assert!(!files.is_empty(), "tidy found no sources: wrong workspace path?");
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("readable source");
            (path.strip_prefix(&root).expect("inside the workspace").display().to_string(), text)
        })
        .collect()
}

const ALL: &[&str] = &[
    "engine/src",
    "engine/tests",
    "sql/src",
    "catalog/src",
    "catalog/tests",
    "services/src",
    "harness/src",
    "sim/src",
    "sim/tests",
    "real/src",
    "real/tests",
    "properties/src",
    "properties/tests",
    "benches/src",
    "benches/benches",
];

#[test]
fn every_source_file_opens_with_a_module_doc() {
    let undocumented: Vec<String> = sources(ALL)
        .into_iter()
        .filter(|(_, text)| !text.trim_start().starts_with("//!"))
        .map(|(path, _)| path)
        .collect();
    assert!(undocumented.is_empty(), "files without a `//!` module doc: {undocumented:#?}");
}

/// True if `code` names `pattern` as a whole path, not through madsim (whose `rand` and `time`
/// are simulated) and not as part of a longer identifier.
fn uses(code: &str, pattern: &str) -> bool {
    let identifier = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(pattern).any(|(start, _)| {
        let before = &code[..start];
        let after = &code[start + pattern.len()..];
        let word_before = pattern.starts_with(identifier) && before.ends_with(identifier);
        let word_after = pattern.ends_with(identifier) && after.starts_with(identifier);
        !word_before && !before.ends_with("madsim::") && !word_after
    })
}

/// The runtime seam: the only engine files that name madsim (see `engine/src/rt.rs`).
const SEAM: &[&str] = &["engine/src/rt.rs", "engine/src/rpc.rs"];
/// A unit test that crashes a simulated node, which exists only in simulation.
const CRASH_TEST: &[&str] = &["engine/src/shuffle/remote.rs"];
const SEAM_AND_CRASH_TEST: &[&str] = &["engine/src/rt.rs", "engine/src/rpc.rs", "engine/src/shuffle/remote.rs"];

#[test]
fn the_engine_uses_no_nondeterministic_api() {
    // (pattern, why, files allowed to use it)
    let banned: &[(&str, &str, &[&str])] = &[
        ("std::thread", "the engine never spawns OS threads: madsim cannot schedule them", &[]),
        ("SystemTime", "the engine never reads the wall clock", &[]),
        ("std::time::Instant", "time comes from madsim::time", &[]),
        ("thread_rng", "randomness comes from madsim::rand or a seeded Prng", &[]),
        ("rand::random", "randomness comes from madsim::rand or a seeded Prng", &[]),
        ("OsRng", "randomness comes from madsim::rand or a seeded Prng", &[]),
        ("std::fs", "the engine writes through the Storage trait", &[]),
        ("HashSet", "iteration order could leak; use BTreeSet", &[]),
        (
            "HashMap",
            "iteration order could leak; use BTreeMap",
            // A keyed state's table; a combiner's partials; a reference's counts (sorted after).
            &["engine/src/state/hash.rs", "engine/src/api/operators.rs", "catalog/src/wordcount.rs"],
        ),
        ("block_on", "the engine never blocks a simulated task", &[]),
        ("madsim::", "time, tasks and randomness come through rt.rs, the network through rpc.rs", SEAM_AND_CRASH_TEST),
        ("tokio::time", "time comes through rt.rs", SEAM),
        ("tokio::spawn", "tasks come through rt.rs", SEAM),
        ("tokio::task", "tasks come through rt.rs", SEAM),
        ("cfg(madsim)", "engine logic never knows whether it is simulated", CRASH_TEST),
    ];
    let mut violations = Vec::new();
    // A job runs inside the engine's tasks: the SQL front end's plans, the catalog's jobs (and their references, which must
    // replay too) keep the same rules, and so do the services, which run in the simulation.
    for (path, text) in sources(&["engine/src", "sql/src", "catalog/src", "services/src"]) {
        for (pattern, why, allowed) in banned {
            if allowed.contains(&path.as_str()) {
                continue;
            }
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("").replace("#[madsim::test]", "");
                if uses(&code, pattern) {
                    violations.push(format!("{path}:{}: `{pattern}`: {why}", number + 1));
                }
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

#[test]
fn no_test_is_ignored() {
    let attribute = concat!("#[", "ignore");
    let ignored: Vec<String> =
        sources(ALL).into_iter().filter(|(_, text)| text.contains(attribute)).map(|(path, _)| path).collect();
    assert!(
        ignored.is_empty(),
        "a known bug is an assertion of today's behaviour with a FIXME, not an ignored test: {ignored:?}"
    );
}

#[test]
fn the_code_map_names_every_engine_module() {
    let architecture = std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md exists");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(workspace().join("engine/src")).expect("engine/src exists") {
        let name = entry.expect("readable").file_name().to_string_lossy().into_owned();
        if name == "lib.rs" {
            continue;
        }
        let folder = if name.ends_with(".rs") { name.clone() } else { format!("{name}/") };
        if !architecture.contains(&format!("engine/src/{folder}")) && !architecture.contains(&format!("`{name}`")) {
            missing.push(name);
        }
    }
    for folder in ["services/src", "harness/src", "sim/src"] {
        for entry in std::fs::read_dir(workspace().join(folder)).expect("the crate's src exists") {
            let name = entry.expect("readable").file_name().to_string_lossy().into_owned();
            if name != "lib.rs" && !architecture.contains(&format!("`{name}")) {
                missing.push(format!("{folder}/{name}"));
            }
        }
    }
    for entry in std::fs::read_dir(workspace().join("real/src")).expect("real/src exists") {
        let name = entry.expect("readable").file_name().to_string_lossy().into_owned();
        if !["lib.rs", "main.rs"].contains(&name.as_str()) && !architecture.contains(&format!("`{name}")) {
            missing.push(format!("real/src/{name}"));
        }
    }
    missing.sort();
    assert!(missing.is_empty(), "ARCHITECTURE.md does not mention: {missing:?}");
}

#[test]
fn the_engine_depends_on_no_crate_of_ours() {
    // Jobs come to the engine through its registry: the catalog, the harness and the real
    // processes sit above it (`cargo tree -p sluice-engine` lists none of them).
    let manifest = std::fs::read_to_string(workspace().join("engine/Cargo.toml")).expect("engine/Cargo.toml exists");
    let ours: Vec<&str> = manifest.lines().filter(|line| line.trim_start().starts_with("sluice-")).collect();
    assert!(ours.is_empty(), "the engine depends on {ours:?}");
}

#[test]
fn no_engine_layer_below_the_runtime_imports_it() {
    // The runtime is the engine's top layer: what the layers below need from it (the trace,
    // a TaskManager's resources) lives below them.
    let mut violations = Vec::new();
    for (path, text) in sources(&["engine/src"]) {
        if path.starts_with("engine/src/runtime/") || path == "engine/src/lib.rs" {
            continue;
        }
        for (number, line) in text.lines().enumerate() {
            if uses(line.split("//").next().unwrap_or(""), "crate::runtime") {
                violations.push(format!("{path}:{}", number + 1));
            }
        }
    }
    assert!(violations.is_empty(), "below the runtime, yet importing it: {violations:#?}");
}

#[test]
fn every_injected_bug_still_applies_to_the_tree() {
    let directory = workspace().join("benches/injected-bugs");
    let mut patches: Vec<PathBuf> = std::fs::read_dir(&directory)
        .expect("benches/injected-bugs")
        .map(|entry| entry.expect("readable").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "patch"))
        .collect();
    patches.sort();
    assert!(patches.len() >= 15, "{} patches", patches.len());
    // `git apply --check` reads the work tree only; outside a git checkout it still applies.
    let stale: Vec<String> = patches
        .iter()
        .filter(|patch| {
            let status = std::process::Command::new("git")
                .args(["apply", "--check"])
                .arg(patch)
                .current_dir(workspace())
                .output()
                .expect("git runs");
            !status.status.success()
        })
        .map(|patch| patch.display().to_string())
        .collect();
    assert!(stale.is_empty(), "these patches no longer apply (regenerate them against the tree): {stale:?}");
}
