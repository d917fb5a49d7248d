//! The accelerator and brake maps fitted from drives.
//!
//! **Samples.** [`extract`] turns the time series of a drive (the speed report, the two
//! pedals, the steering wheel) into samples `(speed, pedal, acceleration)`. The pedals
//! should be the reported outputs (`gemctl calibrate pedals` reads them when the bag has
//! them, else the commands): they say what the actuator did, a person's foot included,
//! and change when the pedal moves, not a command's delay earlier.
//!
//! - A *steady stretch* is a time over which both pedals held their values (within
//!   0.005): it begins `delay_s` + `settle_s` after a pedal last changed and ends
//!   `delay_s` − `settle_s` after the next change. A foot pressing a pedal over a few
//!   tenths of a second is a run of changes, so the stretch begins once the foot is
//!   still.
//! - A *moving stretch* runs from the first to the last speed report at or above
//!   `at_rest_mps` between two stops; for a quantised report, from halfway through the
//!   first step of the report to halfway through the last, where the speed crosses the
//!   step's value (a line ending at the edge of the last step, where the report drops to
//!   zero, comes out too flat: the report holds the step's value while the speed falls
//!   through it).
//! - The acceleration at each speed report is the slope of a straight line fitted to the
//!   reports within a window around it, cut to both stretches; the sample's speed is the
//!   line's value at the middle of the cut window. The window is `window_s` long; for a
//!   quantised report (a CAN speed in whole km/h) it is as long as the speed needs to
//!   cross 5 of the report's steps at the acceleration seen over the longest window,
//!   from `window_s` up to twice that and at least 2 s. A slope over few steps sees each
//!   step as a spike; a hard stop crosses the steps quickly, and a long window would
//!   reach past its end.
//!
//! A window ends where the car comes to rest and begins where it moves off, instead of
//! being dropped when it reaches a stop: a hard brake stops the car within a few
//! seconds, and the last of them, where it crosses the lowest speeds, would otherwise
//! never give a sample.
//!
//! A speed report gives no sample, and is counted under the first filter that drops it
//! (in this order), when:
//!
//! - `not a number`: its time or speed is not finite (a pedal or steering report that is
//!   not finite is skipped the same way, and breaks no stretch);
//! - `no pedal report`: a pedal has no report yet at the time it acts on the car;
//! - `pedal changing`: it lies in no steady stretch: a pedal moved less than `settle_s`
//!   before or after (both moved by the delay): the response to a step is not the map's
//!   steady value, and the margin also covers a delay that differs from `delay_s`;
//! - `at rest`: its speed is below `at_rest_mps`: a standing car does not show the map (a
//!   brake map says how hard the car would slow, not that it stops);
//! - `window`: its cut window holds fewer than 5 reports or spans less than half its
//!   length (a gap in the data, or a stretch too short);
//! - `both pedals`: both pedals were pressed;
//! - `steering`: the steering wheel is beyond `max_steering_wheel_rad` (a bend adds drag
//!   the maps do not hold);
//! - `jerk`: the slope changes faster than `max_jerk_mps3` across the window, from the
//!   slope at its first report to the slope at its last (a bump, a glitch in the
//!   report). Both slopes come from windows cut to the same stretches, so the onset of a
//!   hard stop, a step of the acceleration where a steady stretch begins, lies in no
//!   window and is not jerk.
//!
//! Every dropped report is kept in [`Extracted::rejected`] with its speed and pedals, so
//! the report can say which filters emptied a cell.
//!
//! A sample with the brake released belongs to the accelerator map; with the accelerator
//! released, to the brake map; with both released, to both (each map's pedal-0 row is
//! coasting).
//!
//! **Fit.** [`fit`] keeps the starting map's grid (its speeds and pedal rows). The map is
//! bilinear, so a sample is a linear equation in the (up to) four cells around its speed
//! and pedal, each weighted by its share ([`grid_shares`]): a pedal held between two rows,
//! as a person's foot holds it, counts for both, in proportion. A pedal beyond the first
//! or last row by more than `row_tolerance` is left out (the map says nothing there). A
//! cell's *support* is the sum of its samples' shares, and sorts it:
//!
//! - **fitted**: support of at least `min_support` (15: half a second of reports at
//!   30 Hz on the cell itself). A drive *covers* a cell when its reports in steady
//!   stretches that show the car moving, shared out as samples are, give the cell two
//!   thirds of a second's worth (20 reports at 30 Hz): a cell the drive covers is fitted
//!   when the other filters and the cut windows keep three quarters of that. A second of
//!   a pedal held midway between two rows gives each row half a second's worth at its
//!   speed; several holds add up;
//! - **sparse**: some support, less than that. It is solved like a fitted cell, and its
//!   row is kept from bending there: a penalty on the change of the row's slope across
//!   speeds, worth [`SMOOTH`] samples, at each interior speed whose three cells are all
//!   solved and one of them sparse. The samples it shares with fitted cells and the
//!   row's trend set it. A row only held between rows (0.45 on a map with rows 0.4 and
//!   0.6 gives row 0.6 a quarter of each sample) comes out as sparse;
//! - **prior**: no sample touches it, so it keeps the starting value (the prior), moved
//!   only where the map's order demands it (*prior, moved*), and then with its fitted
//!   neighbour rather than the neighbour with it.
//!
//! A sparse cell is solved, not held at the prior, because a sample that leans on a cell
//! held at a wrong prior pulls its fitted neighbour by a share of that error; solved,
//! the cell takes up its share and the fitted neighbour keeps its own data's value. The
//! penalty links solved cells to each other only, never to a prior value.
//!
//! The values minimise a robust (Huber) sum of squared residuals, that penalty, and a
//! pull towards the prior, weak for solved cells and strong for untouched ones. The
//! rules of the bridge's loader (`gem_core::pacmod::pedal_map`) are constraints of the
//! problem, solved by OSQP: down each speed column the accelerations run with the pedal,
//! and the first and last rows differ. The result is written as CSV and read back by that
//! loader before anything is returned, so a fit that breaks the rules is refused, never
//! written.

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
    /// The slope's window, s (for a quantised speed report, up to twice this and at
    /// least 2 s, as the acceleration needs: module documentation).
    pub window_s: f64,
    /// Pedal to acceleration delay, s.
    pub delay_s: f64,
    /// Time a pedal must have been still before the window (after the delay), and
    /// still stay after it, s.
    pub settle_s: f64,
    /// Largest steering wheel, rad (1.9 rad: about 5° of front wheel).
    pub max_steering_wheel_rad: f64,
    /// Largest change of acceleration across a window, m/s³.
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
    /// Each dropped report, with where in the maps it would have counted.
    pub rejected: Vec<Rejected>,
    /// The speed report's resolution, when it is quantised, m/s.
    pub quantum_mps: Option<f64>,
}

