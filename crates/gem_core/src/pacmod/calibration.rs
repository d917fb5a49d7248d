//! Calibration runs: the bridge holds a pedal (or a speed) and the steering wheel for a
//! bounded time and distance, so that the pedal maps and the steering relation can be
//! measured through the bridge rather than around it.
//!
//! A run is asked for with a [`RunRequest`] and ends at the first of:
//!
//! - its duration, its distance (integrated from the speed report) or a speed above its
//!   limit ([`RunEnd::Duration`], [`RunEnd::Distance`], [`RunEnd::SpeedLimit`]);
//! - a stop request ([`RunEnd::Stopped`]);
//! - anything that stops the bridge itself: an override, the PACMod disabled, a speed or
//!   steering report lost or unusable, a steering mismatch. Those are the bridge's own
//!   faults, handled as in any other state.
//!
//! After the first four the bridge brakes to rest at its watchdog deceleration, the
//! steering held, and is ready again. A run bounds itself: a collecting program that dies
//! mid-run leaves a run that ends by its own limits, which is why every limit is
//! required and capped ([`MAX_DURATION_S`], [`MAX_DISTANCE_M`]).
//!
//! Plain numbers and explicit time, like the rest of [`super`].

use super::longitudinal::Pedals;
use crate::vehicle::actuator::MAX_STEERING_WHEEL_RATE_RAD_S;
use std::fmt;
use std::time::Duration;
use thiserror::Error;

/// The longest run, s: long enough to reach the top speed on a weak accelerator fraction
/// or to drive a slow full circle, short enough that a forgotten run ends soon.
pub const MAX_DURATION_S: f64 = 60.0;
/// The longest run, m.
pub const MAX_DISTANCE_M: f64 = 300.0;

/// What a run holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Hold {
    /// The accelerator at this fraction, the brake released.
    Accelerator(f64),
    /// The brake at this fraction, the accelerator released.
    Brake(f64),
    /// This speed, m/s, through the bridge's speed loop.
    Speed(f64),
}

impl Hold {
    /// The pedals for this hold, unless it is a speed (the loop chooses those).
    pub fn pedals(self) -> Option<Pedals> {
        match self {
            Hold::Accelerator(f) if f > 0.0 => Some(Pedals::Accelerate(f)),
            Hold::Brake(f) if f > 0.0 => Some(Pedals::Brake(f)),
            Hold::Accelerator(_) | Hold::Brake(_) => Some(Pedals::Coast),
            Hold::Speed(_) => None,
        }
    }
}

impl fmt::Display for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hold::Accelerator(x) => write!(f, "accelerator {x:.3}"),
            Hold::Brake(x) => write!(f, "brake {x:.3}"),
            Hold::Speed(v) => write!(f, "speed {v:.2} m/s"),
        }
    }
}

/// One run, as asked for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunRequest {
    /// The pedal or the speed to hold.
    pub hold: Hold,
    /// The steering wheel to hold, rad, + left (the PACMod's own angle: no relation).
    pub steering_wheel_rad: f64,
    /// The rate limit sent with the steering command, rad/s of steering wheel; `None`:
    /// the bridge's own. An identification drive asks for the fastest the steering wheel
    /// turns, so that the motor, not the command, sets the pace.
    pub steering_rate_rad_s: Option<f64>,
    /// The run ends after this long.
    pub duration: Duration,
    /// The run ends after this distance, m.
    pub distance_m: f64,
    /// The run ends above this speed, m/s.
    pub max_speed_mps: f64,
}

/// Why a run is refused. Each names the field of the request.
#[derive(Clone, Debug, Error, PartialEq)]
pub enum RunError {
    /// `pedal` is none of the known words.
    #[error("pedal \"{0}\" is none of accelerator, brake, speed, stop")]
    UnknownPedal(String),
    /// A number out of its range.
    #[error("{field} {value} is out of range: {limit}")]
    OutOfRange {
        /// The request's field.
        field: &'static str,
        /// Its value.
        value: f64,
        /// The range, in words.
        limit: String,
    },
    /// The bridge cannot run it now.
    #[error("cannot start a calibration run: {0}")]
    NotNow(String),
}

/// What a request asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Request {
    /// Start (or replace the current run with) this run.
    Run(RunRequest),
    /// End the current run now.
    Stop,
}

