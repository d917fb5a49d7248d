//! Tracker edge cases, and short closed loops on the vehicle model.

use super::*;
use crate::control::lqr::LqrConfig;
use crate::control::mpc::MpcConfig;
use crate::control::path::PathError;
use crate::control::pure_pursuit::PurePursuitConfig;
use crate::control::stanley::StanleyConfig;
use crate::field;
use crate::vehicle::{DriveCommand, VehicleModel, VehicleParams};
use std::f64::consts::PI;
use std::time::Duration;

fn line(n: usize, spacing: f64) -> Vec<Point> {
    (0..n)
        .map(|i| Point::new(i as f64 * spacing, 0.0))
        .collect()
}

fn stanley() -> TrackerConfig {
    TrackerConfig {
        law: Law::Stanley(StanleyConfig::default()),
        ..Default::default()
    }
}

fn lqr() -> TrackerConfig {
    TrackerConfig {
        law: Law::Lqr(LqrConfig::default()),
        ..Default::default()
    }
}

/// Every law with the nodes' defaults.
fn every_law() -> [TrackerConfig; 3] {
    [TrackerConfig::default(), stanley(), lqr()]
}

fn t(s: f64) -> Time {
    Time::from_secs_f64(100.0 + s)
}

/// Drives `tracker` on the ideal model from `start` for at most `seconds`; returns the
/// final state, the last command and the largest |cross-track| after `settle_m` driven.
fn drive(tracker: &mut Tracker, start: Pose, seconds: f64, settle_m: f64) -> (Pose, Command, f64) {
    let (pose, cmd, trace) = drive_trace(tracker, start, seconds);
    let worst = trace
        .iter()
        .filter(|(d, _)| *d > settle_m)
        .fold(0.0, |w: f64, (_, e)| w.max(e.abs()));
    (pose, cmd, worst)
}

/// [`drive`], with every command's (distance driven, cross-track error).
fn drive_trace(
    tracker: &mut Tracker,
    start: Pose,
    seconds: f64,
) -> (Pose, Command, Vec<(f64, f64)>) {
    let mut model = VehicleModel::new(VehicleParams::default(), start, t(0.0));
    let mut driven = 0.0;
    let mut trace = Vec::new();
    let mut cmd = None;
    for i in 0..(seconds * 20.0) as usize {
        let s = model.state();
        let c = tracker
            .update(s.pose, s.speed_mps, t(i as f64 * 0.05))
            .unwrap();
        trace.push((driven, c.cross_track_m));
        model.command(DriveCommand {
            steering_rad: c.steering_rad,
            speed_mps: c.speed_mps,
            ..Default::default()
        });
        for _ in 0..5 {
            model.step(Duration::from_millis(10));
        }
        driven += s.speed_mps * 0.05;
        cmd = Some(c);
        if c.done {
            break;
        }
    }
    (model.state().pose, cmd.unwrap(), trace)
}

#[test]
fn empty_goal_is_rejected() {
    assert_eq!(
        Tracker::new(&[], 0, TrackerConfig::default()).unwrap_err(),
        GoalError::Path(PathError::Empty)
    );
}

#[test]
fn one_point_goal_is_rejected() {
    let e = Tracker::new(&[Point::new(1.0, 1.0)], 0, TrackerConfig::default()).unwrap_err();
    assert!(matches!(e, GoalError::Path(PathError::Degenerate { .. })));
}

#[test]
fn identical_points_goal_is_rejected() {
    let e = Tracker::new(&[Point::new(1.0, 1.0); 4], 0, TrackerConfig::default()).unwrap_err();
    assert!(matches!(e, GoalError::Path(PathError::Degenerate { .. })));
}

#[test]
fn start_index_past_the_end_is_rejected() {
    let e = Tracker::new(&line(5, 1.0), 5, TrackerConfig::default()).unwrap_err();
    assert_eq!(
        e,
        GoalError::StartIndex {
            start_index: 5,
            len: 5
        }
    );
    assert_eq!(
        e.to_string(),
        "start_index 5 is out of range for 5 waypoints"
    );
}

