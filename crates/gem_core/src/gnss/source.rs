//! The pose source a GNSS/INS node keeps: each incoming solution checked for its stamp's
//! order, projected to the rear axle ([`super::pose`]) and judged ([`super::health`]), and
//! what the controllers are served.
//!
//! - **Stamp order.** A solution stamped at or before the last one taken is refused and
//!   dropped: a duplicate (the same stamp: a driver that resends) or one going backwards.
//!   The solution it would have replaced ages meanwhile, so a source that sends only such
//!   messages goes stale after `stale_after` and the verdict becomes a fault. When ROS time
//!   itself jumps back by more than `stale_after` (a simulator reset, a bag replayed
//!   again), the order starts afresh.
//! - **Verdict.** [`super::health::classify`] on the latest solution taken (any status):
//!   the GPS accuracy the state manager reads.
//! - **Served pose.** While the verdict is good: the rear axle's pose of the latest
//!   solution, stamped with its measurement time, and the rear axle's velocity. Otherwise
//!   the last good one, held with its own stamp (the controllers predict from it), while it
//!   is no older than the hold (`hold`, default 0: never); then nothing (the fault
//!   instead), so a controller never steers by a faulty pose, nor by a held one for longer
//!   than the deployment allows.
//!
//! The rear axle's velocity in the local frame is the antenna's less the rotation's share,
//! `v_rear = v_antenna − ω × r` with `r` the antenna's offset (`d` ahead along the heading
//! `ψ`): `vx − ω·d·(−sin ψ)`, `vy − ω·d·cos ψ`. The yaw rate `ω` is the source's own when it
//! gives one (an IMU's), else the change of yaw between the last two solutions taken over
//! their stamps' interval, when that interval is within `stale_after`; without either it
//! is NaN (unknown: the controllers then estimate it from the poses) and the velocity is
//! the antenna's. A source without velocity (`NavSatFix`) gives a zero twist, which the
//! controllers replace by the poses' own.

use super::geodesy::GeodesyError;
pub use super::health::Solution;
use super::health::{classify, GpsVerdict, InsFault, InsHealthConfig};
use super::pose::{InsFix, InsPose};
use crate::geometry::{wrap_angle, Pose};
use crate::time::Time;
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

/// Why a solution was dropped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Refused {
    /// Stamped exactly as the last one taken.
    Duplicate {
        /// The stamp.
        stamp: Time,
    },
    /// Stamped before the last one taken.
    Backwards {
        /// The stamp.
        stamp: Time,
        /// The last stamp taken.
        last: Time,
    },
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::Duplicate { stamp } => write!(f, "duplicate stamp {stamp}: dropped"),
            Refused::Backwards { stamp, last } => {
                write!(f, "stamp {stamp} goes back from {last}: dropped")
            }
        }
    }
}

/// The rear axle's state the controllers are served.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RearAxle {
    /// When it was measured.
    pub stamp: Time,
    /// x east, y north (m), yaw counter-clockwise from east (rad).
    pub pose: Pose,
    /// Velocity in the local frame (east, north), m/s.
    pub velocity_mps: [f64; 2],
    /// Yaw rate, rad/s; NaN when unknown.
    pub yaw_rate_rad_s: f64,
}

/// What is served.
#[derive(Clone, Debug, PartialEq)]
pub enum Served {
    /// The latest solution, good.
    Fresh(RearAxle),
    /// The last good solution, held while the latest is faulty.
    Held(RearAxle, InsFault),
}

impl Served {
    /// The rear axle's state.
    pub fn rear_axle(&self) -> RearAxle {
        match self {
            Served::Fresh(r) | Served::Held(r, _) => *r,
        }
    }
}

/// The latest solution taken, and its projection when it has one.
#[derive(Clone, Debug)]
struct Taken {
    solution: Solution,
    /// `Err`: values that cannot be projected (NaN, out of range).
    rear: Result<RearAxle, GeodesyError>,
}

