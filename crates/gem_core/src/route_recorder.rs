//! Recording a route while a person drives (`gemctl record-route`): the rear axle's
//! poses and the solution's health in, the planner's waypoint rows (`x, y, yaw`) out.
//! Every decision is here, so it is tested without ROS; the tool only feeds it.
//!
//! The rules, in the order a pose meets them:
//!
//! - **Health.** A pose is taken only while the health gate is open: the latest
//!   `gps_accuracy` reading is at most `gps_bad_above_mm` (the state manager's threshold;
//!   `gnss_pose` sends 0 mm when good, 10⁶ mm on any fault), it is no older than
//!   `health_stale_after`, and the readings have been good without a break for
//!   `good_for`. A bad reading or a silence closes the gate at once, so a bad solution
//!   is never recorded; the gate opens again only after `good_for` of good readings (a
//!   solution that has just come back may still be settling). Before the first reading
//!   the gate is closed.
//! - **Stamps.** A pose stamped at or before the last one seen is dropped: a polled
//!   source answers the same solution more than once.
//! - **Stretches and gaps.** Poses taken no more than `max_pose_gap` apart form a
//!   stretch. A closed gate, or a longer silence of the source, ends the stretch; once
//!   something has been recorded, that opens a gap. The gap closes at the first moving
//!   position of the next stretch: the route goes straight from the last position before
//!   the gap to that one, and no point is ever placed inside the join. A join shorter than
//!   what is left to the next point is spaced as if driven (no point is lost); a longer one
//!   puts a point at its far end and the spacing starts again from there.
//! - **Smoothing in time.** Each pose of a stretch is replaced by a least-squares
//!   quadratic in time through the stretch's poses within `smoothing_window` (1 s) around
//!   it (the window slides inside the stretch at its ends): position and velocity of the
//!   fit at the pose's stamp. A quadratic in time follows a bend or a change of speed
//!   without the lag or the inward pull of an average (the error at the centre is of
//!   fourth order: below 0.1 mm at 8 m/s on a 20 m radius), and 20 poses of 3 cm noise (a
//!   20 Hz INS) become about 1 cm. Time is the variable here because it needs no
//!   distance, which noise inflates, and a stop is simply a fit with no velocity.
//! - **Stopped.** A fit slower than `stopped_below_mps` adds nothing: no distance, no
//!   point. A parked car's noise is not travel.
//! - **Smoothing along the path** (when recording ends). The moving positions between two
//!   gaps are smoothed once more, each replaced by the least-squares quadratic in arc
//!   length through those within `path_window_m` (6 m) of path around it. The first stage
//!   leaves centimetre wiggles a few metres long whatever the speed; the controllers read
//!   the path's curvature over ±1 m and slow down for every change of it they see, so a
//!   route with those wiggles would be driven at a crawl. Over 6 m a quadratic bends with
//!   the road (on a 5 m radius it is off by less than 3 mm) and leaves the curvature of a
//!   recorded lap of the GEM track as smooth as the track's own: the speed profile gives
//!   both the same lap time.
//! - **Spacing.** The smoothed positions form a polyline; a point is laid every
//!   `spacing_m` along it, the first at the first moving position. The last position is
//!   added if it lies at least half a spacing past the last point, so the route ends where
//!   the drive did and no two points are closer than half a spacing. (While recording, the
//!   distance and the points counted so far are those of the first stage.)
//! - **Yaw.** Each point's yaw is the direction of the chord from the point about a metre
//!   before it to the one about a metre after it ([`yaw_along`]). The points lie on the
//!   smoothed path, so this is its direction; on a circle a centred chord is exactly the
//!   tangent. The source's own heading is never read: it is noisy at low speed, and in a
//!   bend a slipping car does not point where it goes.
//! - **Closing a loop** (when asked). The route is a loop when, after first leaving the
//!   start by more than `close_within_spacings` spacings, it comes back within that
//!   distance of its first point. It is cut at its point nearest the start during that
//!   first return (the overshoot beyond, which repeats the start of the lap, is dropped;
//!   that point too when it is within half a spacing of the start), and the first point is
//!   repeated as the last row, so the route ends where it starts. A route that does not
//!   come back is kept open and the outcome says how close it came.
//! - **Too short.** Fewer than two points is an error: there is nothing to follow.
//!
//! The rows are written as the planner reads them (docs/spec.md §3: a header and
//! `x, y, yaw` in metres and radians) and checked with the planner's own loader
//! ([`crate::waypoints::parse`]) before anyone writes them to a file.
//!
//! Not handled: reversing. A reverse is recorded as driving, which turns the route back
//! on itself; drive the route forwards only.

