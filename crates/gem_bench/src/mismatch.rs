//! `pacmod --motor-mismatch-only`: the laws the car platforms accept, through the bridge
//! and the simulated PACMod, when the steering motor is not the one the suite is told of.
//!
//! The car platforms tell the controllers and `pacmod_bridge` the steering motor's figures
//! ([`Motor`]: the steering wheel's rate, the lag and the dead time; by default
//! [`Motor::TOLD_BY_DEFAULT`]). The simulated PACMod has a motor of its own
//! ([`TRUE_MOTORS`]). Each row tells the suite one [`Telling`] of that motor
//! ([`Telling::ALL`]): the defaults, the truth (the best case any identification can
//! reach), what the identification drive measures of it ([`identify`], printed above
//! the table), or the defaults while the controller learns the motor from the drive
//! ([`Learning`]). What the suite is told reaches:
//!
//! - the controllers, as their steering actuator (`TrackerConfig::with_actuator`, the
//!   front-wheel rate through the steering relation at the centre, as `~pacmod_steering`
//!   gives it);
//! - the bridge: the steering-wheel rate it sends with each command, and the rate, lag and
//!   dead time its steering check's band of acceptable motors is built on (the check's
//!   margins and tolerance are the bridge's defaults).
//!
//! The true motor turns the steering wheel at the rate each command carries, capped by
//! its own; a motor faster than it is told is therefore driven at the told rate.
//!
//! Every law at both of the slow-steering table's speeds, from the spawn pose 2 m beside
//! the path, drives a lap of the GEM track; the pose comes from the GNSS/INS-like source of
//! the other PACMod laps. When the bridge stops the car (it brakes, or disengages), the
//! controller stops as it does on the fault's `ESTOP`, an operator asks the bridge to
//! engage [`REENGAGE_AFTER_S`] after the car comes to rest, and the goal resumes from the
//! last waypoint the controller reported, as the planner resumes it. After [`MAX_STOPS`]
//! stops the run gives up.
//!
//! The cross-track figures use the true rear axle at each control step while the bridge
//! drives (not while it brakes, is held or engages):
//!
//! - **converged after**: the distance driven until the error first drops to
//!   [`CONVERGED_M`] (as the PACMod laps);
//! - **join overshoot**: the peak of the first excursion past the path, on the other side
//!   from the start, until the car is back on the start's side (0: it never crosses);
//! - **RMS after**, **max after**: the RMS and the largest |error| from convergence on;
//! - **swing**: the peak |error| after convergence in each half of the path (by where the
//!   car is along it: on the GEM track the first half holds the first bend, the second
//!   the second); the swing **grows** when the second half's peak is more than
//!   [`SWING_GROWTH`] times the first half's and more than [`SWING_FLOOR_M`];
//! - **swings beyond 0.1 m**: after convergence, how many excursions to one side of the
//!   path (from one crossing of it to the next) peak beyond [`SWING_FLOOR_M`]: a few at
//!   bends for a loop that damps them, dozens for one that weaves;
//! - **stops**: how often the bridge stopped the car, and the first stop's fault and where
//!   along the path the car was;
//! - **× quick**: the RMS after over the same law's on the simulator's quick steering at
//!   the same speed (the slow-steering table's reference lap, [`steering::run`]);
//! - **learned** (told the defaults, learning): the motor the learner's last accepted fit
//!   gives at the end of the lap (each way's rate, the lag and the dead time), when its
//!   first fit was accepted, and the figures the controller planned with at the end;
//! - **verdict**: the targets the row misses ([`Row::misses`]): those of the slow-steering
//!   table (join overshoot, convergence, RMS against the quick lap), and no growing swing,
//!   no stop, the lap completed.

use crate::pacmod::{self, INS};
use crate::steering::{
    self, completion_miss, convergence_miss, overshoot_miss, parallel, rms_miss, Start,
    CONVERGE_TARGET_M, OVERSHOOT_TARGET_M, RMS_RATIO_TARGET,
};
use crate::track::{Controller, Scenario, CONTROL_EVERY, PHYSICS_DT, SOURCE_SPEEDS};
use gem_calibrate::actuator::{self, PlanConfig};
use gem_core::control::closed_loop::{
    self, observation, CrossTrackMeter, TrackingStats, CONVERGED_M,
};
use gem_core::control::path::Path;
use gem_core::control::tracker::{Observation, Tracker};
use gem_core::geometry::Point;
use gem_core::pacmod::bridge::{BridgeConfig, Fault, StateName};
use gem_core::pacmod::longitudinal::LongitudinalConfig;
use gem_core::pacmod::plant::PlantConfig;
use gem_core::pacmod::rig::Rig;
use gem_core::time::Time;
use gem_core::vehicle::actuator::SteeringActuator;
use gem_core::vehicle::identify::{self, IdentifyConfig, Motor as IdentifiedMotor};
use gem_core::vehicle::learn::{LearnConfig, SteeringLearner};
use gem_core::vehicle::localization::Localizer;
use gem_core::vehicle::{DriveCommand, VehicleModel, VehicleParams};

/// A steering motor as the PACMod path knows it, in steering-wheel terms: a command
/// reaches it after the dead time, it turns the steering wheel at most at the rate, and the
/// steering wheel follows through the lag.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Motor {
    /// The steering wheel's rate, rad/s: the true motor's own cap, or the rate the bridge is
    /// told to send.
    pub wheel_rate_rad_s: f64,
    /// First-order lag after the rate limit, s.
    pub lag_s: f64,
    /// Dead time before a command reaches the motor, s.
    pub dead_time_s: f64,
}

