//! Laps on the car's interfaces: the demo lap through the pedals, a lap paused by an override and an INS outage, every law joining on the car's slow steering.

use super::*;

/// Both laps start on the path, so that only the interfaces differ (the car's platform
/// steers with `lqr` on the car's slow steering; the joining from 2 m beside the path is
/// [`every_law_joins_from_two_metres_on_the_cars_steering_or_is_refused`]'s).
#[test]
fn the_demo_lap_through_the_pedals_tracks_within_1_5x_of_the_ackermann_lap() {
    let _ros = ros();
    let (ackermann, _) = demo("sim");
    let pedals = Pedals::new();
    let commands = Collector::<AckermannDrive>::new(names::global::ACKERMANN_CMD);
    let speeds = Collector::<Float64>::new(names::global::PACMOD_VEHICLE_SPEED);
    let (pacmod, states) = demo("gem_e2_sim");
    let tracking = speed_tracking_rms(&commands, &speeds);
    println!("pedal loop over the lap: reported speed against the command, RMS {tracking:.3} m/s");
    // The command steps (a stop, a start) the car cannot follow at once count too: a
    // bound on gross failure, the figure is what the run reports.
    assert!(tracking < 1.0, "speed tracking RMS {tracking:.3} m/s");
    let column = "RMS cross-track after convergence";
    let lap = |summary: &str| summary_figure(summary, "| lap time", None, column);
    let (a, p) = (lap(&ackermann), lap(&pacmod));
    println!("cross-track RMS after convergence: ackermann_cmd {a:.3} m, PACMod + INS {p:.3} m");
    assert!(
        p <= 1.5 * a,
        "PACMod lap {p:.3} m > 1.5 × {a:.3} m\n{pacmod}\n{ackermann}"
    );

    // The two stops, as the demo measured them on the car's model: the e-stop's an
    // emergency stop, the battery's a comfortable one, each about as hard as through
    // `ackermann_cmd`.
    let decel = |summary: &str, fault: &str| {
        summary_figure(summary, "| fault", Some(fault), "peak deceleration")
    };
    for fault in ["e-stop", "battery"] {
        let (a, p) = (decel(&ackermann, fault), decel(&pacmod, fault));
        println!("{fault}: peak deceleration ackermann_cmd {a:.2} m/s², PACMod {p:.2} m/s²");
        assert!(
            (p - a).abs() <= 0.35 * a,
            "{fault}: {p:.2} m/s² through the pedals, {a:.2} m/s² through ackermann_cmd"
        );
    }
    assert!(decel(&pacmod, "e-stop") > 2.0 * decel(&pacmod, "battery"));
    // The e-stop on the brake, the accelerator released once the controller has reacted
    // (a tick under way when ERROR came: 0.2 s); both stops end on the brake held at rest.
    let windows = error_windows(&states);
    let find = |bit: u8| {
        windows
            .iter()
            .find(|w| w.2 & bit != 0)
            .copied()
            .unwrap_or_else(|| panic!("no ERROR with bit {bit}: {windows:?}"))
    };
    let (accel, brake) = (pedals.accel.all(), pedals.brake.all());
    let (from, to, _) = find(ErrorBits::ESTOP.bits());
    let pressed = peak(&accel, from + 0.2, to);
    assert!(
        pressed == 0.0,
        "e-stop: accelerator {pressed} while in ERROR ({from:.2}..{to:.2} s)"
    );
    for (bit, what) in [
        (ErrorBits::ESTOP, "e-stop"),
        (ErrorBits::BATTERY_LOW, "battery"),
    ] {
        let (from, to, _) = find(bit.bits());
        assert!(
            peak(&brake, from, to) > 0.0,
            "{what}: no brake while in ERROR"
        );
    }
    // Never both pedals in one tick.
    for b in brake.iter().filter(|b| b.f64_cmd > 0.0) {
        let t = secs(b.header.stamp);
        assert!(
            !accel
                .iter()
                .any(|a| a.f64_cmd > 0.0 && secs(a.header.stamp) == t),
            "accelerator and brake together at {t:.3} s"
        );
    }
}

