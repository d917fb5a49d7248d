//! Graded stops: which faults stop the car how, and the speed profile of a stop.
//!
//! Each error bit of `/system_state` belongs to a [`StopClass`]:
//!
//! - **emergency**: the vehicle's maximum braking at once (the speed command drops to 0 in
//!   the first command; the actuator brakes as hard as it can). The e-stop by default.
//! - **comfortable**: a jerk- and deceleration-limited ramp to rest ([`StopProfile`]),
//!   about −1 m/s² and 0.6 m/s³ by default, the way a driver stops for a warning light.
//!   Every other bit by default.
//!
//! The most severe class among the set bits wins. A stop can escalate (a comfortable stop
//! becomes an emergency one when an emergency bit is set during it), never the reverse:
//! [`StopClass::escalate`].
//!
//! The policy is written as `BIT=class` pairs separated by commas
//! (`"ESTOP=emergency,BATTERY_LOW=comfortable"`); bits not named get the default class
//! ([`StopPolicy::parse`]). Unknown bit or class names and a bit named twice are errors.
//!
//! The profile is a pure function of the speed at the start of the stop and the limits:
//! the deceleration rises at the jerk limit, holds at the deceleration limit, and falls at
//! the jerk limit so the car comes to rest without a lurch. When the speed is too low to
//! reach the full deceleration, the profile is triangular with peak `sqrt(v₀·j)`.

use crate::config::{first_invalid, positive, value, ConfigError};
use crate::state_manager::ErrorBits;
use crate::time::Time;
use std::fmt;
use thiserror::Error;

/// Speed below which a car counts as at rest, and a speed command as a stop, m/s (the
/// original suite's criterion).
pub const STOPPED_BELOW_MPS: f64 = 0.01;

/// How hard a fault stops the car. Ordered: `Emergency` > `Comfortable`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StopClass {
    /// Deceleration- and jerk-limited ramp to rest.
    Comfortable,
    /// Maximum braking at once.
    Emergency,
}

impl StopClass {
    /// The class's name in a policy string.
    pub const fn name(self) -> &'static str {
        match self {
            StopClass::Comfortable => "comfortable",
            StopClass::Emergency => "emergency",
        }
    }

    /// From a name in a policy string.
    pub fn from_name(name: &str) -> Option<StopClass> {
        [StopClass::Comfortable, StopClass::Emergency]
            .into_iter()
            .find(|c| c.name() == name)
    }

    /// The class of a stop running as `self` when `new` is demanded: the more severe of
    /// the two (a stop escalates, it never relaxes).
    pub fn escalate(self, new: StopClass) -> StopClass {
        self.max(new)
    }
}

impl fmt::Display for StopClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a stop policy string is refused.
#[derive(Debug, Error, PartialEq)]
pub enum PolicyError {
    /// An entry is not `BIT=class`.
    #[error("\"{0}\" is not BIT=class")]
    Syntax(String),
    /// The bit name is not one of `/system_state`'s.
    #[error("unknown error bit \"{0}\" (one of {1})")]
    UnknownBit(String, String),
    /// The class name is neither `emergency` nor `comfortable`.
    #[error("unknown stop class \"{0}\" (emergency or comfortable)")]
    UnknownClass(String),
    /// The same bit appears twice.
    #[error("error bit {0} is mapped twice")]
    Twice(String),
}

/// Which class each error bit stops the car with.
#[derive(Clone, Debug, PartialEq)]
pub struct StopPolicy {
    /// The bits that stop the car as an emergency; every other bit stops it comfortably.
    emergency: ErrorBits,
}

impl StopPolicy {
    /// The default policy string: the e-stop is an emergency, the rest comfortable.
    pub const DEFAULT_TEXT: &'static str = "ESTOP=emergency";

    /// The default policy.
    pub fn default_policy() -> StopPolicy {
        StopPolicy {
            emergency: ErrorBits::ESTOP,
        }
    }

