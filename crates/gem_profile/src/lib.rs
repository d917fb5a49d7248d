//! Fault-latency analysis of the suite, for `gemctl profile` and the tests that check its
//! reports: the links of the fault and recovery chains, the matcher that turns what a
//! profiler sees into one timestamp per link, the summaries of many runs, the hold-off
//! windows the held faults are timed by ([`hold_offs`]), which measured events a CPU stall
//! could have delayed ([`stalls`]) and the report itself ([`report`]). ROS-free: the
//! profiler translates its messages into [`Seen`] observations and hands over what it
//! measured; the failure types themselves are `gem_core::faults`.
//!
//! A *run* injects one failure type (fault direction) or clears it again (recovery
//! direction). The profiler arms a [`Run`] just before it asks for the change and then
//! feeds it every relevant observation ([`Seen`]) with its [`Stamp`]: the wall time the
//! message arrived and the ROS (sim) time it carries. Each link takes the first matching
//! observation after arming; the run is complete when every link has one.
//!
//! The fault chain of this suite is not a straight line: the controller's safety gate
//! zeroes the speed as soon as it sees ERROR, in parallel with the planner's
//! pause-and-cancel. So every link names its *cause* (the link that must precede it),
//! and order is checked along those edges:
//!
//! ```text
//! fault:    onset ─ ERROR ─┬─ planner PAUSED
//!                          ├─ cancel sent ─ goal PREEMPTED
//!                          └─ braking command (speed < 0.01, or a stop's ramp)
//! recovery: cleared ─ RUNNING ─┬─ planner RUNNING
//!                              └─ goal sent ─ goal ACTIVE ─ moving command (speed > 1.0)
//! ```
//!
//! The *onset* of an immediate fault (e-stop, battery, temperature) is the first faulty
//! input message. A fault with a hold-off window (GPS, signal) only becomes a fault when the
//! window since the last good message has passed: its onset is the first `/clock` message
//! past that deadline, so its latencies measure the detection, not the window (the window
//! itself is reported as the observed hold-off).
#![warn(missing_docs)]

#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod hold_offs;
pub mod report;
pub mod stalls;

use gem_core::faults::FaultKind;
use gem_core::state_manager::{ErrorBits, StateManagerConfig};
use gem_core::stats::Summary;
use gem_core::time::Time;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// When something was seen: the wall time its message arrived (seconds since the
/// profiler's start) and the ROS time it carries (its header stamp, or the latest `/clock`
/// for messages without a header).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stamp {
    /// Wall receive time, seconds since the profiler's epoch.
    pub wall_s: f64,
    /// ROS (sim) time, in seconds when serialised.
    #[serde(serialize_with = "time_as_secs", deserialize_with = "time_from_secs")]
    pub sim: Time,
}

fn time_as_secs<S: serde::Serializer>(t: &Time, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(t.as_secs_f64())
}

fn time_from_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Time, D::Error> {
    f64::deserialize(d).map(Time::from_secs_f64)
}

/// Which way a run goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Nominal → fault: the system must stop.
    Fault,
    /// Fault → cleared: the system must drive on.
    Recovery,
}

impl Direction {
    /// The links of this direction's chain, causes before effects: [`Link::ALL`] holds
    /// the fault's chain, then the recovery's from [`Link::Cleared`] on.
    pub fn links(self) -> &'static [Link] {
        let recovery = Link::Cleared as usize;
        match self {
            Direction::Fault => &Link::ALL[..recovery],
            Direction::Recovery => &Link::ALL[recovery..],
        }
    }

    /// Name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Fault => "fault",
            Direction::Recovery => "recovery",
        }
    }
}

