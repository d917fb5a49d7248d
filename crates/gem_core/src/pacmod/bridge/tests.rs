//! The bridge's rules, one table row per (state, event) rule, each bound tested before, at
//! and after it; then the scenarios that need many ticks (the watchdog's stop, the
//! steering watch). Every fixture leaves the bridge in a named state at `T0` with fresh
//! reports; the steps' times count from `T0`.

use super::*;
use crate::pacmod::longitudinal::LongitudinalConfig;
use crate::pacmod::pedal_map::{AcceleratorMap, BrakeMap};

/// `ms` milliseconds after T0 (T0 = 100 s, so fixtures can start before it).
fn at(ms: i64) -> Time {
    Time::from_nanos((100_000 + ms) as u64 * 1_000_000)
}

fn bridge() -> Bridge {
    let l = Longitudinal::new(
        LongitudinalConfig::DEFAULT,
        AcceleratorMap::default(),
        BrakeMap::default(),
    );
    Bridge::new(BridgeConfig::DEFAULT, l)
}

/// A command straight ahead at `speed_mps`.
fn go(speed_mps: f64) -> Event {
    Event::Command(DriveCommand {
        steering_rad: 0.1,
        speed_mps,
        accel_limit_mps2: 0.0,
    })
}

/// The steering-wheel angle of [`go`]'s command.
fn go_wheel_rad() -> f64 {
    SteeringRelation::GEM_E2
        .steering_wheel_from_front_wheel(0.1)
        .unwrap()
}

/// Fresh speed (2 m/s) and steering reports (where [`go`] steers) at `ms`.
fn reports(b: &mut Bridge, ms: i64) {
    b.handle(Event::Speed(2.0), at(ms));
    b.handle(Event::SteeringReport(go_wheel_rad()), at(ms));
}

// ----- fixtures: one per state ------------------------------------------------------

fn waiting() -> Bridge {
    bridge()
}

fn engaging() -> Bridge {
    let mut b = bridge();
    b.handle(Event::Enabled(true), at(0));
    b.tick(at(0));
    b
}

/// Ready at `ms`: enabled a second before.
fn ready_at(ms: i64) -> Bridge {
    let mut b = bridge();
    b.handle(Event::Enabled(true), at(ms - 1000));
    b.tick(at(ms - 1000));
    b.tick(at(ms));
    b
}

fn ready() -> Bridge {
    ready_at(0)
}

/// Driving since `ms`, with a command and fresh reports then.
fn driving_at(ms: i64) -> Bridge {
    let mut b = ready_at(ms);
    reports(&mut b, ms);
    b.handle(go(2.0), at(ms));
    b.tick(at(ms));
    b
}

fn driving() -> Bridge {
    driving_at(0)
}

/// Braking on a command timeout: the last command came at −300 ms.
fn braking() -> Bridge {
    let mut b = driving_at(-300);
    reports(&mut b, 0);
    b.tick(at(0));
    b
}

/// Disengaged by an override, which has since been released; the PACMod enabled.
fn disengaged() -> Bridge {
    let mut b = driving();
    b.handle(Event::Override(true), at(0));
    b.handle(Event::Override(false), at(0));
    b
}

// ----- the table -------------------------------------------------------------------

/// One step after T0.
#[derive(Clone, Copy)]
enum Step {
    /// An event at ms.
    At(i64, Event),
    /// Fresh reports at ms.
    Reports(i64),
    /// A tick at ms.
    Tick(i64),
}

/// What the output looks like.
#[derive(Debug, PartialEq)]
enum Looks {
    /// Nothing published.
    Silent,
    /// Enable with the override cleared, brake held, no gear, no steering.
    AskingEnable,
    /// Forward, brake held, no steering.
    Holding,
    /// Forward, steering on the command, a pedal from the loop.
    Driving,
    /// Forward, brake pressed, steering held on the last command.
    BrakingSteered,
    /// Forward, brake pressed, no steering (no valid command ever).
    BrakingUnsteered,
}