    /// Reads `BIT=class[,BIT=class...]`; unnamed bits are comfortable.
    pub fn parse(text: &str) -> Result<StopPolicy, PolicyError> {
        let mut emergency = ErrorBits::NONE;
        let mut seen = ErrorBits::NONE;
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (bit, class) = entry
                .split_once('=')
                .ok_or_else(|| PolicyError::Syntax(entry.to_owned()))?;
            let (bit, class) = (bit.trim(), class.trim());
            let b = ErrorBits::from_name(bit).ok_or_else(|| {
                let names: Vec<&str> = ErrorBits::ALL.iter().flat_map(|b| b.names()).collect();
                PolicyError::UnknownBit(bit.to_owned(), names.join(", "))
            })?;
            let c = StopClass::from_name(class)
                .ok_or_else(|| PolicyError::UnknownClass(class.to_owned()))?;
            if seen.contains(b) {
                return Err(PolicyError::Twice(bit.to_owned()));
            }
            seen.set_if(b, true);
            emergency.set_if(b, c == StopClass::Emergency);
        }
        Ok(StopPolicy { emergency })
    }

    /// The class for the set `bits` (None when no bit is set).
    pub fn class_of(&self, bits: ErrorBits) -> Option<StopClass> {
        if bits.is_empty() {
            None
        } else if bits.bits() & self.emergency.bits() != 0 {
            Some(StopClass::Emergency)
        } else {
            Some(StopClass::Comfortable)
        }
    }
}

impl Default for StopPolicy {
    fn default() -> Self {
        StopPolicy::default_policy()
    }
}

/// Limits of a comfortable stop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StopLimits {
    /// Largest deceleration, m/s² (> 0).
    pub decel_mps2: f64,
    /// Largest rate of change of the deceleration, m/s³ (> 0).
    pub jerk_mps3: f64,
}

impl StopLimits {
    /// About −1 m/s² and 0.6 m/s³: from 5.5 m/s at rest in 7.2 s, from 8 m/s in 9.7 s.
    pub const COMFORTABLE: StopLimits = StopLimits {
        decel_mps2: 1.0,
        jerk_mps3: 0.6,
    };

    /// Checks both limits; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        first_invalid([
            positive(value!(self, StopLimits.decel_mps2)),
            positive(value!(self, StopLimits.jerk_mps3)),
        ])
    }
}

/// The speed over time of a comfortable stop from `v0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StopProfile {
    v0: f64,
    jerk: f64,
    /// Peak deceleration reached (≤ the limit).
    peak: f64,
    /// Durations of the three phases: rising, constant, falling deceleration.
    t1: f64,
    t2: f64,
}

impl StopProfile {
    /// The profile from speed `v0` (its magnitude; a car at rest has nothing to do).
    pub fn new(v0: f64, limits: StopLimits) -> StopProfile {
        let v0 = if v0.is_finite() { v0.abs() } else { 0.0 };
        let (a, j) = (limits.decel_mps2, limits.jerk_mps3);
        // The two jerk phases alone lose a²/j of speed.
        let (peak, t2) = if v0 >= a * a / j {
            (a, (v0 - a * a / j) / a)
        } else {
            ((v0 * j).sqrt(), 0.0)
        };
        StopProfile {
            v0,
            jerk: j,
            peak,
            t1: peak / j,
            t2,
        }
    }

    /// Time from the start to rest, s.
    pub fn time_to_rest(&self) -> f64 {
        2.0 * self.t1 + self.t2
    }

    /// The peak deceleration, m/s².
    pub fn peak_decel(&self) -> f64 {
        self.peak
    }

    /// Speed `t` seconds into the stop (0 after it).
    pub fn speed_at(&self, t: f64) -> f64 {
        self.state_at(t).0
    }

    /// Acceleration (≤ 0) `t` seconds into the stop.
    pub fn accel_at(&self, t: f64) -> f64 {
        self.state_at(t).1
    }

    /// Distance driven `t` seconds into the stop, m.
    pub fn distance_at(&self, t: f64) -> f64 {
        self.state_at(t).2
    }

    /// Distance to rest, m.
    pub fn distance(&self) -> f64 {
        self.distance_at(self.time_to_rest())
    }

