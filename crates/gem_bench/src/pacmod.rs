//! `pacmod`: the PACMod path on the vehicle model, without ROS, through the same core as
//! the nodes ([`gem_core::pacmod::rig`]: the bridge's engagement, pedal loop, steering
//! relation and watchdog in front of the simulated PACMod, the pedal maps used forward).
//!
//! - **The pedal loop**: the bridge on a straight road (steering 0), commands at the
//!   controllers' 20 Hz, through speed steps, two stops from 5.5 m/s and two ramps. Per
//!   case, from the moment the command starts to change ([`response`] defines each figure):
//!   RMS and largest speed error, overshoot, rise and settling time, the mean acceleration
//!   of the rise, the peak pedals, and the checks that found both pedals pressed. Once with
//!   the reports exact (the simulator's defaults), once with noise and latency.
//! - **The lap**: the GEM track, from the spawn pose and from on the path, with each law
//!   at 2.8 and 5.5 m/s on the simulator's tyre-slip model, the pose from a GNSS/INS-like source, the
//!   controllers with their defaults; once with the commands handed to the model
//!   (`gem/ackermann_cmd`), once through the bridge and the plant. The cross-track figures
//!   of `track`, the PACMod lap's RMS over the Ackermann lap's against the target
//!   ([`LAP_RATIO_TARGET`]), and the pedal loop's speed tracking during the lap.
//!
//! Deterministic model runs (seeded noise): one run per row, the same figures on every
//! machine.

use crate::track::{
    self, Actuators, Case, Controller, RunResult, Scenario, CONTROL_EVERY, PHYSICS_DT,
    SOURCE_SPEEDS,
};
use gem_core::control::closed_loop::{rms, CONVERGED_M};
use gem_core::geometry::Pose;
use gem_core::pacmod::bridge::{Bridge, BridgeConfig, StateName};
use gem_core::pacmod::longitudinal::{Longitudinal, LongitudinalConfig};
use gem_core::pacmod::pedal_map::{AcceleratorMap, BrakeMap};
use gem_core::pacmod::plant::{Plant, PlantConfig};
use gem_core::pacmod::rig::{PedalRecord, Rig, RigConfig};
use gem_core::time::Time;
use gem_core::vehicle::actuator::SteeringActuator;
use gem_core::vehicle::localization::LocalizationParams;
use gem_core::vehicle::{DriveCommand, VehicleModel, VehicleParams};
use std::time::Duration;

/// Time at the starting speed before a change, s: long enough to be steady at 5.5 m/s.
const LEAD_S: f64 = 40.0;
/// Time measured after the command has finished changing, s.
const WINDOW_S: f64 = 30.0;
/// The settling band: this share of the change, but at least [`SETTLE_FLOOR_MPS`].
const SETTLE_SHARE: f64 = 0.02;
/// The settling band's floor, m/s.
const SETTLE_FLOOR_MPS: f64 = 0.05;
/// The most the PACMod lap's RMS cross-track after convergence may be, as a multiple of
/// the Ackermann lap's.
pub const LAP_RATIO_TARGET: f64 = 1.5;
/// How close to the cruise speed a lap is up to speed, m/s.
pub const CRUISING_WITHIN_MPS: f64 = 0.1;

/// The pose the controllers see: a GNSS/INS (its antenna offset removed, as `gnss_pose`
/// does: the rear axle's pose and velocity) at 20 Hz, measured 0.05 s before it is
/// served, with 3 cm and 0.005 rad of noise.
pub const INS: LocalizationParams = LocalizationParams {
    latency_s: 0.05,
    ..LocalizationParams::GNSS_INS
};

/// One case of the pedal loop: the command goes from `from_mps` to `to_mps`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpeedCase {
    /// The name in the table.
    pub name: &'static str,
    /// Speed commanded before the change, m/s.
    pub from_mps: f64,
    /// Speed commanded after it, m/s.
    pub to_mps: f64,
    /// How fast the command ramps, m/s² (0: a step).
    pub ramp_mps2: f64,
    /// The command's `acceleration` (a magnitude, 0: none).
    pub accel_limit_mps2: f64,
}

impl SpeedCase {
    /// The command `t_s` after the change began.
    fn command_at(&self, t_s: f64) -> f64 {
        if self.ramp_mps2 <= 0.0 || t_s >= self.change_s() {
            return self.to_mps;
        }
        let step = self.ramp_mps2 * t_s.max(0.0);
        if self.to_mps > self.from_mps {
            self.from_mps + step
        } else {
            self.from_mps - step
        }
    }

