//! The path a controller follows, and progress along it (shared by every control law).
//!
//! Built from the goal's waypoints: near-duplicate points are dropped (the GEM track starts
//! with ~660 jittering points logged while the car was parked), but every kept vertex
//! remembers its index in the goal, because feedback `target_index` and a resumed goal's
//! `start_index` speak in the goal's indices. Positions along the path are arc lengths `s`
//! (m). Beyond the last vertex the path continues as a straight *virtual extension* along the
//! last segment, so a lookahead point near the end never collapses onto the vehicle, and
//! "passed the end" is a projection with `s` > [`Path::length`].
//!
//! Projection is always restricted to a window of `s`: the caller searches ahead of its
//! last progress, never the whole path, so a closed loop (whose end lies beside its start)
//! cannot "complete" the moment it starts, and a figure-eight cannot jump lanes.

use super::profile::{SmoothCurvature, FIT_HALF_WINDOW_M};
use crate::geometry::{wrap_angle, Point};
use thiserror::Error;

/// Why waypoints do not make a path.
#[derive(Debug, Error, PartialEq)]
pub enum PathError {
    /// No waypoints at all.
    #[error("the goal has no waypoints")]
    Empty,
    /// A coordinate is NaN or infinite.
    #[error("waypoint {index} is not finite ({x}, {y})")]
    NotFinite {
        /// Index in the goal.
        index: usize,
        /// x as given.
        x: f64,
        /// y as given.
        y: f64,
    },
    /// Fewer than two distinct points (a single point, or all points identical).
    #[error("the {count} waypoint(s) span less than {min_spacing_m} m: nothing to follow")]
    Degenerate {
        /// Number of waypoints given.
        count: usize,
        /// The de-duplication distance.
        min_spacing_m: f64,
    },
}

/// The closest point of the path to a query point, within a search window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Projection {
    /// Arc length of the closest point (may exceed [`Path::length`] on the extension).
    pub s: f64,
    /// The closest point.
    pub point: Point,
    /// Signed cross-track error: positive when the query point is left of the path, m.
    pub cross_track_m: f64,
    /// Path heading at the closest point, rad.
    pub heading: f64,
}

/// A polyline with arc lengths, curvature and the mapping to goal indices.
#[derive(Clone, Debug)]
pub struct Path {
    points: Vec<Point>,
    /// Goal index of each kept vertex.
    original: Vec<usize>,
    /// Cumulative arc length at each vertex.
    s: Vec<f64>,
    /// Signed curvature at each vertex and its change, fitted by least squares (1/m,
    /// positive turning left; [`SmoothCurvature`]).
    fitted: SmoothCurvature,
    /// Number of waypoints in the goal.
    original_len: usize,
}

/// Half the chord a path heading is taken over, m: long enough to average out logging
/// jitter at 0.2 m spacing, short against a 27 m radius.
const CHORD_HALF_M: f64 = 1.0;

impl Path {
    /// Builds a path, dropping points closer than `min_spacing_m` to the previous kept one
    /// (the last waypoint is always kept: it is the goal).
    pub fn new(waypoints: &[Point], min_spacing_m: f64) -> Result<Path, PathError> {
        if waypoints.is_empty() {
            return Err(PathError::Empty);
        }
        if let Some((index, p)) = waypoints.iter().enumerate().find(|(_, p)| !p.is_finite()) {
            return Err(PathError::NotFinite {
                index,
                x: p.x,
                y: p.y,
            });
        }
        let mut points: Vec<Point> = Vec::with_capacity(waypoints.len());
        let mut original = Vec::with_capacity(waypoints.len());
        for (i, &p) in waypoints.iter().enumerate() {
            match points.last() {
                Some(&last) if last.distance(p) < min_spacing_m => {}
                _ => {
                    points.push(p);
                    original.push(i);
                }
            }
        }
        let last = waypoints.len() - 1;
        if *original.last().unwrap_or(&0) != last {
            // The goal point replaces a kept vertex that lies too close to it.
            if points.len() > 1 {
                points.pop();
                original.pop();
            }
            points.push(waypoints[last]);
            original.push(last);
        }
        let mut s = Vec::with_capacity(points.len());
        let mut acc = 0.0;
        s.push(0.0);
        for w in points.windows(2) {
            acc += w[0].distance(w[1]);
            s.push(acc);
        }
        if points.len() < 2 || acc < min_spacing_m.max(f64::EPSILON) {
            return Err(PathError::Degenerate {
                count: waypoints.len(),
                min_spacing_m,
            });
        }
        let mut path = Path {
            points,
            original,
            s,
            fitted: SmoothCurvature::default(),
            original_len: waypoints.len(),
        };
        // The laws' feed-forward and the speed profile read the same smooth curvature:
        // logging jitter is neither steered at nor slowed for.
        path.fitted = SmoothCurvature::fit(&path.s, &path.points, FIT_HALF_WINDOW_M);
        Ok(path)
    }

