//! `pacmod --slow-steering`: every law on the GEM e2's slow steering, through the bridge
//! and the simulated PACMod, joining the path and recovering from disturbances.
//!
//! The simulated PACMod turns the steering wheel at the bridge's rate (2.0 or 3.5 rad/s,
//! 0.09 or 0.16 rad/s at the front wheels), and the wheels then follow through a 0.1 s
//! lag after 0.1 s of dead time ([`LAG_S`], [`DEAD_TIME_S`]). The controllers are told
//! the same actuator (`TrackerConfig::with_actuator`, as the car platforms' launch does).
//! The pose comes from the GNSS/INS-like source of the other PACMod laps.
//!
//! Four starts per law, steering-wheel rate and speed:
//!
//! - **2 m off**: the spawn pose, 2 m beside the path's first point;
//! - **on the path**;
//! - **INS jump**: started on the path; after [`EVENT_AT_M`] the pose the controller sees
//!   jumps [`JUMP_M`] to the left for [`JUMP_S`], then comes back (a bad fix recovering);
//! - **resume 0.5 m off**: started on the path; after [`EVENT_AT_M`] a comfortable stop
//!   (1 m/s²), the car put [`RESUME_OFF_M`] to the left of where it stopped, and the goal
//!   resumed from the last waypoint the controller reported, as the planner does.
//!
//! The figures count from the event: the start, the pose's return, or the resume.
//!
//! - **converged after**: the distance driven until the true rear axle is within
//!   [`CONVERGED_WITHIN_M`] of the path and stays there for the rest of the lap;
//! - **overshoot**: how far the rear axle went past the path, on the other side from where
//!   it was at the event (0 where it was on the path);
//! - **RMS after**: the RMS cross-track error after convergence, and its ratio to the same
//!   law's lap with the simulator's quick steering (2 rad/s, no lag or dead time) through
//!   `ackermann_cmd`, started on the path;
//! - **rate asked**: the largest change of the steering command between two control
//!   steps, per second, against the front-wheel rate the actuator has;
//! - the MPC's solve times (wall time of each 20 Hz solve on this machine).

use crate::pacmod::{self, Settings, INS};
use crate::track::{self, Controller, Scenario, CONTROL_EVERY, PHYSICS_DT, SOURCE_SPEEDS};
use gem_core::control::closed_loop::{observation, rms, Ackermann, CommandPath, CrossTrackMeter};
use gem_core::control::path::Path;
use gem_core::control::speed::min_time_s;
use gem_core::control::tracker::{Tracker, TrackerConfig};
use gem_core::geometry::{Point, Pose};
use gem_core::stats::Summary;
use gem_core::time::Time;
use gem_core::vehicle::actuator::SteeringActuator;
use gem_core::vehicle::localization::Localizer;
use gem_core::vehicle::{DriveCommand, VehicleModel, VehicleParams};

/// The steering-wheel rates, rad/s: the public GEM e2 code's and the bridge's default.
pub const WHEEL_RATES: [f64; 2] = [2.0, 3.5];
/// Where a disturbance comes, m driven: on the track's first straight.
pub const EVENT_AT_M: f64 = 60.0;
/// The INS jump: m to the left.
pub const JUMP_M: f64 = 1.0;
/// The INS jump: how long, s.
pub const JUMP_S: f64 = 2.0;
/// How far off the path the car is when the goal resumes, m.
pub const RESUME_OFF_M: f64 = 0.5;
/// The comfortable stop's deceleration, m/s².
const STOP_DECEL_MPS2: f64 = 1.0;
/// Within this of the path, the car has converged, m.
pub const CONVERGED_WITHIN_M: f64 = 0.1;
/// The targets: overshoot, m.
pub const OVERSHOOT_TARGET_M: f64 = 0.3;
/// The targets: converged within this much driving, m.
pub const CONVERGE_TARGET_M: f64 = 40.0;
/// The targets: RMS after convergence over the quick-steering lap's.
pub const RMS_RATIO_TARGET: f64 = 1.2;
/// The targets: lap time over its bound.
pub const TIME_RATIO_TARGET: f64 = 1.10;
/// The speed is measured against the profile until this far from the goal (where the
/// goal's own stop takes over), m.
const GOAL_STOP_M: f64 = 20.0;
/// The targets: RMS of the speed against the profile, m/s.
pub const SPEED_RMS_TARGET_MPS: f64 = 0.3;

