//! `gem_sim`: a headless stand-in for Gazebo and the GEM e2 Ackermann plugin, built on
//! `gem_core::vehicle` (docs/spec.md §4–5): the single-track model with tyre slip by
//! default (`~model`), and on request a localization model behind `get_model_state`.
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

pub mod params;
pub use params::PARAMS;

use gem_core::geometry::Pose;
use gem_core::names;
use gem_core::time::Time;
use gem_core::vehicle::frames::{self, FIXED_JOINTS};
use gem_core::vehicle::localization::Localizer;
use gem_core::vehicle::pacing::{Pace, Pacer};
use gem_core::vehicle::{DriveCommand, VehicleModel, VehicleState};
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::gazebo_msgs::{
    GetModelState, GetModelStateRes, ModelStates, SetModelState, SetModelStateRes,
};
use gem_msgs::geometry_msgs::{Pose as PoseMsg, TransformStamped, Twist};
use gem_msgs::nav_msgs::Odometry;
use gem_msgs::rosgraph_msgs::Clock;
use gem_msgs::std_msgs::Header;
use gem_msgs::tf2_msgs::TFMessage;
use gem_ros::time::{self, to_ros, Ticker};
use gem_ros::topics::Decl;
use params::Params;
use ros1_protocols::direct::DirectSubscriber;
use ros1_protocols::dynamic_reconfigure::{DynParam, Kind, Server};
use ros1_protocols::service::Service;
use ros1_protocols::Lock;
use ros1_protocols::RosError;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

gem_ros::interface_table! {
    /// Every topic and service of the node.
    pub const INTERFACE = [
        /// The drive commands.
        COMMAND: AckermannDrive = Decl::subscribes(names::ACKERMANN_CMD, "drive commands, each applied on the thread that read it (none dropped in a burst)");
        /// The pose, through the localization model.
        GET_MODEL_STATE: GetModelState = Decl::serves(names::GET_MODEL_STATE, "the pose and twist as localization reports them, stamped with the measurement time; persistent connections accepted; an unknown model: `success: false` and a message");
        /// Teleport.
        SET_MODEL_STATE: SetModelState = Decl::serves(names::SET_MODEL_STATE, "teleports the car, which stops");
        /// The true state, as Gazebo publishes it.
        MODEL_STATES: ModelStates = Decl::publishes(names::MODEL_STATES, 10, "the true state at `~state_rate`");
        /// The true state, as odometry.
        ODOM: Odometry = Decl::publishes(names::ODOM, 10, "the true state at `~state_rate`, frame `world`, child `base_footprint`");
        /// Sim time, when the simulator owns it.
        CLOCK: Clock = Decl::latched(names::CLOCK, 10, "with `~publish_clock`: sim time after each step");
        /// The car's pose as a transform.
        TF: TFMessage = Decl::publishes(names::TF, 100, "with `~publish_tf`: `world` → `base_footprint`, at `~state_rate`");
        /// The description's fixed joints.
        TF_STATIC: TFMessage = Decl::latched(names::TF_STATIC, 1, "with `~publish_tf`: `base_footprint` → `base_link` → `center_link`, once");
    ];
}

/// The model and what localization makes of it, shared by the command subscriber, the
/// services and the stepping loop.
struct World {
    model: Mutex<Sim>,
    name: String,
}

struct Sim {
    vehicle: VehicleModel,
    localizer: Localizer,
}

impl Sim {
    /// One step, and the localization's view of it.
    fn step(&mut self, dt: Duration) {
        self.vehicle.step(dt);
        self.localizer
            .observe(self.vehicle.now(), self.vehicle.state());
    }
}

impl World {
    fn lock(&self) -> MutexGuard<'_, Sim> {
        self.model.locked()
    }
}

/// `gem_sim`'s `main`.
pub fn main() -> anyhow::Result<()> {
    crate::run_node("gem_sim", &params::PARAMS, run)
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
    let mut localizer = Localizer::new(p.localization.clone());
    localizer.observe(start, vehicle.state());
    let world = Arc::new(World {
        model: Mutex::new(Sim { vehicle, localizer }),
        name: p.model_name.clone(),
    });
    let _io = advertise(&world)?;
    let states = StatePublishers::new(p.publish_tf, start)?;
    tracing::info!(
        "gem_sim up: {} model, spawn {:?}, {} Hz, localization {}, clock {}",
        p.vehicle.chassis.name(),
        p.spawn,
        p.rate_hz,
        if p.localization.is_off() {
            "ground truth".to_string()
        } else {
            format!("{:?}", p.localization)
        },
        if p.publish_clock {
            format!("owned at {}×", p.speedup)
        } else {
            "ROS time".into()
        }
    );
    if p.publish_clock {
        run_own_clock(&p, &world, &states)
    } else {
        run_on_ros_time(&p, &world, &states)
    }
}

fn wait_ros_time() -> anyhow::Result<Time> {
    anyhow::ensure!(
        time::wait_for_valid_time(),
        "shut down before ROS time started"
    );
    Ok(time::now())
}

/// The simulator's reconfigurable values (with `~publish_clock`).
pub const DYN_PARAMS: &[DynParam] = &[DynParam {
    name: "speedup",
    kind: Kind::Double {
        default: 1.0,
        min: 0.01,
        max: 1000.0,
    },
    description: "simulated seconds per wall second",
}];