#[test]
fn an_override_and_an_ins_outage_mid_lap_pause_the_lap_which_then_completes() {
    let _ros = ros();
    let route = Route::start("gem_track.csv");
    let takeover = "/gem_sim/pacmod_override";
    let publish = |topic: &str, ty: &str, value: &str| {
        cli_ok("rostopic", &["pub", "-1", topic, ty, value], T);
    };

    // A driver takes the controls.
    publish(takeover, "std_msgs/Bool", "data: true");
    route.wait_error("override", ErrorBits::ESTOP.bits());
    route.wait_status("override", TaskPlannerStatus::STATUS_PAUSED_TASK);
    assert!(
        wait_until(T, || route.pedals_silent_for(Duration::from_millis(500))),
        "the bridge kept commanding the pedals under the override"
    );
    publish(takeover, "std_msgs/Bool", "data: false");
    assert!(
        route.pedals_silent_for(Duration::from_secs(2)),
        "the bridge resumed by itself"
    );
    assert_eq!(
        route.status.last().map(|m| m.status),
        Some(TaskPlannerStatus::STATUS_PAUSED_TASK)
    );
    // The deliberate re-enable.
    let answer = cli_ok("rosservice", &["call", "/pacmod_bridge/enable"], T);
    assert!(answer.contains("success: True"), "{answer}");
    route.wait_status("re-enabled", TaskPlannerStatus::STATUS_RUNNING_TASK);
    let here = route.position();
    assert!(
        wait_until(T, || route.moved_from(here) > 10.0),
        "did not drive on"
    );

    // The INS loses its solution for 2 s (ROS time).
    let ins = "/gem_sim/ins_status";
    let v = route.speed();
    publish(ins, "std_msgs/String", "data: INS_SOLUTION_FREE");
    let bad_from = route.now();
    route.wait_error("INS outage", ErrorBits::GPS_LOST.bits());
    route.wait_status("INS outage", TaskPlannerStatus::STATUS_PAUSED_TASK);
    // The comfortable stop is under way (on the pose held meanwhile, docs/real-car.md;
    // at its deceleration the pedal loop may coast rather than brake).
    assert!(
        wait_until(T, || route.speed() < v - 0.5),
        "the car did not slow down from {v:.2} m/s in the outage ({:.2} m/s)",
        route.speed()
    );
    assert!(
        wait_until(T, || route.now() >= bad_from + 2.0),
        "ROS time stood still"
    );
    publish(ins, "std_msgs/String", "data: ''");
    route.wait_status("INS back", TaskPlannerStatus::STATUS_RUNNING_TASK);
    route.completes();
    stop(route.launch);
}

/// On the car's platform (the PACMod's 3.5 rad/s of steering wheel, 0.1 s lag and dead time
/// in `gem_sim`), from the default spawn 2 m beside the track, each law the controller
/// accepts there (`lqr`, the launch's default, and `pure_pursuit` on their planned join,
/// and `mpc`) joins the path without crossing it by more than 0.3 m and is within
/// 0.1 m for good within 40 m of driving. Stanley is refused at start-up with an error that
/// names the steering rate and the laws to use.
#[test]
fn every_law_joins_from_two_metres_on_the_cars_steering_or_is_refused() {
    let _ros = ros();
    for law in ["lqr", "pure_pursuit", "mpc"] {
        let poses = Collector::<ModelStates>::new(names::global::MODEL_STATES);
        let extra = if law == "lqr" {
            Vec::new()
        } else {
            vec![format!("algorithm:={law}")]
        };
        let launch = launch_with("gem_e2_sim", "gem_track.csv", &extra);
        let driven = || {
            cross_track_of(track_path(), &poses.all())
                .last()
                .map_or(0.0, |s| s.0)
        };
        assert!(
            wait_until(Duration::from_secs(120), || driven() > 70.0),
            "{law}: the car did not drive 70 m from the spawn ({:.1} m)\n{}",
            driven(),
            launch.output()
        );
        let said = launch.output();
        stop(launch);
        let samples = cross_track_of(track_path(), &poses.all());
        let e0 = samples.first().expect("a pose").1;
        assert!(
            e0.abs() > 1.5,
            "{law}: the car did not start beside the path: {e0:.2} m"
        );
        let overshoot = samples
            .iter()
            .map(|(_, e)| -e0.signum() * e)
            .fold(0.0, f64::max);
        let out = samples.iter().rposition(|(_, e)| e.abs() > 0.1);
        let converged = out.and_then(|i| samples.get(i + 1)).map(|s| s.0);
        println!(
            "{law} from 2 m: converged after {converged:?} m, overshoot {overshoot:.3} m ({} poses)",
            samples.len()
        );
        assert!(
            overshoot <= 0.3,
            "{law}: overshoot {overshoot:.3} m\n{said}"
        );
        assert!(
            converged.is_some_and(|c| c <= 40.0),
            "{law}: converged after {converged:?} m\n{said}"
        );
    }

    // Stanley on the same steering: refused at start-up, naming the parameter.
    let out = cli(
        "rosrun",
        &[
            "gem_nodes",
            "stanley",
            "__name:=refused",
            "_pacmod_steering:=true",
        ],
        T,
    );
    let said =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "stanley started:\n{said}");
    assert!(
        said.contains("~steering_rate_rad_s") && said.contains("too slow for stanley"),
        "{said}"
    );
}
