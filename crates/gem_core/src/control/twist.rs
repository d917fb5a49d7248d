//! Where the controllers' velocities come from, and whether to believe them.
//!
//! A pose source reports a twist with its pose: forward and lateral speed of a reference
//! point on the body, and the yaw rate. The tracker wants the rear axle's. [`TwistSource`]
//! moves the twist from its reference point, `x_ref` ahead of the rear axle, to the rear
//! axle with the yaw rate (`v_rear = v_ref − ω × r`: the lateral speed changes by
//! `−ω·x_ref`, the forward speed not), and checks each component against what successive
//! stamped poses show (the *pose history*: only measurements with a new stamp count, so a
//! pose held between slow updates adds nothing):
//!
//! - **Yaw rate.** Absent (NaN), exactly zero while the poses turn, or off the poses' yaw
//!   rate by more than [`YAW_RATE_BOUND_RAD_S`] plus [`YAW_RATE_BOUND_FRACTION`] of it for
//!   [`DISAGREE_FOR_S`]: the yaw rate of the pose history is used instead (over the last
//!   [`SHORT_SPAN_S`] or more), or, before there is one, the tracker's commanded yaw rate.
//! - **Forward speed.** Exactly zero while the poses move, or off their speed by more than
//!   [`SPEED_BOUND_MPS`] plus [`SPEED_BOUND_FRACTION`] for [`DISAGREE_FOR_S`]: the speed
//!   of the pose history is used, and the lateral speed too (the twist says nothing).
//! - **Lateral speed.** A twist taken at another point than the configured one shows a
//!   lateral speed off the poses' by `(x_true − x_ref)·ω` (a course error of
//!   `(x_true − x_ref)·κ`). Each new pose compares the course of the reported velocity with
//!   the chord of the poses over [`LONG_SPAN_S`], and a least-squares fit over the recent
//!   bends (forgetting over [`OFFSET_MEMORY_S`]) estimates where the twist's reference
//!   point really is. Once enough bend has been driven ([`OFFSET_EVIDENCE`]) and the
//!   estimate is more than [`OFFSET_BOUND_M`] from the configured point, the twist is moved
//!   from the estimated point instead.
//!
//! A doubt, once raised, holds until the node restarts (it is carried from goal to goal),
//! and is reported once by [`TwistSource::take_news`]; [`TwistSource::status`] tells the
//! current choice for `/diagnostics`. An absent yaw rate is no doubt raised: every update
//! without one uses the fallback, and it is reported once too.

use crate::geometry::{wrap_angle, Pose};
use crate::time::Time;
use std::collections::VecDeque;
use std::fmt;

/// Shortest time between the two poses of the yaw-rate and speed fallback, s.
pub const SHORT_SPAN_S: f64 = 0.05;
/// Time between the two poses the checks compare over, s.
pub const LONG_SPAN_S: f64 = 0.5;
/// How long a disagreement must last before the measured value is dropped, s.
pub const DISAGREE_FOR_S: f64 = 1.0;
/// Yaw-rate disagreement bound: absolute part, rad/s.
pub const YAW_RATE_BOUND_RAD_S: f64 = 0.05;
/// Yaw-rate disagreement bound: part proportional to the pose history's yaw rate.
pub const YAW_RATE_BOUND_FRACTION: f64 = 0.3;
/// Forward-speed disagreement bound: absolute part, m/s.
pub const SPEED_BOUND_MPS: f64 = 0.3;
/// Forward-speed disagreement bound: part proportional to the pose history's speed.
pub const SPEED_BOUND_FRACTION: f64 = 0.15;
/// Poses turning faster than this count as turning (an exact zero yaw rate is then
/// absent), rad/s.
pub const TURNING_RAD_S: f64 = 0.03;
/// Poses moving faster than this count as moving, m/s.
pub const MOVING_MPS: f64 = 0.5;
/// The lateral check needs at least this speed (the course of a slow car means little),
/// m/s.
pub const LATERAL_CHECK_FROM_MPS: f64 = 1.5;
/// Memory of the reference-point fit, s.
pub const OFFSET_MEMORY_S: f64 = 5.0;
/// Evidence the fit needs before it may raise a doubt: the sum of κ² (1/m²) over the
/// compared poses, forgetting included. Two seconds in a bend of 27 m radius at 20 Hz
/// give about 0.05.
pub const OFFSET_EVIDENCE: f64 = 0.05;
/// Distance between the estimated and the configured reference point beyond which the
/// lateral speed is doubted, m.
pub const OFFSET_BOUND_M: f64 = 0.3;
/// How far back the pose history reaches, s.
const HISTORY_S: f64 = 1.5;