/// The lap's miss, if it was not completed.
pub fn completion_miss(completed: bool) -> Option<String> {
    (!completed).then(|| "lap not completed".into())
}

/// The overshoot's miss, if beyond [`OVERSHOOT_TARGET_M`].
pub fn overshoot_miss(overshoot_m: f64) -> Option<String> {
    (overshoot_m > OVERSHOOT_TARGET_M).then(|| format!("overshoot {overshoot_m:.2} m"))
}

/// The convergence's miss (distance driven to converge, None: never), if not within
/// [`CONVERGE_TARGET_M`].
pub fn convergence_miss(converge_m: Option<f64>) -> Option<String> {
    match converge_m {
        Some(d) if d <= CONVERGE_TARGET_M => None,
        Some(d) => Some(format!("converged after {d:.1} m")),
        None => Some("never converged".into()),
    }
}

/// The miss of the RMS after convergence over the quick-steering lap's (`ratio`), if NaN
/// or beyond [`RMS_RATIO_TARGET`].
pub fn rms_miss(ratio: f64) -> Option<String> {
    (ratio.is_nan() || ratio > RMS_RATIO_TARGET).then(|| format!("RMS ×{ratio:.2}"))
}

/// Where a run starts and what happens in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    Off2m,
    OnPath,
    InsJump,
    Resume,
}

impl Start {
    pub const ALL: [Start; 4] = [Start::Off2m, Start::OnPath, Start::InsJump, Start::Resume];

    fn label(self) -> &'static str {
        match self {
            Start::Off2m => "2 m off",
            Start::OnPath => "on the path",
            Start::InsJump => "INS jump 1 m",
            Start::Resume => "resume 0.5 m off",
        }
    }
}

/// The laws, MPC first.
pub const LAWS: [Controller; 4] = [
    Controller::Mpc,
    Controller::PurePursuit,
    Controller::Stanley,
    Controller::Lqr,
];

/// The figures of one run.
#[derive(Clone, Debug)]
pub struct Row {
    pub law: &'static str,
    pub wheel_rate_rad_s: f64,
    pub speed_mps: f64,
    pub start: Start,
    /// The tracker refused the settings (the error).
    pub refused: Option<String>,
    /// Distance driven from the event to convergence (None: never).
    pub converge_m: Option<f64>,
    pub overshoot_m: f64,
    pub rms_after_m: f64,
    /// The quick-steering lap's RMS after convergence.
    pub ideal_rms_m: f64,
    /// The largest command rate asked, rad/s.
    pub rate_asked_rad_s: f64,
    /// The actuator's front-wheel rate, rad/s.
    pub rate_available_rad_s: f64,
    /// The MPC's solve times, ms.
    pub solve_ms: Vec<f64>,
    /// Solves that fell back.
    pub fallbacks: u64,
    pub lap_s: f64,
    /// The least time of the same drive within the limits the controller plans with
    /// (the profile's rate after its feedback margin), from rest to rest (and to rest
    /// where a resumed run stopped), s.
    pub bound_s: f64,
    /// RMS of the speed against the profile's at the car's progress, once up to speed,
    /// while the controller finds the car on the path and short of the goal's stop, m/s.
    pub speed_rms_mps: f64,
    pub completed: bool,
}

impl Row {
    /// The ratio of the RMS after convergence to the quick-steering lap's.
    pub fn ratio(&self) -> f64 {
        self.rms_after_m / self.ideal_rms_m
    }

    /// The lap's time over its bound.
    pub fn time_ratio(&self) -> f64 {
        self.lap_s / self.bound_s
    }