/// The limits a request is checked against, from the bridge's own configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// The furthest the accelerator may be pressed (the accelerator map's last row).
    pub max_accelerator_frac: f64,
    /// The furthest the brake may be pressed (the brake map's last row).
    pub max_brake_frac: f64,
    /// The bridge's highest speed, m/s.
    pub max_speed_mps: f64,
    /// The steering wheel's range either side, rad.
    pub max_steering_wheel_rad: f64,
}

impl Request {
    /// A request from the service's fields (see `gem_state_msgs/CalibrationRun`), checked
    /// against `limits`.
    #[allow(clippy::too_many_arguments)]
    pub fn parse(
        pedal: &str,
        fraction: f64,
        speed_mps: f64,
        steering_wheel_rad: f64,
        steering_rate_rad_s: f64,
        duration_s: f64,
        distance_m: f64,
        max_speed_mps: f64,
        limits: &Limits,
    ) -> Result<Request, RunError> {
        let range = |field: &'static str, value: f64, lo: f64, hi: f64, open_lo: bool| {
            let ok =
                value.is_finite() && value <= hi && if open_lo { value > lo } else { value >= lo };
            if ok {
                Ok(value)
            } else {
                let bracket = if open_lo { "(" } else { "[" };
                Err(RunError::OutOfRange {
                    field,
                    value,
                    limit: format!("must be within {bracket}{lo}, {hi}]"),
                })
            }
        };
        let hold = match pedal {
            "stop" => return Ok(Request::Stop),
            "accelerator" => Hold::Accelerator(range(
                "fraction",
                fraction,
                0.0,
                limits.max_accelerator_frac,
                false,
            )?),
            "brake" => Hold::Brake(range(
                "fraction",
                fraction,
                0.0,
                limits.max_brake_frac,
                false,
            )?),
            "speed" => Hold::Speed(range(
                "speed_mps",
                speed_mps,
                0.0,
                limits.max_speed_mps,
                true,
            )?),
            other => return Err(RunError::UnknownPedal(other.to_owned())),
        };
        let max_speed_mps = range(
            "max_speed_mps",
            max_speed_mps,
            0.0,
            limits.max_speed_mps,
            true,
        )?;
        if let Hold::Speed(v) = hold {
            if v > max_speed_mps {
                return Err(RunError::OutOfRange {
                    field: "speed_mps",
                    value: v,
                    limit: format!("must not exceed max_speed_mps {max_speed_mps}"),
                });
            }
        }
        let w = limits.max_steering_wheel_rad;
        Ok(Request::Run(RunRequest {
            hold,
            steering_wheel_rad: range("steering_wheel_rad", steering_wheel_rad, -w, w, false)?,
            // 0: the bridge's own rate.
            steering_rate_rad_s: if steering_rate_rad_s == 0.0 {
                None
            } else {
                Some(range(
                    "steering_rate_rad_s",
                    steering_rate_rad_s,
                    0.0,
                    MAX_STEERING_WHEEL_RATE_RAD_S,
                    true,
                )?)
            },
            duration: Duration::from_secs_f64(range(
                "duration_s",
                duration_s,
                0.0,
                MAX_DURATION_S,
                true,
            )?),
            distance_m: range("distance_m", distance_m, 0.0, MAX_DISTANCE_M, true)?,
            max_speed_mps,
        }))
    }
}

/// Why a run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum RunEnd {
    /// Its duration passed.
    Duration,
    /// Its distance was driven.
    Distance,
    /// The car went faster than its limit.
    SpeedLimit,
    /// A stop request, or a new run replacing it.
    Stopped,
    /// A run that only slows the car came to rest.
    AtRest,
    /// The bridge left the run on a fault (override, reports); the text is the fault.
    Fault(String),
}

impl fmt::Display for RunEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunEnd::Duration => f.write_str("duration reached"),
            RunEnd::Distance => f.write_str("distance reached"),
            RunEnd::SpeedLimit => f.write_str("speed limit reached"),
            RunEnd::Stopped => f.write_str("stopped on request"),
            RunEnd::AtRest => f.write_str("at rest"),
            RunEnd::Fault(why) => write!(f, "fault: {why}"),
        }
    }
}