#[test]
fn nan_pose_is_an_error_not_a_command() {
    let mut tr = Tracker::new(&line(10, 1.0), 0, TrackerConfig::default()).unwrap();
    let e = tr
        .update(Pose::new(f64::NAN, 0.0, 0.0), 1.0, t(0.0))
        .unwrap_err();
    assert!(matches!(e, UpdateError::PoseNotFinite(_)));
    assert!(matches!(
        tr.update(Pose::default(), f64::INFINITY, t(0.0)),
        Err(UpdateError::SpeedNotFinite(_))
    ));
}

#[test]
fn zero_speed_gives_a_finite_command_for_every_law() {
    for cfg in every_law() {
        let mut tr = Tracker::new(&line(10, 1.0), 0, cfg).unwrap();
        let c = tr.update(Pose::new(0.0, 1.0, 0.0), 0.0, t(0.0)).unwrap();
        assert!(c.steering_rad.is_finite() && c.steering_rad < 0.0, "{c:?}");
        assert!(c.speed_mps > 0.0);
    }
}

#[test]
fn facing_backwards_saturates_steering_without_blowing_up() {
    for cfg in every_law() {
        let mut tr = Tracker::new(&line(20, 1.0), 0, cfg).unwrap();
        let c = tr.update(Pose::new(2.0, 0.0, PI), 1.0, t(0.0)).unwrap();
        assert_eq!(c.steering_rad.abs(), 0.61, "{c:?}");
        assert!(!c.done);
    }
}

#[test]
fn duplicate_waypoints_keep_goal_indices() {
    // Each point twice: indices in feedback must be the goal's, not the de-duplicated ones.
    let w: Vec<Point> = line(10, 1.0).into_iter().flat_map(|p| [p, p]).collect();
    let mut tr = Tracker::new(&w, 0, TrackerConfig::default()).unwrap();
    let c = tr.update(Pose::new(2.5, 0.0, 0.0), 0.0, t(0.0)).unwrap();
    assert_eq!(c.target_index, 6, "vertex at x=3 is goal index 6");
}

#[test]
fn start_index_starts_progress_there() {
    let mut tr = Tracker::new(&line(50, 1.0), 30, TrackerConfig::default()).unwrap();
    // The car is still at the start of the path: progress does not go back to it.
    let c = tr.update(Pose::new(0.0, 0.0, 0.0), 0.0, t(0.0)).unwrap();
    assert!(c.target_index > 30, "{c:?}");
    assert!(tr.progress_s() >= 30.0);
}

#[test]
fn far_off_pose_cannot_drag_progress() {
    let mut tr = Tracker::new(&line(200, 1.0), 0, TrackerConfig::default()).unwrap();
    for i in 0..20 {
        tr.update(Pose::new(150.0, 40.0, 0.0), 0.0, t(i as f64 * 0.05))
            .unwrap();
    }
    // 1 s at 0 m/s: at most (0 + 1) m/s · 1 s + 0.5 m per update.
    assert!(tr.progress_s() < 30.0, "{}", tr.progress_s());
}

#[test]
fn closed_loop_does_not_complete_at_its_start() {
    // A 20 m radius loop whose end overlaps its start by 3 m, like the GEM track.
    let r = 20.0;
    let mut w: Vec<Point> = (0..=400)
        .map(|i| {
            let a = i as f64 / 400.0 * 2.0 * PI;
            Point::new(r * a.sin(), r * (1.0 - a.cos()))
        })
        .collect();
    w.extend((1..=15).map(|i| Point::new(i as f64 * 0.2, 0.0)));
    let mut tr = Tracker::new(&w, 0, TrackerConfig::default()).unwrap();
    let c = tr.update(Pose::new(0.0, 0.0, 0.0), 0.0, t(0.0)).unwrap();
    assert!(!c.done && c.target_index < 10, "{c:?}");
    let (pose, last, _) = drive(&mut tr, Pose::new(0.0, 0.0, 0.0), 120.0, 1e9);
    assert!(last.done, "lap completed: {last:?}");
    assert_eq!(last.target_index, w.len() - 1);
    assert!(pose.point().distance(*w.last().unwrap()) < 1.0, "{pose:?}");
}

