//! The solution a GNSS/INS at the antenna gives of the car's state, as a simulator
//! publishes it (a Novatel `Inspva`): the way back of [`super::pose`] and
//! [`super::source`].
//!
//! The antenna sits `d` ahead of the rear axle on the centre line, at
//! `(x + d·cos ψ, y + d·sin ψ)` on the local frame's plane (up 0); its latitude, longitude
//! and height are that point's ([`LocalFrame::to_geodetic`]). Its velocity is the rear
//! axle's plus the rotation's share ([`VehicleState::velocity_of_point_ahead`]), given in
//! the local level at the antenna (east, north, up), as an INS reports it; the azimuth is
//! the heading `ψ` seen from the antenna's local north ([`LocalFrame::azimuth_deg`]). Roll
//! and pitch are 0: the car is level on the frame's plane.
//!
//! [`InsPose::rear_axle`] of the solution gives the pose back (the heading exactly, the
//! position to a hundredth of a millimetre within a kilometre of the origin), and [`super::source`] the rear axle's velocity (it takes the
//! local level's east and north for the frame's, which turn apart by the meridians'
//! convergence, 10⁻⁴ rad a kilometre east or west of the origin).
//!
//! [`LocalFrame::to_geodetic`]: super::geodesy::LocalFrame::to_geodetic
//! [`LocalFrame::azimuth_deg`]: super::geodesy::LocalFrame::azimuth_deg

use super::geodesy::{Enu, GeodesyError};
use super::health::GOOD_STATUS;
use super::pose::InsPose;
use crate::vehicle::VehicleState;

/// The horizontal position deviation a Novatel SPAN receiver reports with an RTK solution,
/// m per axis: 1 cm, its data sheets' RTK figure (1 cm + 1 ppm of the baseline, RMS).
pub const RTK_REPORTED_SIGMA_M: f64 = 0.01;

/// The fields of an INS solution (`novatel_gps_msgs/Inspva`), as plain numbers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InsSolution {
    /// Latitude, degrees north.
    pub lat_deg: f64,
    /// Longitude, degrees east.
    pub lon_deg: f64,
    /// Height above the WGS84 ellipsoid, m.
    pub height_m: f64,
    /// North velocity, m/s.
    pub north_velocity_mps: f64,
    /// East velocity, m/s.
    pub east_velocity_mps: f64,
    /// Up velocity, m/s.
    pub up_velocity_mps: f64,
    /// Roll, degrees.
    pub roll_deg: f64,
    /// Pitch, degrees.
    pub pitch_deg: f64,
    /// Heading, degrees clockwise from north in [0, 360).
    pub azimuth_deg: f64,
}

/// The solution of the antenna of the car in `state` (its rear axle's pose in the frame of
/// `ins`); refused when the state is not finite or lies beyond a pole.
pub fn solution(ins: &InsPose, state: &VehicleState) -> Result<InsSolution, GeodesyError> {
    let frame = ins.frame();
    let d = ins.antenna_ahead_m();
    let p = state.pose;
    let (sin, cos) = p.yaw.sin_cos();
    let at = frame.to_geodetic(Enu {
        east_m: p.x + d * cos,
        north_m: p.y + d * sin,
        up_m: 0.0,
    })?;
    let [vx, vy] = state.velocity_of_point_ahead(d);
    let v = frame.to_local_level(
        at,
        Enu {
            east_m: vx,
            north_m: vy,
            up_m: 0.0,
        },
    )?;
    Ok(InsSolution {
        lat_deg: at.lat_deg,
        lon_deg: at.lon_deg,
        height_m: at.alt_m,
        north_velocity_mps: v.north_m,
        east_velocity_mps: v.east_m,
        up_velocity_mps: v.up_m,
        roll_deg: 0.0,
        pitch_deg: 0.0,
        azimuth_deg: frame.azimuth_deg(at, p.yaw)?,
    })
}

/// The status a simulated INS reports: [`GOOD_STATUS`] until a test sets another.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusOverride {
    set: Option<String>,
}

impl StatusOverride {
    /// Applies a request: a non-empty `text` replaces the status, an empty one restores
    /// [`GOOD_STATUS`]. Returns whether the reported status changed.
    pub fn request(&mut self, text: &str) -> bool {
        let next = (!text.is_empty()).then(|| text.to_owned());
        let changed = next != self.set;
        self.set = next;
        changed
    }