/// A run under way.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// Its number, counted from 1 by the bridge.
    pub id: u32,
    /// What was asked for.
    pub request: RunRequest,
    /// How long it has held.
    pub elapsed: Duration,
    /// How far the car has gone since it started, m.
    pub distance_m: f64,
    /// Why it ended, once it has: the bridge is then braking to rest.
    pub ended: Option<RunEnd>,
    /// Whether the car has moved (above standstill) since the run started.
    pub moved: bool,
}

impl Run {
    /// A run starting now.
    pub fn new(id: u32, request: RunRequest) -> Run {
        Run {
            id,
            request,
            elapsed: Duration::ZERO,
            distance_m: 0.0,
            ended: None,
            moved: false,
        }
    }

    /// Advances the run by `dt` at the reported `speed_mps`; ends it at its first limit.
    /// A run that only slows the car (the brake, or the accelerator released) also ends
    /// once the car comes to rest, below `standstill_mps`; one that starts at rest holds
    /// for its duration (the steering wheel moved with the car held still).
    pub fn step(&mut self, speed_mps: f64, dt: Duration, standstill_mps: f64) {
        if self.ended.is_some() {
            return;
        }
        self.elapsed += dt;
        self.distance_m += speed_mps.max(0.0) * dt.as_secs_f64();
        let r = &self.request;
        let slowing = matches!(r.hold, Hold::Brake(_) | Hold::Accelerator(0.0));
        self.moved |= speed_mps >= standstill_mps;
        self.ended = if speed_mps > r.max_speed_mps {
            Some(RunEnd::SpeedLimit)
        } else if self.distance_m >= r.distance_m {
            Some(RunEnd::Distance)
        } else if self.elapsed >= r.duration {
            Some(RunEnd::Duration)
        } else if slowing && self.moved && speed_mps < standstill_mps {
            Some(RunEnd::AtRest)
        } else {
            None
        };
    }
}

impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "calibration run {}: {}, steering wheel {:.3} rad, {:.1} s, {:.1} m",
            self.id,
            self.request.hold,
            self.request.steering_wheel_rad,
            self.elapsed.as_secs_f64(),
            self.distance_m
        )?;
        match &self.ended {
            None => Ok(()),
            Some(end) => write!(f, "; {end}, braking to rest"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_accelerator_frac: 0.48,
        max_brake_frac: 1.0,
        max_speed_mps: 5.5,
        max_steering_wheel_rad: 10.98,
    };

    fn parse(pedal: &str, fraction: f64) -> Result<Request, RunError> {
        Request::parse(pedal, fraction, 2.0, 0.0, 0.0, 10.0, 50.0, 4.0, &LIMITS)
    }

    fn run(req: Request) -> RunRequest {
        match req {
            Request::Run(r) => r,
            Request::Stop => panic!("a stop"),
        }
    }

    #[test]
    fn a_request_holds_what_it_names() {
        assert_eq!(
            run(parse("accelerator", 0.4).unwrap()).hold,
            Hold::Accelerator(0.4)
        );
        assert_eq!(run(parse("brake", 0.6).unwrap()).hold, Hold::Brake(0.6));
        assert_eq!(run(parse("speed", 0.0).unwrap()).hold, Hold::Speed(2.0));
        assert_eq!(parse("stop", f64::NAN).unwrap(), Request::Stop);
        let r = run(parse("accelerator", 0.3).unwrap());
        assert_eq!(r.duration, Duration::from_secs(10));
        assert_eq!((r.distance_m, r.max_speed_mps), (50.0, 4.0));
    }

    #[test]
    fn bad_requests_name_their_field() {
        let e = parse("clutch", 0.1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "pedal \"clutch\" is none of accelerator, brake, speed, stop"
        );
        // Beyond the accelerator map's last row.
        let e = parse("accelerator", 0.5).unwrap_err();
        assert!(
            e.to_string().starts_with("fraction 0.5 is out of range"),
            "{e}"
        );
        assert!(matches!(
            parse("brake", f64::NAN),
            Err(RunError::OutOfRange {
                field: "fraction",
                ..
            })
        ));
        let bad = [
            (
                "duration_s",
                Request::parse("brake", 0.2, 0.0, 0.0, 0.0, 0.0, 50.0, 4.0, &LIMITS),
            ),
            (
                "duration_s",
                Request::parse("brake", 0.2, 0.0, 0.0, 0.0, 61.0, 50.0, 4.0, &LIMITS),
            ),
            (
                "distance_m",
                Request::parse("brake", 0.2, 0.0, 0.0, 0.0, 5.0, -1.0, 4.0, &LIMITS),
            ),
            (
                "max_speed_mps",
                Request::parse("brake", 0.2, 0.0, 0.0, 0.0, 5.0, 5.0, 6.0, &LIMITS),
            ),
            (
                "steering_wheel_rad",
                Request::parse("brake", 0.2, 0.0, 11.0, 0.0, 5.0, 5.0, 4.0, &LIMITS),
            ),
            (
                "speed_mps",
                Request::parse("speed", 0.0, 4.5, 0.0, 0.0, 5.0, 5.0, 4.0, &LIMITS),
            ),
            (
                "speed_mps",
                Request::parse("speed", 0.0, 0.0, 0.0, 0.0, 5.0, 5.0, 4.0, &LIMITS),
            ),
            (
                "steering_rate_rad_s",
                Request::parse("brake", 0.2, 0.0, 0.0, 7.0, 5.0, 5.0, 4.0, &LIMITS),
            ),
            (
                "steering_rate_rad_s",
                Request::parse("brake", 0.2, 0.0, 0.0, -1.0, 5.0, 5.0, 4.0, &LIMITS),
            ),
            (
                "steering_rate_rad_s",
                Request::parse("brake", 0.2, 0.0, 0.0, f64::NAN, 5.0, 5.0, 4.0, &LIMITS),
            ),
        ];
        for (field, result) in bad {
            match result {
                Err(RunError::OutOfRange { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_run_ends_at_its_first_limit() {
        let req = run(parse("accelerator", 0.4).unwrap());
        let step = Duration::from_millis(100);
        // 50 m at 2 m/s takes 25 s: the 10 s duration comes first.
        let mut r = Run::new(1, req);
        for _ in 0..99 {
            r.step(2.0, step, 0.1);
        }
        assert_eq!(r.ended, None);
        r.step(2.0, step, 0.1);
        assert_eq!(r.ended, Some(RunEnd::Duration));
        // 50 m at 3.9 m/s: 12.8 s, so the distance within 10 s does not; at 6 s: speed.
        let mut r = Run::new(
            2,
            RunRequest {
                duration: Duration::from_secs(60),
                ..req
            },
        );
        while r.ended.is_none() {
            r.step(3.9, step, 0.1);
        }
        assert_eq!(r.ended, Some(RunEnd::Distance));
        assert!((r.distance_m - 50.0).abs() < 0.4);
        let mut r = Run::new(3, req);
        r.step(4.1, step, 0.1);
        assert_eq!(r.ended, Some(RunEnd::SpeedLimit));
        // An ended run does not move on.
        r.step(4.1, step, 0.1);
        assert_eq!(r.elapsed, step);
    }

    #[test]
    fn a_run_that_only_slows_the_car_ends_at_rest() {
        let brake = run(parse("brake", 0.4).unwrap());
        let mut r = Run::new(1, brake);
        r.step(1.0, Duration::from_millis(100), 0.1);
        assert_eq!(r.ended, None);
        r.step(0.05, Duration::from_millis(100), 0.1);
        assert_eq!(r.ended, Some(RunEnd::AtRest));
        // Started at rest, it holds (the steering wheel moved at rest) until its duration.
        let mut r = Run::new(2, brake);
        for _ in 0..99 {
            r.step(0.0, Duration::from_millis(100), 0.1);
        }
        assert_eq!(r.ended, None);
        r.step(0.0, Duration::from_millis(100), 0.1);
        assert_eq!(r.ended, Some(RunEnd::Duration));
        // The accelerator held at a fraction does not: it starts from rest.
        let mut r = Run::new(2, run(parse("accelerator", 0.4).unwrap()));
        r.step(0.0, Duration::from_millis(100), 0.1);
        assert_eq!(r.ended, None);
    }

    #[test]
    fn a_hold_gives_its_pedals() {
        assert_eq!(
            Hold::Accelerator(0.4).pedals(),
            Some(Pedals::Accelerate(0.4))
        );
        assert_eq!(Hold::Brake(0.3).pedals(), Some(Pedals::Brake(0.3)));
        assert_eq!(Hold::Brake(0.0).pedals(), Some(Pedals::Coast));
        assert_eq!(Hold::Speed(1.0).pedals(), None);
    }
}
