//! The minimum-time speed profile of a path: the fastest a car may drive each metre of it
//! within its cruise speed, its lateral and longitudinal acceleration limits and the rate
//! at which its front wheels turn.
//!
//! Two parts:
//!
//! - **A smooth curvature** ([`SmoothCurvature`]). Logged waypoints jitter by centimetres;
//!   curvature from three of them is noisy, and its change along the path (`dκ/ds`) noisier
//!   still, so a profile built on it slows down where the path is smooth. Here each vertex's
//!   curvature comes from a least-squares quadratic fit of `x(s)` and `y(s)` over the
//!   vertices within [`FIT_HALF_WINDOW_M`] either side (less in a bend tight enough to
//!   turn more than [`MAX_TURN_RAD`] within it), and its change from a least-squares line
//!   through those curvatures over the same window (both solved by `nalgebra`'s SVD).
//! - **The profile** ([`Profile`]). Each vertex gets its ceiling, the least of
//!   - the cruise speed;
//!   - `sqrt(a_lat / |κ|)`, the lateral limit;
//!   - `rate / |dδ/ds|`, where `δ = atan(L κ)` is the front-wheel angle that follows the
//!     curvature, so `dδ/ds = L κ' / (1 + (L κ)²)`: the speed at which following the
//!     curvature's change turns the wheels at `rate`;
//!
//!   then a backward pass lowers each vertex to what braking at `decel` allows before the
//!   next, and a forward pass to what accelerating at `accel` allows after the previous,
//!   from the start speed. The result is the minimum-time profile under these limits; its
//!   lap time is [`Profile::time_s`].
//!
//! The controllers plan with the rate left once feedback has its margin
//! ([`crate::control::speed::SpeedConfig`]); the benchmark's bound uses the same code with
//! the same margin, so a lap is compared with what its own rule allows.

use crate::geometry::Point;
use nalgebra::{DMatrix, DVector};

/// Arc length either side of a vertex that its curvature is fitted over, m: long enough to
/// average out a logged track's centimetre jitter at 0.2 m spacing, short against the GEM
/// track's bends (radius ≥ 29 m).
pub const FIT_HALF_WINDOW_M: f64 = 3.0;

/// The least arc length either side a curvature is fitted over, m.
pub const MIN_HALF_WINDOW_M: f64 = 1.0;

/// The most a fit's window may turn either side of its vertex, rad.
pub const MAX_TURN_RAD: f64 = 0.25;

/// A path's curvature and its change, fitted by least squares.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SmoothCurvature {
    /// Arc length of each vertex, m.
    pub s: Vec<f64>,
    /// Signed curvature at each vertex, 1/m (+ left).
    pub kappa: Vec<f64>,
    /// Its change along the path, 1/m².
    pub dkappa_ds: Vec<f64>,
}

impl SmoothCurvature {
    /// The fitted curvature of the vertices `points` at arc lengths `s` (same length,
    /// increasing), each over the vertices within `half_window_m` either side, or less in
    /// tight bends: at most [`MAX_TURN_RAD`] of turning either side (a quadratic holds a
    /// bend only so far), never under [`MIN_HALF_WINDOW_M`].
    pub fn fit(s: &[f64], points: &[Point], half_window_m: f64) -> SmoothCurvature {
        let n = s.len().min(points.len());
        let (s, points) = (&s[..n], &points[..n]);
        let first = (0..n)
            .map(|i| quadratic_curvature(s, points, i, MIN_HALF_WINDOW_M.min(half_window_m)))
            .collect::<Vec<f64>>();
        let halves: Vec<f64> = first
            .iter()
            .map(|k| {
                let within_turn = if k.abs() > 1e-9 {
                    MAX_TURN_RAD / k.abs()
                } else {
                    f64::INFINITY
                };
                within_turn.clamp(MIN_HALF_WINDOW_M.min(half_window_m), half_window_m)
            })
            .collect();
        let kappa: Vec<f64> = (0..n)
            .map(|i| quadratic_curvature(s, points, i, halves[i]))
            .collect();
        let dkappa_ds = (0..n)
            .map(|i| {
                let w = window(s, i, halves[i]);
                let offsets: Vec<f64> = s[w.clone()].iter().map(|x| x - s[i]).collect();
                polyfit(&offsets, &kappa[w], 1).map_or(0.0, |c| c[1])
            })
            .collect();
        SmoothCurvature {
            s: s.to_vec(),
            kappa,
            dkappa_ds,
        }
    }