    /// The kept vertices.
    pub fn vertices(&self) -> &[Point] {
        &self.points
    }

    /// The arc length of each kept vertex, m.
    pub fn arc_lengths(&self) -> &[f64] {
        &self.s
    }

    /// The curvature of each kept vertex and its change, fitted by least squares.
    pub fn fitted_curvature(&self) -> &SmoothCurvature {
        &self.fitted
    }

    /// Number of kept vertices.
    pub fn vertex_count(&self) -> usize {
        self.points.len()
    }

    /// Number of waypoints in the goal.
    pub fn original_len(&self) -> usize {
        self.original_len
    }

    /// Total arc length, m.
    pub fn length(&self) -> f64 {
        self.s[self.s.len() - 1]
    }

    /// The goal's last waypoint.
    pub fn end(&self) -> Point {
        self.points[self.points.len() - 1]
    }

    /// Arc length of goal waypoint `index` (of the kept vertex at or before it);
    /// `None` when the index is outside the goal.
    pub fn s_of_original(&self, index: usize) -> Option<f64> {
        if index >= self.original_len {
            return None;
        }
        let v = self
            .original
            .partition_point(|&o| o <= index)
            .saturating_sub(1);
        Some(self.s[v])
    }

    /// Goal index of the first vertex strictly ahead of `s` (the waypoint being driven
    /// to), or the last waypoint at and past the end.
    pub fn target_index(&self, s: f64) -> usize {
        let v = self.s.partition_point(|&si| si <= s);
        self.original[v.min(self.original.len() - 1)]
    }

    /// Number of goal waypoints at or behind `s`.
    pub fn passed_count(&self, s: f64) -> usize {
        let v = self.s.partition_point(|&si| si <= s);
        if v == 0 {
            0
        } else if v >= self.original.len() {
            self.original_len
        } else {
            self.original[v - 1] + 1
        }
    }

    /// Index of the segment containing `s` (clamped to the first and last segment).
    fn segment_at(&self, s: f64) -> usize {
        self.s
            .partition_point(|&si| si <= s)
            .clamp(1, self.s.len() - 1)
            - 1
    }

    fn direction(&self, seg: usize) -> (f64, f64) {
        let (a, b) = (self.points[seg], self.points[seg + 1]);
        let len = a.distance(b);
        if len <= f64::EPSILON {
            // Only when the goal point coincides with an earlier vertex; any direction.
            return (1.0, 0.0);
        }
        ((b.x - a.x) / len, (b.y - a.y) / len)
    }

    /// The point at arc length `s`: clamped to the start, extended straight past the end.
    pub fn point_at(&self, s: f64) -> Point {
        let s = s.max(0.0);
        let seg = self.segment_at(s);
        let (dx, dy) = self.direction(seg);
        let a = self.points[seg];
        let d = s - self.s[seg];
        Point::new(a.x + d * dx, a.y + d * dy)
    }

    /// Path heading at arc length `s`, rad.
    pub fn heading_at(&self, s: f64) -> f64 {
        let (dx, dy) = self.direction(self.segment_at(s));
        dy.atan2(dx)
    }

    /// Signed curvature at arc length `s`, interpolated between vertices (1/m, + left).
    pub fn curvature_at(&self, s: f64) -> f64 {
        let seg = self.segment_at(s);
        let len = self.s[seg + 1] - self.s[seg];
        let f = if len > 0.0 {
            ((s - self.s[seg]) / len).clamp(0.0, 1.0)
        } else {
            0.0
        };
        self.fitted.kappa[seg] * (1.0 - f) + self.fitted.kappa[seg + 1] * f
    }

    /// Largest |curvature| (1/m) of the vertices within `[from, to]` of arc length.
    pub fn max_abs_curvature(&self, from: f64, to: f64) -> f64 {
        let (first, last) = self.vertices_within(from, to);
        self.fitted.kappa[first..last]
            .iter()
            .fold(0.0, |m, k| m.max(k.abs()))
    }

    /// The range of vertex indices with arc length in `[from, to]`.
    fn vertices_within(&self, from: f64, to: f64) -> (usize, usize) {
        let first = self.s.partition_point(|&si| si < from);
        let last = self.s.partition_point(|&si| si <= to);
        (first.min(last), last)
    }

