//! Recording a route: a lap recorded and driven back, and Ctrl-C mid-drive after an INS outage.

use super::*;

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
