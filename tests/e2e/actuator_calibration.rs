//! Measuring the car's steering motor on day one, on `platform:=gem_e2_sim` with a
//! simulated motor that is not the one the suite is told (`sim_car:=`: 2.0 rad/s of
//! steering wheel, 0.3 s lag, 0.2 s dead time, where `pacmod_bridge` and the controller
//! keep their 3.5 / 0.1 / 0.1): `gemctl calibrate actuator --collect` drives the
//! identification runs through the bridge (whose steering check must not trip on the
//! slower motor) and records a bag; the fit's YAML is compared with the simulated motor,
//! which no command sees. Then a bag without the PACMod topics is refused, naming them,
//! and nothing is written.

use gem_e2e::bags::{
    collect_on_sim, finish, gemctl_output, recording, said, scratch_dir, start_recording,
};
use gem_testbed::ros;
use std::path::Path;
use std::time::Duration;

/// Bound of the whole collecting drive, wall time (about 100 s of drive at 5×).
const DRIVE: Duration = Duration::from_secs(300);

/// The simulated motor: (rate rad/s, lag s, dead time s).
const TRUTH: (f64, f64, f64) = (2.0, 0.3, 0.2);

fn sim_car(dir: &Path) -> std::path::PathBuf {
    let file = dir.join("sim_car.yaml");
    let (rate, lag, dead) = TRUTH;
    let text = format!(
        "pacmod_max_wheel_rate_rad_s: {rate}\npacmod_steering_lag_s: {lag}\npacmod_steering_dead_time_s: {dead}\n"
    );
    std::fs::write(&file, text).expect("sim_car.yaml");
    file
}

#[test]
fn the_identification_drive_measures_a_steering_motor_the_suite_was_not_told() {
    let _ros = ros();
    let dir = scratch_dir("actuator");
    let (collected, out, drive_s) = collect_on_sim("actuator", &sim_car(&dir), &dir, DRIVE);
    assert!(collected.status.success(), "{}", said(&collected));
    let yaml: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(out.join("actuator.yaml")).unwrap()).unwrap();
    let figure = |node: &str, name: &str| {
        yaml[node][name]
            .as_f64()
            .unwrap_or_else(|| panic!("{node}/{name} in {yaml:?}"))
    };
    let (rate, lag, dead) = (
        figure("pacmod_bridge", "steering_rate_rad_s"),
        figure("pacmod_bridge", "steering_lag_s"),
        figure("pacmod_bridge", "steering_dead_time_s"),
    );
    println!(
        "collect {drive_s:.0} s wall; identified rate {rate:.3} rad/s, lag {lag:.3} s, dead time {dead:.3} s (truth {TRUTH:?})"
    );
    assert!(
        (rate - TRUTH.0).abs() <= 0.1 * TRUTH.0,
        "{}",
        said(&collected)
    );
    assert!((lag - TRUTH.1).abs() <= 0.05, "{}", said(&collected));
    assert!((dead - TRUTH.2).abs() <= 0.05, "{}", said(&collected));
    // The controller and the simulated car are given the same figures.
    assert_eq!(
        figure("controller", "pacmod_steering_wheel_rate_rad_s"),
        rate
    );
    assert_eq!(figure("gem_sim", "pacmod_steering_dead_time_s"), dead);
    let report = std::fs::read_to_string(out.join("actuator_report.md")).unwrap();
    assert!(report.contains("| top rate left"), "{report}");
    let svg = std::fs::read_to_string(out.join("actuator_steps.svg")).unwrap();
    assert!(svg.starts_with("<svg"));
}

#[test]
fn a_bag_without_the_pacmod_topics_is_refused_naming_them_and_nothing_is_written() {
    let (_ros, dir, bag) = recording("actuator_bad", "no_pacmod.bag");
    finish(start_recording(&bag, None, Some("1"), &["/rosout"]));
    let out_dir = dir.join("x");
    let out = gemctl_output(
        &[
            "calibrate",
            "actuator",
            bag.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    assert!(!out.status.success(), "{}", said(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no /pacmod/as_rx/steer_cmd, /pacmod/parsed_tx/steer_rpt"),
        "{}",
        said(&out)
    );
    assert!(!out_dir.join("actuator.yaml").exists());
}