fn looks(out: Output) -> Looks {
    let Output::Command(c) = out else {
        return Looks::Silent;
    };
    assert!(c.enable);
    let brake = c.pedals.brake_frac() > 0.0;
    match (c.clear_override, c.forward, c.steer, brake) {
        (true, false, None, true) => Looks::AskingEnable,
        (false, true, None, true) if c.pedals == Pedals::Brake(0.4) => Looks::Holding,
        (false, true, None, true) => Looks::BrakingUnsteered,
        (false, true, Some(s), true)
            if s.angle_rad == go_wheel_rad() && !matches!(c.pedals, Pedals::Accelerate(_)) =>
        {
            Looks::BrakingSteered
        }
        (false, true, Some(s), false) if s.angle_rad == go_wheel_rad() => Looks::Driving,
        other => panic!("unexpected output {other:?} from {c:?}"),
    }
}

struct Row {
    name: &'static str,
    start: fn() -> Bridge,
    steps: Vec<Step>,
    state: StateName,
    fault: Option<&'static str>,
    looks: Looks,
}

const NAN_SPEED: Event = Event::Command(DriveCommand {
    steering_rad: 0.0,
    speed_mps: f64::NAN,
    accel_limit_mps2: 0.0,
});

const OVER_STEER: Event = Event::Command(DriveCommand {
    steering_rad: 0.62,
    speed_mps: 1.0,
    accel_limit_mps2: 0.0,
});

use Step::{At, Reports, Tick};