use crate::config::{check, first_invalid, value, ConfigError};
use crate::geometry::{Point, Pose};
use crate::time::Time;
use crate::waypoints::{self, WaypointFileError};
use nalgebra::DMatrix;
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;
use thiserror::Error;

/// The recorder's rules. `Default`: the values the module documentation gives.
#[derive(Clone, Debug, PartialEq)]
pub struct RecorderConfig {
    /// Distance between consecutive points along the path, m.
    pub spacing_m: f64,
    /// A smoothed speed below this is a stopped car, m/s.
    pub stopped_below_mps: f64,
    /// The span of poses each smoothing fit in time uses (half before, half after).
    pub smoothing_window: Duration,
    /// The length of path each smoothing fit along the path uses (half behind, half
    /// ahead), m.
    pub path_window_m: f64,
    /// Poses further apart than this are in different stretches (a gap between them).
    pub max_pose_gap: Duration,
    /// How long the health must have been good before poses are taken.
    pub good_for: Duration,
    /// A health reading older than this counts as none.
    pub health_stale_after: Duration,
    /// A `gps_accuracy` above this is a bad solution, mm.
    pub gps_bad_above_mm: f64,
    /// The end meets the start within this many spacings (loop closing).
    pub close_within_spacings: f64,
}

impl RecorderConfig {
    /// The defaults, readable in `const` context. The health threshold is the state
    /// manager's (`StateManagerConfig::DEFAULT.gps_bad_above_mm`): a solution the suite
    /// would refuse to drive on is not recorded either.
    pub const DEFAULT: RecorderConfig = RecorderConfig {
        spacing_m: 0.5,
        stopped_below_mps: 0.2,
        smoothing_window: Duration::from_secs(1),
        path_window_m: 6.0,
        max_pose_gap: Duration::from_millis(500),
        good_for: Duration::from_secs(1),
        health_stale_after: Duration::from_secs(1),
        gps_bad_above_mm: crate::state_manager::StateManagerConfig::DEFAULT.gps_bad_above_mm as f64,
        close_within_spacings: 2.0,
    };

    /// The largest spacing accepted, m: beyond it the path between points is a guess.
    pub const MAX_SPACING_M: f64 = 100.0;

    /// Checks every field; the error names it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let secs = |d: Duration| d.as_secs_f64();
        first_invalid([
            check(
                value!(self, RecorderConfig.spacing_m),
                self.spacing_m > 0.0 && self.spacing_m <= Self::MAX_SPACING_M,
                "must be > 0 and at most 100",
            ),
            check(
                value!(self, RecorderConfig.stopped_below_mps),
                self.stopped_below_mps > 0.0,
                "must be > 0",
            ),
            check(
                (
                    crate::field!(RecorderConfig.smoothing_window),
                    secs(self.smoothing_window),
                ),
                self.smoothing_window > Duration::ZERO,
                "must be > 0",
            ),
            check(
                value!(self, RecorderConfig.path_window_m),
                self.path_window_m > 0.0,
                "must be > 0",
            ),
            check(
                (
                    crate::field!(RecorderConfig.max_pose_gap),
                    secs(self.max_pose_gap),
                ),
                self.max_pose_gap > Duration::ZERO,
                "must be > 0",
            ),
            check(
                (
                    crate::field!(RecorderConfig.health_stale_after),
                    secs(self.health_stale_after),
                ),
                self.health_stale_after > Duration::ZERO,
                "must be > 0",
            ),
            check(
                value!(self, RecorderConfig.gps_bad_above_mm),
                self.gps_bad_above_mm >= 0.0,
                "must be >= 0",
            ),
            check(
                value!(self, RecorderConfig.close_within_spacings),
                self.close_within_spacings > 0.5,
                "must be > 0.5",
            ),
        ])
    }

    /// The loop-closing distance, m.
    pub fn close_within_m(&self) -> f64 {
        self.close_within_spacings * self.spacing_m
    }
}

impl Default for RecorderConfig {
    fn default() -> Self {
        RecorderConfig::DEFAULT
    }
}

/// One pose of the rear axle: where, and when it was measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoseSample {
    /// The measurement time (the source's stamp).
    pub stamp: Time,
    /// x east, y north, m.
    pub position: Point,
}

/// The health gate's state at some moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Health {
    /// No reading yet.
    Unheard,
    /// The latest reading is older than `health_stale_after`.
    Silent {
        /// Since the latest reading.
        for_: Duration,
    },
    /// The latest reading is above the threshold (or not a number).
    Bad {
        /// The reading, mm.
        accuracy_mm: f64,
    },
    /// Good, but not yet for `good_for`.
    Settling {
        /// How long it has been good.
        good_for: Duration,
    },
    /// Good for at least `good_for`: poses are taken.
    Good,
}

