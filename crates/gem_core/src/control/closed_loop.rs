//! Closed-loop runs of a controller on the vehicle model, and tracking statistics.
//!
//! Shared by the `track` benchmark and the end-to-end lap test, so the figure a ROS run is
//! compared with comes from exactly the same measurement: cross-track error of the true
//! rear axle, projected with its own windowed progress ([`CrossTrackMeter`]) so every
//! controller, including ones that track a different point, is measured alike.
//!
//! The commands reach the car through a [`CommandPath`]: [`Ackermann`] hands them to the
//! model as `gem/ackermann_cmd` does (the simulator's default); a drive-by-wire in front
//! of the model (the PACMod bridge and plant, `crate::pacmod::rig`) implements it too.

use super::path::Path;
use super::tracker::{Observation, Tracker};
use super::twist::News;
use crate::geometry::{Point, Pose};
use crate::time::Time;
use crate::vehicle::localization::{LocalizationParams, Localizer, Report};
use crate::vehicle::{DriveCommand, VehicleModel, VehicleParams};
use std::time::Duration;

/// What a controller answers at one control step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// Steering, rad (may be unclamped or non-finite for a baseline).
    pub steering_rad: f64,
    /// Speed, m/s.
    pub speed_mps: f64,
    /// The controller considers the goal reached.
    pub done: bool,
    /// The waypoint index it reports.
    pub index: usize,
}

/// Anything that can drive the model.
pub trait Steerer {
    /// The command for what localization `report`s, at `now`.
    fn step(&mut self, report: &Report, now: Time) -> Step;

    /// Doubts about the pose source's twist raised since the last call (none: a steerer
    /// that does not check it).
    fn take_news(&mut self) -> Vec<News> {
        Vec::new()
    }
}

/// What a localization report tells a tracker.
pub fn observation(report: &Report) -> Observation {
    let s = &report.state;
    Observation {
        pose: s.pose,
        speed_mps: s.speed_mps,
        lateral_speed_mps: s.lateral_speed_mps,
        yaw_rate_rad_s: s.yaw_rate_rad_s,
        measured_at: report.measured_at,
    }
}

impl Steerer for Tracker {
    fn step(&mut self, report: &Report, now: Time) -> Step {
        match self.observe(observation(report), now) {
            Ok(c) => Step {
                steering_rad: c.steering_rad,
                speed_mps: c.speed_mps,
                done: c.done,
                index: c.target_index,
            },
            Err(_) => Step {
                steering_rad: 0.0,
                speed_mps: 0.0,
                done: true,
                index: 0,
            },
        }
    }

    fn take_news(&mut self) -> Vec<News> {
        self.twist_source_mut().take_news()
    }
}

/// How a controller's commands reach the model.
pub trait CommandPath {
    /// Before the first control step, with the car at rest (a drive-by-wire's engagement);
    /// may step `model`, and the run's time starts after it.
    fn engage(&mut self, _model: &mut VehicleModel) {}

    /// The controller's command, given at `model.now()`.
    fn command(&mut self, model: &mut VehicleModel, cmd: DriveCommand);

    /// Just before `model` steps `dt`.
    fn before_step(&mut self, _model: &mut VehicleModel, _dt: Duration) {}
}

/// The command handed to the model as it is (`gem/ackermann_cmd` into the simulator).
#[derive(Clone, Copy, Debug, Default)]
pub struct Ackermann;

impl CommandPath for Ackermann {
    fn command(&mut self, model: &mut VehicleModel, cmd: DriveCommand) {
        model.command(cmd);
    }
}

/// Cross-track error of a point against a path, following the point's progress.
pub struct CrossTrackMeter {
    path: Path,
    s: f64,
}

impl CrossTrackMeter {
    /// A meter on `path`, starting at its beginning.
    pub fn new(path: Path) -> Self {
        CrossTrackMeter { path, s: 0.0 }
    }

    /// Signed cross-track error of `p` (+ left), m.
    pub fn measure(&mut self, p: Point) -> f64 {
        let proj = self.path.project(p, self.s - 1.0, self.s + 5.0);
        self.s = self.s.max(proj.s);
        proj.cross_track_m
    }
}

/// One recorded control step.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Distance driven so far, m.
    pub driven_m: f64,
    /// Rear-axle position.
    pub position: Point,
    /// Cross-track error, m.
    pub cross_track_m: f64,
    /// Steering commanded, rad.
    pub steering_rad: f64,
    /// Speed commanded, m/s.
    pub speed_cmd_mps: f64,
    /// The car's speed, m/s.
    pub speed_mps: f64,
}

