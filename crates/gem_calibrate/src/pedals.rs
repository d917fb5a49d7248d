//! The accelerator and brake maps fitted from drives.
//!
//! **Samples.** [`extract`] turns the time series of a drive (the speed report, the two
//! pedals, the steering wheel) into samples `(speed, pedal, acceleration)`:
//!
//! - the acceleration at each speed report is the slope of a straight line fitted to the
//!   reports within a window around it, cut to the stretch over which the pedals held
//!   still (1 s, or 2 s when the report is quantised, as a
//!   CAN speed in whole km/h is: a slope over a longer window averages the steps instead
//!   of seeing each step as a spike, which is what makes a jerk filter throw most data
//!   away on such reports);
//! - the pedals are read `delay_s` earlier (the pedal-to-acceleration delay).
//!
//! A sample is dropped, and counted under its filter's name, when:
//!
//! - `pedal changing`: a pedal moved less than `settle_s` before or after (both moved by
//!   the delay): the response to a step is not the map's steady value, and the margin
//!   also covers a delay that differs from `delay_s`;
//! - `window`: the window, cut to the time the pedals held still, holds fewer than 5
//!   reports or spans less than half its length (a gap in the data, or a run too short);
//! - `both pedals`: both pedals were pressed;
//! - `steering`: the steering wheel is beyond `max_steering_wheel_rad` (a bend adds drag
//!   the maps do not hold);
//! - `jerk`: the acceleration changes faster than `max_jerk_mps3` across the window;
//! - `at rest`: the car stands still, or comes to rest or moves off, within the window (a
//!   held brake, or a pedal in its dead zone at rest: the map's value cannot be seen
//!   there, and a slope across a stop is not the map's).
//!
//! A sample with the brake released belongs to the accelerator map; with the accelerator
//! released, to the brake map; with both released, to both (each map's pedal-0 row is
//! coasting).
//!
//! **Fit.** [`fit`] keeps the starting map's grid (its speeds and pedal rows). A sample
//! counts for the row its pedal sits on (within `row_tolerance`); one between rows says
//! little about either row alone, and is left out, so the runs of a calibration drive
//! hold the pedal on the rows. Along the speed the map is linear, so each sample is a
//! linear equation in its row's values at the two speeds around it. The values
//! minimise a robust (Huber) sum of squared residuals plus a pull towards the starting
//! map, weak where a cell has data and strong where it has too little (`min_support`):
//! such a cell keeps the starting value, the prior, and the report says so. The rules of
//! the bridge's loader (`gem_core::pacmod::pedal_map`) are constraints of the problem,
//! solved by OSQP: down each speed column the accelerations run with the pedal, and the
//! first and last rows differ. The result is written as CSV and read back by that loader
//! before anything is returned, so a fit that breaks the rules is refused, never written.

use gem_core::pacmod::pedal_map::{Pedal, PedalMap, PedalMapError};
use osqp::{CscMatrix, Problem, Settings, Status};
use std::fmt::Write as _;
use thiserror::Error;

/// A time series: `(time s, value)`, in time order.
pub type Series = Vec<(f64, f64)>;

/// One drive's data.
#[derive(Clone, Debug, Default)]
pub struct Drive {
    /// The speed report, m/s.
    pub speed: Series,
    /// The accelerator, fraction (reported output, or the command).
    pub accelerator: Series,
    /// The brake, fraction.
    pub brake: Series,
    /// The steering wheel, rad (may be empty: no steering filter).
    pub steering_wheel: Series,
}

/// How samples are taken (module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct ExtractConfig {
    /// The slope's window, s (doubled, to at least 2 s, for a quantised speed report).
    pub window_s: f64,
    /// Pedal to acceleration delay, s.
    pub delay_s: f64,
    /// Time a pedal must have been still before the window, s.
    pub settle_s: f64,
    /// Largest steering wheel, rad (1.9 rad: about 5° of front wheel).
    pub max_steering_wheel_rad: f64,
    /// Largest change of acceleration, m/s³.
    pub max_jerk_mps3: f64,
    /// Below this speed the car is at rest, m/s.
    pub at_rest_mps: f64,
}