impl Motor {
    /// What the car platforms tell the suite: the bridge's defaults, the same figures as
    /// [`SteeringActuator::GEM_E2`] (3.5 rad/s, 0.1 s lag, 0.1 s dead time).
    pub const TOLD_BY_DEFAULT: Motor = Motor {
        wheel_rate_rad_s: BridgeConfig::DEFAULT.steering_rate_rad_s,
        lag_s: BridgeConfig::DEFAULT.steering_lag_s,
        dead_time_s: BridgeConfig::DEFAULT.steering_dead_time_s,
    };

    /// The figures told of a motor measured (identified or learned): the slower way's
    /// rate (a plan must hold both ways), the lag and the dead time.
    pub fn told_of(m: &IdentifiedMotor) -> Motor {
        Motor {
            wheel_rate_rad_s: m.rate_left_rad_s.min(m.rate_right_rad_s),
            lag_s: m.lag_s,
            dead_time_s: m.dead_time_s,
        }
    }

    /// This motor as the identification and the learner give one: as quick both ways.
    pub fn both_ways(&self) -> IdentifiedMotor {
        IdentifiedMotor::symmetric(self.wheel_rate_rad_s, self.lag_s, self.dead_time_s)
    }

    /// The controllers told of this motor: their steering actuator.
    pub fn actuator(&self) -> SteeringActuator {
        self.both_ways().planning_actuator()
    }

    /// The bridge told of this motor.
    pub fn bridge(&self) -> BridgeConfig {
        BridgeConfig {
            steering_rate_rad_s: self.wheel_rate_rad_s,
            steering_lag_s: self.lag_s,
            steering_dead_time_s: self.dead_time_s,
            ..BridgeConfig::DEFAULT
        }
    }

    /// The simulated PACMod with this motor (reports exact).
    pub fn plant(&self) -> PlantConfig {
        PlantConfig {
            max_wheel_rate_rad_s: self.wheel_rate_rad_s,
            steering_lag_s: self.lag_s,
            steering_dead_time_s: self.dead_time_s,
            ..PlantConfig::DEFAULT
        }
    }

    /// "2.0 / 0.30 / 0.20": rate, lag, dead time.
    fn label(&self) -> String {
        format!(
            "{:.1} / {:.2} / {:.2}",
            self.wheel_rate_rad_s, self.lag_s, self.dead_time_s
        )
    }

    /// "2.000 / 0.300 / 0.200": rate, lag, dead time, to the fit's precision.
    fn label_exact(&self) -> String {
        format!(
            "{:.3} / {:.3} / {:.3}",
            self.wheel_rate_rad_s, self.lag_s, self.dead_time_s
        )
    }
}

/// The simulated PACMod's motors: slower, laggier, both, and quicker than the defaults.
pub const TRUE_MOTORS: [Motor; 4] = [
    Motor {
        wheel_rate_rad_s: 2.0,
        lag_s: 0.0,
        dead_time_s: 0.0,
    },
    Motor {
        wheel_rate_rad_s: 3.5,
        lag_s: 0.3,
        dead_time_s: 0.2,
    },
    Motor {
        wheel_rate_rad_s: 2.0,
        lag_s: 0.3,
        dead_time_s: 0.2,
    },
    Motor {
        wheel_rate_rad_s: 5.0,
        lag_s: 0.05,
        dead_time_s: 0.05,
    },
];

/// What the suite is told of a true motor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Telling {
    /// The car platforms' defaults ([`Motor::TOLD_BY_DEFAULT`]).
    Defaults,
    /// The true motor's own figures: the best case, not an identification.
    Truth,
    /// What the identification drive measures of the true motor ([`identify`]).
    Identified,
    /// The defaults to start with, the controller learning the motor from the drive and
    /// planning with what it learned so far ([`Learning`]); the bridge keeps the defaults.
    DefaultsLearning,
}

impl Telling {
    /// Every telling, in the table's order.
    pub const ALL: [Telling; 4] = [
        Telling::Defaults,
        Telling::Truth,
        Telling::Identified,
        Telling::DefaultsLearning,
    ];

    /// The name in the table.
    pub fn name(self) -> &'static str {
        match self {
            Telling::Defaults => "defaults",
            Telling::Truth => "the truth (best case)",
            Telling::Identified => "identified",
            Telling::DefaultsLearning => "defaults, learning",
        }
    }
}

/// What the identification drive measures of a true motor: `gemctl calibrate actuator`'s
/// drive ([`actuator::plan`] with its defaults) through a bridge told the defaults, in
/// front of the simulated PACMod with the true motor ([`actuator::drive_on_rig`]), and
/// its fit ([`actuator::fit`]).
#[derive(Clone, Debug)]
pub struct Identified {
    /// The figures the fit gives: each way's rate, the lag and the dead time.
    pub fit: IdentifiedMotor,
    /// The figures told: the slower way's rate (a plan must hold both ways), the lag and
    /// the dead time.
    pub told: Motor,
}

/// The identification of `truth` (the error: why the drive or the fit gave nothing).
pub fn identify(truth: &Motor) -> Result<Identified, String> {
    let plan = actuator::plan(&PlanConfig::default());
    let data = actuator::drive_on_rig(&truth.plant(), &Motor::TOLD_BY_DEFAULT.bridge(), &plan)?;
    let fit = actuator::fit(&data, &IdentifyConfig::default()).map_err(|e| e.to_string())?;
    let m = fit.steering.motor();
    Ok(Identified {
        told: Motor::told_of(&m),
        fit: m,
    })
}