/// The source's state: the projection, the bounds and the latest solution.
#[derive(Clone, Debug)]
pub struct PoseSource {
    projection: InsPose,
    antenna_ahead_m: f64,
    health: InsHealthConfig,
    latest: Option<Taken>,
    last_now: Time,
    refused: u64,
    /// The last solution that was good when it arrived.
    last_good: Option<RearAxle>,
    hold: Duration,
    /// The projected headings of the last [`YAW_RATE_WINDOW`], oldest first, for a yaw
    /// rate when the source gives none.
    headings: VecDeque<(Time, f64)>,
}

/// The span of headings a yaw rate is fitted over when the source gives none (`Inspva`
/// has no yaw rate): the least-squares slope of the headings within it. Two successive
/// headings 50 ms apart turn 5 mrad of heading noise into 0.14 rad/s of yaw-rate noise;
/// six over 0.25 s into about 0.03 rad/s, for a lag of half the span.
pub const YAW_RATE_WINDOW: Duration = Duration::from_millis(250);

impl PoseSource {
    /// A source projecting with `projection` (antenna `antenna_ahead_m` ahead of the rear
    /// axle, as configured there) and judging with `health`.
    pub fn new(projection: InsPose, antenna_ahead_m: f64, health: InsHealthConfig) -> Self {
        PoseSource {
            projection,
            antenna_ahead_m,
            health,
            latest: None,
            last_now: Time::ZERO,
            refused: 0,
            last_good: None,
            hold: Duration::ZERO,
            headings: VecDeque::new(),
        }
    }

    /// Serving the last good pose for up to `hold` after the solution went bad.
    pub fn with_hold(self, hold: Duration) -> Self {
        PoseSource { hold, ..self }
    }

    /// How many solutions were dropped for their stamps.
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// Takes `s`, received at `now`, or says why it was dropped.
    pub fn offer(&mut self, s: Solution, now: Time) -> Result<(), Refused> {
        self.observe_time(now);
        let previous = self.latest.as_ref();
        if let Some(last) = previous.map(|t| t.solution.stamp) {
            if s.stamp == last {
                self.refused += 1;
                return Err(Refused::Duplicate { stamp: s.stamp });
            }
            if s.stamp < last {
                self.refused += 1;
                return Err(Refused::Backwards {
                    stamp: s.stamp,
                    last,
                });
            }
        }
        let rear = self.project(&s);
        if let Ok(r) = &rear {
            self.remember_heading(r.stamp, r.pose.yaw);
        }
        self.latest = Some(Taken { solution: s, rear });
        if let (GpsVerdict::Good { .. }, Some(Taken { rear: Ok(r), .. })) =
            (self.verdict(now), &self.latest)
        {
            self.last_good = Some(*r);
        }
        Ok(())
    }

    /// ROS time jumped back by more than `stale_after` (threads reading the clock a
    /// moment apart are not a jump): the stamps' order starts afresh.
    fn observe_time(&mut self, now: Time) {
        if now.saturating_add(self.health.stale_after) < self.last_now {
            self.latest = None;
            self.last_good = None;
            self.headings.clear();
            self.last_now = now;
        } else {
            self.last_now = self.last_now.max(now);
        }
    }

    /// Keeps `yaw` at `stamp` with the headings of the last [`YAW_RATE_WINDOW`]; a gap
    /// longer than `stale_after` starts the history afresh.
    fn remember_heading(&mut self, stamp: Time, yaw: f64) {
        let gap = self
            .headings
            .back()
            .and_then(|(t, _)| stamp.since(*t))
            .is_none_or(|dt| dt > self.health.stale_after);
        if gap {
            self.headings.clear();
        }
        self.headings.push_back((stamp, yaw));
        while self
            .headings
            .front()
            .and_then(|(t, _)| stamp.since(*t))
            .is_some_and(|age| age > YAW_RATE_WINDOW)
        {
            self.headings.pop_front();
        }
    }