    /// How long the command takes to change, s (0: a step).
    fn change_s(&self) -> f64 {
        if self.ramp_mps2 > 0.0 {
            (self.to_mps - self.from_mps).abs() / self.ramp_mps2
        } else {
            0.0
        }
    }
}

/// The cases of the pedal loop.
pub const SPEED_CASES: [SpeedCase; 7] = [
    step("step 0 → 2.8", 0.0, 2.8, 0.0),
    step("step 2.8 → 5.5", 2.8, 5.5, 0.0),
    step("step 5.5 → 2.8", 5.5, 2.8, 0.0),
    step("stop 5.5, accel 1.0", 5.5, 0.0, 1.0),
    step("stop 5.5, no accel", 5.5, 0.0, 0.0),
    ramp("ramp 0 → 5.5 @0.5", 0.0, 5.5),
    ramp("ramp 5.5 → 1 @0.5", 5.5, 1.0),
];

const fn step(name: &'static str, from_mps: f64, to_mps: f64, accel: f64) -> SpeedCase {
    SpeedCase {
        name,
        from_mps,
        to_mps,
        ramp_mps2: 0.0,
        accel_limit_mps2: accel,
    }
}

const fn ramp(name: &'static str, from_mps: f64, to_mps: f64) -> SpeedCase {
    SpeedCase {
        name,
        from_mps,
        to_mps,
        ramp_mps2: 0.5,
        accel_limit_mps2: 0.0,
    }
}

/// One sample of a response.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Time from the start of the change, s.
    pub t_s: f64,
    /// The speed commanded last (the command in force), m/s.
    pub cmd_mps: f64,
    /// The car's speed, m/s.
    pub speed_mps: f64,
}

/// The figures of one response (see [`response`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Response {
    /// RMS of the speed error, m/s.
    pub rms_mps: f64,
    /// Largest |speed error|, m/s.
    pub max_abs_mps: f64,
    /// How far the speed went beyond the final command, m/s.
    pub overshoot_mps: f64,
    /// Time from 10 % to 90 % of the change, s (None: never reached).
    pub rise_s: Option<f64>,
    /// Time from the end of the command's change until the speed stays within the band,
    /// s (None: outside it at the end of the window).
    pub settle_s: Option<f64>,
    /// The mean acceleration of the rise, 80 % of the change over the rise time, m/s².
    pub rise_accel_mps2: Option<f64>,
}

/// The figures of `samples`, a response from `from_mps` to `to_mps` whose command stops
/// changing `change_s` after the first sample's time 0:
///
/// - the speed error is the command in force less the speed, over every sample;
/// - overshoot: how far the speed went beyond `to_mps` in the direction of the change;
/// - rise time: from the first sample that covered 10 % of the change to the first that
///   covered 90 %;
/// - settling time: from `change_s` to the first sample from which the speed stays within
///   2 % of the change of `to_mps` (at least 0.05 m/s), 0 if it never left the band after
///   `change_s`.
pub fn response(samples: &[Sample], from_mps: f64, to_mps: f64, change_s: f64) -> Response {
    let delta = to_mps - from_mps;
    let errors: Vec<f64> = samples.iter().map(|s| s.cmd_mps - s.speed_mps).collect();
    let covered = |s: &Sample| {
        if delta == 0.0 {
            f64::NAN
        } else {
            (s.speed_mps - from_mps) / delta
        }
    };
    let first = |share: f64| samples.iter().find(|s| covered(s) >= share).map(|s| s.t_s);
    let rise_s = first(0.1).zip(first(0.9)).map(|(a, b)| b - a);
    let band = (SETTLE_SHARE * delta.abs()).max(SETTLE_FLOOR_MPS);
    let last_out = samples
        .iter()
        .rposition(|s| (s.speed_mps - to_mps).abs() > band);
    let settle_s = match last_out {
        None => Some(0.0),
        Some(i) if i + 1 == samples.len() => None,
        Some(i) => Some((samples[i + 1].t_s - change_s).max(0.0)),
    };
    let beyond = samples
        .iter()
        .map(|s| (s.speed_mps - to_mps) * delta.signum())
        .fold(0.0, f64::max);
    Response {
        rms_mps: rms(&errors),
        max_abs_mps: errors.iter().map(|e| e.abs()).fold(f64::NAN, f64::max),
        overshoot_mps: if delta == 0.0 { 0.0 } else { beyond },
        rise_accel_mps2: rise_s.filter(|r| *r > 0.0).map(|r| 0.8 * delta / r),
        rise_s,
        settle_s,
    }
}

