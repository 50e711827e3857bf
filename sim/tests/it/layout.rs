//! Tidy for the layout: crates depend only downward, along the arrows named here, and no two
//! modules of a crate import each other, directly or around a loop.
//!
//! A module's imports are the `crate::…` and `super::…` paths of its files (comments and the
//! unit tests at a file's end left out), each resolved to the deepest module it names. An import
//! between two modules that are not one inside the other is an arrow between the two siblings
//! that hold them, under the module that holds both: `crate::sweep::summary` used in
//! `sweep/record.rs` is `record → summary` under `sweep`. A module and the modules inside it are
//! one room: a parent that uses its children, or a child its parent's items, is not an arrow.
//! Every room's arrows must form no cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::support::workspace;

/// The crates of the workspace, bottom up, and the crates of ours each may depend on
/// (`[dependencies]` and `[dev-dependencies]` alike). A new arrow is added here, deliberately.
const CRATE_ARROWS: &[(&str, &[&str])] = &[
    ("engine", &[]),
    ("sql", &["sluice-engine"]),
    ("catalog", &["sluice-engine", "sluice-sql"]),
    ("services", &["sluice-engine", "sluice-catalog"]),
    ("harness", &["sluice-engine", "sluice-catalog", "sluice-services"]),
    ("sim", &["sluice-engine", "sluice-catalog", "sluice-services", "sluice-harness"]),
    ("real", &["sluice-engine", "sluice-catalog", "sluice-services", "sluice-harness"]),
    ("properties", &["sluice-engine", "sluice-sql", "sluice-catalog", "sluice-sim"]),
    ("benches", &["sluice-engine", "sluice-catalog", "sluice-sim"]),
    ("examples/clickstream", &["sluice-engine", "sluice-sim"]),
];

/// The crates whose modules must not import one another in a circle.
const CRATES: &[&str] = &["engine", "sql", "catalog", "services", "harness", "sim", "real"];

#[test]
fn crates_depend_only_along_the_named_arrows() {
    let manifest = std::fs::read_to_string(workspace().join("Cargo.toml")).expect("the workspace manifest");
    let members = manifest.lines().find(|line| line.starts_with("members")).expect("a members list");
    for (folder, _) in CRATE_ARROWS {
        assert!(members.contains(&format!("\"{folder}\"")), "{folder} is not a workspace member: update CRATE_ARROWS");
    }
    let mut wrong = Vec::new();
    for (folder, allowed) in CRATE_ARROWS {
        let text = std::fs::read_to_string(workspace().join(folder).join("Cargo.toml")).expect("a crate manifest");
        let ours: BTreeSet<&str> = text
            .lines()
            .filter_map(|line| line.trim_start().split(['.', ' ', '=']).next())
            .filter(|name| name.starts_with("sluice-"))
            .collect();
        let allowed: BTreeSet<&str> = allowed.iter().copied().collect();
        if ours != allowed {
            wrong.push(format!("{folder} depends on {ours:?}; the layout allows {allowed:?}"));
        }
    }
    assert!(wrong.is_empty(), "crate arrows that the layout does not name:\n{}", wrong.join("\n"));
}

#[test]
fn no_modules_of_a_crate_import_each_other_in_a_circle() {
    let mut circles = Vec::new();
    for name in CRATES {
        circles.extend(module_circles(&workspace().join(name).join("src")).into_iter().map(|c| format!("{name}: {c}")));
    }
    assert!(circles.is_empty(), "modules that import each other in a circle:\n{}", circles.join("\n"));
}

#[test]
fn the_circle_check_finds_an_injected_circle() {
    // The check above, shown to fail: two sibling modules that import each other, and three
    // around a loop one level down.
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let write = |path: &str, text: &str| {
        let path = scratch.path().join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a directory");
        std::fs::write(path, text).expect("written");
    };
    write("lib.rs", "//! root\npub mod a;\npub mod b;\npub mod c;\n");
    write("a.rs", "//! a\nuse crate::b::Thing;\n");
    write("b.rs", "//! b\nuse crate::{a, c};\n");
    write("c/mod.rs", "//! c\npub mod x;\npub mod y;\npub mod z;\nuse self::x::X;\n");
    write("c/x.rs", "//! x\nuse super::y::Y;\n// use super::z::Z; a comment is no import\n");
    write("c/y.rs", "//! y\nuse crate::c::z::{Z, W};\n");
    write(
        "c/z.rs",
        "//! z\nfn f() { super::x::g(); super::super::c::k(); }\n#[cfg(test)]\nmod tests {\n    use crate::c::y::Y;\n}\n",
    );
    let circles = module_circles(scratch.path());
    assert_eq!(circles, vec!["a → b → a (under the crate root)", "x → y → z → x (under c)"], "{circles:#?}");
    write("c/z.rs", "//! z\nfn f() {}\n");
    write("b.rs", "//! b\n");
    assert_eq!(module_circles(scratch.path()), Vec::<String>::new());
}

/// A module's path (`["sweep", "record"]`) for each source file under `src`.
fn modules(src: &Path) -> BTreeMap<Vec<String>, String> {
    let mut files = Vec::new();
    super::tidy::rust_files(src, &mut files);
    let mut modules = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(src).expect("under src");
        if relative.starts_with("bin") {
            continue;
        }
        let mut path: Vec<String> = relative.iter().map(|part| part.to_string_lossy().into_owned()).collect();
        let last = path.pop().expect("a file name");
        let stem = last.trim_end_matches(".rs");
        if !["mod", "lib", "main"].contains(&stem) {
            path.push(stem.to_string());
        }
        modules.insert(path, std::fs::read_to_string(&file).expect("a readable source"));
    }
    modules
}