impl ExtractConfig {
    /// The defaults.
    pub const DEFAULT: ExtractConfig = ExtractConfig {
        window_s: 1.0,
        delay_s: 0.2,
        settle_s: 0.3,
        max_steering_wheel_rad: 1.9,
        max_jerk_mps3: 1.5,
        at_rest_mps: 0.05,
    };
}

impl Default for ExtractConfig {
    fn default() -> Self {
        ExtractConfig::DEFAULT
    }
}

/// One sample: the car at `speed_mps` with `pedal` at `frac` accelerated at `accel_mps2`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// The map it belongs to.
    pub pedal: Pedal,
    /// The smoothed speed, m/s.
    pub speed_mps: f64,
    /// The pedal, fraction.
    pub frac: f64,
    /// The acceleration, m/s².
    pub accel_mps2: f64,
}

/// What [`extract`] kept and dropped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extracted {
    /// The samples kept.
    pub samples: Vec<Sample>,
    /// Speed reports looked at.
    pub reports: usize,
    /// Dropped, per filter name, in the order of the module documentation.
    pub dropped: Vec<(&'static str, usize)>,
    /// The speed report's resolution, when it is quantised, m/s.
    pub quantum_mps: Option<f64>,
}

const FILTERS: [&str; 6] = [
    "window",
    "pedal changing",
    "both pedals",
    "steering",
    "jerk",
    "at rest",
];

/// Samples of one drive (module documentation).
pub fn extract(drive: &Drive, cfg: &ExtractConfig) -> Extracted {
    let speed = &drive.speed;
    let quantum_mps = quantum(speed);
    let w = if quantum_mps.is_some() {
        (2.0 * cfg.window_s).max(2.0)
    } else {
        cfg.window_s
    };
    let segments = steady_segments(drive, cfg);
    // Each report's window, cut to its steady stretch of pedals.
    let windows: Vec<Option<(f64, f64, usize)>> = speed
        .iter()
        .map(|&(t, _)| {
            let k = segments.partition_point(|s| s.from <= t).checked_sub(1)?;
            let seg = &segments[k];
            (t < seg.to).then(|| ((t - w / 2.0).max(seg.from), (t + w / 2.0).min(seg.to), k))
        })
        .collect();
    let slopes: Vec<Option<(f64, f64)>> = windows
        .iter()
        .map(|win| win.and_then(|(from, to, _)| line_fit(speed, from, to, w)))
        .collect();
    let mut dropped = [0usize; 6];
    let mut samples = Vec::new();
    for (i, &(t, _)) in speed.iter().enumerate() {
        let Some((from, to, k)) = windows[i] else {
            dropped[1] += 1;
            continue;
        };
        let Some((v, a)) = slopes[i] else {
            dropped[0] += 1;
            continue;
        };
        let (accel, brake) = (segments[k].accelerator, segments[k].brake);
        if accel > PRESSED && brake > PRESSED {
            dropped[2] += 1;
            continue;
        }
        if held(&drive.steering_wheel, t).is_some_and(|s| s.abs() > cfg.max_steering_wheel_rad) {
            dropped[3] += 1;
            continue;
        }
        // The change of the slope across the window, from the reports at its two ends.
        let jerk = match (nearest(speed, from), nearest(speed, to)) {
            (Some(j0), Some(j1)) if to - from > 0.0 => match (slopes[j0], slopes[j1]) {
                (Some((_, a0)), Some((_, a1))) => (a1 - a0) / (to - from),
                _ => 0.0,
            },
            _ => 0.0,
        };
        if jerk.abs() > cfg.max_jerk_mps3 {
            dropped[4] += 1;
            continue;
        }
        // At rest, or coming to rest or moving off within the window: a standing car
        // does not show the map (a brake map says how hard it would slow, not that it
        // stops), so a slope across a stop is not the map's either.
        if min_within(speed, from, to) < cfg.at_rest_mps {
            dropped[5] += 1;
            continue;
        }
        let v = v.max(0.0);
        if brake <= PRESSED {
            samples.push(Sample {
                pedal: Pedal::Accelerator,
                speed_mps: v,
                frac: accel,
                accel_mps2: a,
            });
        }
        if accel <= PRESSED {
            samples.push(Sample {
                pedal: Pedal::Brake,
                speed_mps: v,
                frac: brake,
                accel_mps2: a,
            });
        }
    }
    Extracted {
        samples,
        reports: speed.len(),
        dropped: FILTERS.into_iter().zip(dropped).collect(),
        quantum_mps,
    }
}