    /// The yaw rate of the headings remembered and `yaw` at `stamp`: the least-squares
    /// slope over the last [`YAW_RATE_WINDOW`], angles unwrapped around the newest.
    /// `None` without a heading from within `stale_after` before it.
    fn heading_rate(&self, stamp: Time, yaw: f64) -> Option<f64> {
        let newest = self.headings.back()?;
        let dt = stamp.since(newest.0)?;
        if dt == Duration::ZERO || dt > self.health.stale_after {
            return None;
        }
        let points: Vec<(f64, f64)> = self
            .headings
            .iter()
            .filter_map(|(t, y)| {
                let age = stamp.since(*t)?;
                (age <= YAW_RATE_WINDOW || *t == newest.0)
                    .then(|| (-age.as_secs_f64(), wrap_angle(y - yaw)))
            })
            .chain([(0.0, 0.0)])
            .collect();
        let n = points.len() as f64;
        let (mt, my) = points
            .iter()
            .fold((0.0, 0.0), |(a, b), (t, y)| (a + t / n, b + y / n));
        let (sty, stt) = points.iter().fold((0.0, 0.0), |(a, b), (t, y)| {
            (a + (t - mt) * (y - my), b + (t - mt) * (t - mt))
        });
        Some(sty / stt)
    }

    fn project(&self, s: &Solution) -> Result<RearAxle, GeodesyError> {
        let pose = self.projection.rear_axle(InsFix {
            lat_deg: s.lat_deg,
            lon_deg: s.lon_deg,
            azimuth_deg: s.azimuth_deg,
        })?;
        let omega = s
            .yaw_rate_rad_s
            .or_else(|| self.heading_rate(s.stamp, pose.yaw))
            .unwrap_or(f64::NAN);
        let [ve, vn] = s.velocity_en_mps.unwrap_or([0.0; 2]);
        let velocity_mps = match (omega.is_finite(), s.velocity_en_mps.is_some()) {
            (true, true) => {
                let (sin, cos) = pose.yaw.sin_cos();
                let d = self.antenna_ahead_m;
                [ve + omega * d * sin, vn - omega * d * cos]
            }
            _ => [ve, vn],
        };
        Ok(RearAxle {
            stamp: s.stamp,
            pose,
            velocity_mps,
            yaw_rate_rad_s: omega,
        })
    }

    /// The verdict at `now` on the latest solution taken.
    pub fn verdict(&mut self, now: Time) -> GpsVerdict {
        self.observe_time(now);
        let latest = self.latest.as_ref().map(|t| &t.solution);
        match (classify(latest, now, &self.health), &self.latest) {
            // Finite values a projection still refuses (a latitude beyond the pole).
            (GpsVerdict::Good { .. }, Some(Taken { rear: Err(e), .. })) => {
                GpsVerdict::Fault(InsFault::Unprojectable(e.to_string()))
            }
            (v, _) => v,
        }
    }

    /// What the controllers are served at `now`: the rear axle of the latest solution
    /// while the verdict is good, else the last good one within the hold, else the fault.
    pub fn served(&mut self, now: Time) -> Result<Served, InsFault> {
        match (self.verdict(now), &self.latest) {
            (GpsVerdict::Good { .. }, Some(Taken { rear: Ok(r), .. })) => Ok(Served::Fresh(*r)),
            (GpsVerdict::Fault(f), _) => match self.last_good {
                Some(g) if now.saturating_since(g.stamp) <= self.hold && g.stamp <= now => {
                    Ok(Served::Held(g, f))
                }
                _ => Err(f),
            },
            // A good verdict always has a projected solution.
            (GpsVerdict::Good { .. }, _) => Err(InsFault::NoSolution),
        }
    }
}

/// The status a `NavSatFix` + IMU solution carries for [`super::health`]: good
/// ([`super::health::GOOD_STATUS`]) with a fix (`status.status` ≥ `STATUS_FIX`, 0) and a
/// heading from the IMU no more than `stale_after` from the fix's stamp; otherwise
/// `NO_FIX` or `NO_HEADING`, which the verdict reports as a fault.
pub fn navsat_status(fix_status: i8, heading_fresh: bool) -> &'static str {
    match (fix_status >= 0, heading_fresh) {
        (false, _) => "NO_FIX",
        (true, false) => "NO_HEADING",
        (true, true) => super::health::GOOD_STATUS,
    }
}

