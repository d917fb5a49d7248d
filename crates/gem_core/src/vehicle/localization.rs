//! What a localization system (a GNSS/INS) reports of the true state: a pose refreshed at
//! its own rate and held in between, measured `latency_s` before it is available, with
//! Gaussian position and yaw noise. The report carries the time it was *measured* at, as
//! an INS stamps its output, so a consumer can predict it forward.
//!
//! Off ([`LocalizationParams::OFF`], the default) the report is the true state of the
//! moment, as Gazebo's `get_model_state` gives it. The velocities are reported without
//! noise (an INS measures them far better than position); they belong to the same,
//! possibly delayed, instant as the pose. They are those of the rear axle, or of another
//! point on the body (`twist_point_x_m` ahead of it: an INS at its antenna, odometry of
//! the centre of mass), and the source may give no yaw rate or no twist at all
//! ([`TwistReport`]).
//!
//! Deterministic for a given seed.

use super::model::VehicleState;
use crate::config::{check, first_invalid, value, within, ConfigError};
use crate::geometry::{wrap_angle, Pose};
use crate::time::{Grid, Time};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use std::time::Duration;

/// Localization settings.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalizationParams {
    /// Standard deviation of the position noise, each axis, m.
    pub position_sigma_m: f64,
    /// Standard deviation of the yaw noise, rad.
    pub yaw_sigma_rad: f64,
    /// Pose updates per second (0: a fresh pose at every step).
    pub rate_hz: f64,
    /// Time from measurement to availability, s.
    pub latency_s: f64,
    /// Seed of the noise.
    pub seed: u64,
    /// The reported twist is that of the point this far ahead of the rear axle, m.
    pub twist_point_x_m: f64,
    /// What of the twist is reported.
    pub twist: TwistReport,
}

/// What of the twist a pose source reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TwistReport {
    /// Linear velocity and yaw rate.
    Full,
    /// Linear velocity; the yaw rate is 0 (a source without one).
    NoYawRate,
    /// Zeros (a pose-only source).
    Off,
}

impl TwistReport {
    /// Every value, with the name the simulator's parameter uses.
    pub const NAMES: [(TwistReport, &'static str); 3] = [
        (TwistReport::Full, "full"),
        (TwistReport::NoYawRate, "no_yaw_rate"),
        (TwistReport::Off, "off"),
    ];

    /// The value named `name`, if any.
    pub fn from_name(name: &str) -> Option<TwistReport> {
        Self::NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(r, _)| *r)
    }

    /// The name the simulator's parameter uses.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(r, _)| *r == self)
            .map_or("full", |(_, n)| n)
    }
}

impl LocalizationParams {
    /// Ground truth, at once, every step.
    pub const OFF: LocalizationParams = LocalizationParams {
        position_sigma_m: 0.0,
        yaw_sigma_rad: 0.0,
        rate_hz: 0.0,
        latency_s: 0.0,
        seed: 1,
        twist_point_x_m: 0.0,
        twist: TwistReport::Full,
    };

    /// A GNSS/INS of the kind the targets assume: 3 cm and 0.005 rad at 20 Hz.
    pub const GNSS_INS: LocalizationParams = LocalizationParams {
        position_sigma_m: 0.03,
        yaw_sigma_rad: 0.005,
        rate_hz: 20.0,
        latency_s: 0.0,
        seed: 1,
        twist_point_x_m: 0.0,
        twist: TwistReport::Full,
    };

    /// The simulator's GNSS/INS solution (its `Inspva`) by default: [`Self::GNSS_INS`]'s
    /// noise at its 20 Hz, each solution published 50 ms after its measurement.
    pub const INSPVA: LocalizationParams = LocalizationParams {
        latency_s: 0.05,
        ..LocalizationParams::GNSS_INS
    };

    /// True when the report is the exact state of the moment.
    pub fn is_off(&self) -> bool {
        self.pose_is_exact() && self.twist_point_x_m == 0.0 && self.twist == TwistReport::Full
    }

    /// True when the pose is the exact one of the moment (no noise, rate or latency).
    fn pose_is_exact(&self) -> bool {
        self.position_sigma_m == 0.0
            && self.yaw_sigma_rad == 0.0
            && self.rate_hz == 0.0
            && self.latency_s == 0.0
    }