/// Owns `/clock`: step, publish the clock, sleep until the wall time this sim time is due
/// ([`Pacer`]: a stall is not made up in a burst of sim time).
fn run_own_clock(p: &Params, world: &World, states: &StatePublishers) -> anyhow::Result<()> {
    let clock = CLOCK.publish()?;
    let server = Server::new(DYN_PARAMS, Box::new(|_| Ok(())))?;
    let dt = Duration::from_secs_f64(1.0 / p.rate_hz);
    let every = ((p.rate_hz / p.state_rate_hz).round() as u64).max(1);
    let mut steps = 0u64;
    let origin = Instant::now();
    let mut pacer = Pacer::new(dt, p.speedup, origin.elapsed());
    let mut behind = Behind::default();
    while ros1_protocols::this_node::is_ok() {
        let wanted = server.values().double("speedup");
        if wanted != pacer.speedup() {
            tracing::info!("speed-up {}× -> {wanted}×", pacer.speedup());
            pacer.set_speedup(wanted, origin.elapsed());
        }
        let (now, state) = {
            let mut m = world.lock();
            m.step(dt);
            (m.vehicle.now(), m.vehicle.state())
        };
        let _ = clock.send(Clock { clock: to_ros(now) });
        steps += 1;
        if steps.is_multiple_of(every) {
            states.publish(&world.name, now, &state);
        }
        match pacer.stepped(origin.elapsed()) {
            Pace::Sleep(wait) => std::thread::sleep(wait),
            Pace::Behind { late } => behind.record(late),
        }
    }
    Ok(())
}

/// Stalls of the stepping loop, reported at most every few seconds.
#[derive(Default)]
struct Behind {
    stalls: u32,
    lost: Duration,
    reported: Option<Instant>,
}

impl Behind {
    const REPORT_EVERY: Duration = Duration::from_secs(5);

    fn record(&mut self, late: Duration) {
        self.stalls += 1;
        self.lost += late;
        if self
            .reported
            .is_none_or(|at| at.elapsed() >= Self::REPORT_EVERY)
        {
            tracing::warn!(
                "stepping fell behind the wall clock {} time(s), {:.0} ms in all (latest {:.0} ms): \
                 sim time runs slower than the speed-up rather than catching up in a burst",
                self.stalls,
                self.lost.as_secs_f64() * 1e3,
                late.as_secs_f64() * 1e3
            );
            *self = Behind {
                reported: Some(Instant::now()),
                ..Behind::default()
            };
        }
    }
}

/// Steps on ROS time (wall, or someone else's `/clock`).
fn run_on_ros_time(p: &Params, world: &World, states: &StatePublishers) -> anyhow::Result<()> {
    let mut ticker = Ticker::from_rate(p.rate_hz);
    let mut last_state = Time::ZERO;
    let state_period = Duration::from_secs_f64(1.0 / p.state_rate_hz);
    while let Some(now) = ticker.wait() {
        let state = {
            let mut m = world.lock();
            let dt = now.saturating_since(m.vehicle.now());
            m.step(dt);
            m.vehicle.state()
        };
        if now.saturating_since(last_state) >= state_period {
            last_state = now;
            states.publish(&world.name, now, &state);
        }
    }
    Ok(())
}

/// The command subscriber and the two services.
///
/// Commands come through [`ros1_protocols::direct`]: each is applied on the thread that read it,
/// and none is dropped (rosrust's subscriber forwards through a bounded channel that
/// silently drops a burst, and the vehicle would keep its last speed until the command
/// timeout).
fn advertise(world: &Arc<World>) -> Result<(DirectSubscriber, Service, Service), RosError> {
    let w = world.clone();
    let cmd = crate::interface::subscribe(&COMMAND, move |m, _| {
        w.lock().vehicle.command(DriveCommand {
            steering_rad: m.steering_angle.into(),
            speed_mps: m.speed.into(),
            // As ackermann_msgs defines it: a magnitude, 0 meaning as fast as it can.
            accel_limit_mps2: m.acceleration.into(),
        });
    })?;
    let w = world.clone();
    let get = crate::interface::serve(&GET_MODEL_STATE, move |req| {
        let m = w.lock();
        if req.model_name != w.name {
            let status_message =
                format!("GetModelState: model [{}] does not exist", req.model_name);
            return Ok(GetModelStateRes {
                success: false,
                status_message,
                ..Default::default()
            });
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
    })?;
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
    Ok((cmd, get, set))
}

struct StatePublishers {
    model_states: ros1_protocols::runtime::Publisher<ModelStates>,
    odom: ros1_protocols::runtime::Publisher<Odometry>,
    /// `/tf`, and the latched `/tf_static` publisher kept alive, with `~publish_tf`.
    tf: Option<(
        ros1_protocols::runtime::Publisher<TFMessage>,
        ros1_protocols::runtime::Publisher<TFMessage>,
    )>,
}

impl StatePublishers {
    fn new(publish_tf: bool, start: Time) -> Result<Self, RosError> {
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

    fn publish(&self, name: &str, now: Time, s: &VehicleState) {
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
fn transform(at: Time, parent: &str, child: &str) -> TransformStamped {
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

fn pose_msg(p: Pose) -> PoseMsg {
    let mut m = PoseMsg::default();
    m.position.x = p.x;
    m.position.y = p.y;
    m.orientation.z = (p.yaw / 2.0).sin();
    m.orientation.w = (p.yaw / 2.0).cos();
    m
}

/// World-frame twist of the rear axle, as Gazebo reports it.
fn twist_msg(s: &VehicleState) -> Twist {
    let mut t = Twist::default();
    let (sin, cos) = s.pose.yaw.sin_cos();
    t.linear.x = s.speed_mps * cos - s.lateral_speed_mps * sin;
    t.linear.y = s.speed_mps * sin + s.lateral_speed_mps * cos;
    t.angular.z = s.yaw_rate_rad_s;
    t
}