/// The controller's `~learn_steering` with `~use_learned`, as its node runs them
/// (`gem_nodes`' controller: `learn.rs`, and `follow_learned` in `node.rs`): a
/// [`SteeringLearner`] starting from the figures told is fed every steering command the
/// bridge sends the PACMod and every steering report, each once ([`Learning::read`]), and
/// at each control step the front wheel commanded and the car's speed and yaw rate as the
/// tracker observes them ([`Learning::observe`]); after the step's refit, when one is due
/// (run in the loop here; the node runs it on a thread of its own), the tracker plans with
/// the motor applied so far ([`Learning::follow`]). An actuator the tracker refuses is not
/// tried again until the applied one changes. A goal resumed after a stop starts with the
/// applied motor.
pub struct Learning {
    learner: SteeringLearner,
    /// When the last command and the last report read were sent and reported.
    last_sent: Option<Time>,
    last_report: Option<Time>,
    /// When the first fit was accepted.
    first_fit: Option<Time>,
    /// The actuator the tracker refused last.
    refused: Option<SteeringActuator>,
    /// How often the tracker refused the applied actuator.
    refusals: usize,
}

/// What the learner ended a lap with.
#[derive(Clone, Debug, PartialEq)]
pub struct Learned {
    /// The last accepted fit's motor, within the learner's bounds (None: no fit accepted).
    pub motor: Option<IdentifiedMotor>,
    /// Why the last refit gave nothing, if it did not.
    pub why: Option<String>,
    /// When the first fit was accepted, s from the lap's start.
    pub first_fit_s: Option<f64>,
    /// The figures the controller planned with at the end.
    pub planned: Motor,
    /// How often the tracker refused the applied actuator.
    pub refusals: usize,
}

impl Learning {
    /// A learner for a car of `wheelbase_m`, starting from `told`.
    pub fn new(wheelbase_m: f64, told: &Motor) -> Self {
        Learning {
            learner: SteeringLearner::new(
                LearnConfig::for_wheelbase(wheelbase_m),
                told.both_ways(),
            ),
            last_sent: None,
            last_report: None,
            first_fit: None,
            refused: None,
            refusals: 0,
        }
    }

    /// The rig's last steering command and report, each once, at the times they were sent
    /// and reported (what the node's subscriptions receive).
    pub fn read(&mut self, rig: &Rig) {
        if let Some((t, c)) = rig.last_sent().filter(|(t, _)| Some(*t) != self.last_sent) {
            self.last_sent = Some(t);
            if let Some(s) = c.steer {
                self.learner.command(identify::Command {
                    t_s: t.as_secs_f64(),
                    angle_rad: s.angle_rad,
                    rate_rad_s: s.rate_limit_rad_s,
                });
            }
        }
        if let Some((t, r)) = rig
            .last_report()
            .filter(|(t, _)| Some(*t) != self.last_report)
        {
            self.last_report = Some(t);
            self.learner.report(identify::Reading {
                t_s: t.as_secs_f64(),
                angle_rad: r.wheel_rad,
            });
        }
    }

    /// A control step: the car as the tracker observes it, under the front wheel
    /// `front_rad` commanded last.
    pub fn observe(&mut self, obs: &Observation, front_rad: f64) {
        let t = obs.measured_at.as_secs_f64();
        self.learner.front_command(t, front_rad);
        self.learner.motion(t, obs.speed_mps, obs.yaw_rate_rad_s);
    }

    /// The refit due at `now`, if one is, then `tracker` planning with the applied motor.
    pub fn follow(&mut self, now: Time, tracker: &mut Tracker) {
        self.learner.update(now.as_secs_f64());
        if self.first_fit.is_none() && self.learner.motor_fit().is_some() {
            self.first_fit = Some(now);
        }
        let act = self.actuator();
        if self.refused == Some(act) || tracker.config().actuator == act {
            return;
        }
        if tracker.set_actuator(act).is_err() {
            self.refused = Some(act);
            self.refusals += 1;
        }
    }

    /// The actuator the controller plans with: the applied motor's.
    pub fn actuator(&self) -> SteeringActuator {
        self.learner.applied().planning_actuator()
    }

    /// What the lap that started at `t0` ends with.
    pub fn learned(&self, t0: Time) -> Learned {
        Learned {
            motor: self.learner.learned(),
            why: self.learner.last_error().map(str::to_owned),
            first_fit_s: self.first_fit.map(|t| t.saturating_since(t0).as_secs_f64()),
            planned: Motor::told_of(&self.learner.applied()),
            refusals: self.refusals,
        }
    }
}

/// The laws tried: every law; those the car platforms refuse on the told figures
/// (`Law::check_actuator`) are reported refused.
pub const LAWS: [Controller; 4] = [
    Controller::Lqr,
    Controller::PurePursuit,
    Controller::Mpc,
    Controller::Stanley,
];

/// An operator's enable request comes this long after the car has come to rest on a stop,
/// s.
pub const REENGAGE_AFTER_S: f64 = 2.0;
/// After this many stops a run gives up.
pub const MAX_STOPS: usize = 10;
/// A swing grows when the second half's peak exceeds the first half's by this factor.
pub const SWING_GROWTH: f64 = 1.5;
/// ... and is beyond this, m: the slow-steering table's band of convergence.
pub const SWING_FLOOR_M: f64 = steering::CONVERGED_WITHIN_M;

/// One stop of the car by the bridge.
#[derive(Clone, Copy, Debug)]
pub struct Stop {
    /// The fault the bridge reported (None: it stopped without one).
    pub fault: Option<Fault>,
    /// Where the car was along the path, m.
    pub along_m: f64,
}