/// A stretch of time over which both pedals held still, moved by the delay and cut by
/// the settling time at its start: the car's acceleration in it is the maps' value.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Segment {
    from: f64,
    to: f64,
    accelerator: f64,
    brake: f64,
}

fn steady_segments(drive: &Drive, cfg: &ExtractConfig) -> Vec<Segment> {
    let mut changes: Vec<f64> = Vec::new();
    for s in [&drive.accelerator, &drive.brake] {
        // A change: the pedal has left the value it held when the stretch began (a pedal
        // creeping in small steps breaks it too).
        let mut start: Option<f64> = None;
        for &(t, v) in s.iter() {
            if start.is_none_or(|held| (v - held).abs() > PRESSED) {
                changes.push(t);
                start = Some(v);
            }
        }
    }
    changes.sort_by(f64::total_cmp);
    changes.dedup();
    let end = drive
        .accelerator
        .last()
        .into_iter()
        .chain(drive.brake.last())
        .map(|&(t, _)| t)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut out = Vec::new();
    for (k, &start) in changes.iter().enumerate() {
        let stop = changes.get(k + 1).copied().unwrap_or(end);
        let (Some(accelerator), Some(brake)) =
            (held(&drive.accelerator, start), held(&drive.brake, start))
        else {
            continue;
        };
        // Cut at both ends by the settling time: it also covers a delay that is not
        // quite `delay_s`, either way.
        let (from, to) = (
            start + cfg.delay_s + cfg.settle_s,
            stop + cfg.delay_s - cfg.settle_s,
        );
        if to > from {
            out.push(Segment {
                from,
                to,
                accelerator,
                brake,
            });
        }
    }
    out
}

/// A pedal at or below this fraction is released.
const PRESSED: f64 = 0.005;

/// The speed report's resolution if its values sit on a grid coarser than 0.05 m/s: the
/// smallest step between distinct values, when nearly every value is a multiple of it.
fn quantum(speed: &Series) -> Option<f64> {
    let mut values: Vec<f64> = speed.iter().map(|&(_, v)| v).collect();
    values.sort_by(f64::total_cmp);
    values.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
    let steps: Vec<f64> = values.windows(2).map(|p| p[1] - p[0]).collect();
    let q = steps.iter().copied().fold(f64::INFINITY, f64::min);
    if !(q.is_finite() && q >= 0.05) || values.len() < 3 {
        return None;
    }
    let on_grid = values
        .iter()
        .filter(|v| ((*v / q) - (*v / q).round()).abs() < 0.02)
        .count();
    (on_grid * 10 >= values.len() * 9).then_some(q)
}

/// The least-squares line through the reports within `[from, to]`: its value and slope
/// at the middle, or `None` when they span less than half of `w` or are fewer than 5.
fn line_fit(s: &Series, from: f64, to: f64, w: f64) -> Option<(f64, f64)> {
    let lo = s.partition_point(|&(t, _)| t < from);
    let hi = s.partition_point(|&(t, _)| t <= to);
    let pts = &s[lo..hi];
    if pts.len() < 5 || pts[pts.len() - 1].0 - pts[0].0 < 0.5 * w {
        return None;
    }
    let mid = 0.5 * (from + to);
    let n = pts.len() as f64;
    let (st, sv) = pts
        .iter()
        .fold((0.0, 0.0), |(a, b), &(t, v)| (a + (t - mid), b + v));
    let (mt, mv) = (st / n, sv / n);
    let (sxy, sxx) = pts.iter().fold((0.0, 0.0), |(a, b), &(t, v)| {
        let dt = t - mid - mt;
        (a + dt * (v - mv), b + dt * dt)
    });
    let slope = sxy / sxx;
    Some((mv - slope * mt, slope))
}

/// The lowest value within `[from, to]` (+∞ for none).
fn min_within(s: &Series, from: f64, to: f64) -> f64 {
    let lo = s.partition_point(|&(t, _)| t < from);
    let hi = s.partition_point(|&(t, _)| t <= to);
    s[lo..hi]
        .iter()
        .map(|&(_, v)| v)
        .fold(f64::INFINITY, f64::min)
}