#[rustfmt::skip]
fn rows() -> Vec<Row> {
    use Looks as L;
    use StateName as S;
    vec![
        Row { name: "waiting_tick_commands_nothing", start: waiting, steps: vec![Tick(0)], state: S::WaitingForEnable, fault: None, looks: L::Silent },
        Row { name: "waiting_enabled_engages", start: waiting, steps: vec![At(0, Event::Enabled(true)), Tick(0)], state: S::Engaging, fault: None, looks: L::Holding },
        Row { name: "waiting_enabled_under_override_waits", start: waiting, steps: vec![At(0, Event::Override(true)), At(0, Event::Enabled(true)), Tick(0)], state: S::WaitingForEnable, fault: None, looks: L::Silent },
        Row { name: "waiting_request_asks_for_enable", start: waiting, steps: vec![At(0, Event::EnableRequest), Tick(0)], state: S::WaitingForEnable, fault: None, looks: L::AskingEnable },
        Row { name: "waiting_command_is_ignored", start: waiting, steps: vec![Reports(0), At(0, go(1.0)), Tick(0)], state: S::WaitingForEnable, fault: None, looks: L::Silent },
        Row { name: "engaging_before_settle_stays", start: engaging, steps: vec![Tick(999)], state: S::Engaging, fault: None, looks: L::Holding },
        Row { name: "engaging_at_settle_is_ready", start: engaging, steps: vec![Tick(1000)], state: S::Ready, fault: None, looks: L::Holding },
        Row { name: "engaging_override_disengages", start: engaging, steps: vec![At(10, Event::Override(true)), Tick(10)], state: S::Disengaged, fault: Some("driver override on the PACMod"), looks: L::Silent },
        Row { name: "ready_without_command_holds", start: ready, steps: vec![Reports(5000), Tick(5000)], state: S::Ready, fault: None, looks: L::Holding },
        Row { name: "ready_command_drives", start: ready, steps: vec![Reports(0), At(0, go(2.0)), Tick(0)], state: S::Driving, fault: None, looks: L::Driving },
        Row { name: "ready_refused_command_brakes", start: ready, steps: vec![Reports(0), At(0, NAN_SPEED), Tick(0)], state: S::Braking, fault: Some("drive command refused: commanded speed NaN is not a finite number"), looks: L::BrakingUnsteered },
        Row { name: "ready_command_without_speed_report_brakes", start: ready, steps: vec![At(0, Event::SteeringReport(go_wheel_rad())), At(0, go(2.0)), Tick(0)], state: S::Braking, fault: Some("no speed report within the timeout"), looks: L::BrakingSteered },
        Row { name: "driving_command_before_timeout_drives", start: driving, steps: vec![Reports(199), Tick(199)], state: S::Driving, fault: None, looks: L::Driving },
        Row { name: "driving_command_at_timeout_drives", start: driving, steps: vec![Reports(200), Tick(200)], state: S::Driving, fault: None, looks: L::Driving },
        Row { name: "driving_command_after_timeout_brakes", start: driving, steps: vec![Reports(201), Tick(201)], state: S::Braking, fault: Some("no valid drive command within the timeout"), looks: L::BrakingSteered },
        Row { name: "driving_refused_speed_brakes_steering_held", start: driving, steps: vec![Reports(10), At(10, NAN_SPEED), Tick(10)], state: S::Braking, fault: Some("drive command refused: commanded speed NaN is not a finite number"), looks: L::BrakingSteered },
        Row { name: "driving_refused_steering_brakes", start: driving, steps: vec![Reports(10), At(10, OVER_STEER), Tick(10)], state: S::Braking, fault: Some("drive command refused: front-wheel angle 35.52° is beyond the steering limit of ±35.00°"), looks: L::BrakingSteered },
        Row { name: "driving_speed_report_at_timeout_drives", start: driving, steps: vec![At(200, go(2.0)), At(200, Event::SteeringReport(go_wheel_rad())), Tick(200)], state: S::Driving, fault: None, looks: L::Driving },
        Row { name: "driving_speed_report_after_timeout_brakes", start: driving, steps: vec![At(201, go(2.0)), At(201, Event::SteeringReport(go_wheel_rad())), Tick(201)], state: S::Braking, fault: Some("no speed report within the timeout"), looks: L::BrakingSteered },
        Row { name: "driving_nan_speed_report_brakes", start: driving, steps: vec![Reports(10), At(10, Event::Speed(f64::NAN)), Tick(10)], state: S::Braking, fault: Some("unusable speed report: reported speed NaN is not a finite number"), looks: L::BrakingSteered },
        Row { name: "driving_steering_report_after_timeout_brakes", start: driving, steps: vec![At(201, go(2.0)), At(201, Event::Speed(2.0)), Tick(201)], state: S::Braking, fault: Some("no steering report within the timeout"), looks: L::BrakingSteered },
        Row { name: "driving_override_disengages", start: driving, steps: vec![At(10, Event::Override(true)), Tick(10)], state: S::Disengaged, fault: Some("driver override on the PACMod"), looks: L::Silent },
        Row { name: "driving_enable_dropped_disengages", start: driving, steps: vec![At(10, Event::Enabled(false)), Tick(10)], state: S::Disengaged, fault: Some("the PACMod reported itself disabled"), looks: L::Silent },
        Row { name: "driving_enable_request_changes_nothing", start: driving, steps: vec![At(10, Event::EnableRequest), Reports(10), At(10, go(2.0)), Tick(10)], state: S::Driving, fault: None, looks: L::Driving },
        Row { name: "braking_fresh_command_drives_again", start: braking, steps: vec![Reports(10), At(10, go(2.0)), Tick(10)], state: S::Driving, fault: None, looks: L::Driving },
        Row { name: "braking_stays_without_command", start: braking, steps: vec![Reports(3000), Tick(3000)], state: S::Braking, fault: Some("no valid drive command within the timeout"), looks: L::BrakingSteered },
        Row { name: "braking_refused_command_keeps_braking", start: braking, steps: vec![Reports(10), At(10, NAN_SPEED), Tick(10)], state: S::Braking, fault: Some("drive command refused: commanded speed NaN is not a finite number"), looks: L::BrakingSteered },
        Row { name: "braking_override_disengages", start: braking, steps: vec![At(10, Event::Override(true)), Tick(10)], state: S::Disengaged, fault: Some("driver override on the PACMod"), looks: L::Silent },
        Row { name: "disengaged_stays_though_enabled_and_commanded", start: disengaged, steps: vec![Reports(5000), At(5000, go(2.0)), Tick(5000)], state: S::Disengaged, fault: Some("driver override on the PACMod"), looks: L::Silent },
        Row { name: "disengaged_reenable_toggle_stays", start: disengaged, steps: vec![At(10, Event::Enabled(false)), At(20, Event::Enabled(true)), Tick(30)], state: S::Disengaged, fault: Some("driver override on the PACMod"), looks: L::Silent },
        Row { name: "disengaged_request_engages_again", start: disengaged, steps: vec![At(10, Event::EnableRequest), Tick(10)], state: S::Engaging, fault: None, looks: L::Holding },
        Row { name: "disengaged_request_while_disabled_asks", start: disengaged, steps: vec![At(5, Event::Enabled(false)), At(10, Event::EnableRequest), Tick(10)], state: S::WaitingForEnable, fault: None, looks: L::AskingEnable },
    ]
}

