//! The steering relation fitted from a drive against a simulated car whose relation is not
//! the shipped one: the bridge steers with the shipped relation, the simulated PACMod's
//! front wheels follow the truth (another curve, and an offset), the car is the dynamic
//! single-track model, and an INS like the simulator's (20 Hz, heading noise, latency)
//! watches it. The car is driven twice: by drive commands, as a person or a controller
//! would, and by the bridge's calibration runs, as `--collect` does. The fit sees only
//! the steering reports and the INS solutions.

use gem_calibrate::collect::Start;
use gem_calibrate::steering::{
    circle_plan, fit, front_wheel_error_deg, samples_from_ins, CirclePlanConfig, FitConfig,
    InsSample, SampleConfig, JUDGED_RANGE_DEG,
};
use gem_core::geometry::Pose;
use gem_core::gnss::pose::{InsPose, InsPoseConfig};
use gem_core::gnss::simulated;
use gem_core::pacmod::bridge::{Bridge, BridgeConfig, StateName};
use gem_core::pacmod::calibration::Request;
use gem_core::pacmod::longitudinal::{Longitudinal, LongitudinalConfig};
use gem_core::pacmod::pedal_map::{AcceleratorMap, BrakeMap};
use gem_core::pacmod::plant::{Plant, PlantConfig};
use gem_core::pacmod::rig::{Rig, RigConfig};
use gem_core::pacmod::steering::SteeringRelation;
use gem_core::time::Time;
use gem_core::vehicle::localization::{LocalizationParams, Localizer};
use gem_core::vehicle::{DriveCommand, VehicleModel, VehicleParams};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Duration;

const DT: Duration = Duration::from_millis(10);

/// The simulated car's truth: a slower steering ratio, less curvature, 1° to the left.
const TRUTH: SteeringRelation = SteeringRelation {
    quadratic_deg: -0.09,
    linear: 19.8,
    offset_deg: 1.0,
};

/// What a bag of the drive holds: the steering reports and the INS solutions.
struct Recorded {
    wheel: Vec<(f64, f64)>,
    ins: Vec<InsSample>,
}

/// The rig in front of the car whose truth is [`TRUTH`], and an INS like the
/// simulator's (`LocalizationParams::INSPVA`: 20 Hz, 0.005 rad of heading noise, 50 ms of
/// latency, stamped with the measurement time) with 0.02 m/s of velocity noise.
struct Bench {
    rig: Rig,
    car: VehicleModel,
    ins_pose: InsPose,
    localizer: Localizer,
    rng: StdRng,
    rec: Recorded,
    last_report: Option<Time>,
    last_solution: Option<Time>,
}

impl Bench {
    fn new() -> Bench {
        let l = Longitudinal::new(
            LongitudinalConfig::DEFAULT,
            AcceleratorMap::default(),
            BrakeMap::default(),
        );
        let plant = Plant::new(
            PlantConfig {
                steering: TRUTH,
                speed_sigma_mps: 0.02,
                wheel_sigma_rad: 0.005,
                ..PlantConfig::DEFAULT
            },
            AcceleratorMap::default(),
            BrakeMap::default(),
        );
        let mut b = Bench {
            rig: Rig::new(
                Bridge::new(BridgeConfig::DEFAULT, l),
                plant,
                RigConfig::DEFAULT,
            ),
            car: VehicleModel::new(
                VehicleParams::DEFAULT,
                Pose::default(),
                Time::from_secs_f64(1.0),
            ),
            ins_pose: InsPose::new(&InsPoseConfig::DEFAULT).unwrap(),
            localizer: Localizer::new(LocalizationParams::INSPVA),
            rng: StdRng::seed_from_u64(11),
            rec: Recorded {
                wheel: Vec::new(),
                ins: Vec::new(),
            },
            last_report: None,
            last_solution: None,
        };
        assert!(b.rig.engage(&mut b.car, DT));
        b
    }