/// The index of the sample nearest `t`.
fn nearest(s: &Series, t: f64) -> Option<usize> {
    let i = s.partition_point(|&(ti, _)| ti < t);
    [i.checked_sub(1), (i < s.len()).then_some(i)]
        .into_iter()
        .flatten()
        .min_by(|&a, &b| (s[a].0 - t).abs().total_cmp(&(s[b].0 - t).abs()))
}

/// The value held at `t` (the last one at or before it).
fn held(s: &Series, t: f64) -> Option<f64> {
    let i = s.partition_point(|&(ti, _)| ti <= t);
    i.checked_sub(1).map(|i| s[i].1)
}

/// How the map is fitted (module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct FitConfig {
    /// A cell needs this much data (samples, each weighted by its share of the cell) to
    /// be fitted; with less it keeps the prior. 15: half a second of reports at 30 Hz.
    pub min_support: f64,
    /// The smallest difference between a speed column's first and last rows, m/s².
    pub min_span_mps2: f64,
    /// A sample counts for a row when its pedal is this close to the row's; samples
    /// between rows are left out. 0.02.
    pub row_tolerance: f64,
}

impl FitConfig {
    /// The defaults.
    pub const DEFAULT: FitConfig = FitConfig {
        min_support: 15.0,
        min_span_mps2: 0.05,
        row_tolerance: 0.02,
    };
}

impl Default for FitConfig {
    fn default() -> Self {
        FitConfig::DEFAULT
    }
}

/// Why a fit is refused.
#[derive(Debug, Error)]
pub enum FitError {
    /// No sample belongs to the map.
    #[error("no usable {0} samples: every sample was filtered out or none had this pedal (see the filter counts)")]
    NoSamples(&'static str),
    /// The solver failed.
    #[error("the {pedal} fit did not solve: {why}")]
    Solver {
        /// The map.
        pedal: &'static str,
        /// What the solver said.
        why: String,
    },
    /// The fitted table breaks the loader's rules.
    #[error("the fitted {pedal} map breaks the map rules and is not written: {source}")]
    Rules {
        /// The map.
        pedal: &'static str,
        /// The loader's error.
        source: PedalMapError,
    },
}

/// Where a cell's value comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Origin {
    /// Fitted to its data.
    Fitted,
    /// Too little data: the prior.
    Prior,
    /// Too little data: the prior, moved to keep the map monotonic.
    PriorMoved,
}

/// One cell of a fitted map.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Its pedal row and speed column.
    pub pedal_frac: f64,
    /// Its speed, m/s.
    pub speed_mps: f64,
    /// The data behind it: the samples' summed bilinear shares.
    pub support: f64,
    /// The samples nearest to it.
    pub count: usize,
    /// The prior's and the fit's value, m/s².
    pub prior_mps2: f64,
    /// The fitted value, m/s².
    pub fitted_mps2: f64,
    /// RMS residual of its nearest samples against the prior and the fit, m/s².
    pub rmse_before: Option<f64>,
    /// Against the fit.
    pub rmse_after: Option<f64>,
    /// Where the value comes from.
    pub origin: Origin,
}

/// A fitted map and its report.
#[derive(Clone, Debug)]
pub struct Fitted {
    /// The map, checked by the loader.
    pub map: PedalMap,
    /// The map as the CSV that was checked.
    pub csv: String,
    /// Every cell, row by row.
    pub cells: Vec<Cell>,
    /// RMS residual of every sample against the prior and the fit, m/s².
    pub rmse_before: f64,
    /// Against the fit.
    pub rmse_after: f64,
    /// The samples used.
    pub samples: usize,
}

impl Fitted {
    /// The cells that were fitted to data.
    pub fn covered(&self) -> impl Iterator<Item = &Cell> {
        self.cells.iter().filter(|c| c.origin == Origin::Fitted)
    }
}