    /// `state` with the twist as the source reports it: moved from the rear axle to the
    /// point `twist_point_x_m` ahead (`v = v_rear + ω × r`: the lateral speed gains
    /// `ω·x`), then the yaw rate or the whole twist zeroed as `twist` says.
    pub fn reported(&self, state: VehicleState) -> VehicleState {
        let lateral = state.lateral_speed_mps + state.yaw_rate_rad_s * self.twist_point_x_m;
        match self.twist {
            TwistReport::Full => VehicleState {
                lateral_speed_mps: lateral,
                ..state
            },
            TwistReport::NoYawRate => VehicleState {
                lateral_speed_mps: lateral,
                yaw_rate_rad_s: 0.0,
                ..state
            },
            TwistReport::Off => VehicleState {
                speed_mps: 0.0,
                lateral_speed_mps: 0.0,
                yaw_rate_rad_s: 0.0,
                ..state
            },
        }
    }

    /// Checks every field; the error names it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        first_invalid([
            within(value!(self, LocalizationParams.position_sigma_m), 0.0, 10.0),
            within(value!(self, LocalizationParams.yaw_sigma_rad), 0.0, 1.0),
            check(
                value!(self, LocalizationParams.rate_hz),
                self.rate_hz >= 0.0,
                "must be >= 0 (0: every step)",
            ),
            within(value!(self, LocalizationParams.latency_s), 0.0, 1.0),
            within(value!(self, LocalizationParams.twist_point_x_m), -5.0, 5.0),
        ])
    }
}

impl Default for LocalizationParams {
    fn default() -> Self {
        LocalizationParams::OFF
    }
}

/// A reported state and the time it was measured at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Report {
    /// When the state was true.
    pub measured_at: Time,
    /// The state, its pose with noise.
    pub state: VehicleState,
}

/// Turns the true state, step by step, into what localization reports.
#[derive(Debug)]
pub struct Localizer {
    params: LocalizationParams,
    rng: StdRng,
    /// True states not older than the latency, oldest first.
    history: VecDeque<(Time, VehicleState)>,
    held: Option<Report>,
    /// When updates are due.
    updates: Grid,
}

impl Localizer {
    /// A localizer with `params` (validated by the caller).
    pub fn new(params: LocalizationParams) -> Self {
        // A rate too small for a period (1e-300 Hz) is a period without end.
        let period = if params.rate_hz > 0.0 {
            Duration::try_from_secs_f64(1.0 / params.rate_hz).unwrap_or(Duration::MAX)
        } else {
            Duration::ZERO
        };
        Localizer {
            rng: StdRng::seed_from_u64(params.seed),
            params,
            history: VecDeque::new(),
            held: None,
            updates: Grid::new(period),
        }
    }

    /// Records the true state at `now` (call after every simulation step, and after a
    /// teleport) and refreshes the report when an update is due.
    pub fn observe(&mut self, now: Time, truth: VehicleState) {
        if self.params.pose_is_exact() {
            self.held = Some(Report {
                measured_at: now,
                state: self.params.reported(truth),
            });
            return;
        }
        self.history.push_back((now, truth));
        let latency = Duration::from_secs_f64(self.params.latency_s);
        let measured_at = now.saturating_sub(latency);
        // Keep the newest state at or before `measured_at`, and everything after it.
        while self.history.len() > 1 && self.history[1].0 <= measured_at {
            self.history.pop_front();
        }
        if !self.updates.due(now) {
            return;
        }
        let (at, mut state) = self.history[0];
        state.pose = Pose::new(
            state.pose.x + self.params.position_sigma_m * self.gaussian(),
            state.pose.y + self.params.position_sigma_m * self.gaussian(),
            wrap_angle(state.pose.yaw + self.params.yaw_sigma_rad * self.gaussian()),
        );
        self.held = Some(Report {
            measured_at: at,
            state: self.params.reported(state),
        });
    }

    /// Forgets the past (a teleport): the next [`Localizer::observe`] reports at once.
    pub fn reset(&mut self) {
        self.history.clear();
        self.held = None;
        self.updates.reset();
    }

    /// The current report (None before the first observation).
    pub fn report(&self) -> Option<Report> {
        self.held
    }