/// A whole run.
#[derive(Clone, Debug)]
pub struct Trace {
    /// One sample per control step.
    pub samples: Vec<Sample>,
    /// The index reported with `done`, if the controller finished.
    pub done_index: Option<usize>,
    /// Largest |steering| commanded (infinite if a command was not finite).
    pub max_steer_rad: f64,
    /// Simulated duration, s.
    pub time_s: f64,
    /// The steerer's doubts about the twist, with the simulated time they were raised, s.
    pub news: Vec<(f64, News)>,
}

impl Trace {
    /// `(distance driven, cross-track error)` of every sample, for [`stats`].
    pub fn cross_track(&self) -> Vec<(f64, f64)> {
        self.samples
            .iter()
            .map(|s| (s.driven_m, s.cross_track_m))
            .collect()
    }

    /// `(speed commanded, speed)` of every sample after the first, m/s: the command in
    /// force (given at the step before) and the car's speed it produced.
    pub fn speeds(&self) -> Vec<(f64, f64)> {
        self.samples
            .windows(2)
            .map(|w| (w[0].speed_cmd_mps, w[1].speed_mps))
            .collect()
    }

    /// Steering jitter from `from_m` driven on: the RMS of the change of the steering
    /// command from one control step to the next, rad. Tracking the path's curvature
    /// changes it by a few mrad a step; chatter shows up as much more.
    pub fn steering_jitter(&self, from_m: f64) -> f64 {
        let steps: Vec<f64> = self
            .samples
            .windows(2)
            .filter(|w| w[0].driven_m >= from_m)
            .map(|w| w[1].steering_rad - w[0].steering_rad)
            .collect();
        rms(&steps)
    }
}

/// How to run.
#[derive(Clone, Debug)]
pub struct LoopSettings {
    /// Physics step.
    pub physics_dt: Duration,
    /// Physics steps per control step.
    pub control_every: usize,
    /// Give up after this much simulated time, s.
    pub time_limit_s: f64,
    /// What the controller is told of the car.
    pub localization: LocalizationParams,
}

/// Drives `steerer` on a model with `params` from `start` until done or the time limit,
/// its commands handed to the model as they are ([`Ackermann`]).
pub fn run(
    path: Path,
    start: Pose,
    params: VehicleParams,
    steerer: &mut dyn Steerer,
    cfg: &LoopSettings,
) -> Trace {
    run_through(path, start, params, steerer, cfg, &mut Ackermann)
}

/// [`run`] with the commands reaching the model through `command_path`.
pub fn run_through(
    path: Path,
    start: Pose,
    params: VehicleParams,
    steerer: &mut dyn Steerer,
    cfg: &LoopSettings,
    command_path: &mut dyn CommandPath,
) -> Trace {
    let mut model = VehicleModel::new(params, start, Time::from_secs_f64(1.0));
    command_path.engage(&mut model);
    let t0 = model.now();
    let mut localizer = Localizer::new(cfg.localization.clone());
    localizer.observe(t0, model.state());
    let mut meter = CrossTrackMeter::new(path);
    let mut trace = Trace {
        samples: Vec::new(),
        done_index: None,
        max_steer_rad: 0.0,
        time_s: 0.0,
        news: Vec::new(),
    };
    let (mut driven, mut step) = (0.0, 0usize);
    while model.now().saturating_since(t0).as_secs_f64() < cfg.time_limit_s {
        let state = model.state();
        if step.is_multiple_of(cfg.control_every) {
            let report = localizer.report().unwrap_or(Report {
                measured_at: model.now(),
                state,
            });
            let c = steerer.step(&report, model.now());
            let t = model.now().saturating_since(t0).as_secs_f64();
            trace
                .news
                .extend(steerer.take_news().into_iter().map(|n| (t, n)));
            let steer = if c.steering_rad.is_finite() {
                c.steering_rad.abs()
            } else {
                f64::INFINITY
            };
            trace.max_steer_rad = trace.max_steer_rad.max(steer);
            let position = state.pose.point();
            trace.samples.push(Sample {
                driven_m: driven,
                position,
                cross_track_m: meter.measure(position),
                steering_rad: c.steering_rad,
                speed_cmd_mps: c.speed_mps,
                speed_mps: state.speed_mps,
            });
            if c.done {
                trace.done_index = Some(c.index);
                break;
            }
            command_path.command(
                &mut model,
                DriveCommand {
                    steering_rad: c.steering_rad,
                    speed_mps: c.speed_mps,
                    ..Default::default()
                },
            );
        }
        command_path.before_step(&mut model, cfg.physics_dt);
        model.step(cfg.physics_dt);
        localizer.observe(model.now(), model.state());
        driven += model.state().speed_mps * cfg.physics_dt.as_secs_f64();
        step += 1;
    }
    trace.time_s = model.now().saturating_since(t0).as_secs_f64();
    trace
}