#[test]
fn straight_line_from_2m_off_converges_and_stops_at_the_goal() {
    for cfg in every_law() {
        let name = format!("{:?}", cfg.law);
        let mut tr = Tracker::new(&line(61, 1.0), 0, cfg).unwrap();
        let (pose, last, worst) = drive(&mut tr, Pose::new(0.0, 2.0, 0.0), 60.0, 25.0);
        assert!(last.done, "{name}: {last:?}");
        assert_eq!(
            (last.speed_mps, last.steering_rad, last.progress),
            (0.0, 0.0, 1.0)
        );
        assert!(worst < 0.05, "{name}: cross-track after 25 m {worst}");
        assert!((pose.x - 60.0).abs() < 0.6, "{name}: stopped at {pose:?}");
    }
}

#[test]
fn pure_pursuit_joins_from_2m_off_without_swinging_across() {
    // The plain law swings ~4 % of the offset across the path on an ideal car, more with
    // the prediction and the approach speed's ramp; the joining heading term turns the car
    // parallel before it arrives.
    let swing = |joining_heading_gain: f64| {
        let cfg = TrackerConfig {
            law: Law::PurePursuit(PurePursuitConfig {
                joining_heading_gain,
                ..PurePursuitConfig::DEFAULT
            }),
            ..Default::default()
        };
        let mut tr = Tracker::new(&line(61, 1.0), 0, cfg).unwrap();
        let (_, _, trace) = drive_trace(&mut tr, Pose::new(0.0, 2.0, 0.0), 30.0);
        // Left of the path at the start: the swing is the error right of it.
        trace.iter().fold(0.0, |w: f64, (_, e)| w.max(-e))
    };
    let (plain, joining) = (
        swing(0.0),
        swing(PurePursuitConfig::DEFAULT.joining_heading_gain),
    );
    assert!(plain > 0.08, "plain pure pursuit swings across: {plain}");
    assert!(
        joining < 0.5 * plain && joining < 0.06,
        "{joining} m across the path (plain: {plain})"
    );
}

#[test]
fn done_stays_done() {
    let mut tr = Tracker::new(&line(5, 1.0), 0, TrackerConfig::default()).unwrap();
    let c = tr.update(Pose::new(4.0, 0.0, 0.0), 0.5, t(0.0)).unwrap();
    assert!(c.done);
    let again = tr.update(Pose::new(0.0, 0.0, 0.0), 0.0, t(0.1)).unwrap();
    assert!(again.done && again.speed_mps == 0.0);
}

#[test]
fn progress_is_a_fraction_of_waypoints_passed() {
    let mut tr = Tracker::new(&line(11, 1.0), 0, TrackerConfig::default()).unwrap();
    let c = tr.update(Pose::new(4.5, 0.0, 0.0), 1.0, t(0.0)).unwrap();
    assert!((c.progress - 5.0 / 11.0).abs() < 1e-9, "{c:?}");
}

#[test]
fn default_configs_are_valid() {
    for cfg in every_law() {
        assert_eq!(cfg.validate(), Ok(()), "{:?}", cfg.law);
    }
}

#[test]
fn an_invalid_value_is_rejected_by_name() {
    let mut nan_speed = TrackerConfig::default();
    nan_speed.speed.nominal_mps = f64::NAN;
    let cases = [
        (
            TrackerConfig {
                law: Law::Lqr(LqrConfig {
                    steering_lag_s: 0.0,
                    ..LqrConfig::DEFAULT
                }),
                ..Default::default()
            },
            field!(LqrConfig.steering_lag_s),
        ),
        (
            TrackerConfig {
                law: Law::Stanley(StanleyConfig {
                    gain_per_s: 1.0,
                    softening_mps: 0.0,
                    ..StanleyConfig::DEFAULT
                }),
                ..Default::default()
            },
            field!(StanleyConfig.softening_mps),
        ),
        (nan_speed, field!(SpeedConfig.nominal_mps)),
        (
            TrackerConfig {
                twist_reference_x_m: f64::NAN,
                ..Default::default()
            },
            field!(TrackerConfig.twist_reference_x_m),
        ),
        (
            TrackerConfig {
                twist_reference_x_m: -1.8,
                ..Default::default()
            },
            field!(TrackerConfig.twist_reference_x_m),
        ),
        (
            TrackerConfig {
                yaw_rate_lag_s: 0.0,
                ..Default::default()
            },
            field!(TrackerConfig.yaw_rate_lag_s),
        ),
    ];
    for (cfg, field) in cases {
        assert_eq!(cfg.validate().unwrap_err().field, field);
    }
}

