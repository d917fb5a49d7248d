//! The actuators measured in a drive: the steering motor's top rate each way, its lag and
//! its dead time, and the accelerator's and the brake's command-to-report delays.
//!
//! **The drive** ([`plan`], `gemctl calibrate actuator --collect`) is a chain of
//! `pacmod_bridge` calibration runs, all on a small open space:
//!
//! 1. at rest, the brake held: steering steps of growing size, alternately left and right,
//!    asked for at the fastest the steering wheel turns (so that the motor, not the
//!    command, sets the pace), each held until the wheel has settled;
//! 2. at rest: sweeps from one side to the other and back at a slow commanded rate (the
//!    wheel then trails the ramp by the lag);
//! 3. at walking speed: steering steps both ways (the tyres' scrub loads the motor);
//! 4. pedal steps: the accelerator pressed from rest and released, the brake pressed
//!    from speed, each after a hold.
//!
//! **The fit** ([`fit`]) is [`gem_core::vehicle::identify`]'s: the steering figures from
//! every command and report of the drive (or of any drive that holds such steps), the
//! pedal delays from each pedal step. It refuses data without the steps it needs, naming
//! what is missing. [`markdown`] and [`step_plots_svg`] are the report.

use crate::collect::{next, BridgeSeen, Next, Start, Step};
use gem_core::geometry::Pose;
use gem_core::pacmod::bridge::{Bridge, BridgeConfig};
use gem_core::pacmod::calibration::Request;
use gem_core::pacmod::calibration::{Hold, RunRequest};
use gem_core::pacmod::longitudinal::{Longitudinal, LongitudinalConfig};
use gem_core::pacmod::pedal_map::{AcceleratorMap, BrakeMap};
use gem_core::pacmod::plant::{Plant, PlantConfig};
use gem_core::pacmod::rig::{Rig, RigConfig};
use gem_core::time::Time;
use gem_core::vehicle::actuator::MAX_STEERING_WHEEL_RATE_RAD_S;
use gem_core::vehicle::identify::{
    self, DelayError, Estimate, IdentifyConfig, IdentifyError, Motor, MotorFit, Stretch,
};
use gem_core::vehicle::{VehicleModel, VehicleParams};
use plotters::prelude::*;
use std::fmt::Write as _;
use std::time::Duration;
use thiserror::Error;

/// The identification drive's settings. `Default`: see each field.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanConfig {
    /// The steering steps' sizes, rad of steering wheel, each driven left and right.
    /// 0.5, 1.5 and 3.0.
    pub step_sizes_rad: Vec<f64>,
    /// The rate the steps are asked at, rad/s: the fastest the steering wheel turns.
    pub step_rate_rad_s: f64,
    /// The sweeps' commanded rate, rad/s. 1.0.
    pub sweep_rate_rad_s: f64,
    /// The sweeps' extent either side, rad. 3.0.
    pub sweep_rad: f64,
    /// The slowest motor the drive waits for, rad/s: each step is held for its swing at
    /// this rate plus [`SETTLE_S`]. 1.0.
    pub slowest_rate_rad_s: f64,
    /// The walking speed of the steps while moving, m/s. 1.4.
    pub walking_mps: f64,
    /// The brake held at rest, and the pedal steps' brake, fraction. 0.3.
    pub brake_frac: f64,
    /// The accelerator of the pedal steps, fraction. 0.3.
    pub accelerator_frac: f64,
}

/// How long a step is held beyond its swing at the slowest rate, s: a lag and a dead time
/// of up to half a second each settle within it.
pub const SETTLE_S: f64 = 2.0;

impl Default for PlanConfig {
    fn default() -> Self {
        PlanConfig {
            step_sizes_rad: vec![0.5, 1.5, 3.0],
            step_rate_rad_s: MAX_STEERING_WHEEL_RATE_RAD_S,
            sweep_rate_rad_s: 1.0,
            sweep_rad: 3.0,
            slowest_rate_rad_s: 1.0,
            walking_mps: 1.4,
            brake_frac: 0.3,
            accelerator_frac: 0.3,
        }
    }
}

