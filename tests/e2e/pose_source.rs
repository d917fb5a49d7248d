//! The controllers with each kind of pose source `gem_sim` can emulate, through ROS: half a
//! lap of the GEM track with the twist of the centre of mass (the controller told so, and
//! not), without a yaw rate, without any twist, and with a 10 Hz fix 0.1 s late; the RMS against the bound of
//! the targets (relative to the core figure with the ideal source), the log line and the
//! `/diagnostics` status of a source the controller doubts. And bad reference points refused
//! at start-up.

use gem_core::control::closed_loop;
use gem_core::control::lqr::LqrConfig;
use gem_core::control::stanley::StanleyConfig;
use gem_core::control::tracker::{Law, TrackerConfig};
use gem_core::geometry::Point;
use gem_core::vehicle::localization::LocalizationParams;
use gem_e2e::control::{
    core_rms, cross_track_of, gem_track, goal, refused_at_start_up, ros_rms_bound, wait_done, Stack,
};
use gem_msgs::diagnostic_msgs::{DiagnosticArray, DiagnosticStatus};
use gem_msgs::gazebo_msgs::ModelStates;
use gem_msgs::geometry_msgs::Pose2D;
use gem_testbed::{ros, Collector};
use ros1_protocols::actionlib::status;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);
/// The GEM e2's centre of mass, m ahead of the rear axle.
const COM_X: &str = "0.88";

/// One emulated source and how the controller is run on it.
struct Case {
    /// What it is, for messages.
    what: &'static str,
    /// The controller binary and its `~algorithm`.
    binary: &'static str,
    law: Law,
    /// gem_sim's parameters emulating the source.
    sim: &'static [(&'static str, &'static str)],
    /// The controller's `~twist_reference_x_m`, if set.
    reference: Option<&'static str>,
    /// RMS bound as a multiple of the core figure with the ideal source.
    within: f64,
    /// A log line the controller must print (a doubt), if any.
    says: Option<&'static str>,
}

/// The first half of the GEM track: straights and bends.
fn half_lap() -> Vec<Pose2D> {
    let track = gem_track();
    track[..track.len() / 2].to_vec()
}

/// The pose-source status of the controller in `msg`, if it carries one.
fn source_status(msg: &DiagnosticArray) -> Option<DiagnosticStatus> {
    msg.status
        .iter()
        .find(|s| s.name.ends_with(": pose source"))
        .cloned()
}

fn drive_half_lap(case: &Case) {
    let ros = ros();
    let track = half_lap();
    let points: Vec<Point> = track.iter().map(|w| Point::new(w.x, w.y)).collect();
    let algorithm = case.law.name();
    let mut params = vec![("algorithm", algorithm)];
    if let Some(x) = case.reference {
        params.push(("twist_reference_x_m", x));
    }
    let stack = Stack::start_with_sim(&ros, case.binary, Some(10.0), case.sim, &params);
    let states = Collector::<ModelStates>::new(&stack.topic("gazebo/model_states"));
    // The controller's /diagnostics, remapped into the stack's namespace; the namespace's
    // node name is in the status name.
    let diag = Collector::<DiagnosticArray>::new(&stack.topic("diagnostics"));
    let client = stack.client();
    let mine = |m: &DiagnosticArray| {
        source_status(m).filter(|s| s.name.starts_with(&format!("{}/", stack.ns)))
    };
    let before = diag
        .wait_for(T, |m| mine(m).is_some())
        .unwrap_or_else(|| panic!("{}: no pose-source status\n{}", case.what, stack.output()));
    let id = client.send_goal(goal(track, 0)).unwrap();
    let (st, text, _, _) = wait_done(&client, &id, Duration::from_secs(90));
    assert_eq!(
        status::name(st),
        "SUCCEEDED",
        "{}: {text}\n{}",
        case.what,
        stack.output()
    );
    let cte = cross_track_of(&states.all(), &points);
    let ros_rms = closed_loop::stats(&cte, closed_loop::CONVERGED_M).rms_after_m;
    let cfg = TrackerConfig {
        law: case.law.clone(),
        ..Default::default()
    };
    let ideal = core_rms(cfg, &points, LocalizationParams::OFF);
    let bound = ros_rms_bound(case.within * ideal);
    eprintln!(
        "{}: RMS through ROS {ros_rms:.4} m, bound {bound:.4} m ({}× the ideal source's core figure {ideal:.4} m)",
        case.what, case.within
    );
    assert!(
        ros_rms <= bound,
        "{}: RMS {ros_rms:.4} m > {bound:.4} m\n{}",
        case.what,
        stack.output()
    );
    let statuses: Vec<DiagnosticStatus> = diag.all().iter().filter_map(mine).collect();
    match case.says {
        None => {
            assert!(
                statuses.iter().all(|s| s.level == DiagnosticStatus::OK),
                "{}: {statuses:?}",
                case.what
            );
            assert!(
                !stack.controller.output().contains("the pose source"),
                "{}: a good source doubted\n{}",
                case.what,
                stack.output()
            );
        }
        Some(line) => {
            let out = stack.controller.output();
            assert_eq!(
                out.matches(line).count(),
                1,
                "{}: said once: {line}\n{}",
                case.what,
                stack.output()
            );
            // The WARN within 10 s (sim time) of the goal's start.
            let warn = diag
                .all()
                .into_iter()
                .filter(|m| mine(m).is_some_and(|s| s.level == DiagnosticStatus::WARN))
                .map(|m| m.header.stamp)
                .next()
                .unwrap_or_else(|| panic!("{}: no WARN: {statuses:?}", case.what));
            let start = before.header.stamp;
            let after_s = f64::from(warn.sec) - f64::from(start.sec)
                + (f64::from(warn.nsec) - f64::from(start.nsec)) * 1e-9;
            assert!(
                after_s < 12.0,
                "{}: WARN {after_s:.1} s after the last status before the goal",
                case.what
            );
        }
    }
}

