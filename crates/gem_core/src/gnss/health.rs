//! Whether an INS solution is fit to drive on, and how that reaches the state manager.
//!
//! A solution is good only when all of these hold:
//!
//! - its status is [`GOOD_STATUS`] (`INS_SOLUTION_GOOD`; Novatel's other states, from
//!   `INS_INACTIVE` and `INS_ALIGNING` to `INS_HIGH_VARIANCE` and `INS_SOLUTION_FREE`, are
//!   not);
//! - its stamp (the measurement time) is set, no more than `stale_after` old, and no more
//!   than `stale_after` ahead of now (a clock that far off is no clock);
//! - its latitude, longitude, azimuth and velocity, and its horizontal σ when it gives
//!   one, are finite.
//!
//! The state manager already has a GPS rule (docs/spec.md §2): its `/gps_accuracy` input
//! carries an accuracy in mm, above `gps_bad_above_mm` (200 mm) is a bad fix, and a bad
//! fix for longer than `gps_lost_after` (15 s) since the last good one raises `GPS_LOST`.
//! The pose source feeds that input; [`GpsVerdict::accuracy_mm`] is the value it
//! publishes:
//!
//! | verdict | published accuracy |
//! |---|---|
//! | good, with a horizontal σ | σ in mm (so a good but loose solution is judged by the state manager's threshold) |
//! | good, without one (an `Inspva` with no recent `Insstdev`, a `NavSatFix` without covariance) | [`GOOD_WITHOUT_SIGMA_MM`], 0 mm: "no accuracy fault", not a measurement |
//! | any fault | [`FAULT_ACCURACY_MM`], 1 km: above any sensible threshold, finite so the state manager reads it as a bad fix rather than as bad input |
//!
//! The state manager's rule is unchanged: an INS fault becomes `GPS_LOST` after its
//! hold-off, 15 s by default, counted from the last good solution; a deployment that
//! wants the car stopped sooner shortens `~gps_lost_after_s`. The pose source publishes
//! the verdict at its own rate even when no solution arrives, so a silent INS is a
//! `Stale` fault here, not a gap the state manager would see only as stale data.

use crate::time::Time;
use std::fmt;
use std::time::Duration;

/// The one INS status that is good.
pub const GOOD_STATUS: &str = "INS_SOLUTION_GOOD";
/// The accuracy published for a good solution that gives no σ, mm.
pub const GOOD_WITHOUT_SIGMA_MM: f32 = 0.0;
/// The accuracy published for any fault, mm.
pub const FAULT_ACCURACY_MM: f32 = 1.0e6;

/// The classifier's bound. `Default`: 0.5 s, five periods of a 10 Hz INS.
#[derive(Clone, Debug, PartialEq)]
pub struct InsHealthConfig {
    /// A solution older than this (or this far ahead of now) is a fault.
    pub stale_after: Duration,
}

impl InsHealthConfig {
    /// The defaults, readable in `const` context.
    pub const DEFAULT: InsHealthConfig = InsHealthConfig {
        stale_after: Duration::from_millis(500),
    };
}

impl Default for InsHealthConfig {
    fn default() -> Self {
        InsHealthConfig::DEFAULT
    }
}

/// One solution of the source, as the node decodes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Solution {
    /// The measurement time (`header.stamp`).
    pub stamp: Time,
    /// The INS status (`Inspva.status`; [`GOOD_STATUS`] when good).
    pub status: String,
    /// Latitude, degrees north.
    pub lat_deg: f64,
    /// Longitude, degrees east.
    pub lon_deg: f64,
    /// Heading, degrees clockwise from north.
    pub azimuth_deg: f64,
    /// The antenna's east and north velocity, m/s, when the source gives them.
    pub velocity_en_mps: Option<[f64; 2]>,
    /// The yaw rate, rad/s counter-clockwise, when the source gives one.
    pub yaw_rate_rad_s: Option<f64>,
    /// Horizontal standard deviation, m, when the source gives one.
    pub horizontal_sigma_m: Option<f64>,
}

/// Why a solution is not fit to drive on.
#[derive(Clone, Debug, PartialEq)]
pub enum InsFault {
    /// No solution received yet.
    NoSolution,
    /// A status other than [`GOOD_STATUS`].
    Status(String),
    /// A zero stamp.
    ZeroStamp,
    /// A stamp too far ahead of now.
    FutureStamp {
        /// How far ahead.
        ahead: Duration,
    },
    /// A solution too old.
    Stale {
        /// Its age.
        age: Duration,
    },
    /// A value that is NaN or infinite.
    NotFinite {
        /// Which.
        what: &'static str,
    },
    /// Finite values the projection refuses (a latitude beyond a pole).
    Unprojectable(String),
}

