//! Unit tests: every rule before, at and after its threshold; every hold-off window at
//! window − 0.1 s, exactly at the window, and + 0.1 s; staleness; the state machine;
//! bad input. Time starts at T0 = 1000 s so "before start" stamps exist.

use super::*;
use crate::field;
use crate::time::Time;
use std::time::Duration;

const T0: f64 = 1000.0;

/// ROS time `s` seconds after start.
fn at(s: f64) -> Time {
    Time::from_secs_f64(T0 + s)
}

/// Rule tests: staleness off, so only the rule under test can raise a bit; every input
/// watched (the drive-by-wire's fault too).
fn rules_only() -> StateManager {
    StateManager::new(
        StateManagerConfig {
            stale_after: None,
            watch_vehicle_fault: true,
            ..Default::default()
        },
        at(0.0),
    )
}

/// Staleness tests: the specified defaults with a 1 s timeout, every input watched (the
/// drive-by-wire's fault too).
fn with_staleness() -> StateManager {
    StateManager::new(
        StateManagerConfig {
            stale_after: Some(Duration::from_secs(1)),
            watch_vehicle_fault: true,
            ..Default::default()
        },
        at(0.0),
    )
}

/// The specified defaults with a 1 s timeout, as a platform without a vehicle bridge runs
/// it: the drive-by-wire's fault not watched.
fn without_vehicle_fault() -> StateManager {
    StateManager::new(
        StateManagerConfig {
            stale_after: Some(Duration::from_secs(1)),
            ..Default::default()
        },
        at(0.0),
    )
}

/// One nominal message of `input` at `s`; returns its issues.
fn feed(sm: &mut StateManager, input: Input, s: f64) -> Vec<InputIssue> {
    let t = at(s);
    match input {
        Input::Battery => sm.update_battery(t, 0.8, t),
        Input::Estop => sm.update_estop(t, false, t),
        Input::Gps => sm.update_gps(t, 50.0, t),
        Input::Signal => sm.update_signal(t, 1, t),
        Input::Temperature => sm.update_temperature(t, 30.0, t),
        Input::PlannerStatus => sm.update_planner(t, 0, t),
        Input::VehicleFault => sm.update_vehicle_fault(t, false, t),
    }
}

/// Every input but `skip`, nominal, at `s`.
fn feed_nominal_except(sm: &mut StateManager, skip: Option<Input>, s: f64) {
    for input in Input::ALL.into_iter().filter(|&i| Some(i) != skip) {
        assert!(feed(sm, input, s).is_empty());
    }
}

/// Every input fresh and nominal at `s`.
fn feed_nominal(sm: &mut StateManager, s: f64) {
    feed_nominal_except(sm, None, s);
}

fn errors_at(sm: &mut StateManager, s: f64) -> ErrorBits {
    sm.evaluate(at(s)).errors
}

// ----- battery --------------------------------------------------------------------------

#[test]
fn idle_battery_049_is_low() {
    let mut sm = rules_only();
    sm.update_battery(at(0.0), 0.49, at(0.0));
    assert_eq!(errors_at(&mut sm, 0.0), ErrorBits::BATTERY_LOW);
}

#[test]
fn idle_battery_050_is_fine() {
    let mut sm = rules_only();
    sm.update_battery(at(0.0), 0.5, at(0.0));
    assert_eq!(errors_at(&mut sm, 0.0), ErrorBits::NONE);
}

#[test]
fn idle_battery_051_is_fine() {
    let mut sm = rules_only();
    sm.update_battery(at(0.0), 0.51, at(0.0));
    assert_eq!(errors_at(&mut sm, 0.0), ErrorBits::NONE);
}

#[test]
fn error_battery_recovers_clears_bit() {
    let mut sm = rules_only();
    sm.update_battery(at(0.0), 0.2, at(0.0));
    assert_eq!(sm.evaluate(at(0.0)).state, SystemState::Error);
    sm.update_battery(at(1.0), 0.9, at(1.0));
    let r = sm.evaluate(at(1.0));
    assert_eq!((r.state, r.errors), (SystemState::Idle, ErrorBits::NONE));
}

#[test]
fn idle_battery_nan_is_low_and_reported() {
    let mut sm = rules_only();
    let issues = sm.update_battery(at(0.0), f32::NAN, at(0.0));
    assert!(matches!(
        issues[..],
        [InputIssue::NotFinite {
            input: Input::Battery,
            ..
        }]
    ));
    assert_eq!(errors_at(&mut sm, 0.0), ErrorBits::BATTERY_LOW);
}

#[test]
fn idle_battery_percentage_is_out_of_range_and_low() {
    let mut sm = rules_only();
    let issues = sm.update_battery(at(0.0), 80.0, at(0.0));
    assert!(matches!(
        issues[..],
        [InputIssue::OutOfRange {
            input: Input::Battery,
            ..
        }]
    ));
    assert!(
        issues[0].to_string().contains("not a percentage"),
        "{}",
        issues[0]
    );
    assert_eq!(errors_at(&mut sm, 0.0), ErrorBits::BATTERY_LOW);
}