    /// (speed, acceleration, distance) at `t`.
    fn state_at(&self, t: f64) -> (f64, f64, f64) {
        let (j, a, t1, t2) = (self.jerk, self.peak, self.t1, self.t2);
        let t = t.clamp(0.0, self.time_to_rest());
        // End of each phase.
        let v1 = self.v0 - 0.5 * j * t1 * t1;
        let d1 = self.v0 * t1 - j * t1.powi(3) / 6.0;
        let v2 = v1 - a * t2;
        let d2 = d1 + v1 * t2 - 0.5 * a * t2 * t2;
        if t <= t1 {
            (
                self.v0 - 0.5 * j * t * t,
                -j * t,
                self.v0 * t - j * t.powi(3) / 6.0,
            )
        } else if t <= t1 + t2 {
            let u = t - t1;
            (v1 - a * u, -a, d1 + v1 * u - 0.5 * a * u * u)
        } else {
            let u = t - t1 - t2;
            let speed = if t >= self.time_to_rest() {
                0.0 // exactly, not a rounding residue
            } else {
                (v2 - a * u + 0.5 * j * u * u).max(0.0)
            };
            (
                speed,
                -(a - j * u).max(0.0),
                d2 + v2 * u - 0.5 * a * u * u + j * u.powi(3) / 6.0,
            )
        }
    }
}

/// One command of a stop: the speed, and the limits `ackermann_msgs/AckermannDrive` carries
/// (its convention: magnitudes, 0 meaning "as quickly as possible").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StopCommand {
    /// Speed, m/s.
    pub speed_mps: f64,
    /// Deceleration to use, m/s² (0: the vehicle's maximum).
    pub accel_mps2: f64,
    /// Jerk to use, m/s³ (0: unlimited).
    pub jerk_mps3: f64,
}

/// A stop in progress: its class (only ever escalating) and, for a comfortable one, its
/// profile from the speed the car had when it began.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stop {
    class: StopClass,
    started: Time,
    limits: StopLimits,
    profile: StopProfile,
}

impl Stop {
    /// A stop of `class` beginning at `now` with the car at `speed_mps`.
    pub fn begin(class: StopClass, speed_mps: f64, limits: StopLimits, now: Time) -> Stop {
        Stop {
            class,
            started: now,
            limits,
            profile: StopProfile::new(speed_mps, limits),
        }
    }

    /// The class now.
    pub fn class(&self) -> StopClass {
        self.class
    }

    /// When it began.
    pub fn started(&self) -> Time {
        self.started
    }

    /// Demands `class`; true when that made the stop more severe.
    pub fn escalate(&mut self, class: StopClass) -> bool {
        let before = self.class;
        self.class = before.escalate(class);
        self.class != before
    }

    /// The command at `now`, its speed taken `lead_s` ahead (a command holds until the next
    /// one, so it should already be the speed due then).
    pub fn command(&self, now: Time, lead_s: f64) -> StopCommand {
        match self.class {
            StopClass::Emergency => StopCommand {
                speed_mps: 0.0,
                accel_mps2: 0.0,
                jerk_mps3: 0.0,
            },
            StopClass::Comfortable => {
                let t = now.saturating_since(self.started).as_secs_f64() + lead_s.max(0.0);
                StopCommand {
                    speed_mps: self.profile.speed_at(t),
                    accel_mps2: self.limits.decel_mps2,
                    jerk_mps3: self.limits.jerk_mps3,
                }
            }
        }
    }

    /// True once the profile has run out and the car's measured speed is below
    /// [`STOPPED_BELOW_MPS`].
    pub fn is_over(&self, now: Time, measured_speed_mps: f64) -> bool {
        let profile_done = self.class == StopClass::Emergency
            || now.saturating_since(self.started).as_secs_f64() >= self.profile.time_to_rest();
        profile_done && measured_speed_mps.abs() < STOPPED_BELOW_MPS
    }
}

/// One sample of a car stopping: time (s), distance from the path (m), forward speed (m/s).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StopSample {
    /// Time, s (any origin).
    pub t: f64,
    /// Position.
    pub position: crate::geometry::Point,
    /// Signed distance from the path, m.
    pub cross_track_m: f64,
    /// Forward speed, m/s.
    pub speed_mps: f64,
}