/// A pose that moved this much further than the car can have driven since the last one
/// has jumped (a teleport, or a GNSS fix jumping and coming back), m: its history starts
/// afresh rather than reading the jump as a lateral speed. Ten times the GNSS/INS noise.
const JUMP_M: f64 = 0.3;

/// The rear axle's velocity, as the tracker uses it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RearTwist {
    /// Forward speed, m/s.
    pub speed_mps: f64,
    /// Lateral speed of the rear axle, body frame, + left, m/s.
    pub lateral_speed_mps: f64,
    /// Yaw rate, rad/s; NaN when none is known and the tracker's commanded one applies.
    pub yaw_rate_rad_s: f64,
    /// How much older the yaw rate is than the pose, s (the pose history's belongs to the
    /// middle of its span).
    pub yaw_rate_age_s: f64,
}

/// A component of the twist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    /// The forward speed.
    Speed,
    /// The lateral speed.
    LateralSpeed,
    /// The yaw rate.
    YawRate,
}

impl Component {
    /// A word for tables: `speed`, `lateral`, `yaw`.
    pub fn short(self) -> &'static str {
        match self {
            Component::Speed => "speed",
            Component::LateralSpeed => "lateral",
            Component::YawRate => "yaw",
        }
    }

    /// Its name in prose: `yaw rate`.
    pub fn name(self) -> &'static str {
        match self {
            Component::Speed => "forward speed",
            Component::LateralSpeed => "lateral speed",
            Component::YawRate => "yaw rate",
        }
    }
}

/// Why a component of the reported twist is not used.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Doubt {
    /// The source gives none.
    Absent,
    /// Exactly zero while the poses show `history` (m/s or rad/s).
    ZeroWhileMoving {
        /// The pose history's value.
        history: f64,
    },
    /// Off the pose history's value beyond the bound for [`DISAGREE_FOR_S`].
    Disagrees {
        /// The reported value (mean over the compared poses).
        reported: f64,
        /// The pose history's value.
        history: f64,
    },
    /// The lateral speed is that of a point `estimated_m` ahead of the rear axle, not of
    /// the configured `configured_m`.
    ReferencePoint {
        /// The configured reference point, m ahead of the rear axle.
        configured_m: f64,
        /// The pose history's estimate, m ahead of the rear axle.
        estimated_m: f64,
    },
}

/// What is used in place of a doubted component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// The pose history's value.
    PoseHistory,
    /// The tracker's commanded yaw rate on the kinematic bicycle (no pose history yet).
    Commanded,
    /// The twist moved from the estimated reference point.
    EstimatedReferencePoint,
}

/// One doubt raised, to be said once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct News {
    /// Which component.
    pub component: Component,
    /// Why it is doubted.
    pub doubt: Doubt,
}

impl fmt::Display for News {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.component.name();
        let unit = match self.component {
            Component::YawRate => "rad/s",
            _ => "m/s",
        };
        match self.doubt {
            Doubt::Absent => write!(
                f,
                "the pose source gives no {name}: the pose history's is used"
            ),
            Doubt::ZeroWhileMoving { history } => write!(
                f,
                "the pose source's {name} is exactly 0 while the poses show {history:.3} {unit}: \
                 the pose history's is used instead"
            ),
            Doubt::Disagrees { reported, history } => write!(
                f,
                "the pose source's {name} ({reported:.3} {unit}) disagrees with the poses' \
                 ({history:.3} {unit}) for {DISAGREE_FOR_S} s: the pose history's is used instead"
            ),
            Doubt::ReferencePoint {
                configured_m,
                estimated_m,
            } => write!(
                f,
                "the pose source's {name} is that of a point {estimated_m:.2} m ahead of the rear \
                 axle, not {configured_m:.2} m as configured (twist_reference_x_m): the twist is \
                 moved from the estimated point"
            ),
        }
    }
}

