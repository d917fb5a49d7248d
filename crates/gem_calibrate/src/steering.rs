//! The steering relation and its offset fitted from drives: circles at steady steering-wheel
//! angles and straight driving.
//!
//! **Samples.** Each [`Sample`] holds the steering wheel (`steer_rpt.output`), the yaw rate
//! and the rear axle's speed at one time. [`samples_from_ins`] makes them from a GNSS/INS's
//! solutions (`Inspva`): the yaw rate is the slope of the unwrapped azimuth over a short
//! centred window (`yaw_rate_window_s`; no lag, and the heading's noise averaged), the
//! speed is the antenna's moved to the rear axle, `v = √(v_ant² − (r·d)²)` (the antenna,
//! `d` ahead of the axle, also moves sideways at `r·d` in a turn), negative when the car
//! moves against its heading; the steering wheel is interpolated between the two reports
//! around each solution.
//!
//! **What is measured.** On a steady circle the rear axle's path has the curvature `r/v`,
//! and the single-track model the controllers use turns it with the front-wheel angle
//! `f = atan(L·r/v)` (`L` the wheelbase). The fit relates that `f` to the steering wheel.
//!
//! **Filters.** A sample is dropped, and counted under its [`Filter`], when (first match):
//!
//! - [`Filter::Unusable`]: a value is missing or not a number (no steering report within
//!   `max_report_gap_s`, the start of the INS data);
//! - [`Filter::Slow`]: the speed is below `min_speed_mps` (1 m/s), or the car reverses:
//!   `r/v` divides by the speed, so at walking pace the INS's noise dominates;
//! - [`Filter::LateralAccel`]: `|v·r|` is above `max_lateral_accel_mps2` (1 m/s²): the tyres
//!   slip more the harder the car turns, and slip makes the circle wider than the
//!   front-wheel angle says;
//! - [`Filter::SteeringMoving`]: the steering wheel spread over more than
//!   `steady_wheel_band_rad` in the last `window_s`: only a held steering wheel has a
//!   steady circle;
//! - [`Filter::Settling`]: less than `settle_s` after the steering wheel last moved (or
//!   after a gap in the data): the front wheels follow the steering wheel late (the
//!   column's compliance, the actuator's lag), and the car's yaw follows the wheels;
//! - [`Filter::TurnUnsteady`]: the measured front-wheel angle's mean over the later half
//!   of the last `window_s` differs from its mean over the earlier half by more than
//!   `steady_turn_band_deg`, with the steering wheel held: the yaw rate is not that of a
//!   steady circle (a speed change, a slip). Means of halves, not the spread, so that the
//!   INS's sample-to-sample noise is not taken for a change;
//! - [`Filter::Outlier`]: after a first fit, the residual is further than `outlier_mads`
//!   times the residuals' scaled median absolute deviation from their median; a second
//!   fit runs without them.
//!
//! **Fit.** The relation `SW° = q·t·|t| + l·t`, `t = f − offset`
//! ([`SteeringRelation`]) is fitted by least squares on the front-wheel angle, where the
//! noise is: the residual of a sample is `f − (t(SW) + offset)`. Straight driving (small
//! steering wheel) pins the offset directly and the circles pin it as their intercept;
//! one fit uses both. A linear fit of `f = offset + a·SW + b·SW·|SW|` (the relation's
//! inverse to second order) starts Levenberg–Marquardt iterations on the exact inverse.
//!
//! **Collecting.** [`circle_plan`] lists the calibration runs that drive such circles
//! through `pacmod_bridge` (`gemctl calibrate steering --collect`).
//!
//! **Refusals.** Too little data — less than `min_circle_s` of kept samples beyond
//! `min_circle_deg` of front wheel on either side — is an error naming the side, and so
//! is a fit that breaks [`SteeringRelation::validate`] (not increasing within ±35°, an
//! offset beyond 5°): such a relation is never returned.

use crate::collect::{Start, Step};
use gem_core::config::{check, first_invalid, positive, ConfigError};
use gem_core::field;
use gem_core::gnss::pose::InsPoseConfig;
use gem_core::pacmod::calibration::{Hold, RunRequest};
use gem_core::pacmod::steering::{SteeringRelation, MAX_FRONT_WHEEL_DEG};
use gem_core::vehicle::VehicleParams;
use nalgebra::{Matrix3, Vector3};
use std::fmt::Write as _;
use std::time::Duration;
use thiserror::Error;

/// The steering wheel, the yaw rate and the rear axle's speed at one time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Time, s (any origin; samples in time order).
    pub t_s: f64,
    /// The steering wheel, rad, + left (NaN: no report).
    pub wheel_rad: f64,
    /// The yaw rate, rad/s, + left (counter-clockwise).
    pub yaw_rate_rad_s: f64,
    /// The rear axle's speed along the heading, m/s (negative: reversing).
    pub speed_mps: f64,
}

/// One GNSS/INS solution (`novatel_gps_msgs/Inspva`'s fields used here).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InsSample {
    /// Time, s.
    pub t_s: f64,
    /// Heading, degrees clockwise from north.
    pub azimuth_deg: f64,
    /// North velocity of the antenna, m/s.
    pub north_velocity_mps: f64,
    /// East velocity of the antenna, m/s.
    pub east_velocity_mps: f64,
}

/// How [`samples_from_ins`] makes samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleConfig {
    /// How far the antenna (the solution's point) sits ahead of the rear axle, m.
    /// `gnss_pose`'s default.
    pub antenna_ahead_m: f64,
    /// The window of the azimuth's slope, centred on each solution, s. 1 s.
    pub yaw_rate_window_s: f64,
    /// A steering report further than this from a solution, either side, is no report
    /// for it, s. 0.2 s (the driver reports at about 30 Hz).
    pub max_report_gap_s: f64,
}

impl SampleConfig {
    /// The defaults.
    pub const DEFAULT: SampleConfig = SampleConfig {
        antenna_ahead_m: InsPoseConfig::DEFAULT.antenna_ahead_m,
        yaw_rate_window_s: 1.0,
        max_report_gap_s: 0.2,
    };
}

impl Default for SampleConfig {
    fn default() -> Self {
        SampleConfig::DEFAULT
    }
}