impl fmt::Display for InsFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InsFault::NoSolution => f.write_str("no INS solution received"),
            InsFault::Status(s) => write!(f, "INS status \"{s}\" is not {GOOD_STATUS}"),
            InsFault::ZeroStamp => f.write_str("INS solution has a zero stamp"),
            InsFault::FutureStamp { ahead } => {
                write!(
                    f,
                    "INS solution stamped {:.3} s in the future",
                    ahead.as_secs_f64()
                )
            }
            InsFault::Stale { age } => {
                write!(f, "INS solution is {:.3} s old", age.as_secs_f64())
            }
            InsFault::NotFinite { what } => write!(f, "INS {what} is not a finite number"),
            InsFault::Unprojectable(why) => write!(f, "INS solution cannot be projected: {why}"),
        }
    }
}

/// The classifier's verdict.
#[derive(Clone, Debug, PartialEq)]
pub enum GpsVerdict {
    /// Fit to drive on; the horizontal σ in mm when the source gives one.
    Good {
        /// Horizontal standard deviation, mm.
        sigma_mm: Option<f32>,
    },
    /// Not fit.
    Fault(InsFault),
}

impl GpsVerdict {
    /// The accuracy to publish on the state manager's `/gps_accuracy`, mm (module
    /// documentation).
    pub fn accuracy_mm(&self) -> f32 {
        match self {
            GpsVerdict::Good { sigma_mm: Some(s) } => *s,
            GpsVerdict::Good { sigma_mm: None } => GOOD_WITHOUT_SIGMA_MM,
            GpsVerdict::Fault(_) => FAULT_ACCURACY_MM,
        }
    }
}

/// The verdict on the latest solution (`None`: none yet) at `now`.
pub fn classify(latest: Option<&Solution>, now: Time, cfg: &InsHealthConfig) -> GpsVerdict {
    match latest.map(|r| fault(r, now, cfg)) {
        None => GpsVerdict::Fault(InsFault::NoSolution),
        Some(Some(f)) => GpsVerdict::Fault(f),
        Some(None) => GpsVerdict::Good {
            sigma_mm: latest
                .and_then(|r| r.horizontal_sigma_m)
                .map(|s| (s * 1000.0) as f32),
        },
    }
}

/// The first fault of a solution, in the order of the module documentation.
fn fault(r: &Solution, now: Time, cfg: &InsHealthConfig) -> Option<InsFault> {
    if r.status != GOOD_STATUS {
        return Some(InsFault::Status(r.status.to_owned()));
    }
    if let Some(f) = stamp_fault(r.stamp, now, cfg.stale_after) {
        return Some(f);
    }
    // A source without velocity gives none to judge.
    let [east, north] = r.velocity_en_mps.unwrap_or([0.0; 2]);
    let values = [
        ("latitude", r.lat_deg),
        ("longitude", r.lon_deg),
        ("azimuth", r.azimuth_deg),
        ("horizontal sigma", r.horizontal_sigma_m.unwrap_or(0.0)),
        ("east velocity", east),
        ("north velocity", north),
    ];
    values
        .into_iter()
        .find(|(_, v)| !v.is_finite())
        .map(|(what, _)| InsFault::NotFinite { what })
}

