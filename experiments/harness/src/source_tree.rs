//! The git state of the source tree lsmlab is built from: the commit checked out and whether the
//! code differs from it.
//!
//! Used twice: `build.rs` records the state when the binary is built (a result file's `git` is
//! the code that ran, even when the tree has moved on since the build), and the tests compare that
//! record with the tree. Only `std`, so that the build script can include this file as a module.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The tracked paths the binary is built from, relative to the workspace root. A change to
/// anything else (documentation, the Makefile, results, figures, REPORT.md) does not make a build
/// dirty: it does not change what a run computes.
pub const CODE_PATHS: &[&str] = &["Cargo.toml", "Cargo.lock", "engine", "workloads", "experiments"];

/// `git -C dir ARGS`'s standard output, when git exists and succeeds.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit checked out in the work tree holding `dir`, and whether a tracked file under
/// [`CODE_PATHS`] differs from it (staged or not). `None` outside a git work tree.
pub fn state(dir: &Path) -> Option<(String, bool)> {
    let commit = git(dir, &["rev-parse", "HEAD"]).filter(|c| !c.is_empty())?;
    let mut args = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    let specs: Vec<String> = CODE_PATHS.iter().map(|p| format!(":(top){p}")).collect();
    args.extend(specs.iter().map(String::as_str));
    // A tree whose status cannot be read is reported dirty rather than clean.
    let dirty = git(dir, &args).is_none_or(|s| !s.is_empty());
    Some((commit, dirty))
}

/// The existing files whose change means another commit is checked out in the work tree holding
/// `dir`: `HEAD`, the branch file it points to and the packed refs (the build script re-runs when
/// one of them changes). Empty outside a git work tree.
pub fn head_files(dir: &Path) -> Vec<PathBuf> {
    let mut names = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        names.push(branch);
    }
    names
        .iter()
        .filter_map(|name| git(dir, &["rev-parse", "--git-path", name]))
        // git gives the path relative to `dir` unless the git directory lies elsewhere.
        .map(|p| dir.join(p))
        .filter(|p| p.is_file())
        .collect()
}
