//! The rear axle's pose from a GNSS/INS fix: the fix projected into the local frame
//! around a configured origin ([`super::geodesy`]), then moved from the antenna back to
//! the rear-axle centre, the reference point of the suite's poses (docs/spec.md §4):
//!
//! `x = east − d·cos ψ`, `y = north − d·sin ψ`,
//!
//! with `ψ` the yaw in the local frame and `d` how far the antenna sits ahead of the rear
//! axle on the car's centre line (0.46 m on the GEM e2 of the public vehicle code).
//!
//! The pose is planar: the fix is projected at the origin's height, so the height, the
//! noisiest axis of a GNSS fix, never moves it (a fix 100 m above the origin's height,
//! 1 km away, would otherwise move by 1.6 cm). The origin defaults to the one the public
//! GEM e2 code uses on its test track (40.0928563° N, 88.2359994° W); it has no meaning
//! elsewhere, so an origin that is unset or not a number is refused at start-up, naming
//! the field.
//!
//! Not handled: an antenna off the centre line or above a tilted car (roll and pitch
//! are ignored; on a 5 % slope a 1.5 m mast leans 7.5 cm).

use super::geodesy::{GeodesyError, Geodetic, LocalFrame};
use crate::config::{finite, first_invalid, within, ConfigError, Field};
use crate::field;
use crate::geometry::Pose;

/// Where the local frame is and where the antenna sits. `Default`: the GEM e2 on its
/// test track.
#[derive(Clone, Debug, PartialEq)]
pub struct InsPoseConfig {
    /// The frame origin's latitude, degrees north (`None`: not set).
    pub origin_lat_deg: Option<f64>,
    /// The frame origin's longitude, degrees east (`None`: not set).
    pub origin_lon_deg: Option<f64>,
    /// The frame origin's height above the ellipsoid, m.
    pub origin_alt_m: f64,
    /// How far the antenna (the INS's output point) sits ahead of the rear axle, m.
    pub antenna_ahead_m: f64,
}

impl InsPoseConfig {
    /// The defaults, readable in `const` context.
    pub const DEFAULT: InsPoseConfig = InsPoseConfig {
        origin_lat_deg: Some(40.092_856_3),
        origin_lon_deg: Some(-88.235_999_4),
        origin_alt_m: 0.0,
        antenna_ahead_m: 0.46,
    };

    /// Checks every field; the error names it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.origin().map(|_| ())
    }

    /// The origin, checked.
    fn origin(&self) -> Result<Geodetic, ConfigError> {
        let lat = set(field!(InsPoseConfig.origin_lat_deg), self.origin_lat_deg)?;
        let lon = set(field!(InsPoseConfig.origin_lon_deg), self.origin_lon_deg)?;
        let angles = [
            (field!(InsPoseConfig.origin_lat_deg), lat, 90.0),
            (field!(InsPoseConfig.origin_lon_deg), lon, 180.0),
        ];
        first_invalid(angles.map(|(f, v, limit)| within((f, v), -limit, limit)))?;
        first_invalid([
            finite((field!(InsPoseConfig.origin_alt_m), self.origin_alt_m)),
            finite((field!(InsPoseConfig.antenna_ahead_m), self.antenna_ahead_m)),
        ])?;
        Ok(Geodetic {
            lat_deg: lat,
            lon_deg: lon,
            alt_m: self.origin_alt_m,
        })
    }
}

impl Default for InsPoseConfig {
    fn default() -> Self {
        InsPoseConfig::DEFAULT
    }
}

/// The value of an optional field, or the error naming it.
fn set(field: Field, value: Option<f64>) -> Result<f64, ConfigError> {
    value.ok_or_else(|| ConfigError::new(field, "unset", "must be set"))
}

/// An INS fix: where the antenna is and where the car points.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InsFix {
    /// Latitude, degrees north.
    pub lat_deg: f64,
    /// Longitude, degrees east.
    pub lon_deg: f64,
    /// Heading, degrees clockwise from north (`Inspva.azimuth`).
    pub azimuth_deg: f64,
}

/// The local frame and the antenna offset, ready to turn fixes into rear-axle poses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InsPose {
    frame: LocalFrame,
    antenna_ahead_m: f64,
}

impl InsPose {
    /// From a configuration; refused, naming the field, if it is invalid.
    pub fn new(cfg: &InsPoseConfig) -> Result<Self, ConfigError> {
        let origin = cfg.origin()?;
        let frame = LocalFrame::new(origin).map_err(|e| {
            // Unreachable after origin(): the same ranges. Kept as an error, not a panic.
            ConfigError::new(
                field!(InsPoseConfig.origin_lat_deg),
                e,
                "a valid WGS84 origin",
            )
        })?;
        Ok(InsPose {
            frame,
            antenna_ahead_m: cfg.antenna_ahead_m,
        })
    }

    /// The local frame.
    pub fn frame(&self) -> &LocalFrame {
        &self.frame
    }