impl fmt::Display for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Health::Unheard => write!(f, "not heard yet"),
            Health::Silent { for_ } => write!(f, "silent for {:.1} s", for_.as_secs_f64()),
            Health::Bad { accuracy_mm } => write!(f, "BAD ({accuracy_mm} mm)"),
            Health::Settling { good_for } => {
                write!(f, "settling (good for {:.1} s)", good_for.as_secs_f64())
            }
            Health::Good => write!(f, "good"),
        }
    }
}

/// The latest health reading and how long the readings have been good.
#[derive(Clone, Debug, Default)]
struct HealthGate {
    /// When the latest reading arrived, and its value (mm).
    last: Option<(Time, f64)>,
    /// The first reading of the current unbroken run of good ones.
    good_since: Option<Time>,
}

impl HealthGate {
    fn reading(&mut self, accuracy_mm: f64, now: Time, cfg: &RecorderConfig) {
        let broken = self
            .last
            .is_none_or(|(at, _)| now.saturating_since(at) > cfg.health_stale_after);
        if !is_good(accuracy_mm, cfg) {
            self.good_since = None;
        } else if broken || self.good_since.is_none() {
            self.good_since = Some(now);
        }
        self.last = Some((now, accuracy_mm));
    }

    fn state(&self, now: Time, cfg: &RecorderConfig) -> Health {
        let Some((at, accuracy_mm)) = self.last else {
            return Health::Unheard;
        };
        let age = now.saturating_since(at);
        if age > cfg.health_stale_after {
            return Health::Silent { for_: age };
        }
        if !is_good(accuracy_mm, cfg) {
            return Health::Bad { accuracy_mm };
        }
        let good_for = now.saturating_since(self.good_since.unwrap_or(now));
        if good_for >= cfg.good_for {
            Health::Good
        } else {
            Health::Settling { good_for }
        }
    }
}

/// A reading at most the threshold (NaN is bad).
fn is_good(accuracy_mm: f64, cfg: &RecorderConfig) -> bool {
    accuracy_mm <= cfg.gps_bad_above_mm
}

/// What became of an offered pose.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Offer {
    /// Taken into the current stretch.
    Taken,
    /// Stamped as the last one seen: dropped.
    Duplicate,
    /// Stamped before the last one seen: dropped.
    Backwards,
    /// The health gate is closed: not recorded.
    Refused(Health),
}

/// Why a gap opened.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GapCause {
    /// The health gate closed (its state when it did).
    Health(Health),
    /// The source gave no pose for this long.
    NoPose {
        /// Between the two poses on either side.
        for_: Duration,
    },
}

impl fmt::Display for GapCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GapCause::Health(h) => write!(f, "solution {h}"),
            GapCause::NoPose { for_ } => write!(f, "no pose for {:.1} s", for_.as_secs_f64()),
        }
    }
}

/// A stretch of the drive that was not recorded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gap {
    /// Why.
    pub cause: GapCause,
    /// When it began (ROS time).
    pub began: Time,
    /// The last position recorded before it.
    pub from: Point,
    /// The first position recorded after it (None: recording ended in the gap).
    pub to: Option<Point>,
}

impl Gap {
    /// The straight join's length, m (None while open).
    pub fn join_m(&self) -> Option<f64> {
        self.to.map(|to| self.from.distance(to))
    }
}

/// A smoothed pose: the fit's position and velocity at a pose's stamp.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Fit {
    position: Point,
    /// m/s, east and north.
    velocity: [f64; 2],
}

impl Fit {
    fn speed_mps(&self) -> f64 {
        self.velocity[0].hypot(self.velocity[1])
    }
}

/// The least-squares quadratic in time (a straight line through two poses) through
/// `window`, evaluated at `at`. None with fewer than two poses.
fn fit(window: &[PoseSample], at: Time) -> Option<Fit> {
    let secs = |t: Time| (t.as_nanos() as i128 - at.as_nanos() as i128) as f64 * 1e-9;
    let samples: Vec<(f64, Point)> = window.iter().map(|s| (secs(s.stamp), s.position)).collect();
    quadratic(&samples)
}