    /// The largest |κ| of any vertex, 1/m.
    pub fn max_abs_kappa(&self) -> f64 {
        self.kappa.iter().fold(0.0, |m, k| m.max(k.abs()))
    }
}

/// The vertices within `half` of arc length either side of vertex `i`.
fn window(s: &[f64], i: usize, half: f64) -> std::ops::Range<usize> {
    let from = s.partition_point(|&x| x < s[i] - half);
    let to = s.partition_point(|&x| x <= s[i] + half);
    from..to
}

/// The curvature at vertex `i` of least-squares quadratics `x(s)`, `y(s)` through the
/// vertices within `half` either side (0 with too few of them).
fn quadratic_curvature(s: &[f64], points: &[Point], i: usize, half: f64) -> f64 {
    let w = window(s, i, half);
    let offsets: Vec<f64> = s[w.clone()].iter().map(|x| x - s[i]).collect();
    let xs: Vec<f64> = points[w.clone()].iter().map(|p| p.x).collect();
    let ys: Vec<f64> = points[w].iter().map(|p| p.y).collect();
    match (polyfit(&offsets, &xs, 2), polyfit(&offsets, &ys, 2)) {
        (Some(cx), Some(cy)) => {
            let (dx, dy, ddx, ddy) = (cx[1], cy[1], 2.0 * cx[2], 2.0 * cy[2]);
            let speed = (dx * dx + dy * dy).sqrt();
            if speed > 1e-9 {
                (dx * ddy - dy * ddx) / speed.powi(3)
            } else {
                0.0
            }
        }
        _ => 0.0,
    }
}

/// The least-squares polynomial of `degree` through `(x, y)` (coefficients from the
/// constant up); None with too few distinct points for it.
fn polyfit(x: &[f64], y: &[f64], degree: usize) -> Option<Vec<f64>> {
    let cols = degree + 1;
    if x.len() < cols {
        return None;
    }
    let a = DMatrix::from_fn(x.len(), cols, |r, c| x[r].powi(c as i32));
    let b = DVector::from_column_slice(y);
    let svd = a.svd(true, true);
    // A rank-deficient window (points bunched at one arc length) has no fit.
    if svd.rank(1e-9) < cols {
        return None;
    }
    svd.solve(&b, 1e-12)
        .ok()
        .map(|c| c.iter().copied().collect())
}

/// The limits a profile is planned within.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Cruise speed, m/s.
    pub cruise_mps: f64,
    /// Lateral acceleration, m/s².
    pub lateral_mps2: f64,
    /// Speeding up, m/s².
    pub accel_mps2: f64,
    /// Slowing down, m/s².
    pub decel_mps2: f64,
    /// The front-wheel rate following the curvature may use, rad/s.
    pub wheel_rate_rad_s: f64,
    /// Wheelbase, m.
    pub wheelbase_m: f64,
}

impl Limits {
    /// The highest speed at a vertex of curvature `kappa` changing by `dkappa_ds`, m/s.
    pub fn ceiling(&self, kappa: f64, dkappa_ds: f64) -> f64 {
        let lateral = if kappa.abs() > 1e-9 {
            (self.lateral_mps2 / kappa.abs()).sqrt()
        } else {
            f64::INFINITY
        };
        let l = self.wheelbase_m;
        let wheel_per_m = l * dkappa_ds.abs() / (1.0 + (l * kappa).powi(2));
        let steering = if wheel_per_m > 1e-12 {
            self.wheel_rate_rad_s / wheel_per_m
        } else {
            f64::INFINITY
        };
        self.cruise_mps.min(lateral).min(steering)
    }
}