/// How the simulated PACMod reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reports {
    /// Speed report noise σ, m/s.
    pub speed_sigma_mps: f64,
    /// Report latency.
    pub latency: Duration,
}

impl Reports {
    /// The simulator's defaults: exact, at once.
    pub const EXACT: Reports = Reports {
        speed_sigma_mps: PlantConfig::DEFAULT.speed_sigma_mps,
        latency: PlantConfig::DEFAULT.latency,
    };

    /// The words of a table's title.
    fn label(&self) -> String {
        if *self == Reports::EXACT {
            "exact (the simulator's defaults)".into()
        } else {
            format!(
                "speed noise σ {} m/s, {:.0} ms late",
                self.speed_sigma_mps,
                self.latency.as_secs_f64() * 1e3
            )
        }
    }
}

/// What the bench varies of the PACMod path; everything else is the nodes' defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The bridge's speed loop.
    pub longitudinal: LongitudinalConfig,
    /// The steering-wheel rate limit the bridge sends, rad/s (the plant's actuator is
    /// raised to it when it is faster than the actuator's default).
    pub steering_rate_rad_s: f64,
    /// The reports of the second pedal-loop table.
    pub noisy: Reports,
}

impl Settings {
    /// The bridge and the plant as the nodes start them by default.
    pub fn defaults() -> Self {
        Settings {
            longitudinal: LongitudinalConfig::DEFAULT,
            steering_rate_rad_s: BridgeConfig::DEFAULT.steering_rate_rad_s,
            noisy: Reports::EXACT,
        }
    }

    fn bridge(&self) -> BridgeConfig {
        BridgeConfig {
            steering_rate_rad_s: self.steering_rate_rad_s,
            ..BridgeConfig::DEFAULT
        }
    }

    /// The simulated PACMod.
    pub fn plant(&self, reports: Reports) -> PlantConfig {
        PlantConfig {
            max_wheel_rate_rad_s: PlantConfig::DEFAULT
                .max_wheel_rate_rad_s
                .max(self.steering_rate_rad_s),
            speed_sigma_mps: reports.speed_sigma_mps,
            latency: reports.latency,
            ..PlantConfig::DEFAULT
        }
    }

    /// Checks every value; the error names it.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.longitudinal.validate()?;
        self.bridge().validate()?;
        self.plant(self.noisy).validate()?;
        Ok(())
    }

    /// The bridge in front of the plant, reporting as `reports` says; both with the
    /// placeholder maps.
    pub fn rig(&self, reports: Reports) -> Rig {
        rig_of(
            self.longitudinal.clone(),
            self.bridge(),
            self.plant(reports),
        )
    }
}

/// The bridge of `bridge` with the speed loop `longitudinal` in front of the plant of
/// `plant`, at the nodes' rates ([`RigConfig::DEFAULT`]); both with the placeholder maps.
pub fn rig_of(longitudinal: LongitudinalConfig, bridge: BridgeConfig, plant: PlantConfig) -> Rig {
    let l = Longitudinal::new(longitudinal, AcceleratorMap::default(), BrakeMap::default());
    let plant = Plant::new(plant, AcceleratorMap::default(), BrakeMap::default());
    Rig::new(Bridge::new(bridge, l), plant, RigConfig::DEFAULT)
}

/// The figures of one case of the pedal loop.
#[derive(Clone, Debug)]
pub struct CaseResult {
    pub case: SpeedCase,
    pub response: Response,
    /// The pedals from the change on.
    pub pedals: PedalRecord,
    /// Checks over the whole case (the lead included) that found both pedals pressed.
    pub both_pressed: u64,
    /// Checks over the whole case.
    pub checks: u64,
    /// The bridge's state at the end.
    pub state: StateName,
}