#[test]
fn idle_battery_infinite_is_low() {
    let mut sm = rules_only();
    sm.update_battery(at(0.0), f32::INFINITY, at(0.0));
    assert_eq!(errors_at(&mut sm, 0.0), ErrorBits::BATTERY_LOW);
}

// ----- temperature ----------------------------------------------------------------------

#[test]
fn idle_temperature_55_is_fine() {
    let mut sm = rules_only();
    sm.update_temperature(at(0.0), 55.0, at(0.0));
    assert_eq!(errors_at(&mut sm, 0.0), ErrorBits::NONE);
}

#[test]
fn idle_temperature_5501_is_high() {
    let mut sm = rules_only();
    sm.update_temperature(at(0.0), 55.01, at(0.0));
    assert_eq!(errors_at(&mut sm, 0.0), ErrorBits::TEMPERATURE_HIGH);
}

#[test]
fn idle_temperature_nan_is_high() {
    let mut sm = rules_only();
    let issues = sm.update_temperature(at(0.0), f32::NAN, at(0.0));
    assert_eq!(issues.len(), 1);
    assert_eq!(errors_at(&mut sm, 0.0), ErrorBits::TEMPERATURE_HIGH);
}

#[test]
fn error_temperature_cools_clears_bit() {
    let mut sm = rules_only();
    sm.update_temperature(at(0.0), 60.0, at(0.0));
    assert_eq!(errors_at(&mut sm, 0.0), ErrorBits::TEMPERATURE_HIGH);
    sm.update_temperature(at(0.5), 54.9, at(0.5));
    assert_eq!(errors_at(&mut sm, 0.5), ErrorBits::NONE);
}

// ----- e-stop ---------------------------------------------------------------------------

#[test]
fn idle_estop_pressed_is_error_immediately() {
    let mut sm = rules_only();
    sm.update_estop(at(0.0), true, at(0.0));
    let r = sm.evaluate(at(0.0));
    assert_eq!((r.state, r.errors), (SystemState::Error, ErrorBits::ESTOP));
}

#[test]
fn error_estop_released_recovers() {
    let mut sm = rules_only();
    sm.update_estop(at(0.0), true, at(0.0));
    sm.evaluate(at(0.0));
    sm.update_estop(at(0.1), false, at(0.1));
    let r = sm.evaluate(at(0.1));
    assert_eq!(r.state, SystemState::Idle);
    assert_eq!(r.transition.unwrap().reason, Reason::Recovered);
}

// ----- the drive-by-wire's fault ----------------------------------------------------------

#[test]
fn idle_vehicle_fault_is_error_estop_immediately_and_named_as_such() {
    let mut sm = rules_only();
    assert!(sm.update_vehicle_fault(at(0.0), true, at(0.0)).is_empty());
    let r = sm.evaluate(at(0.0));
    assert_eq!((r.state, r.errors), (SystemState::Error, ErrorBits::ESTOP));
    assert_eq!(
        sm.estop_causes(),
        EstopCauses {
            switch: false,
            drive_by_wire: true
        }
    );
    assert!(sm.vehicle_fault() && !sm.estop());
    assert_eq!(
        sm.explain(at(0.0)),
        "ESTOP: drive-by-wire fault on vehicle/fault"
    );
}

#[test]
fn idle_estop_switch_is_named_as_the_switch() {
    let mut sm = rules_only();
    sm.update_estop(at(0.0), true, at(0.0));
    sm.evaluate(at(0.0));
    assert_eq!(sm.explain(at(0.0)), "ESTOP: e-stop switch pressed");
}

#[test]
fn error_vehicle_fault_cleared_recovers_to_idle() {
    let mut sm = rules_only();
    sm.update_vehicle_fault(at(0.0), true, at(0.0));
    sm.evaluate(at(0.0));
    sm.update_vehicle_fault(at(0.1), false, at(0.1));
    let r = sm.evaluate(at(0.1));
    assert_eq!((r.state, r.errors), (SystemState::Idle, ErrorBits::NONE));
    assert_eq!(r.transition.unwrap().reason, Reason::Recovered);
}

#[test]
fn error_vehicle_fault_cleared_with_a_task_recovers_to_running() {
    let mut sm = rules_only();
    sm.update_planner(at(0.0), 1, at(0.0));
    sm.update_vehicle_fault(at(0.0), true, at(0.0));
    assert_eq!(sm.evaluate(at(0.0)).state, SystemState::Error);
    sm.update_vehicle_fault(at(0.2), false, at(0.2));
    let t = sm.evaluate(at(0.2)).transition.unwrap();
    assert_eq!(
        (t.from, t.to, t.reason),
        (SystemState::Error, SystemState::Running, Reason::Recovered)
    );
}