/// Samples at each INS solution (module documentation). `wheel`: the steering reports,
/// `(time s, rad)`, in time order; `ins` in time order.
pub fn samples_from_ins(
    wheel: &[(f64, f64)],
    ins: &[InsSample],
    cfg: &SampleConfig,
) -> Vec<Sample> {
    let unwrapped = unwrap_deg(ins.iter().map(|s| s.azimuth_deg));
    let half = cfg.yaw_rate_window_s / 2.0;
    ins.iter()
        .enumerate()
        .map(|(i, s)| {
            // Azimuth is clockwise; the yaw rate counter-clockwise.
            let r = -slope(ins, &unwrapped, i, half).to_radians();
            let v_ant = s.north_velocity_mps.hypot(s.east_velocity_mps);
            let lateral = r * cfg.antenna_ahead_m;
            let (sin, cos) = s.azimuth_deg.to_radians().sin_cos();
            let along = s.north_velocity_mps * cos + s.east_velocity_mps * sin;
            let v = (v_ant * v_ant - lateral * lateral).max(0.0).sqrt();
            Sample {
                t_s: s.t_s,
                wheel_rad: interpolate(wheel, s.t_s, cfg.max_report_gap_s),
                yaw_rate_rad_s: r,
                speed_mps: if along < 0.0 { -v } else { v },
            }
        })
        .collect()
}

/// The angles, degrees, without the jumps of ±360° between successive ones.
fn unwrap_deg(angles: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    for a in angles {
        let next = match out.last() {
            Some(&prev) => prev + (a - prev + 180.0).rem_euclid(360.0) - 180.0,
            None => a,
        };
        out.push(next);
    }
    out
}

/// The least-squares slope of `values` against the solutions' times within `half` of
/// solution `i`, per second; NaN with fewer than three points or either side of the
/// window less than half covered (the ends of the data, gaps).
fn slope(ins: &[InsSample], values: &[f64], i: usize, half: f64) -> f64 {
    let t0 = ins[i].t_s;
    let lo = ins[..i].partition_point(|s| s.t_s < t0 - half);
    let hi = i + ins[i..].partition_point(|s| s.t_s <= t0 + half);
    let n = (hi - lo) as f64;
    if n < 3.0 || t0 - ins[lo].t_s < half / 2.0 || ins[hi - 1].t_s - t0 < half / 2.0 {
        return f64::NAN;
    }
    let pts = || (lo..hi).map(|j| (ins[j].t_s - t0, values[j]));
    let (mt, mv) = pts().fold((0.0, 0.0), |(a, b), (t, v)| (a + t / n, b + v / n));
    let (num, den) = pts().fold((0.0, 0.0), |(num, den), (t, v)| {
        (num + (t - mt) * (v - mv), den + (t - mt) * (t - mt))
    });
    num / den
}

/// `series` at `t`, linearly between the reports around it, each at most `gap` away;
/// NaN otherwise.
fn interpolate(series: &[(f64, f64)], t: f64, gap: f64) -> f64 {
    let k = series.partition_point(|(ts, _)| *ts <= t);
    match (k.checked_sub(1).map(|j| series[j]), series.get(k)) {
        (Some((ta, a)), _) if ta == t => a,
        (Some((ta, a)), Some(&(tb, b))) if t - ta <= gap && tb - t <= gap => {
            a + (b - a) * (t - ta) / (tb - ta)
        }
        _ => f64::NAN,
    }
}

/// Why a sample was dropped (module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Filter {
    /// A value missing or not a number.
    Unusable,
    /// Below the minimum speed, or reversing.
    Slow,
    /// Above the largest lateral acceleration.
    LateralAccel,
    /// The steering wheel moving.
    SteeringMoving,
    /// Too soon after the steering wheel moved.
    Settling,
    /// The measured front-wheel angle not steady.
    TurnUnsteady,
    /// A residual far from the others.
    Outlier,
}

impl Filter {
    /// Every filter, in the order they are applied.
    pub const ALL: [Filter; 7] = [
        Filter::Unusable,
        Filter::Slow,
        Filter::LateralAccel,
        Filter::SteeringMoving,
        Filter::Settling,
        Filter::TurnUnsteady,
        Filter::Outlier,
    ];

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Filter::Unusable => "unusable",
            Filter::Slow => "slow",
            Filter::LateralAccel => "lateral acceleration",
            Filter::SteeringMoving => "steering moving",
            Filter::Settling => "settling",
            Filter::TurnUnsteady => "turn unsteady",
            Filter::Outlier => "outlier",
        }
    }

    /// Why such samples do not count.
    pub fn reason(self) -> &'static str {
        match self {
            Filter::Unusable => "a value missing (no steering report near the INS solution, the ends of the data)",
            Filter::Slow => "below the minimum speed, or reversing: the yaw rate over the speed is mostly noise there",
            Filter::LateralAccel => "the tyres slip in a hard turn, widening the circle",
            Filter::SteeringMoving => "the steering wheel moved within the window: no steady circle",
            Filter::Settling => "the front wheels and the car's yaw follow the steering wheel late",
            Filter::TurnUnsteady => "the measured angle drifted within the window (a speed change, a slip)",
            Filter::Outlier => "further than the outlier bound from the first fit",
        }
    }
}

/// The fit's settings (module documentation). `Default`: see each field.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FitConfig {
    /// The wheelbase, m: the GEM e2's ([`VehicleParams::DEFAULT`]).
    pub wheelbase_m: f64,
    /// The relation the car had before, for the report's comparison. The GEM e2's.
    pub start: SteeringRelation,
    /// Slower samples are dropped, m/s. 1.
    pub min_speed_mps: f64,
    /// Samples turning harder are dropped, m/s². 1 (a 25° circle at 2 m/s).
    pub max_lateral_accel_mps2: f64,
    /// The window of the steadiness filters, s. 1.
    pub window_s: f64,
    /// The steering wheel's largest spread over the window, rad. 0.1 (about 0.3° of front
    /// wheel).
    pub steady_wheel_band_rad: f64,
    /// Time after the steering wheel last moved before samples count, s. 2.
    pub settle_s: f64,
    /// The largest difference of the measured front-wheel angle's means over the
    /// window's two halves, degrees. 0.5.
    pub steady_turn_band_deg: f64,
    /// Outlier bound, in scaled median absolute deviations of the residuals. 3.
    pub outlier_mads: f64,
    /// A circle counts for the data check beyond this front-wheel angle, degrees. 10.
    pub min_circle_deg: f64,
    /// Kept samples needed beyond `min_circle_deg` on each side, s. 5.
    pub min_circle_s: f64,
    /// Driving counts as straight with the steering wheel within this, rad (for the
    /// report's straight-driving offset). 0.2 (about 0.5° of front wheel).
    pub straight_wheel_rad: f64,
}