/// The least-squares quadratic (a straight line through two samples) through `samples`
/// of `(parameter, position)`, its value and slope at parameter 0. None with fewer than
/// two samples or a single parameter value.
fn quadratic(samples: &[(f64, Point)]) -> Option<Fit> {
    let (first, last) = (samples.first()?, samples.last()?);
    // Parameters scaled to about ±1 for a well-conditioned matrix.
    let scale = samples.iter().fold(0.0f64, |m, s| m.max(s.0.abs()));
    if samples.len() < 2 || scale <= 0.0 || first.0 == last.0 {
        return None;
    }
    // Positions relative to the first sample: kilometres of frame lose no precision.
    let origin = first.1;
    let order = if samples.len() >= 3 { 3 } else { 2 };
    let a = DMatrix::from_fn(samples.len(), order, |r, c| {
        (samples[r].0 / scale).powi(c as i32)
    });
    let b = DMatrix::from_fn(samples.len(), 2, |r, c| {
        let p = samples[r].1;
        if c == 0 {
            p.x - origin.x
        } else {
            p.y - origin.y
        }
    });
    let coef = a.svd(true, true).solve(&b, 1e-12).ok()?;
    let position = Point::new(origin.x + coef[(0, 0)], origin.y + coef[(0, 1)]);
    let velocity = [coef[(1, 0)] / scale, coef[(1, 1)] / scale];
    (position.is_finite() && velocity.iter().all(|v| v.is_finite()))
        .then_some(Fit { position, velocity })
}

/// The window `[lo, hi]` of width `width` centred on `t`, slid inside `[0, end]`, never
/// wider than it.
fn window_at(t: f64, width: f64, end: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (t - width / 2.0, t + width / 2.0);
    if lo < 0.0 {
        hi -= lo;
        lo = 0.0;
    }
    if hi > end {
        lo = (lo - (hi - end)).max(0.0);
        hi = end;
    }
    (lo, hi)
}

/// `run` (a moving car's positions, in order) smoothed along the path: each position
/// replaced by the least-squares quadratic in arc length through the positions within
/// `width_m` of path centred on it. Near the run's ends the window shrinks to stay
/// centred (the end positions are kept as they are): a quadratic evaluated at the edge
/// of its window would stray from a tight bend by centimetres.
fn smooth_along(run: &[Point], width_m: f64) -> Vec<Point> {
    let mut s = Vec::with_capacity(run.len());
    let mut along = 0.0;
    for (i, p) in run.iter().enumerate() {
        if i > 0 {
            along += run[i - 1].distance(*p);
        }
        s.push(along);
    }
    (0..run.len())
        .map(|i| {
            let half = (width_m / 2.0).min(s[i]).min(along - s[i]);
            let (lo, hi) = (s[i] - half, s[i] + half);
            let from = s.partition_point(|v| *v < lo - 1e-9);
            let to = s.partition_point(|v| *v <= hi + 1e-9);
            let samples: Vec<(f64, Point)> = (from..to).map(|k| (s[k] - s[i], run[k])).collect();
            quadratic(&samples).map_or(run[i], |f| f.position)
        })
        .collect()
}

/// The poses of one stretch not yet smoothed, with those their windows still need.
#[derive(Clone, Debug)]
struct Stretch {
    /// The stretch's first stamp.
    first: Time,
    /// Oldest first; the front is trimmed as windows move on.
    samples: VecDeque<PoseSample>,
    /// Index in `samples` of the next pose to smooth.
    next: usize,
}

impl Stretch {
    fn new(s: PoseSample) -> Stretch {
        Stretch {
            first: s.stamp,
            samples: VecDeque::from([s]),
            next: 0,
        }
    }

    fn newest(&self) -> Time {
        self.samples.back().map_or(self.first, |s| s.stamp)
    }

    /// Seconds from the stretch's start.
    fn offset(&self, t: Time) -> f64 {
        t.saturating_since(self.first).as_secs_f64()
    }

    /// Smooths the poses whose whole window has arrived (all of them when `closed`: the
    /// stretch has ended), oldest first.
    fn smooth(&mut self, width: Duration, closed: bool) -> Vec<Fit> {
        let width = width.as_secs_f64();
        let end = self.offset(self.newest());
        let mut out = Vec::new();
        while let Some(s) = self.samples.get(self.next).copied() {
            let t = self.offset(s.stamp);
            // The window's far edge if the stretch went on forever.
            let needed = (t + width / 2.0).max(width);
            if !closed && end < needed {
                break;
            }
            let (lo, hi) = window_at(t, width, end);
            let eps = 1e-9;
            let window: Vec<PoseSample> = self
                .samples
                .iter()
                .filter(|p| (lo - eps..=hi + eps).contains(&self.offset(p.stamp)))
                .copied()
                .collect();
            out.extend(fit(&window, s.stamp));
            self.next += 1;
        }
        self.trim(width);
        out
    }