/// Drives `case`: engaged, [`LEAD_S`] at the starting speed, then the change and
/// [`WINDOW_S`] after it.
pub fn run_case(case: SpeedCase, settings: &Settings, reports: Reports) -> CaseResult {
    let mut rig = settings.rig(reports);
    let mut car = VehicleModel::new(
        VehicleParams::DEFAULT,
        Pose::default(),
        Time::from_secs_f64(1.0),
    );
    rig.engage(&mut car, PHYSICS_DT);
    let command = |speed_mps: f64| DriveCommand {
        steering_rad: 0.0,
        speed_mps,
        accel_limit_mps2: case.accel_limit_mps2,
    };
    let steps = |s: f64| (s / PHYSICS_DT.as_secs_f64()).round() as usize;
    if case.from_mps > 0.0 {
        for _ in 0..steps(LEAD_S) / CONTROL_EVERY {
            rig.command(command(case.from_mps), car.now());
            rig.drive(&mut car, PHYSICS_DT, CONTROL_EVERY);
        }
    }
    let lead = rig.take_record();
    let change_s = case.change_s();
    let mut samples = Vec::new();
    let mut cmd = case.from_mps;
    for i in 0..steps(change_s + WINDOW_S) {
        let t_s = i as f64 * PHYSICS_DT.as_secs_f64();
        if i % CONTROL_EVERY == 0 {
            cmd = case.command_at(t_s);
            rig.command(command(cmd), car.now());
        }
        rig.drive(&mut car, PHYSICS_DT, 1);
        samples.push(Sample {
            t_s,
            cmd_mps: cmd,
            speed_mps: car.state().speed_mps,
        });
    }
    let pedals = rig.take_record();
    CaseResult {
        case,
        response: response(&samples, case.from_mps, case.to_mps, change_s),
        both_pressed: lead.both_pressed + pedals.both_pressed,
        checks: lead.checks + pedals.checks,
        pedals,
        state: rig.bridge().state().name(),
    }
}

/// Every case with `reports`; prints the table.
pub fn run_speed_cases(settings: &Settings, reports: Reports) -> Vec<CaseResult> {
    println!(
        "pedal loop: the bridge (ticks at 30 Hz, commands at 20 Hz) → simulated PACMod (placeholder maps) → single-track model, straight road; reports {}:",
        reports.label()
    );
    println!(
        "{:<20} | {:>7} {:>7} | {:>14} | {:>6} {:>8} {:>9} | {:>8} {:>8} | {:>9}",
        "case",
        "rms m/s",
        "max|e|",
        "overshoot",
        "rise s",
        "settle s",
        "a rise",
        "peak acc",
        "peak brk",
        "both"
    );
    let results: Vec<CaseResult> = SPEED_CASES
        .iter()
        .map(|c| run_case(*c, settings, reports))
        .collect();
    for r in &results {
        print_case(r);
    }
    let (both, checks) = results
        .iter()
        .fold((0, 0), |(b, c), r| (b + r.both_pressed, c + r.checks));
    println!("accelerator and brake pressed together: {both} of {checks} checks");
    results
}

fn print_case(r: &CaseResult) {
    let x = &r.response;
    let delta = (r.case.to_mps - r.case.from_mps).abs();
    let opt = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
    println!(
        "{:<20} | {:>7.3} {:>7.3} | {:>5.3} ({:>4.1} %) | {:>6} {:>8} {:>9} | {:>8.3} {:>8.3} | {:>9}",
        r.case.name,
        x.rms_mps,
        x.max_abs_mps,
        x.overshoot_mps,
        100.0 * x.overshoot_mps / delta,
        opt(x.rise_s, 2),
        opt(x.settle_s, 2),
        opt(x.rise_accel_mps2, 2),
        r.pedals.peak_accelerator_frac,
        r.pedals.peak_brake_frac,
        if r.state == StateName::Driving {
            r.both_pressed.to_string()
        } else {
            format!("{} {}", r.both_pressed, r.state)
        },
    );
}

/// The laws of the laps: ours and the MPC.
const LAP_LAWS: [Controller; 4] = [
    Controller::PurePursuit,
    Controller::Stanley,
    Controller::Lqr,
    Controller::Mpc,
];

/// One law at one speed through both command paths.
pub struct LapRow {
    pub ackermann: RunResult,
    pub pacmod: RunResult,
    /// The PACMod lap's RMS after convergence over the Ackermann lap's.
    pub ratio: f64,
    /// The PACMod lap's pedals.
    pub pedals: PedalRecord,
    /// The bridge's state at the end of the PACMod lap.
    pub state: StateName,
}