#[test]
fn every_rule_of_the_table() {
    for row in rows() {
        let mut b = (row.start)();
        let mut out = None;
        for step in row.steps {
            match step {
                Step::At(ms, e) => {
                    b.handle(e, at(ms));
                }
                Step::Reports(ms) => reports(&mut b, ms),
                Step::Tick(ms) => out = Some(b.tick(at(ms)).output),
            }
        }
        let name = row.name;
        assert_eq!(b.state().name(), row.state, "{name}: {}", b.state());
        let fault = b.state().fault().map(|f| f.to_string());
        assert_eq!(fault.as_deref(), row.fault, "{name}");
        assert_eq!(looks(out.expect("a tick")), row.looks, "{name}");
    }
}

#[test]
fn the_fixtures_are_in_their_states() {
    assert_eq!(waiting().state().name(), StateName::WaitingForEnable);
    assert_eq!(engaging().state().name(), StateName::Engaging);
    assert_eq!(ready().state().name(), StateName::Ready);
    assert_eq!(driving().state().name(), StateName::Driving);
    assert_eq!(braking().state().name(), StateName::Braking);
    assert_eq!(disengaged().state().name(), StateName::Disengaged);
}

// ----- scenarios --------------------------------------------------------------------

#[test]
fn an_override_stops_commanding_before_the_next_tick() {
    let mut b = driving();
    let t = b.handle(Event::Override(true), at(10));
    assert_eq!(t.len(), 1);
    assert_eq!(
        t[0].to_string(),
        "DRIVING => DISENGAGED (driver override on the PACMod) at 100.010000000"
    );
    assert_eq!(b.tick(at(11)).transitions, vec![]);
}

#[test]
fn each_transition_is_returned_once() {
    let mut b = bridge();
    assert!(b.handle(Event::Enabled(true), at(0)).len() == 1);
    let names: Vec<_> = b
        .tick(at(1000))
        .transitions
        .iter()
        .map(|t| (t.from, t.to))
        .collect();
    assert_eq!(names, vec![(StateName::Engaging, StateName::Ready)]);
}

#[test]
fn the_watchdog_brakes_the_car_to_rest_and_holds_it() {
    let brake_map = BrakeMap::default().0;
    let mut b = driving();
    let mut v = 4.0;
    let mut t = 0;
    // No command after T0; the speed falls as the brake map says.
    while t <= 5000 {
        b.handle(Event::Speed(v), at(t));
        b.handle(Event::SteeringReport(go_wheel_rad()), at(t));
        let Output::Command(c) = b.tick(at(t)).output else {
            panic!("silent at {t}");
        };
        assert_eq!(c.steer.map(|s| s.angle_rad), Some(go_wheel_rad()));
        if t > 200 {
            assert_eq!(c.pedals.accelerator_frac(), 0.0);
            let a = brake_map.acceleration(v, c.pedals.brake_frac());
            assert!(v < 0.1 || (a + 2.0).abs() < 1e-9, "{a} at {v} m/s");
            v = (v + a * 0.05).max(0.0);
        }
        t += 50;
    }
    assert_eq!(v, 0.0);
    assert_eq!(b.state().name(), StateName::Braking);
}

