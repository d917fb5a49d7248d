//! A join the steering can follow: how pure pursuit, Stanley and the LQR come back to the
//! path on slow steering.
//!
//! Those laws steer towards the path as if the wheels could turn at once. On the GEM e2,
//! whose PACMod turns the front wheels at 5–9 °/s, a car 2 m beside its path gets the
//! steering it asked for seconds late, swings across the path and weaves. Started on a
//! path whose curvature changes no faster than the wheels can follow, the same laws track
//! within centimetres. So on slow steering the tracker does not hand them the path while
//! the car is off it: it hands them a join.
//!
//! The join is a quintic offset from the path in the path's own frame, `d(σ)` for `σ`
//! metres along the path from the car's projection: it starts where the car is, along its
//! heading and with the curvature its last command gives (`d(0) = e`, `d'(0) = tan(ψ − ψ_p)`,
//! `d''(0) = κ − κ_p` with the curvature `κ` the car drives, from its yaw rate), and ends on the path, along it and straight with it
//! (`d = d' = d'' = 0` at `σ = D`). The wheels must turn at about `L·v·|d'''|` to follow
//! it, so its length `D` is the shortest (in steps of [`STEP_M`], from [`MIN_LENGTH_M`])
//! for which that stays within the rate budget at the planned speed everywhere on it, and
//! its curvature within half the steering limit. Beyond its end the join continues on
//! the path for [`TAIL_M`], so a law looking ahead sees the path.
//!
//! The tracker plans a join when the car is more than [`JOIN_FROM_M`] off the path, drives
//! it to its end, and plans again if the car is found more than [`JOIN_LOST_M`] off the
//! join (a pose that jumped).

use crate::control::path::{Path, Projection};
use crate::geometry::{Point, Pose};

/// Off the path by more than this, the car joins it on a planned join, m.
pub const JOIN_FROM_M: f64 = 0.3;
/// ... or headed to be that far off within this much driving along its heading, s.
pub const JOIN_PREVIEW_S: f64 = 1.0;
/// Off the join by more than this, the join is planned again, m.
pub const JOIN_LOST_M: f64 = 0.5;
/// The shortest join, m.
pub const MIN_LENGTH_M: f64 = 5.0;
/// The longest join, m: beyond it the budget is not met, and the longest is used.
pub const MAX_LENGTH_M: f64 = 120.0;
/// Steps of the join's length, m.
pub const STEP_M: f64 = 1.0;
/// The path after the join's end that the join carries, m.
pub const TAIL_M: f64 = 30.0;
/// Spacing of the join's points, m.
const SPACING_M: f64 = 0.25;
/// Samples of the offset's derivatives checked against the limits.
const CHECKS: usize = 50;
/// The largest heading error a join starts from, rad (a car facing away from the path is
/// turned by the law's own steering first).
const MAX_HEADING_RAD: f64 = 0.6;

/// What a join is planned from.
#[derive(Clone, Copy, Debug)]
pub struct JoinStart {
    /// The car's (predicted, slip-corrected) rear-axle pose.
    pub pose: Pose,
    /// Its projection on the path.
    pub on_path: Projection,
    /// The curvature the car is driving, 1/m (the wheels', not the last command's).
    pub curvature_per_m: f64,
    /// The speed the join is driven at, m/s.
    pub speed_mps: f64,
    /// The front-wheel rate the join may ask for, rad/s.
    pub rate_budget_rad_s: f64,
    /// Wheelbase, m.
    pub wheelbase_m: f64,
    /// Steering limit, rad.
    pub max_steer_rad: f64,
}

/// A join being driven: its path and the progress on it.
#[derive(Clone, Debug)]
pub struct Join {
    path: Path,
    /// Progress on the join, m.
    s: f64,
    /// Where the join meets the path, m along the join.
    length_m: f64,
}

impl Join {
    /// Plans a join from `start` onto `main` (None where the points make no path).
    pub fn plan(main: &Path, start: &JoinStart) -> Option<Join> {
        let p = start.on_path;
        let l = start.wheelbase_m;
        let heading = (start.pose.yaw - p.heading)
            .sin()
            .atan2((start.pose.yaw - p.heading).cos());
        let slope = heading.clamp(-MAX_HEADING_RAD, MAX_HEADING_RAD).tan();
        let curvature_limit = (0.5 * start.max_steer_rad).tan() / l;
        let bend = start
            .curvature_per_m
            .clamp(-curvature_limit, curvature_limit)
            - main.curvature_at(p.s);
        let mut length = MIN_LENGTH_M;
        let offset = loop {
            let q = Quintic::new(p.cross_track_m, slope, bend, length);
            let fits = (0..=CHECKS).all(|i| {
                let u = i as f64 / CHECKS as f64;
                l * start.speed_mps * q.third(u).abs() <= start.rate_budget_rad_s
                    && q.second(u).abs() <= 2.0 * curvature_limit
            });
            if fits || length >= MAX_LENGTH_M {
                break q;
            }
            length += STEP_M;
        };
        let mut points = Vec::new();
        let mut sigma = 0.0;
        while sigma <= length + TAIL_M {
            let at = p.s + sigma;
            let on = main.point_at(at);
            let d = if sigma < length {
                offset.value(sigma / length)
            } else {
                0.0
            };
            let h = main.heading_at(at);
            points.push(Point::new(on.x - d * h.sin(), on.y + d * h.cos()));
            sigma += SPACING_M;
        }
        Path::new(&points, 0.05).ok().map(|path| Join {
            path,
            s: 0.0,
            length_m: length,
        })
    }

