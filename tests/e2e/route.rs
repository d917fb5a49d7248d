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

/// A lap of the GEM track driven by the suite's controller on the car's platform,
/// recorded with `--close-loop` and ended with Ctrl-C; then the recorded file served and
/// driven on the same platform.
#[test]
fn a_recorded_lap_lies_on_the_driven_path_and_is_driven_within_3_cm() {
    let _ros = ros();
    let started = Instant::now();
    let dir = scratch_dir("route_lap");
    let out = dir.join("lap.csv");
    let out_s = out.to_str().expect("utf-8 path");

    // Parked on the track's start, nothing served yet; the recorder ready before the
    // car moves.
    let poses = Collector::<ModelStates>::new(MODEL_STATES);
    let status = Collector::<TaskPlannerStatus>::new(TASK_PLANNER_STATUS);
    let start = waypoint_rows("gem_track.csv").0;
    let suite = launch_with("gem_e2_sim", "", &spawn_at(&start));
    suite_up(&status, &suite);
    let mut rec = RecordRoute::start(&dir, &[out_s, "--close-loop"], &[]);
    // A second recorder reads the INS itself, projected with gnss_pose's frame.
    let ins_dir = dir.join("ins");
    std::fs::create_dir(&ins_dir).expect("a directory");
    let ins_out = ins_dir.join("lap.csv");
    let ins_args = [
        ins_out.to_str().expect("utf-8 path"),
        "--close-loop",
        "--source",
        "ins",
    ];
    let mut ins_rec = RecordRoute::start(&ins_dir, &ins_args, &[]);
    rec.wait_says("health good,");
    ins_rec.wait_says("health good,");
    serve("gem_track.csv");
    route_done(&status, || format!("{}\n{}", rec.said(), suite.output()));
    let exit = rec.interrupt();
    let said = rec.said();
    assert!(exit.success(), "{exit}:\n{said}");
    let ins_exit = ins_rec.interrupt();
    let ins_said = ins_rec.said();
    assert!(ins_exit.success(), "{ins_exit}:\n{ins_said}");
    stop(suite);
    let recorded_in = started.elapsed();

    // The file: the planner's loader reads it; a closed loop, 0.5 m apart, on the path
    // the car drove.
    let route = gem_core::waypoints::load(&out).expect("the planner's loader reads it");
    assert!(said.contains("loop closed"), "{said}");
    assert_eq!(
        route.first().map(|p| p.point()),
        route.last().map(|p| p.point())
    );
    let spacing = Spacing::of(&route, &said);
    let (mean, worst, closing) = (spacing.mean, spacing.worst, spacing.last);
    assert!(
        (mean - 0.5).abs() < 0.005 && worst < 0.05 && (0.25..=1.0).contains(&closing),
        "spacing: mean {mean:.4} m, worst off 0.5 m by {worst:.4} m, closing {closing:.3} m"
    );
    let driven = positions(&poses.all());
    let off: Vec<f64> = route
        .iter()
        .map(|p| distance_to(&driven, p.point()))
        .collect();
    let (off_rms, off_max) = (rms(&off), off.iter().fold(0.0f64, |m, d| m.max(*d)));
    assert!(
        off_max < 0.06 && off_rms < 0.02,
        "from the driven path: RMS {off_rms:.4} m, max {off_max:.4} m"
    );
    // The INS recording: the same lap, as close to the driven path.
    let ins_route = gem_core::waypoints::load(&ins_out).expect("the planner's loader reads it");
    assert!(ins_said.contains("loop closed"), "{ins_said}");
    let ins_off: Vec<f64> = ins_route
        .iter()
        .map(|p| distance_to(&driven, p.point()))
        .collect();
    let (ins_rms, ins_max) = (rms(&ins_off), ins_off.iter().fold(0.0f64, |m, d| m.max(*d)));
    let ins_spacing = Spacing::of(&ins_route, &ins_said);
    assert!(
        ins_max < 0.06 && ins_rms < 0.02 && ins_spacing.worst < 0.05,
        "--source ins: {} points, from the driven path RMS {ins_rms:.4} m, max {ins_max:.4} m, spacing off 0.5 m by {:.4} m",
        ins_route.len(),
        ins_spacing.worst
    );

    // Served to the planner and driven on the same platform.
    let poses = Collector::<ModelStates>::new(MODEL_STATES);
    let status = Collector::<TaskPlannerStatus>::new(TASK_PLANNER_STATUS);
    let suite = launch("gem_e2_sim", out_s);
    route_done(&status, || suite.output());
    stop(suite);
    let lap = stats(
        &cross_track_of(route_path(out_s), &poses.all()),
        CONVERGED_M,
    );
    println!(
        "recorded lap: {} points ({} joined across gaps), spacing mean {mean:.4} m (worst off 0.5 m by {worst:.4} m, closing {closing:.3} m), \
         from the driven path RMS {off_rms:.4} m max {off_max:.4} m (--source ins: {} points, RMS {ins_rms:.4} m, max {ins_max:.4} m); driven: RMS after convergence {:.4} m, max {:.4} m; \
         recorded in {:.0} s, {:.0} s in all",
        route.len(),
        spacing.joins.len(),
        ins_route.len(),
        lap.rms_after_m,
        lap.max_after_m,
        recorded_in.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        lap.rms_after_m <= 0.03,
        "the recorded route driven with RMS {:.4} m",
        lap.rms_after_m
    );
}