impl Extracted {
    /// Adds another drive's samples and counts to these.
    pub fn merge(&mut self, other: Extracted) {
        self.reports += other.reports;
        self.samples.extend(other.samples);
        self.rejected.extend(other.rejected);
        self.quantum_mps = self.quantum_mps.or(other.quantum_mps);
        for (name, n) in other.dropped {
            match self.dropped.iter_mut().find(|(m, _)| *m == name) {
                Some(sum) => sum.1 += n,
                None => self.dropped.push((name, n)),
            }
        }
    }
}

/// A speed report a filter dropped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rejected {
    /// The filter's name.
    pub filter: &'static str,
    /// The reported speed, m/s (NaN when that is what was reported).
    pub speed_mps: f64,
    /// The accelerator acting at the report (NaN when none was reported yet).
    pub accelerator: f64,
    /// The brake acting at the report (NaN when none was reported yet).
    pub brake: f64,
}

impl Rejected {
    /// The map the report would have counted for, by the rule of the samples (the
    /// brake released: the accelerator map; the accelerator released: the brake map;
    /// both released: both); `None` for a report that belongs to neither.
    pub fn counts_for(&self, pedal: Pedal) -> Option<f64> {
        let (mine, other) = match pedal {
            Pedal::Accelerator => (self.accelerator, self.brake),
            Pedal::Brake => (self.brake, self.accelerator),
        };
        (self.speed_mps.is_finite() && mine.is_finite() && other <= PRESSED).then_some(mine)
    }
}

