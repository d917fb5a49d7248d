//! The GEM e2's steering relation: front-wheel angle ↔ steering-wheel angle.
//!
//! The controllers command the front-wheel angle (`AckermannDrive.steering_angle`, rad,
//! positive to the left); the PACMod 2 turns the steering wheel (`PositionWithSpeed`,
//! rad, positive to the left). A [`SteeringRelation`] relates the two. For a front-wheel
//! angle `f` in degrees:
//!
//! `SW° = q·t·|t| + l·t`,  `t = f − offset`,  `|t| ≤ 35°`,
//!
//! - `t` is the **turn**: how far the front wheels point from where they point with the
//!   steering wheel centred;
//! - `offset` ([`SteeringRelation::offset_deg`]) is the front-wheel angle the car steers
//!   with the steering wheel centred, degrees, positive to the left: a car that pulls
//!   left at `SW = 0` has a positive offset. The car's true front-wheel angle is the
//!   inverse of the relation plus the offset, and the bridge sends the steering wheel for
//!   `f_cmd − offset`;
//! - `q` ([`SteeringRelation::quadratic_deg`]) and `l` ([`SteeringRelation::linear`]) are
//!   the fit's coefficients. The GEM e2's public vehicle code fits one side with
//!   `q = −0.1084`, `l = 21.775` and no offset ([`SteeringRelation::GEM_E2`]).
//!
//! The steering is symmetric about its centre, so the fit is applied as an odd function
//! of the turn. [`SteeringRelation::validate`] accepts only relations that are strictly
//! increasing within ±35° of turn (for the GEM e2's the parabola's vertex is at
//! `t = 21.775 / (2·0.1084) ≈ 100°`), so the inverse is the smaller root of the
//! quadratic, written in the form that does not subtract two nearly equal numbers near
//! zero:
//!
//! `|t| = 2·|SW| / (l + √(l² + 4·q·|SW|))`.
//!
//! **Ranges.** A front-wheel angle beyond ±35° ([`MAX_FRONT_WHEEL_DEG`], the controllers'
//! range), and a NaN or infinite one, is refused rather than clamped: a command outside
//! the range is a bug upstream. The steering wheel's range is the relation's at ±35° of
//! turn (629.3°, 10.98 rad, for the GEM e2); a report beyond it is refused, since it says
//! the relation no longer describes the car. With an offset the car reaches
//! `offset ± 35°`: a command within ±35° but beyond that on the far side turns the
//! steering wheel to the end of its range, the furthest the car steers that way.
//!
//! Not handled: the left/right wheel difference of Ackermann geometry (the angle is that
//! of a virtual wheel at the middle of the front axle, as `AckermannDrive` defines it),
//! and play or backlash in the column.

use crate::config::{check, finite, first_invalid, positive, value, within, ConfigError};
use thiserror::Error;

/// The largest front-wheel angle either side, degrees: the range of front-wheel commands,
/// and of the relation's turn.
pub const MAX_FRONT_WHEEL_DEG: f64 = 35.0;
/// The largest steering offset a relation may have, either side, degrees of front wheel.
/// A car steering further than this with the steering wheel centred needs its steering
/// linkage adjusted, not a calibration, and a fit beyond it is a bad fit.
pub const MAX_OFFSET_DEG: f64 = 5.0;
/// The steering wheel's rate limit sent with every steering command
/// (`PositionWithSpeed.angular_velocity_limit`), rad/s of the steering wheel. Public GEM
/// e2 scripts use 2 to 4 rad/s; 3.5 rad/s turns the front wheels about 9° per second
/// near the centre, enough for the track's bends at the nominal speed. A placeholder to
/// confirm on the car.
pub const STEERING_WHEEL_RATE_LIMIT_RAD_S: f64 = 3.5;

/// The steering relation (see the module documentation). `Default`:
/// [`SteeringRelation::GEM_E2`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SteeringRelation {
    /// The fit's quadratic coefficient `q`, steering-wheel degrees per (front-wheel
    /// degree)² of turn. −0.1084.
    pub quadratic_deg: f64,
    /// The fit's linear coefficient `l`, steering-wheel degrees per front-wheel degree of
    /// turn; the steering ratio at the centre. 21.775.
    pub linear: f64,
    /// The front-wheel angle the car steers with the steering wheel centred, degrees,
    /// positive to the left. 0.
    pub offset_deg: f64,
}

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

impl SteeringRelation {
    /// The GEM e2's relation from its public vehicle code, with no offset: the one home of
    /// the shipped values.
    pub const GEM_E2: SteeringRelation = SteeringRelation {
        quadratic_deg: -0.1084,
        linear: 21.775,
        offset_deg: 0.0,
    };

