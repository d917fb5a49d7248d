//! Calibration runs through the bridge: when one may start, what it holds, how it ends,
//! and that the bridge's own faults still stop it.

use super::*;
use crate::pacmod::calibration::{Hold, Request, RunEnd, RunError, RunRequest};

fn run(hold: Hold, duration_ms: u64) -> Request {
    Request::Run(RunRequest {
        hold,
        steering_wheel_rad: 0.5,
        steering_rate_rad_s: None,
        duration: Duration::from_millis(duration_ms),
        distance_m: 100.0,
        max_speed_mps: 4.0,
    })
}

/// Ticks every 50 ms from `from` to `to` ms with reports (speed `v`, steering wheel at
/// the run's 0.5 rad); the last tick.
fn drive(b: &mut Bridge, from: i64, to: i64, v: f64) -> super::super::Tick {
    let mut last = None;
    for ms in (from..=to).step_by(50) {
        b.handle(Event::Speed(v), at(ms));
        b.handle(Event::SteeringReport(0.5), at(ms));
        last = Some(b.tick(at(ms)));
    }
    last.expect("one tick at least")
}

fn command(t: &super::super::Tick) -> PacmodCommand {
    match t.output {
        Output::Command(c) => c,
        Output::Silent => panic!("silent in {:?}", t.state),
    }
}

fn calibrating() -> Bridge {
    let mut b = ready();
    reports(&mut b, 0);
    assert_eq!(
        b.calibrate(run(Hold::Accelerator(0.42), 2000), at(0)),
        Ok(1)
    );
    b
}

#[test]
fn a_run_starts_when_no_controller_drives_and_holds_its_pedal_and_steering() {
    let mut b = calibrating();
    assert_eq!(b.state(), State::Calibrating);
    let t = drive(&mut b, 0, 500, 1.0);
    let c = command(&t);
    assert_eq!(c.pedals, Pedals::Accelerate(0.42));
    assert_eq!(c.steer.map(|s| s.angle_rad), Some(0.5));
    assert!(c.forward);
    assert_eq!(t.state.level(), Level::Ok);
    // Drive commands wait while the run holds.
    b.handle(go(3.0), at(550));
    let t = drive(&mut b, 550, 600, 1.0);
    assert_eq!(command(&t).pedals, Pedals::Accelerate(0.42));
    // From braking after the commands stopped, too.
    let mut b = braking();
    assert_eq!(b.calibrate(run(Hold::Brake(0.2), 1000), at(0)), Ok(1));
}

#[test]
fn a_run_is_refused_while_a_controller_drives_or_a_report_is_missing() {
    let mut b = driving();
    let e = b
        .calibrate(run(Hold::Accelerator(0.3), 1000), at(0))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "cannot start a calibration run: a controller is driving the car (its last command asks for 2.00 m/s)"
    );
    assert_eq!(b.state(), State::Driving);
    // A controller holding the car at rest does not drive it.
    b.handle(go(0.0), at(10));
    assert_eq!(
        b.calibrate(run(Hold::Accelerator(0.3), 1000), at(10)),
        Ok(1)
    );
    // Not engaged.
    let mut b = waiting();
    assert!(matches!(
        b.calibrate(run(Hold::Accelerator(0.3), 1000), at(0)),
        Err(RunError::NotNow(_))
    ));
    // No speed report.
    let mut b = ready();
    let e = b
        .calibrate(run(Hold::Accelerator(0.3), 1000), at(0))
        .unwrap_err();
    assert!(
        e.to_string()
            .ends_with("no speed report within the timeout"),
        "{e}"
    );
    // Nothing to stop.
    assert!(b.calibrate(Request::Stop, at(0)).is_err());
    assert_eq!(b.state(), State::Ready);
}

#[test]
fn a_run_ends_at_its_duration_brakes_to_rest_and_is_ready_again() {
    let mut b = calibrating();
    drive(&mut b, 0, 1950, 2.0);
    assert_eq!(b.calibration_run().unwrap().ended, None);
    let t = drive(&mut b, 2000, 2050, 2.0);
    assert_eq!(b.calibration_run().unwrap().ended, Some(RunEnd::Duration));
    assert_eq!(t.state, State::Calibrating);
    assert!(matches!(command(&t).pedals, Pedals::Brake(_)), "{t:?}");
    let moves = b.handle(Event::Speed(0.05), at(2100));
    assert_eq!(b.state(), State::Ready);
    assert!(moves[0].reason.contains("duration reached"), "{moves:?}");
}

