//! Day one on the car, on `platform:=gem_e2_sim` with a simulated car that is not the
//! shipped one (`sim_car:=`: pedal maps about 30 % weaker with wider dead zones,
//! `crates/gem_calibrate/tests/data`): `gemctl calibrate pedals --collect` drives the
//! calibration runs through `pacmod_bridge` and records a bag with `rosbag record`,
//! `gemctl calibrate pedals BAG` fits the maps, and the fitted cells are compared with the
//! simulated car's truth, which neither command sees. Then the bad inputs: a bag without
//! the PACMod topics, a drive with no bridge to drive, and a driver override mid-drive,
//! which stops it and keeps the bag.

use gem_core::pacmod::pedal_map::{AcceleratorMap, BrakeMap, PedalMap};
use gem_e2e::bags::{
    collect_on_sim, finish, gemctl_output, recording, said, scratch_dir, start_recording,
};
use gem_e2e::platform::{launch_with, stop};
use gem_msgs::diagnostic_msgs::DiagnosticArray;
use gem_testbed::{cli, cli_background, node_binary, repo_root, ros, wait_until, Collector};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Bound of a whole collecting drive (wall time, at the demo's speed-up of 5: about a
/// minute).
const DRIVE: Duration = Duration::from_secs(400);

fn data(file: &str) -> PathBuf {
    repo_root()
        .join("crates/gem_calibrate/tests/data")
        .join(file)
}

/// A rosparam file of gem_sim's parameters: the weaker pedal maps.
fn sim_car(dir: &Path) -> PathBuf {
    let file = dir.join("sim_car.yaml");
    let text = format!(
        "pacmod_accelerator_map_file: {}\npacmod_brake_map_file: {}\n",
        data("weaker_accel_map.csv").display(),
        data("weaker_brake_map.csv").display()
    );
    std::fs::write(&file, text).expect("sim_car.yaml");
    file
}

/// The cells of `map`'s table in `report` that were fitted to data: (pedal, speed).
fn fitted_cells(report: &str, map: &str) -> Vec<(f64, f64)> {
    report
        .lines()
        .skip_while(|l| !l.starts_with(&format!("## The {map} map")))
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with("| ") && l.ends_with("| data |"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].parse().unwrap(), cells[2].parse().unwrap())
        })
        .collect()
}

/// RMS of `fitted` against `truth` over `cells`, m/s².
fn rms(fitted: &PedalMap, truth: &PedalMap, cells: &[(f64, f64)]) -> f64 {
    let sum: f64 = cells
        .iter()
        .map(|&(p, v)| (fitted.acceleration(v, p) - truth.acceleration(v, p)).powi(2))
        .sum();
    (sum / cells.len() as f64).sqrt()
}

