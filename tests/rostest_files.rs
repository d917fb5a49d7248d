//! The rostest files in `launch/test/` pass under Debian's `rostest` (its own master,
//! roslaunch starting our nodes from `rosrun`-style package lookup).

use gem_e2e::cli;
use std::time::Duration;

#[test]
fn state_manager_test_file_passes_under_rostest() {
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