/// The figures of one run.
#[derive(Clone, Debug)]
pub struct Row {
    pub law: &'static str,
    pub speed_mps: f64,
    pub truth: Motor,
    pub telling: Telling,
    /// The figures told (at the start, when learning).
    pub told: Motor,
    /// Told the defaults, learning: what the learner ended the lap with.
    pub learned: Option<Learned>,
    /// The controller refused the told figures at start-up (the error).
    pub refused: Option<String>,
    /// Cross-track figures from the first drop to [`CONVERGED_M`].
    pub stats: TrackingStats,
    pub join_overshoot_m: f64,
    /// Peak |cross-track| after convergence in each half of the path, m (NaN: none).
    pub swing_m: (f64, f64),
    /// Excursions after convergence peaking beyond [`SWING_FLOOR_M`].
    pub swings_beyond: usize,
    pub stops: Vec<Stop>,
    /// The controller reached the last waypoint.
    pub completed: bool,
    /// Simulated time from the engagement to the end, s.
    pub lap_s: f64,
    /// MPC solves that fell back to the last plan.
    pub fallbacks: u64,
    /// The same law's RMS after convergence on the simulator's quick steering (the
    /// slow-steering table's reference lap), m.
    pub quick_rms_m: f64,
}

impl Row {
    /// Whether the swing grows (see the module documentation).
    pub fn swing_grows(&self) -> bool {
        let (first, second) = self.swing_m;
        second > SWING_FLOOR_M && second > SWING_GROWTH * first
    }

    /// The RMS after convergence over the quick-steering lap's.
    pub fn ratio(&self) -> f64 {
        self.stats.rms_after_m / self.quick_rms_m
    }

