//! WGS84 geodetic coordinates to a local east-north-up (ENU) frame, and headings.
//!
//! A point of latitude `φ`, longitude `λ` and ellipsoidal height `h` is first put in
//! Earth-centred, Earth-fixed coordinates,
//!
//! `x = (N + h)·cos φ·cos λ`, `y = (N + h)·cos φ·sin λ`, `z = (N·(1 − e²) + h)·sin φ`,
//! with `N = a / √(1 − e²·sin² φ)`,
//!
//! then rotated into the tangent frame at the origin `(φ₀, λ₀)`:
//!
//! `east = −sin λ₀·dx + cos λ₀·dy`,
//! `north = −sin φ₀·cos λ₀·dx − sin φ₀·sin λ₀·dy + cos φ₀·dz`,
//! `up = cos φ₀·cos λ₀·dx + cos φ₀·sin λ₀·dy + sin φ₀·dz`,
//!
//! where `d` is the point minus the origin in ECEF. Both steps are exact, so the frame has
//! no projection error: a point 1 km away is where it is to well under a millimetre (the
//! rounding of `f64` at Earth's radius is a few nanometres). The frame is flat, so over
//! 1 km the ground falls 8 cm below it; that shows in `up`, not in east and north.
//!
//! A heading is an INS's azimuth, degrees clockwise from the local north at the vehicle,
//! and becomes a ROS yaw, radians counter-clockwise from the frame's east
//! (`yaw = π/2 − azimuth` at the origin: north is π/2, east 0). Away from the origin the
//! local north turns relative to the frame's (meridians converge, by about
//! `Δλ·sin φ`: 0.007° per kilometre east-west at the GEM track's latitude);
//! [`LocalFrame::yaw`] rotates the heading's direction exactly, so it holds anywhere.
//!
//! The way back, [`LocalFrame::to_geodetic`], puts a local point in ECEF
//! (`origin + east·ê + north·n̂ + up·û`) and solves for latitude and height by iteration
//! ([`Geodetic::from_ecef`]): longitude is `atan2(y, x)`; with `p = √(x² + y²)` the latitude
//! is the fixed point of `φ = atan2(z + e²·N(φ)·sin φ, p)`, each step shrinking the error by
//! about `e²` (0.7 %), so eight steps reach the rounding of `f64`; the height is
//! `p·cos φ + z·sin φ − a·√(1 − e²·sin² φ)`, exact at any latitude, the poles included.
//! A point and its round trip through both agree to well under a micrometre.
//!
//! Not handled: datums other than WGS84, plate motion, geoid heights (an MSL height used
//! as the ellipsoidal one shifts `up`, and east and north by far less than a millimetre
//! within a few kilometres).

use crate::geometry::wrap_angle;
use std::f64::consts::FRAC_PI_2;
use thiserror::Error;

/// WGS84 semi-major axis, m.
pub const WGS84_A_M: f64 = 6_378_137.0;
/// WGS84 flattening.
pub const WGS84_F: f64 = 1.0 / 298.257_223_563;

/// Most iterations of [`Geodetic::from_ecef`]; each gains about two digits, so it stops
/// well before.
const FROM_ECEF_STEPS: usize = 20;

/// First eccentricity squared, `e² = f·(2 − f)`.
fn e2() -> f64 {
    WGS84_F * (2.0 - WGS84_F)
}

/// Why a coordinate is refused.
#[derive(Clone, Copy, Debug, Error, PartialEq)]
pub enum GeodesyError {
    /// NaN or infinite.
    #[error("{what} {value} is not a finite number")]
    NotFinite {
        /// Which value (`latitude`, `azimuth`...).
        what: &'static str,
        /// The value.
        value: f64,
    },
    /// Outside its range.
    #[error("{what} {value} is outside {min}..{max}")]
    OutOfRange {
        /// Which value.
        what: &'static str,
        /// The value.
        value: f64,
        /// Smallest valid value.
        min: f64,
        /// Largest valid value.
        max: f64,
    },
}

/// A WGS84 position.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Geodetic {
    /// Latitude, degrees north.
    pub lat_deg: f64,
    /// Longitude, degrees east.
    pub lon_deg: f64,
    /// Height above the ellipsoid, m.
    pub alt_m: f64,
}

impl Geodetic {
    /// A position on the ellipsoid (height 0).
    pub const fn surface(lat_deg: f64, lon_deg: f64) -> Self {
        Geodetic {
            lat_deg,
            lon_deg,
            alt_m: 0.0,
        }
    }