    /// Drops the poses no window will need again: older than a whole window before the
    /// next pose to smooth.
    fn trim(&mut self, width: f64) {
        let Some(next) = self.samples.get(self.next).map(|s| self.offset(s.stamp)) else {
            // Everything smoothed: the next poses' windows may reach a whole window back
            // from the newest.
            let keep_from = self.offset(self.newest()) - width;
            while self
                .samples
                .front()
                .is_some_and(|s| self.offset(s.stamp) < keep_from)
            {
                self.samples.pop_front();
                self.next -= 1;
            }
            return;
        };
        while self.next > 0
            && self
                .samples
                .front()
                .is_some_and(|s| self.offset(s.stamp) < next - width)
        {
            self.samples.pop_front();
            self.next -= 1;
        }
    }
}

/// Lays points every spacing along the smoothed positions of a moving car.
#[derive(Clone, Debug)]
struct Spacer {
    spacing_m: f64,
    points: Vec<Point>,
    /// The last position laid along.
    last: Option<Point>,
    /// Distance driven since the last point, m.
    carry_m: f64,
    /// Distance driven (joins not counted), m.
    distance_m: f64,
    /// The next position comes after a gap: join it.
    join_next: bool,
}

impl Spacer {
    fn new(spacing_m: f64) -> Spacer {
        Spacer {
            spacing_m,
            points: Vec::new(),
            last: None,
            carry_m: 0.0,
            distance_m: 0.0,
            join_next: false,
        }
    }

    /// Lays points up to `q`; the join's length when `q` ends a gap.
    fn advance(&mut self, q: Point) -> Option<f64> {
        let Some(p) = self.last else {
            self.points.push(q);
            self.last = Some(q);
            return None;
        };
        self.last = Some(q);
        let d = p.distance(q);
        if std::mem::take(&mut self.join_next) {
            // Nothing is laid inside a join: a short one is spaced as if driven, a long
            // one gets a point at its far end, where the spacing starts again.
            if self.carry_m + d >= self.spacing_m {
                self.points.push(q);
                self.carry_m = 0.0;
            } else {
                self.carry_m += d;
            }
            return Some(d);
        }
        let mut along = self.spacing_m - self.carry_m;
        while along <= d + 1e-9 {
            let f = along / d;
            self.points
                .push(Point::new(p.x + f * (q.x - p.x), p.y + f * (q.y - p.y)));
            along += self.spacing_m;
        }
        self.carry_m = d - (along - self.spacing_m);
        self.distance_m += d;
        None
    }

    /// Ends the route at the last position when it lies half a spacing or more past the
    /// last point.
    fn finish(&mut self) {
        if let (Some(q), true) = (self.last, self.carry_m >= self.spacing_m / 2.0) {
            self.points.push(q);
            self.carry_m = 0.0;
        }
    }
}

/// How loop closing went.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LoopClosing {
    /// The end met the start: the route was cut there and ends on its first point.
    Closed {
        /// Points dropped past the meeting point.
        dropped: usize,
        /// The closing segment, from the last kept point to the start, m.
        closing_m: f64,
    },
    /// The end never came back within the closing distance: the route is left open.
    NotMet {
        /// How close it came after leaving the start, m (None: it never left).
        closest_m: Option<f64>,
        /// The closing distance it had to come within, m.
        within_m: f64,
    },
}

/// Closes `points` into a loop when its end meets its start within `within_m` (module
/// documentation); `spacing_m` is the points' spacing.
pub fn close_loop(points: &mut Vec<Point>, within_m: f64, spacing_m: f64) -> LoopClosing {
    let Some(&start) = points.first() else {
        return LoopClosing::NotMet {
            closest_m: None,
            within_m,
        };
    };
    let from_start = |p: &Point| p.distance(start);
    let Some(left) = points.iter().position(|p| from_start(p) > within_m) else {
        return LoopClosing::NotMet {
            closest_m: None,
            within_m,
        };
    };
    let after = &points[left..];
    let Some(back) = after.iter().position(|p| from_start(p) <= within_m) else {
        let closest = after.iter().map(from_start).fold(f64::INFINITY, f64::min);
        return LoopClosing::NotMet {
            closest_m: Some(closest),
            within_m,
        };
    };
    let back = left + back;
    let run_end = points[back..]
        .iter()
        .position(|p| from_start(p) > within_m)
        .map_or(points.len(), |i| back + i);
    let nearest = (back..run_end)
        .min_by(|&a, &b| from_start(&points[a]).total_cmp(&from_start(&points[b])))
        .unwrap_or(back);
    let mut keep = nearest + 1;
    if from_start(&points[nearest]) < spacing_m / 2.0 {
        keep -= 1;
    }
    if keep < 3 {
        // Fewer than three distinct points make no loop.
        return LoopClosing::NotMet {
            closest_m: Some(from_start(&points[nearest])),
            within_m,
        };
    }
    let dropped = points.len() - keep;
    points.truncate(keep);
    let closing_m = from_start(&points[keep - 1]);
    points.push(start);
    LoopClosing::Closed { dropped, closing_m }
}