/// Drives for `ms` with fresh commands steering to `front_rad` while the steering wheel
/// is reported at `reported_rad`; ticks every 50 ms from `from`.
fn steer_against(b: &mut Bridge, from: i64, ms: i64, front_rad: f64, reported_rad: f64) {
    let cmd = Event::Command(DriveCommand {
        steering_rad: front_rad,
        speed_mps: 2.0,
        accel_limit_mps2: 0.0,
    });
    let mut t = from;
    while t <= from + ms {
        b.handle(cmd, at(t));
        b.handle(Event::Speed(2.0), at(t));
        b.handle(Event::SteeringReport(reported_rad), at(t));
        b.tick(at(t));
        t += 50;
    }
}

#[test]
fn a_steering_wheel_swinging_at_its_rate_is_no_mismatch() {
    let mut b = driving();
    // The report follows the expected angle exactly: from 0.1 rad (front) to −0.5 rad is
    // many seconds of swing.
    let target = SteeringRelation::GEM_E2
        .steering_wheel_from_front_wheel(-0.5)
        .unwrap();
    let mut expected = go_wheel_rad();
    for t in (50..6000).step_by(50) {
        b.handle(
            Event::Command(DriveCommand {
                steering_rad: -0.5,
                speed_mps: 2.0,
                accel_limit_mps2: 0.0,
            }),
            at(t),
        );
        b.handle(Event::Speed(2.0), at(t));
        expected = (expected - 3.5 * 0.05).max(target);
        b.handle(Event::SteeringReport(expected), at(t));
        b.tick(at(t));
        assert_eq!(b.state(), State::Driving, "at {t} ms");
    }
}

#[test]
fn a_steering_mismatch_just_within_its_time_drives_on() {
    let mut b = driving();
    // Stuck 0.6 rad off from 50 ms on; at 1050 ms it has lasted exactly 1 s.
    steer_against(&mut b, 50, 1000, 0.1, go_wheel_rad() - 0.6);
    assert_eq!(b.state(), State::Driving);
}

#[test]
fn a_steering_mismatch_beyond_its_time_latches_until_an_enable_request() {
    let mut b = driving();
    steer_against(&mut b, 50, 1050, 0.1, go_wheel_rad() - 0.6);
    let fault = b.state().fault().expect("a fault");
    assert!(matches!(fault, Fault::SteeringMismatch { .. }), "{fault}");
    assert!(fault.latched());
    // The wheel comes back and commands are fresh: still braking.
    steer_against(&mut b, 1150, 500, 0.1, go_wheel_rad());
    assert_eq!(b.state().name(), StateName::Braking);
    assert!(b
        .state()
        .to_string()
        .ends_with("an enable request clears it"));
    // An enable request: the PACMod is still enabled, so the handshake runs again.
    b.handle(Event::EnableRequest, at(1700));
    assert_eq!(b.state().name(), StateName::Engaging);
}

#[test]
fn a_disagreement_within_the_bound_is_no_mismatch() {
    let mut b = driving();
    steer_against(&mut b, 50, 5000, 0.1, go_wheel_rad() - 0.45);
    assert_eq!(b.state(), State::Driving);
}

#[test]
fn driving_commands_the_steering_wheel_through_the_relation() {
    let mut b = driving();
    reports(&mut b, 10);
    b.handle(go(2.0), at(10));
    let Output::Command(c) = b.tick(at(10)).output else {
        panic!("silent");
    };
    let s = c.steer.expect("steering");
    assert_eq!(s.angle_rad, go_wheel_rad());
    assert_eq!(
        s.rate_limit_rad_s,
        steering::STEERING_WHEEL_RATE_LIMIT_RAD_S
    );
}