/// The code of a file without comments and without the unit tests at its end.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(start) => &text[..start],
        None => text,
    };
    text.lines().map(|line| line.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The module paths `code` (of module `at`) names through `crate::` and `super::`.
fn imports(code: &str, at: &[String]) -> Vec<Vec<String>> {
    let identifier = |c: char| c.is_alphanumeric() || c == '_';
    let mut found = Vec::new();
    for (start, _) in code.match_indices("crate::").chain(code.match_indices("super::")) {
        if code[..start].ends_with(identifier) || code[..start].ends_with("super::") {
            continue;
        }
        let mut rest = &code[start..];
        let mut path: Vec<String> = at.to_vec();
        if let Some(after) = rest.strip_prefix("crate::") {
            path.clear();
            rest = after;
        }
        while let Some(after) = rest.strip_prefix("super::") {
            path.pop();
            rest = after;
        }
        loop {
            let name: String = rest.chars().take_while(|&c| identifier(c)).collect();
            if name.is_empty() {
                break;
            }
            rest = &rest[name.len()..];
            path.push(name);
            match rest.strip_prefix("::") {
                Some(after) => rest = after,
                None => break,
            }
        }
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let name: String = item.trim().chars().take_while(|&c| identifier(c)).collect();
                let mut each = path.clone();
                each.push(name);
                found.push(each);
            }
        } else {
            found.push(path);
        }
    }
    found
}

/// The circles among sibling modules under each module of the crate at `src`, each as
/// `a → b → a (under m)`.
fn module_circles(src: &Path) -> Vec<String> {
    let modules = modules(src);
    // Arrows between siblings, keyed by the module that holds them.
    let mut arrows: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (from, text) in &modules {
        for mut to in imports(&code(text), from) {
            while !to.is_empty() && !modules.contains_key(&to) {
                to.pop();
            }
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue; // one inside the other: the same room
            }
            let entry = arrows.entry(from[..common].to_vec()).or_default();
            entry.entry(from[common].clone()).or_default().insert(to[common].clone());
        }
    }
    let mut circles = Vec::new();
    for (holder, graph) in &arrows {
        let under = if holder.is_empty() { "the crate root".to_string() } else { holder.join("::") };
        for circle in cycles(graph) {
            circles.push(format!("{} → {} (under {under})", circle.join(" → "), circle[0]));
        }
    }
    circles
}

/// One cycle through each strongly connected group of `graph`, from its least node.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let mut found: Vec<Vec<String>> = Vec::new();
    for start in graph.keys() {
        if found.iter().any(|cycle| cycle.contains(start)) {
            continue;
        }
        // Depth-first search for a path back to `start` through nodes greater than it.
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((node, path)) = stack.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if next == start {
                    found.push(path.clone());
                    stack.clear();
                    break;
                }
                if next > start && seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
    found
}

/// The longest function the crates that ship or judge may hold, from its signature to its
/// closing brace. A longer one is split, its pure decisions pulled out.
const MAX_FUNCTION_LINES: usize = 70;

#[test]
fn no_function_in_the_crates_that_ship_or_judge_is_long() {
    let mut long = Vec::new();
    for name in CRATES {
        let src = workspace().join(name).join("src");
        let mut files = Vec::new();
        super::tidy::rust_files(&src, &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a readable source");
            let path = file.strip_prefix(workspace()).expect("in the workspace").display().to_string();
            long.extend(
                long_functions(&text)
                    .into_iter()
                    .map(|(line, name, length)| format!("{path}:{line} {name}: {length} lines")),
            );
        }
    }
    assert!(long.is_empty(), "functions over {MAX_FUNCTION_LINES} lines:\n{}", long.join("\n"));
}

#[test]
fn the_length_check_measures_a_function_from_its_signature_to_its_closing_brace() {
    let body: String = (0..MAX_FUNCTION_LINES - 2).map(|_| "    step();\n").collect();
    let text = format!(
        "fn short() {{\n{body}}}\n\npub async fn long() {{\n{body}    more();\n}}\n#[cfg(test)]\nmod tests {{\nfn t() {{\n{body}{body}}}\n}}\n"
    );
    assert_eq!(long_functions(&text), vec![(MAX_FUNCTION_LINES + 2, "long".to_string(), MAX_FUNCTION_LINES + 1)]);
}

/// The functions of `text` (before its unit tests) longer than [`MAX_FUNCTION_LINES`]: line,
/// name, length. A function runs from its signature to the first line that closes it at its
/// own indentation (rustfmt's layout).
fn long_functions(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .iter()
        .position(|line| line.starts_with("#[cfg(test)]") || line.starts_with("#[cfg(all(test"))
        .unwrap_or(lines.len());
    let mut long = Vec::new();
    for (start, line) in lines[..end].iter().enumerate() {
        let code = line.trim_start();
        let indent = &line[..line.len() - code.len()];
        let signature = ["pub ", "pub(crate) ", "pub(super) ", "async ", "const ", "unsafe "]
            .iter()
            .fold(code, |rest, prefix| rest.strip_prefix(prefix).unwrap_or(rest));
        let Some(name) = signature.strip_prefix("fn ") else { continue };
        if line.trim_end().ends_with(';') {
            continue;
        }
        let name: String = name.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let close = format!("{indent}}}");
        let Some(length) = lines[start..].iter().position(|line| line.trim_end() == close) else { continue };
        if length + 1 > MAX_FUNCTION_LINES {
            long.push((start + 1, name, length + 1));
        }
    }
    long
}
