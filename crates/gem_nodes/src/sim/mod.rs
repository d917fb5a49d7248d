//! `gem_sim`: a headless stand-in for Gazebo and the GEM e2 Ackermann plugin, built on
//! `gem_core::vehicle` (docs/spec.md §4–5): the single-track model with tyre slip by
//! default (`~model`), and on request a localization model behind `get_model_state`, or,
//! with `~pose_output: inspva`, behind the GNSS/INS solution the real car's Novatel
//! publishes (`gem_core::gnss::simulated`), for `gnss_pose` to serve the pose from.
//!
//! Its topics and services: [`INTERFACE`].
//!
//! With `~publish_clock` the simulator owns time: it steps the model at `~rate`, publishes
//! `/clock` after each step, and paces itself at `~speedup` × real time, so a 300 s lap
//! takes 30 s at 10×. `speedup` is also a dynamic_reconfigure parameter then
//! (`dynparam set /gem_sim speedup 1`), like Gazebo's real-time factor: the pace changes
//! from the next step, sim time stays continuous. Without `~publish_clock` it steps on ROS
//! time like any node.
//!
//! The frames are the Gazebo GEM e2's ([`gem_core::vehicle::frames`]): its odometry's
//! `world` and `base_footprint` (the rear axle), and the fixed joints of its description, so
//! RViz and tf tools find the tree a Gazebo user has. Odometry, `model_states` and TF carry
//! the true state; only `get_model_state` goes through the localization model.
//!
//! With `~interface: pacmod` the car is driven as the real GEM e2 is, through the PACMod 2
//! driver's topics, by [`gem_core::pacmod::plant`]: the driver's re-sending of the last
//! command (no timeout), enable and override, the pedal maps used forward, the steering
//! wheel through the steering relation at its rate limit; reports at
//! `~pacmod_report_rate` with optional noise and latency. `gem/ackermann_cmd` is not
//! subscribed then. A test or an operator takes the controls with
//! `rostopic pub /gem_sim/pacmod_override std_msgs/Bool true`.
//!
//! With `~pose_output: inspva` the simulator does not serve `gazebo/get_model_state`: it
//! publishes each new solution of the localization model (`~inspva_*`) as an `Inspva` at
//! the antenna, stamped with its measurement time, and `gnss_pose` serves the pose. A test
//! makes the solution bad with `rostopic pub /gem_sim/ins_status std_msgs/String
//! INS_ALIGNING` (an empty string restores `INS_SOLUTION_GOOD`).

mod clock;
mod hardware;
mod inputs;
mod outputs;
mod pacmod_io;
pub mod params;
mod topics;
mod world;

pub use clock::DYN_PARAMS;
pub use params::PARAMS;
pub use topics::*;

use clock::{run_on_ros_time, run_own_clock};
use gem_core::gnss::simulated::StatusOverride;
use gem_core::pacmod::plant::Plant;
use gem_core::time::Time;
use gem_core::vehicle::localization::Localizer;
use gem_core::vehicle::VehicleModel;
use gem_ros::time;
use inputs::advertise;
use outputs::{InsOutput, Outputs, StatePublishers};
use pacmod_io::PacmodReports;
use params::{Interface, Params, PoseOutput};
use std::sync::{Arc, Mutex};
use world::{Sim, World};

/// `gem_sim`'s `main`.
pub fn main() -> anyhow::Result<()> {
    crate::run_node("gem_sim", &params::PARAMS, INTERFACE, run)
}

fn run() -> anyhow::Result<()> {
    use anyhow::Context;
    let p = Params::load().context("invalid parameters")?;
    let start = if p.publish_clock {
        Time::from_sec_nsec(1, 0)
    } else {
        wait_ros_time()?
    };
    let vehicle = VehicleModel::new(p.vehicle.clone(), p.spawn, start);
    let mut localizer = Localizer::new(match p.pose_output {
        PoseOutput::ModelState => p.localization.clone(),
        PoseOutput::Inspva => p.inspva.clone(),
    });
    localizer.observe(start, vehicle.state());
    let pacmod = (p.interface == Interface::Pacmod).then(|| {
        let (accelerator, brake) = p.pacmod_maps.clone();
        Plant::new(p.pacmod.clone(), accelerator, brake)
    });
    let world = Arc::new(World {
        model: Mutex::new(Sim {
            vehicle,
            localizer,
            ins_status: StatusOverride::default(),
            pacmod,
        }),
        name: p.model_name.clone(),
    });
    let _io = advertise(&world, p.interface, p.pose_output)?;
    let mut outputs = Outputs {
        pacmod: match p.interface {
            Interface::Pacmod => Some(PacmodReports::new(p.pacmod_report_rate_hz)?),
            Interface::Ackermann => None,
        },
        ins: match p.pose_output {
            PoseOutput::Inspva => Some(InsOutput::new(&p)?),
            PoseOutput::ModelState => None,
        },
        hardware: match p.interface {
            Interface::Pacmod => Some(hardware::Hardware::new(p.hardware.clone())?),
            Interface::Ackermann => None,
        },
    };
    let states = StatePublishers::new(p.publish_tf, start)?;
    tracing::info!(
        "gem_sim up: {} model, spawn {:?}, {} Hz, {}, clock {}",
        p.vehicle.chassis.name(),
        p.spawn,
        p.rate_hz,
        match p.pose_output {
            PoseOutput::ModelState if p.localization.is_off() => {
                "get_model_state: ground truth".to_string()
            }
            PoseOutput::ModelState => format!("get_model_state: {:?}", p.localization),
            PoseOutput::Inspva => format!(
                "Inspva on {} (get_model_state not served): {:?}, {:?}",
                INSPVA.name(),
                p.inspva,
                p.ins_frame
            ),
        },
        if p.publish_clock {
            format!("owned at {}×", p.speedup)
        } else {
            "ROS time".into()
        }
    );
    if p.publish_clock {
        run_own_clock(&p, &world, &states, &mut outputs)
    } else {
        run_on_ros_time(&p, &world, &states, &mut outputs)
    }
}

fn wait_ros_time() -> anyhow::Result<Time> {
    anyhow::ensure!(
        time::wait_for_valid_time(),
        "shut down before ROS time started"
    );
    Ok(time::now())
}
