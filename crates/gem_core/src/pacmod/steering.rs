//! The GEM e2's steering relation: front-wheel angle ↔ steering-wheel angle.
//!
//! The controllers command the front-wheel angle (`AckermannDrive.steering_angle`, rad,
//! positive to the left); the PACMod 2 turns the steering wheel (`PositionWithSpeed`,
//! rad, positive to the left). The GEM e2's public vehicle code relates the two, for a
//! front-wheel angle `f` in degrees, by the fit
//!
//! `SW° = −0.1084·f² + 21.775·f`,  `|f| ≤ 35°`.
//!
//! The fit describes one side; the steering is symmetric, so it is applied as an odd
//! function, `SW(f) = sign(f)·(−0.1084·f² + 21.775·|f|)`. Within ±35° it is strictly
//! increasing (the parabola's vertex is at `f = 21.775 / (2·0.1084) ≈ 100°`), so the
//! inverse is the smaller root of the quadratic, written in the form that does not
//! subtract two nearly equal numbers near zero:
//!
//! `|f| = 2·|SW| / (21.775 + √(21.775² − 4·0.1084·|SW|))`.
//!
//! At the 35° limit the steering wheel is at 629.3° (10.98 rad). Angles beyond the
//! limit, and NaN or infinite ones, are refused rather than clamped: a command outside
//! the fit's range is a bug upstream, and a report outside it says the relation no longer
//! describes the car.
//!
//! Not handled: the left/right wheel difference of Ackermann geometry (the angle is that
//! of a virtual wheel at the middle of the front axle, as `AckermannDrive` defines it),
//! and play or backlash in the column.

use thiserror::Error;

/// The fit's quadratic coefficient, steering-wheel degrees per front-wheel degree².
pub const QUADRATIC_DEG: f64 = -0.1084;
/// The fit's linear coefficient, steering-wheel degrees per front-wheel degree.
pub const LINEAR: f64 = 21.775;
/// The largest front-wheel angle the fit covers, either side, degrees.
pub const MAX_FRONT_WHEEL_DEG: f64 = 35.0;
/// The steering wheel's rate limit sent with every steering command
/// (`PositionWithSpeed.angular_velocity_limit`), rad/s of the steering wheel. Public GEM
/// e2 scripts use 2 to 4 rad/s; 3.5 rad/s turns the front wheels about 9° per second
/// near the centre, enough for the track's bends at the nominal speed. A placeholder to
/// confirm on the car.
pub const STEERING_WHEEL_RATE_LIMIT_RAD_S: f64 = 3.5;

/// Why an angle is refused.
#[derive(Clone, Copy, Debug, Error, PartialEq)]
pub enum SteeringError {
    /// NaN or infinite.
    #[error("{what} {value} rad is not a finite number")]
    NotFinite {
        /// Which angle (`front-wheel angle`, `steering-wheel angle`).
        what: &'static str,
        /// The value, rad.
        value: f64,
    },
    /// Beyond the relation's range.
    #[error("{what} {value_deg:.2}° is beyond the steering limit of ±{limit_deg:.2}°")]
    OutOfRange {
        /// Which angle.
        what: &'static str,
        /// The value, degrees.
        value_deg: f64,
        /// The limit, degrees.
        limit_deg: f64,
    },
}

const FRONT: &str = "front-wheel angle";
const WHEEL: &str = "steering-wheel angle";

/// The largest front-wheel angle, either side, rad.
pub fn max_front_wheel_rad() -> f64 {
    MAX_FRONT_WHEEL_DEG.to_radians()
}

/// The steering-wheel angle at the largest front-wheel angle, either side, rad.
pub fn max_steering_wheel_rad() -> f64 {
    wheel_deg(MAX_FRONT_WHEEL_DEG).to_radians()
}

/// The steering-wheel angle for a front-wheel angle, both rad, positive to the left.
pub fn steering_wheel_from_front_wheel(front_rad: f64) -> Result<f64, SteeringError> {
    let f_deg = checked(FRONT, front_rad, max_front_wheel_rad())?.to_degrees();
    Ok(f_deg.signum() * wheel_deg(f_deg.abs()).to_radians())
}

/// The front-wheel angle for a steering-wheel angle, both rad, positive to the left.
pub fn front_wheel_from_steering_wheel(wheel_rad: f64) -> Result<f64, SteeringError> {
    let sw_deg = checked(WHEEL, wheel_rad, max_steering_wheel_rad())?.to_degrees();
    let disc = LINEAR * LINEAR + 4.0 * QUADRATIC_DEG * sw_deg.abs();
    let f_deg = 2.0 * sw_deg.abs() / (LINEAR + disc.sqrt());
    Ok(sw_deg.signum() * f_deg.to_radians())
}

