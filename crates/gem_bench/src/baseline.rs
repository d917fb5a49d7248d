//! The original suite's two control laws, reproduced from docs/spec.md §4 so the benchmark shows
//! the gain side by side. Not used by any node.
//!
//! - "pure pursuit" as the original wrote it: steer = waypoint heading − vehicle heading,
//!   index searched forward only. It never removes a lateral offset.
//! - Stanley as the original wrote it: nearest waypoint by a global search (on a closed
//!   loop the spawn pose is nearest the *last* waypoint), `δ = ψ_e + atan(k·e / v)` with the
//!   raw speed (infinite at standstill) and no clamp; "done" when the nearest waypoint is
//!   the last one.

use gem_core::control::closed_loop::{Steerer, Step};
use gem_core::geometry::{wrap_angle, Pose};
use gem_core::time::Time;
use gem_core::vehicle::localization::Report;

/// Output of a baseline law: steering (unclamped), speed, nearest index, done.
pub struct BaselineCommand {
    pub steering_rad: f64,
    pub speed_mps: f64,
    pub index: usize,
    pub done: bool,
}

/// Which original law.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Baseline {
    HeadingPursuit,
    OriginalStanley,
}

/// State of a baseline controller on a list of (x, y, yaw) waypoints.
pub struct BaselineController {
    law: Baseline,
    waypoints: Vec<Pose>,
    index: usize,
    speed: f64,
}

impl BaselineController {
    pub fn new(law: Baseline, waypoints: Vec<Pose>, speed: f64) -> Self {
        BaselineController {
            law,
            waypoints,
            index: 0,
            speed,
        }
    }

    pub fn update(&mut self, pose: Pose, speed_mps: f64) -> BaselineCommand {
        match self.law {
            Baseline::HeadingPursuit => self.heading_pursuit(pose),
            Baseline::OriginalStanley => self.original_stanley(pose, speed_mps),
        }
    }

    fn heading_pursuit(&mut self, pose: Pose) -> BaselineCommand {
        let d = |i: usize| pose.point().distance(self.waypoints[i].point());
        // Forward only, over the next 10 m of path (however many logged points that is).
        let mut end = self.index;
        let mut run = 0.0;
        while end + 1 < self.waypoints.len() && run < 10.0 {
            run += self.waypoints[end]
                .point()
                .distance(self.waypoints[end + 1].point());
            end += 1;
        }
        self.index = (self.index..=end)
            .min_by(|&a, &b| d(a).total_cmp(&d(b)))
            .unwrap_or(self.index);
        let target = (self.index + 5).min(self.waypoints.len() - 1);
        let done = self.index + 1 == self.waypoints.len();
        BaselineCommand {
            steering_rad: wrap_angle(self.waypoints[target].yaw - pose.yaw),
            speed_mps: if done { 0.0 } else { self.speed },
            index: self.index,
            done,
        }
    }

    fn original_stanley(&mut self, pose: Pose, speed_mps: f64) -> BaselineCommand {
        let front = pose.ahead(1.75);
        let (index, _) = self
            .waypoints
            .iter()
            .enumerate()
            .map(|(i, w)| (i, front.distance(w.point())))
            .fold(
                (0, f64::INFINITY),
                |best, c| if c.1 < best.1 { c } else { best },
            );
        let w = self.waypoints[index];
        let e = (front.x - w.x) * w.yaw.sin() - (front.y - w.y) * w.yaw.cos();
        let done = index + 1 == self.waypoints.len();
        BaselineCommand {
            steering_rad: wrap_angle(w.yaw - pose.yaw) + (1.0 * e / speed_mps).atan(),
            speed_mps: if done { 0.0 } else { self.speed },
            index,
            done,
        }
    }
}

impl Steerer for BaselineController {
    fn step(&mut self, report: &Report, _now: Time) -> Step {
        let c = self.update(report.state.pose, report.state.speed_mps);
        Step {
            steering_rad: c.steering_rad,
            speed_mps: c.speed_mps,
            done: c.done,
            index: c.index,
        }
    }
}