#[test]
fn pedal_maps_fitted_from_a_collected_drive_match_a_car_they_were_not_told() {
    let _ros = ros();
    let dir = scratch_dir("pedals");
    let (collected, out, drive_s) = collect_on_sim("pedals", &sim_car(&dir), &dir, DRIVE);
    assert!(collected.status.success(), "{}", said(&collected));
    let bag = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "bag"))
        .unwrap_or_else(|| panic!("no bag in {}: {}", out.display(), said(&collected)));
    let fit = gemctl_output(
        &[
            "calibrate",
            "pedals",
            bag.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert!(fit.status.success(), "{}", said(&fit));
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let read = |f: &str| std::fs::read_to_string(out.join(f)).unwrap();
    let fitted_a = read("accelerator_map.csv")
        .parse::<AcceleratorMap>()
        .unwrap()
        .0;
    let fitted_b = read("brake_map.csv").parse::<BrakeMap>().unwrap().0;
    let truth_a = std::fs::read_to_string(data("weaker_accel_map.csv"))
        .unwrap()
        .parse::<AcceleratorMap>()
        .unwrap()
        .0;
    let truth_b = std::fs::read_to_string(data("weaker_brake_map.csv"))
        .unwrap()
        .parse::<BrakeMap>()
        .unwrap()
        .0;
    let (cells_a, cells_b) = (
        fitted_cells(&report, "accelerator"),
        fitted_cells(&report, "brake"),
    );
    let (rms_a, rms_b) = (
        rms(&fitted_a, &truth_a, &cells_a),
        rms(&fitted_b, &truth_b, &cells_b),
    );
    let shipped_a = rms(&AcceleratorMap::default().0, &truth_a, &cells_a);
    let shipped_b = rms(&BrakeMap::default().0, &truth_b, &cells_b);
    println!(
        "collect {drive_s:.0} s wall; accelerator: {} cells fitted, RMS vs the simulated car {rms_a:.3} m/s² (shipped map {shipped_a:.3}); brake: {} cells, {rms_b:.3} m/s² (shipped {shipped_b:.3})",
        cells_a.len(),
        cells_b.len()
    );
    assert!(cells_a.len() >= 10 && cells_b.len() >= 12, "{report}");
    assert!(rms_a <= 0.15 && rms_b <= 0.15, "{report}");
    for svg in ["accelerator_map.svg", "brake_map.svg"] {
        assert!(read(svg).starts_with("<svg"), "{svg}");
    }
}

#[test]
fn a_bag_without_the_pacmod_topics_is_refused_naming_them() {
    let (_ros, dir, bag) = recording("pedals_bad", "no_pacmod.bag");
    finish(start_recording(&bag, None, Some("1"), &["/rosout"]));
    let out = gemctl_output(
        &[
            "calibrate",
            "pedals",
            bag.to_str().unwrap(),
            "--out",
            dir.join("x").to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{}", said(&out));
    assert!(
        err.contains("has no /pacmod/as_tx/vehicle_speed (std_msgs/Float64, m/s)"),
        "{}",
        said(&out)
    );
    assert!(!dir.join("x").join("accelerator_map.csv").exists());
}

#[test]
fn a_collecting_drive_without_a_bridge_says_so_and_drives_nothing() {
    let _ros = ros();
    let dir = scratch_dir("pedals_nobridge");
    let out = gemctl_output(
        &[
            "calibrate",
            "pedals",
            "--collect",
            "--timeout",
            "2",
            "--out",
            dir.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    assert!(!out.status.success(), "{}", said(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is pacmod_bridge running"), "{}", said(&out));
    assert!(
        std::fs::read_dir(&dir).unwrap().next().is_none(),
        "nothing recorded"
    );
}

#[test]
fn a_driver_override_stops_the_collecting_drive_and_keeps_the_bag() {
    let _ros = ros();
    let dir = scratch_dir("pedals_override");
    let suite = launch_with("gem_e2_sim", "", &[]);
    let status = Collector::<DiagnosticArray>::new("/diagnostics");
    let out = dir.join("drive");
    let bin = node_binary("gemctl");
    let mut drive = cli_background(
        bin.to_str().unwrap(),
        &[
            "calibrate",
            "pedals",
            "--collect",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let state = || {
        status.last().and_then(|m| {
            m.status
                .into_iter()
                .find(|s| s.name.ends_with("pacmod_bridge: PACMod"))
                .and_then(|s| s.values.into_iter().find(|kv| kv.key == "state"))
                .map(|kv| kv.value)
        })
    };
    assert!(
        wait_until(Duration::from_secs(60), || state().as_deref()
            == Some("CALIBRATING")),
        "no run started: {}",
        drive.output()
    );
    cli(
        "rostopic",
        &[
            "pub",
            "-1",
            "/gem_sim/pacmod_override",
            "std_msgs/Bool",
            "data: true",
        ],
        Duration::from_secs(30),
    );
    let ended = drive.wait(Duration::from_secs(60)).expect("gemctl ends");
    let said = drive.output();
    stop(suite);
    assert!(!ended.success(), "{said}");
    // The override reaches the drive two ways: the bridge's status (DISENGAGED) and the
    // state manager's ERROR with the e-stop bit (the bridge's `vehicle/fault`); the first
    // to arrive is named.
    assert!(
        said.contains("calibration drive stopped: the bridge is DISENGAGED")
            || said.contains("calibration drive stopped: the state manager reports ERROR (ESTOP)"),
        "{said}"
    );
    let bags: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(
        bags.len() == 1 && bags[0].extension().is_some_and(|e| e == "bag"),
        "{bags:?}"
    );
}