/// A car calibrated with an offset: the steering wheel is sent for the command less the
/// offset, and the steering wheel's range is its relation's.
#[test]
fn driving_sends_the_steering_wheel_of_the_configured_relation() {
    let relation = SteeringRelation {
        quadratic_deg: -0.09,
        linear: 19.8,
        offset_deg: 1.0,
    };
    let l = Longitudinal::new(
        LongitudinalConfig::DEFAULT,
        AcceleratorMap::default(),
        BrakeMap::default(),
    );
    let cfg = BridgeConfig {
        steering: relation,
        ..BridgeConfig::DEFAULT
    };
    let mut b = Bridge::new(cfg, l);
    b.handle(Event::Enabled(true), at(-1000));
    b.tick(at(-1000));
    b.tick(at(0));
    // 11° of front wheel is 10° of turn: 19.8·10 − 0.09·100 = 189° of steering wheel.
    let wheel = 189_f64.to_radians();
    b.handle(Event::Speed(2.0), at(0));
    b.handle(Event::SteeringReport(wheel), at(0));
    b.handle(
        Event::Command(DriveCommand {
            steering_rad: 11_f64.to_radians(),
            speed_mps: 2.0,
            accel_limit_mps2: 0.0,
        }),
        at(0),
    );
    let Output::Command(c) = b.tick(at(0)).output else {
        panic!("silent");
    };
    assert_eq!(b.state(), State::Driving);
    let sent = c.steer.expect("steering").angle_rad;
    assert!((sent - wheel).abs() < 1e-12, "{}", sent.to_degrees());
    assert_eq!(
        b.calibration_limits().max_steering_wheel_rad,
        relation.max_steering_wheel_rad()
    );
}

#[test]
fn the_status_explains_the_state() {
    assert_eq!(
        waiting().state().to_string(),
        "waiting for the PACMod to be enabled; commanding nothing"
    );
    assert_eq!(
        braking().state().to_string(),
        "braking to rest, steering held: no valid drive command within the timeout"
    );
    assert_eq!(
        disengaged().state().to_string(),
        "disengaged, commanding nothing: driver override on the PACMod; an enable request re-engages"
    );
}

#[test]
fn the_defaults_are_valid_and_a_bad_bound_is_named() {
    assert_eq!(BridgeConfig::DEFAULT.validate(), Ok(()));
    let c = BridgeConfig {
        command_timeout: Duration::ZERO,
        ..BridgeConfig::DEFAULT
    };
    assert_eq!(
        c.validate().unwrap_err().to_string(),
        "command_timeout = 0 s is invalid: must be > 0"
    );
    let c = BridgeConfig {
        watchdog_decel_mps2: -1.0,
        ..BridgeConfig::DEFAULT
    };
    assert_eq!(
        c.validate().unwrap_err().field,
        crate::field!(BridgeConfig.watchdog_decel_mps2)
    );
    // The steering: a rate beyond what the steering wheel can turn, none, not a number;
    // a lag or dead time not within 0..1 s.
    for rate in [7.0, 0.0, -3.5, f64::NAN] {
        let c = BridgeConfig {
            steering_rate_rad_s: rate,
            ..BridgeConfig::DEFAULT
        };
        assert_eq!(
            c.validate().unwrap_err().field,
            crate::field!(BridgeConfig.steering_rate_rad_s),
            "{rate}"
        );
    }
    let c = BridgeConfig {
        steering_dead_time_s: f64::NAN,
        ..BridgeConfig::DEFAULT
    };
    assert_eq!(
        c.validate().unwrap_err().field,
        crate::field!(BridgeConfig.steering_dead_time_s)
    );
    let c = BridgeConfig {
        steering_lag_s: -0.1,
        ..BridgeConfig::DEFAULT
    };
    assert_eq!(
        c.validate().unwrap_err().field,
        crate::field!(BridgeConfig.steering_lag_s)
    );
    // The steering relation's own check, naming its field.
    let c = BridgeConfig {
        steering: SteeringRelation {
            offset_deg: 6.0,
            ..SteeringRelation::GEM_E2
        },
        ..BridgeConfig::DEFAULT
    };
    assert_eq!(
        c.validate().unwrap_err().field,
        crate::field!(SteeringRelation.offset_deg)
    );
}