/// How each component is currently obtained, for `/diagnostics`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SourceStatus {
    /// Forward speed: `None` (measured) or the fallback and why.
    pub speed: Option<(Fallback, Doubt)>,
    /// Lateral speed.
    pub lateral_speed: Option<(Fallback, Doubt)>,
    /// Yaw rate.
    pub yaw_rate: Option<(Fallback, Doubt)>,
    /// The reference point the twist is moved from, m ahead of the rear axle.
    pub reference_x_m: f64,
}

impl SourceStatus {
    /// Every component measured.
    pub fn all_measured(&self) -> bool {
        self.speed.is_none() && self.lateral_speed.is_none() && self.yaw_rate.is_none()
    }

    /// One line per component: `yaw rate: measured` or `yaw rate: pose history (absent)`.
    pub fn describe(&self) -> [(Component, String); 3] {
        let text = |c: Option<(Fallback, Doubt)>| match c {
            None => "measured".to_string(),
            Some((fallback, doubt)) => {
                let how = match fallback {
                    Fallback::PoseHistory => "pose history",
                    Fallback::Commanded => "commanded",
                    Fallback::EstimatedReferencePoint => "estimated reference point",
                };
                let why = match doubt {
                    Doubt::Absent => "absent",
                    Doubt::ZeroWhileMoving { .. } => "zero while moving",
                    Doubt::Disagrees { .. } => "disagrees with the poses",
                    Doubt::ReferencePoint { .. } => "reference point mismatch",
                };
                format!("{how} ({why})")
            }
        };
        [
            (Component::Speed, text(self.speed)),
            (Component::LateralSpeed, text(self.lateral_speed)),
            (Component::YawRate, text(self.yaw_rate)),
        ]
    }
}

/// One distinct measurement.
#[derive(Clone, Copy, Debug)]
struct Entry {
    at: Time,
    pose: Pose,
    /// Reported forward speed.
    speed: f64,
    /// Reported lateral speed (of the reference point).
    lateral: f64,
    /// Reported yaw rate (NaN: none).
    yaw_rate: f64,
}

/// What the poses between two entries show.
#[derive(Clone, Copy, Debug)]
struct Chord {
    span_s: f64,
    speed: f64,
    yaw_rate: f64,
    /// Angle of the chord from the mean heading (the slip angle on an arc), rad.
    slip: f64,
}

impl Chord {
    fn between(a: &Entry, b: &Entry) -> Option<Chord> {
        let span_s = b.at.saturating_since(a.at).as_secs_f64();
        if span_s <= 0.0 {
            return None;
        }
        let (dx, dy) = (b.pose.x - a.pose.x, b.pose.y - a.pose.y);
        let dyaw = wrap_angle(b.pose.yaw - a.pose.yaw);
        let length = dx.hypot(dy);
        let mid = a.pose.yaw + 0.5 * dyaw;
        let along = dx * mid.cos() + dy * mid.sin();
        Some(Chord {
            span_s,
            speed: along / span_s,
            yaw_rate: dyaw / span_s,
            slip: if length > 1e-6 {
                wrap_angle(dy.atan2(dx) - mid)
            } else {
                0.0
            },
        })
    }

    /// The chord's lateral speed at its speed, m/s.
    fn lateral(&self) -> f64 {
        self.speed * self.slip.tan()
    }
}

/// One reported component checked against the pose history: the component, its value as
/// an entry reports it, its value from the poses, the poses' value above which a reported
/// exact zero is a doubt, the largest disagreement that is no doubt, and whether to judge
/// it this time.
type Check = (Component, fn(&Entry) -> f64, f64, f64, f64, bool);