    /// What misses a target (empty: every target met).
    pub fn misses(&self) -> Vec<String> {
        if self.refused.is_some() {
            return Vec::new();
        }
        let (time_ratio, speed_rms) = (self.time_ratio(), self.speed_rms_mps);
        [
            completion_miss(self.completed),
            overshoot_miss(self.overshoot_m),
            convergence_miss(self.converge_m),
            rms_miss(self.ratio()),
            (time_ratio.is_nan() || time_ratio > TIME_RATIO_TARGET)
                .then(|| format!("lap {time_ratio:.2}× its bound")),
            (speed_rms.is_nan() || speed_rms > SPEED_RMS_TARGET_MPS)
                .then(|| format!("speed RMS {speed_rms:.2} m/s")),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// The actuator of the car with its steering wheel at `wheel_rate_rad_s`.
pub fn car_actuator(wheel_rate_rad_s: f64) -> SteeringActuator {
    let plant = Settings::defaults().plant(pacmod::Reports::EXACT);
    SteeringActuator {
        lag_s: plant.steering_lag_s,
        dead_time_s: plant.steering_dead_time_s,
        ..SteeringActuator::GEM_E2
    }
    .with_steering_wheel_rate(wheel_rate_rad_s)
}

/// The tracker settings of `law` at `speed`, with the actuator `act`.
pub fn config(law: Controller, speed: (f64, f64), act: SteeringActuator) -> TrackerConfig {
    let base = track::tracker_config(law, speed.0, speed.1, track::Actuators::Launched);
    base.with_actuator(act)
}

/// One run: `law` at `speed` with the steering wheel at `wheel_rate` (None: the
/// simulator's quick steering through `ackermann_cmd`), from `start`, on `sc` (its start
/// pose is the 2 m off one; its first waypoint the on-path one).
pub fn run(
    sc: &Scenario,
    law: Controller,
    speed: (f64, f64),
    wheel_rate: Option<f64>,
    start: Start,
) -> Row {
    let act = wheel_rate.map_or(SteeringActuator::FAST, car_actuator);
    let cfg = config(law, speed, act);
    let points: Vec<Point> = sc.waypoints.iter().map(|w| w.point()).collect();
    let mut row = Row {
        law: law.label(),
        wheel_rate_rad_s: wheel_rate.unwrap_or(f64::NAN),
        speed_mps: speed.0,
        start,
        refused: None,
        converge_m: None,
        overshoot_m: 0.0,
        rms_after_m: f64::NAN,
        ideal_rms_m: f64::NAN,
        rate_asked_rad_s: 0.0,
        rate_available_rad_s: act.rate_rad_s,
        solve_ms: Vec::new(),
        fallbacks: 0,
        lap_s: 0.0,
        bound_s: f64::NAN,
        speed_rms_mps: f64::NAN,
        completed: false,
    };
    if let Err(e) = cfg.validate() {
        row.refused = Some(e.to_string());
        return row;
    }
    let mut tracker = match Tracker::new(&points, 0, cfg.clone()) {
        Ok(t) => t,
        Err(e) => {
            row.refused = Some(e.to_string());
            return row;
        }
    };
    let first = sc.waypoints[0];
    let start_pose = match start {
        Start::Off2m => sc.start,
        _ => first,
    };
    // The simulated PACMod has the car's steering; the quick laps the simulator's.
    let mut model = VehicleModel::new(VehicleParams::DEFAULT, start_pose, Time::from_secs_f64(1.0));
    let mut rig = wheel_rate.map(|r| {
        Settings {
            steering_rate_rad_s: r,
            ..Settings::defaults()
        }
        .rig(pacmod::Reports::EXACT)
    });
    let path_of: &mut dyn CommandPath = match rig.as_mut() {
        Some(r) => r,
        None => &mut Ackermann,
    };
    path_of.engage(&mut model);
    let t0 = model.now();
    let mut localizer = Localizer::new(INS);
    localizer.observe(t0, model.state());
    let path = Path::new(&points, 0.05).expect("valid path");
    let path_of_goal = path.clone();
    let time_limit_s = 3.0 * path.length() / speed.0 + 120.0;
    let mut meter = CrossTrackMeter::new(path);
    // (driven since the event, true cross-track) after the event.
    let mut after: Vec<(f64, f64)> = Vec::new();
    let mut event: Option<(f64, f64)> = match start {
        Start::Off2m | Start::OnPath => Some((0.0, 0.0)),
        _ => None,
    };
    let mut phase = Phase::Driving;
    let (mut driven, mut step, mut last_cmd, mut last_index) = (0.0, 0usize, 0.0, 0usize);
    let dt_control = PHYSICS_DT.as_secs_f64() * CONTROL_EVERY as f64;
    let mut solve_ms = Vec::new();
    // (speed planned, speed) at each control step once up to speed; where it stopped.
    let mut speeds: Vec<(f64, f64)> = Vec::new();
    let (mut cruising, mut stopped_at) = (false, Vec::new());
    while model.now().saturating_since(t0).as_secs_f64() < time_limit_s {
        let state = model.state();
        let t = model.now().saturating_since(t0).as_secs_f64();
        if step.is_multiple_of(CONTROL_EVERY) {
            let e = meter.measure(state.pose.point());
            if let Some((at_m, _)) = event {
                after.push((driven - at_m, e));
            }
            let mut report = localizer.report().expect("observed");
            phase = phase.next(start, driven, t, state.speed_mps);
            if matches!(phase, Phase::Jumped { .. }) {
                let p = report.state.pose;
                report.state.pose = Pose::new(
                    p.x - JUMP_M * p.yaw.sin(),
                    p.y + JUMP_M * p.yaw.cos(),
                    p.yaw,
                );
            }
            if let Phase::JumpOver = phase {
                if event.is_none() {
                    event = Some((driven, e));
                }
            }
            let cmd = match phase {
                Phase::Stopping => DriveCommand {
                    steering_rad: last_cmd,
                    speed_mps: 0.0,
                    accel_limit_mps2: STOP_DECEL_MPS2,
                },
                Phase::Stopped => {
                    // Put the car beside where it stopped, and resume the goal.
                    stopped_at.push(tracker.progress_m());
                    let p = state.pose;
                    model.reset(Pose::new(
                        p.x - RESUME_OFF_M * p.yaw.sin(),
                        p.y + RESUME_OFF_M * p.yaw.cos(),
                        p.yaw,
                    ));
                    localizer.reset();
                    localizer.observe(model.now(), model.state());
                    let e = meter.measure(model.state().pose.point());
                    event = Some((driven, e));
                    let source = tracker.twist_source().clone();
                    tracker = Tracker::new(&points, last_index, cfg.clone())
                        .expect("valid path")
                        .with_twist_source(source);
                    phase = Phase::Resumed;
                    last_cmd = 0.0;
                    DriveCommand::default()
                }
                _ => {
                    let c = match tracker.observe(observation(&report), model.now()) {
                        Ok(c) => c,
                        Err(_) => break,
                    };
                    if let Some(r) = tracker.take_mpc_report() {
                        solve_ms.extend(r.solve_times.iter().map(|d| d.as_secs_f64() * 1e3));
                        row.fallbacks += r.fallbacks;
                    }
                    if c.done {
                        row.completed = c.target_index == sc.waypoints.len() - 1;
                        break;
                    }
                    if step > 0 && phase != Phase::Resumed {
                        row.rate_asked_rad_s = row
                            .rate_asked_rad_s
                            .max((c.steering_rad - last_cmd).abs() / dt_control);
                    }
                    if phase == Phase::Resumed {
                        phase = Phase::After;
                    }
                    last_cmd = c.steering_rad;
                    last_index = c.target_index;
                    // On the path as the controller sees it (no approach speed), short
                    // of the goal's stop.
                    cruising |= state.speed_mps >= speed.0 - pacmod::CRUISING_WITHIN_MPS;
                    let progress = tracker.progress_m();
                    if cruising
                        && c.cross_track_m.abs() < CONVERGED_WITHIN_M
                        && progress < path_of_goal.length() - GOAL_STOP_M
                    {
                        speeds.push((tracker.planned_speed(progress), state.speed_mps));
                    }
                    DriveCommand {
                        steering_rad: c.steering_rad,
                        speed_mps: c.speed_mps,
                        accel_limit_mps2: 0.0,
                    }
                }
            };
            path_of.command(&mut model, cmd);
        }
        path_of.before_step(&mut model, PHYSICS_DT);
        model.step(PHYSICS_DT);
        localizer.observe(model.now(), model.state());
        driven += model.state().speed_mps * PHYSICS_DT.as_secs_f64();
        step += 1;
    }
    row.lap_s = model.now().saturating_since(t0).as_secs_f64();
    row.bound_s = min_time_s(&path_of_goal, &cfg.speed, cfg.wheelbase_m, &stopped_at);
    row.speed_rms_mps = rms(&speeds.iter().map(|(c, v)| c - v).collect::<Vec<_>>());
    row.solve_ms = solve_ms;
    let (converge, overshoot, rms_after) = figures(&after);
    row.converge_m = converge;
    row.overshoot_m = overshoot;
    row.rms_after_m = rms_after;
    row
}

/// Converged after, overshoot and RMS after convergence of the `(driven since the event,
/// cross-track)` samples.
pub fn figures(after: &[(f64, f64)]) -> (Option<f64>, f64, f64) {
    let Some(&(_, e0)) = after.first() else {
        return (None, 0.0, f64::NAN);
    };
    let side = if e0.abs() > CONVERGED_WITHIN_M {
        e0.signum()
    } else {
        0.0
    };
    let overshoot = after.iter().map(|(_, e)| -side * e).fold(0.0, f64::max);
    let last_out = after
        .iter()
        .rposition(|(_, e)| e.abs() > CONVERGED_WITHIN_M);
    let from = match last_out {
        None => Some(0),
        Some(i) if i + 1 < after.len() => Some(i + 1),
        Some(_) => None,
    };
    let converge = from.map(|i| after[i].0);
    let rms_after = from.map_or(f64::NAN, |i| {
        rms(&after[i..].iter().map(|(_, e)| *e).collect::<Vec<_>>())
    });
    (converge, overshoot, rms_after)
}

/// What the run is doing.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    Driving,
    /// The INS pose is off, since `since_s`.
    Jumped {
        since_s: f64,
    },
    JumpOver,
    Stopping,
    Stopped,
    Resumed,
    /// The disturbance is over.
    After,
}

impl Phase {
    fn next(self, start: Start, driven: f64, t: f64, speed: f64) -> Phase {
        match (start, self) {
            (Start::InsJump, Phase::Driving) if driven >= EVENT_AT_M => {
                Phase::Jumped { since_s: t }
            }
            (Start::InsJump, Phase::Jumped { since_s }) if t - since_s >= JUMP_S => Phase::JumpOver,
            (Start::Resume, Phase::Driving) if driven >= EVENT_AT_M => Phase::Stopping,
            (Start::Resume, Phase::Stopping) if speed <= 0.0 => Phase::Stopped,
            (_, p) => p,
        }
    }
}

/// Every row: each law, steering-wheel rate, speed and start, on `sc`; prints the table.
pub fn run_all(sc: &Scenario) -> Vec<Row> {
    let mut jobs = Vec::new();
    for law in LAWS {
        for speed in SOURCE_SPEEDS {
            jobs.push((law, speed, None, Start::OnPath));
            for rate in WHEEL_RATES {
                for start in Start::ALL {
                    jobs.push((law, speed, Some(rate), start));
                }
            }
        }
    }
    let rows = parallel(&jobs, |(law, speed, rate, start)| {
        run(sc, *law, *speed, *rate, *start)
    });
    let ideal = |r: &Row| {
        rows.iter()
            .find(|i| i.law == r.law && i.speed_mps == r.speed_mps && i.wheel_rate_rad_s.is_nan())
            .map_or(f64::NAN, |i| i.rms_after_m)
    };
    let rows: Vec<Row> = rows
        .iter()
        .filter(|r| !r.wheel_rate_rad_s.is_nan())
        .map(|r| Row {
            ideal_rms_m: ideal(r),
            ..r.clone()
        })
        .collect();
    print(&rows);
    rows
}

/// `f` over `jobs` on every CPU, in the jobs' order.
pub fn parallel<J: Sync, R: Send>(jobs: &[J], f: impl Fn(&J) -> R + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<(usize, R)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        mine.push((i, f(job)));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a bench worker panicked"))
            .collect()
    });
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, r)| r).collect()
}