/// The lap of `controller` at `speed` (cruise, lateral acceleration limit).
pub fn lap_case(controller: Controller, speed: (f64, f64)) -> Case {
    Case {
        controller,
        speed_mps: speed.0,
        lateral_accel_mps2: speed.1,
        actuators: Actuators::Launched,
        chassis: VehicleParams::DEFAULT.chassis,
        localization: INS,
        twist_reference_x_m: 0.0,
        actuator: SteeringActuator::FAST,
    }
}

/// The PACMod lap of `case`: its controller told the car's steering (the bridge's rate
/// through the steering relation, the plant's lag and dead time), as the car platforms
/// launch it.
pub fn pacmod_case(case: &Case, settings: &Settings) -> Case {
    let plant = settings.plant(Reports::EXACT);
    Case {
        actuator: SteeringActuator {
            lag_s: plant.steering_lag_s,
            dead_time_s: plant.steering_dead_time_s,
            ..SteeringActuator::GEM_E2
        }
        .with_steering_wheel_rate(settings.steering_rate_rad_s),
        ..case.clone()
    }
}

/// Both laps of `case` on `sc`; the error when the controller refuses the car's steering.
pub fn lap_row(sc: &Scenario, case: &Case, settings: &Settings) -> Result<LapRow, String> {
    let car = pacmod_case(case, settings);
    track::tracker_config(
        car.controller,
        car.speed_mps,
        car.lateral_accel_mps2,
        car.actuators,
    )
    .with_actuator(car.actuator)
    .validate()
    .map_err(|e| e.to_string())?;
    let ackermann = track::run(sc, case);
    let mut rig = settings.rig(Reports::EXACT);
    let pacmod = track::run_through(sc, &car, &mut rig);
    Ok(LapRow {
        ratio: pacmod.stats.rms_after_m / ackermann.stats.rms_after_m,
        ackermann,
        pacmod,
        pedals: rig.take_record(),
        state: rig.bridge().state().name(),
    })
}

/// Speed tracking of a lap once up to speed (from the first control step within
/// [`CRUISING_WITHIN_MPS`] of the cruise speed): RMS and largest |error| of the speed
/// against the command in force, m/s (NaN: never up to speed).
pub fn speed_tracking(r: &RunResult) -> (f64, f64) {
    let errors: Vec<f64> = r
        .speeds
        .iter()
        .skip_while(|(_, v)| *v < r.speed_mps - CRUISING_WITHIN_MPS)
        .map(|(cmd, v)| cmd - v)
        .collect();
    (
        rms(&errors),
        errors.iter().map(|e| e.abs()).fold(f64::NAN, f64::max),
    )
}

/// "yes@i", or why the lap did not complete.
fn completed(r: &RunResult) -> String {
    match r.done_index {
        Some(i) if i == r.last_index => format!("yes@{i}"),
        Some(i) => format!("FALSE@{i}"),
        None => "no".into(),
    }
}

/// Every law at both speeds on each of `scenarios`; prints the table.
pub fn run_laps(scenarios: &[&Scenario], settings: &Settings) -> Vec<LapRow> {
    println!(
        "laps of the GEM track on the simulator's tyre-slip model, pose from a GNSS/INS (20 Hz, {:.2} s late, σ {} m / {} rad), the controllers' defaults, PACMod reports {}, steering wheel at {} rad/s; only the command path differs (convergence within {CONVERGED_M} m):",
        INS.latency_s,
        INS.position_sigma_m,
        INS.yaw_sigma_rad,
        Reports::EXACT.label(),
        settings.steering_rate_rad_s
    );
    println!(
        "{:<19} {:<13} {:>4} {:<10}| {:>6} {:>7} {:>7} {:>7} {:>7} | {:>6} {:>7} | {:>5} | {:>9} {:>7} | {:>8} {:>8} {:>4} | target",
        "scenario", "controller", "v", "path", "conv m", "rms ≥c", "p95 ≥c", "max ≥c", "max≥40m", "lap s", "done",
        "×ack", "speed rms", "max|e|", "peak acc", "peak brk", "both"
    );
    let mut rows = Vec::new();
    for sc in scenarios {
        for speed in SOURCE_SPEEDS {
            for controller in LAP_LAWS {
                match lap_row(sc, &lap_case(controller, speed), settings) {
                    Ok(row) => {
                        print_lap(&row);
                        rows.push(row);
                    }
                    Err(e) => println!(
                        "{:<19} {:<13} {:>4.1} refused on the PACMod's steering: {e}",
                        sc.name,
                        controller.label(),
                        speed.0
                    ),
                }
            }
        }
    }
    rows
}