/// The horizontal σ of a `NavSatFix`, m: the square root of the larger of its east and
/// north variances (`position_covariance[0]` and `[4]`), when its covariance is known
/// (`position_covariance_type` > 0).
pub fn navsat_sigma_m(covariance_type: u8, covariance: &[f64]) -> Option<f64> {
    match (covariance_type, covariance) {
        (0, _) => None,
        (_, [east, _, _, _, north, ..]) => Some(east.max(*north).sqrt()),
        _ => None,
    }
}

/// How long an INS's reported standard deviations (Novatel's `INSSTDEV` log, which a
/// receiver gives at about 1 Hz beside the faster `INSPVA`) stand for the solutions around
/// them: three periods of that log. A solution further from the latest report has no σ.
pub const REPORTED_SIGMA_HOLDS: Duration = Duration::from_secs(3);

/// The horizontal σ of an INS's reported deviations, m: the larger of its latitude and
/// longitude standard deviations (m), when both are finite and not negative.
pub fn ins_sigma_m(latitude_dev_m: f32, longitude_dev_m: f32) -> Option<f64> {
    let (lat, lon) = (f64::from(latitude_dev_m), f64::from(longitude_dev_m));
    (lat.is_finite() && lon.is_finite() && lat >= 0.0 && lon >= 0.0).then(|| lat.max(lon))
}

/// The INS's latest reported horizontal σ ([`ins_sigma_m`]) with its stamp, and the σ of a
/// solution stamped near it ([`REPORTED_SIGMA_HOLDS`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReportedSigma {
    latest: Option<(Time, f64)>,
}

impl ReportedSigma {
    /// Takes a report stamped `stamp`; one without a usable σ withdraws the last (the INS
    /// no longer vouches for it).
    pub fn note(&mut self, stamp: Time, sigma_m: Option<f64>) {
        self.latest = sigma_m.map(|s| (stamp, s));
    }