/// The map of `prior`'s grid that fits the `samples` of its pedal (module documentation).
pub fn fit(prior: &PedalMap, samples: &[Sample], cfg: &FitConfig) -> Result<Fitted, FitError> {
    let pedal = prior.pedal();
    let name = pedal_name(pedal);
    let rows = prior.pedals_frac();
    let on_row = |s: &Sample| {
        rows.iter()
            .any(|&r| (s.frac - r).abs() <= cfg.row_tolerance)
    };
    let mine: Vec<&Sample> = samples
        .iter()
        .filter(|s| {
            s.pedal == pedal
                && s.speed_mps.is_finite()
                && s.frac.is_finite()
                && s.accel_mps2.is_finite()
                && on_row(s)
        })
        .collect();
    if mine.is_empty() {
        return Err(FitError::NoSamples(name));
    }
    let speeds = prior.speeds_mps();
    let (nv, np) = (speeds.len(), rows.len());
    let n = nv * np;
    let idx = |i: usize, j: usize| i * nv + j;
    let prior_x: Vec<f64> = (0..np)
        .flat_map(|i| (0..nv).map(move |j| (i, j)))
        .map(|(i, j)| prior.acceleration(speeds[j], rows[i]))
        .collect();
    let shares: Vec<Vec<(usize, f64)>> = mine
        .iter()
        .map(|s| {
            let (j0, tv) = bracket(speeds, s.speed_mps);
            let i = nearest_index(rows, s.frac);
            [(j0, 1.0 - tv), ((j0 + 1).min(nv - 1), tv)]
                .into_iter()
                .filter(|&(_, wv)| wv > 0.0)
                .map(|(j, wv)| (idx(i, j), wv))
                .collect()
        })
        .collect();
    let mut support = vec![0.0; n];
    for w in &shares {
        for &(k, x) in w {
            support[k] += x;
        }
    }
    let thin: Vec<bool> = support.iter().map(|&s| s < cfg.min_support).collect();
    // A sample that lies mostly towards a cell without enough data would pull its
    // fitted neighbour by that cell's error: it is left out of the fit.
    let mask: Vec<f64> = shares
        .iter()
        .map(|w| {
            let on_thin: f64 = w.iter().filter(|&&(k, _)| thin[k]).map(|&(_, x)| x).sum();
            if on_thin > MAX_THIN_SHARE && on_thin < 1.0 {
                0.0
            } else {
                1.0
            }
        })
        .collect();
    // Thin cells that hold a fitted neighbour back through the rules are released: they
    // move with it (the prior moved to keep the map monotonic), not it with them.
    let mut pinned = thin.clone();
    // Robust weights by iteratively reweighted least squares (Huber).
    let mut weights = mask.clone();
    let mut x = prior_x.clone();
    for _ in 0..4 {
        x = solve(
            pedal,
            &shares,
            &mine,
            &weights,
            &prior_x,
            &pinned,
            (np, nv),
            cfg,
        )
        .map_err(|why| FitError::Solver { pedal: name, why })?;
        for k in holding_back(pedal, &x, &pinned, (np, nv)) {
            pinned[k] = false;
        }
        let residuals: Vec<f64> = shares
            .iter()
            .zip(&mine)
            .map(|(w, s)| s.accel_mps2 - w.iter().map(|&(k, c)| c * x[k]).sum::<f64>())
            .collect();
        let scale = (1.4826 * median(residuals.iter().map(|r| r.abs()).collect())).max(0.05);
        let delta = 1.345 * scale;
        weights = residuals
            .iter()
            .zip(&mask)
            .map(|(r, m)| {
                m * if r.abs() <= delta {
                    1.0
                } else {
                    delta / r.abs()
                }
            })
            .collect();
    }
    let (map, csv) = checked(pedal, speeds, rows, &mut x)?;
    let rms = |m: &PedalMap, of: &[&&Sample]| -> Option<f64> {
        (!of.is_empty()).then(|| {
            let s: f64 = of
                .iter()
                .map(|s| (s.accel_mps2 - m.acceleration(s.speed_mps, s.frac)).powi(2))
                .sum();
            (s / of.len() as f64).sqrt()
        })
    };
    let all: Vec<&&Sample> = mine.iter().collect();
    let cells = (0..np)
        .flat_map(|i| (0..nv).map(move |j| (i, j)))
        .map(|(i, j)| {
            let near: Vec<&&Sample> = mine
                .iter()
                .filter(|s| {
                    nearest_index(rows, s.frac) == i && nearest_index(speeds, s.speed_mps) == j
                })
                .collect();
            let k = idx(i, j);
            let moved = (x[k] - prior_x[k]).abs() > 1e-3;
            Cell {
                pedal_frac: rows[i],
                speed_mps: speeds[j],
                support: support[k],
                count: near.len(),
                prior_mps2: prior_x[k],
                fitted_mps2: x[k],
                rmse_before: rms(prior, &near),
                rmse_after: rms(&map, &near),
                origin: match (thin[k], moved) {
                    (false, _) => Origin::Fitted,
                    (true, false) => Origin::Prior,
                    (true, true) => Origin::PriorMoved,
                },
            }
        })
        .collect();
    Ok(Fitted {
        rmse_before: rms(prior, &all).unwrap_or(0.0),
        rmse_after: rms(&map, &all).unwrap_or(0.0),
        samples: mine.len(),
        map,
        csv,
        cells,
    })
}