#[test]
fn error_estop_and_vehicle_fault_together_one_clearing_keeps_the_bit() {
    for switch_first in [true, false] {
        let mut sm = rules_only();
        sm.update_estop(at(0.0), true, at(0.0));
        sm.update_vehicle_fault(at(0.0), true, at(0.0));
        let r = sm.evaluate(at(0.0));
        assert_eq!((r.state, r.errors), (SystemState::Error, ErrorBits::ESTOP));
        assert_eq!(
            sm.explain(at(0.0)),
            "ESTOP: e-stop switch pressed, drive-by-wire fault on vehicle/fault"
        );
        if switch_first {
            sm.update_estop(at(0.1), false, at(0.1));
        } else {
            sm.update_vehicle_fault(at(0.1), false, at(0.1));
        }
        let r = sm.evaluate(at(0.1));
        assert_eq!(
            (r.state, r.errors),
            (SystemState::Error, ErrorBits::ESTOP),
            "switch first: {switch_first}"
        );
        assert!(!r.changed, "the wire carries the same bits");
        assert!(
            r.estop_causes_changed,
            "the log says what holds the bit now"
        );
        let left = if switch_first {
            "ESTOP: drive-by-wire fault on vehicle/fault"
        } else {
            "ESTOP: e-stop switch pressed"
        };
        assert_eq!(sm.explain(at(0.1)), left);
        assert!(!sm.evaluate(at(0.15)).estop_causes_changed);
        // The other one clears as well: recovered.
        sm.update_estop(at(0.2), false, at(0.2));
        sm.update_vehicle_fault(at(0.2), false, at(0.2));
        let r = sm.evaluate(at(0.2));
        assert_eq!((r.state, r.errors), (SystemState::Idle, ErrorBits::NONE));
        assert!(r.changed && !r.estop_causes_changed);
    }
}

#[test]
fn idle_vehicle_fault_not_watched_is_ignored_and_never_stale() {
    let mut sm = without_vehicle_fault();
    assert!(!sm.config().watches(Input::VehicleFault));
    // Its messages change nothing, not even a zero stamp is looked at.
    assert!(sm
        .update_vehicle_fault(Time::ZERO, true, at(0.0))
        .is_empty());
    assert!(!sm.vehicle_fault());
    for step in 0..=30 {
        feed_nominal_except(&mut sm, Some(Input::VehicleFault), step as f64 * 0.1);
    }
    assert_eq!(errors_at(&mut sm, 3.0), ErrorBits::NONE);
    assert_eq!(
        sm.freshness(Input::VehicleFault, at(3.0)),
        Freshness::Unwatched
    );
    // Nothing of it is pending either: the next deadline is the others' staleness.
    let d = sm.next_deadline(at(3.0)).unwrap();
    assert!(d > at(4.0) && d < at(4.0001), "{d}");
}

#[test]
fn idle_vehicle_fault_watched_and_never_received_is_stale_and_named() {
    let mut sm = with_staleness();
    feed_nominal_except(&mut sm, Some(Input::VehicleFault), 0.9);
    assert_eq!(errors_at(&mut sm, 1.0), ErrorBits::NONE);
    assert_eq!(errors_at(&mut sm, 1.1), ErrorBits::STALE_DATA);
    assert_eq!(
        sm.explain(at(1.1)),
        "STALE_DATA: vehicle/fault never received"
    );
}

#[test]
fn idle_vehicle_fault_watched_and_silent_is_stale_after_the_timeout() {
    let mut sm = with_staleness();
    feed_nominal(&mut sm, 0.0);
    for step in 1..=11 {
        feed_nominal_except(&mut sm, Some(Input::VehicleFault), step as f64 * 0.1);
    }
    assert_eq!(errors_at(&mut sm, 1.0), ErrorBits::NONE);
    assert_eq!(errors_at(&mut sm, 1.1), ErrorBits::STALE_DATA);
    assert!(
        sm.explain(at(1.1)).contains("vehicle/fault 1.10 s old"),
        "{}",
        sm.explain(at(1.1))
    );
    // The bridge speaks again: recovered.
    feed(&mut sm, Input::VehicleFault, 1.1);
    assert_eq!(errors_at(&mut sm, 1.1), ErrorBits::NONE);
}

#[test]
fn idle_vehicle_fault_stamps_are_judged_as_the_estops() {
    let mut sm = with_staleness();
    feed_nominal(&mut sm, 0.0);
    assert_eq!(
        sm.update_vehicle_fault(Time::ZERO, false, at(0.8)),
        vec![InputIssue::ZeroStamp {
            input: Input::VehicleFault
        }]
    );
    // Taken at its receive time: fresh until 0.8 + 1.0 s.
    feed_nominal_except(&mut sm, Some(Input::VehicleFault), 1.5);
    assert_eq!(errors_at(&mut sm, 1.5), ErrorBits::NONE);
    assert_eq!(errors_at(&mut sm, 1.81), ErrorBits::STALE_DATA);
    // A stamp far in the future is clamped: it cannot keep the input fresh.
    let mut sm = with_staleness();
    feed_nominal(&mut sm, 0.0);
    let issues = sm.update_vehicle_fault(at(100.0), true, at(0.5));
    assert!(matches!(
        issues[..],
        [InputIssue::FutureStamp {
            input: Input::VehicleFault,
            ..
        }]
    ));
    assert_eq!(errors_at(&mut sm, 0.5), ErrorBits::ESTOP);
    feed_nominal_except(&mut sm, Some(Input::VehicleFault), 1.4);
    assert_eq!(errors_at(&mut sm, 1.4), ErrorBits::ESTOP);
    assert_eq!(
        errors_at(&mut sm, 1.6).bits(),
        ErrorBits::ESTOP.bits() | ErrorBits::STALE_DATA.bits()
    );
}

