//! Records what built the binary, so that result files can say it: the rustc version (`$RUSTC
//! --version`) and the cargo profile (`debug` or `release`, with its opt-level) for a result's
//! `provenance`, and the source tree's commit and whether its code differed from it for a result's
//! `git` (`src/source_tree.rs`, shared with the library). No dependencies beyond `std` and git.

use std::path::Path;
use std::process::Command;

#[allow(dead_code)] // the library's tests use what the build script does not
#[path = "src/source_tree.rs"]
mod source_tree;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let version = Command::new(&rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=LSMLAB_RUSTC_VERSION={version}");
    // `release`, or `debug` for cargo's dev and test profiles, with the optimisation level (the
    // workspace optimises its dev profile, so `debug` alone would mislead).
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "unknown".to_string());
    let opt = std::env::var("OPT_LEVEL").unwrap_or_else(|_| "?".to_string());
    println!("cargo:rustc-env=LSMLAB_BUILD_PROFILE={profile} (opt-level {opt})");
    println!("cargo:rerun-if-env-changed=RUSTC");
    println!("cargo:rerun-if-changed=build.rs");

    // The source tree: the workspace root is two levels above this crate. The build script re-runs
    // when the code (a directory is watched whole) or the commit checked out changes, so the
    // recorded state is the one the binary was compiled from.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".to_string());
    let root = Path::new(&manifest).join("../..");
    let (commit, dirty) = source_tree::state(&root).unwrap_or_else(|| ("unknown".to_string(), false));
    println!("cargo:rustc-env=LSMLAB_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=LSMLAB_GIT_DIRTY={dirty}");
    for path in source_tree::CODE_PATHS.iter().map(|p| root.join(p)) {
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    for file in source_tree::head_files(&root) {
        println!("cargo:rerun-if-changed={}", file.display());
    }
}