fn print_lap(row: &LapRow) {
    let line = |r: &RunResult, path: &str, ratio: String, tail: String| {
        let (speed_rms, speed_max) = speed_tracking(r);
        // m/s to the mm/s, "-" for never up to speed (NaN).
        let mps = |v: f64| track::metres(v);
        println!(
            "{:<19} {:<13} {:>4.1} {:<10}| {} | {:>6.1} {:>7} | {ratio:>5} | {:>9} {:>7} | {tail}",
            r.scenario,
            r.controller,
            r.speed_mps,
            path,
            track::convergence_columns(&r.stats, r.max_steady_m),
            r.time_s,
            completed(r),
            mps(speed_rms),
            mps(speed_max),
        );
    };
    line(
        &row.ackermann,
        "ackermann",
        String::new(),
        format!("{:>8} {:>8} {:>4} | -", "-", "-", "-"),
    );
    line(
        &row.pacmod,
        "pacmod",
        format!("{:.2}", row.ratio),
        format!(
            "{:>8.3} {:>8.3} {:>4} | {}{}",
            row.pedals.peak_accelerator_frac,
            row.pedals.peak_brake_frac,
            row.pedals.both_pressed,
            track::ratio_verdict(row.ratio, LAP_RATIO_TARGET),
            if row.state == StateName::Driving {
                String::new()
            } else {
                format!(" (bridge {})", row.state)
            }
        ),
    );
}

/// Everything: the pedal loop with exact and with noisy reports, then the laps from the
/// spawn pose and from on the path.
pub fn run_all(
    track_file: &std::path::Path,
    settings: &Settings,
    what: Parts,
) -> anyhow::Result<()> {
    settings.validate()?;
    if what.steps {
        run_speed_cases(settings, Reports::EXACT);
        println!();
        run_speed_cases(settings, settings.noisy);
        println!();
    }
    if what.laps {
        let scenarios = track::scenarios(track_file)?;
        let (Some(spawn), Some(on_path)) = (scenarios.first(), scenarios.get(1)) else {
            anyhow::bail!("{}: no GEM track scenarios", track_file.display());
        };
        run_laps(&[spawn, on_path], settings);
        println!();
    }
    Ok(())
}