impl FitConfig {
    /// The defaults.
    pub const DEFAULT: FitConfig = FitConfig {
        wheelbase_m: VehicleParams::DEFAULT.wheelbase_m,
        start: SteeringRelation::GEM_E2,
        min_speed_mps: 1.0,
        max_lateral_accel_mps2: 1.0,
        window_s: 1.0,
        steady_wheel_band_rad: 0.1,
        settle_s: 2.0,
        steady_turn_band_deg: 0.5,
        outlier_mads: 3.0,
        min_circle_deg: 10.0,
        min_circle_s: 5.0,
        straight_wheel_rad: 0.2,
    };

    /// Checks every value; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.start.validate()?;
        let positives = [
            (field!(FitConfig.wheelbase_m), self.wheelbase_m),
            (field!(FitConfig.min_speed_mps), self.min_speed_mps),
            (
                field!(FitConfig.max_lateral_accel_mps2),
                self.max_lateral_accel_mps2,
            ),
            (field!(FitConfig.window_s), self.window_s),
            (
                field!(FitConfig.steady_wheel_band_rad),
                self.steady_wheel_band_rad,
            ),
            (
                field!(FitConfig.steady_turn_band_deg),
                self.steady_turn_band_deg,
            ),
            (field!(FitConfig.outlier_mads), self.outlier_mads),
            (field!(FitConfig.min_circle_s), self.min_circle_s),
            (
                field!(FitConfig.straight_wheel_rad),
                self.straight_wheel_rad,
            ),
        ];
        first_invalid(positives.map(positive).into_iter().chain([
            check(
                (field!(FitConfig.settle_s), self.settle_s),
                self.settle_s >= 0.0,
                "must be >= 0",
            ),
            check(
                (field!(FitConfig.min_circle_deg), self.min_circle_deg),
                self.min_circle_deg > 0.0 && self.min_circle_deg < MAX_FRONT_WHEEL_DEG,
                "must be > 0 and below 35",
            ),
        ]))
    }
}

impl Default for FitConfig {
    fn default() -> Self {
        FitConfig::DEFAULT
    }
}

/// Why there is no fit.
#[derive(Debug, Error, PartialEq)]
pub enum FitError {
    /// A setting is invalid.
    #[error("invalid setting: {0}")]
    Config(#[from] ConfigError),
    /// Too few samples survive the filters to fit three coefficients.
    #[error("only {kept} of {total} samples survive the filters; drive steady circles and straight lines (see the report of the filters)")]
    TooFew {
        /// Samples kept.
        kept: usize,
        /// Samples given.
        total: usize,
    },
    /// Too little of a side.
    #[error("too little data turning {side}: {have_s:.1} s of steady circles beyond {beyond_deg}° of front wheel, {need_s:.1} s needed; drive steady circles to the {side} (for example 15° and 25°)")]
    TooThin {
        /// `left` or `right`.
        side: &'static str,
        /// Seconds of kept samples beyond the angle.
        have_s: f64,
        /// Seconds needed.
        need_s: f64,
        /// The angle, degrees.
        beyond_deg: f64,
    },
    /// The fit broke the relation's rules; nothing is returned.
    #[error("the fitted relation (quadratic {q:.4}, linear {l:.3}, offset {o:.2}°) is refused: {source}")]
    Refused {
        /// The fitted quadratic coefficient.
        q: f64,
        /// The fitted linear coefficient.
        l: f64,
        /// The fitted offset, degrees.
        o: f64,
        /// The rule it breaks.
        source: ConfigError,
    },
}

/// The kept samples in one band of measured front-wheel angle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bin {
    /// The band's lower edge, degrees of front wheel.
    pub from_deg: f64,
    /// Its upper edge, degrees.
    pub to_deg: f64,
    /// Samples kept in it.
    pub count: usize,
    /// Their mean residual (measured − fitted front-wheel angle), degrees.
    pub mean_residual_deg: f64,
    /// Their residuals' root mean square, degrees.
    pub rms_residual_deg: f64,
}

/// The fit and what it rests on.
#[derive(Clone, Debug, PartialEq)]
pub struct SteeringFit {
    /// The fitted relation (valid).
    pub relation: SteeringRelation,
    /// The relation compared with ([`FitConfig::start`]).
    pub start: SteeringRelation,
    /// Samples given.
    pub total: usize,
    /// Samples the fit used.
    pub used: usize,
    /// Samples dropped, per filter, in [`Filter::ALL`]'s order.
    pub rejected: Vec<(Filter, usize)>,
    /// The kept samples in 5° bands of measured front-wheel angle, −35° to 35°.
    pub bins: Vec<Bin>,
    /// The residuals' root mean square, degrees of front wheel.
    pub residual_rms_deg: f64,
    /// The offset straight driving alone gives (with the fitted curve), degrees, and the
    /// samples it rests on; `None` without straight driving.
    pub offset_straight_deg: Option<(f64, usize)>,
    /// The offset the circles beyond `min_circle_deg` alone give, degrees.
    pub offset_circles_deg: f64,
    /// Seconds of kept circles beyond `min_circle_deg`, right and left.
    pub circle_s: [f64; 2],
    /// The largest front-wheel error the starting relation makes, against the fit, over
    /// ±25° ([`front_wheel_error_deg`]), degrees.
    pub start_error_deg: f64,
}

/// The range the fit's quality and the relations' differences are judged over, degrees
/// of front wheel either side: the angles the car steers on a track.
pub const JUDGED_RANGE_DEG: f64 = 25.0;

/// The largest front-wheel error over ±`range_deg` of front wheel when a bridge holding
/// `used` steers a car whose truth is `truth`: for each front-wheel angle `f` commanded,
/// `|f − truth⁻¹(used(f))|`, degrees (0.05° steps).
pub fn front_wheel_error_deg(
    truth: &SteeringRelation,
    used: &SteeringRelation,
    range_deg: f64,
) -> f64 {
    let steps = (range_deg / 0.05).round() as i64;
    (-steps..=steps)
        .map(|i| {
            let f = i as f64 * 0.05;
            let sw = used.wheel_deg(f - used.offset_deg);
            (f - (truth.turn_deg(sw) + truth.offset_deg)).abs()
        })
        .fold(
            0.0,
            |m: f64, e| if e.is_nan() { f64::INFINITY } else { m.max(e) },
        )
}