/// A doubt and whether it has been said.
#[derive(Clone, Copy, Debug, Default)]
struct Verdict {
    doubt: Option<Doubt>,
    /// Disagreeing since (ROS time of the pose).
    disagreeing_since: Option<Time>,
    said_absent: bool,
}

impl Verdict {
    /// The doubt, if any, about a component whose reported values over the compared poses
    /// are `all_zero`, with their mean against the poses' value in `(reported, history)`:
    /// exactly zero while the poses show more than `moving`, or off by more than `bound`
    /// for [`DISAGREE_FOR_S`].
    fn judge(
        &mut self,
        at: Time,
        all_zero: bool,
        (reported, history): (f64, f64),
        moving: f64,
        bound: f64,
    ) -> Option<Doubt> {
        if all_zero && history.abs() > moving {
            return Some(Doubt::ZeroWhileMoving { history });
        }
        self.disagreeing(at, (reported - history).abs() > bound)
            .then_some(Doubt::Disagrees { reported, history })
    }

    /// Tracks a disagreement: true once it has lasted [`DISAGREE_FOR_S`].
    fn disagreeing(&mut self, now: Time, disagrees: bool) -> bool {
        if !disagrees {
            self.disagreeing_since = None;
            return false;
        }
        let since = *self.disagreeing_since.get_or_insert(now);
        now.saturating_since(since).as_secs_f64() >= DISAGREE_FOR_S
    }
}

/// Checks and moves a pose source's twist; one per controller, carried from goal to goal.
#[derive(Clone, Debug)]
pub struct TwistSource {
    reference_x_m: f64,
    history: VecDeque<Entry>,
    speed: Verdict,
    lateral: Verdict,
    yaw_rate: Verdict,
    /// Least-squares sums of the reference-point fit: Σ d·κ and Σ κ², forgetting.
    fit_dk: f64,
    fit_kk: f64,
    news: Vec<News>,
}

impl TwistSource {
    /// A source whose twist is given at `reference_x_m` ahead of the rear axle (0: the rear
    /// axle; validated by the caller).
    pub fn new(reference_x_m: f64) -> Self {
        TwistSource {
            reference_x_m,
            history: VecDeque::new(),
            speed: Verdict::default(),
            lateral: Verdict::default(),
            yaw_rate: Verdict::default(),
            fit_dk: 0.0,
            fit_kk: 0.0,
            news: Vec::new(),
        }
    }

    /// The configured reference point, m ahead of the rear axle.
    pub fn configured_reference_x_m(&self) -> f64 {
        self.reference_x_m
    }

    /// Takes the doubts raised since the last call (each is raised once).
    pub fn take_news(&mut self) -> Vec<News> {
        std::mem::take(&mut self.news)
    }

    /// The current choice for each component.
    pub fn status(&self) -> SourceStatus {
        let yaw_fallback = if self.short_chord().is_some() {
            Fallback::PoseHistory
        } else {
            Fallback::Commanded
        };
        let absent = self.history.back().is_some_and(|e| !e.yaw_rate.is_finite());
        SourceStatus {
            speed: self.speed.doubt.map(|d| (Fallback::PoseHistory, d)),
            lateral_speed: match self.lateral.doubt {
                Some(d @ Doubt::ReferencePoint { .. }) => {
                    Some((Fallback::EstimatedReferencePoint, d))
                }
                Some(d) => Some((Fallback::PoseHistory, d)),
                None => self.speed.doubt.map(|d| (Fallback::PoseHistory, d)),
            },
            yaw_rate: match self.yaw_rate.doubt {
                Some(d) => Some((yaw_fallback, d)),
                None if absent => Some((yaw_fallback, Doubt::Absent)),
                None => None,
            },
            reference_x_m: self.reference_x_m_in_use(),
        }
    }

    /// The reference point the twist is moved from: the configured one, or the estimate
    /// once the lateral speed is doubted.
    fn reference_x_m_in_use(&self) -> f64 {
        match self.lateral.doubt {
            Some(Doubt::ReferencePoint { .. }) => self.estimated_reference_x_m(),
            _ => self.reference_x_m,
        }
    }

