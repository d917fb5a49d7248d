//! The bridge's faults: silent commands, a driver override, a NaN command, the bridge killed, a steering mismatch, an override reaching the state manager.

use super::*;

/// (c) The commands fall silent: the watchdog brakes the car to rest, the steering held,
/// logged once, reported as a fault.
#[test]
fn command_silence_brakes_to_rest_by_the_watchdog() {
    let ros = ros();
    let rig = Rig::cruising(&ros);
    let (from_accel, from_brake) = (rig.accel.len(), rig.brake.len());
    rig.silence();
    rig.wait_state("BRAKING");
    let fault = rig.value("fault").unwrap_or_default();
    assert!(fault.contains("no valid drive command"), "{fault}");
    rig.wait_speed("watchdog stop", |v| v.abs() < 0.01);
    rig.wait_ticks(10);
    let pairs = rig.pedal_pairs(from_accel, from_brake);
    assert!(pairs.iter().all(|(a, b)| *a == 0.0 || *b == 0.0));
    assert!(pairs.last().is_some_and(|(a, b)| *a == 0.0 && *b >= 0.3));
    let wheel = gem_core::pacmod::steering::SteeringRelation::GEM_E2
        .steering_wheel_from_front_wheel(f64::from(STEER))
        .unwrap();
    let s = rig.steer.last().expect("steering commands go on");
    assert!(
        (s.angular_position - wheel).abs() < 1e-6,
        "steering held: {s:?}"
    );
    assert!(rig.fault.wait_latest(T, |m| m.enabled).is_some());
    assert!(rig
        .bridge
        .wait_output(T, "no valid drive command within the timeout"));
    assert_eq!(
        rig.bridge
            .output()
            .matches("no valid drive command within the timeout")
            .count(),
        1,
        "logged once\n{}",
        rig.output()
    );
    // The status says so too.
    assert_eq!(rig.status().map(|s| s.level), Some(DiagnosticStatus::ERROR));
}

/// (d) A driver override in the simulator: the bridge stops commanding at once and stays
/// silent, also after the driver lets go, until an enable request; then it drives again.
#[test]
fn an_override_stops_commanding_until_a_deliberate_re_enable() {
    let ros = ros();
    let rig = Rig::cruising(&ros);
    let takeover = format!("{}/gem_sim/pacmod_override", rig.ns);
    cli_ok(
        "rostopic",
        &["pub", "-1", &takeover, "std_msgs/Bool", "data: true"],
        T,
    );
    rig.wait_state("DISENGAGED");
    // The override and the PACMod disabling itself come in one report round, on separate
    // topics: whichever the bridge hears first is the fault it names.
    let fault = rig.value("fault").unwrap_or_default();
    assert!(
        fault.contains("override") || fault.contains("disabled"),
        "{fault}"
    );
    assert!(rig.fault.wait_latest(T, |m| m.enabled).is_some());
    // Commands still arrive at 20 Hz; the bridge sends the PACMod nothing.
    let silent_for = |d: Duration| {
        let (a, b, s) = (rig.accel.len(), rig.brake.len(), rig.steer.len());
        !wait_until(d, || {
            rig.accel.len() > a || rig.brake.len() > b || rig.steer.len() > s
        })
    };
    // At most one tick already under way when the override arrived.
    assert!(wait_until(T, || silent_for(Duration::from_millis(300))));
    assert!(
        silent_for(Duration::from_secs(2)),
        "commanding under override"
    );
    cli_ok(
        "rostopic",
        &["pub", "-1", &takeover, "std_msgs/Bool", "data: false"],
        T,
    );
    assert!(silent_for(Duration::from_secs(2)), "resumed by itself");
    assert_eq!(rig.value("state").as_deref(), Some("DISENGAGED"));
    let service = format!("{}/pacmod_bridge/enable", rig.ns);
    let answer = cli_ok("rosservice", &["call", &service], T);
    assert!(answer.contains("success: True"), "{answer}");
    rig.wait_state("DRIVING");
    rig.wait_speed("after re-enable", |v| (v - f64::from(CRUISE)).abs() < 0.1);
    assert_eq!(
        rig.bridge.output().matches("=> DISENGAGED").count(),
        1,
        "{}",
        rig.output()
    );
}

/// (e) A NaN command is refused and logged, and the car brakes to rest; valid commands
/// drive on.
#[test]
fn a_nan_command_is_refused_and_braked() {
    let ros = ros();
    let rig = Rig::cruising(&ros);
    let (from_accel, from_brake) = (rig.accel.len(), rig.brake.len());
    rig.drive(f32::NAN, 0.0);
    rig.wait_state("BRAKING");
    let fault = rig.value("fault").unwrap_or_default();
    assert!(
        fault.contains("refused") && fault.contains("NaN"),
        "{fault}"
    );
    rig.wait_speed("refusal stop", |v| v.abs() < 0.01);
    rig.wait_ticks(10);
    let pairs = rig.pedal_pairs(from_accel, from_brake);
    assert!(pairs.iter().all(|(a, b)| *a == 0.0 || *b == 0.0));
    assert!(pairs[2..].iter().all(|(a, _)| *a == 0.0), "{pairs:?}");
    assert!(pairs.last().is_some_and(|(_, b)| *b >= 0.3));
    let said = "drive command refused: commanded speed NaN is not a finite number";
    assert!(rig.bridge.wait_output(T, said));
    assert_eq!(
        rig.bridge.output().matches(said).count(),
        1,
        "logged once\n{}",
        rig.output()
    );
    rig.drive(CRUISE, 0.0);
    rig.wait_state("DRIVING");
    rig.wait_speed("after the refusal", |v| v > 1.0);
}