/// A constant bend at 8 m/s on the dynamic model with soft tyres: the rear axle drifts out
/// of the bend, and the course (heading plus slip angle) keeps every law on the path.
#[test]
fn slip_compensation_removes_the_steady_offset_in_a_bend() {
    use crate::control::closed_loop::{self, LoopSettings};
    use crate::vehicle::dynamic::DynamicParams;
    use crate::vehicle::ChassisModel;
    let r = 40.0;
    let arc: Vec<Point> = (0..=600)
        .map(|i| i as f64 / 600.0 * 1.5 * PI)
        .map(|a| Point::new(r * a.sin(), r * (1.0 - a.cos())))
        .collect();
    let params = VehicleParams {
        chassis: ChassisModel::Dynamic(DynamicParams {
            cornering_stiffness_front: 7.0,
            cornering_stiffness_rear: 7.0,
            ..DynamicParams::DEFAULT
        }),
        ..VehicleParams::DEFAULT
    };
    for law in [
        Law::PurePursuit(PurePursuitConfig::DEFAULT),
        Law::Stanley(StanleyConfig::DEFAULT),
        Law::Lqr(LqrConfig::DEFAULT),
    ] {
        let cfg = TrackerConfig {
            law: law.clone(),
            speed: SpeedConfig {
                nominal_mps: 8.0,
                max_lateral_accel_mps2: 2.5,
                ..SpeedConfig::DEFAULT
            },
            latency_s: 0.0,
            ..Default::default()
        };
        let mut tracker = Tracker::new(&arc, 0, cfg).unwrap();
        let settings = LoopSettings {
            physics_dt: Duration::from_millis(5),
            control_every: 10,
            time_limit_s: 60.0,
            localization: Default::default(),
        };
        let path = Path::new(&arc, 0.05).unwrap();
        let trace = closed_loop::run(
            path,
            Pose::default(),
            params.clone(),
            &mut tracker,
            &settings,
        );
        // Half way round the bend, long after the start.
        let mid: Vec<f64> = trace
            .samples
            .iter()
            .filter(|s| (60.0..80.0).contains(&s.driven_m))
            .map(|s| s.cross_track_m.abs())
            .collect();
        assert!(!mid.is_empty());
        let worst = mid.iter().cloned().fold(0.0, f64::max);
        assert!(worst < 0.02, "{law:?}: {worst} m off in the bend");
    }
}

#[test]
fn observed_lateral_speed_turns_the_course() {
    // Same pose, the rear axle sliding right: the course points right of the heading,
    // so a law aimed straight along the path steers left to come back.
    let mut a = Tracker::new(&line(50, 1.0), 0, stanley()).unwrap();
    let mut b = Tracker::new(&line(50, 1.0), 0, stanley()).unwrap();
    let obs = |lateral| Observation {
        pose: Pose::new(5.0, 0.0, 0.0),
        speed_mps: 5.0,
        lateral_speed_mps: lateral,
        yaw_rate_rad_s: 0.0,
        measured_at: t(0.0),
    };
    let straight = a.observe(obs(0.0), t(0.0)).unwrap().steering_rad;
    let sliding = b.observe(obs(-0.3), t(0.0)).unwrap().steering_rad;
    assert!(sliding > straight + 0.05, "{sliding} vs {straight}");
}