/// Which parts to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parts {
    pub steps: bool,
    pub laps: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(speeds: &[f64], cmd: f64) -> Vec<Sample> {
        speeds
            .iter()
            .enumerate()
            .map(|(i, v)| Sample {
                t_s: i as f64,
                cmd_mps: cmd,
                speed_mps: *v,
            })
            .collect()
    }

    #[test]
    fn a_step_response_is_measured() {
        // 0 → 1 m/s: 10 % first at t=1, 90 % at t=3; overshoot 0.2; within 0.05 from t=6.
        let s = samples(&[0.0, 0.2, 0.6, 0.95, 1.2, 1.1, 1.04, 1.0, 1.0], 1.0);
        let r = response(&s, 0.0, 1.0, 0.0);
        assert_eq!(r.rise_s, Some(2.0));
        assert!((r.overshoot_mps - 0.2).abs() < 1e-12);
        assert_eq!(r.settle_s, Some(6.0));
        assert!((r.max_abs_mps - 1.0).abs() < 1e-12);
        assert!((r.rise_accel_mps2.unwrap() - 0.4).abs() < 1e-12);
        let want = ([1.0, 0.64, 0.16, 0.0025, 0.04, 0.01, 0.0016]
            .iter()
            .sum::<f64>()
            / 9.0)
            .sqrt();
        assert!((r.rms_mps - want).abs() < 1e-12);
    }

    #[test]
    fn a_falling_step_measures_overshoot_below_and_a_band_of_two_percent() {
        // 10 → 0 m/s (band 0.2): below zero is overshoot; within 0.2 from t=3.
        let s = samples(&[10.0, 5.0, 0.5, -0.1, 0.15, 0.0], 0.0);
        let r = response(&s, 10.0, 0.0, 0.0);
        assert!((r.overshoot_mps - 0.1).abs() < 1e-12);
        assert_eq!(r.settle_s, Some(3.0));
        assert_eq!(r.rise_s, Some(1.0));
        assert!((r.rise_accel_mps2.unwrap() + 8.0).abs() < 1e-12);
    }

    #[test]
    fn settling_counts_from_the_end_of_a_ramp_and_can_fail() {
        // A ramp ending at t=2, followed closely: in the band from t=1, so 0 after its end.
        let s = samples(&[0.0, 0.98, 1.0, 1.0], 1.0);
        assert_eq!(response(&s, 0.0, 1.0, 2.0).settle_s, Some(0.0));
        // Outside the band at the end: not settled; never at 90 %: no rise.
        let s = samples(&[0.0, 0.5, 0.8], 1.0);
        let r = response(&s, 0.0, 1.0, 0.0);
        assert_eq!(r.settle_s, None);
        assert_eq!(r.rise_s, None);
        assert_eq!(r.rise_accel_mps2, None);
    }

    #[test]
    fn no_change_has_no_rise_and_no_overshoot() {
        let s = samples(&[2.0, 2.01, 2.0], 2.0);
        let r = response(&s, 2.0, 2.0, 0.0);
        assert_eq!((r.rise_s, r.overshoot_mps), (None, 0.0));
        assert_eq!(r.settle_s, Some(0.0));
        assert!(response(&[], 0.0, 1.0, 0.0).rms_mps.is_nan());
    }

    #[test]
    fn bad_settings_are_refused_naming_the_value() {
        let bad = |f: &dyn Fn(&mut Settings)| {
            let mut s = Settings::defaults();
            f(&mut s);
            s.validate().unwrap_err().to_string()
        };
        assert!(bad(&|s| s.longitudinal.kp_per_s = f64::NAN).contains("kp_per_s"));
        assert!(bad(&|s| s.steering_rate_rad_s = -1.0).contains("steering_rate_rad_s"));
        assert!(bad(&|s| s.noisy.speed_sigma_mps = -0.1).contains("speed_sigma_mps"));
        assert!(Settings::defaults().validate().is_ok());
    }

    #[test]
    fn a_ramp_command_climbs_at_its_rate_and_holds() {
        let c = ramp("r", 5.5, 1.0);
        assert_eq!(c.change_s(), 9.0);
        assert_eq!(c.command_at(2.0), 4.5);
        assert_eq!(c.command_at(9.5), 1.0);
        let c = ramp("r", 0.0, 5.5);
        assert_eq!(c.command_at(1.0), 0.5);
        assert_eq!(step("s", 0.0, 2.8, 0.0).command_at(0.0), 2.8);
    }

    /// The bench's functions give finite figures on a short run: a step of the pedal loop
    /// and a lap on a short path.
    #[test]
    fn the_bench_gives_finite_figures() {
        let settings = Settings::defaults();
        let r = run_case(SPEED_CASES[0], &settings, Reports::EXACT);
        let x = r.response;
        assert!(x.rms_mps.is_finite() && x.max_abs_mps.is_finite());
        assert!(x.rise_s.is_some_and(f64::is_finite));
        assert!(x.settle_s.is_some_and(f64::is_finite));
        assert_eq!(r.both_pressed, 0);
        assert!(r.pedals.peak_accelerator_frac > 0.0);
        assert_eq!(r.state, StateName::Driving);

        let line: Vec<Pose> = (0..=150)
            .map(|i| Pose::new(i as f64 * 0.2, 0.0, 0.0))
            .collect();
        let sc = Scenario {
            name: "line",
            start: Pose::new(0.0, 0.3, 0.0),
            waypoints: line,
        };
        let row = lap_row(
            &sc,
            &lap_case(Controller::PurePursuit, SOURCE_SPEEDS[0]),
            &settings,
        )
        .expect("pure pursuit steers the car's steering");
        assert!(lap_row(
            &sc,
            &lap_case(Controller::Stanley, SOURCE_SPEEDS[0]),
            &settings
        )
        .is_err());
        for r in [&row.ackermann, &row.pacmod] {
            assert_eq!(r.done_index, Some(r.last_index), "{}", r.controller);
            assert!(r.stats.rms_after_m.is_finite());
            let (rms, max) = speed_tracking(r);
            assert!(rms.is_finite() && max.is_finite(), "{}", r.controller);
        }
        assert!(row.ratio.is_finite());
        assert_eq!(row.pedals.both_pressed, 0);
        assert_eq!(row.state, StateName::Driving);
    }
}
