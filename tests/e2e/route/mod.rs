//! `gemctl record-route` on the car's platform in simulation (`platform:=gem_e2_sim`: the
//! pose from the simulated INS, with its noise and latency, through `gnss_pose`, which
//! also gives the health on `gps_accuracy`), the suite's own controller as the driver:
//!
//! - a lap of the GEM track recorded with `--close-loop` and ended with Ctrl-C: the file
//!   loads with the planner's loader, its points are 0.5 m apart, lie within a few cm of
//!   the path the car drove (the simulator's true poses) and close the loop; served to the
//!   planner on the same platform, the recorded route is driven with a cross-track RMS
//!   after convergence of at most 3 cm;
//! - Ctrl-C while the car drives, after an INS outage: the file is written and valid, has
//!   no point where the solution was bad, reports the gap, and goes on to where the car
//!   was;
//! - bad input: an output that cannot be written is refused before anything starts; no
//!   pose, or a pose without its health, is a clear error within the wait; a recording
//!   with fewer than two points writes nothing.

mod recording;
mod refusals;

use gem_core::control::closed_loop::{rms, stats, CONVERGED_M};
use gem_core::geometry::{Point, Pose};
use gem_core::names::global::{MODEL_STATES, TASK_PLANNER_STATUS};
use gem_e2e::bags::scratch_dir;
use gem_e2e::lap::LAP;
use gem_e2e::platform::{
    cross_track_of, launch, launch_with, positions, route_path, spawn_at, stop, waypoint_rows,
};
use gem_e2e::suite::car_speed;
use gem_msgs::gazebo_msgs::ModelStates;
use gem_msgs::gem_state_msgs::{GpsAccuracyStamped, TaskPlannerStatus};
use gem_testbed::{cli_ok, node_binary, ros, tool_command, wait_until, Collector};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Bound of each wait for a state (wall time, at 5×).
const T: Duration = Duration::from_secs(60);

/// `gemctl record-route` in the background, its stdout and stderr in files.
struct RecordRoute {
    child: Option<Child>,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl RecordRoute {
    /// Starts `gemctl record-route args...` against the test master, with `env`.
    fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> RecordRoute {
        let (stdout, stderr) = (dir.join("record.out"), dir.join("record.err"));
        let bin = node_binary("gemctl");
        let mut all = vec!["record-route"];
        all.extend(args);
        let mut cmd = tool_command(bin.to_str().expect("utf-8 path"), &all);
        cmd.envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).expect("stdout file"))
            .stderr(std::fs::File::create(&stderr).expect("stderr file"));
        RecordRoute {
            child: Some(cmd.spawn().expect("gemctl")),
            stdout,
            stderr,
        }
    }

    fn said(&self) -> String {
        let read = |p: &PathBuf| std::fs::read_to_string(p).unwrap_or_default();
        format!("{}{}", read(&self.stdout), read(&self.stderr))
    }

    /// Waits until its live line (stderr) says `needle`; fails at once if it ends first.
    fn wait_says(&mut self, needle: &str) {
        let stderr = self.stderr.clone();
        let read = || std::fs::read_to_string(&stderr).unwrap_or_default();
        let child = self.child.as_mut().expect("running");
        let mut ended = None;
        let said = wait_until(T, || {
            ended = child.try_wait().ok().flatten();
            read().contains(needle) || ended.is_some()
        });
        assert!(
            said && read().contains(needle),
            "gemctl record-route never said {needle:?} (ended: {ended:?}):\n{}",
            self.said()
        );
    }

    /// Ctrl-C: SIGINT, and its exit status within `T`.
    fn interrupt(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let deadline = Instant::now() + T;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        gem_ros::launch::stop_group(&mut child, Duration::from_secs(1));
        panic!(
            "gemctl record-route did not end after Ctrl-C:\n{}",
            self.said()
        );
    }
}

impl Drop for RecordRoute {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            gem_ros::launch::stop_group(&mut child, Duration::from_secs(1));
        }
    }
}

/// `gemctl record-route args...` to its end (an error expected): its exit status, what
/// it said, and how long it took.
fn record_route_fails(args: &[&str], env: &[(&str, &str)]) -> (ExitStatus, String, Duration) {
    let dir = scratch_dir("route_fails");
    let mut rec = RecordRoute::start(&dir, args, env);
    let started = Instant::now();
    let mut child = rec.child.take().expect("running");
    let status = wait_until(T, || child.try_wait().ok().flatten().is_some())
        .then(|| child.wait().expect("exit status"));
    let took = started.elapsed();
    rec.child = Some(child);
    let said = rec.said();
    (status.expect("gemctl record-route ended"), said, took)
}