    /// The fit's reference point, m ahead of the rear axle (the configured one without
    /// evidence).
    pub fn estimated_reference_x_m(&self) -> f64 {
        if self.fit_kk > 0.0 {
            self.reference_x_m + self.fit_dk / self.fit_kk
        } else {
            self.reference_x_m
        }
    }

    /// The rear axle's twist for a measurement of `pose` at `at` with the reported
    /// `speed`, `lateral` (of the reference point) and `yaw_rate` (NaN: none); all but the
    /// yaw rate finite (checked by the caller).
    pub fn update(
        &mut self,
        pose: Pose,
        speed: f64,
        lateral: f64,
        yaw_rate: f64,
        at: Time,
    ) -> RearTwist {
        let entry = Entry {
            at,
            pose,
            speed,
            lateral,
            yaw_rate,
        };
        if self.record(entry) {
            self.check_new_pose(at);
        }
        if !yaw_rate.is_finite() && !self.yaw_rate.said_absent {
            self.yaw_rate.said_absent = true;
            self.news.push(News {
                component: Component::YawRate,
                doubt: Doubt::Absent,
            });
        }
        let short = self.short_chord();
        let (yaw_rate, yaw_rate_age_s) = if self.yaw_rate.doubt.is_none() && yaw_rate.is_finite() {
            (yaw_rate, 0.0)
        } else {
            short.map_or((f64::NAN, 0.0), |c| (c.yaw_rate, 0.5 * c.span_s))
        };
        if self.speed.doubt.is_some() {
            return RearTwist {
                speed_mps: short.map_or(speed, |c| c.speed),
                lateral_speed_mps: self.long_chord().map_or(0.0, |c| c.lateral()),
                yaw_rate_rad_s: yaw_rate,
                yaw_rate_age_s,
            };
        }
        // Without a yaw rate to move the twist with (commanded: none yet), the reported
        // lateral speed is taken as it is.
        let omega = if yaw_rate.is_finite() { yaw_rate } else { 0.0 };
        RearTwist {
            speed_mps: speed,
            lateral_speed_mps: lateral - omega * self.reference_x_m_in_use(),
            yaw_rate_rad_s: yaw_rate,
            yaw_rate_age_s,
        }
    }

    /// Adds a measurement with a new stamp; true if it was new. A jump (a teleport) or a
    /// stamp going back starts the history afresh.
    fn record(&mut self, e: Entry) -> bool {
        if let Some(last) = self.history.back() {
            if e.at == last.at {
                return false;
            }
            let dt = e.at.saturating_since(last.at).as_secs_f64();
            let reach = (last.speed.abs().max(e.speed.abs()) + 5.0) * dt + JUMP_M;
            if e.at < last.at || e.pose.point().distance(last.pose.point()) > reach {
                self.history.clear();
            }
        }
        self.history.push_back(e);
        while self
            .history
            .front()
            .is_some_and(|f| e.at.saturating_since(f.at).as_secs_f64() > HISTORY_S)
        {
            self.history.pop_front();
        }
        true
    }

    /// The newest entry and the newest one at least `span_s` older, if any.
    fn chord_over(&self, span_s: f64) -> Option<(usize, Chord)> {
        let newest = self.history.back()?;
        let i = self
            .history
            .iter()
            .rposition(|e| newest.at.saturating_since(e.at).as_secs_f64() >= span_s - 1e-9)?;
        Chord::between(&self.history[i], newest).map(|c| (i, c))
    }

    fn short_chord(&self) -> Option<Chord> {
        self.chord_over(SHORT_SPAN_S)
            .map(|(_, c)| c)
            .filter(|c| c.span_s <= LONG_SPAN_S)
    }

    fn long_chord(&self) -> Option<Chord> {
        self.chord_over(LONG_SPAN_S).map(|(_, c)| c)
    }