/// The bridge itself killed while cruising: the simulated driver goes on applying the last
/// pedals and steering it received (the `pacmod2` driver has no command timeout), so the
/// car drives on. What this documents: with the bridge gone, nothing in the suite can stop
/// the car; the PACMod's own protection is not modelled.
#[test]
fn a_killed_bridge_leaves_its_last_command_applied() {
    let ros = ros();
    let mut rig = Rig::cruising(&ros);
    let n = rig.accel.len();
    rig.bridge.kill();
    let last = rig.accel.all()[n.saturating_sub(1)..]
        .last()
        .map_or(0.0, |m| m.f64_cmd);
    let from = rig.speed.len();
    assert!(
        wait_until(T, || rig.speed.len() >= from + 150),
        "no reports"
    );
    let after: Vec<f64> = rig.speed.all()[from..from + 150]
        .iter()
        .map(|m| m.data)
        .collect();
    let slowest = after.iter().copied().fold(f64::INFINITY, f64::min);
    eprintln!(
        "bridge killed at {CRUISE} m/s (accelerator {last:.3}): 5 s later {:.2} m/s, never below {slowest:.2} m/s",
        after[after.len() - 1]
    );
    assert!(slowest > 1.5, "the car slowed: {after:?}");
}

/// A steering wheel that cannot follow (the simulated actuator limited to 0.5 rad/s, the
/// bridge expecting 3.5): the report disagrees with the command beyond the bound for longer
/// than allowed, a latched fault that brakes the car to rest and that valid commands do not
/// clear.
#[test]
fn a_steering_report_disagreeing_with_the_command_is_a_latched_fault() {
    let ros = ros();
    let rig = Rig::start_with(&ros, &[("pacmod_max_wheel_rate_rad_s", "0.5")]);
    rig.wait_state("READY");
    rig.drive_steering(1.0, 0.0, 0.3);
    rig.wait_state("BRAKING");
    let fault = rig.value("fault").unwrap_or_default();
    assert!(fault.contains("steering wheel at"), "{fault}");
    rig.wait_speed("mismatch stop", |v| v.abs() < 0.01);
    // Valid commands go on; the fault stays.
    let from = rig.diag.len();
    assert!(wait_until(T, || rig.diag.len() >= from + 3));
    assert_eq!(rig.value("state").as_deref(), Some("BRAKING"));
    assert!(rig.fault.wait_latest(T, |m| m.enabled).is_some());
    assert!(rig.bridge.output().contains("an enable request clears it"));
}

/// The chain to the suite's state: a driver override in the simulator, the bridge's
/// `vehicle/fault`, a state manager watching it (`~watch_vehicle_fault`; staleness off, as
/// nothing else feeds it here) → `system_state` ERROR with the ESTOP bit, logged as the
/// drive-by-wire's fault; the deliberate re-enable clears it.
#[test]
fn an_override_reaches_the_state_manager_as_an_estop() {
    use gem_msgs::gem_state_msgs::SystemStateStamped as S;
    let ros = ros();
    let rig = Rig::cruising(&ros);
    let state = Collector::<S>::new(&format!("{}/{}", rig.ns, gem_core::names::SYSTEM_STATE));
    let sm = ros
        .node("state_manager")
        .arg(&format!("__ns:={}", rig.ns))
        .param("watch_vehicle_fault", true)
        .param("state_timeout_ms", 0)
        .spawn();
    let output = || format!("{}\n--- state manager ---\n{}", rig.output(), sm.output());
    assert!(
        state
            .wait_latest(T, |m| (m.state, m.error_code) == (S::STATE_IDLE, 0))
            .is_some(),
        "driving: {:?}\n{}",
        state.last(),
        output()
    );
    let takeover = format!("{}/gem_sim/pacmod_override", rig.ns);
    cli_ok(
        "rostopic",
        &["pub", "-1", &takeover, "std_msgs/Bool", "data: true"],
        T,
    );
    let m = state
        .wait_latest(T, |m| m.error_code & S::ERROR_ESTOP != 0)
        .unwrap_or_else(|| panic!("no ESTOP: {:?}\n{}", state.last(), output()));
    assert_eq!((m.state, m.error_code), (S::STATE_ERROR, S::ERROR_ESTOP));
    assert!(
        sm.wait_output(T, "ESTOP: drive-by-wire fault on vehicle/fault"),
        "{}",
        output()
    );
    cli_ok(
        "rostopic",
        &["pub", "-1", &takeover, "std_msgs/Bool", "data: false"],
        T,
    );
    let answer = cli_ok(
        "rosservice",
        &["call", &format!("{}/pacmod_bridge/enable", rig.ns)],
        T,
    );
    assert!(answer.contains("success: True"), "{answer}");
    assert!(
        state
            .wait_latest(T, |m| (m.state, m.error_code) == (S::STATE_IDLE, 0))
            .is_some(),
        "after the re-enable: {:?}\n{}",
        state.last(),
        output()
    );
}