    /// How far the antenna sits ahead of the rear axle, m.
    pub fn antenna_ahead_m(&self) -> f64 {
        self.antenna_ahead_m
    }

    /// The rear axle's pose for `fix`: x east, y north (m), yaw counter-clockwise from
    /// east (rad).
    pub fn rear_axle(&self, fix: InsFix) -> Result<Pose, GeodesyError> {
        let at = Geodetic {
            lat_deg: fix.lat_deg,
            lon_deg: fix.lon_deg,
            alt_m: self.frame.origin().alt_m,
        };
        let antenna = self.frame.to_enu(at)?;
        let yaw = self.frame.yaw(at, fix.azimuth_deg)?;
        let d = self.antenna_ahead_m;
        Ok(Pose::new(
            antenna.east_m - d * yaw.cos(),
            antenna.north_m - d * yaw.sin(),
            yaw,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    fn ins() -> InsPose {
        InsPose::new(&InsPoseConfig::DEFAULT).unwrap()
    }

    fn at_origin(azimuth_deg: f64) -> InsFix {
        InsFix {
            lat_deg: 40.092_856_3,
            lon_deg: -88.235_999_4,
            azimuth_deg,
        }
    }

    fn close(p: Pose, x: f64, y: f64, yaw: f64) -> bool {
        (p.x - x).abs() < 1e-9 && (p.y - y).abs() < 1e-9 && (p.yaw - yaw).abs() < 1e-12
    }

    #[test]
    fn facing_east_at_the_origin_the_rear_axle_is_behind_to_the_west() {
        let p = ins().rear_axle(at_origin(90.0)).unwrap();
        assert!(close(p, -0.46, 0.0, 0.0), "{p:?}");
    }

    #[test]
    fn facing_north_at_the_origin_the_rear_axle_is_behind_to_the_south() {
        let p = ins().rear_axle(at_origin(0.0)).unwrap();
        assert!(close(p, 0.0, -0.46, PI / 2.0), "{p:?}");
    }

    #[test]
    fn facing_south_west_the_offset_follows_the_heading() {
        let p = ins().rear_axle(at_origin(225.0)).unwrap();
        let back = 0.46 / 2f64.sqrt();
        assert!(close(p, back, back, -3.0 * PI / 4.0), "{p:?}");
    }

    #[test]
    fn a_fix_away_from_the_origin_projects_into_the_frame() {
        let far = InsFix {
            lat_deg: 40.092_856_3 + 0.009,
            ..at_origin(90.0)
        };
        let p = ins().rear_axle(far).unwrap();
        let antenna = ins()
            .frame()
            .to_enu(Geodetic::surface(far.lat_deg, far.lon_deg))
            .unwrap();
        assert!((p.x - (antenna.east_m - 0.46)).abs() < 1e-6, "{p:?}");
        assert!((p.y - antenna.north_m).abs() < 1e-3 && p.y > 999.0, "{p:?}");
    }

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(InsPoseConfig::DEFAULT.validate(), Ok(()));
    }

    #[test]
    fn an_unset_origin_is_refused_naming_the_field() {
        let c = InsPoseConfig {
            origin_lat_deg: None,
            ..InsPoseConfig::DEFAULT
        };
        let e = c.validate().unwrap_err();
        assert_eq!(e.field, field!(InsPoseConfig.origin_lat_deg));
        assert_eq!(
            e.to_string(),
            "origin_lat_deg = unset is invalid: must be set"
        );
        let c = InsPoseConfig {
            origin_lon_deg: None,
            ..InsPoseConfig::DEFAULT
        };
        assert_eq!(
            InsPose::new(&c).unwrap_err().field,
            field!(InsPoseConfig.origin_lon_deg)
        );
    }

    #[test]
    fn a_nan_or_out_of_range_origin_is_refused_naming_the_field() {
        let c = InsPoseConfig {
            origin_lon_deg: Some(f64::NAN),
            ..InsPoseConfig::DEFAULT
        };
        let e = c.validate().unwrap_err();
        assert_eq!(e.field, field!(InsPoseConfig.origin_lon_deg));
        let c = InsPoseConfig {
            origin_lat_deg: Some(95.0),
            ..InsPoseConfig::DEFAULT
        };
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "origin_lat_deg = 95 is invalid: must be within -90..90"
        );
        let c = InsPoseConfig {
            antenna_ahead_m: f64::INFINITY,
            ..InsPoseConfig::DEFAULT
        };
        assert_eq!(
            c.validate().unwrap_err().field,
            field!(InsPoseConfig.antenna_ahead_m)
        );
    }

    #[test]
    fn a_nan_fix_is_refused() {
        let fix = InsFix {
            lat_deg: f64::NAN,
            ..at_origin(0.0)
        };
        assert!(ins().rear_axle(fix).is_err());
        assert!(ins().rear_axle(at_origin(f64::NAN)).is_err());
    }
}