/// Declares [`Link`] and [`Link::ALL`] from one list.
macro_rules! links {
    ($( $(#[doc = $doc:literal])+ $link:ident, )+) => {
        /// One link of a chain.
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        #[serde(rename_all = "snake_case")]
        pub enum Link {
            $( $(#[doc = $doc])+ $link, )+
        }

        impl Link {
            /// Every link in declaration order.
            pub const ALL: &'static [Link] = &[$(Link::$link),+];
        }
    };
}

// The fault's chain, then the recovery's; each chain causes before effects.
links! {
    /// The fault begins: first faulty input, or the hold-off deadline passing.
    Onset,
    /// `/system_state` ERROR with the fault's bit.
    SystemError,
    /// `/task_planner_status` PAUSED.
    PlannerPaused,
    /// The planner's cancel on `/navigate_waypoints/cancel`.
    CancelSent,
    /// The goal's result: PREEMPTED.
    GoalPreempted,
    /// `/gem/ackermann_cmd` braking: speed < 0.01 (an emergency stop), or a comfortable
    /// stop's first ramp command (its `acceleration` limit set).
    BrakingCommand,
    /// First good input after the clear.
    Cleared,
    /// `/system_state` RUNNING.
    SystemRunning,
    /// `/task_planner_status` RUNNING.
    PlannerRunning,
    /// The resumed goal on `/navigate_waypoints/goal`.
    GoalSent,
    /// That goal ACTIVE in `/navigate_waypoints/status`.
    GoalActive,
    /// `/gem/ackermann_cmd` speed > 1.0.
    MovingCommand,
}

impl Link {
    /// The link that causes this one (`None` for the first of a chain).
    pub fn cause(self) -> Option<Link> {
        use Link::*;
        match self {
            Onset | Cleared => None,
            SystemError => Some(Onset),
            PlannerPaused | CancelSent | BrakingCommand => Some(SystemError),
            GoalPreempted => Some(CancelSent),
            SystemRunning => Some(Cleared),
            PlannerRunning | GoalSent => Some(SystemRunning),
            GoalActive => Some(GoalSent),
            MovingCommand => Some(GoalActive),
        }
    }

    /// Short name for tables.
    pub fn label(self) -> &'static str {
        use Link::*;
        match self {
            Onset => "fault onset",
            SystemError => "/system_state ERROR",
            PlannerPaused => "planner PAUSED",
            CancelSent => "cancel sent",
            GoalPreempted => "goal PREEMPTED",
            BrakingCommand => "braking command",
            Cleared => "signal cleared",
            SystemRunning => "/system_state RUNNING",
            PlannerRunning => "planner RUNNING",
            GoalSent => "goal sent",
            GoalActive => "goal ACTIVE",
            MovingCommand => "speed > 1.0",
        }
    }
}

/// One observation, as the profiler's subscriptions translate their messages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Seen<'a> {
    /// A message on the run's input topic, as a number (see [`FaultKind::is_faulty`]).
    Input(f64),
    /// A `/clock` message (its time is the stamp's `sim`).
    Clock,
    /// `/system_state` ERROR with these error bits.
    SystemError(ErrorBits),
    /// `/system_state` RUNNING.
    SystemRunning,
    /// `/task_planner_status` PAUSED.
    PlannerPaused,
    /// `/task_planner_status` RUNNING.
    PlannerRunning,
    /// A cancel request on the action's `cancel` topic.
    CancelSent,
    /// A goal on the action's `goal` topic, with its id.
    GoalSent(&'a str),
    /// A goal listed ACTIVE in the action's `status`.
    GoalActive(&'a str),
    /// A result with status PREEMPTED.
    GoalPreempted,
    /// A speed command.
    /// Speed and acceleration limit.
    Command(f64, f64),
}

pub use gem_core::control::stop::STOPPED_BELOW_MPS;
/// Commanded speed above which the car is commanded to drive again.
pub const MOVING_ABOVE_MPS: f64 = 1.0;

/// One injection or clear being measured.
#[derive(Clone, Debug)]
pub struct Run {
    kind: FaultKind,
    direction: Direction,
    threshold: StateManagerConfig,
    hold_off: Option<Duration>,
    /// Sim stamp of the last good input (the hold-off window counts from it).
    last_good: Option<Time>,
    /// The first faulty input (fault direction).
    first_bad: Option<Stamp>,
    /// The goal the planner sent (recovery direction), to recognise it in the status.
    goal: Option<String>,
    /// Goals seen ACTIVE before the goal itself reached us: the server's status and the
    /// planner's goal travel on different connections, so their arrival order can swap.
    active_early: Vec<(String, Stamp)>,
    at: Vec<(Link, Option<Stamp>)>,
}

impl Run {
    /// Arms a run of `kind` in `direction` under the state manager's thresholds `cfg`;
    /// `last_good` is the sim stamp of the last good input seen before arming.
    pub fn new(
        kind: FaultKind,
        direction: Direction,
        cfg: &StateManagerConfig,
        last_good: Option<Time>,
    ) -> Run {
        Run {
            kind,
            direction,
            threshold: cfg.clone(),
            hold_off: kind.hold_off(cfg),
            last_good,
            first_bad: None,
            goal: None,
            active_early: Vec::new(),
            at: direction.links().iter().map(|&l| (l, None)).collect(),
        }
    }

    /// The failure type.
    pub fn kind(&self) -> FaultKind {
        self.kind
    }

    /// The direction.
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// When `link` was seen, if it was (and belongs to this run's chain).
    pub fn at(&self, link: Link) -> Option<Stamp> {
        self.at.iter().find(|(l, _)| *l == link).and_then(|e| e.1)
    }

    /// When a fault with a hold-off window becomes due (ROS time): the last good input's
    /// stamp plus the window, once the first faulty input has been seen. `None` for
    /// immediate faults, recovery runs, and before the faulty input arrives.
    pub fn deadline(&self) -> Option<Time> {
        match (
            self.direction,
            self.hold_off,
            self.last_good,
            self.first_bad,
        ) {
            (Direction::Fault, Some(window), Some(good), Some(_)) => {
                Some(good.saturating_add(window))
            }
            _ => None,
        }
    }

    /// The links not seen yet.
    pub fn missing(&self) -> Vec<Link> {
        self.at
            .iter()
            .filter(|e| e.1.is_none())
            .map(|e| e.0)
            .collect()
    }

    /// True once every link has been seen.
    pub fn is_complete(&self) -> bool {
        self.at.iter().all(|e| e.1.is_some())
    }

    fn mark(&mut self, link: Link, t: Stamp) {
        if let Some(e) = self.at.iter_mut().find(|e| e.0 == link && e.1.is_none()) {
            e.1 = Some(t);
        }
    }

    /// Feeds one observation.
    pub fn observe(&mut self, seen: Seen, t: Stamp) {
        use Link::*;
        match (self.direction, seen) {
            (Direction::Fault, Seen::Input(v)) => {
                if !self.kind.is_faulty(v, &self.threshold) {
                    if self.first_bad.is_none() {
                        self.last_good = Some(t.sim);
                    }
                } else if self.first_bad.is_none() {
                    self.first_bad = Some(t);
                    if self.hold_off.is_none() {
                        self.mark(Onset, t);
                    }
                }
            }
            (Direction::Fault, Seen::Clock) => {
                if let (Some(window), Some(good), Some(_)) =
                    (self.hold_off, self.last_good, self.first_bad)
                {
                    if t.sim.saturating_since(good) > window {
                        self.mark(Onset, t);
                    }
                }
            }
            (Direction::Fault, Seen::SystemError(bits)) if bits.contains(self.kind.bit()) => {
                self.mark(SystemError, t)
            }
            (Direction::Fault, Seen::PlannerPaused) => self.mark(PlannerPaused, t),
            (Direction::Fault, Seen::CancelSent) => self.mark(CancelSent, t),
            (Direction::Fault, Seen::GoalPreempted) => self.mark(GoalPreempted, t),
            (Direction::Fault, Seen::Command(v, a)) if v.abs() < STOPPED_BELOW_MPS || a > 0.0 => {
                self.mark(BrakingCommand, t)
            }
            (Direction::Recovery, Seen::Input(v)) if !self.kind.is_faulty(v, &self.threshold) => {
                self.mark(Cleared, t)
            }
            (Direction::Recovery, Seen::SystemRunning) => self.mark(SystemRunning, t),
            (Direction::Recovery, Seen::PlannerRunning) => self.mark(PlannerRunning, t),
            (Direction::Recovery, Seen::GoalSent(id)) => {
                if self.goal.is_none() {
                    self.goal = Some(id.to_owned());
                    self.mark(GoalSent, t);
                    if let Some(&(_, early)) = self.active_early.iter().find(|e| e.0 == id) {
                        self.mark(GoalActive, early);
                    }
                }
            }
            (Direction::Recovery, Seen::GoalActive(id)) => match self.goal.as_deref() {
                Some(goal) if goal == id => self.mark(GoalActive, t),
                Some(_) => {}
                None => {
                    if !self.active_early.iter().any(|e| e.0 == id) {
                        self.active_early.push((id.to_owned(), t));
                    }
                }
            },
            // A stop's ramp (its acceleration limit set) is not moving again.
            (Direction::Recovery, Seen::Command(v, a)) if v > MOVING_ABOVE_MPS && a == 0.0 => {
                self.mark(MovingCommand, t)
            }
            // Everything else belongs to the other direction, to another fault, or is a
            // value that does not complete a link (a good input during a fault run, a
            // moving command during a fault run, ...).
            (Direction::Fault, _) | (Direction::Recovery, _) => {}
        }
    }

    /// The finished record (see [`RunRecord::new`]); `None` until [`Run::is_complete`].
    pub fn record(&self, index: usize) -> Option<RunRecord> {
        let at: Vec<(Link, Stamp)> = self
            .at
            .iter()
            .map(|&(link, t)| Some((link, t?)))
            .collect::<Option<_>>()?;
        let observed_hold_off_s = match (self.hold_off, self.last_good, self.at(Link::SystemError))
        {
            (Some(_), Some(good), Some(err)) => Some(err.sim.saturating_since(good).as_secs_f64()),
            _ => None,
        };
        Some(RunRecord::new(
            self.kind,
            self.direction,
            index,
            observed_hold_off_s,
            &at,
        ))
    }
}

fn signed_ms(t: Time, origin: Time) -> f64 {
    (t.as_nanos() as f64 - origin.as_nanos() as f64) / 1e6
}

/// One link of a finished run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LinkSample {
    /// Which link.
    pub link: Link,
    /// Wall time since the chain's first link, ms.
    pub wall_ms: f64,
    /// Wall time since its cause, ms.
    pub step_wall_ms: f64,
    /// ROS (sim) time since the chain's first link, ms (quantised by the clock's step).
    pub sim_ms: f64,
    /// When it was seen.
    pub at: Stamp,
}

/// A finished run (also read back from a report's JSON).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunRecord {
    /// Failure type.
    pub kind: FaultKind,
    /// Direction.
    pub direction: Direction,
    /// Round number (0-based).
    pub index: usize,
    /// Faults with a hold-off: sim seconds from the last good input to ERROR.
    pub observed_hold_off_s: Option<f64>,
    /// One sample per link, in chain order.
    pub links: Vec<LinkSample>,
}

impl RunRecord {
    /// The record of round `index` whose links were seen at `at` (in chain order, the
    /// chain's first link first): per link its latency from the chain's first link and
    /// from its cause.
    pub fn new(
        kind: FaultKind,
        direction: Direction,
        index: usize,
        observed_hold_off_s: Option<f64>,
        at: &[(Link, Stamp)],
    ) -> RunRecord {
        let seen = |link: Link| at.iter().find(|e| e.0 == link).map(|e| e.1);
        let links = at
            .iter()
            .map(|&(link, t)| {
                let origin = at[0].1;
                let cause = link.cause().and_then(seen).unwrap_or(origin);
                LinkSample {
                    link,
                    wall_ms: (t.wall_s - origin.wall_s) * 1e3,
                    step_wall_ms: (t.wall_s - cause.wall_s) * 1e3,
                    sim_ms: signed_ms(t.sim, origin.sim),
                    at: t,
                }
            })
            .collect();
        RunRecord {
            kind,
            direction,
            index,
            observed_hold_off_s,
            links,
        }
    }
}

/// Percentiles of one link over many runs.
#[derive(Clone, Debug, Serialize)]
pub struct LinkStats {
    /// Failure type.
    pub kind: FaultKind,
    /// Direction.
    pub direction: Direction,
    /// Link.
    pub link: Link,
    /// Number of samples.
    pub n: usize,
    /// Wall ms since the chain's first link: p50, p95, p99, max.
    pub wall_ms: [f64; 4],
    /// Wall ms since the cause: p50, p95, p99, max.
    pub step_wall_ms: [f64; 4],
    /// Sim ms since the chain's first link: p50, max.
    pub sim_ms: [f64; 2],
}

fn quartet(s: &Summary) -> [f64; 4] {
    [
        s.percentile(50.0),
        s.percentile(95.0),
        s.percentile(99.0),
        s.percentile(100.0),
    ]
}

/// The runs of one failure type and direction.
pub fn runs_of(runs: &[RunRecord], kind: FaultKind, direction: Direction) -> Vec<&RunRecord> {
    runs.iter()
        .filter(|r| r.kind == kind && r.direction == direction)
        .collect()
}

/// A run that did not complete.
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    /// Failure type.
    pub kind: FaultKind,
    /// Direction.
    pub direction: Direction,
    /// Round number (0-based).
    pub index: usize,
    /// What went wrong.
    pub reason: String,
}

/// Samples of `link` (wall ms since the chain's start) in the runs of `kinds`/`direction`.
pub fn link_samples(
    runs: &[RunRecord],
    kinds: &[FaultKind],
    direction: Direction,
    link: Link,
) -> Vec<f64> {
    runs.iter()
        .filter(|r| r.direction == direction && kinds.contains(&r.kind))
        .flat_map(|r| r.links.iter().filter(|s| s.link == link).map(|s| s.wall_ms))
        .collect()
}

/// "estop fault run 3": how reports name a run.
pub fn run_label(kind: FaultKind, direction: Direction, index: usize) -> String {
    format!("{} {} run {index}", kind.name(), direction.name())
}

/// Statistics per (failure type, direction, link) over `runs`, in chain order.
pub fn link_stats(runs: &[RunRecord]) -> Vec<LinkStats> {
    let mut out = Vec::new();
    for kind in FaultKind::ALL {
        for direction in [Direction::Fault, Direction::Recovery] {
            let mine = runs_of(runs, kind, direction);
            if mine.is_empty() {
                continue;
            }
            for &link in direction.links() {
                let pick = |f: fn(&LinkSample) -> f64| {
                    Summary::new(
                        mine.iter()
                            .flat_map(|r| r.links.iter().filter(|s| s.link == link).map(f))
                            .collect(),
                    )
                };
                let (wall, step, sim) = (
                    pick(|s| s.wall_ms),
                    pick(|s| s.step_wall_ms),
                    pick(|s| s.sim_ms),
                );
                out.push(LinkStats {
                    kind,
                    direction,
                    link,
                    n: wall.len(),
                    wall_ms: quartet(&wall),
                    step_wall_ms: quartet(&step),
                    sim_ms: [sim.percentile(50.0), sim.percentile(100.0)],
                });
            }
        }
    }
    out
}

/// How far apart two messages published at the same instant can be *received* on two
/// connections of one process, in wall ms. Every link arrives on its own TCP connection,
/// written by the publisher's own thread to its subscribers one after the other and read by
/// a thread of its own: on two busy virtual CPUs an effect was measured arriving up to
/// ~3 ms before its cause. Orderings are checked up to this skew, on medians over many
/// runs.
pub const RECEIPT_SKEW_MS: f64 = 2.0;

/// What is wrong with a set of runs: a link without samples for a (type, direction) that
/// was run; or, over all runs of a direction (the chain after the onset is the same for
/// every failure type, so the medians have enough samples to be robust), a link whose
/// median latency is not after the chain's start or whose median step from its cause is
/// negative by more than [`RECEIPT_SKEW_MS`]. Empty when all is well. Single samples
/// received early are not errors (see [`early_samples`]).
pub fn check(runs: &[RunRecord]) -> Vec<String> {
    let mut problems = Vec::new();
    for s in link_stats(runs).iter().filter(|s| s.n == 0) {
        problems.push(format!(
            "{} {}: no samples of {}",
            s.kind.name(),
            s.direction.name(),
            s.link.label()
        ));
    }
    for direction in [Direction::Fault, Direction::Recovery] {
        for &link in direction.links().iter().skip(1) {
            let pick = |f: fn(&LinkSample) -> f64| {
                Summary::new(
                    runs.iter()
                        .filter(|r| r.direction == direction)
                        .flat_map(|r| r.links.iter().filter(|s| s.link == link).map(f))
                        .collect(),
                )
            };
            let (total, step) = (pick(|s| s.wall_ms), pick(|s| s.step_wall_ms));
            if total.is_empty() {
                continue;
            }
            let (total, step) = (total.percentile(50.0), step.percentile(50.0));
            let name = direction.name();
            if total.is_nan() || total <= 0.0 {
                problems.push(format!(
                    "{name}: median {} at {total:.3} ms is not after the chain's start",
                    link.label()
                ));
            }
            if step.is_nan() || step < -RECEIPT_SKEW_MS {
                problems.push(format!(
                    "{name}: median {} {step:.3} ms after its cause {}",
                    link.label(),
                    link.cause().map_or("—", |c| c.label())
                ));
            }
        }
    }
    problems
}

/// Every `direction` run's `link` as an event: (its chain's start and the link's arrival,
/// wall seconds since the profiler's epoch; the latency, ms). For
/// [`crate::stalls::Split`].
pub fn link_events(runs: &[RunRecord], direction: Direction, link: Link) -> Vec<(f64, f64, f64)> {
    runs.iter()
        .filter(|r| r.direction == direction)
        .filter_map(|r| {
            let start = r.links.first()?.at.wall_s;
            let s = r.links.iter().find(|s| s.link == link)?;
            Some((start.min(s.at.wall_s), start.max(s.at.wall_s), s.wall_ms))
        })
        .collect()
}

/// Samples that reached the profiler before their chain's first link: (run, link, ms).
/// Each link arrives on its own TCP connection and subscriber thread, so when one
/// subscription lags (a descheduled thread, CPU steal on a virtual machine) an effect can
/// be *received* before its cause. They stay in the statistics (they are what was seen);
/// the report counts them.
pub fn early_samples(runs: &[RunRecord]) -> Vec<(&RunRecord, Link, f64)> {
    runs.iter()
        .flat_map(|r| {
            r.links
                .iter()
                .skip(1)
                .filter(|s| s.wall_ms.is_nan() || s.wall_ms <= 0.0)
                .map(move |s| (r, s.link, s.wall_ms))
        })
        .collect()
}

/// Message-period statistics of one topic, from its receive times.
#[derive(Clone, Debug, Default)]
pub struct Periods {
    last: Option<Stamp>,
    wall_ms: Vec<f64>,
    sim_ms: Vec<f64>,
}

/// The period summary of one topic.
#[derive(Clone, Debug, Serialize)]
pub struct PeriodStats {
    /// Messages counted.
    pub messages: usize,
    /// Wall period, ms: p50, p95, p99, max.
    pub wall_ms: [f64; 4],
    /// Sim period, ms: p50, p95, p99, max.
    pub sim_ms: [f64; 4],
}

impl Periods {
    /// Counts a message seen at `t`.
    pub fn push(&mut self, t: Stamp) {
        if let Some(last) = self.last {
            self.wall_ms.push((t.wall_s - last.wall_s) * 1e3);
            self.sim_ms.push(signed_ms(t.sim, last.sim));
        }
        self.last = Some(t);
    }

    /// The summary; `None` before two messages.
    pub fn stats(&self) -> Option<PeriodStats> {
        if self.wall_ms.is_empty() {
            return None;
        }
        Some(PeriodStats {
            messages: self.wall_ms.len() + 1,
            wall_ms: quartet(&Summary::new(self.wall_ms.clone())),
            sim_ms: quartet(&Summary::new(self.sim_ms.clone())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(wall_ms: f64, sim_s: f64) -> Stamp {
        Stamp {
            wall_s: wall_ms / 1e3,
            sim: Time::from_secs_f64(sim_s),
        }
    }

    fn cfg() -> StateManagerConfig {
        StateManagerConfig::default()
    }

    /// Feeds a complete e-stop fault chain starting at wall 100 ms, sim 10 s.
    fn estop_fault_run() -> Run {
        let mut r = Run::new(FaultKind::Estop, Direction::Fault, &cfg(), None);
        r.observe(Seen::Input(0.0), at(99.0, 9.99));
        r.observe(Seen::Input(1.0), at(100.0, 10.0));
        r.observe(Seen::SystemError(ErrorBits::ESTOP), at(100.3, 10.0));
        r.observe(Seen::Command(0.0, 0.0), at(100.6, 10.01));
        r.observe(Seen::CancelSent, at(100.8, 10.01));
        r.observe(Seen::PlannerPaused, at(100.9, 10.01));
        r.observe(Seen::GoalPreempted, at(101.5, 10.02));
        r
    }

    #[test]
    fn each_chain_starts_at_its_root_and_lists_every_cause_before_its_effect() {
        let mut seen = Vec::new();
        for (direction, root) in [
            (Direction::Fault, Link::Onset),
            (Direction::Recovery, Link::Cleared),
        ] {
            let links = direction.links();
            assert_eq!(links[0], root);
            assert_eq!(root.cause(), None);
            for (i, l) in links.iter().enumerate().skip(1) {
                let cause = l.cause().unwrap_or_else(|| panic!("{l:?} has no cause"));
                assert!(links[..i].contains(&cause), "{l:?}'s cause {cause:?}");
            }
            seen.extend_from_slice(links);
        }
        assert_eq!(seen, Link::ALL, "the two chains hold every link once");
    }

    #[test]
    fn immediate_fault_chain_starts_at_the_first_faulty_input() {
        let r = estop_fault_run();
        assert!(r.is_complete(), "missing {:?}", r.missing());
        let rec = r.record(0).unwrap();
        let zero = rec
            .links
            .iter()
            .find(|s| s.link == Link::BrakingCommand)
            .unwrap();
        assert!((zero.wall_ms - 0.6).abs() < 1e-9);
        // The braking command's cause is ERROR, not the preemption.
        assert!((zero.step_wall_ms - 0.3).abs() < 1e-9);
        assert!((zero.sim_ms - 10.0).abs() < 1e-6);
        assert!(check(&[rec]).is_empty());
    }

    #[test]
    fn other_bits_and_moving_commands_do_not_complete_a_fault_run() {
        let mut r = Run::new(FaultKind::Battery, Direction::Fault, &cfg(), None);
        r.observe(Seen::Input(0.49), at(1.0, 1.0));
        r.observe(Seen::SystemError(ErrorBits::ESTOP), at(2.0, 1.0));
        r.observe(Seen::Command(2.8, 0.0), at(3.0, 1.0));
        assert_eq!(r.at(Link::SystemError), None);
        assert_eq!(r.at(Link::BrakingCommand), None);
        assert!(r.at(Link::Onset).is_some());
    }

    #[test]
    fn a_comfortable_stops_first_ramp_command_is_the_braking_command() {
        let mut r = Run::new(FaultKind::Battery, Direction::Fault, &cfg(), None);
        r.observe(Seen::Input(0.3), at(1.0, 1.0));
        r.observe(Seen::SystemError(ErrorBits::BATTERY_LOW), at(1.5, 1.0));
        r.observe(Seen::Command(2.8, 0.0), at(1.7, 1.0)); // a tick's command, not braking
        r.observe(Seen::Command(2.79, 1.0), at(1.9, 1.0));
        assert_eq!(r.at(Link::BrakingCommand), Some(at(1.9, 1.0)));
    }

    #[test]
    fn held_fault_onset_is_the_first_clock_past_the_window_since_the_last_good_input() {
        let mut r = Run::new(FaultKind::Gps, Direction::Fault, &cfg(), Some(Time::ZERO));
        r.observe(Seen::Input(100.0), at(0.0, 2.0)); // good: the window counts from here
        assert_eq!(r.deadline(), None, "no faulty input yet");
        r.observe(Seen::Input(201.0), at(5.0, 2.05));
        assert_eq!(r.deadline(), Some(Time::from_secs_f64(17.0)));
        r.observe(Seen::Clock, at(1500.0, 17.0)); // exactly 15 s: not yet
        assert_eq!(r.at(Link::Onset), None);
        r.observe(Seen::Clock, at(1501.0, 17.01));
        assert_eq!(r.at(Link::Onset), Some(at(1501.0, 17.01)));
        r.observe(Seen::SystemError(ErrorBits::GPS_LOST), at(1501.4, 17.01));
        for s in [Seen::PlannerPaused, Seen::CancelSent, Seen::GoalPreempted] {
            r.observe(s, at(1502.0, 17.02));
        }
        r.observe(Seen::Command(0.0, 0.0), at(1501.7, 17.01));
        let rec = r.record(3).unwrap();
        assert!((rec.observed_hold_off_s.unwrap() - 15.01).abs() < 1e-6);
        assert!((rec.links[1].wall_ms - 0.4).abs() < 1e-9);
    }

    #[test]
    fn held_fault_without_a_faulty_input_has_no_onset() {
        let mut r = Run::new(
            FaultKind::SignalLow,
            Direction::Fault,
            &cfg(),
            Some(Time::ZERO),
        );
        r.observe(Seen::Clock, at(1.0, 100.0));
        assert_eq!(r.at(Link::Onset), None);
    }

    #[test]
    fn recovery_waits_for_the_goal_it_saw_sent() {
        let mut r = Run::new(FaultKind::Estop, Direction::Recovery, &cfg(), None);
        r.observe(Seen::Input(1.0), at(0.0, 1.0)); // still pressed
        assert_eq!(r.at(Link::Cleared), None);
        r.observe(Seen::Input(0.0), at(1.0, 1.0));
        r.observe(Seen::SystemRunning, at(1.2, 1.0));
        r.observe(Seen::PlannerRunning, at(1.5, 1.0));
        r.observe(Seen::GoalActive("old"), at(1.6, 1.0));
        r.observe(Seen::GoalSent("new"), at(1.7, 1.0));
        r.observe(Seen::GoalSent("newer"), at(1.8, 1.0));
        assert_eq!(r.at(Link::GoalActive), None);
        r.observe(Seen::GoalActive("new"), at(2.0, 1.0));
        r.observe(Seen::Command(0.5, 0.0), at(2.1, 1.0));
        r.observe(Seen::Command(2.8, 0.0), at(2.4, 1.01));
        assert!(r.is_complete());
        let rec = r.record(0).unwrap();
        assert!((rec.links[3].wall_ms - 0.7).abs() < 1e-9);
        assert!(check(&[rec]).is_empty());
    }

    #[test]
    fn a_goal_listed_active_before_it_reached_us_counts_from_that_status() {
        let mut r = Run::new(FaultKind::Estop, Direction::Recovery, &cfg(), None);
        r.observe(Seen::GoalActive("g1"), at(5.0, 1.0));
        r.observe(Seen::GoalSent("g1"), at(5.2, 1.0));
        assert_eq!(r.at(Link::GoalActive), Some(at(5.0, 1.0)));
    }

    #[test]
    fn check_reports_medians_before_the_chain_start_or_before_their_cause() {
        let mut r = Run::new(FaultKind::Estop, Direction::Fault, &cfg(), None);
        r.observe(Seen::Input(1.0), at(10.0, 1.0));
        r.observe(Seen::SystemError(ErrorBits::ESTOP), at(12.0, 1.0));
        r.observe(Seen::PlannerPaused, at(11.0, 1.0)); // before ERROR, within the skew
        r.observe(Seen::CancelSent, at(12.5, 1.0));
        r.observe(Seen::GoalPreempted, at(9.5, 1.0)); // before the cancel, beyond it
        r.observe(Seen::Command(0.0, 0.0), at(7.0, 1.0)); // before the onset, beyond it
        let rec = r.record(0).unwrap();
        let problems = check(std::slice::from_ref(&rec));
        // preempted: before the start and before the cancel; braking command: likewise.
        assert_eq!(problems.len(), 4, "{problems:?}");
        let early = early_samples(std::slice::from_ref(&rec));
        assert_eq!(early.len(), 2);
        assert_eq!(early[1].1, Link::BrakingCommand);
    }

    #[test]
    fn one_early_sample_among_many_is_counted_not_failed() {
        let mut runs: Vec<RunRecord> = (0..4)
            .map(|i| estop_fault_run().record(i).unwrap())
            .collect();
        let mut r = Run::new(FaultKind::Estop, Direction::Fault, &cfg(), None);
        r.observe(Seen::SystemError(ErrorBits::ESTOP), at(99.0, 10.0)); // lagging input
        r.observe(Seen::Input(1.0), at(100.0, 10.0));
        for s in [
            Seen::Command(0.0, 0.0),
            Seen::CancelSent,
            Seen::PlannerPaused,
        ] {
            r.observe(s, at(100.9, 10.01));
        }
        r.observe(Seen::GoalPreempted, at(101.5, 10.02));
        runs.push(r.record(4).unwrap());
        assert!(check(&runs).is_empty(), "{:?}", check(&runs));
        assert_eq!(early_samples(&runs).len(), 1);
    }

    #[test]
    fn link_events_span_from_the_chain_start_to_the_link() {
        let rec = estop_fault_run().record(4).expect("complete");
        let events = link_events(
            std::slice::from_ref(&rec),
            Direction::Fault,
            Link::SystemError,
        );
        assert_eq!(events.len(), 1);
        let (from, to, ms) = events[0];
        assert!(
            (from - 0.1).abs() < 1e-9 && (to - 0.1003).abs() < 1e-9,
            "{events:?}"
        );
        assert!((ms - 0.3).abs() < 1e-6);
        assert!(link_events(&[rec], Direction::Recovery, Link::SystemError).is_empty());
    }

    #[test]
    fn link_stats_are_per_type_and_direction_in_chain_order() {
        let runs: Vec<RunRecord> = (0..3)
            .map(|i| estop_fault_run().record(i).unwrap())
            .collect();
        let stats = link_stats(&runs);
        assert_eq!(stats.len(), Direction::Fault.links().len());
        assert_eq!(stats[0].link, Link::Onset);
        assert!(stats.iter().all(|s| s.n == 3));
        assert!((stats[5].wall_ms[3] - 0.6).abs() < 1e-9);
    }

    #[test]
    fn periods_summarise_the_gaps_between_messages() {
        let mut p = Periods::default();
        assert!(p.stats().is_none());
        for i in 0..11 {
            p.push(at(f64::from(i) * 5.0, f64::from(i) * 0.05));
        }
        let s = p.stats().unwrap();
        assert_eq!(s.messages, 11);
        assert!((s.wall_ms[0] - 5.0).abs() < 1e-9);
        assert!((s.sim_ms[3] - 50.0).abs() < 1e-6);
    }
}