    /// Closest point to `p` with arc length in `[from, to]` (the window may reach past
    /// the end onto the virtual extension).
    pub fn project(&self, p: Point, from: f64, to: f64) -> Projection {
        let from = from.max(0.0);
        let to = to.max(from);
        let mut best: Option<(f64, f64)> = None; // (distance², s)
        let mut consider = |s: f64| {
            let q = self.point_at(s);
            let d2 = (q.x - p.x).powi(2) + (q.y - p.y).powi(2);
            if best.is_none_or(|(bd, _)| d2 < bd) {
                best = Some((d2, s));
            }
        };
        let first = self.segment_at(from);
        let last = self.segment_at(to);
        for seg in first..=last {
            let a = self.points[seg];
            let (dx, dy) = self.direction(seg);
            let along = (p.x - a.x) * dx + (p.y - a.y) * dy;
            // The last segment continues past its end (the virtual extension).
            let seg_end = if seg + 1 == self.points.len() - 1 {
                f64::INFINITY
            } else {
                self.s[seg + 1]
            };
            consider((self.s[seg] + along).clamp(self.s[seg].max(from), seg_end.min(to)));
        }
        let s = best.map_or(from, |(_, s)| s);
        let point = self.point_at(s);
        let heading = self.heading_at(s);
        let cross_track_m = heading.cos() * (p.y - point.y) - heading.sin() * (p.x - point.x);
        Projection {
            s,
            point,
            cross_track_m,
            heading,
        }
    }

    /// Heading error of a vehicle heading `yaw` against the path at `s`, wrapped, rad.
    pub fn heading_error(&self, s: f64, yaw: f64) -> f64 {
        wrap_angle(self.heading_at(s) - yaw)
    }