/// The pinned cells at a rule's bound against an unpinned neighbour in their column.
fn holding_back(pedal: Pedal, x: &[f64], pinned: &[bool], (np, nv): (usize, usize)) -> Vec<usize> {
    let d = match pedal {
        Pedal::Accelerator => 1.0,
        Pedal::Brake => -1.0,
    };
    let mut out = Vec::new();
    for j in 0..nv {
        for i in 0..np - 1 {
            let (lo, hi) = (i * nv + j, (i + 1) * nv + j);
            let at_bound = d * (x[hi] - x[lo]) < 1e-4;
            if at_bound && pinned[lo] != pinned[hi] {
                out.push(if pinned[lo] { lo } else { hi });
            }
        }
    }
    out
}

/// A sample with more than this share on cells without enough data is left out.
const MAX_THIN_SHARE: f64 = 0.25;

/// The pull towards the prior of a cell with data, and of one without (per unit weight).
const PULL_FITTED: f64 = 1e-3;
const PULL_THIN: f64 = 1e4;

/// One weighted least-squares solve with the map rules as constraints.
#[allow(clippy::too_many_arguments)]
fn solve(
    pedal: Pedal,
    shares: &[Vec<(usize, f64)>],
    samples: &[&Sample],
    weights: &[f64],
    prior: &[f64],
    thin: &[bool],
    (np, nv): (usize, usize),
    cfg: &FitConfig,
) -> Result<Vec<f64>, String> {
    let n = np * nv;
    // ½xᵀPx + qᵀx with P = 2(WᵀDW + Λ), q = −2(WᵀDa + Λ·prior); the factor 2 dropped.
    let mut p = vec![vec![0.0; n]; n];
    let mut q = vec![0.0; n];
    for ((w, s), &d) in shares.iter().zip(samples).zip(weights) {
        for &(a, ca) in w {
            q[a] -= d * ca * s.accel_mps2;
            for &(b, cb) in w {
                p[a][b] += d * ca * cb;
            }
        }
    }
    for k in 0..n {
        let pull = if thin[k] { PULL_THIN } else { PULL_FITTED };
        p[k][k] += pull;
        q[k] -= pull * prior[k];
    }
    // Constraints: d·(x[i+1][j] − x[i][j]) ≥ 0 for each row pair, and
    // d·(x[last][j] − x[0][j]) ≥ min_span for each column.
    let d = match pedal {
        Pedal::Accelerator => 1.0,
        Pedal::Brake => -1.0,
    };
    let mut rows_a: Vec<Vec<f64>> = Vec::new();
    let mut lower = Vec::new();
    for j in 0..nv {
        for i in 0..np - 1 {
            let mut r = vec![0.0; n];
            r[(i + 1) * nv + j] = d;
            r[i * nv + j] = -d;
            rows_a.push(r);
            lower.push(0.0);
        }
        let mut r = vec![0.0; n];
        r[(np - 1) * nv + j] = d;
        r[j] = -d;
        rows_a.push(r);
        lower.push(cfg.min_span_mps2);
    }
    let upper = vec![f64::INFINITY; lower.len()];
    let p = CscMatrix::from_row_iter_dense(n, n, p.into_iter().flatten()).into_upper_tri();
    let a = CscMatrix::from_row_iter_dense(rows_a.len(), n, rows_a.into_iter().flatten());
    let settings = Settings::default()
        .verbose(false)
        .polish(true)
        .eps_abs(1e-7)
        .eps_rel(1e-7)
        .max_iter(20_000);
    let mut problem =
        Problem::new(p, &q, a, &lower, &upper, &settings).map_err(|e| format!("{e:?}"))?;
    match problem.solve() {
        Status::Solved(s) | Status::SolvedInaccurate(s) => Ok(s.x().to_vec()),
        other => Err(format!("{other:?}")),
    }
}