#[test]
fn error_clock_jumps_back_keeps_a_vehicle_fault() {
    let mut sm = with_staleness();
    feed_nominal(&mut sm, 0.0);
    sm.update_vehicle_fault(at(0.5), true, at(0.5));
    assert_eq!(errors_at(&mut sm, 0.5), ErrorBits::ESTOP);
    let r = sm.evaluate(Time::from_secs_f64(10.0));
    assert!(r.clock_reset.is_some());
    assert_eq!(r.errors, ErrorBits::ESTOP);
}

// ----- GPS ------------------------------------------------------------------------------

/// Good fix at 0, bad (`mm`) from 0.05 s on.
fn gps_bad_after_good(mm: f32) -> StateManager {
    let mut sm = rules_only();
    sm.update_gps(at(0.0), 100.0, at(0.0));
    sm.update_gps(at(0.05), mm, at(0.05));
    sm
}

#[test]
fn idle_gps_200_is_a_good_fix_forever() {
    let mut sm = rules_only();
    sm.update_gps(at(0.0), 200.0, at(0.0));
    assert_eq!(errors_at(&mut sm, 100.0), ErrorBits::NONE);
}

#[test]
fn idle_gps_2001_for_149s_is_not_lost() {
    let mut sm = gps_bad_after_good(200.1);
    assert_eq!(errors_at(&mut sm, 14.9), ErrorBits::NONE);
}

#[test]
fn idle_gps_2001_for_exactly_15s_is_not_lost() {
    let mut sm = gps_bad_after_good(200.1);
    assert_eq!(errors_at(&mut sm, 15.0), ErrorBits::NONE);
}

#[test]
fn idle_gps_2001_for_151s_is_lost() {
    let mut sm = gps_bad_after_good(200.1);
    assert_eq!(errors_at(&mut sm, 15.1), ErrorBits::GPS_LOST);
}

#[test]
fn idle_gps_bad_since_start_counts_from_start() {
    let mut sm = rules_only();
    sm.update_gps(at(3.0), 500.0, at(3.0));
    assert_eq!(errors_at(&mut sm, 14.9), ErrorBits::NONE);
    assert_eq!(errors_at(&mut sm, 15.1), ErrorBits::GPS_LOST);
}

#[test]
fn error_gps_good_fix_clears_lost() {
    let mut sm = gps_bad_after_good(300.0);
    assert_eq!(errors_at(&mut sm, 16.0), ErrorBits::GPS_LOST);
    sm.update_gps(at(16.1), 150.0, at(16.1));
    assert_eq!(errors_at(&mut sm, 16.1), ErrorBits::NONE);
    // And the window restarts from that fix.
    sm.update_gps(at(16.2), 300.0, at(16.2));
    assert_eq!(errors_at(&mut sm, 31.0), ErrorBits::NONE);
    assert_eq!(errors_at(&mut sm, 31.2), ErrorBits::GPS_LOST);
}

#[test]
fn idle_gps_nan_counts_as_bad_fix_with_hold_off() {
    let mut sm = rules_only();
    sm.update_gps(at(0.0), 100.0, at(0.0));
    let issues = sm.update_gps(at(1.0), f32::NAN, at(1.0));
    assert_eq!(issues.len(), 1);
    assert_eq!(errors_at(&mut sm, 14.9), ErrorBits::NONE);
    assert_eq!(errors_at(&mut sm, 15.1), ErrorBits::GPS_LOST);
}

#[test]
fn idle_gps_negative_accuracy_is_a_bad_fix() {
    let mut sm = rules_only();
    let issues = sm.update_gps(at(0.0), -5.0, at(0.0));
    assert!(matches!(
        issues[..],
        [InputIssue::OutOfRange {
            input: Input::Gps,
            ..
        }]
    ));
    assert_eq!(errors_at(&mut sm, 15.1), ErrorBits::GPS_LOST);
}

// ----- signal ---------------------------------------------------------------------------

/// CONNECTED at 0, then `strength` from 0.05 s on.
fn signal_after_connected(strength: u8) -> StateManager {
    let mut sm = rules_only();
    sm.update_signal(at(0.0), 1, at(0.0));
    sm.update_signal(at(0.05), strength, at(0.05));
    sm
}

/// Idle at one strength from 0.05 s on: the error (if any) at a time either side of the
/// window's bound and on it (NOT_CONNECTED: lost after 10 s; LOW: low after 20 s).
#[test]
fn idle_signal_windows_end_strictly_after_their_bound() {
    let cases = [
        (0, 9.9, ErrorBits::NONE),
        (0, 10.0, ErrorBits::NONE),
        (0, 10.1, ErrorBits::SIGNAL_LOST),
        (2, 19.9, ErrorBits::NONE),
        (2, 20.0, ErrorBits::NONE),
        (2, 20.1, ErrorBits::SIGNAL_LOW),
    ];
    for (strength, t, expected) in cases {
        let mut sm = signal_after_connected(strength);
        assert_eq!(
            errors_at(&mut sm, t),
            expected,
            "strength {strength} at {t} s"
        );
    }
}