/// What a stop did to the car, from samples taken from the moment it began.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StopFigures {
    /// From the first sample to the first below [`STOPPED_BELOW_MPS`], s (NaN: not at
    /// rest within the samples).
    pub time_to_rest_s: f64,
    /// Distance driven until then, m.
    pub distance_m: f64,
    /// Largest deceleration over [`StopFigures::WINDOW_S`] windows, m/s².
    pub peak_decel_mps2: f64,
    /// Largest change of that deceleration per second, over the same windows, m/s³.
    pub peak_jerk_mps3: f64,
    /// Largest |cross-track error| until at rest, m.
    pub max_deviation_m: f64,
}

impl StopFigures {
    /// Accelerations are taken over this long (a 20 Hz command staircase and a fine
    /// physics step would otherwise read as jerk), s.
    pub const WINDOW_S: f64 = 0.1;

    /// The figures of `samples` (time-ordered, from the start of the stop).
    pub fn measure(samples: &[StopSample]) -> StopFigures {
        let rest = samples
            .iter()
            .position(|s| s.speed_mps.abs() < STOPPED_BELOW_MPS);
        let until = rest.map_or(samples.len(), |i| i + 1);
        let used = &samples[..until];
        let distance_m = used
            .windows(2)
            .map(|w| w[0].position.distance(w[1].position))
            .sum();
        // The speed `WINDOW_S` before sample `i`, interpolated.
        let speed_before = |i: usize| -> Option<(f64, f64)> {
            let t = used[i].t - Self::WINDOW_S;
            let j = used[..=i].iter().rposition(|s| s.t <= t + 1e-9)?;
            Some((used[j].t, used[j].speed_mps))
        };
        let accels: Vec<(f64, f64)> = (0..used.len())
            .filter_map(|i| {
                let (t0, v0) = speed_before(i)?;
                let dt = used[i].t - t0;
                (dt > 0.0).then(|| (used[i].t, (used[i].speed_mps - v0) / dt))
            })
            .collect();
        let peak_decel_mps2 = accels.iter().map(|a| -a.1).fold(0.0, f64::max);
        let peak_jerk_mps3 = accels
            .iter()
            .enumerate()
            .filter_map(|(i, &(t, a))| {
                let j = accels[..=i]
                    .iter()
                    .rposition(|b| b.0 <= t - Self::WINDOW_S + 1e-9)?;
                Some(((a - accels[j].1) / (t - accels[j].0)).abs())
            })
            .fold(0.0, f64::max);
        StopFigures {
            time_to_rest_s: rest.map_or(f64::NAN, |i| samples[i].t - samples[0].t),
            distance_m,
            peak_decel_mps2,
            peak_jerk_mps3,
            max_deviation_m: used
                .iter()
                .map(|s| s.cross_track_m.abs())
                .fold(0.0, f64::max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field;

    const C: StopLimits = StopLimits::COMFORTABLE;

    #[test]
    fn from_cruise_it_ramps_holds_and_ramps() {
        let p = StopProfile::new(5.5, C);
        // 5/3 s up to 1 m/s², 23/6 s at it, 5/3 s down.
        assert!((p.time_to_rest() - (10.0 / 3.0 + 23.0 / 6.0)).abs() < 1e-12);
        assert_eq!(p.peak_decel(), 1.0);
        assert_eq!(p.speed_at(0.0), 5.5);
        assert_eq!(p.speed_at(p.time_to_rest()), 0.0);
        assert_eq!(p.speed_at(100.0), 0.0);
        assert!((p.accel_at(3.0) + 1.0).abs() < 1e-12);
    }

    #[test]
    fn deceleration_and_jerk_stay_within_limits_and_speed_never_rises() {
        for v0 in [0.3, 1.0, 2.8, 5.5, 8.0] {
            let p = StopProfile::new(v0, C);
            let h = 1e-3;
            let n = (p.time_to_rest() / h).ceil() as usize + 10;
            let mut last_v = v0;
            let mut last_a = 0.0;
            for i in 1..n {
                let t = i as f64 * h;
                let (v, a) = (p.speed_at(t), p.accel_at(t));
                assert!(v <= last_v + 1e-12, "v0 {v0}: speed rose at {t}");
                assert!(a >= -C.decel_mps2 - 1e-12, "v0 {v0}: decel {a}");
                assert!(
                    (a - last_a).abs() / h <= C.jerk_mps3 + 1e-6,
                    "v0 {v0}: jerk at {t}"
                );
                last_v = v;
                last_a = a;
            }
            assert_eq!(last_v, 0.0);
        }
    }

    #[test]
    fn distance_is_the_integral_of_speed() {
        for v0 in [0.5, 2.8, 8.0] {
            let p = StopProfile::new(v0, C);
            let h = 1e-4;
            let n = (p.time_to_rest() / h).ceil() as usize;
            let numeric: f64 = (0..n).map(|i| h * p.speed_at((i as f64 + 0.5) * h)).sum();
            assert!(
                (p.distance() - numeric).abs() < 1e-3,
                "{v0}: {} vs {numeric}",
                p.distance()
            );
        }
        // The symmetric trapezoid of deceleration: d = v0·T/2.
        let p = StopProfile::new(5.5, C);
        assert!((p.distance() - 5.5 * p.time_to_rest() / 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_slow_car_gets_a_triangular_profile() {
        let p = StopProfile::new(1.0, C);
        assert!((p.peak_decel() - 0.6f64.sqrt()).abs() < 1e-12);
        assert!((p.time_to_rest() - 2.0 * 0.6f64.sqrt() / 0.6).abs() < 1e-12);
    }

    #[test]
    fn a_stop_that_starts_at_rest_is_over() {
        let p = StopProfile::new(0.0, C);
        assert_eq!(p.time_to_rest(), 0.0);
        assert_eq!(p.distance(), 0.0);
        assert_eq!(p.speed_at(1.0), 0.0);
        assert_eq!(StopProfile::new(f64::NAN, C).time_to_rest(), 0.0);
    }

    #[test]
    fn the_most_severe_class_wins_and_stops_only_escalate() {
        let policy = StopPolicy::default();
        assert_eq!(policy.class_of(ErrorBits::NONE), None);
        assert_eq!(
            policy.class_of(ErrorBits::BATTERY_LOW),
            Some(StopClass::Comfortable)
        );
        let mut both = ErrorBits::BATTERY_LOW;
        both.set_if(ErrorBits::ESTOP, true);
        assert_eq!(policy.class_of(both), Some(StopClass::Emergency));
        assert_eq!(
            StopClass::Comfortable.escalate(StopClass::Emergency),
            StopClass::Emergency
        );
        assert_eq!(
            StopClass::Emergency.escalate(StopClass::Comfortable),
            StopClass::Emergency
        );
    }

    #[test]
    fn policies_parse_and_bad_ones_say_why() {
        let p = StopPolicy::parse(" ESTOP=emergency , TEMPERATURE_HIGH = emergency").unwrap();
        assert_eq!(
            p.class_of(ErrorBits::TEMPERATURE_HIGH),
            Some(StopClass::Emergency)
        );
        assert_eq!(
            p.class_of(ErrorBits::GPS_LOST),
            Some(StopClass::Comfortable)
        );
        assert_eq!(
            StopPolicy::parse(StopPolicy::DEFAULT_TEXT).unwrap(),
            StopPolicy::default()
        );
        assert_eq!(
            StopPolicy::parse("ESTOP=hard"),
            Err(PolicyError::UnknownClass("hard".into()))
        );
        assert!(matches!(
            StopPolicy::parse("E_STOP=emergency"),
            Err(PolicyError::UnknownBit(..))
        ));
        assert_eq!(
            StopPolicy::parse("ESTOP=emergency,ESTOP=comfortable"),
            Err(PolicyError::Twice("ESTOP".into()))
        );
        assert_eq!(
            StopPolicy::parse("ESTOP"),
            Err(PolicyError::Syntax("ESTOP".into()))
        );
    }

    #[test]
    fn a_comfortable_stop_escalates_to_an_emergency_and_never_back() {
        let t0 = Time::from_secs_f64(10.0);
        let at = |s: f64| Time::from_secs_f64(10.0 + s);
        let mut stop = Stop::begin(StopClass::Comfortable, 5.5, C, t0);
        let c = stop.command(at(1.0), 0.05);
        assert!(c.speed_mps < 5.5 && c.speed_mps > 5.0, "{c:?}");
        assert_eq!((c.accel_mps2, c.jerk_mps3), (1.0, 0.6));
        assert!(!stop.is_over(at(1.0), 5.0));
        assert!(stop.escalate(StopClass::Emergency));
        assert_eq!(stop.command(at(1.1), 0.05).speed_mps, 0.0);
        assert_eq!(stop.command(at(1.1), 0.05).accel_mps2, 0.0);
        assert!(!stop.escalate(StopClass::Comfortable));
        assert_eq!(stop.class(), StopClass::Emergency);
        assert!(stop.is_over(at(2.0), 0.0));
    }

    #[test]
    fn a_comfortable_stop_is_over_when_its_profile_is_and_the_car_stands() {
        let t0 = Time::from_secs_f64(10.0);
        let stop = Stop::begin(StopClass::Comfortable, 2.8, C, t0);
        let end = StopProfile::new(2.8, C).time_to_rest();
        let at = |s: f64| Time::from_secs_f64(10.0 + s);
        assert!(!stop.is_over(at(end - 0.1), 0.0));
        assert!(!stop.is_over(at(end + 0.1), 0.2));
        assert!(stop.is_over(at(end + 0.1), 0.005));
        assert_eq!(stop.command(at(end), 0.0).speed_mps, 0.0);
    }

    #[test]
    fn figures_of_a_sampled_profile_are_its_own() {
        let p = StopProfile::new(5.5, C);
        let samples: Vec<StopSample> = (0..=1000)
            .map(|i| i as f64 * 0.02)
            .map(|t| StopSample {
                t: 3.0 + t,
                position: crate::geometry::Point::new(p.distance_at(t), 0.0),
                cross_track_m: if t < 1.0 { 0.01 } else { -0.03 },
                speed_mps: p.speed_at(t),
            })
            .collect();
        let f = StopFigures::measure(&samples);
        // At rest at the first sample below 1 cm/s, just before the profile's end.
        assert!(
            (f.time_to_rest_s - p.time_to_rest()).abs() < 0.2,
            "{}",
            f.time_to_rest_s
        );
        assert!(
            (f.distance_m - p.distance()).abs() < 0.01,
            "{}",
            f.distance_m
        );
        assert!(
            (f.peak_decel_mps2 - 1.0).abs() < 1e-6,
            "{}",
            f.peak_decel_mps2
        );
        assert!(
            f.peak_jerk_mps3 <= 0.6 + 1e-6 && f.peak_jerk_mps3 > 0.5,
            "{}",
            f.peak_jerk_mps3
        );
        assert_eq!(f.max_deviation_m, 0.03);
    }

    #[test]
    fn a_car_that_never_stops_has_no_time_to_rest() {
        let samples: Vec<StopSample> = (0..10)
            .map(|i| StopSample {
                t: i as f64 * 0.1,
                position: crate::geometry::Point::new(i as f64, 0.0),
                cross_track_m: 0.0,
                speed_mps: 2.0,
            })
            .collect();
        let f = StopFigures::measure(&samples);
        assert!(f.time_to_rest_s.is_nan());
        assert_eq!(f.peak_decel_mps2, 0.0);
        assert!((f.distance_m - 9.0).abs() < 1e-12);
    }

    #[test]
    fn bad_limits_are_named() {
        let bad = StopLimits {
            decel_mps2: -1.0,
            ..C
        };
        assert_eq!(
            bad.validate().unwrap_err().field,
            field!(StopLimits.decel_mps2)
        );
        assert_eq!(C.validate(), Ok(()));
    }
}
