//! What the stepping loop publishes: the true state (`model_states`, odometry, TF), and
//! with their modes the PACMod's reports and the GNSS/INS solution.

use super::pacmod_io::PacmodReports;
use super::params::{Params, PARAMS};
use super::topics::*;
use super::world::World;
use gem_core::geometry::Pose;
use gem_core::gnss::pose::InsPose;
use gem_core::gnss::simulated::{self};
use gem_core::time::Time;
use gem_core::vehicle::frames::{self, FIXED_JOINTS};
use gem_core::vehicle::VehicleState;
use gem_msgs::gazebo_msgs::ModelStates;
use gem_msgs::geometry_msgs::{Pose as PoseMsg, TransformStamped, Twist};
use gem_msgs::nav_msgs::Odometry;
use gem_msgs::novatel_gps_msgs::{Inspva, Insstdev};
use gem_msgs::std_msgs::Header;
use gem_msgs::tf2_msgs::TFMessage;
use gem_ros::time::to_ros;
use ros1_protocols::RosError;

/// What the stepping loop publishes besides the state: the PACMod's reports and the
/// GNSS/INS solution, each when its mode is on.
pub(super) struct Outputs {
    pub(super) pacmod: Option<PacmodReports>,
    pub(super) ins: Option<InsOutput>,
    pub(super) hardware: Option<super::hardware::Hardware>,
}

impl Outputs {
    pub(super) fn publish_if_due(&mut self, world: &World, now: Time) {
        if let Some(r) = &mut self.pacmod {
            r.publish_if_due(world, now);
        }
        if let Some(ins) = &mut self.ins {
            ins.publish_if_new(world);
        }
        if let Some(h) = &mut self.hardware {
            h.publish_if_due(now);
        }
    }
}

/// The GNSS/INS solution (`~pose_output: inspva`): each new report of the localization
/// model, at the antenna, stamped with its measurement time, and the deviations the INS
/// reports with it.
pub(super) struct InsOutput {
    publisher: ros1_protocols::runtime::Publisher<Inspva>,
    stdev: ros1_protocols::runtime::Publisher<Insstdev>,
    /// The horizontal deviations reported, m.
    reported_sigma_m: f32,
    projection: InsPose,
    /// The measurement time of the last solution published.
    last: Option<Time>,
    /// Whether the last report could not be turned into a solution (logged once a streak).
    failing: bool,
}

impl InsOutput {
    pub(super) fn new(p: &Params) -> anyhow::Result<Self> {
        use anyhow::Context;
        Ok(InsOutput {
            publisher: INSPVA.publish()?,
            stdev: INSSTDEV.publish()?,
            reported_sigma_m: p.inspva_reported_sigma_m as f32,
            projection: InsPose::new(&p.ins_frame)
                .map_err(|e| gem_ros::params::config_error(&PARAMS, e))
                .context("invalid parameters")?,
            last: None,
            failing: false,
        })
    }

    /// Publishes the localization's report when it is a new one (measured at another
    /// time than the last one published: later, or earlier after time went back).
    pub(super) fn publish_if_new(&mut self, world: &World) {
        let (report, status) = {
            let m = world.lock();
            (m.localizer.report(), m.ins_status.status().to_owned())
        };
        let Some(report) = report.filter(|r| Some(r.measured_at) != self.last) else {
            return;
        };
        self.last = Some(report.measured_at);
        let s = match simulated::solution(&self.projection, &report.state) {
            Ok(s) => s,
            Err(e) => {
                if !self.failing {
                    tracing::error!("no INS solution for {:?}: {e}", report.state.pose);
                }
                self.failing = true;
                return;
            }
        };
        self.failing = false;
        let header = Header {
            seq: 0,
            stamp: to_ros(report.measured_at),
            frame_id: String::new(),
        };
        let mut stdev = Insstdev {
            header: header.clone(),
            latitude_dev: self.reported_sigma_m,
            longitude_dev: self.reported_sigma_m,
            ..Default::default()
        };
        stdev.novatel_msg_header.message_name = "INSSTDEV".into();
        let mut msg = Inspva {
            header,
            latitude: s.lat_deg,
            longitude: s.lon_deg,
            height: s.height_m,
            north_velocity: s.north_velocity_mps,
            east_velocity: s.east_velocity_mps,
            up_velocity: s.up_velocity_mps,
            roll: s.roll_deg,
            pitch: s.pitch_deg,
            azimuth: s.azimuth_deg,
            status,
            ..Default::default()
        };
        msg.novatel_msg_header.message_name = "INSPVA".into();
        if let Err(e) = self.publisher.send(msg) {
            tracing::error!("cannot publish {}: {e}", INSPVA.name());
        }
        if let Err(e) = self.stdev.send(stdev) {
            tracing::error!("cannot publish {}: {e}", INSSTDEV.name());
        }
    }
}

