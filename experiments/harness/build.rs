//! Records what built the binary, so that result files can say it (`provenance` in a result
//! file): the rustc version (`$RUSTC --version`) and the cargo profile (`debug` or `release`, with its opt-level).
//! No dependencies: both come from what cargo hands every build script.

use std::process::Command;

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
}