/// A sample the filters kept: its steering wheel (degrees) and measured front-wheel angle
/// (degrees).
#[derive(Clone, Copy, Debug)]
struct Point {
    sw_deg: f64,
    f_deg: f64,
}

/// The relation fitted to `samples` (time order), or why not (module documentation).
pub fn fit(samples: &[Sample], cfg: &FitConfig) -> Result<SteeringFit, FitError> {
    cfg.validate()?;
    let (kept, mut rejected) = filter(samples, cfg);
    let too_few = |kept: usize| FitError::TooFew {
        kept,
        total: samples.len(),
    };
    let mut points: Vec<Point> = kept.iter().map(|&i| point(&samples[i], cfg)).collect();
    check_sides(&points, cfg, period_s(samples))?;
    let first = solve(&points, cfg).ok_or_else(|| too_few(points.len()))?;
    let before = points.len();
    points = without_outliers(&points, &first, cfg.outlier_mads);
    rejected.push((Filter::Outlier, before - points.len()));
    let p = refine(&points, first).ok_or_else(|| too_few(points.len()))?;
    let circle_s = check_sides(&points, cfg, period_s(samples))?;
    let relation = SteeringRelation {
        quadratic_deg: p[0],
        linear: p[1],
        offset_deg: p[2],
    };
    relation.validate().map_err(|source| FitError::Refused {
        q: p[0],
        l: p[1],
        o: p[2],
        source,
    })?;
    Ok(summary(
        samples.len(),
        rejected,
        &points,
        relation,
        circle_s,
        cfg,
    ))
}

/// The measured front-wheel angle of a kept sample.
fn point(s: &Sample, cfg: &FitConfig) -> Point {
    Point {
        sw_deg: s.wheel_rad.to_degrees(),
        f_deg: measured_deg(s, cfg.wheelbase_m),
    }
}

/// `atan(L·r/v)`, degrees (NaN at a standstill).
fn measured_deg(s: &Sample, wheelbase_m: f64) -> f64 {
    (wheelbase_m * s.yaw_rate_rad_s / s.speed_mps)
        .atan()
        .to_degrees()
}

/// The median time between samples, s (what one sample stands for).
fn period_s(samples: &[Sample]) -> f64 {
    let mut dt: Vec<f64> = samples
        .windows(2)
        .map(|w| w[1].t_s - w[0].t_s)
        .filter(|d| *d > 0.0)
        .collect();
    median(&mut dt).unwrap_or(0.0)
}

/// The indices of the samples every filter keeps, and the count each filter dropped.
fn filter(samples: &[Sample], cfg: &FitConfig) -> (Vec<usize>, Vec<(Filter, usize)>) {
    let mut counts = [0usize; Filter::ALL.len()];
    let mut kept = Vec::new();
    let mut moved_at = f64::NEG_INFINITY;
    // A gap longer than this in the data is a new start: nothing is known of what the
    // steering wheel did meanwhile.
    let gap_s = cfg.window_s / 2.0;
    for (i, s) in samples.iter().enumerate() {
        let lo = samples[..i].partition_point(|p| p.t_s < s.t_s - cfg.window_s);
        let window = &samples[lo..=i];
        let gapped = i > 0 && s.t_s - samples[i - 1].t_s > gap_s;
        let wheel_spread = spread(window.iter().map(|p| p.wheel_rad));
        let moving = wheel_spread.is_nan() || wheel_spread > cfg.steady_wheel_band_rad;
        if i == 0 || gapped || moving {
            moved_at = s.t_s;
        }
        let f = measured_deg(s, cfg.wheelbase_m);
        let verdict = if !(s.t_s.is_finite()
            && s.wheel_rad.is_finite()
            && s.yaw_rate_rad_s.is_finite()
            && s.speed_mps.is_finite())
        {
            Some(Filter::Unusable)
        } else if s.speed_mps < cfg.min_speed_mps {
            Some(Filter::Slow)
        } else if (s.speed_mps * s.yaw_rate_rad_s).abs() > cfg.max_lateral_accel_mps2 {
            Some(Filter::LateralAccel)
        } else if moving {
            Some(Filter::SteeringMoving)
        } else if s.t_s - moved_at < cfg.settle_s {
            Some(Filter::Settling)
        } else if !f.is_finite() || drift_deg(window, cfg.wheelbase_m) > cfg.steady_turn_band_deg {
            Some(Filter::TurnUnsteady)
        } else {
            None
        };
        match verdict {
            Some(filter) => counts[filter as usize] += 1,
            None => kept.push(i),
        }
    }
    let rejected = Filter::ALL[..Filter::ALL.len() - 1]
        .iter()
        .map(|&f| (f, counts[f as usize]))
        .collect();
    (kept, rejected)
}

/// The measured front-wheel angle's mean over the later half of `window` less its mean
/// over the earlier half, magnitude, degrees (0 for a window of one sample).
fn drift_deg(window: &[Sample], wheelbase_m: f64) -> f64 {
    let mid = window.len() / 2;
    let mean = |part: &[Sample]| {
        part.iter()
            .map(|p| measured_deg(p, wheelbase_m))
            .sum::<f64>()
            / part.len() as f64
    };
    if mid == 0 {
        return 0.0;
    }
    (mean(&window[mid..]) - mean(&window[..mid])).abs()
}

/// `max − min` of the values; NaN if any is NaN.
fn spread(values: impl Iterator<Item = f64>) -> f64 {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        if v.is_nan() {
            (f64::NAN, f64::NAN)
        } else {
            (lo.min(v), hi.max(v))
        }
    });
    hi - lo
}

/// Seconds of points beyond the circle angle, right and left; an error when a side has
/// too few.
fn check_sides(points: &[Point], cfg: &FitConfig, period_s: f64) -> Result<[f64; 2], FitError> {
    let beyond = |sign: f64| {
        points
            .iter()
            .filter(|p| sign * p.f_deg > cfg.min_circle_deg)
            .count() as f64
            * period_s
    };
    let have = [beyond(-1.0), beyond(1.0)];
    for (side, have_s) in ["right", "left"].into_iter().zip(have) {
        if have_s < cfg.min_circle_s {
            return Err(FitError::TooThin {
                side,
                have_s,
                need_s: cfg.min_circle_s,
                beyond_deg: cfg.min_circle_deg,
            });
        }
    }
    Ok(have)
}