#[test]
fn the_pose_is_predicted_on_the_measured_yaw_rate() {
    // On a straight path, heading along it, wheels last commanded straight: a car measured
    // turning left is predicted to be heading left of the path 0.15 s on, and steered back
    // right; without a measured yaw rate the prediction follows the (straight) command.
    // Pure pursuit without its yaw-rate lead, so only the prediction differs.
    let cfg = TrackerConfig {
        law: Law::PurePursuit(PurePursuitConfig {
            yaw_rate_gain_s: 0.0,
            ..PurePursuitConfig::DEFAULT
        }),
        ..Default::default()
    };
    let steer = |yaw_rate_rad_s: f64, latency_s: f64| {
        let cfg = TrackerConfig {
            latency_s,
            ..cfg.clone()
        };
        let mut tracker = Tracker::new(&line(50, 1.0), 0, cfg).unwrap();
        let obs = Observation {
            pose: Pose::new(5.0, 0.0, 0.0),
            speed_mps: 5.0,
            lateral_speed_mps: 0.0,
            yaw_rate_rad_s,
            measured_at: t(0.0),
        };
        tracker.observe(obs, t(0.0)).unwrap().steering_rad
    };
    assert_eq!(
        steer(f64::NAN, 0.15),
        0.0,
        "no yaw rate: the straight command's arc"
    );
    assert_eq!(steer(0.4, 0.0), 0.0, "no horizon: nothing to predict");
    let turning = steer(0.4, 0.15);
    assert!(
        turning < -0.01,
        "steers right against the predicted turn: {turning}"
    );
}

#[test]
fn a_goal_resumed_behind_the_car_finds_it_at_once() {
    // The car rolled 30 m past the resume index during a stop: the first update puts
    // progress where the car is, on the path, at cruise speed.
    let mut tr = Tracker::new(&line(200, 1.0), 10, TrackerConfig::default()).unwrap();
    let c = tr.update(Pose::new(40.0, 0.05, 0.0), 2.8, t(0.0)).unwrap();
    assert!((tr.progress_s() - 40.0).abs() < 0.5, "{}", tr.progress_s());
    assert!(c.cross_track_m.abs() < 0.1 && c.speed_mps > 2.7, "{c:?}");
    // Off the path there, it does not jump.
    let mut far = Tracker::new(&line(200, 1.0), 10, TrackerConfig::default()).unwrap();
    far.update(Pose::new(40.0, 3.0, 0.0), 2.8, t(0.0)).unwrap();
    assert!(far.progress_s() < 16.0, "{}", far.progress_s());
}

#[test]
fn a_twist_of_the_centre_of_mass_is_moved_to_the_rear_axle() {
    // The same motion reported at the rear axle and at the centre of mass (lateral speed
    // larger by ω·0.88): told where the twist is, the tracker steers the same.
    let cfg = |x: f64| TrackerConfig {
        twist_reference_x_m: x,
        ..stanley()
    };
    let obs = |lateral: f64| Observation {
        pose: Pose::new(5.0, 0.0, 0.0),
        speed_mps: 5.0,
        lateral_speed_mps: lateral,
        yaw_rate_rad_s: 0.2,
        measured_at: t(0.0),
    };
    let mut rear = Tracker::new(&line(50, 1.0), 0, cfg(0.0)).unwrap();
    let mut com = Tracker::new(&line(50, 1.0), 0, cfg(0.88)).unwrap();
    let a = rear.observe(obs(-0.05), t(0.0)).unwrap().steering_rad;
    let b = com
        .observe(obs(-0.05 + 0.2 * 0.88), t(0.0))
        .unwrap()
        .steering_rad;
    assert!((a - b).abs() < 1e-12, "{a} vs {b}");
}