    /// Checks the relation: every value finite, `linear` > 0, the relation strictly
    /// increasing within ±35° of turn (`linear + 2·35·quadratic_deg` > 0), the offset
    /// within ±[`MAX_OFFSET_DEG`]. The error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let rises = self.linear + 2.0 * MAX_FRONT_WHEEL_DEG * self.quadratic_deg > 0.0;
        first_invalid([
            positive(value!(self, SteeringRelation.linear)),
            finite(value!(self, SteeringRelation.quadratic_deg)),
            check(
                value!(self, SteeringRelation.quadratic_deg),
                rises,
                "must be > -linear/70: the steering wheel must turn further for every larger front-wheel angle up to 35°",
            ),
            within(
                value!(self, SteeringRelation.offset_deg),
                -MAX_OFFSET_DEG,
                MAX_OFFSET_DEG,
            ),
        ])
    }

    /// The steering-wheel angle for a turn of the front wheels (`f − offset`), both
    /// degrees; odd in the turn. Unchecked: the caller keeps the turn within range.
    pub fn wheel_deg(&self, turn_deg: f64) -> f64 {
        turn_deg.signum()
            * (self.quadratic_deg * turn_deg * turn_deg + self.linear * turn_deg.abs())
    }

    /// The turn of the front wheels (`f − offset`) for a steering-wheel angle, both
    /// degrees; the inverse of [`Self::wheel_deg`]. Unchecked: NaN where the relation has
    /// no inverse (beyond its vertex).
    pub fn turn_deg(&self, wheel_deg: f64) -> f64 {
        let disc = self.linear * self.linear + 4.0 * self.quadratic_deg * wheel_deg.abs();
        wheel_deg.signum() * 2.0 * wheel_deg.abs() / (self.linear + disc.sqrt())
    }

    /// The steering wheel's range either side, rad: the relation at ±35° of turn.
    pub fn max_steering_wheel_rad(&self) -> f64 {
        self.wheel_deg(MAX_FRONT_WHEEL_DEG).to_radians()
    }

    /// The steering-wheel angle for a front-wheel angle, both rad, positive to the left:
    /// the relation at `front − offset`, within the steering wheel's range (module
    /// documentation). A front-wheel angle beyond ±35° is refused.
    pub fn steering_wheel_from_front_wheel(&self, front_rad: f64) -> Result<f64, SteeringError> {
        let f_deg = checked(FRONT, front_rad, max_front_wheel_rad())?.to_degrees();
        let turn = (f_deg - self.offset_deg).clamp(-MAX_FRONT_WHEEL_DEG, MAX_FRONT_WHEEL_DEG);
        Ok(self.wheel_deg(turn).to_radians())
    }

    /// The front-wheel angle for a steering-wheel angle, both rad, positive to the left:
    /// the inverse of the relation plus the offset. A steering wheel beyond its range is
    /// refused.
    pub fn front_wheel_from_steering_wheel(&self, wheel_rad: f64) -> Result<f64, SteeringError> {
        let sw_deg = checked(WHEEL, wheel_rad, self.max_steering_wheel_rad())?.to_degrees();
        Ok((self.turn_deg(sw_deg) + self.offset_deg).to_radians())
    }
}

impl Default for SteeringRelation {
    fn default() -> Self {
        SteeringRelation::GEM_E2
    }
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

    const GEM: SteeringRelation = SteeringRelation::GEM_E2;

    fn sw_deg_of(r: &SteeringRelation, front_deg: f64) -> f64 {
        r.steering_wheel_from_front_wheel(front_deg.to_radians())
            .unwrap()
            .to_degrees()
    }

    fn sw_deg(front_deg: f64) -> f64 {
        sw_deg_of(&GEM, front_deg)
    }

    fn with_offset(offset_deg: f64) -> SteeringRelation {
        SteeringRelation { offset_deg, ..GEM }
    }

    #[test]
    fn known_values_follow_the_fit() {
        // −0.1084·10² + 21.775·10 = −10.84 + 217.75
        assert!((sw_deg(10.0) - 206.91).abs() < 1e-9);
        // −0.1084·35² + 21.775·35 = −132.79 + 762.125
        assert!((sw_deg(35.0) - 629.335).abs() < 1e-9);
        assert!((GEM.max_steering_wheel_rad().to_degrees() - 629.335).abs() < 1e-9);
        assert_eq!(sw_deg(0.0), 0.0);
        assert_eq!(SteeringRelation::default(), GEM);
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
        for r in [GEM, with_offset(1.5), with_offset(-4.0)] {
            for i in -350..=350 {
                let f = (i as f64 * 0.1).to_radians();
                if (f.to_degrees() - r.offset_deg).abs() > MAX_FRONT_WHEEL_DEG {
                    continue;
                }
                let sw = r.steering_wheel_from_front_wheel(f).unwrap();
                let back = r.front_wheel_from_steering_wheel(sw).unwrap();
                assert!((back - f).abs() < 1e-12, "{r:?}: {f} -> {back}");
            }
        }
    }