    /// Checks that every value is finite and the angles in range.
    pub fn check(self) -> Result<Self, GeodesyError> {
        finite("latitude", self.lat_deg)?;
        finite("longitude", self.lon_deg)?;
        finite("height", self.alt_m)?;
        in_range("latitude", self.lat_deg, 90.0)?;
        in_range("longitude", self.lon_deg, 180.0)?;
        Ok(self)
    }

    /// Earth-centred, Earth-fixed coordinates, m.
    pub fn to_ecef(self) -> [f64; 3] {
        let (sin_lat, cos_lat) = self.lat_deg.to_radians().sin_cos();
        let (sin_lon, cos_lon) = self.lon_deg.to_radians().sin_cos();
        let n = WGS84_A_M / (1.0 - e2() * sin_lat * sin_lat).sqrt();
        [
            (n + self.alt_m) * cos_lat * cos_lon,
            (n + self.alt_m) * cos_lat * sin_lon,
            (n * (1.0 - e2()) + self.alt_m) * sin_lat,
        ]
    }

    /// The position of the Earth-centred, Earth-fixed point `ecef` (m); refused if a
    /// coordinate is not finite. The centre of the Earth, where latitude is undefined,
    /// comes out at latitude 0.
    pub fn from_ecef(ecef: [f64; 3]) -> Result<Self, GeodesyError> {
        let [x, y, z] = ecef;
        finite("ECEF x", x)?;
        finite("ECEF y", y)?;
        finite("ECEF z", z)?;
        let e2 = e2();
        let p = x.hypot(y);
        // Start from the geocentric latitude scaled to the ellipse: within 0.2° anywhere.
        let mut lat = z.atan2(p * (1.0 - e2));
        for _ in 0..FROM_ECEF_STEPS {
            let sin_lat = lat.sin();
            let n = WGS84_A_M / (1.0 - e2 * sin_lat * sin_lat).sqrt();
            let next = (z + e2 * n * sin_lat).atan2(p);
            let done = (next - lat).abs() <= 1e-15;
            lat = next;
            if done {
                break;
            }
        }
        let (sin_lat, cos_lat) = lat.sin_cos();
        let alt_m = p * cos_lat + z * sin_lat - WGS84_A_M * (1.0 - e2 * sin_lat * sin_lat).sqrt();
        Ok(Geodetic {
            lat_deg: lat.to_degrees(),
            lon_deg: y.atan2(x).to_degrees(),
            alt_m,
        })
    }

    /// The unit vectors of the local east, north and up here, in ECEF.
    fn axes(self) -> [[f64; 3]; 3] {
        let (sin_lat, cos_lat) = self.lat_deg.to_radians().sin_cos();
        let (sin_lon, cos_lon) = self.lon_deg.to_radians().sin_cos();
        [
            [-sin_lon, cos_lon, 0.0],
            [-sin_lat * cos_lon, -sin_lat * sin_lon, cos_lat],
            [cos_lat * cos_lon, cos_lat * sin_lon, sin_lat],
        ]
    }
}

fn finite(what: &'static str, value: f64) -> Result<(), GeodesyError> {
    match value.is_finite() {
        true => Ok(()),
        false => Err(GeodesyError::NotFinite { what, value }),
    }
}

fn in_range(what: &'static str, value: f64, limit: f64) -> Result<(), GeodesyError> {
    match (-limit..=limit).contains(&value) {
        true => Ok(()),
        false => Err(GeodesyError::OutOfRange {
            what,
            value,
            min: -limit,
            max: limit,
        }),
    }
}

/// A point in the local frame, m.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Enu {
    /// East, m.
    pub east_m: f64,
    /// North, m.
    pub north_m: f64,
    /// Up, m.
    pub up_m: f64,
}

/// The east-north-up frame tangent to the ellipsoid at an origin.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LocalFrame {
    origin: Geodetic,
    origin_ecef: [f64; 3],
    axes: [[f64; 3]; 3],
}

impl LocalFrame {
    /// The frame at `origin`; refused if a value is not finite or out of range.
    pub fn new(origin: Geodetic) -> Result<Self, GeodesyError> {
        let origin = origin.check()?;
        Ok(LocalFrame {
            origin,
            origin_ecef: origin.to_ecef(),
            axes: origin.axes(),
        })
    }