/// The length of the chord each point's yaw is taken along: from the point about this
/// far before it to the one about this far after it (at least its neighbours), m.
pub const YAW_CHORD_HALF_M: f64 = 1.0;

/// Each point's yaw (rad, counter-clockwise from east): the direction of the chord from
/// the point `k` before it to the one `k` after it, `k` spacings making
/// [`YAW_CHORD_HALF_M`] (at least 1). Near the ends of an open route the chord is cut
/// short; in a closed route (last point = first) it wraps around.
///
/// On a circle a chord centred on a point is exactly the tangent there; over 2 m the
/// smoothed points' centimetre of noise turns the yaw by well under a hundredth of a
/// radian, where the neighbours' chord alone (1 m) gives about twice that.
pub fn yaw_along(points: &[Point], closed: bool, spacing_m: f64) -> Vec<f64> {
    let n = points.len();
    let k = ((YAW_CHORD_HALF_M / spacing_m).round() as usize).max(1);
    let ring = n - 1;
    let closed = closed && n >= 4;
    (0..n)
        .map(|i| {
            let (prev, next) = if closed {
                let i = i % ring;
                (points[(i + ring * k - k) % ring], points[(i + k) % ring])
            } else {
                (points[i.saturating_sub(k)], points[(i + k).min(n - 1)])
            };
            (next.y - prev.y).atan2(next.x - prev.x)
        })
        .collect()
}

/// Why a recording gives no route.
#[derive(Debug, Error, PartialEq)]
pub enum RouteError {
    /// Fewer than two points.
    #[error("{points} point(s) recorded over {distance_m:.1} m of driving with a good solution: a route needs at least 2 (drive at least {spacing_m} m)")]
    TooFewPoints {
        /// Points recorded.
        points: usize,
        /// Distance recorded, m.
        distance_m: f64,
        /// The spacing, m.
        spacing_m: f64,
    },
    /// The planner's loader refuses the rows (a bug: every row is finite and in range).
    #[error("the planner's loader refuses the route: {0}")]
    Refused(WaypointFileError),
    /// The loader reads back another number of rows than were written.
    #[error("the planner's loader reads {read} rows back, {written} were written")]
    Mismatch {
        /// Rows written.
        written: usize,
        /// Rows read.
        read: usize,
    },
    /// The CSV writer failed.
    #[error("cannot format the route as CSV: {0}")]
    Csv(String),
}

/// A finished recording.
#[derive(Clone, Debug, PartialEq)]
pub struct Route {
    /// The waypoints, in the order driven.
    pub waypoints: Vec<Pose>,
    /// Distance driven with a good solution, m (joins not counted).
    pub distance_m: f64,
    /// The gaps, in order.
    pub gaps: Vec<Gap>,
    /// How loop closing went (None: not asked).
    pub closing: Option<LoopClosing>,
    /// The spacing, m.
    pub spacing_m: f64,
}

impl Route {
    /// A few lines for the user: points, distance, the loop, each gap.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} points, {:.1} m driven with a good solution, one every {} m",
            self.waypoints.len(),
            self.distance_m,
            self.spacing_m
        );
        match self.closing {
            None => {}
            Some(LoopClosing::Closed { dropped, closing_m }) => s += &format!(
                "\nloop closed: the end met the start; {dropped} point(s) past it dropped, the closing segment is {closing_m:.2} m"
            ),
            Some(LoopClosing::NotMet {
                closest_m: Some(c),
                within_m,
            }) => s += &format!(
                "\nloop NOT closed: the end came no closer than {c:.2} m to the start (it must come within {within_m:.2} m); the route is left open"
            ),
            Some(LoopClosing::NotMet {
                closest_m: None, ..
            }) => {
                s += "\nloop NOT closed: the route never left its start; it is left open"
            }
        }
        if self.gaps.is_empty() {
            s += "\nno gaps";
        }
        for (i, g) in self.gaps.iter().enumerate() {
            s += &format!(
                "\ngap {}: {}; from ({:.2}, {:.2})",
                i + 1,
                g.cause,
                g.from.x,
                g.from.y
            );
            s += &match (g.to, g.join_m()) {
                (Some(to), Some(m)) => format!(
                    " to ({:.2}, {:.2}): joined by a straight line of {m:.2} m; drive it again if the road is not straight there",
                    to.x, to.y
                ),
                _ => ": the recording ended in it".to_string(),
            };
        }
        s
    }
}