/// The filters, in the order they are applied (and documented).
pub const FILTERS: [&str; 8] = [
    "not a number",
    "no pedal report",
    "pedal changing",
    "at rest",
    "window",
    "both pedals",
    "steering",
    "jerk",
];

/// A filter, by its place in [`FILTERS`].
#[derive(Clone, Copy)]
enum Filter {
    NotANumber,
    NoPedal,
    Changing,
    AtRest,
    Window,
    Both,
    Steering,
    Jerk,
}

// One variant per name.
const _: () = assert!(Filter::Jerk as usize + 1 == FILTERS.len());

/// A quantised speed report's window is long enough for the speed to cross this many
/// steps of the report at the acceleration seen over the longest window.
const WINDOW_QUANTA: f64 = 5.0;

/// Samples of one drive (module documentation).
pub fn extract(drive: &Drive, cfg: &ExtractConfig) -> Extracted {
    let finite = |s: &Series| -> Series {
        s.iter()
            .copied()
            .filter(|(t, v)| t.is_finite() && v.is_finite())
            .collect()
    };
    // The finite speed reports, and where each report of the drive is among them.
    let mut speed = Series::new();
    let at: Vec<Option<usize>> = drive
        .speed
        .iter()
        .map(|&(t, v)| {
            (t.is_finite() && v.is_finite()).then(|| {
                speed.push((t, v));
                speed.len() - 1
            })
        })
        .collect();
    let (accelerator, brake) = (finite(&drive.accelerator), finite(&drive.brake));
    let steering_wheel = finite(&drive.steering_wheel);
    let quantum_mps = quantum(&speed);
    let (w_short, w_long) = match quantum_mps {
        Some(_) => (cfg.window_s, (2.0 * cfg.window_s).max(2.0)),
        None => (cfg.window_s, cfg.window_s),
    };
    let segments = steady_segments(&accelerator, &brake, cfg);
    let moving = moving_stretches(&speed, cfg.at_rest_mps, quantum_mps);
    // Each report's window: around it, cut to its steady stretch of pedals and to the
    // stretch over which the car moved; for a quantised report as long as the
    // acceleration needs to cross `WINDOW_QUANTA` steps.
    let windows: Vec<Option<(f64, f64, f64, usize)>> = speed
        .iter()
        .zip(&moving)
        .map(|(&(t, _), mv)| {
            let k = segments.partition_point(|s| s.from <= t).checked_sub(1)?;
            let seg = &segments[k];
            let (lo, hi) = (*mv)?;
            let (lo, hi) = (lo.max(seg.from), hi.min(seg.to));
            if !(t < seg.to && lo <= t && t <= hi) {
                return None;
            }
            let cut = |w: f64| ((t - w / 2.0).max(lo), (t + w / 2.0).min(hi));
            let w = match quantum_mps {
                Some(q) => {
                    let (from, to) = cut(w_long);
                    line_fit(&speed, from, to, 0.0).map_or(w_long, |(_, a)| {
                        (WINDOW_QUANTA * q / a.abs()).clamp(w_short, w_long)
                    })
                }
                None => w_short,
            };
            let (from, to) = cut(w);
            Some((from, to, w, k))
        })
        .collect();
    let slopes: Vec<Option<(f64, f64)>> = windows
        .iter()
        .map(|win| win.and_then(|(from, to, w, _)| line_fit(&speed, from, to, w)))
        .collect();
    let mut dropped = [0usize; FILTERS.len()];
    let mut rejected = Vec::new();
    let mut samples = Vec::new();
    for (&(t, v_report), &i) in drive.speed.iter().zip(&at) {
        let reject = |filter: Filter, accelerator: f64, brake: f64| Rejected {
            filter: FILTERS[filter as usize],
            speed_mps: v_report,
            accelerator,
            brake,
        };
        let Some(i) = i else {
            dropped[Filter::NotANumber as usize] += 1;
            rejected.push(reject(Filter::NotANumber, f64::NAN, f64::NAN));
            continue;
        };
        let acting = t - cfg.delay_s;
        let (Some(a_now), Some(b_now)) = (held(&accelerator, acting), held(&brake, acting)) else {
            dropped[Filter::NoPedal as usize] += 1;
            rejected.push(reject(Filter::NoPedal, f64::NAN, f64::NAN));
            continue;
        };
        let mut drop = |filter: Filter| {
            dropped[filter as usize] += 1;
            rejected.push(reject(filter, a_now, b_now));
        };
        let steady = segments
            .partition_point(|s| s.from <= t)
            .checked_sub(1)
            .is_some_and(|k| t < segments[k].to);
        if !steady {
            drop(Filter::Changing);
            continue;
        }
        if v_report < cfg.at_rest_mps {
            drop(Filter::AtRest);
            continue;
        }
        let (Some((from, to, _, k)), Some((v, a))) = (windows[i], slopes[i]) else {
            drop(Filter::Window);
            continue;
        };
        let (accel, brake) = (segments[k].accelerator, segments[k].brake);
        if accel > PRESSED && brake > PRESSED {
            drop(Filter::Both);
            continue;
        }
        if held(&steering_wheel, t).is_some_and(|s| s.abs() > cfg.max_steering_wheel_rad) {
            drop(Filter::Steering);
            continue;
        }
        // The change of the slope across the window, from the reports at its two ends.
        let jerk = match (nearest(&speed, from), nearest(&speed, to)) {
            (Some(j0), Some(j1)) if to - from > 0.0 => match (slopes[j0], slopes[j1]) {
                (Some((_, a0)), Some((_, a1))) => (a1 - a0) / (to - from),
                _ => 0.0,
            },
            _ => 0.0,
        };
        if jerk.abs() > cfg.max_jerk_mps3 {
            drop(Filter::Jerk);
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
        reports: drive.speed.len(),
        dropped: FILTERS.into_iter().zip(dropped).collect(),
        rejected,
        quantum_mps,
    }
}

/// For each report, the stretch of time over which the car moved around it (from its
/// first to its last report at or above `at_rest`), or `None` at rest. With a report
/// quantised to `quantum`, the stretch begins halfway through the first step after a
/// move-off and ends halfway through the last one before a stop: the speed crosses the
/// step's value there. A line through whole steps that ends at a step's edge, where the
/// report jumps to zero, has too flat a slope: the report holds the step's value while
/// the speed falls through it.
fn moving_stretches(speed: &Series, at_rest: f64, quantum: Option<f64>) -> Vec<Option<(f64, f64)>> {
    let mut out = vec![None; speed.len()];
    let mut i = 0;
    while i < speed.len() {
        if speed[i].1 < at_rest {
            i += 1;
            continue;
        }
        let first = i;
        while i < speed.len() && speed[i].1 >= at_rest {
            i += 1;
        }
        let (mut lo, mut hi) = (first, i - 1);
        let same =
            |a: usize, b: usize| quantum.is_some_and(|q| (speed[a].1 - speed[b].1).abs() < 0.5 * q);
        while lo < i - 1 && same(lo + 1, first) {
            lo += 1;
        }
        while hi > first && same(hi - 1, i - 1) {
            hi -= 1;
        }
        let stretch = match quantum {
            Some(_) => Some((
                0.5 * (speed[first].0 + speed[lo].0),
                0.5 * (speed[hi].0 + speed[i - 1].0),
            )),
            None => Some((speed[first].0, speed[i - 1].0)),
        };
        out[first..i].fill(stretch);
    }
    out
}

/// A stretch of time over which both pedals held still, moved by the delay and cut by
/// the settling time at both ends: the car's acceleration in it is the maps' value.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Segment {
    from: f64,
    to: f64,
    accelerator: f64,
    brake: f64,
}