/// The table as a map the bridge's loader accepts, and its CSV; or why not. The solver
/// meets the row order to within its tolerance, so each column is first made to run
/// with the pedal exactly (a change of at most that tolerance).
pub fn checked(
    pedal: Pedal,
    speeds: &[f64],
    rows: &[f64],
    x: &mut [f64],
) -> Result<(PedalMap, String), FitError> {
    let nv = speeds.len();
    for j in 0..nv {
        for i in 1..rows.len() {
            let (above, here) = (x[(i - 1) * nv + j], x[i * nv + j]);
            let off = match pedal {
                Pedal::Accelerator => above - here,
                Pedal::Brake => here - above,
            };
            if off > 0.0 && off < 1e-5 {
                x[i * nv + j] = above;
            }
        }
    }
    let csv = to_csv(pedal, speeds, rows, x);
    let map = PedalMap::parse(pedal, &csv).map_err(|source| FitError::Rules {
        pedal: pedal_name(pedal),
        source,
    })?;
    Ok((map, csv))
}

/// `(i, t)`: `x` lies between `xs[i]` and `xs[i+1]` at fraction `t` (clamped to the ends).
fn bracket(xs: &[f64], x: f64) -> (usize, f64) {
    let last = xs.len() - 1;
    if x <= xs[0] {
        return (0, 0.0);
    }
    if x >= xs[last] {
        return (last, 0.0);
    }
    let i = xs.partition_point(|&v| v <= x) - 1;
    (i, (x - xs[i]) / (xs[i + 1] - xs[i]))
}

fn nearest_index(xs: &[f64], x: f64) -> usize {
    (0..xs.len())
        .min_by(|&a, &b| (xs[a] - x).abs().total_cmp(&(xs[b] - x).abs()))
        .unwrap_or(0)
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        0.5 * (v[m - 1] + v[m])
    }
}

/// The map's name.
pub fn pedal_name(p: Pedal) -> &'static str {
    match p {
        Pedal::Accelerator => "accelerator",
        Pedal::Brake => "brake",
    }
}

/// The table as the bridge's CSV (the layout of `gem_core::pacmod::pedal_map`).
pub fn to_csv(pedal: Pedal, speeds: &[f64], rows: &[f64], x: &[f64]) -> String {
    let nv = speeds.len();
    let mut s = format!(
        "# GEM e2 {} map fitted by gemctl calibrate pedals.\n# First row: a label, then speeds (m/s). Each further row: the pedal (0-1), then the\n# acceleration (m/s^2) on level ground at each speed.\n",
        pedal_name(pedal)
    );
    s.push_str("fitted");
    for v in speeds {
        let _ = write!(s, ", {v}");
    }
    s.push('\n');
    for (i, p) in rows.iter().enumerate() {
        let _ = write!(s, "{p}");
        for a in &x[i * nv..(i + 1) * nv] {
            // Rounded so that the file reads as it will be used; the loader checks it.
            let _ = write!(s, ", {:.4}", (a * 1e4).round() / 1e4 + 0.0);
        }
        s.push('\n');
    }
    s
}

/// The RMS difference between `fitted` and `truth` over the cells fitted to data, m/s².
pub fn rms_against(fitted: &Fitted, truth: &PedalMap) -> Option<f64> {
    let d: Vec<f64> = fitted
        .covered()
        .map(|c| c.fitted_mps2 - truth.acceleration(c.speed_mps, c.pedal_frac))
        .collect();
    (!d.is_empty()).then(|| (d.iter().map(|e| e * e).sum::<f64>() / d.len() as f64).sqrt())
}

#[cfg(test)]
mod tests;