/// The fit for `f_deg ≥ 0`, steering-wheel degrees.
fn wheel_deg(f_deg: f64) -> f64 {
    QUADRATIC_DEG * f_deg * f_deg + LINEAR * f_deg
}

/// `value` if finite and within ±`limit` (with a margin of rounding), else the error.
fn checked(what: &'static str, value: f64, limit: f64) -> Result<f64, SteeringError> {
    if !value.is_finite() {
        return Err(SteeringError::NotFinite { what, value });
    }
    // One part in 10¹² absorbs the rounding of a round trip at the limit itself.
    if value.abs() > limit * (1.0 + 1e-12) {
        return Err(SteeringError::OutOfRange {
            what,
            value_deg: value.to_degrees(),
            limit_deg: limit.to_degrees(),
        });
    }
    Ok(value.clamp(-limit, limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sw_deg(front_deg: f64) -> f64 {
        steering_wheel_from_front_wheel(front_deg.to_radians())
            .unwrap()
            .to_degrees()
    }

    #[test]
    fn known_values_follow_the_fit() {
        // −0.1084·10² + 21.775·10 = −10.84 + 217.75
        assert!((sw_deg(10.0) - 206.91).abs() < 1e-9);
        // −0.1084·35² + 21.775·35 = −132.79 + 762.125
        assert!((sw_deg(35.0) - 629.335).abs() < 1e-9);
        assert!((max_steering_wheel_rad().to_degrees() - 629.335).abs() < 1e-9);
        assert_eq!(sw_deg(0.0), 0.0);
    }

    #[test]
    fn the_relation_is_odd() {
        for f in [0.5, 7.0, 20.0, 35.0] {
            assert_eq!(sw_deg(-f), -sw_deg(f));
        }
        // −(−0.1084·20² + 21.775·20) = −(−43.36 + 435.5)
        assert!((sw_deg(-20.0) + 392.14).abs() < 1e-9);
    }

    #[test]
    fn round_trip_recovers_the_front_wheel_angle() {
        for i in -350..=350 {
            let f = (i as f64 * 0.1).to_radians();
            let back = front_wheel_from_steering_wheel(steering_wheel_from_front_wheel(f).unwrap())
                .unwrap();
            assert!((back - f).abs() < 1e-12, "{f} -> {back}");
        }
    }

    #[test]
    fn the_inverse_of_a_known_value() {
        let f = front_wheel_from_steering_wheel(206.91_f64.to_radians()).unwrap();
        assert!((f.to_degrees() - 10.0).abs() < 1e-9);
        let f = front_wheel_from_steering_wheel(-629.335_f64.to_radians()).unwrap();
        assert!((f.to_degrees() + 35.0).abs() < 1e-9);
    }

    #[test]
    fn the_relation_is_strictly_increasing_within_the_limits() {
        let mut prev = f64::NEG_INFINITY;
        for i in -3500..=3500 {
            let sw = sw_deg(i as f64 * 0.01);
            assert!(sw > prev, "not increasing at {}°", i as f64 * 0.01);
            prev = sw;
        }
    }

    #[test]
    fn angles_beyond_the_limits_are_refused() {
        let over = 35.001_f64.to_radians();
        assert!(matches!(
            steering_wheel_from_front_wheel(over),
            Err(SteeringError::OutOfRange { .. })
        ));
        assert!(steering_wheel_from_front_wheel(-over).is_err());
        assert!(steering_wheel_from_front_wheel(max_front_wheel_rad()).is_ok());
        let wheel_over = max_steering_wheel_rad() + 0.01;
        let e = front_wheel_from_steering_wheel(-wheel_over).unwrap_err();
        assert_eq!(
            e.to_string(),
            "steering-wheel angle -629.91° is beyond the steering limit of ±629.34°"
        );
        assert!(front_wheel_from_steering_wheel(max_steering_wheel_rad()).is_ok());
    }

    #[test]
    fn nan_and_infinity_are_refused() {
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(matches!(
                steering_wheel_from_front_wheel(v),
                Err(SteeringError::NotFinite { .. })
            ));
            assert!(matches!(
                front_wheel_from_steering_wheel(v),
                Err(SteeringError::NotFinite { .. })
            ));
        }
    }
}
