//! What the simulator takes in: the Ackermann command (or, through [`super::pacmod_io`],
//! the PACMod's), the teleport and model-state services, and a test's INS status.

use super::outputs::{pose_msg, twist_msg};
use super::pacmod_io::subscribe_pacmod;
use super::params::{Interface, PoseOutput};
use super::topics::*;
use super::world::World;
use gem_core::geometry::Pose;
use gem_core::gnss::health::GOOD_STATUS;
use gem_core::vehicle::DriveCommand;
use gem_msgs::gazebo_msgs::{GetModelStateRes, SetModelStateRes};
use gem_msgs::std_msgs::Header;
use gem_ros::time::to_ros;
use ros1_protocols::direct::DirectSubscriber;
use ros1_protocols::service::Service;
use ros1_protocols::RosError;
use std::sync::Arc;

/// The command subscribers (the Ackermann command, or the PACMod's), with `inspva` the
/// INS status's, and the services: `get_model_state` with `model_state` only.
///
/// Commands come through [`ros1_protocols::direct`]: each is applied on the thread that read it,
/// and none is dropped (rosrust's subscriber forwards through a bounded channel that
/// silently drops a burst, and the vehicle would keep its last speed until the command
/// timeout).
pub(super) fn advertise(
    world: &Arc<World>,
    interface: Interface,
    pose_output: PoseOutput,
) -> Result<(Vec<DirectSubscriber>, Option<Service>, Service), RosError> {
    let w = world.clone();
    let mut subscribers = match interface {
        Interface::Ackermann => vec![crate::interface::subscribe(&COMMAND, move |m, _| {
            w.lock().vehicle.command(DriveCommand {
                steering_rad: m.steering_angle.into(),
                speed_mps: m.speed.into(),
                // As ackermann_msgs defines it: a magnitude, 0 meaning as fast as it can.
                accel_limit_mps2: m.acceleration.into(),
            });
        })?],
        Interface::Pacmod => subscribe_pacmod(world)?,
    };
    let get = match pose_output {
        PoseOutput::ModelState => Some(serve_model_state(world)?),
        PoseOutput::Inspva => {
            subscribers.push(subscribe_ins_status(world)?);
            None
        }
    };
    let w = world.clone();
    let set = crate::interface::serve(&SET_MODEL_STATE, move |req| {
        let ms = req.model_state;
        if ms.model_name != w.name {
            let status_message = format!("SetModelState: model [{}] does not exist", ms.model_name);
            return Ok(SetModelStateRes {
                success: false,
                status_message,
            });
        }
        let (p, q) = (&ms.pose.position, &ms.pose.orientation);
        let pose = Pose::new(
            p.x,
            p.y,
            gem_core::geometry::yaw_from_quaternion(q.x, q.y, q.z, q.w),
        );
        if !pose.is_finite() {
            return Ok(SetModelStateRes {
                success: false,
                status_message: "SetModelState: pose is not finite".into(),
            });
        }
        let mut m = w.lock();
        m.vehicle.reset(pose);
        m.localizer.reset();
        let (now, state) = (m.vehicle.now(), m.vehicle.state());
        m.localizer.observe(now, state);
        drop(m);
        tracing::info!("teleported to {pose:?}");
        Ok(SetModelStateRes {
            success: true,
            status_message: "SetModelState: set model state done".into(),
        })
    })?;
    Ok((subscribers, get, set))
}

/// `gazebo/get_model_state`: what localization reports, stamped with when it was measured.
pub(super) fn serve_model_state(world: &Arc<World>) -> Result<Service, RosError> {
    let w = world.clone();
    crate::interface::serve(&GET_MODEL_STATE, move |req| {
        let m = w.lock();
        if req.model_name != w.name {
            return Ok(crate::interface::unknown_model(&req.model_name));
        }
        // What localization reports, stamped with when it was measured.
        let (at, s) = match m.localizer.report() {
            Some(r) => (r.measured_at, r.state),
            None => (m.vehicle.now(), m.vehicle.state()),
        };
        Ok(GetModelStateRes {
            header: Header {
                seq: 0,
                stamp: to_ros(at),
                frame_id: req.relative_entity_name,
            },
            pose: pose_msg(s.pose),
            twist: twist_msg(&s),
            success: true,
            status_message: "GetModelState: got properties".into(),
        })
    })
}

/// `~ins_status`: a test's status for the solution; each change logged once.
pub(super) fn subscribe_ins_status(world: &Arc<World>) -> Result<DirectSubscriber, RosError> {
    let w = world.clone();
    crate::interface::subscribe(&INS_STATUS, move |m, _| {
        let changed = w.lock().ins_status.request(&m.data);
        match (changed, m.data.is_empty()) {
            (false, _) => {}
            (true, true) => tracing::info!("INS status restored to {GOOD_STATUS}"),
            (true, false) => tracing::warn!(
                "INS status set to \"{}\" on {}: the solution is reported bad",
                m.data,
                INS_STATUS.name()
            ),
        }
    })
}