#[test]
fn idle_not_connected_then_low_share_the_window() {
    // CONNECTED at 0, NOT_CONNECTED 0.05..8 s, then LOW: the LOW window still counts from 0.
    let mut sm = signal_after_connected(0);
    assert_eq!(errors_at(&mut sm, 7.9), ErrorBits::NONE);
    sm.update_signal(at(8.0), 2, at(8.0));
    assert_eq!(errors_at(&mut sm, 19.9), ErrorBits::NONE);
    assert_eq!(errors_at(&mut sm, 20.1), ErrorBits::SIGNAL_LOW);
}

#[test]
fn idle_low_then_not_connected_after_10s_is_lost_at_once() {
    let mut sm = signal_after_connected(2);
    assert_eq!(errors_at(&mut sm, 12.0), ErrorBits::NONE);
    sm.update_signal(at(12.0), 0, at(12.0));
    assert_eq!(errors_at(&mut sm, 12.0), ErrorBits::SIGNAL_LOST);
}

#[test]
fn error_signal_reconnected_clears_both_bits() {
    let mut sm = signal_after_connected(0);
    assert_eq!(errors_at(&mut sm, 11.0), ErrorBits::SIGNAL_LOST);
    sm.update_signal(at(11.0), 1, at(11.0));
    assert_eq!(errors_at(&mut sm, 11.0), ErrorBits::NONE);
    sm.update_signal(at(11.1), 2, at(11.1));
    assert_eq!(errors_at(&mut sm, 31.0), ErrorBits::NONE);
    assert_eq!(errors_at(&mut sm, 31.2), ErrorBits::SIGNAL_LOW);
}

#[test]
fn idle_strength_out_of_range_counts_as_not_connected() {
    let mut sm = rules_only();
    sm.update_signal(at(0.0), 1, at(0.0));
    let issues = sm.update_signal(at(0.1), 7, at(0.1));
    assert!(matches!(
        issues[..],
        [InputIssue::OutOfRange {
            input: Input::Signal,
            ..
        }]
    ));
    assert_eq!(errors_at(&mut sm, 10.0), ErrorBits::NONE);
    assert_eq!(errors_at(&mut sm, 10.1), ErrorBits::SIGNAL_LOST);
}

// ----- staleness ------------------------------------------------------------------------

#[test]
fn idle_all_inputs_fresh_is_not_stale() {
    let mut sm = with_staleness();
    feed_nominal(&mut sm, 0.5);
    assert_eq!(errors_at(&mut sm, 1.5), ErrorBits::NONE);
}

#[test]
fn idle_each_input_goes_stale_after_the_timeout() {
    for input in Input::ALL {
        let mut sm = with_staleness();
        feed_nominal(&mut sm, 0.0);
        // Everything but `input` keeps arriving.
        for step in 1..=12 {
            let s = step as f64 * 0.1;
            let t = at(s);
            feed_nominal_except(&mut sm, Some(input), s);
            let expect_stale = s > 1.0 + 1e-9;
            assert_eq!(
                sm.evaluate(t).errors,
                if expect_stale {
                    ErrorBits::STALE_DATA
                } else {
                    ErrorBits::NONE
                },
                "{input} at {s:.1} s"
            );
        }
        assert!(matches!(
            sm.freshness(input, at(1.2)),
            Freshness::Stale { .. }
        ));
        assert!(
            sm.explain(at(1.2)).contains(&format!("{input} 1.20 s old")),
            "{}",
            sm.explain(at(1.2))
        );
    }
}

#[test]
fn idle_input_at_exactly_the_timeout_is_fresh() {
    let mut sm = with_staleness();
    feed_nominal(&mut sm, 0.0);
    assert_eq!(errors_at(&mut sm, 1.0), ErrorBits::NONE);
    assert_eq!(errors_at(&mut sm, 1.01), ErrorBits::STALE_DATA);
}

#[test]
fn idle_never_received_is_reported_distinctly() {
    let mut sm = with_staleness();
    // Everything but the GPS arrives.
    feed_nominal_except(&mut sm, Some(Input::Gps), 0.9);
    assert_eq!(sm.freshness(Input::Gps, at(0.9)), Freshness::Awaiting);
    assert_eq!(errors_at(&mut sm, 0.9), ErrorBits::NONE);
    assert_eq!(errors_at(&mut sm, 1.1), ErrorBits::STALE_DATA);
    assert_eq!(sm.freshness(Input::Gps, at(1.1)), Freshness::NeverReceived);
    assert_eq!(sm.freshness(Input::Battery, at(1.1)), Freshness::Fresh);
    assert_eq!(
        sm.explain(at(1.1)),
        "STALE_DATA: gps_accuracy never received"
    );
}