/// Cross-track error from which a run counts as converged, m: the first sample within it
/// starts the "after convergence" figures. Below the smallest largest-error target (0.06 m
/// at 2.8 m/s), so a car that approaches the path smoothly is not charged the threshold
/// itself.
pub const CONVERGED_M: f64 = 0.05;

/// Tracking figures of a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrackingStats {
    /// Distance driven until |error| first dropped to `converged_m`, if it did.
    pub converge_m: Option<f64>,
    /// RMS error from convergence on (NaN if never converged), m.
    pub rms_after_m: f64,
    /// 95th percentile of |error| from convergence on, m.
    pub p95_after_m: f64,
    /// Max |error| from convergence on, m.
    pub max_after_m: f64,
    /// RMS error over the whole run, m.
    pub rms_all_m: f64,
    /// Max |error| over the whole run, m.
    pub max_all_m: f64,
}

/// Statistics of `(driven, error)` samples; converged once |error| ≤ `converged_m`.
pub fn stats(samples: &[(f64, f64)], converged_m: f64) -> TrackingStats {
    let converge_m = samples
        .iter()
        .find(|(_, e)| e.abs() <= converged_m)
        .map(|(d, _)| *d);
    let after: Vec<f64> = match converge_m {
        Some(d0) => samples
            .iter()
            .filter(|(d, _)| *d >= d0)
            .map(|(_, e)| *e)
            .collect(),
        None => Vec::new(),
    };
    let all: Vec<f64> = samples.iter().map(|(_, e)| *e).collect();
    TrackingStats {
        converge_m,
        rms_after_m: rms(&after),
        p95_after_m: p95_abs(&after),
        max_after_m: max_abs(&after),
        rms_all_m: rms(&all),
        max_all_m: max_abs(&all),
    }
}

/// Root mean square of `v` (NaN if empty).
pub fn rms(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    (v.iter().map(|e| e * e).sum::<f64>() / v.len() as f64).sqrt()
}

fn p95_abs(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut a: Vec<f64> = v.iter().map(|e| e.abs()).collect();
    a.sort_by(f64::total_cmp);
    a[((a.len() as f64 * 0.95).ceil() as usize).clamp(1, a.len()) - 1]
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().map(|e| e.abs()).fold(f64::NAN, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_count_from_the_first_converged_sample() {
        let s = stats(
            &[(0.0, 2.0), (1.0, 0.5), (2.0, 0.05), (3.0, -0.1), (4.0, 0.0)],
            0.1,
        );
        assert_eq!(s.converge_m, Some(2.0));
        assert!((s.max_after_m - 0.1).abs() < 1e-12);
        assert!((s.p95_after_m - 0.1).abs() < 1e-12);
        assert!((s.rms_after_m - ((0.0025 + 0.01) / 3.0f64).sqrt()).abs() < 1e-12);
        assert_eq!(s.max_all_m, 2.0);
    }

    #[test]
    fn never_converged_has_no_after_figures() {
        let s = stats(&[(0.0, 2.0), (1.0, 1.5)], 0.1);
        assert_eq!(s.converge_m, None);
        assert!(s.rms_after_m.is_nan() && s.max_after_m.is_nan());
    }

    #[test]
    fn meter_follows_progress_on_a_line() {
        let pts: Vec<Point> = (0..20).map(|i| Point::new(i as f64, 0.0)).collect();
        let mut m = CrossTrackMeter::new(Path::new(&pts, 0.05).unwrap());
        assert!((m.measure(Point::new(0.5, 0.3)) - 0.3).abs() < 1e-12);
        assert!((m.measure(Point::new(3.0, -0.2)) + 0.2).abs() < 1e-12);
    }
}