    /// The status to report.
    pub fn status(&self) -> &str {
        self.set.as_deref().unwrap_or(GOOD_STATUS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::{wrap_angle, Pose};
    use crate::gnss::health::InsHealthConfig;
    use crate::gnss::pose::{InsFix, InsPoseConfig};
    use crate::gnss::source::{PoseSource, Solution};
    use crate::time::Time;
    use std::f64::consts::{FRAC_PI_2, PI};

    fn ins() -> InsPose {
        InsPose::new(&InsPoseConfig::DEFAULT).unwrap()
    }

    fn state(x: f64, y: f64, yaw: f64) -> VehicleState {
        VehicleState {
            pose: Pose::new(x, y, yaw),
            ..Default::default()
        }
    }

    #[test]
    fn at_the_origin_facing_north_the_antenna_is_ahead_to_the_north() {
        // The rear axle 0.46 m south of the origin, facing north: the antenna is at the
        // origin, heading 0°, at the origin's height.
        let s = solution(&ins(), &state(0.0, -0.46, FRAC_PI_2)).unwrap();
        let o = InsPoseConfig::DEFAULT;
        assert!(
            (s.lat_deg - o.origin_lat_deg.unwrap()).abs() < 1e-12,
            "{s:?}"
        );
        assert!(
            (s.lon_deg - o.origin_lon_deg.unwrap()).abs() < 1e-12,
            "{s:?}"
        );
        assert!(s.height_m.abs() < 1e-6, "{s:?}");
        assert!(s.azimuth_deg.abs() < 1e-9 || (s.azimuth_deg - 360.0).abs() < 1e-9);
        assert_eq!((s.roll_deg, s.pitch_deg), (0.0, 0.0));
        // Facing east and west: 90° and 270°.
        let east = solution(&ins(), &state(-0.46, 0.0, 0.0)).unwrap();
        assert!((east.azimuth_deg - 90.0).abs() < 1e-9, "{east:?}");
        let west = solution(&ins(), &state(0.46, 0.0, PI)).unwrap();
        assert!((west.azimuth_deg - 270.0).abs() < 1e-9, "{west:?}");
    }

    #[test]
    fn the_antenna_velocity_carries_the_yaw_rate_lever_arm() {
        // Facing east at 3 m/s, turning left at 0.5 rad/s: the antenna moves 0.23 m/s
        // north as well.
        let s = VehicleState {
            speed_mps: 3.0,
            yaw_rate_rad_s: 0.5,
            ..state(10.0, 20.0, 0.0)
        };
        let out = solution(&ins(), &s).unwrap();
        // 10 m east of the origin the local north turns by 1.4e-6 rad.
        assert!((out.east_velocity_mps - 3.0).abs() < 1e-5, "{out:?}");
        assert!((out.north_velocity_mps - 0.23).abs() < 1e-5, "{out:?}");
        assert!(out.up_velocity_mps.abs() < 1e-4, "{out:?}");
    }

    #[test]
    fn gnss_pose_gets_the_state_back_from_the_solution() {
        let ins = ins();
        let mut source = PoseSource::new(ins, ins.antenna_ahead_m(), InsHealthConfig::DEFAULT);
        for (k, (x, y, yaw)) in [
            (0.0, 0.0, 0.0),
            (812.0, -455.0, 2.5),
            (-640.0, 700.0, -1.2),
            (3.3, 999.0, FRAC_PI_2),
        ]
        .into_iter()
        .enumerate()
        {
            let truth = VehicleState {
                speed_mps: 4.0,
                lateral_speed_mps: -0.2,
                yaw_rate_rad_s: 0.3,
                ..state(x, y, yaw)
            };
            let s = solution(&ins, &truth).unwrap();
            let pose = ins
                .rear_axle(InsFix {
                    lat_deg: s.lat_deg,
                    lon_deg: s.lon_deg,
                    azimuth_deg: s.azimuth_deg,
                })
                .unwrap();
            // gnss_pose projects at the origin's height, the solution is up to 8 cm above
            // it a kilometre out: a hundredth of a millimetre apart.
            assert!(
                (pose.x - x).abs() < 1e-4 && (pose.y - y).abs() < 1e-4,
                "{pose:?}"
            );
            assert!(wrap_angle(pose.yaw - yaw).abs() < 1e-12, "{pose:?}");
            // The rear axle's velocity as gnss_pose computes it, with the true yaw rate.
            let stamp = Time::from_secs_f64(100.0 + k as f64);
            let offered = Solution {
                stamp,
                status: StatusOverride::default().status().into(),
                lat_deg: s.lat_deg,
                lon_deg: s.lon_deg,
                azimuth_deg: s.azimuth_deg,
                velocity_en_mps: Some([s.east_velocity_mps, s.north_velocity_mps]),
                yaw_rate_rad_s: Some(truth.yaw_rate_rad_s),
                horizontal_sigma_m: None,
            };
            source.offer(offered, stamp).unwrap();
            let r = source.served(stamp).unwrap().rear_axle();
            let [vx, vy] = truth.velocity_of_point_ahead(0.0);
            // Within the meridians' convergence (1e-4 rad a kilometre out) of the speed.
            let tolerance = 4.0 * 2e-4;
            assert!(
                (r.velocity_mps[0] - vx).abs() < tolerance
                    && (r.velocity_mps[1] - vy).abs() < tolerance,
                "{r:?} vs ({vx}, {vy})"
            );
        }
    }

    #[test]
    fn a_state_that_is_not_finite_is_refused() {
        assert!(solution(&ins(), &state(f64::NAN, 0.0, 0.0)).is_err());
        assert!(solution(&ins(), &state(0.0, 0.0, f64::INFINITY)).is_err());
    }

    #[test]
    fn a_status_request_replaces_the_good_status_and_an_empty_one_restores_it() {
        let mut s = StatusOverride::default();
        assert_eq!(s.status(), GOOD_STATUS);
        assert!(!s.request(""), "already good");
        assert!(s.request("INS_SOLUTION_FREE"));
        assert_eq!(s.status(), "INS_SOLUTION_FREE");
        assert!(
            !s.request("INS_SOLUTION_FREE"),
            "the same again is no change"
        );
        assert!(s.request("INS_ALIGNING"));
        assert_eq!(s.status(), "INS_ALIGNING");
        assert!(s.request(""));
        assert_eq!(s.status(), GOOD_STATUS);
    }
}