/// What the live line shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Status {
    /// Distance recorded, m.
    pub distance_m: f64,
    /// Points laid so far.
    pub points: usize,
    /// The health gate.
    pub health: Health,
    /// The latest smoothed pose: moving (None: none yet).
    pub moving: Option<bool>,
    /// No new pose (a new stamp) for this long (None: they are coming).
    pub pose_silent_for: Option<Duration>,
    /// Gaps so far.
    pub gaps: usize,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:.1} m, {} points, health {}, ",
            self.distance_m, self.points, self.health
        )?;
        match (self.health, self.pose_silent_for, self.moving) {
            (Health::Good, Some(d), _) => write!(f, "no pose for {:.1} s", d.as_secs_f64())?,
            (Health::Good, None, None) => write!(f, "waiting for the car to move")?,
            (Health::Good, None, Some(true)) => write!(f, "recording")?,
            (Health::Good, None, Some(false)) => write!(f, "stopped")?,
            (_, _, _) => write!(f, "NOT recording")?,
        }
        write!(f, ", gaps {}", self.gaps)
    }
}

/// The recorder: offer it health readings and poses as they come, then finish.
#[derive(Clone, Debug)]
pub struct Recorder {
    cfg: RecorderConfig,
    gate: HealthGate,
    stretch: Option<Stretch>,
    spacer: Spacer,
    /// The last stamp seen, and when (the caller's now) it came.
    last_stamp: Option<(Time, Time)>,
    gaps: Vec<Gap>,
    /// The latest smoothed pose was moving.
    moving: Option<bool>,
    /// The moving positions smoothed in time, one run per stretch between gaps.
    runs: Vec<Vec<Point>>,
}

impl Recorder {
    /// A recorder with `cfg`, refused (naming the field) if it is invalid.
    pub fn new(cfg: RecorderConfig) -> Result<Recorder, ConfigError> {
        cfg.validate()?;
        Ok(Recorder {
            spacer: Spacer::new(cfg.spacing_m),
            cfg,
            gate: HealthGate::default(),
            stretch: None,
            last_stamp: None,
            gaps: Vec::new(),
            moving: None,
            runs: Vec::new(),
        })
    }

    /// The rules in use.
    pub fn config(&self) -> &RecorderConfig {
        &self.cfg
    }

    /// A `gps_accuracy` reading (mm) arrived at `now`. A bad one ends the stretch at once.
    pub fn health(&mut self, accuracy_mm: f64, now: Time) {
        self.gate.reading(accuracy_mm, now, &self.cfg);
        let state = self.gate.state(now, &self.cfg);
        if !matches!(state, Health::Good | Health::Settling { .. }) {
            self.interrupt(GapCause::Health(state), now);
        }
    }

    /// A pose arrived at `now`.
    pub fn pose(&mut self, s: PoseSample, now: Time) -> Offer {
        match self.last_stamp {
            Some((last, _)) if s.stamp == last => return Offer::Duplicate,
            Some((last, _)) if s.stamp < last => return Offer::Backwards,
            _ => {}
        }
        self.last_stamp = Some((s.stamp, now));
        let health = self.gate.state(now, &self.cfg);
        if health != Health::Good {
            self.interrupt(GapCause::Health(health), now);
            return Offer::Refused(health);
        }
        if let Some(newest) = self.stretch.as_ref().map(Stretch::newest) {
            let silent = s.stamp.saturating_since(newest);
            if silent > self.cfg.max_pose_gap {
                self.interrupt(GapCause::NoPose { for_: silent }, newest);
            }
        }
        match &mut self.stretch {
            Some(st) => st.samples.push_back(s),
            None => self.stretch = Some(Stretch::new(s)),
        }
        self.smooth(false);
        Offer::Taken
    }

    /// The live figures at `now`.
    pub fn status(&self, now: Time) -> Status {
        // Measured on the caller's clock alone: a pose's stamp may come from another.
        let newest = self.last_stamp.map(|(_, at)| at);
        Status {
            distance_m: self.spacer.distance_m,
            points: self.spacer.points.len(),
            health: self.gate.state(now, &self.cfg),
            moving: self.moving,
            pose_silent_for: newest
                .map(|t| now.saturating_since(t))
                .filter(|d| *d > self.cfg.max_pose_gap),
            gaps: self.gaps.len(),
        }
    }

    /// The gaps so far.
    pub fn gaps(&self) -> &[Gap] {
        &self.gaps
    }