/// The parameters `[q, l, offset]`.
type Params = Vector3<f64>;

/// The first fit: the linear start refined, or, where the relation of that start has no
/// inverse for some steering wheel (its vertex within the data), the same start without
/// its curvature, or the starting relation.
fn solve(points: &[Point], cfg: &FitConfig) -> Option<Params> {
    let linear = linear_start(points);
    let flat = linear.map(|x| Vector3::new(0.0, x[1], x[2]));
    let before = Vector3::new(
        cfg.start.quadratic_deg,
        cfg.start.linear,
        cfg.start.offset_deg,
    );
    let start = [linear, flat, Some(before)]
        .into_iter()
        .flatten()
        .find(|x| cost(points, x).is_finite())?;
    refine(points, start)
}

/// `f = offset + a·SW + b·SW·|SW|` by linear least squares (SW in hundreds of degrees, for
/// conditioning), turned into `[q, l, offset]` through the inverse's expansion
/// `t ≈ SW/l − q·SW·|SW|/l³`; `None` when singular or not increasing at the centre.
fn linear_start(points: &[Point]) -> Option<Params> {
    let mut ata = Matrix3::zeros();
    let mut atb = Vector3::zeros();
    for p in points {
        let s = p.sw_deg / 100.0;
        let row = Vector3::new(1.0, s, s * s.abs());
        ata += row * row.transpose();
        atb += row * p.f_deg;
    }
    let x = ata.lu().solve(&atb)?;
    let (a, b) = (x[1] / 100.0, x[2] / 10_000.0);
    (a > 0.0 && x.iter().all(|v| v.is_finite()))
        .then(|| Vector3::new(-b / (a * a * a), 1.0 / a, x[0]))
}

/// The residual of a point, measured − fitted front-wheel angle, degrees, and its
/// gradient with respect to `[q, l, offset]`.
fn residual(p: &Point, x: &Params) -> (f64, Vector3<f64>) {
    let (q, l, o) = (x[0], x[1], x[2]);
    let s = p.sw_deg.abs();
    let d = (l * l + 4.0 * q * s).sqrt();
    let turn = p.sw_deg.signum() * 2.0 * s / (l + d);
    let k = -p.sw_deg.signum() * 2.0 * s / ((l + d) * (l + d));
    let dq = k * 2.0 * s / d;
    let dl = k * (1.0 + l / d);
    (p.f_deg - turn - o, Vector3::new(-dq, -dl, -1.0))
}

fn cost(points: &[Point], x: &Params) -> f64 {
    points.iter().map(|p| residual(p, x).0.powi(2)).sum()
}

/// Levenberg–Marquardt from `x` on the exact inverse; `None` with fewer than three
/// points or without a finite cost anywhere near.
fn refine(points: &[Point], mut x: Params) -> Option<Params> {
    if points.len() < 3 {
        return None;
    }
    let mut c = cost(points, &x);
    let mut lambda = 1e-3;
    for _ in 0..200 {
        let (mut jtj, mut jte) = (Matrix3::zeros(), Vector3::zeros());
        for p in points {
            let (e, g) = residual(p, &x);
            if e.is_finite() {
                jtj += g * g.transpose();
                jte += g * e;
            }
        }
        let mut damped = jtj;
        for k in 0..3 {
            damped[(k, k)] *= 1.0 + lambda;
        }
        let Some(step) = damped.lu().solve(&(-jte)) else {
            lambda *= 10.0;
            continue;
        };
        let next = x + step;
        let nc = cost(points, &next);
        if nc.is_finite() && (nc <= c || !c.is_finite()) {
            let done = (c - nc).abs() <= 1e-14 * c.max(1e-300) || step.norm() < 1e-12;
            x = next;
            c = nc;
            lambda = (lambda / 3.0).max(1e-12);
            if done {
                break;
            }
        } else {
            lambda *= 4.0;
            if lambda > 1e12 {
                break;
            }
        }
    }
    (c.is_finite() && x.iter().all(|v| v.is_finite())).then_some(x)
}