    /// Heading of the chord from [`CHORD_HALF_M`] behind `s` to as far ahead of it,
    /// minus `yaw`, wrapped, rad: the path's heading at `s` without the jitter of one
    /// logged segment's direction (exact on a circle).
    pub fn chord_heading_error(&self, s: f64, yaw: f64) -> f64 {
        let (a, b) = (
            self.point_at(s - CHORD_HALF_M),
            self.point_at(s + CHORD_HALF_M),
        );
        if a.distance(b) < 1e-9 {
            return self.heading_error(s, yaw);
        }
        wrap_angle((b.y - a.y).atan2(b.x - a.x) - yaw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: usize, spacing: f64) -> Vec<Point> {
        (0..n)
            .map(|i| Point::new(i as f64 * spacing, 0.0))
            .collect()
    }

    fn circle(radius: f64, n: usize) -> Vec<Point> {
        (0..=n)
            .map(|i| {
                let a = i as f64 / n as f64 * std::f64::consts::TAU;
                Point::new(radius * a.sin(), radius * (1.0 - a.cos()))
            })
            .collect()
    }

    #[test]
    fn empty_goal_is_an_error() {
        assert_eq!(Path::new(&[], 0.05).unwrap_err(), PathError::Empty);
    }

    #[test]
    fn one_point_is_degenerate() {
        let e = Path::new(&[Point::new(1.0, 2.0)], 0.05).unwrap_err();
        assert!(matches!(e, PathError::Degenerate { count: 1, .. }), "{e}");
    }

    #[test]
    fn identical_points_are_degenerate() {
        let e = Path::new(&[Point::new(1.0, 2.0); 5], 0.05).unwrap_err();
        assert!(matches!(e, PathError::Degenerate { count: 5, .. }), "{e}");
    }

    #[test]
    fn nan_waypoint_names_its_index() {
        let mut w = line(4, 1.0);
        w[2].y = f64::NAN;
        assert!(matches!(
            Path::new(&w, 0.05).unwrap_err(),
            PathError::NotFinite { index: 2, .. }
        ));
    }

    #[test]
    fn near_duplicates_are_dropped_and_indices_kept() {
        // 0, 0.01, 0.02 (jitter), 1, 1.001 (duplicate), 2
        let xs = [0.0, 0.01, 0.02, 1.0, 1.001, 2.0];
        let w: Vec<Point> = xs.iter().map(|&x| Point::new(x, 0.0)).collect();
        let p = Path::new(&w, 0.05).unwrap();
        assert_eq!(p.vertex_count(), 3);
        assert_eq!(p.original, vec![0, 3, 5]);
        assert_eq!(p.original_len(), 6);
        assert!((p.length() - 2.0).abs() < 1e-12);
    }

    #[test]
    fn goal_point_is_always_kept() {
        let w = vec![
            Point::new(0.0, 0.0),
            Point::new(1.0, 0.0),
            Point::new(1.01, 0.0),
        ];
        let p = Path::new(&w, 0.05).unwrap();
        assert_eq!(p.original, vec![0, 2]);
        assert_eq!(p.end(), Point::new(1.01, 0.0));
    }

    #[test]
    fn arc_length_of_original_indices() {
        let p = Path::new(&line(5, 1.0), 0.05).unwrap();
        assert_eq!(p.s_of_original(0), Some(0.0));
        assert_eq!(p.s_of_original(3), Some(3.0));
        assert_eq!(p.s_of_original(5), None);
    }

    #[test]
    fn target_and_passed_counts() {
        let p = Path::new(&line(5, 1.0), 0.05).unwrap();
        assert_eq!(p.target_index(0.0), 1);
        assert_eq!(p.target_index(2.5), 3);
        assert_eq!(p.target_index(9.0), 4);
        assert_eq!(p.passed_count(0.0), 1);
        assert_eq!(p.passed_count(2.5), 3);
        assert_eq!(p.passed_count(4.0), 5);
        assert_eq!(p.passed_count(-1.0), 0);
    }

    #[test]
    fn point_at_extends_past_the_end() {
        let p = Path::new(&line(3, 1.0), 0.05).unwrap();
        assert_eq!(p.point_at(1.5), Point::new(1.5, 0.0));
        assert_eq!(p.point_at(4.0), Point::new(4.0, 0.0));
        assert_eq!(p.point_at(-3.0), Point::new(0.0, 0.0));
    }

    #[test]
    fn projection_signs_cross_track_left_positive() {
        let p = Path::new(&line(10, 1.0), 0.05).unwrap();
        let left = p.project(Point::new(3.2, 0.5), 0.0, 10.0);
        assert!((left.s - 3.2).abs() < 1e-12 && (left.cross_track_m - 0.5).abs() < 1e-12);
        let right = p.project(Point::new(3.2, -0.5), 0.0, 10.0);
        assert!((right.cross_track_m + 0.5).abs() < 1e-12);
    }

    #[test]
    fn projection_past_the_end_uses_the_extension() {
        let p = Path::new(&line(3, 1.0), 0.05).unwrap();
        let q = p.project(Point::new(3.0, 0.1), 1.0, 5.0);
        assert!((q.s - 3.0).abs() < 1e-12, "{q:?}");
        assert!(q.s > p.length());
    }

    #[test]
    fn projection_is_limited_to_its_window_on_a_closed_loop() {
        // A loop whose end comes back past its start, like the GEM track.
        let mut w = circle(10.0, 200);
        w.push(Point::new(1.0, 0.0));
        let p = Path::new(&w, 0.05).unwrap();
        let at_start = Point::new(0.5, -0.1);
        let windowed = p.project(at_start, 0.0, 5.0);
        assert!(
            windowed.s < 1.0,
            "windowed search stays at the start: {windowed:?}"
        );
        let global = p.project(at_start, 0.0, p.length());
        assert!(
            global.s > p.length() - 2.0,
            "a global search would pick the end: {global:?}"
        );
    }

    #[test]
    fn curvature_of_a_circle() {
        let p = Path::new(&circle(27.0, 800), 0.05).unwrap();
        let k = p.max_abs_curvature(10.0, 20.0);
        assert!((k - 1.0 / 27.0).abs() < 1e-3, "{k}");
        assert!(p.fitted.kappa[100] > 0.0, "left turn is positive");
    }

    #[test]
    fn a_path_starting_in_a_bend_is_curved_from_its_first_vertex() {
        let p = Path::new(&circle(3.0, 300), 0.05).unwrap();
        for s in [0.0, 0.3, p.length() - 0.3, p.length()] {
            let k = p.curvature_at(s);
            // Within 5 %: at the ends the fit sees one side only.
            assert!((k - 1.0 / 3.0).abs() < 0.05 / 3.0, "κ({s}) = {k}");
        }
        assert_eq!(
            Path::new(&line(2, 0.5), 0.05).unwrap().curvature_at(0.2),
            0.0
        );
    }

    #[test]
    fn heading_error_wraps() {
        let p = Path::new(&line(3, 1.0), 0.05).unwrap();
        assert!((p.heading_error(0.5, std::f64::consts::PI) - std::f64::consts::PI).abs() < 1e-12);
        assert!((p.heading_error(0.5, 0.3) + 0.3).abs() < 1e-12);
    }
}