/// The car's x when `at` (the last model state that arrived by then).
fn x_at(poses: &[(Instant, ModelStates)], at: Instant) -> f64 {
    poses
        .iter()
        .take_while(|(t, _)| *t <= at)
        .filter_map(|(_, m)| m.pose.first().map(|p| p.position.x))
        .last()
        .unwrap_or(f64::NAN)
}

/// On the straight route, an INS outage of at least 2 s (ROS time) mid-drive and then Ctrl-C
/// while the car drives on.
#[test]
fn ctrl_c_mid_drive_after_an_ins_outage_keeps_a_valid_file_without_the_bad_stretch() {
    let _ros = ros();
    let started = Instant::now();
    let dir = scratch_dir("route_outage");
    let out = dir.join("straight.csv");
    let poses = Collector::<ModelStates>::new(MODEL_STATES);
    let gps = Collector::<GpsAccuracyStamped>::new("/gps_accuracy");
    let status = Collector::<TaskPlannerStatus>::new(TASK_PLANNER_STATUS);
    let start = waypoint_rows("straight_300m.csv").0;
    let suite = launch_with("gem_e2_sim", "", &spawn_at(&start));
    suite_up(&status, &suite);
    let mut rec = RecordRoute::start(&dir, &[out.to_str().expect("utf-8 path")], &[]);
    rec.wait_says("health good,");
    serve("straight_300m.csv");
    let x = || {
        poses
            .last()
            .and_then(|m| m.pose.first().map(|p| p.position.x))
    };
    let moving_past =
        |x0: f64| wait_until(T, || x().is_some_and(|x| x > x0) && car_speed(&poses) > 1.0);
    assert!(
        moving_past(20.0),
        "the car did not drive\n{}",
        suite.output()
    );

    // The INS loses its solution for at least 2 s of ROS time; gnss_pose says so on
    // gps_accuracy.
    let ins = |value: &str| {
        cli_ok(
            "rostopic",
            &["pub", "-1", "/gem_sim/ins_status", "std_msgs/String", value],
            T,
        )
    };
    let bad = |m: &GpsAccuracyStamped| m.accuracy > 200.0;
    ins("data: INS_SOLUTION_FREE");
    let bad_msg = gps.wait_for(T, bad).expect("gps_accuracy bad");
    let bad_from = bad_msg.header.stamp.seconds();
    assert!(
        wait_until(T, || gps
            .last()
            .is_some_and(|m| m.header.stamp.seconds() >= bad_from + 2.0)),
        "ROS time stood still"
    );
    ins("data: ''");
    let back = gps.len();
    assert!(
        wait_until(T, || gps.all()[back..].iter().any(|m| !bad(m))),
        "gps_accuracy never good again"
    );
    rec.wait_says("gaps 1");
    // Driving again, well past the outage: Ctrl-C with the car at speed.
    let resumed_at = x().expect("a pose");
    assert!(moving_past(resumed_at + 15.0), "the car did not drive on");
    let x_stop = x().expect("a pose");
    let exit = rec.interrupt();
    let said = rec.said();
    assert!(exit.success(), "{exit}:\n{said}");
    let took = started.elapsed();
    drop(status);
    stop(suite);

    // A valid file, no temporary one left beside it.
    let route = gem_core::waypoints::load(&out).expect("the planner's loader reads it");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("the directory")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(said.contains("gap 1: solution BAD (1000000 mm)"), "{said}");
    // No point where the solution was bad: between the car's x at the first bad and at
    // the first good gps_accuracy again (arrival times, wall).
    let timed_gps = gps.timed();
    let timed_poses = poses.timed();
    let first_bad = timed_gps.iter().find(|(_, m)| bad(m)).expect("bad").0;
    let good_again = timed_gps
        .iter()
        .find(|(t, m)| *t > first_bad && !bad(m))
        .expect("good again")
        .0;
    let (x_bad, x_good) = (
        x_at(&timed_poses, first_bad),
        x_at(&timed_poses, good_again),
    );
    let inside: Vec<f64> = route
        .iter()
        .map(|p| p.x)
        .filter(|x| *x > x_bad + 0.1 && *x < x_good - 0.1)
        .collect();
    assert!(
        x_good - x_bad > 1.0 && inside.is_empty(),
        "points recorded while the solution was bad ({x_bad:.2}..{x_good:.2} m): {inside:?}"
    );
    // On the path the car drove, 0.5 m apart but across the reported gaps and at the end.
    let driven = positions(&poses.all());
    let off = route
        .iter()
        .map(|p| distance_to(&driven, p.point()))
        .fold(0.0f64, f64::max);
    assert!(off < 0.06, "{off:.3} m from the driven path");
    let spacing = Spacing::of(&route, &said);
    assert!(
        (spacing.mean - 0.5).abs() < 0.005 && spacing.worst < 0.05,
        "spacing: mean {:.4} m, worst off 0.5 m by {:.4} m",
        spacing.mean,
        spacing.worst
    );
    let outage = spacing
        .joins
        .iter()
        .find(|j| j.0.x <= x_bad + 0.1 && j.1.x >= x_good - 0.1)
        .map(|j| j.0.distance(j.1));
    assert!(
        outage.is_some(),
        "no join across the outage: {:?}",
        spacing.joins
    );
    let last = route.last().expect("a point").x;
    assert!(
        last > x_stop - 3.0,
        "the route ends at {last:.2} m, the car was at {x_stop:.2} m at Ctrl-C"
    );
    println!(
        "outage from x {x_bad:.2} m to {x_good:.2} m, joined by {:.2} m; Ctrl-C at {x_stop:.2} m, last point {last:.2} m; {} points, {} joins; {:.0} s",
        outage.unwrap_or(f64::NAN),
        route.len(),
        spacing.joins.len(),
        took.as_secs_f64()
    );
}