/// The true state's publishers: `model_states`, odometry and, with `~publish_tf`, TF.
pub(super) struct StatePublishers {
    model_states: ros1_protocols::runtime::Publisher<ModelStates>,
    odom: ros1_protocols::runtime::Publisher<Odometry>,
    /// `/tf`, and the latched `/tf_static` publisher kept alive, with `~publish_tf`.
    tf: Option<(
        ros1_protocols::runtime::Publisher<TFMessage>,
        ros1_protocols::runtime::Publisher<TFMessage>,
    )>,
}

impl StatePublishers {
    pub(super) fn new(publish_tf: bool, start: Time) -> Result<Self, RosError> {
        let tf = if publish_tf {
            let tf = TF.publish()?;
            let fixed = TF_STATIC.publish()?;
            let joints = FIXED_JOINTS
                .iter()
                .map(|j| {
                    let mut t = transform(start, j.parent, j.child);
                    let v = &mut t.transform.translation;
                    (v.x, v.y, v.z) = (j.xyz[0], j.xyz[1], j.xyz[2]);
                    t
                })
                .collect();
            fixed.send(TFMessage { transforms: joints })?;
            Some((tf, fixed))
        } else {
            None
        };
        Ok(StatePublishers {
            model_states: MODEL_STATES.publish()?,
            odom: ODOM.publish()?,
            tf,
        })
    }

    pub(super) fn publish(&self, name: &str, now: Time, s: &VehicleState) {
        let (pose, twist) = (pose_msg(s.pose), twist_msg(s));
        let _ = self.model_states.send(ModelStates {
            name: vec![name.to_owned()],
            pose: vec![pose.clone()],
            twist: vec![twist.clone()],
        });
        if let Some((tf, _)) = &self.tf {
            let mut t = transform(now, frames::WORLD, frames::BASE_FOOTPRINT);
            let (p, v) = (&pose.position, &mut t.transform.translation);
            (v.x, v.y, v.z) = (p.x, p.y, p.z);
            t.transform.rotation = pose.orientation.clone();
            let _ = tf.send(TFMessage {
                transforms: vec![t],
            });
        }
        let mut odom = Odometry {
            header: Header {
                seq: 0,
                stamp: to_ros(now),
                frame_id: frames::WORLD.into(),
            },
            child_frame_id: frames::BASE_FOOTPRINT.into(),
            ..Default::default()
        };
        odom.pose.pose = pose;
        // Odometry twist is in the child (body) frame.
        odom.twist.twist.linear.x = s.speed_mps;
        odom.twist.twist.linear.y = s.lateral_speed_mps;
        odom.twist.twist.angular.z = s.yaw_rate_rad_s;
        let _ = self.odom.send(odom);
    }
}

/// An identity transform from `parent` to `child` at `at`.
pub(super) fn transform(at: Time, parent: &str, child: &str) -> TransformStamped {
    let mut t = TransformStamped {
        header: Header {
            seq: 0,
            stamp: to_ros(at),
            frame_id: parent.into(),
        },
        child_frame_id: child.into(),
        ..Default::default()
    };
    t.transform.rotation.w = 1.0;
    t
}

pub(super) fn pose_msg(p: Pose) -> PoseMsg {
    let mut m = PoseMsg::default();
    m.position.x = p.x;
    m.position.y = p.y;
    m.orientation.z = (p.yaw / 2.0).sin();
    m.orientation.w = (p.yaw / 2.0).cos();
    m
}

/// World-frame twist of the rear axle, as Gazebo reports it.
pub(super) fn twist_msg(s: &VehicleState) -> Twist {
    let mut t = Twist::default();
    [t.linear.x, t.linear.y] = s.velocity_of_point_ahead(0.0);
    t.angular.z = s.yaw_rate_rad_s;
    t
}