/// A speed for each vertex of a path from a start vertex on.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    s: Vec<f64>,
    v: Vec<f64>,
}

impl Profile {
    /// The minimum-time profile of `curvature` within `limits`, from the vertex at or
    /// after arc length `from_s` at `start_mps` to the last vertex at `end_mps` (None: no
    /// stop planned at the end).
    pub fn plan(
        curvature: &SmoothCurvature,
        limits: &Limits,
        from_s: f64,
        start_mps: f64,
        end_mps: Option<f64>,
    ) -> Profile {
        let first = curvature
            .s
            .partition_point(|&x| x < from_s)
            .min(curvature.s.len().saturating_sub(1));
        let s: Vec<f64> = curvature.s[first..].to_vec();
        let mut v: Vec<f64> = (first..curvature.s.len())
            .map(|i| limits.ceiling(curvature.kappa[i], curvature.dkappa_ds[i]))
            .collect();
        if let (Some(last), Some(end)) = (v.last_mut(), end_mps) {
            *last = last.min(end);
        }
        for i in (0..v.len().saturating_sub(1)).rev() {
            let ds = s[i + 1] - s[i];
            v[i] = v[i].min((v[i + 1].powi(2) + 2.0 * limits.decel_mps2 * ds).sqrt());
        }
        if let Some(v0) = v.first_mut() {
            *v0 = v0.min(start_mps);
        }
        for i in 1..v.len() {
            let ds = s[i] - s[i - 1];
            v[i] = v[i].min((v[i - 1].powi(2) + 2.0 * limits.accel_mps2 * ds).sqrt());
        }
        Profile { s, v }
    }

    /// The profile's speed at arc length `s` (interpolated between vertices; the first
    /// vertex's before it, the last's after it), m/s.
    pub fn speed_at(&self, s: f64) -> f64 {
        let i = self.s.partition_point(|&x| x <= s);
        match (i, self.v.len()) {
            (_, 0) => 0.0,
            (0, _) => self.v[0],
            (i, n) if i >= n => self.v[n - 1],
            (i, _) => {
                let (s0, s1) = (self.s[i - 1], self.s[i]);
                let f = if s1 > s0 { (s - s0) / (s1 - s0) } else { 1.0 };
                self.v[i - 1] + f * (self.v[i] - self.v[i - 1])
            }
        }
    }

    /// The time to drive it, s (each stretch at the mean of its ends' speeds).
    pub fn time_s(&self) -> f64 {
        self.s
            .windows(2)
            .zip(self.v.windows(2))
            .map(|(s, v)| {
                let mean = 0.5 * (v[0] + v[1]);
                if mean > 1e-9 {
                    (s[1] - s[0]) / mean
                } else {
                    f64::INFINITY
                }
            })
            .sum()
    }

    /// The slowest speed of the profile after its first and before its last vertex, m/s.
    pub fn slowest_mps(&self) -> f64 {
        let n = self.v.len();
        if n < 3 {
            return self.v.iter().copied().fold(f64::INFINITY, f64::min);
        }
        self.v[1..n - 1]
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        cruise_mps: 5.5,
        lateral_mps2: 1.5,
        accel_mps2: 1.0,
        decel_mps2: 1.5,
        wheel_rate_rad_s: 0.1,
        wheelbase_m: 1.75,
    };

    /// Points every `ds` along a curve of curvature `k(s)`, from the origin heading +x.
    fn curve(len: f64, ds: f64, k: impl Fn(f64) -> f64) -> (Vec<f64>, Vec<Point>) {
        let (mut x, mut y, mut yaw) = (0.0, 0.0, 0.0);
        let n = (len / ds) as usize;
        let mut s = Vec::new();
        let mut p = Vec::new();
        for i in 0..=n {
            s.push(i as f64 * ds);
            p.push(Point::new(x, y));
            let mid = yaw + 0.5 * k(i as f64 * ds) * ds;
            x += ds * mid.cos();
            y += ds * mid.sin();
            yaw += k(i as f64 * ds) * ds;
        }
        (s, p)
    }