/// The identification drive (module documentation).
pub fn plan(cfg: &PlanConfig) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut wheel = 0.0_f64;
    let mut push = |hold: Hold, to: f64, rate: f64, start: Start, max_speed: f64| {
        let secs = (to - wheel).abs() / cfg.slowest_rate_rad_s.min(rate) + SETTLE_S;
        wheel = to;
        steps.push(Step {
            request: RunRequest {
                hold,
                steering_wheel_rad: to,
                steering_rate_rad_s: Some(rate),
                duration: Duration::from_secs_f64(secs),
                distance_m: 100.0,
                max_speed_mps: max_speed,
            },
            start,
        });
    };
    let at_rest = Hold::Brake(cfg.brake_frac);
    let held = cfg.walking_mps + 1.0;
    // 1. Steps at rest, alternately left and right, growing.
    for (i, &size) in cfg.step_sizes_rad.iter().enumerate() {
        let start = if i == 0 {
            Start::AtRest
        } else {
            Start::Chained
        };
        push(at_rest, size, cfg.step_rate_rad_s, start, held);
        push(at_rest, -size, cfg.step_rate_rad_s, Start::Chained, held);
    }
    push(at_rest, 0.0, cfg.step_rate_rad_s, Start::Chained, held);
    // 2. Sweeps at rest.
    for to in [cfg.sweep_rad, -cfg.sweep_rad, 0.0] {
        push(at_rest, to, cfg.sweep_rate_rad_s, Start::Chained, held);
    }
    // 3. Steps at walking speed: the first one moves off with the wheel centred.
    let walk = Hold::Speed(cfg.walking_mps);
    push(walk, 0.0, cfg.step_rate_rad_s, Start::AtRest, held);
    for &size in cfg.step_sizes_rad.iter().take(2) {
        push(walk, size, cfg.step_rate_rad_s, Start::Chained, held);
        push(walk, -size, cfg.step_rate_rad_s, Start::Chained, held);
    }
    push(walk, 0.0, cfg.step_rate_rad_s, Start::Chained, held);
    // 4. Pedal steps, twice: the accelerator from rest, coasting, then the brake to rest.
    for _ in 0..2 {
        push(
            Hold::Accelerator(cfg.accelerator_frac),
            0.0,
            cfg.step_rate_rad_s,
            Start::AtRest,
            held + 1.0,
        );
        push(
            Hold::Accelerator(0.0),
            0.0,
            cfg.step_rate_rad_s,
            Start::Chained,
            held + 1.0,
        );
        push(
            Hold::Brake(cfg.brake_frac),
            0.0,
            cfg.step_rate_rad_s,
            Start::Chained,
            held + 1.0,
        );
    }
    steps
}

/// One pedal's commands and reports: `(time s, fraction)` each, in time order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PedalSeries {
    /// The commands (`*_cmd.f64_cmd`).
    pub commands: Vec<(f64, f64)>,
    /// The reported pedal (`*_rpt.output`).
    pub outputs: Vec<(f64, f64)>,
}

/// A drive's data.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Data {
    /// The steering, in stretches without gaps.
    pub steering: Vec<Stretch>,
    /// The accelerator.
    pub accelerator: PedalSeries,
    /// The brake.
    pub brake: PedalSeries,
}

/// The smallest pedal step that counts, fraction.
pub const MIN_PEDAL_STEP: f64 = 0.05;
/// The hold before a pedal step, s.
pub const PEDAL_SETTLED_S: f64 = 1.0;

/// A pedal's delay and the steps it came from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PedalDelay {
    /// The delay, s.
    pub delay: Estimate,
    /// Steps measured.
    pub steps: usize,
}

/// What the drive measured.
#[derive(Clone, Debug, PartialEq)]
pub struct ActuatorFit {
    /// The steering motor.
    pub steering: MotorFit,
    /// The accelerator's delay.
    pub accelerator: PedalDelay,
    /// The brake's delay.
    pub brake: PedalDelay,
}

/// Why nothing was fitted: each part that is missing.
#[derive(Clone, Debug, Error, PartialEq)]
#[error("nothing fitted, nothing written: {}", .missing.join("; "))]
pub struct FitError {
    /// What is missing, one line each.
    pub missing: Vec<String>,
}