    /// σ 0.02 m/s (Box–Muller): an INS's velocity noise.
    fn velocity_noise(&mut self) -> f64 {
        let u1: f64 = 1.0 - self.rng.gen::<f64>();
        let u2: f64 = self.rng.gen();
        0.02 * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// One step, recording each new steering report and INS solution as a bag would.
    fn step(&mut self) {
        self.rig.drive(&mut self.car, DT, 1);
        if let Some((at, r)) = self.rig.last_report() {
            if self.last_report != Some(at) {
                self.last_report = Some(at);
                self.rec.wheel.push((at.as_secs_f64(), r.wheel_rad));
            }
        }
        self.localizer.observe(self.car.now(), self.car.state());
        let Some(report) = self.localizer.report() else {
            return;
        };
        if self.last_solution == Some(report.measured_at) {
            return;
        }
        self.last_solution = Some(report.measured_at);
        let s = simulated::solution(&self.ins_pose, &report.state).unwrap();
        let (north, east) = (self.velocity_noise(), self.velocity_noise());
        self.rec.ins.push(InsSample {
            t_s: report.measured_at.as_secs_f64(),
            azimuth_deg: s.azimuth_deg,
            north_velocity_mps: s.north_velocity_mps + north,
            east_velocity_mps: s.east_velocity_mps + east,
        });
    }

    /// Drive commands at `front_deg` and `speed` for `secs` (every 50 ms, as a controller).
    fn hold(&mut self, front_deg: f64, speed: f64, secs: f64) {
        let cmd = DriveCommand {
            steering_rad: front_deg.to_radians(),
            speed_mps: speed,
            accel_limit_mps2: 0.5,
        };
        for i in 0..(secs / DT.as_secs_f64()).round() as u64 {
            if i % 5 == 0 {
                self.rig.command(cmd, self.car.now());
            }
            self.step();
        }
    }
}

/// Driven by commands: between straight stretches at 3 m/s, circles at 1.5 m/s with the
/// front-wheel angles commanded through the shipped relation (the car steers others: its
/// truth).
fn commanded_drive() -> Recorded {
    let mut b = Bench::new();
    for f in [
        -28.0, -22.0, -16.0, -10.0, -5.0, 5.0, 10.0, 16.0, 22.0, 28.0,
    ] {
        b.hold(0.0, 3.0, 12.0);
        b.hold(f, 1.5, 25.0);
    }
    b.hold(0.0, 3.0, 12.0);
    b.rec
}

/// Driven as `gemctl calibrate steering --collect` drives: the bridge's calibration runs
/// of [`circle_plan`], one after the other.
fn collected_drive() -> Recorded {
    let mut b = Bench::new();
    let plan = circle_plan(&SteeringRelation::GEM_E2, &CirclePlanConfig::default());
    let mut last = None;
    for s in &plan {
        // Chained: when the last run ended; from rest: the bridge ready.
        for _ in 0..6000 {
            let bridge = b.rig.bridge();
            let ended = bridge
                .calibration_run()
                .is_none_or(|r| Some(r.id) != last || r.ended.is_some());
            let ready = bridge.state().name() != StateName::Calibrating;
            if match s.start {
                Start::Chained => ended,
                Start::AtRest => ready,
            } {
                break;
            }
            b.step();
        }
        let id = b.rig.calibrate(Request::Run(s.request), b.car.now());
        last = Some(id.expect("the run starts"));
    }
    while b.rig.bridge().state().name() == StateName::Calibrating {
        b.step();
    }
    b.rec
}

/// Fits the drive, prints the figures, checks them.
fn check(what: &str, rec: &Recorded) {
    let samples = samples_from_ins(&rec.wheel, &rec.ins, &SampleConfig::DEFAULT);
    let fitted = fit(&samples, &FitConfig::DEFAULT).unwrap();
    let r = fitted.relation;
    let error = front_wheel_error_deg(&TRUTH, &r, JUDGED_RANGE_DEG);
    let offset_error = (r.offset_deg - TRUTH.offset_deg).abs();
    let shipped = front_wheel_error_deg(&TRUTH, &SteeringRelation::GEM_E2, JUDGED_RANGE_DEG);
    println!("{what}:");
    println!(
        "  truth: quadratic {:.4}, linear {:.3}, offset {:.2}°",
        TRUTH.quadratic_deg, TRUTH.linear, TRUTH.offset_deg
    );
    println!(
        "  fit:   quadratic {:.4}, linear {:.3}, offset {:.3}°",
        r.quadratic_deg, r.linear, r.offset_deg
    );
    println!(
        "  {} samples, {} used; residual RMS {:.3}°",
        fitted.total, fitted.used, fitted.residual_rms_deg
    );
    println!(
        "  front-wheel error over ±{JUDGED_RANGE_DEG}°: {error:.3}° (the shipped relation: {shipped:.3}°); offset error {offset_error:.3}°"
    );
    assert!(error < 0.5, "{what}: front-wheel error {error:.3}°");
    assert!(
        offset_error < 0.2,
        "{what}: offset error {offset_error:.3}°"
    );
    assert!(
        shipped > 1.0,
        "the truth must differ from the shipped relation"
    );
}

#[test]
fn the_fit_recovers_a_truth_it_does_not_know_from_commanded_circles() {
    check("commanded circles", &commanded_drive());
}

#[test]
fn the_fit_recovers_a_truth_it_does_not_know_from_the_collected_circles() {
    check("calibration runs (--collect)", &collected_drive());
}