/// The expected steering wheel has the steering's dead time and lag: a car whose wheel
/// follows a swing that late is no mismatch.
#[test]
fn a_steering_wheel_as_late_as_the_actuator_is_no_mismatch() {
    use crate::pacmod::plant::{Plant, PlantConfig};
    use crate::pacmod::rig::{Rig, RigConfig};
    use crate::vehicle::{VehicleModel, VehicleParams};
    let l = Longitudinal::new(
        crate::pacmod::longitudinal::LongitudinalConfig::DEFAULT,
        AcceleratorMap::default(),
        BrakeMap::default(),
    );
    let plant = Plant::new(
        PlantConfig::DEFAULT,
        AcceleratorMap::default(),
        BrakeMap::default(),
    );
    let mut rig = Rig::new(
        Bridge::new(BridgeConfig::DEFAULT, l),
        plant,
        RigConfig::DEFAULT,
    );
    let mut car = VehicleModel::new(
        VehicleParams::DEFAULT,
        crate::geometry::Pose::default(),
        Time::from_secs_f64(1.0),
    );
    let dt = Duration::from_millis(5);
    assert!(rig.engage(&mut car, dt));
    // Full lock one way then the other, at 2 m/s: the wheel swings for seconds at 3.5 rad/s,
    // 0.7 rad of steering wheel behind a model without dead time and lag.
    for (steer, secs) in [(0.5, 6.0), (-0.5, 8.0)] {
        for i in 0..(secs / 0.005) as usize {
            if i % 10 == 0 {
                rig.command(
                    DriveCommand {
                        steering_rad: steer,
                        speed_mps: 2.0,
                        accel_limit_mps2: 0.0,
                    },
                    car.now(),
                );
            }
            rig.drive(&mut car, dt, 1);
        }
    }
    assert_eq!(rig.bridge().state().name(), StateName::Driving);
}

#[test]
fn the_level_is_an_error_exactly_while_a_fault_stops_the_car() {
    for (b, level) in [
        (waiting(), Level::Warn),
        (engaging(), Level::Ok),
        (ready(), Level::Ok),
        (driving(), Level::Ok),
        (braking(), Level::Error),
        (disengaged(), Level::Error),
    ] {
        let s = b.state();
        assert_eq!(s.level(), level, "{s:?}");
        assert_eq!(s.level() == Level::Error, s.fault().is_some(), "{s:?}");
    }
}

#[test]
fn a_stream_of_nan_commands_makes_one_transition() {
    let mut b = driving();
    let mut made = Vec::new();
    for ms in (10..1000).step_by(10) {
        reports(&mut b, ms);
        made.extend(b.handle(NAN_SPEED, at(ms)));
        made.extend(b.tick(at(ms)).transitions);
    }
    assert_eq!(made.len(), 1, "{:?}", made.get(..3));
    assert_eq!(b.state().name(), StateName::Braking);
}

#[test]
fn a_non_finite_input_refused_again_is_the_same_fault_and_another_one_is_not() {
    let speed = |v: f64| {
        Fault::CommandRefused(CommandError::Speed(InputError::NotFinite {
            what: "commanded speed",
            value: v,
        }))
    };
    let report = Fault::SpeedReportBad(InputError::NotFinite {
        what: "commanded speed",
        value: f64::NAN,
    });
    let steering = Fault::CommandRefused(CommandError::Steering(SteeringError::NotFinite {
        what: "front-wheel angle",
        value: f64::NAN,
    }));
    assert_ne!(speed(f64::NAN), speed(f64::NAN), "NaN equals nothing");
    assert!(speed(f64::NAN).same(speed(f64::NAN)));
    assert!(
        speed(f64::NAN).same(speed(f64::INFINITY)),
        "one refusal of the speed"
    );
    assert!(!speed(f64::NAN).same(steering), "another quantity");
    assert!(!speed(f64::NAN).same(report), "another kind of fault");
    assert!(Fault::Override.same(Fault::Override));
    assert!(!Fault::Override.same(Fault::EnableDropped));
}

mod calibration;