/// The steering figures and the pedal delays of `data`; every part is needed.
pub fn fit(data: &Data, cfg: &IdentifyConfig) -> Result<ActuatorFit, FitError> {
    let steering = identify::fit_motor(&data.steering, cfg);
    let pedal = |name: &'static str, s: &PedalSeries| {
        identify::pedal_delay(
            name,
            &s.commands,
            &s.outputs,
            MIN_PEDAL_STEP,
            PEDAL_SETTLED_S,
        )
        .map(|(delay, steps)| PedalDelay { delay, steps })
    };
    let accelerator = pedal("accelerator", &data.accelerator);
    let brake = pedal("brake", &data.brake);
    match (steering, accelerator, brake) {
        (Ok(steering), Ok(accelerator), Ok(brake)) => Ok(ActuatorFit {
            steering,
            accelerator,
            brake,
        }),
        (s, a, b) => {
            let mut missing = Vec::new();
            if let Err(e) = s {
                missing.push(format!("steering: {e}"));
            }
            for e in [a.err(), b.err()].into_iter().flatten() {
                missing.push(e.to_string());
            }
            Err(FitError { missing })
        }
    }
}

impl From<IdentifyError> for FitError {
    fn from(e: IdentifyError) -> Self {
        FitError {
            missing: vec![format!("steering: {e}")],
        }
    }
}

impl From<DelayError> for FitError {
    fn from(e: DelayError) -> Self {
        FitError {
            missing: vec![e.to_string()],
        }
    }
}

/// The report, in Markdown: the figures with their uncertainty, what they replace, and
/// where the step plots are.
pub fn markdown(fit: &ActuatorFit, configured: &Motor, plots: &[String]) -> String {
    let m = &fit.steering;
    let mut s = String::from("# Actuator identification\n\n## Steering motor\n\n");
    let _ = writeln!(
        s,
        "From {} steering reports ({} unusable ones dropped), {} steps to the left and {} to the right. Residual RMS {:.4} rad of steering wheel.\n",
        m.reports_used, m.reports_unusable, m.steps.0, m.steps.1, m.residual_rms_rad
    );
    s.push_str("| figure | measured (± standard error) | configured before |\n|---|---|---|\n");
    let rows = [
        (
            "top rate left, rad/s of steering wheel",
            m.rate_left.to_string(),
            configured.rate_left_rad_s,
        ),
        (
            "top rate right, rad/s",
            m.rate_right.to_string(),
            configured.rate_right_rad_s,
        ),
        ("lag, s", m.lag.to_string(), configured.lag_s),
        (
            "dead time, s",
            m.dead_time.to_string(),
            configured.dead_time_s,
        ),
    ];
    for (figure, measured, before) in rows {
        let _ = writeln!(s, "| {figure} | {measured} | {before:.3} |");
    }
    let planning = m.motor();
    let _ = writeln!(
        s,
        "\nThe controllers and the bridge plan with the slower way's rate, {:.3} rad/s ({:.4} rad/s at the front wheels at the centre).",
        planning.rate_left_rad_s.min(planning.rate_right_rad_s),
        planning.planning_actuator().rate_rad_s
    );
    s.push_str("\n## Pedals\n\n| pedal | command → report delay, s | steps |\n|---|---|---|\n");
    for (name, d) in [("accelerator", fit.accelerator), ("brake", fit.brake)] {
        let _ = writeln!(s, "| {name} | {} | {} |", d.delay, d.steps);
    }
    if !plots.is_empty() {
        s.push_str("\n## Steps\n\nThe reported steering wheel (points) against the fitted model (line) and the command (dashed):\n\n");
        for p in plots {
            let _ = writeln!(s, "![steps]({p})");
        }
    }
    s
}