#[test]
fn a_late_pose_yaw_rate_follows_the_steering_commanded_since() {
    // Measured 0.2 s ago going straight; the wheels have been commanded hard left since:
    // the yaw rate now is carried towards the left turn, and the law steers less left than
    // it would for a car still going straight.
    let cfg = TrackerConfig {
        law: Law::Lqr(LqrConfig::default()),
        ..Default::default()
    };
    let mut tracker = Tracker::new(&line(50, 1.0), 0, cfg).unwrap();
    let obs = |at: f64| Observation {
        pose: Pose::new(5.0, 0.0, 0.0),
        speed_mps: 5.0,
        lateral_speed_mps: 0.0,
        yaw_rate_rad_s: 0.0,
        measured_at: t(at),
    };
    tracker.motion.remember_command(t(0.0), 0.3);
    let r = tracker.motion.yaw_rate_now(0.0, 5.0, t(0.0), t(0.2));
    let steady = 5.0 * 0.3f64.tan() / VehicleParams::DEFAULT.wheelbase_m;
    let expected = steady * (1.0 - (-0.2f64 / 0.3).exp());
    assert!((r - expected).abs() < 1e-9, "{r} vs {expected}");
    assert!(tracker
        .motion
        .yaw_rate_now(f64::NAN, 5.0, t(0.0), t(0.2))
        .is_nan());
    let late = tracker.observe(obs(0.0), t(0.2)).unwrap().steering_rad;
    let mut fresh = Tracker::new(
        &line(50, 1.0),
        0,
        TrackerConfig {
            law: Law::Lqr(LqrConfig::default()),
            ..Default::default()
        },
    )
    .unwrap();
    let now = fresh.observe(obs(0.2), t(0.2)).unwrap().steering_rad;
    assert!(late < now - 0.01, "late {late} vs fresh {now}");
}

/// The GEM e2's steering (3.5 rad/s of steering wheel, 0.1 s lag and dead time).
fn car_actuator() -> SteeringActuator {
    SteeringActuator {
        rate_rad_s: SteeringActuator::front_rate_of_steering_wheel(3.5),
        lag_s: 0.1,
        dead_time_s: 0.1,
    }
}

#[test]
fn slow_steering_refuses_stanley_and_accepts_the_other_laws() {
    for cfg in every_law() {
        let name = cfg.law.name();
        let checked = cfg.with_actuator(car_actuator()).validate();
        if name == "stanley" {
            let e = checked.unwrap_err();
            assert_eq!(e.field, field!(SteeringActuator.rate_rad_s));
            assert!(e.to_string().contains("use algorithm mpc"), "{e}");
        } else {
            assert!(checked.is_ok(), "{name}: {checked:?}");
        }
    }
    let mpc = TrackerConfig {
        law: Law::Mpc(MpcConfig::default()),
        ..Default::default()
    }
    .with_actuator(car_actuator());
    assert!(mpc.validate().is_ok());
    // The profile gives the path half the actuator's rate.
    assert!((mpc.speed.steering_rate_rad_s - 0.5 * car_actuator().rate_rad_s).abs() < 1e-12);
    let bad = TrackerConfig {
        actuator: SteeringActuator {
            dead_time_s: f64::NAN,
            ..car_actuator()
        },
        ..mpc
    };
    assert_eq!(
        bad.validate().unwrap_err().field,
        field!(SteeringActuator.dead_time_s)
    );
}

/// What the model car shows a tracker now: its true state, measured now.
fn observed(car: &VehicleModel) -> Observation {
    let s = car.state();
    Observation {
        pose: s.pose,
        speed_mps: s.speed_mps,
        lateral_speed_mps: s.lateral_speed_mps,
        yaw_rate_rad_s: s.yaw_rate_rad_s,
        measured_at: car.now(),
    }
}

/// Sends `c` to the model car and drives it one 0.05 s control period (in 5 ms steps).
fn drive_for_a_period(car: &mut VehicleModel, c: &Command) {
    car.command(DriveCommand {
        steering_rad: c.steering_rad,
        speed_mps: c.speed_mps,
        accel_limit_mps2: 0.0,
    });
    for _ in 0..10 {
        car.step(Duration::from_millis(5));
    }
}

/// Drives `cfg` on the vehicle model with the car's steering from 2 m beside a straight
/// path for 40 s; the lowest lateral position (the crossing), the last one, and the
/// tracker.
fn join_from_two_metres(cfg: TrackerConfig) -> (f64, f64, Tracker) {
    let act = car_actuator();
    let mut tracker = Tracker::new(&line(400, 0.5), 0, cfg.with_actuator(act)).unwrap();
    let params = VehicleParams::DEFAULT.with_steering_actuator(act);
    let mut car = VehicleModel::new(params, Pose::new(0.0, 2.0, 0.0), t(1.0));
    let (mut lowest, mut last): (f64, f64) = (2.0, 0.0);
    for _ in 0..(40.0 / 0.05) as usize {
        let c = tracker.observe(observed(&car), car.now()).unwrap();
        // Every command within the actuator's rate of the last.
        assert!((c.steering_rad - last).abs() <= act.rate_rad_s * 0.05 + 1e-9);
        last = c.steering_rad;
        drive_for_a_period(&mut car, &c);
        lowest = lowest.min(car.state().pose.y);
    }
    (lowest, car.state().pose.y, tracker)
}

