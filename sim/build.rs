//! Records the git revision of the build, so that a replay file can say which build recorded it
//! (a seed replays exactly only on the same build).

use std::process::Command;

fn git(arguments: &[&str]) -> Option<String> {
    let output = Command::new("git").args(arguments).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

fn main() {
    let revision = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_string());
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|status| !status.is_empty());
    let suffix = if dirty { "+changes" } else { "" };
    println!("cargo:rustc-env=SLUICE_GIT_REVISION={revision}{suffix}");
    // Rerun when a commit or checkout moves HEAD, or the index changes.
    println!("cargo:rerun-if-changed=../.git/HEAD");
    println!("cargo:rerun-if-changed=../.git/index");
}
