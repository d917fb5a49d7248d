//! `pacmod_bridge` driving `gem_sim` in its PACMod mode, against a real master and on sim
//! time: drive commands from a 20 Hz publisher in the test (a controller's rate), the
//! PACMod's commands and reports watched on the wire. A speed step tracked through the
//! pedals; a stop on the brake at the command's deceleration with the accelerator
//! released; the bridge's watchdog stopping the car when the commands fall silent; a
//! driver override (taken with `rostopic pub`) that stops the bridge commanding until a
//! deliberate re-enable (`rosservice call`); a NaN command refused and braked; a steering
//! report disagreeing with the command latched as a fault; noisy,
//! late reports; the bridge itself killed, which leaves the car driving on its last
//! command as the `pacmod2` driver re-sends it; and an override reaching a state manager
//! that watches `vehicle/fault` as an ESTOP.

use gem_core::pacmod::MPS_PER_MPH;
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::diagnostic_msgs::{DiagnosticArray, DiagnosticStatus};
use gem_msgs::gazebo_msgs::ModelStates;
use gem_msgs::gem_state_msgs::EstopStamped;
use gem_msgs::pacmod_msgs::{PacmodCmd, PositionWithSpeed, VehicleSpeedRpt};
use gem_msgs::std_msgs::Float64;
use gem_testbed::{cli_ok, fresh_ns, ros, wait_until, Collector, NodeProc, RosGuard};
use ros1_protocols::Lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Bound of each wait (wall time; the simulator runs at real time).
const T: Duration = Duration::from_secs(30);
/// The speed of the step, m/s.
const CRUISE: f32 = 2.0;
/// The steering of the commands, rad (front wheel).
const STEER: f32 = 0.1;

/// The simulator, the bridge, a command publisher and the wire.
struct Rig {
    ns: String,
    sim: NodeProc,
    bridge: NodeProc,
    command: Arc<Mutex<Option<AckermannDrive>>>,
    stop: Arc<AtomicBool>,
    publisher: Option<JoinHandle<()>>,
    accel: Collector<PacmodCmd>,
    brake: Collector<PacmodCmd>,
    shift: Collector<PacmodCmd>,
    steer: Collector<PositionWithSpeed>,
    speed: Collector<Float64>,
    speed_rpt: Collector<VehicleSpeedRpt>,
    diag: Collector<DiagnosticArray>,
    fault: Collector<EstopStamped>,
}

impl Rig {
    /// Both nodes in a fresh namespace on sim time, the bridge asked to enable at start,
    /// and the command publisher silent.
    fn start(ros: &RosGuard) -> Rig {
        Rig::start_with(ros, &[])
    }