#[test]
fn running_planner_status_stale_is_an_error() {
    let mut sm = with_staleness();
    feed_nominal(&mut sm, 0.0);
    let t = at(0.1);
    sm.update_planner(t, 2, t);
    assert_eq!(sm.evaluate(t).state, SystemState::Running);
    // The planner dies; the other inputs keep coming.
    for step in 2..=12 {
        feed_nominal_except(&mut sm, Some(Input::PlannerStatus), step as f64 * 0.1);
    }
    let r = sm.evaluate(at(1.2));
    assert_eq!(
        (r.state, r.errors),
        (SystemState::Error, ErrorBits::STALE_DATA)
    );
    assert!(sm.explain(at(1.2)).contains("task_planner_status"));
}

#[test]
fn idle_staleness_disabled_never_stale() {
    let mut sm = rules_only();
    feed_nominal(&mut sm, 0.0);
    assert_eq!(errors_at(&mut sm, 3600.0), ErrorBits::NONE);
    assert_eq!(sm.freshness(Input::Gps, at(3600.0)), Freshness::Fresh);
}

#[test]
fn error_stale_input_arrives_again_recovers() {
    let mut sm = with_staleness();
    feed_nominal(&mut sm, 0.0);
    assert_eq!(errors_at(&mut sm, 2.0), ErrorBits::STALE_DATA);
    feed_nominal(&mut sm, 2.0);
    assert_eq!(errors_at(&mut sm, 2.0), ErrorBits::NONE);
}

// ----- combinations and the state machine -----------------------------------------------

#[test]
fn error_several_faults_set_several_bits() {
    let mut sm = rules_only();
    sm.update_estop(at(0.0), true, at(0.0));
    sm.update_battery(at(0.0), 0.1, at(0.0));
    sm.update_temperature(at(0.0), 70.0, at(0.0));
    sm.update_gps(at(0.0), 900.0, at(0.0));
    let e = errors_at(&mut sm, 16.0);
    assert_eq!(
        e.bits(),
        ErrorBits::ESTOP.bits()
            | ErrorBits::BATTERY_LOW.bits()
            | ErrorBits::TEMPERATURE_HIGH.bits()
            | ErrorBits::GPS_LOST.bits()
    );
    assert_eq!(e.to_string(), "BATTERY_LOW|ESTOP|GPS_LOST|TEMPERATURE_HIGH");
}

#[test]
fn error_one_of_two_faults_clears_stays_error_and_reports_change() {
    let mut sm = rules_only();
    sm.update_estop(at(0.0), true, at(0.0));
    sm.update_battery(at(0.0), 0.1, at(0.0));
    sm.evaluate(at(0.0));
    sm.update_estop(at(0.1), false, at(0.1));
    let r = sm.evaluate(at(0.1));
    assert_eq!(
        (r.state, r.errors),
        (SystemState::Error, ErrorBits::BATTERY_LOW)
    );
    assert!(
        r.changed,
        "error code changed, so the node must publish now"
    );
    assert_eq!(r.transition, None);
}

#[test]
fn idle_planner_running_goes_running() {
    let mut sm = rules_only();
    sm.update_planner(at(0.0), 2, at(0.0));
    let r = sm.evaluate(at(0.0));
    assert_eq!(r.state, SystemState::Running);
    let t = r.transition.unwrap();
    assert_eq!(
        (t.from, t.to, t.reason),
        (SystemState::Idle, SystemState::Running, Reason::TaskStarted)
    );
}

#[test]
fn idle_planner_paused_counts_as_a_task() {
    let mut sm = rules_only();
    sm.update_planner(at(0.0), 1, at(0.0));
    assert_eq!(sm.evaluate(at(0.0)).state, SystemState::Running);
}

#[test]
fn running_planner_no_task_goes_idle() {
    let mut sm = rules_only();
    sm.update_planner(at(0.0), 2, at(0.0));
    sm.evaluate(at(0.0));
    sm.update_planner(at(0.1), 0, at(0.1));
    let r = sm.evaluate(at(0.1));
    assert_eq!(r.state, SystemState::Idle);
    assert_eq!(r.transition.unwrap().reason, Reason::TaskEnded);
}

#[test]
fn error_recovery_with_task_goes_running() {
    let mut sm = rules_only();
    sm.update_planner(at(0.0), 1, at(0.0));
    sm.update_estop(at(0.0), true, at(0.0));
    assert_eq!(sm.evaluate(at(0.0)).state, SystemState::Error);
    sm.update_estop(at(0.2), false, at(0.2));
    let t = sm.evaluate(at(0.2)).transition.unwrap();
    assert_eq!(
        (t.from, t.to, t.reason),
        (SystemState::Error, SystemState::Running, Reason::Recovered)
    );
    assert_eq!(t.at, at(0.2));
}

#[test]
fn idle_repeated_evaluation_reports_no_change() {
    let mut sm = rules_only();
    assert!(!sm.evaluate(at(0.0)).changed);
    sm.update_estop(at(0.1), true, at(0.1));
    assert!(sm.evaluate(at(0.1)).changed);
    assert!(!sm.evaluate(at(0.2)).changed);
}