#[test]
fn a_stop_request_ends_the_run_and_a_new_run_replaces_it() {
    let mut b = calibrating();
    drive(&mut b, 0, 200, 2.0);
    assert_eq!(b.calibrate(run(Hold::Brake(0.6), 3000), at(250)), Ok(2));
    let t = drive(&mut b, 250, 300, 2.0);
    assert_eq!(command(&t).pedals, Pedals::Brake(0.6));
    assert_eq!(b.calibrate(Request::Stop, at(350)), Ok(2));
    assert_eq!(b.calibration_run().unwrap().ended, Some(RunEnd::Stopped));
}

#[test]
fn a_speed_run_holds_the_speed_through_the_loop() {
    let mut b = ready();
    reports(&mut b, 0);
    b.calibrate(run(Hold::Speed(3.0), 5000), at(0)).unwrap();
    let t = drive(&mut b, 0, 200, 1.0);
    assert!(matches!(command(&t).pedals, Pedals::Accelerate(_)), "{t:?}");
    let t = drive(&mut b, 250, 400, 3.8);
    assert!(
        !matches!(command(&t).pedals, Pedals::Accelerate(_)),
        "{t:?}"
    );
}

#[test]
fn the_bridge_faults_still_stop_a_run() {
    // An override: disengaged at once, the run ended on it.
    let mut b = calibrating();
    drive(&mut b, 0, 100, 1.0);
    b.handle(Event::Override(true), at(120));
    assert_eq!(b.state().name(), StateName::Disengaged);
    let ended = b.calibration_run().unwrap().ended.clone();
    assert_eq!(
        ended,
        Some(RunEnd::Fault("driver override on the PACMod".into()))
    );
    assert_eq!(b.tick(at(150)).output, Output::Silent);
    // The speed report lost: braking.
    let mut b = calibrating();
    drive(&mut b, 0, 100, 1.0);
    b.handle(Event::SteeringReport(0.5), at(400));
    let t = b.tick(at(400));
    assert_eq!(t.state.name(), StateName::Braking);
    assert_eq!(
        b.calibration_run().unwrap().ended,
        Some(RunEnd::Fault("no speed report within the timeout".into()))
    );
}

#[test]
fn a_run_sends_its_own_steering_rate_and_the_check_follows_it() {
    let mut b = ready();
    reports(&mut b, 0);
    let quick = Request::Run(RunRequest {
        hold: Hold::Accelerator(0.3),
        steering_wheel_rad: 3.0,
        steering_rate_rad_s: Some(6.0),
        duration: Duration::from_secs(5),
        distance_m: 100.0,
        max_speed_mps: 4.0,
    });
    assert_eq!(b.calibrate(quick, at(0)), Ok(1));
    // A motor at 2.0 rad/s, far slower than the 6.0 asked for: no mismatch, and the
    // command carries 6.0.
    let mut wheel: f64 = 0.0;
    for ms in (0..=4000).step_by(50) {
        wheel = (wheel + 2.0 * 0.05).min(3.0);
        b.handle(Event::Speed(1.0), at(ms));
        b.handle(Event::SteeringReport(wheel), at(ms));
        let t = b.tick(at(ms));
        assert_eq!(t.state, State::Calibrating, "at {ms} ms");
        assert_eq!(command(&t).steer.map(|s| s.rate_limit_rad_s), Some(6.0));
    }
}

#[test]
fn the_check_follows_a_learned_motor_that_the_configured_band_would_refuse() {
    // A motor at 0.7 rad/s, a fifth of the configured 3.5: on a 3 rad swing at the
    // bridge's own rate it leaves the configured band, and stays within one built on it.
    let swing = |b: &mut Bridge| {
        let quick = Request::Run(RunRequest {
            hold: Hold::Accelerator(0.3),
            steering_wheel_rad: 3.0,
            steering_rate_rad_s: None,
            duration: Duration::from_secs(8),
            distance_m: 100.0,
            max_speed_mps: 4.0,
        });
        b.calibrate(quick, at(0)).unwrap();
        let mut wheel: f64 = 0.0;
        for ms in (0..=7000).step_by(50) {
            wheel = (wheel + 0.7 * 0.05).min(3.0);
            b.handle(Event::Speed(1.0), at(ms));
            b.handle(Event::SteeringReport(wheel), at(ms));
            if b.tick(at(ms)).state != State::Calibrating {
                return false;
            }
        }
        true
    };
    let mut b = ready();
    reports(&mut b, 0);
    assert!(!swing(&mut b), "the configured band trips");
    let mut b = ready();
    reports(&mut b, 0);
    let learned = SteeringActuator {
        rate_rad_s: 0.7,
        lag_s: 0.1,
        dead_time_s: 0.1,
    };
    b.follow_motor(learned);
    assert_eq!(b.expected_motor(), learned);
    assert!(swing(&mut b), "the band built on the learned motor holds");
    // A figure that is not a number is ignored.
    b.follow_motor(SteeringActuator {
        lag_s: f64::NAN,
        ..learned
    });
    assert_eq!(b.expected_motor(), learned);
}