    #[test]
    fn the_inverse_of_a_known_value() {
        let f = GEM
            .front_wheel_from_steering_wheel(206.91_f64.to_radians())
            .unwrap();
        assert!((f.to_degrees() - 10.0).abs() < 1e-9);
        let f = GEM
            .front_wheel_from_steering_wheel(-629.335_f64.to_radians())
            .unwrap();
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
            GEM.steering_wheel_from_front_wheel(over),
            Err(SteeringError::OutOfRange { .. })
        ));
        assert!(GEM.steering_wheel_from_front_wheel(-over).is_err());
        assert!(GEM
            .steering_wheel_from_front_wheel(max_front_wheel_rad())
            .is_ok());
        let wheel_over = GEM.max_steering_wheel_rad() + 0.01;
        let e = GEM
            .front_wheel_from_steering_wheel(-wheel_over)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "steering-wheel angle -629.91° is beyond the steering limit of ±629.34°"
        );
        assert!(GEM
            .front_wheel_from_steering_wheel(GEM.max_steering_wheel_rad())
            .is_ok());
        // The offset moves neither range.
        let r = with_offset(2.0);
        assert!(r.steering_wheel_from_front_wheel(-over).is_err());
        assert_eq!(r.max_steering_wheel_rad(), GEM.max_steering_wheel_rad());
    }

    #[test]
    fn nan_and_infinity_are_refused() {
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(matches!(
                GEM.steering_wheel_from_front_wheel(v),
                Err(SteeringError::NotFinite { .. })
            ));
            assert!(matches!(
                GEM.front_wheel_from_steering_wheel(v),
                Err(SteeringError::NotFinite { .. })
            ));
        }
    }

    /// A car steering 1.5° left with the steering wheel centred: the bridge sends the
    /// steering wheel for 1.5° less, and a centred steering wheel is 1.5° of front wheel.
    #[test]
    fn the_offset_shifts_the_front_wheel_angle() {
        let r = with_offset(1.5);
        assert!(sw_deg_of(&r, 1.5).abs() < 1e-12);
        assert!((sw_deg_of(&r, 11.5) - 206.91).abs() < 1e-9);
        assert!((sw_deg_of(&r, -8.5) + 206.91).abs() < 1e-9);
        let centred = r.front_wheel_from_steering_wheel(0.0).unwrap();
        assert!((centred.to_degrees() - 1.5).abs() < 1e-12);
        let f = r
            .front_wheel_from_steering_wheel(-629.335_f64.to_radians())
            .unwrap();
        assert!((f.to_degrees() + 33.5).abs() < 1e-9);
    }

    /// With an offset of +2°, −35° is a turn of −37°: the steering wheel goes to the end
    /// of its range, the furthest the car steers right (−33°).
    #[test]
    fn beyond_the_offset_relation_the_steering_wheel_stops_at_its_range() {
        let r = with_offset(2.0);
        let sw = r
            .steering_wheel_from_front_wheel(-max_front_wheel_rad())
            .unwrap();
        assert_eq!(sw, -r.max_steering_wheel_rad());
        let f = r.front_wheel_from_steering_wheel(sw).unwrap().to_degrees();
        assert!((f + 33.0).abs() < 1e-9, "{f}");
        // Left, the full 35° is within reach.
        assert!((sw_deg_of(&r, 35.0) - GEM.wheel_deg(33.0)).abs() < 1e-9);
    }

    #[test]
    fn the_shipped_relation_is_valid() {
        assert_eq!(GEM.validate(), Ok(()));
        assert_eq!(with_offset(-5.0).validate(), Ok(()));
    }

    #[test]
    fn a_bad_relation_is_refused_naming_the_field() {
        let field = |r: SteeringRelation| r.validate().unwrap_err().field;
        for linear in [0.0, -21.775, f64::NAN, f64::INFINITY] {
            let r = SteeringRelation { linear, ..GEM };
            assert_eq!(field(r), crate::field!(SteeringRelation.linear), "{linear}");
        }
        let offset = SteeringRelation {
            offset_deg: 5.5,
            ..GEM
        };
        assert_eq!(field(offset), crate::field!(SteeringRelation.offset_deg));
        assert_eq!(
            offset.validate().unwrap_err().to_string(),
            "offset_deg = 5.5 is invalid: must be within -5..5"
        );
        let nan = SteeringRelation {
            offset_deg: f64::NAN,
            ..GEM
        };
        assert_eq!(field(nan), crate::field!(SteeringRelation.offset_deg));
        // The vertex at 21.775 / 0.62 ≈ 35.1°: still rising at 35°. At 0.32 it is at 34°.
        let steep = SteeringRelation {
            quadratic_deg: -0.31,
            ..GEM
        };
        assert_eq!(steep.validate(), Ok(()));
        let folding = SteeringRelation {
            quadratic_deg: -0.32,
            ..GEM
        };
        assert_eq!(
            field(folding),
            crate::field!(SteeringRelation.quadratic_deg)
        );
        let nan = SteeringRelation {
            quadratic_deg: f64::NAN,
            ..GEM
        };
        assert_eq!(field(nan), crate::field!(SteeringRelation.quadratic_deg));
        // A convex relation rises everywhere.
        let convex = SteeringRelation {
            quadratic_deg: 0.05,
            ..GEM
        };
        assert_eq!(convex.validate(), Ok(()));
    }
}
