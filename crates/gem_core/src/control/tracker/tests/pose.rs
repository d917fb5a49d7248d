//! The pose the laws see: slip, the twist moved to the rear axle, and prediction over the
//! pose's age.

use super::*;

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
