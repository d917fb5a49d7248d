//! The steering relation measured on `platform:=gem_e2_sim` with a simulated car that does
//! not steer as the shipped relation says (`sim_car:=`: a slower ratio, less curvature,
//! 1° to the left with the steering wheel centred): `gemctl calibrate steering --collect`
//! drives the circles through `pacmod_bridge`, records them and fits them, and the
//! relation it writes is compared with the simulated car's, which it never sees. Then the
//! bad input: a bag without the steering report and the INS solution.

use gem_core::pacmod::steering::SteeringRelation;
use gem_e2e::bags::{
    collect_on_sim, finish, gemctl_output, recording, said, scratch_dir, start_recording,
};
use gem_testbed::ros;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Bound of the whole collecting drive (wall time; about 265 simulated seconds at the
/// demo's speed-up of 5).
const DRIVE: Duration = Duration::from_secs(400);

/// The simulated car's steering.
const TRUTH: SteeringRelation = SteeringRelation {
    quadratic_deg: -0.09,
    linear: 19.8,
    offset_deg: 1.0,
};

/// A rosparam file of gem_sim's parameters: the car's true steering.
fn sim_car(dir: &Path) -> PathBuf {
    let file = dir.join("sim_car.yaml");
    let text = format!(
        "pacmod_steering_quadratic_deg: {}\npacmod_steering_linear: {}\npacmod_steering_offset_deg: {}\n",
        TRUTH.quadratic_deg, TRUTH.linear, TRUTH.offset_deg
    );
    std::fs::write(&file, text).expect("sim_car.yaml");
    file
}

/// The `key: value` pairs under `node:` in the written YAML.
fn yaml_section(yaml: &str, node: &str) -> BTreeMap<String, f64> {
    yaml.lines()
        .skip_while(|l| *l != format!("{node}:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| {
            let (k, v) = l.trim().split_once(": ")?;
            Some((k.to_owned(), v.parse().ok()?))
        })
        .collect()
}

#[test]
fn the_steering_relation_collected_and_fitted_matches_a_car_it_was_not_told() {
    let _ros = ros();
    let dir = scratch_dir("steering");
    let (collected, out, drive_s) = collect_on_sim("steering", &sim_car(&dir), &dir, DRIVE);
    assert!(collected.status.success(), "{}", said(&collected));
    assert!(
        std::fs::read_dir(&out).unwrap().any(|e| e
            .unwrap()
            .path()
            .extension()
            .is_some_and(|x| x == "bag")),
        "the drive's bag is kept"
    );
    let yaml = std::fs::read_to_string(out.join("steering.yaml")).unwrap();
    let bridge = yaml_section(&yaml, "pacmod_bridge");
    let fitted = SteeringRelation {
        quadratic_deg: bridge["steering_quadratic_deg"],
        linear: bridge["steering_linear"],
        offset_deg: bridge["steering_offset_deg"],
    };
    let sim = yaml_section(&yaml, "gem_sim");
    assert_eq!(sim["pacmod_steering_linear"], fitted.linear, "{yaml}");
    assert_eq!(
        sim["pacmod_steering_offset_deg"], fitted.offset_deg,
        "{yaml}"
    );
    // The front-wheel error of a bridge with the fit on the car: each angle commanded
    // within ±25°, against the angle the car's truth steers for the steering wheel sent.
    let error = (-250..=250)
        .map(|i| {
            let f = f64::from(i) * 0.1;
            let sw = fitted.wheel_deg(f - fitted.offset_deg);
            (f - TRUTH.turn_deg(sw) - TRUTH.offset_deg).abs()
        })
        .fold(0.0, f64::max);
    let offset_error = (fitted.offset_deg - TRUTH.offset_deg).abs();
    println!(
        "collect and fit {drive_s:.0} s wall; fitted {fitted:?}; front-wheel error over ±25° {error:.3}°, offset error {offset_error:.3}°"
    );
    assert!(
        error < 0.5 && offset_error < 0.2,
        "{yaml}\n{}",
        said(&collected)
    );
    let report = std::fs::read_to_string(out.join("steering_report.md")).unwrap();
    assert!(report.contains("| settling |"), "{report}");
}

#[test]
fn a_bag_without_the_steering_report_is_refused_naming_it() {
    let (_ros, dir, bag) = recording("steering_bad", "no_steering.bag");
    finish(start_recording(&bag, None, Some("1"), &["/rosout"]));
    let out = dir.join("x");
    let o = gemctl_output(
        &[
            "calibrate",
            "steering",
            bag.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    assert!(!o.status.success(), "{}", said(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no /pacmod/parsed_tx/steer_rpt in")
            && err.contains(
                "record it with `rosbag record /pacmod/parsed_tx/steer_rpt /novatel/inspva`"
            ),
        "{}",
        said(&o)
    );
    assert!(!out.join("steering.yaml").exists());
}