/// The planner serves `file` (a file in launch/waypoints).
fn serve(file: &str) {
    let answer = cli_ok(
        "rosservice",
        &[
            "call",
            "/serve_waypoints",
            &format!("waypoints_file: {file}"),
        ],
        T,
    );
    assert!(answer.contains("success: True"), "{answer}");
}

/// Waits until the launched suite's planner speaks: the launch has set its parameters
/// (`/use_sim_time`, which a recorder started earlier would not follow).
fn suite_up(status: &Collector<TaskPlannerStatus>, suite: &gem_testbed::NodeProc) {
    assert!(
        status.wait_for(T, |_| true).is_some(),
        "the suite did not come up\n{}",
        suite.output()
    );
}

/// Waits until the planner has run a task and has none left: the route is done.
fn route_done(status: &Collector<TaskPlannerStatus>, said: impl Fn() -> String) {
    assert!(
        status
            .wait_for(T, |m| m.status == TaskPlannerStatus::STATUS_RUNNING_TASK)
            .is_some(),
        "the route never ran\n{}",
        said()
    );
    let ran = status.len();
    let done = wait_until(LAP.mul_f64(1.5), || {
        status.all()[ran..]
            .iter()
            .any(|m| m.status == TaskPlannerStatus::STATUS_NO_TASK)
    });
    assert!(done, "the route did not end\n{}", said());
}

/// Distance from `p` to the polyline through `path`.
fn distance_to(path: &[Point], p: Point) -> f64 {
    path.windows(2)
        .map(|w| {
            let (a, b) = (w[0], w[1]);
            let (dx, dy) = (b.x - a.x, b.y - a.y);
            let len2 = dx * dx + dy * dy;
            let t = if len2 > 0.0 {
                (((p.x - a.x) * dx + (p.y - a.y) * dy) / len2).clamp(0.0, 1.0)
            } else {
                0.0
            };
            p.distance(Point::new(a.x + t * dx, a.y + t * dy))
        })
        .fold(f64::INFINITY, f64::min)
}

/// The far ends of the gaps a recorder's summary reports (`to (x, y)`).
fn gap_ends(said: &str) -> Vec<Point> {
    said.lines()
        .filter(|l| l.starts_with("gap "))
        .filter_map(|l| {
            let (_, to) = l.split_once(" to (")?;
            let (xy, _) = to.split_once(')')?;
            let (x, y) = xy.split_once(", ")?;
            Some(Point::new(x.parse().ok()?, y.parse().ok()?))
        })
        .collect()
}

/// The rows' spacing: 0.5 m but at the last row (the loop's closing segment, or the
/// end) and across the gaps the recorder reported, where a row sits at the gap's far end.
struct Spacing {
    /// Mean and worst deviation from 0.5 m of the regular spacings, m.
    mean: f64,
    worst: f64,
    /// The rows either side of each join across a gap.
    joins: Vec<(Point, Point)>,
    /// The last spacing, m.
    last: f64,
}

impl Spacing {
    /// Checks `route` against what its recorder `said`; panics on an irregular spacing
    /// that is no reported gap.
    fn of(route: &[Pose], said: &str) -> Spacing {
        let ends = gap_ends(said);
        let pairs: Vec<(Point, Point)> = route
            .windows(2)
            .map(|w| (w[0].point(), w[1].point()))
            .collect();
        let (last, pairs) = pairs.split_last().expect("two rows");
        let (mut regular, mut joins) = (Vec::new(), Vec::new());
        for &(a, b) in pairs {
            let d = a.distance(b);
            if (d - 0.5).abs() <= 0.05 {
                regular.push(d);
            } else if ends.iter().any(|e| e.distance(b) < 0.01) {
                joins.push((a, b));
            } else {
                panic!(
                    "rows {d:.3} m apart at ({:.2}, {:.2}), no gap reported there:\n{said}",
                    b.x, b.y
                );
            }
        }
        Spacing {
            mean: regular.iter().sum::<f64>() / regular.len() as f64,
            worst: regular.iter().fold(0.0f64, |m, g| m.max((g - 0.5).abs())),
            joins,
            last: last.0.distance(last.1),
        }
    }
}