fn steady_segments(accelerator: &Series, brake: &Series, cfg: &ExtractConfig) -> Vec<Segment> {
    let mut changes: Vec<f64> = Vec::new();
    for s in [accelerator, brake] {
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
    let end = accelerator
        .last()
        .into_iter()
        .chain(brake.last())
        .map(|&(t, _)| t)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut out = Vec::new();
    for (k, &start) in changes.iter().enumerate() {
        let stop = changes.get(k + 1).copied().unwrap_or(end);
        let (Some(accelerator), Some(brake)) = (held(accelerator, start), held(brake, start))
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
    /// be fitted; with less it is sparse, or keeps the prior when no sample touches it.
    /// 15: half a second of reports at 30 Hz on the cell itself.
    pub min_support: f64,
    /// The smallest difference between a speed column's first and last rows, m/s².
    pub min_span_mps2: f64,
    /// A sample whose pedal lies beyond the table's first or last row by more than this
    /// is left out (the map says nothing there); within it, it counts for that row.
    /// 0.02.
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

/// Where a cell's value comes from (module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Origin {
    /// Fitted to its data: its support reached `min_support`.
    Fitted,
    /// Some data, less than `min_support`: the samples it shares with its neighbours
    /// and its row's trend across speeds.
    Sparse,
    /// No sample touches it: the prior.
    Prior,
    /// No sample touches it: the prior, moved to keep the map monotonic.
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
    /// The samples of this pedal left out because their pedal lies beyond the table's
    /// first or last row by more than the tolerance.
    pub beyond_rows: usize,
    /// The support a cell needed to be fitted ([`FitConfig::min_support`]).
    pub min_support: f64,
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
    // Within the table's pedals, or beyond its first or last row by at most the
    // tolerance (counted for that row).
    let (first, last) = (rows[0], rows[rows.len() - 1]);
    let on_table =
        |s: &Sample| s.frac >= first - cfg.row_tolerance && s.frac <= last + cfg.row_tolerance;
    let usable: Vec<&Sample> = samples
        .iter()
        .filter(|s| {
            s.pedal == pedal
                && s.speed_mps.is_finite()
                && s.frac.is_finite()
                && s.accel_mps2.is_finite()
        })
        .collect();
    let mine: Vec<&Sample> = usable.iter().copied().filter(|s| on_table(s)).collect();
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
    // Each sample's shares of the (up to) four cells around it: the map is bilinear.
    let shares: Vec<Vec<(usize, f64)>> = mine
        .iter()
        .map(|s| grid_shares(speeds, rows, s.speed_mps, s.frac))
        .collect();
    let mut support = vec![0.0; n];
    for w in &shares {
        for &(k, x) in w {
            support[k] += x;
        }
    }
    let thin: Vec<bool> = support.iter().map(|&s| s < cfg.min_support).collect();
    // A cell no sample touches keeps the prior; one with too little data of its own
    // follows its row's trend across speeds (below) and the samples it shares.
    let mut pinned: Vec<bool> = support.iter().map(|&s| s == 0.0).collect();
    let smooth: Vec<Vec<(usize, f64)>> = (0..np)
        .flat_map(|i| (1..nv.saturating_sub(1)).map(move |j| (i, j)))
        .filter(|&(i, j)| {
            let cells = j - 1..=j + 1;
            cells.clone().all(|j| !pinned[idx(i, j)]) && cells.clone().any(|j| thin[idx(i, j)])
        })
        .map(|(i, j)| {
            // The change of the row's slope at speed j, times the mean spacing (m/s²).
            let (h0, h1) = (speeds[j] - speeds[j - 1], speeds[j + 1] - speeds[j]);
            let m = 0.5 * (h0 + h1) * SMOOTH.sqrt();
            vec![
                (idx(i, j - 1), m / h0),
                (idx(i, j), -m / h0 - m / h1),
                (idx(i, j + 1), m / h1),
            ]
        })
        .collect();
    let terms = Terms {
        shares: &shares,
        samples: &mine,
        smooth: &smooth,
        prior: &prior_x,
    };
    // Robust weights by iteratively reweighted least squares (Huber).
    let mut weights = vec![1.0; mine.len()];
    let mut x = prior_x.clone();
    for _ in 0..4 {
        x = solve(pedal, &terms, &weights, &pinned, (np, nv), cfg)
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
            .map(|r| {
                if r.abs() <= delta {
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
                origin: match (thin[k], support[k] > 0.0, moved) {
                    (false, _, _) => Origin::Fitted,
                    (true, true, _) => Origin::Sparse,
                    (true, false, false) => Origin::Prior,
                    (true, false, true) => Origin::PriorMoved,
                },
            }
        })
        .collect();
    Ok(Fitted {
        rmse_before: rms(prior, &all).unwrap_or(0.0),
        rmse_after: rms(&map, &all).unwrap_or(0.0),
        samples: mine.len(),
        beyond_rows: usable.len() - mine.len(),
        min_support: cfg.min_support,
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

/// The weight of a row's change of slope at a sparse cell, in samples (module
/// documentation).
pub const SMOOTH: f64 = 2.0;

/// The pull towards the prior of a cell with data, and of one without (per unit weight).
const PULL_FITTED: f64 = 1e-3;
const PULL_THIN: f64 = 1e4;

/// The terms of the least-squares problem over the cells (row by row).
#[derive(Clone, Copy)]
struct Terms<'a> {
    /// Each sample's cells and shares.
    shares: &'a [Vec<(usize, f64)>],
    /// The samples.
    samples: &'a [&'a Sample],
    /// Each penalised change of a row's slope: its cells and coefficients.
    smooth: &'a [Vec<(usize, f64)>],
    /// The prior's values.
    prior: &'a [f64],
}

/// One weighted least-squares solve with the map rules as constraints.
fn solve(
    pedal: Pedal,
    terms: &Terms<'_>,
    weights: &[f64],
    pinned: &[bool],
    (np, nv): (usize, usize),
    cfg: &FitConfig,
) -> Result<Vec<f64>, String> {
    let Terms {
        shares,
        samples,
        smooth,
        prior,
    } = *terms;
    let n = np * nv;
    // ½xᵀPx + qᵀx with P = 2(WᵀDW + SᵀS + Λ), q = −2(WᵀDa + Λ·prior); the factor 2
    // dropped.
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
    for g in smooth {
        for &(a, ca) in g {
            for &(b, cb) in g {
                p[a][b] += ca * cb;
            }
        }
    }
    for k in 0..n {
        let pull = if pinned[k] { PULL_THIN } else { PULL_FITTED };
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

/// The shares of the cells of a grid (`rows` × `speeds`, row by row, as
/// [`Fitted::cells`]) in the map's value at `speed` and `frac`: up to four cells, the
/// bilinear weights (clamped to the grid's ends).
pub fn grid_shares(speeds: &[f64], rows: &[f64], speed: f64, frac: f64) -> Vec<(usize, f64)> {
    let (nv, np) = (speeds.len(), rows.len());
    let (j0, tv) = bracket(speeds, speed);
    let (i0, tp) = bracket(rows, frac);
    let mut w = Vec::with_capacity(4);
    for (i, wp) in [(i0, 1.0 - tp), ((i0 + 1).min(np - 1), tp)] {
        for (j, wv) in [(j0, 1.0 - tv), ((j0 + 1).min(nv - 1), tv)] {
            if wp * wv > 0.0 {
                w.push((i * nv + j, wp * wv));
            }
        }
    }
    w
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
