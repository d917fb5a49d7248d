//! The rostest files in `launch/test/` pass under Debian's `rostest` (its own master,
//! roslaunch starting our nodes from `rosrun`-style package lookup).

use gem_testbed::{cli, exclusive};
use std::time::Duration;

#[test]
fn state_manager_test_file_passes_under_rostest() {
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
        stdout.contains("TESTS: 9"),
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