    /// A standard normal sample (Box–Muller).
    fn gaussian(&mut self) -> f64 {
        let u1: f64 = 1.0 - self.rng.gen::<f64>(); // (0, 1]: ln is finite
        let u2: f64 = self.rng.gen();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field;

    fn truth(x: f64) -> VehicleState {
        VehicleState {
            pose: Pose::new(x, 0.0, 0.0),
            speed_mps: 1.0,
            ..Default::default()
        }
    }

    fn t(ms: u64) -> Time {
        Time::from_secs_f64(10.0).saturating_add(Duration::from_millis(ms))
    }

    #[test]
    fn off_reports_the_truth_of_the_moment() {
        let mut l = Localizer::new(LocalizationParams::OFF);
        assert_eq!(l.report(), None);
        l.observe(t(0), truth(1.0));
        l.observe(t(10), truth(2.0));
        assert_eq!(
            l.report(),
            Some(Report {
                measured_at: t(10),
                state: truth(2.0)
            })
        );
    }

    #[test]
    fn pose_is_held_between_updates_and_delayed_by_the_latency() {
        let mut l = Localizer::new(LocalizationParams {
            rate_hz: 20.0,
            latency_s: 0.03,
            ..LocalizationParams::OFF
        });
        let mut reports = Vec::new();
        for i in 0..=100 {
            l.observe(t(i * 10), truth(i as f64));
            reports.push(l.report().unwrap());
        }
        // At 20 Hz on a 10 ms step: a new report every fifth step, of the state 30 ms old.
        assert_eq!(reports[0].measured_at, t(0));
        assert_eq!(reports[4], reports[0]);
        assert_eq!(reports[5].measured_at, t(20));
        assert_eq!(reports[5].state.pose.x, 2.0);
        assert_eq!(reports[10].measured_at, t(70));
        assert_eq!(reports[100].state.pose.x, 97.0);
    }

    #[test]
    fn noise_has_the_requested_spread_and_is_repeatable() {
        let params = LocalizationParams {
            position_sigma_m: 0.03,
            yaw_sigma_rad: 0.005,
            ..LocalizationParams::OFF
        };
        let run = || {
            let mut l = Localizer::new(params.clone());
            (0..20_000)
                .map(|i| {
                    l.observe(t(i), truth(0.0));
                    l.report().unwrap().state.pose
                })
                .collect::<Vec<_>>()
        };
        let poses = run();
        assert_eq!(poses, run());
        let sd = |f: fn(&Pose) -> f64| {
            let n = poses.len() as f64;
            let mean = poses.iter().map(f).sum::<f64>() / n;
            (poses.iter().map(|p| (f(p) - mean).powi(2)).sum::<f64>() / n).sqrt()
        };
        assert!((sd(|p| p.x) - 0.03).abs() < 0.0015);
        assert!((sd(|p| p.y) - 0.03).abs() < 0.0015);
        assert!((sd(|p| p.yaw) - 0.005).abs() < 0.00025);
    }

    #[test]
    fn reset_reports_afresh() {
        let mut l = Localizer::new(LocalizationParams {
            rate_hz: 1.0,
            ..LocalizationParams::OFF
        });
        l.observe(t(0), truth(0.0));
        l.observe(t(10), truth(5.0));
        assert_eq!(l.report().unwrap().state.pose.x, 0.0);
        l.reset();
        l.observe(t(20), truth(7.0));
        assert_eq!(l.report().unwrap().state.pose.x, 7.0);
    }

    #[test]
    fn the_twist_is_reported_of_its_point_and_as_the_source_gives_it() {
        let truth = VehicleState {
            speed_mps: 5.0,
            lateral_speed_mps: -0.05,
            yaw_rate_rad_s: 0.2,
            ..Default::default()
        };
        let at_com = LocalizationParams {
            twist_point_x_m: 0.88,
            ..LocalizationParams::OFF
        };
        assert!(!at_com.is_off());
        let mut l = Localizer::new(at_com.clone());
        l.observe(t(0), truth);
        let s = l.report().unwrap().state;
        assert!((s.lateral_speed_mps - (-0.05 + 0.2 * 0.88)).abs() < 1e-12);
        assert_eq!((s.speed_mps, s.yaw_rate_rad_s), (5.0, 0.2));
        let no_yaw = LocalizationParams {
            twist: TwistReport::NoYawRate,
            ..at_com
        }
        .reported(truth);
        assert_eq!((no_yaw.speed_mps, no_yaw.yaw_rate_rad_s), (5.0, 0.0));
        let off = LocalizationParams {
            twist: TwistReport::Off,
            ..LocalizationParams::OFF
        }
        .reported(truth);
        assert_eq!(
            (off.speed_mps, off.lateral_speed_mps, off.yaw_rate_rad_s),
            (0.0, 0.0, 0.0)
        );
        for (r, name) in TwistReport::NAMES {
            assert_eq!(TwistReport::from_name(name), Some(r));
            assert_eq!(r.name(), name);
        }
        assert_eq!(TwistReport::from_name("none"), None);
    }

    #[test]
    fn bad_settings_are_named() {
        let bad = LocalizationParams {
            position_sigma_m: f64::NAN,
            ..LocalizationParams::OFF
        };
        assert_eq!(
            bad.validate().unwrap_err().field,
            field!(LocalizationParams.position_sigma_m)
        );
        assert_eq!(LocalizationParams::GNSS_INS.validate(), Ok(()));
        assert_eq!(LocalizationParams::INSPVA.validate(), Ok(()));
    }
}