/// Pure pursuit and the LQR on the car's steering join on a planned join: no crossing of
/// more than 0.1 m, on the path at the end.
#[test]
fn pure_pursuit_and_lqr_join_on_slow_steering() {
    for cfg in [TrackerConfig::default(), lqr()] {
        let name = cfg.law.name();
        let (lowest, y, _) = join_from_two_metres(cfg);
        assert!(y.abs() < 0.05, "{name}: {y}");
        assert!(lowest > -0.1, "{name}: crossed by {lowest}");
    }
}

/// On slow steering a car near the path but heading off it is joined as one off it: at
/// 5 m/s, 0.1 m off and 0.1 rad away from the path it will be 0.6 m off within a second,
/// and gets a join; the same car along the path does not.
#[test]
fn a_car_heading_off_the_path_is_joined_before_it_is_off() {
    let obs = |yaw| Observation {
        pose: Pose::new(20.0, 0.1, yaw),
        speed_mps: 5.0,
        lateral_speed_mps: 0.0,
        yaw_rate_rad_s: 0.0,
        measured_at: t(0.0),
    };
    for cfg in [TrackerConfig::default(), lqr()] {
        let name = cfg.law.name();
        let cfg = cfg.with_actuator(car_actuator());
        let mut heading_off = Tracker::new(&line(100, 0.5), 0, cfg.clone()).unwrap();
        heading_off.observe(obs(0.1), t(0.0)).unwrap();
        assert!(heading_off.join.is_some(), "{name}: no join heading off");
        let mut along = Tracker::new(&line(100, 0.5), 0, cfg).unwrap();
        along.observe(obs(0.0), t(0.0)).unwrap();
        assert!(along.join.is_none(), "{name}: a join along the path");
    }
}

/// The MPC on the vehicle model with the car's steering (rate limit, lag, dead time),
/// from 2 m beside a straight path: it joins without crossing it by more than 0.1 m, each
/// command within the actuator's rate of the last, and says nothing went wrong.
#[test]
fn mpc_joins_from_two_metres_with_the_cars_steering() {
    let cfg = TrackerConfig {
        law: Law::Mpc(MpcConfig::default()),
        ..Default::default()
    };
    let (lowest, y, mut tracker) = join_from_two_metres(cfg);
    assert!(y.abs() < 0.05, "{y}");
    assert!(lowest > -0.1, "crossed by {lowest}");
    let report = tracker.take_mpc_report().unwrap();
    assert_eq!(report.fallbacks, 0);
    assert!(report.solves > 700);
}

/// The car's largest |cross-track| after the first 60 m of `cfg` told the steering `told`, on the
/// vehicle model whose steering is `truth`, at 5.5 m/s on S-bends (±6 m every 60 m, down
/// to a 15 m radius) from the path's start: 90 s.
fn s_bends_on(cfg: TrackerConfig, told: SteeringActuator, truth: SteeringActuator) -> f64 {
    s_bends_told(cfg, told, truth, None, 0.0)
}