#[test]
fn half_lap_with_the_centre_of_mass_twist_told() {
    drive_half_lap(&Case {
        what: "centre-of-mass twist, ~twist_reference_x_m set, pure pursuit",
        binary: "pure_pursuit",
        law: Law::PurePursuit(Default::default()),
        sim: &[("twist_point_x_m", COM_X)],
        reference: Some(COM_X),
        within: 1.3,
        says: None,
    });
}

#[test]
fn half_lap_with_the_centre_of_mass_twist_untold_is_found_and_said() {
    drive_half_lap(&Case {
        what: "centre-of-mass twist, ~twist_reference_x_m not set, Stanley",
        binary: "stanley",
        law: Law::Stanley(StanleyConfig::default()),
        sim: &[("twist_point_x_m", COM_X)],
        reference: None,
        within: 2.0,
        says: Some("lateral speed is that of a point"),
    });
}

#[test]
fn half_lap_without_a_yaw_rate_takes_the_pose_history() {
    drive_half_lap(&Case {
        what: "no yaw rate, LQR",
        binary: "pure_pursuit",
        law: Law::Lqr(LqrConfig::default()),
        sim: &[("twist", "no_yaw_rate")],
        reference: None,
        within: 1.3,
        says: Some("yaw rate is exactly 0"),
    });
}

#[test]
fn half_lap_without_any_twist_takes_the_pose_history() {
    drive_half_lap(&Case {
        what: "no twist (all zeros), Stanley",
        binary: "stanley",
        law: Law::Stanley(StanleyConfig::default()),
        sim: &[("twist", "off")],
        reference: None,
        within: 2.0,
        says: Some("yaw rate is exactly 0"),
    });
}

#[test]
fn half_lap_with_a_slow_late_fix() {
    drive_half_lap(&Case {
        what: "10 Hz fix 0.1 s late, LQR",
        binary: "pure_pursuit",
        law: Law::Lqr(LqrConfig::default()),
        sim: &[
            ("localization_rate_hz", "10"),
            ("localization_latency_s", "0.1"),
        ],
        reference: None,
        within: 1.3,
        says: None,
    });
}

#[test]
fn bad_twist_reference_points_are_refused_at_start_up_by_name() {
    let ros = ros();
    ros.set_sim_time(false);
    for (value, says) in [
        (".nan", "twist_reference_x_m = NaN"),
        ("2.0", "must be within ± the wheelbase"),
    ] {
        refused_at_start_up(&ros, "pure_pursuit", "twist_reference_x_m", value, says);
    }
}