fn print(rows: &[Row]) {
    println!(
        "slow steering: the bridge → simulated PACMod (after {:.2} s of dead time, the steering wheel at the bridge's rate, then a {:.2} s lag) → single-track model; pose from a GNSS/INS; the controllers told the actuator; targets: overshoot ≤ {OVERSHOOT_TARGET_M} m, converged (within {CONVERGED_WITHIN_M} m for good) within {CONVERGE_TARGET_M} m, RMS after ≤ {RMS_RATIO_TARGET}× the quick-steering lap, speed RMS against the profile ≤ {SPEED_RMS_TARGET_MPS} m/s (once up to speed, on the path, short of the goal), lap ≤ {TIME_RATIO_TARGET}× its bound (the least time from rest to rest, and to rest where it stopped, within the cruise speed, the lateral limit, {} m/s² up and {} m/s² down, and the front-wheel rate the profile plans with after its feedback margin of {}):",
        car_actuator(WHEEL_RATES[0]).dead_time_s,
        car_actuator(WHEEL_RATES[0]).lag_s,
        gem_core::control::speed::SpeedConfig::DEFAULT.accel_mps2,
        gem_core::control::speed::SpeedConfig::DEFAULT.decel_mps2,
        gem_core::control::speed::SpeedConfig::DEFAULT.feedback_margin,
    );
    println!(
        "| law | wheel rate (rad/s) | v (m/s) | start | converged after (m) | overshoot (m) | RMS after (m) | × quick | rate asked / available (rad/s) | speed RMS (m/s) | lap (s) | bound (s) | lap / bound | verdict |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        if let Some(e) = &r.refused {
            println!(
                "| {} | {:.1} | {:.1} | {} | - | - | - | - | - / {:.3} | - | - | - | - | refused at start-up: {e} |",
                r.law,
                r.wheel_rate_rad_s,
                r.speed_mps,
                r.start.label(),
                r.rate_available_rad_s
            );
            continue;
        }
        let misses = r.misses();
        println!(
            "| {} | {:.1} | {:.1} | {} | {} | {:.3} | {:.3} | {:.2} | {:.3} / {:.3} | {:.3} | {:.1}{} | {:.1} | {:.2} | {} |",
            r.law,
            r.wheel_rate_rad_s,
            r.speed_mps,
            r.start.label(),
            r.converge_m.map_or("never".into(), |d| format!("{d:.1}")),
            r.overshoot_m,
            r.rms_after_m,
            r.ratio(),
            r.rate_asked_rad_s,
            r.rate_available_rad_s,
            r.speed_rms_mps,
            r.lap_s,
            if r.completed { "" } else { " (not completed)" },
            r.bound_s,
            r.time_ratio(),
            if misses.is_empty() {
                "met".to_string()
            } else {
                misses.join("; ")
            }
        );
    }
    let solves: Vec<f64> = rows
        .iter()
        .flat_map(|r| r.solve_ms.iter().copied())
        .collect();
    if !solves.is_empty() {
        let s = Summary::new(solves);
        println!(
            "mpc solve time over {} solves (wall, this machine): p50 {:.3} ms, p90 {:.3}, p99 {:.3}, max {:.3}; fallbacks {}",
            s.len(),
            s.percentile(50.0),
            s.percentile(90.0),
            s.percentile(99.0),
            s.percentile(100.0),
            rows.iter().map(|r| r.fallbacks).sum::<u64>()
        );
    }
    let missed = rows.iter().filter(|r| !r.misses().is_empty()).count();
    let refused = rows.iter().filter(|r| r.refused.is_some()).count();
    println!(
        "{} of {} rows meet every target, {refused} refused at start-up, {missed} miss a target",
        rows.len() - missed - refused,
        rows.len()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_count_from_the_event() {
        // From 2 m left: crosses to −0.2, within 0.1 m for good from 4 m driven.
        let s = [
            (0.0, 2.0),
            (1.0, 1.0),
            (2.0, -0.2),
            (3.0, 0.15),
            (4.0, 0.05),
            (5.0, -0.05),
        ];
        let (conv, over, rms_after) = figures(&s);
        assert_eq!(conv, Some(4.0));
        assert!((over - 0.2).abs() < 1e-12);
        assert!((rms_after - 0.05).abs() < 1e-12);
        // On the path: no side, no overshoot; never out: converged at once.
        let (conv, over, _) = figures(&[(0.0, 0.02), (1.0, -0.05)]);
        assert_eq!((conv, over), (Some(0.0), 0.0));
        // Out at the end: never converged.
        assert_eq!(figures(&[(0.0, 0.5), (1.0, 0.3)]).0, None);
    }
}