    /// [`Rig::start`] with more parameters of the simulator.
    fn start_with(ros: &RosGuard, sim_params: &[(&str, &str)]) -> Rig {
        let ns = fresh_ns("pm");
        ros.set_sim_time(true);
        let mut sim = ros
            .node("gem_sim")
            .arg(&format!("__ns:={ns}"))
            .param("interface", "pacmod")
            .param("publish_clock", true)
            .param("speedup", 1.0);
        for (k, v) in sim_params {
            sim = sim.param(k, v);
        }
        let sim = sim.spawn();
        let bridge = ros
            .node("pacmod_bridge")
            .arg(&format!("__ns:={ns}"))
            .remap(gem_core::names::DIAGNOSTICS, &format!("{ns}/diagnostics"))
            .param("enable_at_start", true)
            .spawn();
        let topic = |name: &str| format!("{ns}/{name}");
        let command = Arc::new(Mutex::new(None::<AckermannDrive>));
        let stop = Arc::new(AtomicBool::new(false));
        let out = ros1_protocols::this_node::publish::<AckermannDrive>(
            &topic(gem_core::names::ACKERMANN_CMD),
            10,
        )
        .expect("a command publisher");
        let (cmd, halt) = (command.clone(), stop.clone());
        // A controller's 20 Hz: a rate, not a synchronisation.
        let publisher = std::thread::spawn(move || {
            while !halt.load(Ordering::Relaxed) {
                let next = cmd.locked().clone();
                if let Some(c) = next {
                    let _ = out.send(c);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        use gem_core::names as n;
        Rig {
            accel: Collector::new(&topic(n::PACMOD_ACCEL_CMD)),
            brake: Collector::new(&topic(n::PACMOD_BRAKE_CMD)),
            shift: Collector::new(&topic(n::PACMOD_SHIFT_CMD)),
            steer: Collector::new(&topic(n::PACMOD_STEER_CMD)),
            speed: Collector::new(&topic(n::PACMOD_VEHICLE_SPEED)),
            speed_rpt: Collector::new(&topic(n::PACMOD_VEHICLE_SPEED_RPT)),
            diag: Collector::new(&topic("diagnostics")),
            fault: Collector::new(&topic(n::VEHICLE_FAULT)),
            ns,
            sim,
            bridge,
            command,
            stop,
            publisher: Some(publisher),
        }
    }

    /// Commands `speed` (m/s) with `accel` (m/s², 0: none) from now on.
    fn drive(&self, speed: f32, accel: f32) {
        self.drive_steering(speed, accel, STEER);
    }

    /// [`Rig::drive`] with the front wheels at `steer` (rad).
    fn drive_steering(&self, speed: f32, accel: f32, steer: f32) {
        *self.command.locked() = Some(AckermannDrive {
            steering_angle: steer,
            speed,
            acceleration: accel,
            ..Default::default()
        });
    }

    /// No more commands.
    fn silence(&self) {
        *self.command.locked() = None;
    }

    /// The bridge's latest status.
    fn status(&self) -> Option<DiagnosticStatus> {
        self.diag
            .last()
            .and_then(|m| m.status.into_iter().find(|s| s.name.ends_with(": PACMod")))
    }

    /// The value of `key` in the bridge's latest status.
    fn value(&self, key: &str) -> Option<String> {
        self.status()?
            .values
            .into_iter()
            .find(|kv| kv.key == key)
            .map(|kv| kv.value)
    }

    /// Waits until the bridge's state is `name`.
    fn wait_state(&self, name: &str) {
        assert!(
            wait_until(T, || self.value("state").as_deref() == Some(name)),
            "never {name}: last status {:?}\n{}",
            self.status(),
            self.output()
        );
    }

    /// The latest speed report, m/s.
    fn speed_mps(&self) -> f64 {
        self.speed.last().map_or(f64::NAN, |m| m.data)
    }

    /// Waits until the reported speed satisfies `pred`.
    fn wait_speed(&self, what: &str, pred: impl Fn(f64) -> bool) {
        assert!(
            wait_until(T, || pred(self.speed_mps())),
            "{what}: speed {:.3} m/s, status {:?}\n{}",
            self.speed_mps(),
            self.status(),
            self.output()
        );
    }

    /// Engaged and cruising at [`CRUISE`].
    fn cruising(ros: &RosGuard) -> Rig {
        Rig::cruising_with(ros, &[])
    }

    /// [`Rig::cruising`] with more parameters of the simulator.
    fn cruising_with(ros: &RosGuard, sim_params: &[(&str, &str)]) -> Rig {
        let rig = Rig::start_with(ros, sim_params);
        rig.wait_state("READY");
        rig.drive(CRUISE, 0.0);
        rig.wait_state("DRIVING");
        rig.wait_speed("cruise", |v| (v - f64::from(CRUISE)).abs() < 0.1);
        rig
    }

    /// Waits until `n` more PACMod accelerator commands have been sent (ticks of the
    /// bridge), so what follows is judged on fresh output.
    fn wait_ticks(&self, n: usize) {
        let from = self.accel.len();
        assert!(
            wait_until(T, || self.accel.len() >= from + n),
            "the bridge stopped commanding\n{}",
            self.output()
        );
    }

    /// The (accelerator, brake) of each tick from the `from`-th messages of each on,
    /// paired by stamp.
    fn pedal_pairs(&self, from_accel: usize, from_brake: usize) -> Vec<(f64, f64)> {
        let brakes: HashMap<(u32, u32), f64> = self.brake.all()[from_brake..]
            .iter()
            .map(|m| ((m.header.stamp.sec, m.header.stamp.nsec), m.f64_cmd))
            .collect();
        self.accel.all()[from_accel..]
            .iter()
            .filter_map(|m| {
                brakes
                    .get(&(m.header.stamp.sec, m.header.stamp.nsec))
                    .map(|b| (m.f64_cmd, *b))
            })
            .collect()
    }

    fn output(&self) -> String {
        format!(
            "--- {} sim ---\n{}\n--- bridge ---\n{}",
            self.ns,
            self.sim.output(),
            self.bridge.output()
        )
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(p) = self.publisher.take() {
            let _ = p.join();
        }
    }
}

/// Seconds of a ROS stamp.
fn secs(t: rosrust::Time) -> f64 {
    f64::from(t.sec) + f64::from(t.nsec) * 1e-9
}

/// (a) Engaged with the brake held and forward selected before the first command; a step
/// to 2 m/s tracked through the accelerator; the two speed reports agree on the units.
#[test]
fn a_speed_step_is_tracked_through_the_pedals() {
    let ros = ros();
    let rig = Rig::start(&ros);
    rig.wait_state("READY");
    let held = rig
        .brake
        .wait_latest(T, |m| m.f64_cmd > 0.3)
        .expect("the brake held before the first command");
    assert!(held.enable);
    assert!(rig.accel.all().iter().all(|m| m.f64_cmd == 0.0));
    assert!(rig
        .shift
        .wait_for(T, |m| m.ui16_cmd == PacmodCmd::SHIFT_FORWARD)
        .is_some());
    assert!(rig.speed.wait_for(T, |_| true).is_some(), "no speed report");
    assert!(rig.speed_mps().abs() < 1e-6, "moved before the command");
    rig.drive(CRUISE, 0.0);
    rig.wait_state("DRIVING");
    rig.wait_speed("step", |v| (v - f64::from(CRUISE)).abs() < 0.1);
    // The loop's overshoot (the PI's zero: a few cm/s with the default gains) and
    // its settling: 12 s of reports (30 Hz) from the first within 0.1 m/s.
    let from = rig.speed.len();
    assert!(wait_until(Duration::from_secs(60), || rig.speed.len() >= from + 360));
    let after: Vec<f64> = rig.speed.all()[from..from + 360]
        .iter()
        .map(|m| m.data - f64::from(CRUISE))
        .collect();
    let overshoot = after.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let rms = (after.iter().map(|e| e * e).sum::<f64>() / after.len() as f64).sqrt();
    let last_second = after[330..].iter().map(|e| e.abs()).fold(0.0, f64::max);
    eprintln!(
        "speed step 0 -> {CRUISE} m/s: overshoot {overshoot:.3} m/s, RMS {rms:.3} m/s over 12 s \
         from the first report within 0.1 m/s, worst {last_second:.3} m/s in the last second"
    );
    assert!(overshoot < 0.25, "{after:?}");
    assert!(last_second < 0.06, "{after:?}");
    assert!(rig.accel.all().iter().any(|m| m.f64_cmd > 0.3));
    // The parsed report is in mph, as_tx/vehicle_speed in m/s.
    let mph = rig
        .speed_rpt
        .last()
        .expect("a parsed speed report")
        .vehicle_speed;
    assert!(
        (mph * MPS_PER_MPH - f64::from(CRUISE)).abs() < 0.15,
        "{mph} mph"
    );
    // The steering wheel through the relation, with the rate limit.
    let s = rig.steer.last().expect("a steering command");
    let wheel = gem_core::pacmod::steering::SteeringRelation::GEM_E2
        .steering_wheel_from_front_wheel(f64::from(STEER))
        .unwrap();
    assert!((s.angular_position - wheel).abs() < 1e-6, "{s:?}");
    assert!(s.angular_velocity_limit > 0.0);
    let fault = rig.fault.last().expect("the fault topic");
    assert!(!fault.enabled);
}

/// (b) A stop command brakes to rest at its deceleration, never with the accelerator.
#[test]
fn a_stop_brakes_to_rest_at_the_commands_deceleration_without_the_accelerator() {
    let ros = ros();
    let rig = Rig::cruising(&ros);
    let (from_accel, from_brake, from_rpt) =
        (rig.accel.len(), rig.brake.len(), rig.speed_rpt.len());
    rig.drive(0.0, 1.0);
    rig.wait_speed("stop", |v| v.abs() < 0.01);
    rig.wait_ticks(10);
    let pairs = rig.pedal_pairs(from_accel, from_brake);
    assert!(pairs.len() > 30, "{} ticks paired", pairs.len());
    assert!(
        pairs.iter().all(|(a, b)| *a == 0.0 || *b == 0.0),
        "both pedals at once: {pairs:?}"
    );
    // The first tick or two may still be the cruise's; from then on, no accelerator.
    assert!(pairs[2..].iter().all(|(a, _)| *a == 0.0), "{pairs:?}");
    assert!(pairs.iter().any(|(_, b)| *b > 0.0));
    assert!(pairs.last().is_some_and(|(_, b)| *b >= 0.3), "held at rest");
    // The deceleration between 1.6 and 0.4 m/s (sim time of the reports).
    let rpt: Vec<(f64, f64)> = rig.speed_rpt.all()[from_rpt..]
        .iter()
        .map(|m| (secs(m.header.stamp), m.vehicle_speed * MPS_PER_MPH))
        .collect();
    let crossing = |v: f64| rpt.iter().find(|(_, s)| *s <= v).copied();
    let ((t1, v1), (t2, v2)) = (crossing(1.6).unwrap(), crossing(0.4).unwrap());
    let decel = (v1 - v2) / (t2 - t1);
    eprintln!("stop at 1 m/s² commanded: {decel:.2} m/s² measured");
    assert!((0.7..=1.3).contains(&decel), "{decel} m/s²\n{rpt:?}");
}

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

/// The reports with noise (σ 0.05 m/s, 0.02 rad at the steering wheel) and 50 ms late:
/// the step is tracked on average, the stop brings the true car to rest and holds it, and
/// nothing of it is a fault.
#[test]
fn noisy_late_reports_are_tracked_and_stopped_on() {
    let ros = ros();
    let noisy = [
        ("pacmod_speed_sigma_mps", "0.05"),
        ("pacmod_wheel_sigma_rad", "0.02"),
        ("pacmod_latency_s", "0.05"),
    ];
    let states = |rig: &Rig| {
        Collector::<ModelStates>::new(&format!("{}/{}", rig.ns, gem_core::names::MODEL_STATES))
    };
    let rig = Rig::start_with(&ros, &noisy);
    let truth = states(&rig);
    rig.wait_state("READY");
    rig.drive(CRUISE, 0.0);
    rig.wait_state("DRIVING");
    let true_speed = |m: &ModelStates| {
        m.twist
            .first()
            .map_or(f64::NAN, |t| t.linear.x.hypot(t.linear.y))
    };
    // Within 0.1 m/s, averaged over a second of true states (50 Hz), within 20 s.
    let mean_of_last_second = || {
        let all = truth.all();
        let last: Vec<f64> = all.iter().rev().take(50).map(true_speed).collect();
        last.iter().sum::<f64>() / last.len().max(1) as f64
    };
    assert!(
        wait_until(T, || truth.len() > 50
            && (mean_of_last_second() - f64::from(CRUISE)).abs() < 0.1),
        "mean true speed {:.3}\n{}",
        mean_of_last_second(),
        rig.output()
    );
    rig.drive(0.0, 1.0);
    assert!(
        wait_until(T, || truth.last().is_some_and(|m| true_speed(&m) < 1e-3)),
        "never at rest\n{}",
        rig.output()
    );
    // Held at rest over the next 2 s of reports.
    let from = truth.len();
    assert!(wait_until(T, || truth.len() >= from + 100));
    assert!(truth.all()[from..].iter().all(|m| true_speed(m) < 1e-3));
    assert_eq!(rig.value("state").as_deref(), Some("DRIVING"));
    assert!(
        !rig.bridge.output().contains("=> BRAKING")
            && !rig.bridge.output().contains("=> DISENGAGED"),
        "{}",
        rig.output()
    );
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

/// A calibration run asked for with `rosservice call`, as an operator types it: a request
/// naming an unknown pedal, and one while the test's controller drives, are refused with
/// the reason and change nothing; with the commands stopped, the accelerator run holds its
/// fraction and the steering wheel, ends at its duration, brakes to rest and leaves the
/// bridge ready; the accelerator never pressed with the brake.
#[test]
fn a_calibration_run_through_rosservice_holds_its_pedal_and_ends_by_itself() {
    let ros = ros();
    let rig = Rig::cruising(&ros);
    let service = format!("{}/pacmod_bridge/calibrate", rig.ns);
    let call = |req: &str| cli_ok("rosservice", &["call", &service, req], T);
    let run = "{pedal: accelerator, fraction: 0.42, steering_wheel_rad: 0.3, duration_s: 3, distance_m: 50, max_speed_mps: 5}";
    let bad = call("{pedal: clutch, duration_s: 3, distance_m: 50, max_speed_mps: 4}");
    assert!(bad.contains("accepted: False"), "{bad}");
    assert!(bad.contains("pedal \\\"clutch\\\" is none of"), "{bad}");
    let busy = call(run);
    assert!(
        busy.contains("accepted: False") && busy.contains("a controller is driving the car"),
        "{busy}"
    );
    assert_eq!(rig.value("state").as_deref(), Some("DRIVING"));
    rig.silence();
    rig.wait_state("BRAKING");
    rig.wait_speed("watchdog stop", |v| v.abs() < 0.01);
    let (from_accel, from_brake) = (rig.accel.len(), rig.brake.len());
    let ok = call(run);
    assert!(
        ok.contains("accepted: True") && ok.contains("run: 1"),
        "{ok}"
    );
    rig.wait_state("CALIBRATING");
    assert!(rig.accel.wait_latest(T, |c| c.f64_cmd == 0.42).is_some());
    assert!(rig
        .steer
        .wait_latest(T, |c| c.angular_position == 0.3)
        .is_some());
    assert!(
        wait_until(T, || rig
            .value("calibration")
            .is_some_and(|c| c.starts_with("ended: duration reached"))),
        "{:?}",
        rig.status()
    );
    rig.wait_state("READY");
    rig.wait_speed("after the run", |v| v.abs() < 0.01);
    let pairs = rig.pedal_pairs(from_accel, from_brake);
    assert!(
        pairs.iter().all(|(a, b)| *a == 0.0 || *b == 0.0),
        "{pairs:?}"
    );
    assert!(pairs.iter().any(|(a, _)| *a == 0.42), "{pairs:?}");
}
