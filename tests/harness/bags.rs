//! Helpers for tests that record bags with Debian's `rosbag record` and run `gemctl`.

use gem_testbed::{cli_background, cli_ok, ros, wait_for_subscriber, NodeProc, RosGuard};
use std::path::{Path, PathBuf};
use std::time::Duration;

const T: Duration = Duration::from_secs(120);

/// A fresh scratch directory for this test binary and `name`.
pub fn scratch_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gem_e2e_{}_{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch directory");
    d
}

/// The start of a test that records a bag: the master (on wall time), a fresh scratch
/// directory `name` and the path of the bag `bag` in it.
pub fn recording(name: &str, bag: &str) -> (RosGuard, PathBuf, PathBuf) {
    let ros = ros();
    ros.set_sim_time(false);
    let dir = scratch_dir(name);
    let bag = dir.join(bag);
    (ros, dir, bag)
}

/// Starts `rosbag record -O file` of `limit` messages per topic (or `duration` seconds)
/// and returns once it has subscribed every topic, so nothing published after is missed.
pub fn start_recording(
    file: &Path,
    limit: Option<usize>,
    duration: Option<&str>,
    topics: &[&str],
) -> NodeProc {
    let mut args = vec![
        "record".to_string(),
        "-O".into(),
        file.display().to_string(),
    ];
    if let Some(l) = limit {
        args.extend(["-l".into(), l.to_string()]);
    }
    if let Some(d) = duration {
        args.push(format!("--duration={d}"));
    }
    args.extend(topics.iter().map(|t| t.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let recorder = cli_background("rosbag", &args);
    for t in topics {
        assert!(wait_for_subscriber(t, T), "rosbag did not subscribe {t}");
    }
    recorder
}

/// Waits for `rosbag record` to end by itself (limit or duration reached).
pub fn finish(mut recorder: NodeProc) {
    let status = recorder.wait(T).expect("rosbag record ends");
    assert!(status.success(), "{}", recorder.output());
}

/// Records `limit` messages of `topic` into `bag`, published by `rostopic pub -r rate
/// topic type value` for the occasion.
pub fn record_published(
    bag: &Path,
    topic: &str,
    limit: usize,
    rate: &str,
    kind: &str,
    value: &str,
) {
    let recorder = start_recording(bag, Some(limit), None, &[topic]);
    let _publisher = cli_background("rostopic", &["pub", "-r", rate, topic, kind, value]);
    finish(recorder);
}

/// Runs `gemctl` with `args`, asserting success; its stdout.
pub fn gemctl(args: &[&str]) -> String {
    let bin = gem_testbed::node_binary("gemctl");
    cli_ok(
        bin.to_str().expect("utf-8 path"),
        args,
        Duration::from_secs(300),
    )
}

/// Runs `gemctl` with `args` for at most `timeout`, whatever its exit: its output.
pub fn gemctl_output(args: &[&str], timeout: Duration) -> std::process::Output {
    let bin = gem_testbed::node_binary("gemctl");
    gem_testbed::cli(bin.to_str().expect("utf-8 path"), args, timeout)
}

/// A command's exit status, stdout and stderr, for an assertion's message.
pub fn said(o: &std::process::Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The launch argument that gives `pacmod_bridge` a report timeout of 0.5 s for a long
/// calibration drive at the tests' speed-up of 5: its default 0.2 s of sim time is 40 ms
/// of wall time there, which a loaded test machine's scheduling can exceed between the
/// simulator's `/clock` and its reports, and a drive of several simulated minutes
/// meets it. The timeout itself is tested at real pace (`tests/e2e/pacmod.rs`).
pub fn drive_tolerance(dir: &Path) -> String {
    let file = dir.join("drive_tolerance.yaml");
    std::fs::write(&file, "pacmod_bridge:\n  report_timeout_s: 0.5\n").expect("a rosparam file");
    format!("calibration:={}", file.display())
}

/// The timeouts of the suite a calibration drive runs against, s of ROS time: a drive of
/// several minutes at 5× stops on the state manager's first ERROR, as it must, and what
/// these tests judge is the fit, not how a loaded test machine keeps 0.6 s of wall time.
pub const DRIVE_TIMEOUT_S: f64 = 10.0;

/// `gemctl calibrate <what> --collect --out DIR/drive` against the suite on `gem_e2_sim`,
/// its car described by the rosparam file `sim_car`, with [`drive_tolerance`] and
/// [`DRIVE_TIMEOUT_S`]; the suite stopped after. The command's output, the drive's
/// directory and the wall seconds the drive took.
pub fn collect_on_sim(
    what: &str,
    sim_car: &Path,
    dir: &Path,
    timeout: Duration,
) -> (std::process::Output, PathBuf, f64) {
    let suite = crate::platform::launch_within(
        "gem_e2_sim",
        "",
        DRIVE_TIMEOUT_S,
        &[
            format!("sim_car:={}", sim_car.display()),
            drive_tolerance(dir),
        ],
    );
    let out = dir.join("drive");
    let started = std::time::Instant::now();
    let collected = gemctl_output(
        &[
            "calibrate",
            what,
            "--collect",
            "--out",
            out.to_str().unwrap(),
        ],
        timeout,
    );
    let took = started.elapsed().as_secs_f64();
    crate::platform::stop(suite);
    (collected, out, took)
}