    /// What misses a target (empty: every target met; a refused row has none).
    pub fn misses(&self) -> Vec<String> {
        if self.refused.is_some() {
            return Vec::new();
        }
        let stops = self.stops.len();
        [
            completion_miss(self.completed),
            (stops > 0).then(|| format!("{stops} stops")),
            overshoot_miss(self.join_overshoot_m),
            convergence_miss(self.stats.converge_m),
            rms_miss(self.ratio()),
            self.swing_grows().then(|| "swing grows".into()),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// Where the car is along a path: the arc length of its closest point, searched just
/// behind and ahead of the last one, never going back, m.
struct Along {
    path: Path,
    s: f64,
}

impl Along {
    fn measure(&mut self, p: Point) -> f64 {
        self.s = self
            .s
            .max(self.path.project(p, self.s - 1.0, self.s + 5.0).s);
        self.s
    }
}

/// One lap: `law` at `speed` (cruise, lateral acceleration limit) on `sc` from its start
/// pose, the PACMod's motor `truth`, the suite told `telling` of it: the figures `told`.
pub fn run(
    sc: &Scenario,
    law: Controller,
    speed: (f64, f64),
    truth: Motor,
    (telling, told): (Telling, Motor),
) -> Row {
    let cfg = steering::config(law, speed, told.actuator());
    let points: Vec<Point> = sc.waypoints.iter().map(|w| w.point()).collect();
    let path = Path::new(&points, 0.05).expect("valid path");
    let mut row = Row {
        law: law.label(),
        speed_mps: speed.0,
        truth,
        telling,
        told,
        learned: None,
        refused: None,
        stats: closed_loop::stats(&[], CONVERGED_M),
        join_overshoot_m: 0.0,
        swing_m: (f64::NAN, f64::NAN),
        swings_beyond: 0,
        stops: Vec::new(),
        completed: false,
        lap_s: 0.0,
        fallbacks: 0,
        quick_rms_m: f64::NAN,
    };
    let tracker = cfg
        .validate()
        .map_err(|e| e.to_string())
        .and_then(|()| Tracker::new(&points, 0, cfg.clone()).map_err(|e| e.to_string()));
    let mut tracker = match tracker {
        Ok(t) => t,
        Err(e) => {
            row.refused = Some(e);
            return row;
        }
    };
    let time_limit_s = 3.0 * path.length() / speed.0 + 120.0;
    let half_m = path.length() / 2.0;
    let mut model = VehicleModel::new(VehicleParams::DEFAULT, sc.start, Time::from_secs_f64(1.0));
    let mut rig = pacmod::rig_of(LongitudinalConfig::DEFAULT, told.bridge(), truth.plant());
    rig.engage(&mut model, PHYSICS_DT);
    let t0 = model.now();
    let mut learning =
        (telling == Telling::DefaultsLearning).then(|| Learning::new(cfg.wheelbase_m, &told));
    let mut localizer = Localizer::new(INS);
    localizer.observe(t0, model.state());
    let mut meter = CrossTrackMeter::new(path.clone());
    let mut along = Along {
        path: path.clone(),
        s: 0.0,
    };
    // (driven, along the path, cross-track) while the bridge drives.
    let mut samples: Vec<(f64, f64, f64)> = Vec::new();
    // Since a stop: when the car came to rest (None: still moving).
    let mut stopped: Option<Option<f64>> = None;
    let (mut driven, mut step, mut last_steer, mut last_index) = (0.0, 0usize, 0.0, 0usize);
    while model.now().saturating_since(t0).as_secs_f64() < time_limit_s {
        let state = rig.bridge().state();
        if stopped.is_none() && stopping(state.name()) {
            row.stops.push(Stop {
                fault: state.fault(),
                along_m: along.s,
            });
            if row.stops.len() >= MAX_STOPS {
                break;
            }
            stopped = Some(None);
        }
        if step.is_multiple_of(CONTROL_EVERY) {
            let now = model.now();
            let t = now.saturating_since(t0).as_secs_f64();
            let p = model.state().pose.point();
            let e = meter.measure(p);
            let s = along.measure(p);
            if state.name() == StateName::Driving && stopped.is_none() {
                samples.push((driven, s, e));
            }
            let obs = observation(&localizer.report().expect("observed"));
            if let Some(l) = &mut learning {
                l.observe(&obs, last_steer);
                l.follow(now, &mut tracker);
            }
            let cmd = match stopped {
                Some(rest) => {
                    let rest = rest.or((model.state().speed_mps <= 0.0).then_some(t));
                    stopped = Some(rest);
                    if rest.is_some_and(|since| t - since >= REENGAGE_AFTER_S) {
                        if state.fault().is_some_and(Fault::latched) {
                            rig.request_enable(now);
                        }
                        if !stopping(rig.bridge().state().name()) {
                            let source = tracker.twist_source().clone();
                            let cfg = match &learning {
                                Some(l) => cfg.clone().with_actuator(l.actuator()),
                                None => cfg.clone(),
                            };
                            // As the node rejects a goal it cannot plan.
                            let Ok(resumed) = Tracker::new(&points, last_index, cfg) else {
                                break;
                            };
                            tracker = resumed.with_twist_source(source);
                            stopped = None;
                        }
                    }
                    // The controller's stop on the fault's ESTOP, its steering held.
                    DriveCommand {
                        steering_rad: last_steer,
                        ..DriveCommand::default()
                    }
                }
                None => {
                    let Ok(c) = tracker.observe(obs, now) else {
                        break;
                    };
                    if let Some(r) = tracker.take_mpc_report() {
                        row.fallbacks += r.fallbacks;
                    }
                    if c.done {
                        row.completed = c.target_index == sc.waypoints.len() - 1;
                        break;
                    }
                    last_steer = c.steering_rad;
                    last_index = c.target_index;
                    DriveCommand {
                        steering_rad: c.steering_rad,
                        speed_mps: c.speed_mps,
                        accel_limit_mps2: 0.0,
                    }
                }
            };
            rig.command(cmd, now);
        }
        rig.actuate(&mut model, PHYSICS_DT);
        if let Some(l) = &mut learning {
            l.read(&rig);
        }
        model.step(PHYSICS_DT);
        localizer.observe(model.now(), model.state());
        driven += model.state().speed_mps * PHYSICS_DT.as_secs_f64();
        step += 1;
    }
    row.lap_s = model.now().saturating_since(t0).as_secs_f64();
    row.learned = learning.as_ref().map(|l| l.learned(t0));
    let cte: Vec<(f64, f64)> = samples.iter().map(|(d, _, e)| (*d, *e)).collect();
    row.stats = closed_loop::stats(&cte, CONVERGED_M);
    row.join_overshoot_m = join_overshoot(&cte);
    row.swing_m = swing(&samples, row.stats.converge_m, half_m);
    row.swings_beyond = row.stats.converge_m.map_or(0, |from| {
        let after: Vec<f64> = cte
            .iter()
            .filter(|(d, _)| *d >= from)
            .map(|(_, e)| *e)
            .collect();
        swings_beyond(&after, SWING_FLOOR_M)
    });
    row
}

/// Whether the bridge in `state` stops the car: it brakes, or it has disengaged.
fn stopping(state: StateName) -> bool {
    matches!(state, StateName::Braking | StateName::Disengaged)
}

/// The peak of the first excursion past the path of the `(driven, cross-track)` samples:
/// from the first sample on the other side from the first sample's, until one is back on
/// the first's side (0: never across).
pub fn join_overshoot(cte: &[(f64, f64)]) -> f64 {
    let Some(&(_, e0)) = cte.first() else {
        return 0.0;
    };
    let side = e0.signum();
    cte.iter()
        .map(|(_, e)| -side * e)
        .skip_while(|past| *past <= 0.0)
        .take_while(|past| *past > 0.0)
        .fold(0.0, f64::max)
}

/// The peak |cross-track| of the `(driven, along the path, cross-track)` samples from
/// `converged_m` driven on, in each half of the path (before and from `half_m` along it;
/// NaN where there is none).
pub fn swing(samples: &[(f64, f64, f64)], converged_m: Option<f64>, half_m: f64) -> (f64, f64) {
    let Some(from) = converged_m else {
        return (f64::NAN, f64::NAN);
    };
    let peak = |second: bool| {
        samples
            .iter()
            .filter(|(d, s, _)| *d >= from && (*s >= half_m) == second)
            .map(|(_, _, e)| e.abs())
            .fold(f64::NAN, f64::max)
    };
    (peak(false), peak(true))
}

/// How many excursions of the cross-track errors `e` to one side of the path (runs of
/// one sign) peak beyond `floor_m`.
pub fn swings_beyond(e: &[f64], floor_m: f64) -> usize {
    let mut count = 0;
    let (mut side, mut peak) = (0.0, 0.0_f64);
    for v in e {
        if v.signum() != side {
            count += usize::from(peak > floor_m);
            (side, peak) = (v.signum(), 0.0);
        }
        peak = peak.max(v.abs());
    }
    count + usize::from(peak > floor_m)
}

/// Every row: each law, speed, true motor and telling, on `sc` (from its start pose);
/// prints the identified figures and the table. A motor whose identification gives
/// nothing has no identified rows (the reason is printed).
pub fn run_all(sc: &Scenario) -> Vec<Row> {
    let identified = parallel(&TRUE_MOTORS, identify);
    print_identified(&identified);
    let quick_jobs: Vec<(Controller, (f64, f64))> = LAWS
        .iter()
        .flat_map(|law| SOURCE_SPEEDS.map(|speed| (*law, speed)))
        .collect();
    let quick = parallel(&quick_jobs, |(law, speed)| {
        steering::run(sc, *law, *speed, None, Start::OnPath).rms_after_m
    });
    let mut jobs = Vec::new();
    for law in LAWS {
        for speed in SOURCE_SPEEDS {
            for (truth, id) in TRUE_MOTORS.iter().zip(&identified) {
                for telling in Telling::ALL {
                    let told = match telling {
                        Telling::Defaults | Telling::DefaultsLearning => Motor::TOLD_BY_DEFAULT,
                        Telling::Truth => *truth,
                        Telling::Identified => match id {
                            Ok(id) => id.told,
                            Err(_) => continue,
                        },
                    };
                    jobs.push((law, speed, *truth, (telling, told)));
                }
            }
        }
    }
    let rows: Vec<Row> = parallel(&jobs, |(law, speed, truth, telling)| {
        let i = quick_jobs
            .iter()
            .position(|(l, v)| l == law && v == speed)
            .expect("every law and speed has a quick lap");
        Row {
            quick_rms_m: quick[i],
            ..run(sc, *law, *speed, *truth, *telling)
        }
    });
    print(&rows);
    rows
}

fn print_identified(identified: &[Result<Identified, String>]) {
    println!(
        "identified (`gemctl calibrate actuator`'s drive with its defaults through a bridge told the defaults, in front of the simulated PACMod with the true motor, and its fit): steering-wheel rate left / right (rad/s), lag (s), dead time (s); told: the slower way's rate"
    );
    for (truth, id) in TRUE_MOTORS.iter().zip(identified) {
        match id {
            Ok(id) => println!(
                "- true {}: identified {:.3} / {:.3}, {:.3}, {:.3}; told {}",
                truth.label(),
                id.fit.rate_left_rad_s,
                id.fit.rate_right_rad_s,
                id.fit.lag_s,
                id.fit.dead_time_s,
                id.told.label_exact(),
            ),
            Err(e) => println!("- true {}: not identified: {e}", truth.label()),
        }
    }
    println!();
}

/// The row's "told" cell: the telling, with the figures identified or learned.
fn told(r: &Row) -> String {
    let name = r.telling.name();
    match (&r.telling, &r.learned) {
        (Telling::Identified, _) => format!("{name} ({})", r.told.label_exact()),
        (_, Some(l)) => {
            let learned = match (&l.motor, &l.why) {
                (Some(m), _) => format!(
                    "learned {:.3} / {:.3}, {:.3}, {:.3}, first fit at {:.0} s",
                    m.rate_left_rad_s,
                    m.rate_right_rad_s,
                    m.lag_s,
                    m.dead_time_s,
                    l.first_fit_s.unwrap_or(f64::NAN)
                ),
                (None, why) => format!("nothing learned: {}", why.as_deref().unwrap_or("no refit")),
            };
            let refused = match l.refusals {
                0 => String::new(),
                n => format!("; the tracker refused it {n} times"),
            };
            format!(
                "{name} ({learned}; planned with {}{refused})",
                l.planned.label_exact()
            )
        }
        _ => name.to_string(),
    }
}

fn print(rows: &[Row]) {
    let d = BridgeConfig::DEFAULT;
    println!(
        "steering motor mismatch: the bridge (its steering check's defaults: a report {} rad outside the band up to a motor at {}× the told rate with {} s more lag and dead time, for {:.1} s, stops the car) → simulated PACMod with the true motor → single-track model, from the spawn pose 2 m beside the path; pose from a GNSS/INS; the controllers and the bridge told the defaults ({}), the truth or the identified figures, or the defaults while the controller learns the motor from the drive and plans with what it learned so far (learned: the last fit's rate left / right (rad/s), lag (s), dead time (s) at the end of the lap, and when the first fit was taken; planned with: rate / lag / dead time at the end); a stop re-engaged {REENGAGE_AFTER_S} s after rest, the goal resumed, at most {MAX_STOPS} stops; swing grows: second half's peak > {SWING_GROWTH}× the first's and > {SWING_FLOOR_M} m; targets: join overshoot ≤ {OVERSHOOT_TARGET_M} m, converged within {CONVERGE_TARGET_M} m, RMS after ≤ {RMS_RATIO_TARGET}× the same law's quick-steering lap (the slow-steering table's), no growing swing, no stop, the lap completed:",
        d.steer_mismatch_rad,
        d.steer_slowest_rate_share,
        d.steer_extra_delay_s,
        d.steer_mismatch_after.as_secs_f64(),
        Motor::TOLD_BY_DEFAULT.label(),
    );
    println!(
        "| law | v (m/s) | true motor: wheel rate (rad/s) / lag (s) / dead time (s) | told | converged after (m) | join overshoot (m) | RMS after (m) | max after (m) | swing peak 1st / 2nd half (m) | swings beyond {SWING_FLOOR_M} m | swing grows | stops | first stop: fault, at (m along the path) | lap | × quick | verdict |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let m = |v: f64| {
        if v.is_nan() {
            "-".to_string()
        } else {
            format!("{v:.3}")
        }
    };
    for r in rows.iter().filter(|r| r.refused.is_none()) {
        let first = r.stops.first().map_or("-".to_string(), |s| {
            let what = match s.fault {
                Some(Fault::SteeringMismatch {
                    expected_rad,
                    reported_rad,
                }) => format!(
                    "steering mismatch (wheel at {reported_rad:.2} rad, expected {expected_rad:.2})"
                ),
                Some(f) => f.to_string(),
                None => "no fault".to_string(),
            };
            format!("{what}, at {:.0} m", s.along_m)
        });
        let lap = if r.completed {
            format!("done, {:.1} s", r.lap_s)
        } else if r.stops.len() >= MAX_STOPS {
            format!("gave up at stop {MAX_STOPS}, {:.1} s", r.lap_s)
        } else {
            format!("not completed, {:.1} s", r.lap_s)
        };
        let misses = r.misses();
        println!(
            "| {} | {:.1} | {} | {} | {} | {:.3} | {} | {} | {} / {} | {} | {} | {} | {first} | {lap} | {:.2} | {} |",
            r.law,
            r.speed_mps,
            r.truth.label(),
            told(r),
            r.stats
                .converge_m
                .map_or("never".to_string(), |d| format!("{d:.1}")),
            r.join_overshoot_m,
            m(r.stats.rms_after_m),
            m(r.stats.max_after_m),
            m(r.swing_m.0),
            m(r.swing_m.1),
            r.swings_beyond,
            if r.swing_grows() { "grows" } else { "-" },
            r.stops.len(),
            r.ratio(),
            if misses.is_empty() {
                "met".to_string()
            } else {
                misses.join("; ")
            },
        );
    }
    for law in LAWS.map(Controller::label) {
        let refused: Vec<&Row> = rows
            .iter()
            .filter(|r| r.law == law && r.refused.is_some())
            .collect();
        if let Some(first) = refused.first() {
            println!(
                "{law}: refused at start-up in {} of {} rows ({})",
                refused.len(),
                rows.iter().filter(|r| r.law == law).count(),
                first.refused.as_deref().unwrap_or_default()
            );
        }
    }
    for telling in Telling::ALL {
        let of: Vec<&Row> = rows
            .iter()
            .filter(|r| r.telling == telling && r.refused.is_none())
            .collect();
        println!(
            "told {}: {} of {} rows meet every target",
            telling.name(),
            of.iter().filter(|r| r.misses().is_empty()).count(),
            of.len()
        );
    }
    let stopped = rows.iter().filter(|r| !r.stops.is_empty()).count();
    let refused = rows.iter().filter(|r| r.refused.is_some()).count();
    println!(
        "{} rows: {refused} refused at start-up, {stopped} stopped by the bridge at least once, {} completed the lap, {} with a growing swing; mpc fallbacks {}",
        rows.len(),
        rows.iter().filter(|r| r.completed).count(),
        rows.iter().filter(|r| r.swing_grows()).count(),
        rows.iter().map(|r| r.fallbacks).sum::<u64>(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use gem_core::geometry::Pose;

    #[test]
    fn the_join_overshoot_is_the_first_excursion_past_the_path() {
        // From 2 m left: 0.2 past, back left, then 0.5 past (a later swing, not the join's).
        let s = [
            (0.0, 2.0),
            (1.0, -0.1),
            (2.0, -0.2),
            (3.0, 0.05),
            (4.0, -0.5),
        ];
        assert!((join_overshoot(&s) - 0.2).abs() < 1e-12);
        assert_eq!(join_overshoot(&[(0.0, -2.0), (1.0, -0.01)]), 0.0);
        assert_eq!(join_overshoot(&[]), 0.0);
    }

    #[test]
    fn the_swing_is_the_peak_of_each_half_after_convergence() {
        // Half at 10 m along; converged at 2 m driven, so the 3.0 before it is left out.
        let s = [
            (0.0, 0.0, 3.0),
            (2.0, 2.0, 0.04),
            (4.0, 4.0, -0.08),
            (12.0, 12.0, 0.3),
            (14.0, 14.0, -0.2),
        ];
        assert_eq!(swing(&s, Some(2.0), 10.0), (0.08, 0.3));
        let (a, b) = swing(&s, None, 10.0);
        assert!(a.is_nan() && b.is_nan());
        let row = |swing_m| Row {
            law: "lqr",
            speed_mps: 2.8,
            truth: Motor::TOLD_BY_DEFAULT,
            telling: Telling::Defaults,
            told: Motor::TOLD_BY_DEFAULT,
            learned: None,
            refused: None,
            stats: closed_loop::stats(&[], CONVERGED_M),
            join_overshoot_m: 0.0,
            swing_m,
            swings_beyond: 0,
            stops: Vec::new(),
            completed: true,
            lap_s: 0.0,
            fallbacks: 0,
            quick_rms_m: 0.01,
        };
        assert!(row((0.08, 0.3)).swing_grows());
        // Within the floor, or not 1.5× the first: no growth.
        assert!(!row((0.02, 0.09)).swing_grows());
        assert!(!row((0.3, 0.4)).swing_grows());
    }

    #[test]
    fn swings_are_counted_from_crossing_to_crossing() {
        // Left 0.2, right 0.05, left 0.15 (two points), right 0.3: three beyond 0.1 m.
        let e = [0.1, 0.2, -0.05, 0.15, 0.12, -0.3];
        assert_eq!(swings_beyond(&e, 0.1), 3);
        assert_eq!(swings_beyond(&[0.01, -0.02, 0.03], 0.1), 0);
        assert_eq!(swings_beyond(&[], 0.1), 0);
    }

    /// A run gives finite figures on a short path: told the truth, the LQR joins from
    /// 0.5 m and finishes without a stop; Stanley is refused.
    #[test]
    fn a_lap_told_the_truth_completes_without_a_stop() {
        let line: Vec<Pose> = (0..=200)
            .map(|i| Pose::new(i as f64 * 0.2, 0.0, 0.0))
            .collect();
        let sc = Scenario {
            name: "line",
            start: Pose::new(0.0, 0.5, 0.0),
            waypoints: line,
        };
        let truth = (Telling::Truth, TRUE_MOTORS[2]);
        let r = run(
            &sc,
            Controller::Lqr,
            SOURCE_SPEEDS[0],
            TRUE_MOTORS[2],
            truth,
        );
        assert!(
            r.refused.is_none() && r.completed && r.stops.is_empty(),
            "{r:?}"
        );
        assert!(r.stats.converge_m.is_some() && r.stats.rms_after_m.is_finite());
        let r = run(
            &sc,
            Controller::Stanley,
            SOURCE_SPEEDS[0],
            TRUE_MOTORS[2],
            truth,
        );
        assert!(r.refused.is_some());
    }

    /// The identification drive measures the slowest, laggiest motor it is not told of
    /// close to its figures.
    #[test]
    fn the_identification_measures_a_motor_it_is_not_told_of() {
        let truth = TRUE_MOTORS[2];
        let id = identify(&truth).unwrap();
        let told = id.told;
        assert!(
            (told.wheel_rate_rad_s - truth.wheel_rate_rad_s).abs() < 0.1,
            "{told:?}"
        );
        assert!((told.lag_s - truth.lag_s).abs() < 0.05, "{told:?}");
        assert!(
            (told.dead_time_s - truth.dead_time_s).abs() < 0.05,
            "{told:?}"
        );
        assert!(told.actuator().validate().is_ok() && told.bridge().validate().is_ok());
    }

    /// A short path, 2 m beside it at the start.
    fn line(length_m: f64) -> Scenario {
        let line: Vec<Pose> = (0..=(length_m / 0.2) as usize)
            .map(|i| Pose::new(i as f64 * 0.2, 0.0, 0.0))
            .collect();
        Scenario {
            name: "line",
            start: Pose::new(0.0, 2.0, 0.0),
            waypoints: line,
        }
    }

    /// Told the defaults, the controller learns the slowest, laggiest motor from the join
    /// and plans with figures moved towards it.
    #[test]
    fn a_lap_learning_the_motor_learns_it_and_plans_with_it() {
        let truth = TRUE_MOTORS[2];
        let told = (Telling::DefaultsLearning, Motor::TOLD_BY_DEFAULT);
        let r = run(&line(100.0), Controller::Lqr, SOURCE_SPEEDS[0], truth, told);
        assert!(r.completed && r.stops.is_empty(), "{r:?}");
        let l = r.learned.expect("learning");
        let m = l.motor.expect("a fit");
        assert!(
            (m.rate_left_rad_s.min(m.rate_right_rad_s) - truth.wheel_rate_rad_s).abs() < 0.1
                && (m.lag_s - truth.lag_s).abs() < 0.05
                && (m.dead_time_s - truth.dead_time_s).abs() < 0.05,
            "{m:?}"
        );
        assert!(l.first_fit_s.is_some_and(|t| t < 15.0), "{l:?}");
        // Moved towards the truth by limited steps; never refused.
        let (p, d) = (l.planned, Motor::TOLD_BY_DEFAULT);
        assert!(
            p.wheel_rate_rad_s < d.wheel_rate_rad_s && p.lag_s > d.lag_s,
            "{l:?}"
        );
        assert_eq!(l.refusals, 0);
        // Not learning: nothing learned.
        let r = run(
            &line(20.0),
            Controller::Lqr,
            SOURCE_SPEEDS[0],
            truth,
            (Telling::Defaults, Motor::TOLD_BY_DEFAULT),
        );
        assert!(r.learned.is_none());
    }

    /// A tracker that refuses the applied motor (quick steering cannot become slow) keeps
    /// its own; the refusal is counted once until the applied motor changes.
    #[test]
    fn a_refused_motor_is_counted_and_not_tried_again() {
        let sc = line(20.0);
        let points: Vec<Point> = sc.waypoints.iter().map(|w| w.point()).collect();
        let cfg = steering::config(Controller::Lqr, SOURCE_SPEEDS[0], SteeringActuator::FAST);
        let mut tracker = Tracker::new(&points, 0, cfg).unwrap();
        let mut learning =
            Learning::new(VehicleParams::DEFAULT.wheelbase_m, &Motor::TOLD_BY_DEFAULT);
        for s in [1.0, 1.1, 7.0] {
            learning.follow(Time::from_secs_f64(s), &mut tracker);
        }
        assert_eq!(learning.refusals, 1);
        assert_eq!(tracker.config().actuator, SteeringActuator::FAST);
    }

    #[test]
    fn a_measured_motor_is_told_by_its_slower_way() {
        let m = IdentifiedMotor {
            rate_left_rad_s: 2.5,
            rate_right_rad_s: 2.0,
            lag_s: 0.3,
            dead_time_s: 0.2,
        };
        assert_eq!(Motor::told_of(&m), TRUE_MOTORS[2]);
        assert_eq!(Motor::told_of(&TRUE_MOTORS[2].both_ways()), TRUE_MOTORS[2]);
    }

    #[test]
    fn the_defaults_told_are_the_car_platforms() {
        let told = Motor::TOLD_BY_DEFAULT;
        assert_eq!(told.actuator(), SteeringActuator::GEM_E2);
        assert_eq!(told.bridge(), BridgeConfig::DEFAULT);
        for m in TRUE_MOTORS {
            assert!(m.plant().validate().is_ok());
            assert!(m.bridge().validate().is_ok());
            assert!(m.actuator().validate().is_ok());
        }
    }
}
