//! The workspace root, and plain commands run to their end: one of the runners' shell functions or environments,
//! and the check that a command succeeded.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root (this crate lives in `crates/gem_testbed`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// `bash -c "source <script> && <then>"`, `script` relative to the workspace root: runs a
/// function of one of the runners' scripts, or reads the environment one sets.
pub fn sourced(script: &str, then: &str) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(format!(
        "source '{}' && {then}",
        repo_root().join(script).display()
    ));
    cmd
}

/// Asserts that `out` (of `what`) is a success and returns its stdout; a failure shows
/// the status and both streams.
pub fn succeeded(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({})\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