    /// The σ for a solution stamped `stamp`, m: the latest report's when it is within
    /// [`REPORTED_SIGMA_HOLDS`] of `stamp`, either side.
    pub fn at(&self, stamp: Time) -> Option<f64> {
        let (at, sigma) = self.latest?;
        let gap = stamp.since(at).or_else(|| at.since(stamp))?;
        (gap <= REPORTED_SIGMA_HOLDS).then_some(sigma)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gnss::health::{FAULT_ACCURACY_MM, GOOD_STATUS};
    use crate::gnss::pose::InsPoseConfig;
    use std::f64::consts::FRAC_PI_2;

    const LAT: f64 = 40.092_856_3;
    const LON: f64 = -88.235_999_4;

    fn t(s: f64) -> Time {
        Time::from_secs_f64(1000.0 + s)
    }

    fn source() -> PoseSource {
        let cfg = InsPoseConfig::DEFAULT;
        PoseSource::new(
            InsPose::new(&cfg).unwrap(),
            cfg.antenna_ahead_m,
            InsHealthConfig::DEFAULT,
        )
    }

    fn at(stamp: Time, azimuth_deg: f64) -> Solution {
        Solution {
            stamp,
            status: GOOD_STATUS.into(),
            lat_deg: LAT,
            lon_deg: LON,
            azimuth_deg,
            velocity_en_mps: Some([0.0, 0.0]),
            yaw_rate_rad_s: None,
            horizontal_sigma_m: None,
        }
    }

    #[test]
    fn a_navsat_fix_is_good_only_with_a_fix_and_a_fresh_heading() {
        assert_eq!(navsat_status(0, true), GOOD_STATUS);
        assert_eq!(navsat_status(2, true), GOOD_STATUS);
        assert_eq!(navsat_status(-1, true), "NO_FIX");
        assert_eq!(navsat_status(1, false), "NO_HEADING");
        assert_eq!(navsat_sigma_m(0, &[4.0; 9]), None);
        let cov = [0.0004, 0.0, 0.0, 0.0, 0.0009, 0.0, 0.0, 0.0, 1.0];
        assert!((navsat_sigma_m(2, &cov).unwrap() - 0.03).abs() < 1e-12);
        assert_eq!(navsat_sigma_m(2, &[]), None);
        let nan = [f64::NAN; 9];
        assert!(
            navsat_sigma_m(1, &nan).is_some_and(f64::is_nan),
            "NaN is the verdict's to refuse"
        );
    }

    #[test]
    fn a_good_solution_is_served_with_its_stamp() {
        let mut s = source();
        assert_eq!(s.served(t(0.0)), Err(InsFault::NoSolution));
        s.offer(at(t(0.0), 90.0), t(0.05)).unwrap();
        let r = s.served(t(0.1)).unwrap().rear_axle();
        assert_eq!(r.stamp, t(0.0));
        assert!((r.pose.x + 0.46).abs() < 1e-9 && r.pose.y.abs() < 1e-9);
        assert!(r.yaw_rate_rad_s.is_nan(), "one solution: no yaw rate");
        assert!(matches!(s.verdict(t(0.1)), GpsVerdict::Good { .. }));
    }

    #[test]
    fn duplicate_and_backward_stamps_are_dropped_and_the_fix_then_goes_stale() {
        let mut s = source();
        s.offer(at(t(1.0), 90.0), t(1.0)).unwrap();
        assert_eq!(
            s.offer(at(t(1.0), 0.0), t(1.1)),
            Err(Refused::Duplicate { stamp: t(1.0) })
        );
        assert_eq!(
            s.offer(at(t(0.5), 0.0), t(1.2)),
            Err(Refused::Backwards {
                stamp: t(0.5),
                last: t(1.0)
            })
        );
        assert_eq!(s.refused(), 2);
        // The pose is the one taken, not the dropped ones' heading.
        assert!(s.served(t(1.2)).unwrap().rear_axle().pose.yaw.abs() < 1e-12);
        // Only duplicates from now on: stale after 0.5 s, a fault.
        for k in 3..6 {
            let now = t(1.0 + 0.1 * k as f64);
            let _ = s.offer(at(t(1.0), 90.0), now);
        }
        assert!(matches!(s.served(t(1.6)), Err(InsFault::Stale { .. })));
        assert_eq!(s.verdict(t(1.6)).accuracy_mm(), FAULT_ACCURACY_MM);
    }

    #[test]
    fn ros_time_jumping_back_restarts_the_order() {
        let mut s = source();
        s.offer(at(t(100.0), 90.0), t(100.0)).unwrap();
        // Threads reading the clock a moment apart are no jump.
        assert!(s.served(t(99.9)).is_ok());
        assert!(s.offer(at(t(99.0), 90.0), t(99.9)).is_err());
        // A simulator reset: time starts again near 0.
        s.offer(at(t(1.0), 90.0), t(1.0)).unwrap();
        assert!(s.served(t(1.1)).is_ok());
    }

    #[test]
    fn a_bad_status_is_a_fault_and_nothing_is_served() {
        let mut s = source();
        s.offer(at(t(0.0), 90.0), t(0.0)).unwrap();
        let bad = Solution {
            status: "INS_HIGH_VARIANCE".into(),
            ..at(t(0.05), 90.0)
        };
        s.offer(bad, t(0.05)).unwrap();
        assert_eq!(
            s.served(t(0.06)),
            Err(InsFault::Status("INS_HIGH_VARIANCE".into()))
        );
        s.offer(at(t(0.1), 90.0), t(0.1)).unwrap();
        assert!(s.served(t(0.1)).is_ok(), "a good one serves again");
    }

    #[test]
    fn with_a_hold_the_last_good_pose_is_served_held_until_the_hold_ends() {
        let mut s = source().with_hold(Duration::from_secs(2));
        s.offer(at(t(0.0), 90.0), t(0.0)).unwrap();
        let bad = Solution {
            status: "INS_ALIGNING".into(),
            ..at(t(0.05), 0.0)
        };
        s.offer(bad, t(0.05)).unwrap();
        // The verdict is a fault at once; the pose is the last good one, its own stamp.
        assert_eq!(s.verdict(t(0.1)).accuracy_mm(), FAULT_ACCURACY_MM);
        let Ok(Served::Held(r, InsFault::Status(_))) = s.served(t(0.1)) else {
            panic!("{:?}", s.served(t(0.1)));
        };
        assert_eq!(r.stamp, t(0.0));
        assert!(
            r.pose.yaw.abs() < 1e-12,
            "the good heading, not the bad one"
        );
        // Stale from 0.5 s on, still held until 2 s after the good one, then refused.
        assert!(matches!(s.served(t(2.0)), Ok(Served::Held(..))));
        assert!(s.served(t(2.01)).is_err());
        // Without a hold: refused at once.
        let mut s = source();
        s.offer(at(t(0.0), 90.0), t(0.0)).unwrap();
        s.offer(
            Solution {
                lat_deg: f64::NAN,
                ..at(t(0.05), 90.0)
            },
            t(0.05),
        )
        .unwrap();
        assert!(s.served(t(0.05)).is_err());
    }

    #[test]
    fn nan_values_are_a_fault_never_a_served_pose() {
        for bad in [
            Solution {
                lat_deg: f64::NAN,
                ..at(t(0.1), 90.0)
            },
            Solution {
                azimuth_deg: f64::INFINITY,
                ..at(t(0.1), 90.0)
            },
            Solution {
                velocity_en_mps: Some([f64::NAN, 0.0]),
                ..at(t(0.1), 90.0)
            },
            Solution {
                lat_deg: 91.0,
                ..at(t(0.1), 90.0)
            },
        ] {
            let mut s = source();
            s.offer(at(t(0.0), 90.0), t(0.0)).unwrap();
            s.offer(bad.clone(), t(0.1)).unwrap();
            let f = s.served(t(0.1)).unwrap_err();
            assert!(
                matches!(f, InsFault::NotFinite { .. } | InsFault::Unprojectable(_)),
                "{bad:?}: {f:?}"
            );
            assert_eq!(s.verdict(t(0.1)).accuracy_mm(), FAULT_ACCURACY_MM);
        }
    }

    #[test]
    fn zero_and_future_stamps_are_faults() {
        let mut s = source();
        s.offer(at(Time::ZERO, 90.0), t(0.0)).unwrap();
        assert_eq!(s.served(t(0.0)), Err(InsFault::ZeroStamp));
        s.offer(at(t(5.0), 90.0), t(0.0)).unwrap();
        assert!(matches!(
            s.served(t(0.0)),
            Err(InsFault::FutureStamp { .. })
        ));
    }

    #[test]
    fn the_yaw_rate_comes_from_successive_headings_and_moves_the_velocity_to_the_rear_axle() {
        let mut s = source();
        // Turning left (counter-clockwise) at 0.2 rad/s: the azimuth falls 0.2 rad/s.
        let rate = 0.2_f64;
        let mut a = at(t(0.0), 0.0);
        a.velocity_en_mps = Some([0.0, 3.0]);
        s.offer(a.clone(), t(0.0)).unwrap();
        let b = Solution {
            stamp: t(0.1),
            azimuth_deg: -(rate * 0.1).to_degrees(),
            ..a
        };
        s.offer(b, t(0.1)).unwrap();
        let r = s.served(t(0.1)).unwrap().rear_axle();
        assert!(
            (r.yaw_rate_rad_s - rate).abs() < 1e-9,
            "{}",
            r.yaw_rate_rad_s
        );
        // Facing (almost) north at 3 m/s, turning left: the antenna 0.46 m ahead moves
        // ω·d west relative to the rear axle, so the rear axle moves ω·d east of it.
        let yaw = FRAC_PI_2 + rate * 0.1;
        let expected = [rate * 0.46 * yaw.sin(), 3.0 - rate * 0.46 * yaw.cos()];
        assert!((r.velocity_mps[0] - expected[0]).abs() < 1e-9, "{r:?}");
        assert!((r.velocity_mps[1] - expected[1]).abs() < 1e-9, "{r:?}");
        assert!(r.velocity_mps[0] > 0.09);
    }

    #[test]
    fn the_yaw_rate_is_fitted_over_the_window_so_heading_noise_is_damped() {
        let mut s = source();
        // Turning left at 0.2 rad/s, 20 Hz, each heading 5 mrad off, alternately.
        let rate = 0.2_f64;
        for i in 0..20 {
            let noise = if i % 2 == 0 { 0.005 } else { -0.005 };
            let yaw = rate * 0.05 * f64::from(i) + noise;
            s.offer(at(t(0.05 * f64::from(i)), -yaw.to_degrees()), t(0.0))
                .unwrap();
        }
        let r = s.served(t(0.95)).unwrap().rear_axle();
        // Two successive headings alone would be 0.2 rad/s off.
        assert!(
            (r.yaw_rate_rad_s - rate).abs() < 0.04,
            "{}",
            r.yaw_rate_rad_s
        );
        // A steady turn is fitted exactly.
        let mut s = source();
        for i in 0..8 {
            let yaw = rate * 0.05 * f64::from(i);
            s.offer(at(t(0.05 * f64::from(i)), -yaw.to_degrees()), t(0.0))
                .unwrap();
        }
        let r = s.served(t(0.35)).unwrap().rear_axle();
        assert!(
            (r.yaw_rate_rad_s - rate).abs() < 1e-9,
            "{}",
            r.yaw_rate_rad_s
        );
    }

    #[test]
    fn a_source_yaw_rate_is_used_and_a_gap_gives_none() {
        let mut s = source();
        s.offer(at(t(0.0), 0.0), t(0.0)).unwrap();
        // 1 s later: beyond stale_after, no estimate from the pair.
        s.offer(at(t(1.0), 10.0), t(1.0)).unwrap();
        assert!(s
            .served(t(1.0))
            .unwrap()
            .rear_axle()
            .yaw_rate_rad_s
            .is_nan());
        let imu = Solution {
            yaw_rate_rad_s: Some(-0.3),
            velocity_en_mps: None,
            ..at(t(1.1), 10.0)
        };
        s.offer(imu, t(1.1)).unwrap();
        let r = s.served(t(1.1)).unwrap().rear_axle();
        assert_eq!(r.yaw_rate_rad_s, -0.3);
        assert_eq!(r.velocity_mps, [0.0, 0.0], "no velocity: a zero twist");
    }

    #[test]
    fn a_reported_sigma_is_the_larger_horizontal_deviation_when_it_is_a_number() {
        assert_eq!(ins_sigma_m(0.01, 0.02), Some(f64::from(0.02f32)));
        assert_eq!(ins_sigma_m(0.0, 0.0), Some(0.0));
        assert_eq!(ins_sigma_m(f32::NAN, 0.01), None);
        assert_eq!(ins_sigma_m(0.01, f32::INFINITY), None);
        assert_eq!(ins_sigma_m(-0.01, 0.01), None);
    }

    #[test]
    fn a_reported_sigma_stands_for_the_solutions_near_it_and_a_bad_report_withdraws_it() {
        let mut r = ReportedSigma::default();
        assert_eq!(r.at(t(0.0)), None, "nothing reported yet");
        r.note(t(10.0), Some(0.012));
        let held = REPORTED_SIGMA_HOLDS.as_secs_f64();
        assert_eq!(r.at(t(10.0)), Some(0.012));
        assert_eq!(r.at(t(10.0 + held)), Some(0.012));
        assert_eq!(
            r.at(t(10.0 - held)),
            Some(0.012),
            "a solution stamped before it"
        );
        assert_eq!(r.at(t(10.0 + held + 0.01)), None, "too old to vouch for it");
        r.note(t(11.0), None);
        assert_eq!(r.at(t(11.0)), None, "withdrawn by a report without a σ");
    }
}