    /// The checks, once per new pose at `at`.
    fn check_new_pose(&mut self, at: Time) {
        let Some((from, chord)) = self.chord_over(LONG_SPAN_S) else {
            return;
        };
        let entries: Vec<Entry> = self.history.iter().skip(from).copied().collect();
        // Means of the reported values over the chord's span (trapezoids).
        let mean = |f: &dyn Fn(&Entry) -> f64| {
            let sum: f64 = entries
                .windows(2)
                .map(|w| {
                    let dt = w[1].at.saturating_since(w[0].at).as_secs_f64();
                    0.5 * (f(&w[0]) + f(&w[1])) * dt
                })
                .sum();
            sum / chord.span_s
        };
        // Speed and yaw rate alike.
        let checks: [Check; 2] = [
            (
                Component::Speed,
                |e| e.speed,
                chord.speed,
                MOVING_MPS,
                SPEED_BOUND_MPS + SPEED_BOUND_FRACTION * chord.speed.abs(),
                chord.speed.abs() > MOVING_MPS,
            ),
            (
                Component::YawRate,
                |e| e.yaw_rate,
                chord.yaw_rate,
                TURNING_RAD_S,
                YAW_RATE_BOUND_RAD_S + YAW_RATE_BOUND_FRACTION * chord.yaw_rate.abs(),
                entries.iter().all(|e| e.yaw_rate.is_finite()),
            ),
        ];
        for (component, value, history, moving, bound, judged) in checks {
            let verdict = self.verdict(component);
            if verdict.doubt.is_none() && judged {
                let doubt = verdict.judge(
                    at,
                    entries.iter().all(|e| value(e) == 0.0),
                    (mean(&value), history),
                    moving,
                    bound,
                );
                self.raise(component, doubt);
            }
        }
        if self.speed.doubt.is_none() && chord.speed > LATERAL_CHECK_FROM_MPS {
            self.fit_reference_point(&entries, &chord);
        }
    }

    /// One step of the reference-point fit: the reported course (moved from the
    /// configured point) against the chord's, regressed on the curvature.
    fn fit_reference_point(&mut self, entries: &[Entry], chord: &Chord) {
        let yaw_rate_trusted = self.yaw_rate.doubt.is_none();
        let n = entries.len() as f64;
        let (mut slip, mut kappa) = (0.0, 0.0);
        for e in entries {
            let omega = if yaw_rate_trusted && e.yaw_rate.is_finite() {
                e.yaw_rate
            } else {
                chord.yaw_rate
            };
            let speed = e.speed.max(LATERAL_CHECK_FROM_MPS);
            slip += (e.lateral - omega * self.reference_x_m).atan2(speed) / n;
            kappa += omega / speed / n;
        }
        let d = slip - chord.slip;
        let dt = entries
            .windows(2)
            .last()
            .map_or(0.0, |w| w[1].at.saturating_since(w[0].at).as_secs_f64());
        let keep = (-dt / OFFSET_MEMORY_S).exp();
        self.fit_dk = keep * self.fit_dk + d * kappa;
        self.fit_kk = keep * self.fit_kk + kappa * kappa;
        if self.lateral.doubt.is_some() || self.fit_kk < OFFSET_EVIDENCE {
            return;
        }
        let estimated_m = self.estimated_reference_x_m();
        if (estimated_m - self.reference_x_m).abs() > OFFSET_BOUND_M {
            self.raise(
                Component::LateralSpeed,
                Some(Doubt::ReferencePoint {
                    configured_m: self.reference_x_m,
                    estimated_m,
                }),
            );
        }
    }

    fn verdict(&mut self, component: Component) -> &mut Verdict {
        match component {
            Component::Speed => &mut self.speed,
            Component::LateralSpeed => &mut self.lateral,
            Component::YawRate => &mut self.yaw_rate,
        }
    }

    fn raise(&mut self, component: Component, doubt: Option<Doubt>) {
        let Some(doubt) = doubt else { return };
        self.verdict(component).doubt = Some(doubt);
        self.news.push(News { component, doubt });
    }
}

#[cfg(test)]
mod tests;
