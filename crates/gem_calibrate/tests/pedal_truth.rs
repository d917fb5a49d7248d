//! The pedal maps fitted from a calibration drive against a simulated car whose maps
//! are not the shipped ones: the bridge starts from the shipped maps (the prior), the
//! simulated PACMod applies the weaker truth, and the drive runs the bridge's
//! calibration runs in core time. The fit never sees the truth.

use gem_calibrate::collect::{pedal_plan, PlanConfig, Start};
use gem_calibrate::pedals::{extract, fit, rms_against, Drive, ExtractConfig, FitConfig};
use gem_core::geometry::Pose;
use gem_core::pacmod::bridge::{Bridge, BridgeConfig, StateName};
use gem_core::pacmod::calibration::Request;
use gem_core::pacmod::longitudinal::{Longitudinal, LongitudinalConfig};
use gem_core::pacmod::pedal_map::{AcceleratorMap, BrakeMap};
use gem_core::pacmod::plant::{Plant, PlantConfig};
use gem_core::pacmod::rig::{Rig, RigConfig};
use gem_core::time::Time;
use gem_core::vehicle::{VehicleModel, VehicleParams};
use std::time::Duration;

const TRUTH_ACCEL: &str = include_str!("data/weaker_accel_map.csv");
const TRUTH_BRAKE: &str = include_str!("data/weaker_brake_map.csv");
const DT: Duration = Duration::from_millis(10);

/// Runs the whole pedal plan on the rig, recording each report as a bag would.
fn collect(plant_cfg: PlantConfig) -> Drive {
    let truth_a: AcceleratorMap = TRUTH_ACCEL.parse().unwrap();
    let truth_b: BrakeMap = TRUTH_BRAKE.parse().unwrap();
    let (prior_a, prior_b) = (AcceleratorMap::default(), BrakeMap::default());
    let l = Longitudinal::new(
        LongitudinalConfig::DEFAULT,
        prior_a.clone(),
        prior_b.clone(),
    );
    let plant = Plant::new(plant_cfg, truth_a, truth_b);
    let mut rig = Rig::new(
        Bridge::new(BridgeConfig::DEFAULT, l),
        plant,
        RigConfig::DEFAULT,
    );
    let mut car = VehicleModel::new(
        VehicleParams::default(),
        Pose::default(),
        Time::from_secs_f64(1.0),
    );
    assert!(rig.engage(&mut car, DT));
    let mut drive = Drive::default();
    let mut seen: Option<Time> = None;
    let mut step = |rig: &mut Rig, car: &mut VehicleModel, drive: &mut Drive| {
        rig.drive(car, DT, 1);
        if let Some((at, r)) = rig.last_report() {
            if seen != Some(at) {
                seen = Some(at);
                let t = at.as_secs_f64();
                drive.speed.push((t, r.speed_mps));
                drive.accelerator.push((t, r.pedal_outputs.0));
                drive.brake.push((t, r.pedal_outputs.1));
                drive.steering_wheel.push((t, r.wheel_rad));
            }
        }
    };
    let plan = pedal_plan(&prior_a.0, &prior_b.0, &PlanConfig::DEFAULT);
    let mut last_run = 0;
    for s in &plan {
        // Wait for the step's start: the previous run ended, or the car at rest.
        for _ in 0..6000 {
            let b = rig.bridge();
            let ended = b
                .calibration_run()
                .is_none_or(|r| r.id != last_run || r.ended.is_some());
            let ready = b.state().name() != StateName::Calibrating;
            if match s.start {
                Start::Chained => ended,
                Start::AtRest => ready,
            } {
                break;
            }
            step(&mut rig, &mut car, &mut drive);
        }
        last_run = rig
            .calibrate(Request::Run(s.request), car.now())
            .expect("the run starts");
    }
    while rig.bridge().state().name() == StateName::Calibrating {
        step(&mut rig, &mut car, &mut drive);
    }
    drive
}

fn check(plant_cfg: PlantConfig, what: &str) {
    let drive = collect(plant_cfg);
    let x = extract(&drive, &ExtractConfig::DEFAULT);
    let truth_a: AcceleratorMap = TRUTH_ACCEL.parse().unwrap();
    let truth_b: BrakeMap = TRUTH_BRAKE.parse().unwrap();
    let fa = fit(
        &AcceleratorMap::default().0,
        &x.samples,
        &FitConfig::DEFAULT,
    )
    .unwrap();
    let fb = fit(&BrakeMap::default().0, &x.samples, &FitConfig::DEFAULT).unwrap();
    let ra = rms_against(&fa, &truth_a.0).unwrap();
    let rb = rms_against(&fb, &truth_b.0).unwrap();
    println!(
        "{what}: {} reports, {} samples, quantum {:?}; accelerator {} cells fitted, RMS vs truth {ra:.3} m/s² (prior {:.3} → fit {:.3} on the samples); brake {} cells fitted, RMS vs truth {rb:.3} m/s² ({:.3} → {:.3})",
        x.reports,
        x.samples.len(),
        x.quantum_mps,
        fa.covered().count(),
        fa.rmse_before,
        fa.rmse_after,
        fb.covered().count(),
        fb.rmse_before,
        fb.rmse_after,
    );
    assert!(ra <= 0.15 && rb <= 0.15, "{what}: {ra} {rb}");
    assert!(
        fa.covered().count() >= 12 && fb.covered().count() >= 15,
        "{what}: coverage"
    );
}

#[test]
fn the_fitted_maps_match_a_truth_the_fit_does_not_know() {
    check(
        PlantConfig {
            speed_sigma_mps: 0.02,
            ..PlantConfig::default()
        },
        "noisy speed",
    );
}

#[test]
fn a_speed_report_in_whole_km_per_h_gives_the_same_maps() {
    check(
        PlantConfig {
            speed_quantum_mps: 1.0 / 3.6,
            ..PlantConfig::default()
        },
        "speed in whole km/h",
    );
}