    /// The origin.
    pub fn origin(&self) -> Geodetic {
        self.origin
    }

    /// `p` in this frame.
    pub fn to_enu(&self, p: Geodetic) -> Result<Enu, GeodesyError> {
        let q = p.check()?.to_ecef();
        let d = [
            q[0] - self.origin_ecef[0],
            q[1] - self.origin_ecef[1],
            q[2] - self.origin_ecef[2],
        ];
        let [east_m, north_m, up_m] = self.axes.map(|axis| dot(axis, d));
        Ok(Enu {
            east_m,
            north_m,
            up_m,
        })
    }

    /// The position of the local point `p`: the inverse of [`LocalFrame::to_enu`].
    pub fn to_geodetic(&self, p: Enu) -> Result<Geodetic, GeodesyError> {
        finite("east", p.east_m)?;
        finite("north", p.north_m)?;
        finite("up", p.up_m)?;
        let local = [p.east_m, p.north_m, p.up_m];
        let ecef: [f64; 3] = std::array::from_fn(|k| {
            self.origin_ecef[k] + (0..3).map(|i| local[i] * self.axes[i][k]).sum::<f64>()
        });
        Geodetic::from_ecef(ecef)
    }

    /// The vector `v`, given along this frame's axes, along the local east, north and up
    /// at `at` (a velocity as an INS there reports it): the frames turn apart by the
    /// angle between their verticals, about 1.6·10⁻⁴ rad per kilometre.
    pub fn to_local_level(&self, at: Geodetic, v: Enu) -> Result<Enu, GeodesyError> {
        let axes_there = at.check()?.axes();
        let local = [v.east_m, v.north_m, v.up_m];
        let ecef: [f64; 3] =
            std::array::from_fn(|k| (0..3).map(|i| local[i] * self.axes[i][k]).sum::<f64>());
        let [east_m, north_m, up_m] = axes_there.map(|axis| dot(axis, ecef));
        Ok(Enu {
            east_m,
            north_m,
            up_m,
        })
    }

    /// The azimuth, degrees clockwise from the local north at `at` in [0, 360), of the
    /// yaw `yaw_rad` in this frame (rad counter-clockwise from east): exactly the inverse
    /// of [`LocalFrame::yaw`]. The heading is the direction in the level plane at `at`
    /// whose shadow on this frame's plane points along the yaw: the level plane cut by the
    /// frame's vertical plane through the yaw.
    pub fn azimuth_deg(&self, at: Geodetic, yaw_rad: f64) -> Result<f64, GeodesyError> {
        finite("yaw", yaw_rad)?;
        let [east, north, up] = at.check()?.axes();
        let (sin, cos) = yaw_rad.sin_cos();
        let along: [f64; 3] =
            std::array::from_fn(|k| cos * self.axes[0][k] + sin * self.axes[1][k]);
        let across = cross(along, self.axes[2]);
        let mut heading = cross(up, across);
        if dot(heading, along) < 0.0 {
            heading = heading.map(|c| -c);
        }
        Ok(azimuth_deg_from_yaw(
            dot(north, heading).atan2(dot(east, heading)),
        ))
    }