/// `plan` driven through a bridge of `bridge` in front of a simulated PACMod of `truth`,
/// in core time, as `gemctl calibrate actuator --collect` drives it through the nodes:
/// each step asked for when [`crate::collect::next`] says so. The data as a bag of the
/// drive holds it (benchmarks and tests: an identification without ROS); why the drive
/// stopped, if it did.
pub fn drive_on_rig(
    truth: &PlantConfig,
    bridge: &BridgeConfig,
    plan: &[Step],
) -> Result<Data, String> {
    let dt = Duration::from_millis(5);
    let bridge = Bridge::new(
        bridge.clone(),
        Longitudinal::new(
            LongitudinalConfig::DEFAULT,
            AcceleratorMap::default(),
            BrakeMap::default(),
        ),
    );
    let plant = Plant::new(
        truth.clone(),
        AcceleratorMap::default(),
        BrakeMap::default(),
    );
    let mut rig = Rig::new(bridge, plant, RigConfig::DEFAULT);
    let mut car = VehicleModel::new(
        VehicleParams::default(),
        Pose::default(),
        Time::from_secs_f64(1.0),
    );
    if !rig.engage(&mut car, dt) {
        return Err("the bridge did not engage".to_owned());
    }
    let mut data = Data::default();
    let mut stretch = Stretch::default();
    let (mut last_cmd, mut last_rpt) = (None, None);
    let mut ours = None;
    for step in plan {
        let limit = car.now().as_secs_f64() + step.request.duration.as_secs_f64() + 60.0;
        loop {
            let b = rig.bridge();
            let run = b.calibration_run();
            let seen = BridgeSeen {
                state: b.state().name().to_string(),
                message: String::new(),
                run: run.map(|r| r.id),
                ended: run.and_then(|r| r.ended.as_ref()).map(|e| e.to_string()),
            };
            match next(step.start, ours, &seen, None) {
                Next::Start => break,
                Next::Abort(why) => return Err(why),
                Next::Wait => {}
            }
            if car.now().as_secs_f64() > limit {
                return Err(format!("{step:?} never started"));
            }
            rig.drive(&mut car, dt, 1);
            record(&rig, &mut stretch, &mut data, &mut last_cmd, &mut last_rpt);
        }
        ours = Some(
            rig.calibrate(Request::Run(step.request), car.now())
                .map_err(|e| format!("{e}: {step:?}"))?,
        );
        rig.drive(&mut car, dt, 1);
        record(&rig, &mut stretch, &mut data, &mut last_cmd, &mut last_rpt);
    }
    // The last run to its end and rest.
    for _ in 0..(20.0 / dt.as_secs_f64()) as usize {
        rig.drive(&mut car, dt, 1);
        record(&rig, &mut stretch, &mut data, &mut last_cmd, &mut last_rpt);
    }
    data.steering.push(stretch);
    Ok(data)
}

/// What a bag of the drive holds from the rig's last command and report, each once.
fn record(
    rig: &Rig,
    stretch: &mut Stretch,
    data: &mut Data,
    last_cmd: &mut Option<gem_core::time::Time>,
    last_rpt: &mut Option<gem_core::time::Time>,
) {
    use gem_core::pacmod::longitudinal::Pedals;
    if let Some((t, c)) = rig.last_sent().filter(|(t, _)| Some(*t) != *last_cmd) {
        *last_cmd = Some(t);
        let t = t.as_secs_f64();
        if let Some(s) = c.steer {
            stretch.commands.push(identify::Command {
                t_s: t,
                angle_rad: s.angle_rad,
                rate_rad_s: s.rate_limit_rad_s,
            });
        }
        let (a, b) = match c.pedals {
            Pedals::Accelerate(a) => (a, 0.0),
            Pedals::Brake(b) => (0.0, b),
            Pedals::Coast => (0.0, 0.0),
        };
        data.accelerator.commands.push((t, a));
        data.brake.commands.push((t, b));
    }
    if let Some((t, r)) = rig.last_report().filter(|(t, _)| Some(*t) != *last_rpt) {
        *last_rpt = Some(t);
        let t = t.as_secs_f64();
        stretch.reports.push(identify::Reading {
            t_s: t,
            angle_rad: r.wheel_rad,
        });
        data.accelerator.outputs.push((t, r.pedal_outputs.0));
        data.brake.outputs.push((t, r.pedal_outputs.1));
    }
}