/// [`s_bends_on`] with the tracker told `later` at its time, s, if given; the largest
/// |cross-track| from `from_s` on (and after the first 60 m).
fn s_bends_told(
    cfg: TrackerConfig,
    told: SteeringActuator,
    truth: SteeringActuator,
    later: Option<(f64, SteeringActuator)>,
    from_s: f64,
) -> f64 {
    let path: Vec<Point> = (0..2000)
        .map(|i| {
            let x = i as f64 * 0.25;
            Point::new(x, 6.0 * (2.0 * PI * x / 60.0).sin())
        })
        .collect();
    let cfg = TrackerConfig {
        speed: SpeedConfig {
            nominal_mps: 5.5,
            max_lateral_accel_mps2: 2.5,
            ..SpeedConfig::DEFAULT
        },
        ..cfg
    }
    .with_actuator(told);
    let mut tracker = Tracker::new(&path, 0, cfg).unwrap();
    let params = VehicleParams::DEFAULT.with_steering_actuator(truth);
    let start = Pose::new(0.0, 0.0, (2.0 * PI * 6.0 / 60.0).atan());
    let mut car = VehicleModel::new(params, start, t(1.0));
    let (mut driven, mut worst) = (0.0, 0.0_f64);
    for i in 0..(90.0 / 0.05) as usize {
        let elapsed = i as f64 * 0.05;
        if let Some((_, act)) = later.filter(|(at, _)| elapsed >= *at) {
            tracker.set_actuator(act).unwrap();
        }
        let s = car.state();
        let c = tracker.observe(observed(&car), car.now()).unwrap();
        if c.done {
            break;
        }
        if driven > 60.0 && elapsed >= from_s {
            let s_now = tracker.progress_s();
            let true_off = tracker
                .path()
                .project(s.pose.point(), s_now - 5.0, s_now + 5.0);
            worst = worst.max(true_off.cross_track_m.abs());
        }
        drive_for_a_period(&mut car, &c);
        driven += s.speed_mps * 0.05;
    }
    worst
}

/// A slow motor with 0.3 s of lag and 0.2 s of dead time (2.0 rad/s of steering wheel),
/// and the same motor told by its rate only.
fn slow_late_motor() -> (SteeringActuator, SteeringActuator) {
    let truth = SteeringActuator {
        rate_rad_s: SteeringActuator::front_rate_of_steering_wheel(2.0),
        lag_s: 0.3,
        dead_time_s: 0.2,
    };
    let rate_only = SteeringActuator {
        lag_s: 0.0,
        dead_time_s: 0.0,
        ..truth
    };
    (truth, rate_only)
}

/// That motor ([`slow_late_motor`]) at 5.5 m/s: told its figures, pure pursuit and the LQR predict the pose through them and
/// follow S-bends within centimetres; told only its rate, pure pursuit weaves across the
/// path (the LQR, whose model holds a lag, stays near it on this noise-free model; with a
/// GNSS/INS pose it weaves, `gem_bench pacmod --motor-mismatch-only`).
#[test]
fn told_the_dead_time_and_lag_the_reactive_laws_hold_the_path_on_slow_steering() {
    let (truth, rate_only) = slow_late_motor();
    let pp = TrackerConfig::default();
    let told = s_bends_on(pp.clone(), truth, truth);
    let untold = s_bends_on(pp, rate_only, truth);
    assert!(told < 0.08, "pure pursuit told the truth: {told} m off");
    assert!(
        untold > 0.5,
        "pure pursuit told only the rate: {untold} m off"
    );
    let told = s_bends_on(lqr(), truth, truth);
    assert!(told < 0.08, "lqr told the truth: {told} m off");
}

/// Told the wrong motor mid-goal the laws weave; told the right one while driving (a
/// motor learned on the way), they settle on the path within the same goal. Refused: an
/// actuator on the other side of the slow-steering rate, or one that does not validate.
#[test]
fn a_goal_takes_a_new_actuator_while_it_drives() {
    let (truth, rate_only) = slow_late_motor();
    let pp = TrackerConfig::default();
    let before = s_bends_told(pp.clone(), rate_only, truth, None, 50.0);
    let after = s_bends_told(pp.clone(), rate_only, truth, Some((20.0, truth)), 50.0);
    assert!(before > 0.5, "still told the rate only: {before} m off");
    assert!(
        after < 0.1,
        "told the truth at 20 s: {after} m off after 50 s"
    );
    let path = [Point::new(0.0, 0.0), Point::new(50.0, 0.0)];
    let mut tracker = Tracker::new(&path, 0, pp.with_actuator(truth)).unwrap();
    assert!(tracker.set_actuator(SteeringActuator::FAST).is_err());
    let bad = SteeringActuator {
        lag_s: f64::NAN,
        ..truth
    };
    assert!(tracker.set_actuator(bad).is_err());
    assert!(tracker.set_actuator(rate_only).is_ok());
}
