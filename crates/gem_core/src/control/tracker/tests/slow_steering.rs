//! Slow steering: the laws it accepts, joins, the MPC, and a motor told right or wrong.

use super::*;

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