    /// The join's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Progress on the join, m.
    pub fn progress_s(&self) -> f64 {
        self.s
    }

    /// Where the join meets the path, m along it.
    pub fn length_m(&self) -> f64 {
        self.length_m
    }

    /// Moves the progress to the car's projection (forward only, within `window_m` ahead);
    /// the projection.
    pub fn advance(&mut self, rear: Point, behind_m: f64, window_m: f64) -> Projection {
        let proj = self
            .path
            .project(rear, self.s - behind_m, self.s + window_m);
        self.s = self.s.max(proj.s);
        proj
    }

    /// Whether the car has reached the path.
    pub fn done(&self) -> bool {
        self.s >= self.length_m
    }
}

/// `d(u) = Σ aᵢ·uⁱ`, `u = σ/D`: a quintic offset from `d(0)`, `d'(0)`, `d''(0)` (per metre)
/// to zero offset, slope and curvature at `σ = D`.
#[derive(Clone, Copy, Debug)]
struct Quintic {
    a: [f64; 6],
    length: f64,
}

impl Quintic {
    fn new(d0: f64, slope0: f64, bend0: f64, length: f64) -> Quintic {
        let (a0, a1, a2) = (d0, slope0 * length, 0.5 * bend0 * length * length);
        let r0 = -(a0 + a1 + a2);
        let r1 = -(a1 + 2.0 * a2);
        let r2 = -2.0 * a2;
        Quintic {
            a: [
                a0,
                a1,
                a2,
                10.0 * r0 - 4.0 * r1 + 0.5 * r2,
                -15.0 * r0 + 7.0 * r1 - r2,
                6.0 * r0 - 3.0 * r1 + 0.5 * r2,
            ],
            length,
        }
    }

    fn value(&self, u: f64) -> f64 {
        self.a.iter().rev().fold(0.0, |acc, a| acc * u + a)
    }

    /// `d''(σ)`, 1/m.
    fn second(&self, u: f64) -> f64 {
        let a = &self.a;
        (2.0 * a[2] + 6.0 * a[3] * u + 12.0 * a[4] * u * u + 20.0 * a[5] * u.powi(3))
            / self.length.powi(2)
    }

    /// `d'''(σ)`, 1/m².
    fn third(&self, u: f64) -> f64 {
        let a = &self.a;
        (6.0 * a[3] + 24.0 * a[4] * u + 60.0 * a[5] * u * u) / self.length.powi(3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn straight() -> Path {
        let w: Vec<Point> = (0..=400).map(|i| Point::new(i as f64 * 0.5, 0.0)).collect();
        Path::new(&w, 0.05).unwrap()
    }

    #[test]
    fn the_quintic_meets_its_ends() {
        let q = Quintic::new(2.0, 0.1, -0.02, 20.0);
        assert!((q.value(0.0) - 2.0).abs() < 1e-12);
        assert!(q.value(1.0).abs() < 1e-12);
        // Slope and curvature at the end are zero, and at the start as given.
        let slope = |u: f64| {
            let h = 1e-6;
            (q.value(u + h) - q.value(u - h)) / (2.0 * h) / 20.0
        };
        assert!((slope(1e-5) - 0.1).abs() < 1e-4);
        assert!(slope(1.0 - 1e-5).abs() < 1e-4);
        assert!((q.second(0.0) + 0.02).abs() < 1e-12);
        assert!(q.second(1.0).abs() < 1e-12);
    }

    /// From 2 m beside a straight path at 2 m/s, with the car's slow steering: the join
    /// starts at the car, ends on the path, and asks for no more than the budget; a slower
    /// budget makes it longer.
    #[test]
    fn a_join_starts_at_the_car_ends_on_the_path_and_keeps_the_budget() {
        let main = straight();
        let pose = Pose::new(10.0, 2.0, 0.0);
        let start = |budget: f64| JoinStart {
            pose,
            on_path: main.project(pose.point(), 0.0, 50.0),
            curvature_per_m: 0.0,
            speed_mps: 2.0,
            rate_budget_rad_s: budget,
            wheelbase_m: 1.75,
            max_steer_rad: 0.61,
        };
        let j = Join::plan(&main, &start(0.08)).unwrap();
        assert!(j.path().point_at(0.0).distance(pose.point()) < 1e-9);
        let end = j.path().point_at(j.length_m() + 0.1);
        assert!(end.y.abs() < 1e-3, "{end:?}");
        let q = Quintic::new(2.0, 0.0, 0.0, j.length_m());
        let worst = (0..=100)
            .map(|i| 1.75 * 2.0 * q.third(i as f64 / 100.0).abs())
            .fold(0.0, f64::max);
        assert!(worst <= 0.08, "{worst}");
        let slower = Join::plan(&main, &start(0.04)).unwrap();
        assert!(slower.length_m() > j.length_m());
        // Never moving back, done at the join's end.
        let mut j = j;
        j.advance(Point::new(15.0, 1.0), 0.5, 10.0);
        let s = j.progress_s();
        j.advance(Point::new(14.0, 1.5), 0.5, 10.0);
        assert_eq!(j.progress_s(), s);
        assert!(!j.done());
        let beyond = 10.0 + j.length_m() + 1.0;
        j.advance(Point::new(beyond, 0.0), 0.5, 100.0);
        assert!(j.done());
    }
}