/// The points whose residual lies within `mads` scaled median absolute deviations of the
/// residuals' median.
fn without_outliers(points: &[Point], x: &Params, mads: f64) -> Vec<Point> {
    let mut e: Vec<f64> = points.iter().map(|p| residual(p, x).0).collect();
    let med = median(&mut e.clone()).unwrap_or(0.0);
    let mut dev: Vec<f64> = e.iter().map(|r| (r - med).abs()).collect();
    // 1.4826·MAD estimates σ of normal residuals; the floor keeps exact data whole.
    let sigma = (1.4826 * median(&mut dev).unwrap_or(0.0)).max(0.01);
    e.iter_mut().for_each(|r| *r = (*r - med).abs());
    points
        .iter()
        .zip(&e)
        .filter(|(_, d)| **d <= mads * sigma)
        .map(|(p, _)| *p)
        .collect()
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn summary(
    total: usize,
    rejected: Vec<(Filter, usize)>,
    points: &[Point],
    relation: SteeringRelation,
    circle_s: [f64; 2],
    cfg: &FitConfig,
) -> SteeringFit {
    let x = Vector3::new(relation.quadratic_deg, relation.linear, relation.offset_deg);
    let res: Vec<(Point, f64)> = points.iter().map(|p| (*p, residual(p, &x).0)).collect();
    let rms = |e: &[f64]| (e.iter().map(|r| r * r).sum::<f64>() / e.len().max(1) as f64).sqrt();
    let mean = |e: &[f64]| e.iter().sum::<f64>() / e.len().max(1) as f64;
    let bins = (-7..7)
        .map(|k| {
            let (from_deg, to_deg) = (f64::from(k) * 5.0, f64::from(k + 1) * 5.0);
            let e: Vec<f64> = res
                .iter()
                .filter(|(p, _)| p.f_deg >= from_deg && p.f_deg < to_deg)
                .map(|(_, e)| *e)
                .collect();
            Bin {
                from_deg,
                to_deg,
                count: e.len(),
                mean_residual_deg: mean(&e),
                rms_residual_deg: rms(&e),
            }
        })
        .collect();
    let offset_of = |keep: &dyn Fn(&Point) -> bool| {
        let e: Vec<f64> = res
            .iter()
            .filter(|(p, _)| keep(p))
            .map(|(_, e)| *e)
            .collect();
        (relation.offset_deg + mean(&e), e.len())
    };
    let straight_deg = cfg.straight_wheel_rad.to_degrees();
    let straight = offset_of(&|p| p.sw_deg.abs() <= straight_deg);
    let circles = offset_of(&|p| p.f_deg.abs() > cfg.min_circle_deg);
    let all: Vec<f64> = res.iter().map(|(_, e)| *e).collect();
    SteeringFit {
        relation,
        start: cfg.start,
        total,
        used: points.len(),
        rejected,
        bins,
        residual_rms_deg: rms(&all),
        offset_straight_deg: (straight.1 > 0).then_some(straight),
        offset_circles_deg: circles.0,
        circle_s,
        start_error_deg: front_wheel_error_deg(&relation, &cfg.start, JUDGED_RANGE_DEG),
    }
}

impl SteeringFit {
    /// The report, Markdown: the samples used and dropped by filter, the fitted values
    /// against the starting ones, the offsets, the residuals by band.
    pub fn report_markdown(&self) -> String {
        let mut s = String::new();
        let r = &self.relation;
        let st = &self.start;
        let _ = writeln!(s, "# Steering relation\n");
        let _ = writeln!(
            s,
            "SW° = q·t·|t| + l·t, t = f − offset (f: front-wheel angle, degrees, + left).\n"
        );
        let _ = writeln!(s, "| value | fitted | before |\n|---|---|---|");
        let _ = writeln!(
            s,
            "| quadratic q (°/°²) | {:.5} | {:.5} |",
            r.quadratic_deg, st.quadratic_deg
        );
        let _ = writeln!(s, "| linear l (°/°) | {:.4} | {:.4} |", r.linear, st.linear);
        let _ = writeln!(
            s,
            "| offset (°) | {:.3} | {:.3} |",
            r.offset_deg, st.offset_deg
        );
        let _ = writeln!(
            s,
            "| steering wheel at 35° of turn (rad) | {:.3} | {:.3} |\n",
            r.max_steering_wheel_rad(),
            st.max_steering_wheel_rad()
        );
        let _ = writeln!(
            s,
            "Driving with the relation before, the front wheels miss the commanded angle by up to {:.2}° within ±{JUDGED_RANGE_DEG}°.\n",
            self.start_error_deg
        );
        let _ = writeln!(s, "## Offset\n");
        match self.offset_straight_deg {
            Some((o, n)) => {
                let _ = writeln!(s, "- straight driving alone: {o:.3}° ({n} samples)");
            }
            None => {
                let _ = writeln!(s, "- straight driving alone: no straight driving kept");
            }
        }
        let _ = writeln!(
            s,
            "- circles alone: {:.3}°\n- both (the fit): {:.3}°\n",
            self.offset_circles_deg, r.offset_deg
        );
        let _ = writeln!(s, "## Samples\n");
        let _ = writeln!(s, "{} samples, {} used.\n", self.total, self.used);
        let _ = writeln!(s, "| filter | dropped | why |\n|---|---|---|");
        for (f, n) in &self.rejected {
            let _ = writeln!(s, "| {} | {n} | {} |", f.name(), f.reason());
        }
        let _ = writeln!(
            s,
            "\nSteady circles kept: {:.1} s to the right, {:.1} s to the left.\n",
            self.circle_s[0], self.circle_s[1]
        );
        let _ = writeln!(s, "## Residuals (measured − fitted front-wheel angle)\n");
        let _ = writeln!(s, "Overall RMS {:.3}°.\n", self.residual_rms_deg);
        let _ = writeln!(
            s,
            "| band (°) | samples | mean (°) | RMS (°) |\n|---|---|---|---|"
        );
        for b in self.bins.iter().filter(|b| b.count > 0) {
            let _ = writeln!(
                s,
                "| {:.0} to {:.0} | {} | {:.3} | {:.3} |",
                b.from_deg, b.to_deg, b.count, b.mean_residual_deg, b.rms_residual_deg
            );
        }
        s
    }
}

/// The circles of a calibration drive ([`circle_plan`]).
#[derive(Clone, Debug, PartialEq)]
pub struct CirclePlanConfig {
    /// The front-wheel angles of the circles, degrees, each driven left and right (the
    /// steering wheel the starting relation gives for it). 10°, 15°, 20°, 25°: the
    /// smallest circle has a radius of 3.8 m, the largest 9.9 m.
    pub angles_deg: Vec<f64>,
    /// The speed held, m/s. 1.5: above the fit's minimum, a lateral acceleration of at
    /// most 0.6 m/s² on the 25° circle.
    pub speed_mps: f64,
    /// How long each circle is held, s (the steering wheel's turn and the settling
    /// included). 25.
    pub circle_s: f64,
    /// The straight driving before each circle, s: the offset's samples, and the steering
    /// wheel back at the centre. 8.
    pub straight_s: f64,
}

impl Default for CirclePlanConfig {
    fn default() -> Self {
        CirclePlanConfig {
            angles_deg: vec![10.0, 15.0, 20.0, 25.0],
            speed_mps: 1.5,
            circle_s: 25.0,
            straight_s: 8.0,
        }
    }
}

/// The calibration runs of a steering drive: for each angle, left then right, a straight
/// stretch and then the circle, all at `speed_mps` through the bridge's speed loop and
/// chained, the car never stopping between them; the first starts from rest. Each run
/// is bounded by its duration, by the distance it should cover with half as much again,
/// and by a speed 1 m/s above the one held. The steering wheel of a circle comes from
/// `start`, the relation the car steers with now, so the circles land near the angles
/// asked for.
pub fn circle_plan(start: &SteeringRelation, cfg: &CirclePlanConfig) -> Vec<Step> {
    let run = |wheel_deg: f64, secs: f64| RunRequest {
        hold: Hold::Speed(cfg.speed_mps),
        steering_wheel_rad: wheel_deg.to_radians(),
        steering_rate_rad_s: None,
        duration: Duration::from_secs_f64(secs),
        distance_m: 1.5 * cfg.speed_mps * secs,
        max_speed_mps: cfg.speed_mps + 1.0,
    };
    let mut steps = Vec::new();
    for f in &cfg.angles_deg {
        for sign in [1.0, -1.0] {
            for request in [
                run(0.0, cfg.straight_s),
                run(start.wheel_deg(sign * f), cfg.circle_s),
            ] {
                let start = if steps.is_empty() {
                    Start::AtRest
                } else {
                    Start::Chained
                };
                steps.push(Step { request, start });
            }
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    const L: f64 = 1.75;

    fn truth() -> SteeringRelation {
        SteeringRelation {
            quadratic_deg: -0.09,
            linear: 19.8,
            offset_deg: 1.0,
        }
    }

    /// A drive at 20 Hz: for each steering wheel (degrees) a ramp to it at 3.5 rad/s, then
    /// `hold_s` on it at `speed` m/s, the car on the `truth` relation; noise σ on the yaw
    /// rate (rad/s) and the speed (m/s).
    struct Drive {
        rng: StdRng,
        t: f64,
        wheel_deg: f64,
        samples: Vec<Sample>,
        yaw_sigma: f64,
        speed_sigma: f64,
    }

    impl Drive {
        fn new(seed: u64, yaw_sigma: f64, speed_sigma: f64) -> Drive {
            Drive {
                rng: StdRng::seed_from_u64(seed),
                t: 0.0,
                wheel_deg: 0.0,
                samples: Vec::new(),
                yaw_sigma,
                speed_sigma,
            }
        }

        fn gaussian(&mut self) -> f64 {
            let u1: f64 = 1.0 - self.rng.gen::<f64>();
            let u2: f64 = self.rng.gen();
            (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        }

        fn sample(&mut self, truth: &SteeringRelation, speed: f64) {
            let f = (truth.turn_deg(self.wheel_deg) + truth.offset_deg).to_radians();
            let r = speed * f.tan() / L + self.yaw_sigma * self.gaussian();
            let v = speed + self.speed_sigma * self.gaussian();
            self.samples.push(Sample {
                t_s: self.t,
                wheel_rad: self.wheel_deg.to_radians(),
                yaw_rate_rad_s: r,
                speed_mps: v,
            });
            self.t += 0.05;
        }

        fn hold(&mut self, truth: &SteeringRelation, wheel_deg: f64, speed: f64, hold_s: f64) {
            let step = 3.5_f64.to_degrees() * 0.05;
            while (self.wheel_deg - wheel_deg).abs() > step {
                self.wheel_deg += step * (wheel_deg - self.wheel_deg).signum();
                self.sample(truth, speed);
            }
            self.wheel_deg = wheel_deg;
            for _ in 0..(hold_s / 0.05).round() as usize {
                self.sample(truth, speed);
            }
        }
    }

    /// Circles at front-wheel angles −28°…28° (those of `truth` for the steering wheels
    /// `start` sends) and straight stretches between them, 1.5 m/s on the circles and
    /// 3 m/s straight.
    fn circles(
        truth: &SteeringRelation,
        seed: u64,
        yaw_sigma: f64,
        speed_sigma: f64,
    ) -> Vec<Sample> {
        let mut d = Drive::new(seed, yaw_sigma, speed_sigma);
        for f in [
            -28.0, -22.0, -16.0, -10.0, -5.0, 5.0, 10.0, 16.0, 22.0, 28.0,
        ] {
            d.hold(truth, 0.0, 3.0, 10.0);
            let sw = SteeringRelation::GEM_E2.wheel_deg(f);
            d.hold(truth, sw, 1.5, 20.0);
        }
        d.samples
    }

    fn assert_recovers(fit: &SteeringFit, truth: &SteeringRelation) {
        let err = front_wheel_error_deg(truth, &fit.relation, JUDGED_RANGE_DEG);
        let offset = (fit.relation.offset_deg - truth.offset_deg).abs();
        assert!(err < 0.5, "front-wheel error {err:.3}°: {:?}", fit.relation);
        assert!(
            offset < 0.2,
            "offset error {offset:.3}°: {:?}",
            fit.relation
        );
    }

    #[test]
    fn exact_samples_give_the_relation_back() {
        let t = truth();
        let f = fit(&circles(&t, 1, 0.0, 0.0), &FitConfig::DEFAULT).unwrap();
        assert!(
            (f.relation.linear - t.linear).abs() < 1e-6,
            "{:?}",
            f.relation
        );
        assert!((f.relation.quadratic_deg - t.quadratic_deg).abs() < 1e-7);
        assert!((f.relation.offset_deg - t.offset_deg).abs() < 1e-7);
        assert!(f.residual_rms_deg < 1e-6);
        assert!(front_wheel_error_deg(&t, &f.relation, 25.0) < 1e-6);
        // The filters dropped the ramps and the settling after each.
        let dropped = |which: Filter| f.rejected.iter().find(|(g, _)| *g == which).unwrap().1;
        assert!(dropped(Filter::SteeringMoving) > 0);
        assert!(dropped(Filter::Settling) > 0);
        // Between 1° and 3° the starting relation is wrong, and by that much.
        assert!(
            (1.0..4.0).contains(&f.start_error_deg),
            "{}",
            f.start_error_deg
        );
    }

    #[test]
    fn noisy_samples_with_bumps_give_the_relation_within_half_a_degree() {
        let t = truth();
        let mut samples = circles(&t, 7, 0.002, 0.03);
        // Bumps: one sample in 37 with a yaw-rate spike (about 0.4° of front wheel on
        // the circles, 4σ of the noise).
        for s in samples.iter_mut().step_by(37) {
            s.yaw_rate_rad_s += 0.01;
        }
        let f = fit(&samples, &FitConfig::DEFAULT).unwrap();
        assert_recovers(&f, &t);
        assert!(f
            .rejected
            .iter()
            .any(|(g, n)| *g == Filter::Outlier && *n > 0));
        let (straight, n) = f.offset_straight_deg.unwrap();
        assert!(
            n > 1000 && (straight - 1.0).abs() < 0.2,
            "{straight} from {n}"
        );
        assert!((f.offset_circles_deg - 1.0).abs() < 0.3);
        let report = f.report_markdown();
        assert!(report.contains("| linear l (°/°) |"), "{report}");
        assert!(report.contains("| settling |"));
    }

    #[test]
    fn a_negative_offset_and_the_shipped_curve_are_recovered() {
        let t = SteeringRelation {
            offset_deg: -2.5,
            ..SteeringRelation::GEM_E2
        };
        let f = fit(&circles(&t, 3, 0.002, 0.03), &FitConfig::DEFAULT).unwrap();
        assert_recovers(&f, &t);
    }

    #[test]
    fn circles_to_one_side_only_are_too_thin() {
        let t = truth();
        let left: Vec<Sample> = circles(&t, 1, 0.0, 0.0)
            .into_iter()
            .filter(|s| s.wheel_rad >= 0.0)
            .collect();
        match fit(&left, &FitConfig::DEFAULT) {
            Err(FitError::TooThin { side, have_s, .. }) => {
                assert_eq!(side, "right");
                assert_eq!(have_s, 0.0);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            fit(&[], &FitConfig::DEFAULT),
            Err(FitError::TooThin { .. })
        ));
    }

    #[test]
    fn a_relation_folding_back_within_35_degrees_is_refused() {
        // A steering wheel that turns ever less per degree: its vertex at 27°.
        let folding = SteeringRelation {
            quadratic_deg: -0.4,
            linear: 21.775,
            offset_deg: 0.0,
        };
        let mut d = Drive::new(1, 0.0, 0.0);
        for f in [-25.0, -15.0, -5.0, 5.0, 15.0, 25.0] {
            d.hold(&folding, 0.0, 3.0, 10.0);
            d.hold(&folding, folding.wheel_deg(f), 1.5, 20.0);
        }
        match fit(&d.samples, &FitConfig::DEFAULT) {
            Err(FitError::Refused { q, source, .. }) => {
                assert!((q + 0.4).abs() < 1e-6, "{q}");
                assert_eq!(source.field, field!(SteeringRelation.quadratic_deg));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_bad_setting_is_named() {
        let cfg = FitConfig {
            min_speed_mps: 0.0,
            ..FitConfig::DEFAULT
        };
        match fit(&[], &cfg) {
            Err(FitError::Config(e)) => assert_eq!(e.field, field!(FitConfig.min_speed_mps)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn slow_and_hard_turning_samples_are_dropped() {
        let t = truth();
        let mut d = Drive::new(1, 0.0, 0.0);
        d.hold(&t, 0.0, 0.5, 10.0);
        d.hold(&t, 400.0, 3.0, 10.0);
        let (kept, rejected) = filter(&d.samples, &FitConfig::DEFAULT);
        assert!(kept.is_empty());
        let n = |f: Filter| rejected.iter().find(|(g, _)| *g == f).unwrap().1;
        assert_eq!(n(Filter::Slow), 200);
        // 3 m/s on a 23° circle: 2.2 m/s².
        assert!(n(Filter::LateralAccel) >= 200);
    }

    #[test]
    fn ins_solutions_give_the_yaw_rate_and_the_rear_axles_speed() {
        // A car on a circle of radius 4 m at 2 m/s, counter-clockwise (yaw rate 0.5 rad/s),
        // the antenna 0.46 m ahead; the azimuth wraps through north.
        let (r, v, d) = (0.5, 2.0, 0.46);
        let ins: Vec<InsSample> = (0..200)
            .map(|i| {
                let t = f64::from(i) * 0.05;
                let yaw = 1.2 + r * t; // counter-clockwise from east
                let az = (90.0 - yaw.to_degrees()).rem_euclid(360.0);
                // The antenna's velocity: v along the heading, r·d to the left of it.
                let (sin, cos) = yaw.sin_cos();
                let east = v * cos - r * d * sin;
                let north = v * sin + r * d * cos;
                InsSample {
                    t_s: t,
                    azimuth_deg: az,
                    north_velocity_mps: north,
                    east_velocity_mps: east,
                }
            })
            .collect();
        let wheel = vec![(0.0, 1.0), (5.0, 2.0), (10.0, 3.0)];
        let s = samples_from_ins(&wheel, &ins, &SampleConfig::DEFAULT);
        assert!(
            s[0].yaw_rate_rad_s.is_nan(),
            "the first solution has half a window"
        );
        for x in &s[20..180] {
            assert!((x.yaw_rate_rad_s - r).abs() < 1e-9, "{}", x.yaw_rate_rad_s);
            assert!((x.speed_mps - v).abs() < 1e-9, "{}", x.speed_mps);
        }
        // The reports are 5 s apart: beyond the gap, no steering wheel.
        assert!(s[40].wheel_rad.is_nan());
        // Between two reports 0.1 s apart: interpolated; 0.4 s after the last: none.
        let close = [(ins[20].t_s - 0.05, 1.0), (ins[20].t_s + 0.05, 2.0)];
        let s = samples_from_ins(&close, &[ins[20], ins[28]], &SampleConfig::DEFAULT);
        assert!((s[0].wheel_rad - 1.5).abs() < 1e-9, "{}", s[0].wheel_rad);
        assert!(s[1].wheel_rad.is_nan());
        // Reversing: the velocity against the heading.
        let back: Vec<InsSample> = ins
            .iter()
            .map(|x| InsSample {
                north_velocity_mps: -x.north_velocity_mps,
                east_velocity_mps: -x.east_velocity_mps,
                ..*x
            })
            .collect();
        let s = samples_from_ins(&wheel, &back, &SampleConfig::DEFAULT);
        assert!(s[100].speed_mps < 0.0);
    }

    #[test]
    fn a_circle_drive_turns_both_ways_after_a_straight_each_time() {
        let plan = circle_plan(&SteeringRelation::GEM_E2, &CirclePlanConfig::default());
        assert_eq!(plan.len(), 16);
        assert_eq!(plan[0].start, Start::AtRest);
        assert!(plan[1..].iter().all(|s| s.start == Start::Chained));
        let wheels: Vec<f64> = plan
            .iter()
            .map(|s| s.request.steering_wheel_rad.to_degrees())
            .collect();
        // 21.775·10 − 0.1084·100 = 206.91° of steering wheel, left then right.
        assert_eq!(wheels[0], 0.0);
        assert!((wheels[1] - 206.91).abs() < 1e-9 && (wheels[3] + 206.91).abs() < 1e-9);
        assert!(wheels.iter().step_by(2).all(|w| *w == 0.0));
        for s in &plan {
            assert_eq!(s.request.hold, Hold::Speed(1.5));
            assert_eq!(s.request.max_speed_mps, 2.5);
            let secs = s.request.duration.as_secs_f64();
            assert!((s.request.distance_m - 2.25 * secs).abs() < 1e-9);
        }
    }

    #[test]
    fn the_front_wheel_error_of_a_relation_against_itself_is_zero() {
        let t = truth();
        assert!(front_wheel_error_deg(&t, &t, 25.0) < 1e-12);
        // One degree of offset is one degree everywhere.
        let shifted = SteeringRelation {
            offset_deg: 2.0,
            ..t
        };
        assert!((front_wheel_error_deg(&t, &shifted, 25.0) - 1.0).abs() < 1e-9);
    }
}