#[test]
fn an_output_that_cannot_be_written_is_refused_before_anything_starts() {
    let dir = scratch_dir("route_out");
    let missing = dir.join("no/such/dir/route.csv");
    let locked = dir.join("locked");
    std::fs::create_dir(&locked).expect("a directory");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    // Root writes anywhere the file system allows: then a directory of the kernel's.
    let probe = locked.join("probe");
    let unwritable = if std::fs::write(&probe, "").is_ok() {
        PathBuf::from("/sys")
    } else {
        locked.clone()
    };
    for (out, says) in [
        (
            missing.clone(),
            format!(
                "the directory {} does not exist",
                dir.join("no/such/dir").display()
            ),
        ),
        (
            unwritable.join("route.csv"),
            format!("cannot create a file in {}", unwritable.display()),
        ),
        (dir.clone(), "it is a directory".to_string()),
    ] {
        // No master is asked: the check comes first, so it is quick even without one.
        let (status, said, took) = record_route_fails(
            &[out.to_str().expect("utf-8 path")],
            &[("ROS_MASTER_URI", "http://127.0.0.1:1")],
        );
        assert!(!status.success(), "{}: {said}", out.display());
        assert!(said.contains(&says), "{}: {said}", out.display());
        assert!(took < Duration::from_secs(5), "{took:?}");
        assert!(!out.is_file());
    }
}

#[test]
fn no_pose_or_a_pose_without_health_is_a_clear_error_within_the_wait() {
    let ros = ros();
    ros.set_sim_time(false);
    let dir = scratch_dir("route_sources");
    let out = dir.join("route.csv");
    let out_s = out.to_str().expect("utf-8 path");
    // Nothing serves a pose.
    let ns = gem_testbed::fresh_ns("route");
    let env = [("ROS_NAMESPACE", ns.as_str())];
    let (status, said, took) = record_route_fails(&[out_s, "--wait-s", "2"], &env);
    assert!(!status.success(), "{said}");
    assert!(
        said.contains("no pose within 2 s") && said.contains("gem_sim"),
        "{said}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    // gem_sim serves the pose, nothing publishes gps_accuracy.
    let _sim = ros.node("gem_sim").arg(&format!("__ns:={ns}")).spawn();
    let (status, said, took) = record_route_fails(&[out_s, "--wait-s", "2"], &env);
    assert!(!status.success(), "{said}");
    assert!(
        said.contains(&format!("no {ns}/gps_accuracy within 2 s")),
        "{said}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(!out.exists());
}

#[test]
fn ctrl_c_before_the_car_has_moved_writes_nothing() {
    let ros = ros();
    ros.set_sim_time(false);
    let dir = scratch_dir("route_parked");
    let out = dir.join("route.csv");
    let ns = gem_testbed::fresh_ns("parked");
    let _sim = ros.node("gem_sim").arg(&format!("__ns:={ns}")).spawn();
    let _signals = ros.node("mock_signals").arg(&format!("__ns:={ns}")).spawn();
    let mut rec = RecordRoute::start(
        &dir,
        &[out.to_str().expect("utf-8 path")],
        &[("ROS_NAMESPACE", ns.as_str())],
    );
    rec.wait_says("health good, stopped");
    let exit = rec.interrupt();
    let said = rec.said();
    assert!(!exit.success(), "{said}");
    assert!(
        said.contains("nothing written to") && said.contains("0 point(s) recorded"),
        "{said}"
    );
    let files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the directory")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| !n.starts_with("record."))
        .collect();
    assert!(files.is_empty(), "{files:?}");
}
