//! The rostest files in `launch/test/` pass under Debian's `rostest` (its own master,
//! roslaunch starting our nodes from `rosrun`-style package lookup).
//!
//! Each file runs once in the test command: `runners/test.sh` runs them in the headless
//! image first and then sets `GEM_ROSTESTS_RAN_IN_DOCKER` to the results folder; these
//! tests then read the JUnit XML rostest wrote there (every file present, its test count,
//! no failure) instead of running the files natively a second time. Without it (a
//! developer's `cargo test`) they run the files natively.

use gem_testbed::{cli, exclusive, repo_root};
use std::path::PathBuf;
use std::time::Duration;

/// The state manager's rostest file runs its nine scenarios.
const STATE_MANAGER_TESTS: usize = 9;

/// The folder of the image's rostest results, when `runners/test.sh` ran them there.
fn ran_in_docker() -> Option<PathBuf> {
    let dir = std::env::var_os("GEM_ROSTESTS_RAN_IN_DOCKER")?;
    Some(repo_root().join(dir))
}

/// Checks the image's JUnit XML of the test node `test` (under `results/<run>/`, written
/// by our rostest runner as `rosunit-<test>.xml`): `tests` test cases, neither a failure
/// nor an error.
fn passed_in_docker(results: &std::path::Path, run: &str, test: &str, tests: usize) {
    let path = results
        .join(run)
        .join(format!("test_results/gem_bringup/rosunit-{test}.xml"));
    let xml = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{test}: no result of the run in the image ({}: {e})",
            path.display()
        )
    });
    let attr = |name: &str| -> Option<usize> {
        let at = xml.find(&format!(" {name}=\""))? + name.len() + 3;
        xml[at..].split('"').next()?.parse().ok()
    };
    assert_eq!(attr("tests"), Some(tests), "{}:\n{xml}", path.display());
    assert_eq!(attr("failures"), Some(0), "{}:\n{xml}", path.display());
    assert_eq!(attr("errors"), Some(0), "{}:\n{xml}", path.display());
    println!("{test}: passed in the image ({})", path.display());
}

#[test]
fn state_manager_test_file_passes_under_rostest() {
    if let Some(results) = ran_in_docker() {
        passed_in_docker(
            &results,
            "state_manager",
            "state_manager_scenarios",
            STATE_MANAGER_TESTS,
        );
        return;
    }
    let _machine = exclusive();
    let out = cli(
        "rostest",
        &["gem_bringup", "state_manager.test"],
        Duration::from_secs(180),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "rostest failed\n{stdout}\n{stderr}");
    assert!(stdout.contains("RESULT: SUCCESS"), "{stdout}");
    assert!(
        stdout.contains(&format!("TESTS: {STATE_MANAGER_TESTS}")),
        "every scenario must run:\n{stdout}"
    );
}

/// Each suite scenario has a `.test` file passing exactly its launch arguments.
#[test]
fn every_suite_scenario_has_a_matching_test_file() {
    use gem_e2e::suite::{COMMON_ARGS, SCENARIOS};
    for sc in &SCENARIOS {
        let path = gem_testbed::repo_root().join(format!("launch/test/suite_{}.test", sc.name));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let args: Vec<String> = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("<arg name=\""))
            .map(|l| l.replace("\" value=\"", ":=").replace("\"/>", ""))
            .collect();
        let expected: Vec<String> = COMMON_ARGS
            .iter()
            .chain(sc.launch_args)
            .map(|a| a.to_string())
            .collect();
        assert_eq!(args, expected, "{}", path.display());
        assert!(
            text.contains(&format!("args=\"{}\"", sc.name)),
            "{}",
            path.display()
        );
    }
}

/// Every suite scenario passes under rostest (rostest's own master, the suite launched
/// from the `.test` file, the runner `suite_rostest` as the test node).
#[test]
fn suite_test_files_pass_under_rostest() {
    if let Some(results) = ran_in_docker() {
        for sc in &gem_e2e::suite::SCENARIOS {
            passed_in_docker(&results, "integration", sc.name, 1);
        }
        return;
    }
    let _machine = exclusive();
    for sc in &gem_e2e::suite::SCENARIOS {
        let file = format!("suite_{}.test", sc.name);
        let out = cli("rostest", &["gem_bringup", &file], Duration::from_secs(300));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{file} failed\n{stdout}\n{stderr}");
        assert!(
            stdout.contains("RESULT: SUCCESS") && stdout.contains("TESTS: 1"),
            "{file}:\n{stdout}"
        );
    }
}