/// The window of a step plotted: from this long before it, s.
const PLOT_BEFORE_S: f64 = 0.5;
/// To this long after it, at most, s.
const PLOT_AFTER_S: f64 = 6.0;

/// The steering steps of `steering` in panels (at most `max_panels`): the reported wheel,
/// the replay of `motor` and the command around each step. SVG text.
pub fn step_plots_svg(
    steering: &[Stretch],
    motor: &Motor,
    cfg: &IdentifyConfig,
    max_panels: usize,
) -> Result<String, String> {
    let mut panels = Vec::new();
    for s in steering {
        let model = identify::replay(motor, s, cfg.max_step_s);
        for st in identify::steps(&s.commands, cfg) {
            let (from, to) = (st.t_s - PLOT_BEFORE_S, st.t_s + PLOT_AFTER_S);
            let within = |t: f64| t >= from && t <= to;
            let reported: Vec<(f64, f64)> = s
                .reports
                .iter()
                .filter(|r| within(r.t_s) && r.angle_rad.is_finite())
                .map(|r| (r.t_s - st.t_s, r.angle_rad))
                .collect();
            let modelled: Vec<(f64, f64)> = model
                .iter()
                .filter(|(t, _)| within(*t))
                .map(|&(t, y)| (t - st.t_s, y))
                .collect();
            let commanded: Vec<(f64, f64)> = s
                .commands
                .iter()
                .filter(|c| within(c.t_s))
                .map(|c| (c.t_s - st.t_s, c.angle_rad))
                .collect();
            panels.push((st, reported, modelled, commanded));
        }
    }
    panels.truncate(max_panels);
    let cols = 3;
    let rows = panels.len().div_ceil(cols).max(1);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (1200, 300 * rows as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let areas = root.split_evenly((rows, cols));
        for (area, (st, reported, modelled, commanded)) in areas.iter().zip(&panels) {
            let values = || {
                reported
                    .iter()
                    .chain(modelled)
                    .chain(commanded)
                    .map(|p| p.1)
            };
            let lo = values().fold(f64::INFINITY, f64::min) - 0.1;
            let hi = values().fold(f64::NEG_INFINITY, f64::max) + 0.1;
            let mut chart = ChartBuilder::on(area)
                .caption(
                    format!(
                        "{:+.2} → {:+.2} rad at {:.1} rad/s",
                        st.from_rad, st.to_rad, st.rate_rad_s
                    ),
                    ("sans-serif", 16),
                )
                .margin(8)
                .x_label_area_size(30)
                .y_label_area_size(45)
                .build_cartesian_2d(-PLOT_BEFORE_S..PLOT_AFTER_S, lo..hi)
                .map_err(|e| e.to_string())?;
            chart
                .configure_mesh()
                .x_desc("s after the command")
                .y_desc("steering wheel, rad")
                .draw()
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(
                    reported
                        .iter()
                        .map(|&p| Circle::new(p, 2, BLUE.mix(0.5).filled())),
                )
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(LineSeries::new(
                    modelled.iter().copied(),
                    RED.stroke_width(2),
                ))
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(DashedLineSeries::new(
                    commanded.iter().copied(),
                    4,
                    4,
                    BLACK.stroke_width(1),
                ))
                .map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_steps_both_ways_at_the_fastest_rate_and_holds_each_long_enough() {
        let steps = plan(&PlanConfig::default());
        let cfg = IdentifyConfig::default();
        // The steering targets, as the commands of the runs in order.
        let commands: Vec<identify::Command> = steps
            .iter()
            .scan(0.0, |t, s| {
                let c = identify::Command {
                    t_s: *t,
                    angle_rad: s.request.steering_wheel_rad,
                    rate_rad_s: s.request.steering_rate_rad_s.unwrap(),
                };
                *t += s.request.duration.as_secs_f64();
                Some(c)
            })
            .collect();
        let found = identify::steps(&commands, &cfg);
        let left = found.iter().filter(|s| s.to_rad > s.from_rad).count();
        let right = found.len() - left;
        assert!(left >= 4 && right >= 4, "{left} {right}");
        // Every swing has time to end at 1 rad/s and settle.
        let mut wheel = 0.0_f64;
        for s in &steps {
            let swing = (s.request.steering_wheel_rad - wheel).abs();
            assert!(s.request.duration.as_secs_f64() >= swing / 1.0 + SETTLE_S - 1e-9);
            wheel = s.request.steering_wheel_rad;
        }
        // Each request is one the bridge accepts.
        for s in &steps {
            let r = &s.request;
            let (pedal, frac, speed) = match r.hold {
                Hold::Accelerator(f) => ("accelerator", f, 0.0),
                Hold::Brake(f) => ("brake", f, 0.0),
                Hold::Speed(v) => ("speed", 0.0, v),
            };
            let parsed = Request::parse(
                pedal,
                frac,
                speed,
                r.steering_wheel_rad,
                r.steering_rate_rad_s.unwrap_or(0.0),
                r.duration.as_secs_f64(),
                r.distance_m,
                r.max_speed_mps,
                &gem_core::pacmod::bridge::Bridge::new(
                    Default::default(),
                    gem_core::pacmod::longitudinal::Longitudinal::new(
                        Default::default(),
                        Default::default(),
                        Default::default(),
                    ),
                )
                .calibration_limits(),
            );
            assert!(
                matches!(parsed, Ok(Request::Run(p)) if p == RunRequest { ..*r }),
                "{parsed:?}"
            );
        }
    }

    #[test]
    fn data_without_pedal_steps_is_refused_naming_each_part() {
        let e = fit(&Data::default(), &IdentifyConfig::default()).unwrap_err();
        assert_eq!(e.missing.len(), 3, "{e}");
        assert!(
            e.to_string()
                .starts_with("nothing fitted, nothing written: steering: no steering data"),
            "{e}"
        );
        assert!(e.to_string().contains("no accelerator step"), "{e}");
        assert!(e.to_string().contains("no brake step"), "{e}");
    }

    #[test]
    fn the_drive_through_the_bridge_measures_a_motor_it_was_not_told() {
        for (rate, lag, dead) in [(2.0, 0.3, 0.2), (5.0, 0.05, 0.05), (3.5, 0.1, 0.1)] {
            let truth = PlantConfig {
                max_wheel_rate_rad_s: rate,
                steering_lag_s: lag,
                steering_dead_time_s: dead,
                wheel_sigma_rad: 0.005,
                ..PlantConfig::DEFAULT
            };
            let data = drive_on_rig(
                &truth,
                &BridgeConfig::DEFAULT,
                &plan(&PlanConfig::default()),
            )
            .unwrap();
            let fitted = fit(&data, &IdentifyConfig::default()).unwrap();
            let m = fitted.steering.motor();
            eprintln!(
                "truth ({rate}, {lag}, {dead}): rate left {}, right {}, lag {}, dead time {}; accelerator delay {}, brake delay {}",
                fitted.steering.rate_left,
                fitted.steering.rate_right,
                fitted.steering.lag,
                fitted.steering.dead_time,
                fitted.accelerator.delay,
                fitted.brake.delay
            );
            let within = |got: f64, want: f64, tol: f64| (got - want).abs() <= tol;
            assert!(
                within(m.rate_left_rad_s, rate, 0.1 * rate)
                    && within(m.rate_right_rad_s, rate, 0.1 * rate)
                    && within(m.lag_s, lag, 0.05)
                    && within(m.dead_time_s, dead, 0.05),
                "truth ({rate}, {lag}, {dead}): {:?}",
                fitted.steering
            );
            // The simulated pedals apply at once: the report follows within a report.
            assert!(fitted.accelerator.delay.value.abs() < 0.05, "{fitted:?}");
            assert!(fitted.brake.delay.value.abs() < 0.05, "{fitted:?}");
            let report = markdown(
                &fitted,
                &Motor::symmetric(3.5, 0.1, 0.1),
                &["steps.svg".into()],
            );
            assert!(report.contains("| top rate left"), "{report}");
            let svg = step_plots_svg(&data.steering, &m, &IdentifyConfig::default(), 12).unwrap();
            assert!(svg.starts_with("<svg") && svg.matches("<circle").count() > 100);
        }
    }
}
