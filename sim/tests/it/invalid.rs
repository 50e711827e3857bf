//! Hostile input, data-driven: every scenario in `scenarios/invalid/` and every command line in
//! `scenarios/invalid/cli.txt` must be refused with exit status 2 and the exact error its file
//! records, naming the file, the line and the field; nothing may panic, hang or take the
//! machine's memory. Each scenario file opens with `# what it tries` and `# error: …` (the error
//! after the file name).

use std::path::PathBuf;

use super::support::{sluice, workspace};

fn invalid_scenarios() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(workspace().join("scenarios/invalid"))
        .expect("scenarios/invalid exists")
        .map(|entry| entry.expect("readable").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_invalid_scenario_is_refused_with_its_file_line_field_and_error() {
    let files = invalid_scenarios();
    assert!(files.len() >= 100, "the hostile corpus has {} files", files.len());
    let mut wrong = Vec::new();
    for path in &files {
        let relative = path.strip_prefix(workspace()).expect("inside the workspace").display().to_string();
        let text = String::from_utf8_lossy(&std::fs::read(path).expect("readable")).into_owned();
        let expected = text
            .lines()
            .find_map(|line| line.strip_prefix("# error: "))
            .unwrap_or_else(|| panic!("{relative} has no `# error:` line"));
        let (status, stdout, stderr) = sluice(&["run", &relative]);
        let whole = format!("sluice: {relative}{expected}\n");
        if status != 2 || stderr != whole || !stdout.is_empty() {
            wrong.push(format!("{relative}: exit {status}\n  want {whole}  got  {stderr}{stdout}"));
            continue;
        }
        // Every error names its line; all but those about the whole document name a field.
        let named_line = expected.starts_with(':')
            && expected[1..].split(':').next().is_some_and(|line| line.parse::<u32>().is_ok());
        let whole_document =
            expected.contains("a scenario is a mapping of fields") || expected.contains("not UTF-8 text");
        if !named_line || !(expected.contains(": field `") || whole_document) {
            wrong.push(format!("{relative}: the error names no line or field: {expected}"));
        }
    }
    assert!(wrong.is_empty(), "{} of {} invalid scenarios:\n{}", wrong.len(), files.len(), wrong.join("\n"));
}

#[test]
fn every_hostile_command_line_exits_two_with_its_error() {
    let cases = std::fs::read_to_string(workspace().join("scenarios/invalid/cli.txt")).expect("cli.txt exists");
    let cases: Vec<(&str, &str)> = cases
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| line.split_once(" => ").map_or(("", line.trim_start_matches("=> ")), |(args, want)| (args, want)))
        .collect();
    assert!(cases.len() >= 40, "{} command lines", cases.len());
    let mut wrong = Vec::new();
    for (arguments, want) in cases {
        let arguments: Vec<&str> = arguments.split_whitespace().collect();
        let (status, stdout, stderr) = sluice(&arguments);
        if status != 2 || !stderr.contains(want) || stderr.contains("panicked") {
            wrong.push(format!("sluice {}: exit {status}, want `{want}`, got:\n{stderr}{stdout}", arguments.join(" ")));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn control_characters_in_refused_values_are_escaped() {
    for value in ["\u{1b}[2J", "bell\u{7}"] {
        let (status, _, stderr) = sluice(&["run", "scenarios/wordcount.yaml", "--mode", value]);
        assert_eq!(status, 2);
        assert!(!stderr.chars().any(|character| character.is_control() && character != '\n'), "{stderr:?}");
    }
    // In a scenario, a control character is shown escaped.
    let (_, _, stderr) = sluice(&["run", "scenarios/invalid/job-control-characters.yaml"]);
    assert!(stderr.contains("word\\u{1b}count"), "{stderr}");
}