fn stamp_fault(stamp: Time, now: Time, bound: Duration) -> Option<InsFault> {
    if stamp.is_zero() {
        return Some(InsFault::ZeroStamp);
    }
    match (now.since(stamp), stamp.since(now)) {
        (Some(age), _) if age > bound => Some(InsFault::Stale { age }),
        (_, Some(ahead)) if ahead > bound => Some(InsFault::FutureStamp { ahead }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state_manager::{StateManager, StateManagerConfig};

    fn t(s: f64) -> Time {
        Time::from_secs_f64(1000.0 + s)
    }

    fn good(stamp: Time) -> Solution {
        Solution {
            status: GOOD_STATUS.into(),
            stamp,
            lat_deg: 40.09,
            lon_deg: -88.23,
            azimuth_deg: 12.0,
            velocity_en_mps: Some([0.0, 0.0]),
            yaw_rate_rad_s: None,
            horizontal_sigma_m: None,
        }
    }

    fn verdict(r: &Solution, now: Time) -> GpsVerdict {
        classify(Some(r), now, &InsHealthConfig::DEFAULT)
    }

    #[test]
    fn a_good_fresh_solution_is_good() {
        assert_eq!(
            verdict(&good(t(0.0)), t(0.1)),
            GpsVerdict::Good { sigma_mm: None }
        );
    }

    #[test]
    fn any_other_status_is_a_fault() {
        for status in [
            "INS_HIGH_VARIANCE",
            "INS_ALIGNING",
            "INS_SOLUTION_FREE",
            "",
            "ins_solution_good",
        ] {
            let r = Solution {
                status: status.into(),
                ..good(t(0.0))
            };
            assert_eq!(
                verdict(&r, t(0.0)),
                GpsVerdict::Fault(InsFault::Status(status.to_owned()))
            );
        }
    }

    #[test]
    fn age_before_at_and_after_the_bound() {
        let r = good(t(0.0));
        assert!(matches!(verdict(&r, t(0.499)), GpsVerdict::Good { .. }));
        assert!(matches!(verdict(&r, t(0.5)), GpsVerdict::Good { .. }));
        assert!(matches!(
            verdict(&r, t(0.501)),
            GpsVerdict::Fault(InsFault::Stale { .. })
        ));
    }

    #[test]
    fn a_stamp_far_in_the_future_is_a_fault() {
        let r = good(t(1.0));
        assert!(matches!(verdict(&r, t(0.5)), GpsVerdict::Good { .. }));
        assert_eq!(
            verdict(&r, t(0.4)).accuracy_mm(),
            FAULT_ACCURACY_MM,
            "0.6 s ahead"
        );
        assert_eq!(
            verdict(&good(Time::ZERO), t(0.0)),
            GpsVerdict::Fault(InsFault::ZeroStamp)
        );
    }

    #[test]
    fn nan_values_are_a_fault() {
        let r = Solution {
            azimuth_deg: f64::NAN,
            ..good(t(0.0))
        };
        assert_eq!(
            verdict(&r, t(0.0)),
            GpsVerdict::Fault(InsFault::NotFinite { what: "azimuth" })
        );
        let r = Solution {
            horizontal_sigma_m: Some(f64::INFINITY),
            ..good(t(0.0))
        };
        assert!(matches!(verdict(&r, t(0.0)), GpsVerdict::Fault(_)));
        let r = Solution {
            velocity_en_mps: Some([0.0, f64::NAN]),
            ..good(t(0.0))
        };
        assert_eq!(
            verdict(&r, t(0.0)),
            GpsVerdict::Fault(InsFault::NotFinite {
                what: "north velocity"
            })
        );
    }

    #[test]
    fn no_solution_is_a_fault() {
        assert_eq!(
            classify(None, t(0.0), &InsHealthConfig::DEFAULT),
            GpsVerdict::Fault(InsFault::NoSolution)
        );
    }

    #[test]
    fn the_published_accuracy_of_each_verdict() {
        assert_eq!(verdict(&good(t(0.0)), t(0.0)).accuracy_mm(), 0.0);
        let r = Solution {
            horizontal_sigma_m: Some(0.025),
            ..good(t(0.0))
        };
        assert_eq!(verdict(&r, t(0.0)).accuracy_mm(), 25.0);
        let bad = GpsVerdict::Fault(InsFault::NoSolution);
        assert_eq!(bad.accuracy_mm(), 1.0e6);
    }

    #[test]
    fn faults_explain_themselves() {
        let r = Solution {
            status: "INS_ALIGNING".into(),
            ..good(t(0.0))
        };
        let GpsVerdict::Fault(f) = verdict(&r, t(0.0)) else {
            panic!("good");
        };
        assert_eq!(
            f.to_string(),
            "INS status \"INS_ALIGNING\" is not INS_SOLUTION_GOOD"
        );
        let GpsVerdict::Fault(f) = verdict(&good(t(0.0)), t(2.0)) else {
            panic!("good");
        };
        assert_eq!(f.to_string(), "INS solution is 2.000 s old");
    }

    /// The mapping, through the state manager as it is: good verdicts keep GPS healthy,
    /// fault verdicts raise GPS_LOST after the state manager's own hold-off.
    #[test]
    fn the_state_manager_reads_the_verdicts_as_its_gps_rule_says() {
        let cfg = StateManagerConfig::DEFAULT;
        let mut sm = StateManager::new(cfg.clone(), t(0.0));
        let good = verdict(&good(t(0.0)), t(0.0));
        assert!(sm.update_gps(t(0.0), good.accuracy_mm(), t(0.0)).is_empty());
        assert!(!sm.gps_lost(t(0.0)));
        let bad = GpsVerdict::Fault(InsFault::Status("INS_ALIGNING".into()));
        let hold_off = cfg.gps_lost_after.as_secs_f64();
        for s in [0.1, hold_off, hold_off + 0.1] {
            assert!(sm.update_gps(t(s), bad.accuracy_mm(), t(s)).is_empty());
        }
        assert!(!sm.gps_lost(t(hold_off)));
        assert!(sm.gps_lost(t(hold_off + 0.1)));
        assert!(FAULT_ACCURACY_MM > cfg.gps_bad_above_mm);
        assert!(GOOD_WITHOUT_SIGMA_MM <= cfg.gps_bad_above_mm);
    }
}