    #[test]
    fn a_circle_fits_its_curvature_and_no_change() {
        let (s, p) = curve(60.0, 0.2, |_| 1.0 / 30.0);
        let c = SmoothCurvature::fit(&s, &p, FIT_HALF_WINDOW_M);
        for i in 20..s.len() - 20 {
            assert!((c.kappa[i] - 1.0 / 30.0).abs() < 1e-4, "{}", c.kappa[i]);
            assert!(c.dkappa_ds[i].abs() < 1e-4, "{}", c.dkappa_ds[i]);
        }
    }

    #[test]
    fn a_clothoid_fits_its_curvature_change() {
        // Curvature growing 0.001 /m per metre, turning right.
        let (s, p) = curve(40.0, 0.2, |s| -0.001 * s);
        let c = SmoothCurvature::fit(&s, &p, FIT_HALF_WINDOW_M);
        // Two windows from either end: the curvatures the change is fitted over come
        // from whole windows.
        let n = s.len();
        let inner = s[30..n - 30]
            .iter()
            .zip(&c.kappa[30..n - 30])
            .zip(&c.dkappa_ds[30..n - 30]);
        for ((at, k), dk) in inner {
            assert!((k + 0.001 * at).abs() < 2e-4, "{k} at {at}");
            assert!((dk + 0.001).abs() < 1e-4, "{dk} at {at}");
        }
    }

    #[test]
    fn centimetre_jitter_leaves_the_curvature_change_small() {
        // A straight logged with ±2 cm of jitter: three-point curvature over 1 m would
        // swing by ~0.08 /m; the fit keeps the change small enough for slow steering
        // (0.1 rad/s of front-wheel rate drives it at more than 5 m/s).
        let (s, mut p) = curve(60.0, 0.22, |_| 0.0);
        for (i, q) in p.iter_mut().enumerate() {
            q.y += 0.02 * ((i * 7919 % 13) as f64 / 6.0 - 1.0);
        }
        let c = SmoothCurvature::fit(&s, &p, FIT_HALF_WINDOW_M);
        let worst = c.dkappa_ds.iter().fold(0.0f64, |m, d| m.max(d.abs()));
        assert!(worst < 6e-3, "{worst}");
        let profile = Profile::plan(&c, &LIMITS, 0.0, 5.5, None);
        assert!(profile.slowest_mps() > 5.0, "{}", profile.slowest_mps());
    }

    #[test]
    fn too_few_points_have_no_curvature() {
        let c = SmoothCurvature::fit(
            &[0.0, 1.0],
            &[Point::new(0.0, 0.0), Point::new(1.0, 0.0)],
            3.0,
        );
        assert_eq!(c.kappa, vec![0.0, 0.0]);
        assert_eq!(c.dkappa_ds, vec![0.0, 0.0]);
    }

    #[test]
    fn the_ceiling_is_the_least_of_cruise_lateral_and_steering() {
        assert_eq!(LIMITS.ceiling(0.0, 0.0), 5.5);
        // 30 m radius: sqrt(1.5 · 30) = 6.7 > cruise; 10 m: sqrt(15) = 3.87.
        assert_eq!(LIMITS.ceiling(1.0 / 30.0, 0.0), 5.5);
        assert!((LIMITS.ceiling(0.1, 0.0) - 15f64.sqrt()).abs() < 1e-12);
        // Straight, curvature growing 0.02 /m per metre: the wheels turn 0.035 rad per
        // metre, so 0.1 rad/s allows 2.857 m/s.
        assert!((LIMITS.ceiling(0.0, 0.02) - 0.1 / 0.035).abs() < 1e-9);
    }