    /// The yaw in this frame, rad counter-clockwise from east in (−π, π], of a heading
    /// `azimuth_deg` (degrees clockwise from the local north) measured at `at`.
    pub fn yaw(&self, at: Geodetic, azimuth_deg: f64) -> Result<f64, GeodesyError> {
        finite("azimuth", azimuth_deg)?;
        let [east, north, _] = at.check()?.axes();
        let (sin_az, cos_az) = azimuth_deg.to_radians().sin_cos();
        let heading: [f64; 3] = std::array::from_fn(|k| cos_az * north[k] + sin_az * east[k]);
        let e = dot(self.axes[0], heading);
        let n = dot(self.axes[1], heading);
        Ok(n.atan2(e))
    }
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// The ROS yaw, rad counter-clockwise from east in (−π, π], of an azimuth in degrees
/// clockwise from north, in the frame of the place it was measured.
pub fn yaw_from_azimuth_deg(azimuth_deg: f64) -> f64 {
    wrap_angle(FRAC_PI_2 - azimuth_deg.to_radians())
}

/// The azimuth, degrees clockwise from north in [0, 360), of a ROS yaw (radians
/// counter-clockwise from east): the inverse of [`yaw_from_azimuth_deg`], for a source that
/// gives its heading as a yaw (an IMU's orientation in east-north-up).
pub fn azimuth_deg_from_yaw(yaw_rad: f64) -> f64 {
    (90.0 - yaw_rad.to_degrees()).rem_euclid(360.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    /// The GEM track's origin.
    const ORIGIN: Geodetic = Geodetic::surface(40.0928563, -88.2359994);

    fn frame() -> LocalFrame {
        LocalFrame::new(ORIGIN).unwrap()
    }

    fn b() -> f64 {
        WGS84_A_M * (1.0 - WGS84_F)
    }

    #[test]
    fn ecef_of_the_axes_points() {
        // On the equator at 0° the point is a from the centre along x; at 90° E along y;
        // at the pole b along z.
        let near = |p: [f64; 3], q: [f64; 3]| (0..3).all(|k| (p[k] - q[k]).abs() < 1e-6);
        assert!(near(
            Geodetic::surface(0.0, 0.0).to_ecef(),
            [WGS84_A_M, 0.0, 0.0]
        ));
        assert!(near(
            Geodetic::surface(0.0, 90.0).to_ecef(),
            [0.0, WGS84_A_M, 0.0]
        ));
        assert!(near(
            Geodetic::surface(90.0, 0.0).to_ecef(),
            [0.0, 0.0, b()]
        ));
        let high = Geodetic {
            alt_m: 100.0,
            ..Geodetic::surface(0.0, 180.0)
        };
        assert!(near(high.to_ecef(), [-WGS84_A_M - 100.0, 0.0, 0.0]));
        assert!((b() - 6_356_752.314_245).abs() < 1e-6);
    }

    #[test]
    fn ecef_of_a_point_at_45_degrees_lies_on_the_ellipse() {
        // x²/a² + z²/b² = 1 for any point of the meridian ellipse, and the normal at it
        // makes 45° with the equator: the ellipse's normal is (x/a², z/b²).
        let [x, y, z] = Geodetic::surface(45.0, 0.0).to_ecef();
        assert!(y.abs() < 1e-9);
        assert!((x * x / (WGS84_A_M * WGS84_A_M) + z * z / (b() * b()) - 1.0).abs() < 1e-12);
        let normal_angle = (z / (b() * b())).atan2(x / (WGS84_A_M * WGS84_A_M));
        assert!((normal_angle - PI / 4.0).abs() < 1e-12);
    }

    #[test]
    fn the_origin_is_zero() {
        let p = frame().to_enu(ORIGIN).unwrap();
        assert!(p.east_m.abs() < 1e-9 && p.north_m.abs() < 1e-9 && p.up_m.abs() < 1e-9);
    }

    /// Meridian arc length from `lat0` to `lat1` (radians), by Simpson's rule on the
    /// meridian's radius of curvature `M(φ) = a(1 − e²)/(1 − e² sin²φ)^(3/2)`.
    fn meridian_arc(lat0: f64, lat1: f64) -> f64 {
        let m = |p: f64| WGS84_A_M * (1.0 - e2()) / (1.0 - e2() * p.sin().powi(2)).powf(1.5);
        let n = 100;
        let h = (lat1 - lat0) / n as f64;
        let inner: f64 = (1..n)
            .map(|i| m(lat0 + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 })
            .sum();
        h / 3.0 * (m(lat0) + inner + m(lat1))
    }

    #[test]
    fn a_point_one_kilometre_north_is_the_meridian_arc_away() {
        let lat1 = ORIGIN.lat_deg + 0.009;
        let arc = meridian_arc(ORIGIN.lat_deg.to_radians(), lat1.to_radians());
        assert!((arc - 1000.0).abs() < 2.0, "{arc}"); // about a kilometre
        let p = frame()
            .to_enu(Geodetic::surface(lat1, ORIGIN.lon_deg))
            .unwrap();
        assert!(p.east_m.abs() < 1e-6, "{}", p.east_m);
        // The chord is shorter than the arc by arc·θ²/24 (θ = 1.6e-4 rad): micrometres.
        assert!((p.north_m - arc).abs() < 1e-3, "{} vs {arc}", p.north_m);
        // The ground falls away from the tangent plane by about arc²/2M.
        let m = arc / (lat1 - ORIGIN.lat_deg).to_radians();
        assert!((p.up_m + arc * arc / (2.0 * m)).abs() < 1e-3, "{}", p.up_m);
    }

    #[test]
    fn a_point_one_kilometre_east_lies_along_the_parallel() {
        // The parallel is a circle of radius p = N cos φ; a point Δλ along it is
        // p·sin Δλ east of the origin, and the circle bends p(1 − cos Δλ)·sin φ towards
        // the pole (north) and p(1 − cos Δλ)·cos φ down.
        let lat = ORIGIN.lat_deg.to_radians();
        let n = WGS84_A_M / (1.0 - e2() * lat.sin().powi(2)).sqrt();
        let radius = n * lat.cos();
        let dlon = 1000.0 / radius;
        let q = Geodetic::surface(ORIGIN.lat_deg, ORIGIN.lon_deg + dlon.to_degrees());
        let p = frame().to_enu(q).unwrap();
        let bend = radius * (1.0 - dlon.cos());
        assert!((p.east_m - radius * dlon.sin()).abs() < 1e-6);
        assert!((p.north_m - bend * lat.sin()).abs() < 1e-6, "{}", p.north_m);
        assert!((p.up_m + bend * lat.cos()).abs() < 1e-6);
        // The parallel curves about 6.6 cm north of the frame's east axis over 1 km.
        assert!((p.north_m - 0.066).abs() < 0.002, "{}", p.north_m);
    }

    /// Vincenty's inverse formula: the geodesic distance on the WGS84 ellipsoid, m.
    fn vincenty(p: Geodetic, q: Geodetic) -> f64 {
        let (a, f) = (WGS84_A_M, WGS84_F);
        let b = a * (1.0 - f);
        let u1 = ((1.0 - f) * p.lat_deg.to_radians().tan()).atan();
        let u2 = ((1.0 - f) * q.lat_deg.to_radians().tan()).atan();
        let l = (q.lon_deg - p.lon_deg).to_radians();
        let (su1, cu1, su2, cu2) = (u1.sin(), u1.cos(), u2.sin(), u2.cos());
        let mut lambda = l;
        let (mut s_sig, mut c_sig, mut sig, mut c2a, mut c2sm);
        loop {
            let (sl, cl) = lambda.sin_cos();
            s_sig = ((cu2 * sl).powi(2) + (cu1 * su2 - su1 * cu2 * cl).powi(2)).sqrt();
            c_sig = su1 * su2 + cu1 * cu2 * cl;
            sig = s_sig.atan2(c_sig);
            let s_alpha = cu1 * cu2 * sl / s_sig;
            c2a = 1.0 - s_alpha * s_alpha;
            c2sm = c_sig - 2.0 * su1 * su2 / c2a;
            let c = f / 16.0 * c2a * (4.0 + f * (4.0 - 3.0 * c2a));
            let next = l
                + (1.0 - c)
                    * f
                    * s_alpha
                    * (sig + c * s_sig * (c2sm + c * c_sig * (-1.0 + 2.0 * c2sm * c2sm)));
            let done = (next - lambda).abs() < 1e-14;
            lambda = next;
            if done {
                break;
            }
        }
        let u_sq = c2a * (a * a - b * b) / (b * b);
        let big_a =
            1.0 + u_sq / 16384.0 * (4096.0 + u_sq * (-768.0 + u_sq * (320.0 - 175.0 * u_sq)));
        let big_b = u_sq / 1024.0 * (256.0 + u_sq * (-128.0 + u_sq * (74.0 - 47.0 * u_sq)));
        let d_sig = big_b
            * s_sig
            * (c2sm
                + big_b / 4.0
                    * (c_sig * (-1.0 + 2.0 * c2sm * c2sm)
                        - big_b / 6.0
                            * c2sm
                            * (-3.0 + 4.0 * s_sig * s_sig)
                            * (-3.0 + 4.0 * c2sm * c2sm)));
        b * big_a * (sig - d_sig)
    }

    #[test]
    fn distances_within_a_kilometre_match_vincenty_to_the_centimetre() {
        let f = frame();
        for (dlat, dlon) in [
            (0.0064, 0.0083),
            (-0.0045, 0.0110),
            (0.0002, -0.0117),
            (-0.008, -0.004),
        ] {
            let q = Geodetic::surface(ORIGIN.lat_deg + dlat, ORIGIN.lon_deg + dlon);
            let p = f.to_enu(q).unwrap();
            let geodesic = vincenty(ORIGIN, q);
            assert!(geodesic > 700.0 && geodesic < 1100.0, "{geodesic}");
            // The straight line through the Earth (the chord) and the geodesic differ by
            // micrometres at this range.
            let chord = (p.east_m.powi(2) + p.north_m.powi(2) + p.up_m.powi(2)).sqrt();
            assert!((chord - geodesic).abs() < 0.01, "{chord} vs {geodesic}");
            let horizontal = p.east_m.hypot(p.north_m);
            assert!(
                (horizontal - geodesic).abs() < 0.01,
                "{horizontal} vs {geodesic}"
            );
        }
    }

    #[test]
    fn an_azimuth_becomes_a_ros_yaw() {
        assert!((yaw_from_azimuth_deg(0.0) - PI / 2.0).abs() < 1e-15);
        assert!(yaw_from_azimuth_deg(90.0).abs() < 1e-15);
        assert!((yaw_from_azimuth_deg(180.0) + PI / 2.0).abs() < 1e-15);
        assert!((yaw_from_azimuth_deg(270.0).abs() - PI).abs() < 1e-15);
        assert!((yaw_from_azimuth_deg(45.0) - PI / 4.0).abs() < 1e-15);
        assert!((yaw_from_azimuth_deg(-90.0).abs() - PI).abs() < 1e-15);
        assert!((yaw_from_azimuth_deg(360.0) - PI / 2.0).abs() < 1e-12);
    }

    #[test]
    fn a_yaw_becomes_an_azimuth_and_back() {
        assert!((azimuth_deg_from_yaw(PI / 2.0)).abs() < 1e-12);
        assert!((azimuth_deg_from_yaw(0.0) - 90.0).abs() < 1e-12);
        assert!((azimuth_deg_from_yaw(-PI / 2.0) - 180.0).abs() < 1e-12);
        assert!((azimuth_deg_from_yaw(PI) - 270.0).abs() < 1e-12);
        for yaw in [-3.0, -1.0, 0.3, 2.9] {
            let back = yaw_from_azimuth_deg(azimuth_deg_from_yaw(yaw));
            assert!((back - yaw).abs() < 1e-12, "{yaw}: {back}");
        }
        assert!(azimuth_deg_from_yaw(f64::NAN).is_nan());
    }

    #[test]
    fn at_the_origin_the_frame_yaw_is_the_local_one() {
        for az in [0.0, 37.0, 90.0, 181.0, 300.0] {
            let yaw = frame().yaw(ORIGIN, az).unwrap();
            let d = wrap_angle(yaw - yaw_from_azimuth_deg(az));
            assert!(d.abs() < 1e-12, "{az}: {yaw}");
        }
    }

    #[test]
    fn away_from_the_origin_the_heading_turns_with_the_meridians() {
        // 1 km east, facing local north: the frame's yaw is π/2 + Δλ·sin φ (the
        // meridians converge), about 1.3e-4 rad.
        let dlon = 0.0117_f64;
        let at = Geodetic::surface(ORIGIN.lat_deg, ORIGIN.lon_deg + dlon);
        let yaw = frame().yaw(at, 0.0).unwrap();
        let convergence = dlon.to_radians() * ORIGIN.lat_deg.to_radians().sin();
        assert!((yaw - (PI / 2.0 + convergence)).abs() < 1e-8, "{yaw}");
        // The same from the positions: two points along the local north there.
        let ahead = Geodetic::surface(ORIGIN.lat_deg + 0.0001, at.lon_deg);
        let (p, q) = (frame().to_enu(at).unwrap(), frame().to_enu(ahead).unwrap());
        let track = (q.north_m - p.north_m).atan2(q.east_m - p.east_m);
        assert!((track - yaw).abs() < 1e-6, "{track} vs {yaw}");
    }

    #[test]
    fn ecef_of_a_known_point_and_back() {
        // 42° N, 82° W, 200 m above the ellipsoid, in ECEF, as published for WGS84 (the
        // test point of pymap3d's suite, to 0.1 mm).
        let known = Geodetic {
            lat_deg: 42.0,
            lon_deg: -82.0,
            alt_m: 200.0,
        };
        let xyz = [660_675.251_8, -4_700_948.683_2, 4_245_737.662_2];
        let forward = known.to_ecef();
        assert!(
            (0..3).all(|k| (forward[k] - xyz[k]).abs() < 1e-3),
            "{forward:?}"
        );
        let back = Geodetic::from_ecef(xyz).unwrap();
        // The published figures' 0.1 mm is 1e-9° of latitude or longitude.
        assert!((back.lat_deg - 42.0).abs() < 1e-9, "{back:?}");
        assert!((back.lon_deg + 82.0).abs() < 1e-9, "{back:?}");
        assert!((back.alt_m - 200.0).abs() < 1e-3, "{back:?}");
    }

    #[test]
    fn ecef_to_geodetic_inverts_the_forward_everywhere() {
        for lat in [
            -90.0,
            -89.999_9,
            -45.0,
            -1e-9,
            0.0,
            0.3,
            40.092_856_3,
            67.5,
            89.9,
            90.0,
        ] {
            for lon in [-180.0, -88.235_999_4, 0.0, 12.5, 179.99] {
                for alt in [-100.0, 0.0, 250.0, 20_200_000.0] {
                    let p = Geodetic {
                        lat_deg: lat,
                        lon_deg: lon,
                        alt_m: alt,
                    };
                    let q = Geodetic::from_ecef(p.to_ecef()).unwrap();
                    let (a, b) = (p.to_ecef(), q.to_ecef());
                    let gap = (0..3).map(|k| (a[k] - b[k]).powi(2)).sum::<f64>().sqrt();
                    // Nanometres at Earth's radius; a GPS orbit's radius, micrometres.
                    assert!(gap < 1e-6, "{p:?} -> {q:?}: {gap} m");
                    assert!((q.lat_deg - lat).abs() < 1e-12, "{p:?} -> {q:?}");
                    assert!((q.alt_m - alt).abs() < 1e-6, "{p:?} -> {q:?}");
                    if lat.abs() < 90.0 {
                        let dlon = wrap_angle((q.lon_deg - lon).to_radians());
                        assert!(dlon.abs() < 1e-12, "{p:?} -> {q:?}");
                    }
                }
            }
        }
        let pole = Geodetic::from_ecef([0.0, 0.0, b()]).unwrap();
        assert_eq!(pole.lat_deg, 90.0);
        assert!(pole.alt_m.abs() < 1e-9, "{pole:?}");
        let centre = Geodetic::from_ecef([0.0; 3]).unwrap();
        assert!(centre.lat_deg.is_finite() && centre.alt_m.is_finite());
        assert!(Geodetic::from_ecef([f64::NAN, 0.0, 0.0]).is_err());
    }

    #[test]
    fn local_points_within_a_kilometre_go_back_to_where_they_were() {
        let f = frame();
        let mut worst: f64 = 0.0;
        for east in [-1000.0, -707.1, -250.0, 0.0, 0.013, 333.3, 707.1, 1000.0] {
            for north in [-1000.0, -707.1, -50.0, 0.0, 1.0, 499.9, 707.1, 1000.0] {
                for up in [-30.0, 0.0, 0.08, 45.0] {
                    let p = Enu {
                        east_m: east,
                        north_m: north,
                        up_m: up,
                    };
                    let q = f.to_enu(f.to_geodetic(p).unwrap()).unwrap();
                    let gap = ((q.east_m - east).powi(2)
                        + (q.north_m - north).powi(2)
                        + (q.up_m - up).powi(2))
                    .sqrt();
                    worst = worst.max(gap);
                }
            }
        }
        // Well under a centimetre: the rounding of f64 at Earth's radius.
        assert!(worst < 1e-6, "{worst} m");
        let o = f.to_geodetic(Enu::default()).unwrap();
        assert!((o.lat_deg - ORIGIN.lat_deg).abs() < 1e-12);
        assert!((o.lon_deg - ORIGIN.lon_deg).abs() < 1e-12);
        assert!(o.alt_m.abs() < 1e-6);
    }

    #[test]
    fn a_point_on_the_parallel_one_kilometre_east_has_the_origins_latitude() {
        // The closed form of a_point_one_kilometre_east_lies_along_the_parallel, backwards:
        // the point Δλ along the parallel is (p·sin Δλ, b·sin φ, −b·cos φ) with
        // b = p(1 − cos Δλ), and lies on the ellipsoid at the origin's latitude.
        let lat = ORIGIN.lat_deg.to_radians();
        let n = WGS84_A_M / (1.0 - e2() * lat.sin().powi(2)).sqrt();
        let radius = n * lat.cos();
        let dlon = 1000.0 / radius;
        let bend = radius * (1.0 - dlon.cos());
        let p = Enu {
            east_m: radius * dlon.sin(),
            north_m: bend * lat.sin(),
            up_m: -bend * lat.cos(),
        };
        let q = frame().to_geodetic(p).unwrap();
        assert!((q.lat_deg - ORIGIN.lat_deg).abs() < 1e-11, "{q:?}");
        assert!(
            (q.lon_deg - (ORIGIN.lon_deg + dlon.to_degrees())).abs() < 1e-11,
            "{q:?}"
        );
        assert!(q.alt_m.abs() < 1e-6, "{q:?}");
        // A kilometre north on the frame's plane: 7.8 cm above the ellipsoid there.
        let north = frame()
            .to_geodetic(Enu {
                north_m: 1000.0,
                ..Enu::default()
            })
            .unwrap();
        assert!((north.alt_m - 0.0785).abs() < 0.001, "{north:?}");
    }

    #[test]
    fn an_azimuth_from_a_frame_yaw_inverts_the_frame_yaw() {
        let f = frame();
        let far = f
            .to_geodetic(Enu {
                east_m: 1000.0,
                north_m: -600.0,
                up_m: 0.0,
            })
            .unwrap();
        for az in [0.0, 0.5, 37.0, 90.0, 181.0, 300.0, 359.9] {
            for at in [ORIGIN, far] {
                let yaw = f.yaw(at, az).unwrap();
                let back = f.azimuth_deg(at, yaw).unwrap();
                let d = (back - az + 180.0).rem_euclid(360.0) - 180.0;
                assert!(d.abs() < 1e-11, "{az} at {at:?}: {back}");
                assert!((0.0..360.0).contains(&back));
            }
            // At the origin it is the plain conversion.
            let yaw = yaw_from_azimuth_deg(az);
            let plain = azimuth_deg_from_yaw(yaw);
            let d = (f.azimuth_deg(ORIGIN, yaw).unwrap() - plain + 180.0).rem_euclid(360.0) - 180.0;
            assert!(d.abs() < 1e-9, "{az}");
        }
        assert!(f.azimuth_deg(ORIGIN, f64::NAN).is_err());
    }

    #[test]
    fn a_frame_vector_turns_with_the_vertical_away_from_the_origin() {
        let f = frame();
        let v = Enu {
            east_m: 3.0,
            north_m: 0.0,
            up_m: 0.0,
        };
        let here = f.to_local_level(ORIGIN, v).unwrap();
        assert!((here.east_m - 3.0).abs() < 1e-12 && here.north_m.abs() < 1e-12);
        // 1 km east, moving east along the frame's plane: the plane rises against the
        // local level there by 1 km / R, so the motion climbs at 3 m/s × 1.57e-4.
        let at = f
            .to_geodetic(Enu {
                east_m: 1000.0,
                ..Enu::default()
            })
            .unwrap();
        let there = f.to_local_level(at, v).unwrap();
        let speed = (there.east_m.powi(2) + there.north_m.powi(2) + there.up_m.powi(2)).sqrt();
        assert!((speed - 3.0).abs() < 1e-12);
        let lat = ORIGIN.lat_deg.to_radians();
        let n = WGS84_A_M / (1.0 - e2() * lat.sin().powi(2)).sqrt();
        assert!((there.up_m - 3.0 * 1000.0 / n).abs() < 1e-8, "{there:?}");
    }

    #[test]
    fn bad_coordinates_are_refused() {
        let f = frame();
        let nan = Geodetic::surface(f64::NAN, 0.0);
        assert_eq!(
            f.to_enu(nan).unwrap_err().to_string(),
            "latitude NaN is not a finite number"
        );
        assert_eq!(
            f.to_enu(Geodetic::surface(40.0, 181.0))
                .unwrap_err()
                .to_string(),
            "longitude 181 is outside -180..180"
        );
        assert!(f.yaw(ORIGIN, f64::INFINITY).is_err());
        assert!(LocalFrame::new(Geodetic::surface(90.5, 0.0)).is_err());
        let high = Geodetic {
            alt_m: f64::NAN,
            ..ORIGIN
        };
        assert!(LocalFrame::new(high).is_err());
        let nan = Enu {
            east_m: f64::NAN,
            ..Enu::default()
        };
        assert_eq!(
            f.to_geodetic(nan).unwrap_err().to_string(),
            "east NaN is not a finite number"
        );
        assert!(f.to_local_level(Geodetic::surface(95.0, 0.0), nan).is_err());
    }
}