#[test]
fn idle_planner_status_out_of_range_counts_as_a_task() {
    let mut sm = rules_only();
    let issues = sm.update_planner(at(0.0), 9, at(0.0));
    assert_eq!(issues.len(), 1);
    assert_eq!(sm.evaluate(at(0.0)).state, SystemState::Running);
}

// ----- stamps and clock -----------------------------------------------------------------

#[test]
fn idle_zero_stamp_uses_receive_time() {
    let mut sm = with_staleness();
    feed_nominal(&mut sm, 0.0);
    let issues = sm.update_temperature(Time::ZERO, 30.0, at(0.8));
    assert_eq!(
        issues,
        vec![InputIssue::ZeroStamp {
            input: Input::Temperature
        }]
    );
    // Fresh until 0.8 + 1.0 s, not stale "since 1970".
    feed_nominal_except(&mut sm, Some(Input::Temperature), 1.5);
    assert_eq!(errors_at(&mut sm, 1.5), ErrorBits::NONE);
    assert_eq!(errors_at(&mut sm, 1.81), ErrorBits::STALE_DATA);
}

#[test]
fn idle_future_stamp_is_clamped_and_cannot_keep_an_input_fresh() {
    let mut sm = with_staleness();
    feed_nominal(&mut sm, 0.0);
    let issues = sm.update_temperature(at(100.0), 30.0, at(0.5));
    assert!(matches!(
        issues[..],
        [InputIssue::FutureStamp {
            input: Input::Temperature,
            ..
        }]
    ));
    feed_nominal_except(&mut sm, Some(Input::Temperature), 1.4);
    assert_eq!(errors_at(&mut sm, 1.4), ErrorBits::NONE);
    assert_eq!(errors_at(&mut sm, 1.6), ErrorBits::STALE_DATA);
}

#[test]
fn idle_stamp_slightly_ahead_is_accepted_silently() {
    let mut sm = with_staleness();
    let issues = sm.update_battery(at(0.3), 0.8, at(0.1));
    assert!(issues.is_empty());
}

#[test]
fn idle_good_fix_arriving_before_its_clock_keeps_its_own_stamp() {
    // Under sim time the fix stamped 5.0 can be processed while ROS now is still 4.9:
    // the window counts from 5.0, not from 4.9.
    let mut sm = rules_only();
    sm.update_gps(at(5.0), 100.0, at(4.9));
    sm.update_gps(at(5.1), 300.0, at(5.1));
    assert_eq!(errors_at(&mut sm, 20.0), ErrorBits::NONE);
    assert_eq!(errors_at(&mut sm, 20.1), ErrorBits::GPS_LOST);
}

#[test]
fn idle_gps_future_good_fix_cannot_extend_the_window() {
    let mut sm = rules_only();
    sm.update_gps(at(1000.0), 100.0, at(0.0)); // clamped to 0
    sm.update_gps(at(0.1), 300.0, at(0.1));
    assert_eq!(errors_at(&mut sm, 15.1), ErrorBits::GPS_LOST);
}

#[test]
fn error_clock_jumps_back_restarts_windows_and_keeps_estop() {
    let mut sm = with_staleness();
    feed_nominal(&mut sm, 0.0);
    sm.update_estop(at(0.5), true, at(0.5));
    sm.update_gps(at(0.5), 900.0, at(0.5));
    assert_eq!(sm.evaluate(at(0.5)).errors, ErrorBits::ESTOP);
    // The simulator restarts its clock at 10 s.
    let restart = Time::from_secs_f64(10.0);
    let r = sm.evaluate(restart);
    assert!(matches!(
        r.clock_reset,
        Some(InputIssue::ClockJumpedBack { .. })
    ));
    assert_eq!(
        r.errors,
        ErrorBits::ESTOP,
        "e-stop stays pressed; nothing is stale yet"
    );
    // Staleness and the GPS window count from the restart.
    let later = Time::from_secs_f64(10.9);
    assert_eq!(sm.evaluate(later).errors, ErrorBits::ESTOP);
    let stale = Time::from_secs_f64(11.1);
    assert_eq!(
        sm.evaluate(stale).errors.bits(),
        ErrorBits::ESTOP.bits() | ErrorBits::STALE_DATA.bits()
    );
    assert!(sm.explain(stale).contains("battery_level never received"));
}

#[test]
fn idle_clock_jitter_within_tolerance_is_not_a_reset() {
    let mut sm = with_staleness();
    feed_nominal(&mut sm, 1.0);
    let r = sm.evaluate(at(0.8));
    assert_eq!(r.clock_reset, None);
    assert_eq!(r.errors, ErrorBits::NONE);
}

// ----- deadlines and config -------------------------------------------------------------

#[test]
fn idle_next_deadline_is_just_after_the_gps_window() {
    let mut sm = gps_bad_after_good(300.0);
    let d = sm.next_deadline(at(1.0)).unwrap();
    assert!(d > at(15.0) && d < at(15.0001), "{d}");
    assert_eq!(
        errors_at(&mut sm, d.as_secs_f64() - T0 + 1e-6),
        ErrorBits::GPS_LOST
    );
}