    /// Ends the recording: the route, its loop closed if `close_loop` and the end met
    /// the start, or why there is none.
    pub fn finish(mut self, close_loop: bool) -> Result<Route, RouteError> {
        self.smooth(true);
        self.stretch = None;
        let (mut points, distance_m) = self.lay_points();
        let closing = close_loop
            .then(|| self::close_loop(&mut points, self.cfg.close_within_m(), self.cfg.spacing_m));
        if points.len() < 2 {
            return Err(RouteError::TooFewPoints {
                points: points.len(),
                distance_m,
                spacing_m: self.cfg.spacing_m,
            });
        }
        let closed = matches!(closing, Some(LoopClosing::Closed { .. }));
        let yaws = yaw_along(&points, closed, self.cfg.spacing_m);
        Ok(Route {
            waypoints: points
                .iter()
                .zip(yaws)
                .map(|(p, yaw)| Pose::new(p.x, p.y, yaw))
                .collect(),
            distance_m,
            gaps: self.gaps,
            closing,
            spacing_m: self.cfg.spacing_m,
        })
    }

    /// Smooths each run along the path and lays the points along the runs, joined across
    /// the gaps (whose ends are set to the smoothed runs' ends); the points and the
    /// distance driven.
    fn lay_points(&mut self) -> (Vec<Point>, f64) {
        let mut spacer = Spacer::new(self.cfg.spacing_m);
        let mut previous_end: Option<Point> = None;
        for (i, run) in self.runs.iter().enumerate() {
            let run = smooth_along(run, self.cfg.path_window_m);
            if let (Some(gap), Some(from)) = (i.checked_sub(1), previous_end) {
                if let Some(g) = self.gaps.get_mut(gap) {
                    g.from = from;
                    g.to = run.first().copied();
                }
                spacer.join_next = true;
            }
            for p in &run {
                spacer.advance(*p);
            }
            previous_end = run.last().copied();
        }
        // A gap the recording ended in follows the last run.
        if let (Some(from), true) = (previous_end, self.gaps.len() == self.runs.len()) {
            if let Some(open) = self.gaps.last_mut() {
                open.from = from;
            }
        }
        spacer.finish();
        (spacer.points, spacer.distance_m)
    }

    /// Smooths what the current stretch allows and lays points along it.
    fn smooth(&mut self, closed: bool) {
        let Some(st) = &mut self.stretch else {
            return;
        };
        for f in st.smooth(self.cfg.smoothing_window, closed) {
            let moving = f.speed_mps() >= self.cfg.stopped_below_mps;
            self.moving = Some(moving);
            if !moving {
                continue;
            }
            match self.runs.last_mut() {
                Some(run) if !self.spacer.join_next => run.push(f.position),
                _ => self.runs.push(vec![f.position]),
            }
            if self.spacer.advance(f.position).is_some() {
                if let Some(g) = self.gaps.last_mut().filter(|g| g.to.is_none()) {
                    g.to = Some(f.position);
                }
            }
        }
    }

    /// Ends the current stretch (smoothing it to its end) and, once something has been
    /// recorded, opens a gap that began at `began`, unless one is open already.
    fn interrupt(&mut self, cause: GapCause, began: Time) {
        if self.stretch.is_some() {
            self.smooth(true);
            self.stretch = None;
        }
        let Some(from) = self.spacer.last else {
            return;
        };
        if self.spacer.join_next {
            return;
        }
        self.spacer.join_next = true;
        self.moving = None;
        self.gaps.push(Gap {
            cause,
            began,
            from,
            to: None,
        });
    }
}

/// One row of the planner's CSV, formatted: x and y to 0.1 mm, yaw to 1 µrad.
#[derive(serde::Serialize)]
struct Row {
    x: String,
    y: String,
    yaw: String,
}

/// The waypoints as the planner's CSV (a header, then `x, y, yaw`: 0.1 mm and 1 µrad),
/// checked by reading it back with the planner's loader; `origin` names it in errors.
pub fn to_csv(waypoints: &[Pose], origin: &str) -> Result<Vec<u8>, RouteError> {
    let csv_err = |e: csv::Error| RouteError::Csv(e.to_string());
    let mut w = csv::Writer::from_writer(Vec::new());
    for p in waypoints {
        w.serialize(Row {
            x: format!("{:.4}", p.x),
            y: format!("{:.4}", p.y),
            yaw: format!("{:.6}", p.yaw),
        })
        .map_err(csv_err)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| RouteError::Csv(e.error().to_string()))?;
    let read = waypoints::parse(&bytes, origin).map_err(RouteError::Refused)?;
    if read.len() != waypoints.len() {
        return Err(RouteError::Mismatch {
            written: waypoints.len(),
            read: read.len(),
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests;