    #[test]
    fn the_profile_brakes_before_and_accelerates_after_a_slow_stretch() {
        // A straight, then a bend entered over 10 m (a clothoid), a 20 m radius, and out.
        let k = |s: f64| match s {
            s if s < 50.0 => 0.0,
            s if s < 60.0 => 0.005 * (s - 50.0),
            s if s < 80.0 => 0.05,
            s if s < 90.0 => 0.05 - 0.005 * (s - 80.0),
            _ => 0.0,
        };
        let (s, p) = curve(150.0, 0.2, k);
        let c = SmoothCurvature::fit(&s, &p, FIT_HALF_WINDOW_M);
        let profile = Profile::plan(&c, &LIMITS, 0.0, 0.0, Some(0.0));
        // In the bend: the wheels turn 1.75 · 0.005 / (1 + 0.0875²) = 0.00868 rad/m on
        // entry, so 0.1 rad/s allows 11.5 m/s: the lateral limit, sqrt(30) = 5.48, rules.
        assert!((profile.speed_at(70.0) - 30f64.sqrt()).abs() < 0.05);
        // Accelerating from rest at 1 m/s²: sqrt(2 · 10) after 10 m.
        assert!((profile.speed_at(10.0) - 20f64.sqrt()).abs() < 0.05);
        // Stopping at the end at 1.5 m/s²: sqrt(2 · 1.5 · 5) 5 m before it.
        let end = *s.last().unwrap();
        assert!((profile.speed_at(end - 5.0) - 15f64.sqrt()).abs() < 0.05);
        // No stretch changes speed faster than the limits allow.
        for w in profile.s.windows(2).zip(profile.v.windows(2)) {
            let ((s0, s1), (v0, v1)) = ((w.0[0], w.0[1]), (w.1[0], w.1[1]));
            let a = (v1 * v1 - v0 * v0) / (2.0 * (s1 - s0));
            assert!((-1.5 - 1e-9..=1.0 + 1e-9).contains(&a), "{a} at {s0}");
        }
        // Its time: longer than cruising the whole way, shorter than creeping.
        let t = profile.time_s();
        assert!(t > end / 5.5 && t < end / 2.0, "{t}");
    }

    #[test]
    fn slow_steering_slows_the_entry_and_not_the_steady_bend() {
        // A 10 m clothoid into a 20 m radius at 0.02 rad/s of front-wheel rate: the entry
        // turns the wheels 0.00868 rad/m, so 2.3 m/s; the steady bend allows the lateral
        // limit.
        let k = |s: f64| match s {
            s if s < 50.0 => 0.0,
            s if s < 60.0 => 0.005 * (s - 50.0),
            _ => 0.05,
        };
        let (s, p) = curve(120.0, 0.2, k);
        let c = SmoothCurvature::fit(&s, &p, FIT_HALF_WINDOW_M);
        let slow = Limits {
            wheel_rate_rad_s: 0.02,
            ..LIMITS
        };
        let profile = Profile::plan(&c, &slow, 0.0, 5.5, None);
        assert!(
            (profile.speed_at(55.0) - 0.02 / 0.00868).abs() < 0.1,
            "{}",
            profile.speed_at(55.0)
        );
        assert!((profile.speed_at(100.0) - 30f64.sqrt()).abs() < 0.05);
    }

    #[test]
    fn a_profile_from_the_middle_starts_there() {
        let (s, p) = curve(100.0, 0.2, |_| 0.0);
        let c = SmoothCurvature::fit(&s, &p, FIT_HALF_WINDOW_M);
        let profile = Profile::plan(&c, &LIMITS, 40.0, 0.4, None);
        assert!((profile.speed_at(40.0) - 0.4).abs() < 1e-9);
        assert!(
            (profile.speed_at(20.0) - 0.4).abs() < 1e-9,
            "before its start: its first"
        );
        assert!((profile.speed_at(90.0) - 5.5).abs() < 1e-9);
    }
}