#[test]
fn idle_next_deadline_is_the_earliest_staleness() {
    let mut sm = with_staleness();
    feed_nominal(&mut sm, 0.0);
    let t = at(0.4);
    sm.update_battery(t, 0.8, t);
    let d = sm.next_deadline(at(0.5)).unwrap();
    assert!(d > at(1.0) && d < at(1.0001), "{d}");
}

#[test]
fn idle_nothing_pending_has_no_deadline() {
    let mut sm = rules_only();
    sm.update_gps(at(0.0), 10.0, at(0.0));
    assert_eq!(sm.next_deadline(at(1.0)), None);
}

#[test]
fn config_default_is_valid_and_spec() {
    let c = StateManagerConfig::default();
    assert_eq!(c.validate(), Ok(()));
    assert_eq!(c.battery_low_below_frac, 0.5);
    assert_eq!(c.temperature_high_above_c, 55.0);
    assert_eq!(c.gps_bad_above_mm, 200.0);
    assert_eq!(c.gps_lost_after, Duration::from_secs(15));
    assert_eq!(c.signal_lost_after, Duration::from_secs(10));
    assert_eq!(c.signal_low_after, Duration::from_secs(20));
    assert!(
        !c.watch_vehicle_fault,
        "the simulated platforms have no bridge"
    );
    assert_eq!(
        c.watched().collect::<Vec<_>>(),
        Input::ALL[..6].to_vec(),
        "every input but the drive-by-wire's fault"
    );
}

#[test]
fn config_bad_battery_threshold_names_the_field() {
    let c = StateManagerConfig {
        battery_low_below_frac: 50.0,
        ..Default::default()
    };
    let e = c.validate().unwrap_err();
    assert_eq!(e.field, field!(StateManagerConfig.battery_low_below_frac));
    assert_eq!(
        e.to_string(),
        "battery_low_below_frac = 50 is invalid: must be within 0..1"
    );
}

#[test]
fn config_zero_window_is_rejected() {
    let c = StateManagerConfig {
        gps_lost_after: Duration::ZERO,
        ..Default::default()
    };
    assert_eq!(c.validate().unwrap_err().field, HoldOff::GpsLost.field());
}

#[test]
fn config_nan_gps_threshold_is_rejected() {
    let c = StateManagerConfig {
        gps_bad_above_mm: f32::NAN,
        ..Default::default()
    };
    assert_eq!(
        c.validate().unwrap_err().field,
        field!(StateManagerConfig.gps_bad_above_mm)
    );
}

#[test]
fn issue_filter_logs_each_kind_once_per_input() {
    let mut f = IssueFilter::default();
    let nan = InputIssue::NotFinite {
        input: Input::Battery,
        value: f32::NAN,
    };
    let zero = InputIssue::ZeroStamp {
        input: Input::Battery,
    };
    assert!(f.first_time(&nan));
    assert!(!f.first_time(&nan));
    assert!(f.first_time(&zero));
    assert!(f.first_time(&InputIssue::ZeroStamp { input: Input::Gps }));
    let reset = InputIssue::ClockJumpedBack {
        from: at(5.0),
        to: at(0.0),
    };
    assert!(f.first_time(&reset) && f.first_time(&reset));
}

#[test]
fn ros_time_that_stops_raises_stale_data_until_it_moves() {
    let mut sm = with_staleness();
    feed_nominal(&mut sm, 0.5);
    assert_eq!(sm.evaluate(at(0.6)).errors, ErrorBits::NONE);
    // Frozen at 0.6 s (no /clock) for 2 s of wall time: every input is as fresh as it
    // was, yet the node is blind.
    sm.clock_stalled(at(0.6), Duration::from_secs(2));
    let report = sm.evaluate(at(0.6));
    assert_eq!(report.errors, ErrorBits::STALE_DATA);
    assert!(report.changed);
    assert!(
        sm.explain(at(0.6))
            .contains("ROS time stopped (2.0 s of wall time"),
        "{}",
        sm.explain(at(0.6))
    );
    // Time moves again and fresh inputs arrive: the stall is over.
    feed_nominal(&mut sm, 0.7);
    assert_eq!(sm.evaluate(at(0.7)).errors, ErrorBits::NONE);
    assert_eq!(sm.time_stopped(at(0.7)), None);
    // Time that jumped far ahead leaves the inputs stale: that is STALE_DATA of its own.
    sm.clock_stalled(at(0.7), Duration::from_secs(2));
    let report = sm.evaluate(at(5.0));
    assert_eq!(report.errors, ErrorBits::STALE_DATA);
    assert!(!sm.explain(at(5.0)).contains("ROS time stopped"));
}

#[test]
fn a_stopped_clock_is_no_fault_with_staleness_disabled() {
    let mut sm = rules_only();
    feed_nominal(&mut sm, 0.5);
    sm.clock_stalled(at(0.6), Duration::from_secs(2));
    assert_eq!(sm.evaluate(at(0.6)).errors, ErrorBits::NONE);
}
