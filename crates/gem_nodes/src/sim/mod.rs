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

pub mod params;
pub use params::PARAMS;

use gem_core::geometry::Pose;
use gem_core::gnss::health::GOOD_STATUS;
use gem_core::gnss::pose::InsPose;
use gem_core::gnss::simulated::{self, StatusOverride};
use gem_core::names;
use gem_core::pacmod::plant::{Flags, Plant};
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
use gem_msgs::novatel_gps_msgs::Inspva;
use gem_msgs::pacmod_msgs::{
    GlobalRpt, PacmodCmd, PositionWithSpeed, SystemRptFloat, VehicleSpeedRpt,
};
use gem_msgs::rosgraph_msgs::Clock;
use gem_msgs::std_msgs::{Bool, Float64, Header, String as StringMsg};
use gem_msgs::tf2_msgs::TFMessage;
use gem_ros::time::{self, to_ros, Ticker};
use gem_ros::topics::Decl;
use params::{Interface, Params, PoseOutput};
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
        GET_MODEL_STATE: GetModelState = Decl::serves(names::GET_MODEL_STATE, "`model_state` (the default): the pose and twist as localization reports them, stamped with the measurement time; persistent connections accepted; an unknown model: `success: false` and a message. Not served with `inspva`");
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
        /// The GNSS/INS solution.
        INSPVA: Inspva = Decl::publishes(names::INSPVA, 10, "`inspva`: the solution of the antenna `~antenna_ahead_m` ahead of the rear axle at `~inspva_rate_hz`, published `~inspva_latency_s` after its measurement and stamped with it: `latitude`, `longitude`, `height` around `~origin_*`, `azimuth` (degrees clockwise from north), the antenna's `east_velocity`, `north_velocity`, `up_velocity`, `roll` and `pitch` 0, `status` `INS_SOLUTION_GOOD` or the one set on `~ins_status`");
        /// The test's INS status.
        INS_STATUS: StringMsg = Decl::subscribes("~ins_status", "`inspva`: a non-empty string (`INS_SOLUTION_FREE`, `INS_ALIGNING`) becomes the solution's `status`, an empty one restores `INS_SOLUTION_GOOD`");
        /// PACMod: engage.
        PACMOD_ENABLE_CMD: Bool = Decl::subscribes(names::PACMOD_ENABLE_CMD, "`pacmod`: `true` enables the PACMod (a fresh one is needed after an override), `false` disables it");
        /// PACMod: accelerator.
        PACMOD_ACCEL_CMD: PacmodCmd = Decl::subscribes(names::PACMOD_ACCEL_CMD, "`pacmod`: accelerator 0–1 (applies in forward only); `clear` clears a released override");
        /// PACMod: brake.
        PACMOD_BRAKE_CMD: PacmodCmd = Decl::subscribes(names::PACMOD_BRAKE_CMD, "`pacmod`: brake 0–1; `clear` clears a released override");
        /// PACMod: gear.
        PACMOD_SHIFT_CMD: PacmodCmd = Decl::subscribes(names::PACMOD_SHIFT_CMD, "`pacmod`: the gear (`ui16_cmd`; starts in neutral, 2); `clear` clears a released override");
        /// PACMod: steering wheel.
        PACMOD_STEER_CMD: PositionWithSpeed = Decl::subscribes(names::PACMOD_STEER_CMD, "`pacmod`: the steering wheel, rad, + left, moved at the command's rate limit (at most `~pacmod_max_wheel_rate_rad_s`)");
        /// PACMod: the test's override.
        PACMOD_OVERRIDE: Bool = Decl::subscribes("~pacmod_override", "`pacmod`: `true` is a driver taking the controls (the PACMod disables and latches `override_active`), `false` letting go");
        /// PACMod: enabled.
        PACMOD_ENABLED: Bool = Decl::publishes(names::PACMOD_ENABLED, 10, "`pacmod`: whether the PACMod is enabled, at `~pacmod_report_rate`");
        /// PACMod: the speed in m/s.
        PACMOD_SPEED: Float64 = Decl::publishes(names::PACMOD_VEHICLE_SPEED, 10, "`pacmod`: the speed, m/s (the mph of `vehicle_speed_rpt` × 0.44704, as the driver computes it), at `~pacmod_report_rate`");
        /// PACMod: the speed in mph.
        PACMOD_SPEED_RPT: VehicleSpeedRpt = Decl::publishes(names::PACMOD_VEHICLE_SPEED_RPT, 10, "`pacmod`: `vehicle_speed` in mph (as the `pacmod2` driver parses it), `vehicle_speed_valid` true, at `~pacmod_report_rate`");
        /// PACMod: the steering wheel.
        PACMOD_STEER_RPT: SystemRptFloat = Decl::publishes(names::PACMOD_STEER_RPT, 10, "`pacmod`: `output` the steering wheel (rad), `command` the last command, `enabled`, `override_active`, at `~pacmod_report_rate`");
        /// The accelerator report.
        PACMOD_ACCEL_RPT: SystemRptFloat = Decl::publishes(names::PACMOD_ACCEL_RPT, 10, "`pacmod`: `command` the last accelerator command, `output` the accelerator that applies (0 while disabled), fractions, at `~pacmod_report_rate`");
        /// The brake report.
        PACMOD_BRAKE_RPT: SystemRptFloat = Decl::publishes(names::PACMOD_BRAKE_RPT, 10, "`pacmod`: `command` the last brake command, `output` the brake that applies (0 while disabled), fractions, at `~pacmod_report_rate`");
        /// PACMod: enabled and override.
        PACMOD_GLOBAL_RPT: GlobalRpt = Decl::publishes(names::PACMOD_GLOBAL_RPT, 10, "`pacmod`: `enabled` and `override_active`, at `~pacmod_report_rate`");
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
    /// With `~pose_output: inspva`: the solution's status.
    ins_status: StatusOverride,
    /// With `~interface: pacmod`: the PACMod in front of the car.
    pacmod: Option<Plant>,
}

impl Sim {
    /// One step, and the localization's view of it.
    fn step(&mut self, dt: Duration) {
        if let Some(plant) = &mut self.pacmod {
            let a = plant.step(dt, self.vehicle.state().speed_mps);
            self.vehicle
                .drive_by_acceleration(a.front_wheel_rad, a.accel_mps2);
        }
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
fn run_own_clock(
    p: &Params,
    world: &World,
    states: &StatePublishers,
    outputs: &mut Outputs,
) -> anyhow::Result<()> {
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
        outputs.publish_if_due(world, now);
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
fn run_on_ros_time(
    p: &Params,
    world: &World,
    states: &StatePublishers,
    outputs: &mut Outputs,
) -> anyhow::Result<()> {
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
        outputs.publish_if_due(world, now);
    }
    Ok(())
}

/// The command subscribers (the Ackermann command, or the PACMod's), with `inspva` the
/// INS status's, and the services: `get_model_state` with `model_state` only.
///
/// Commands come through [`ros1_protocols::direct`]: each is applied on the thread that read it,
/// and none is dropped (rosrust's subscriber forwards through a bounded channel that
/// silently drops a burst, and the vehicle would keep its last speed until the command
/// timeout).
fn advertise(
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
fn serve_model_state(world: &Arc<World>) -> Result<Service, RosError> {
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
fn subscribe_ins_status(world: &Arc<World>) -> Result<DirectSubscriber, RosError> {
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

/// Runs `f` on the PACMod, if the simulator has one.
fn with_plant(world: &World, f: impl FnOnce(&mut Plant)) {
    if let Some(plant) = &mut world.lock().pacmod {
        f(plant);
    }
}

/// A command's flags.
fn flags(m: &PacmodCmd) -> Flags {
    Flags {
        enable: m.enable,
        clear: m.clear,
    }
}

/// The PACMod's command topics and the override.
fn subscribe_pacmod(world: &Arc<World>) -> Result<Vec<DirectSubscriber>, RosError> {
    let w = world.clone();
    let enable = crate::interface::subscribe(&PACMOD_ENABLE_CMD, move |m, _| {
        with_plant(&w, |p| p.enable_command(m.data));
    })?;
    let w = world.clone();
    let accel = crate::interface::subscribe(&PACMOD_ACCEL_CMD, move |m, _| {
        with_plant(&w, |p| p.accel_command(m.f64_cmd, flags(&m)));
    })?;
    let w = world.clone();
    let brake = crate::interface::subscribe(&PACMOD_BRAKE_CMD, move |m, _| {
        with_plant(&w, |p| p.brake_command(m.f64_cmd, flags(&m)));
    })?;
    let w = world.clone();
    let shift = crate::interface::subscribe(&PACMOD_SHIFT_CMD, move |m, _| {
        with_plant(&w, |p| p.shift_command(m.ui16_cmd, flags(&m)));
    })?;
    let w = world.clone();
    let steer = crate::interface::subscribe(&PACMOD_STEER_CMD, move |m, _| {
        with_plant(&w, |p| {
            p.steer_command(
                m.angular_position,
                m.angular_velocity_limit,
                Flags::default(),
            )
        });
    })?;
    let w = world.clone();
    let takeover = crate::interface::subscribe(&PACMOD_OVERRIDE, move |m, _| {
        tracing::info!(
            "PACMod override {}",
            if m.data { "taken" } else { "let go" }
        );
        with_plant(&w, |p| p.set_override(m.data));
    })?;
    Ok(vec![enable, accel, brake, shift, steer, takeover])
}

/// What the stepping loop publishes besides the state: the PACMod's reports and the
/// GNSS/INS solution, each when its mode is on.
struct Outputs {
    pacmod: Option<PacmodReports>,
    ins: Option<InsOutput>,
}

impl Outputs {
    fn publish_if_due(&mut self, world: &World, now: Time) {
        if let Some(r) = &mut self.pacmod {
            r.publish_if_due(world, now);
        }
        if let Some(ins) = &mut self.ins {
            ins.publish_if_new(world);
        }
    }
}

/// The GNSS/INS solution (`~pose_output: inspva`): each new report of the localization
/// model, at the antenna, stamped with its measurement time.
struct InsOutput {
    publisher: ros1_protocols::runtime::Publisher<Inspva>,
    projection: InsPose,
    /// The measurement time of the last solution published.
    last: Option<Time>,
    /// Whether the last report could not be turned into a solution (logged once a streak).
    failing: bool,
}

impl InsOutput {
    fn new(p: &Params) -> anyhow::Result<Self> {
        use anyhow::Context;
        Ok(InsOutput {
            publisher: INSPVA.publish()?,
            projection: InsPose::new(&p.ins_frame)
                .map_err(|e| gem_ros::params::config_error(&PARAMS, e))
                .context("invalid parameters")?,
            last: None,
            failing: false,
        })
    }

    /// Publishes the localization's report when it is a new one (measured at another
    /// time than the last one published: later, or earlier after time went back).
    fn publish_if_new(&mut self, world: &World) {
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
        let mut msg = Inspva {
            header: Header {
                seq: 0,
                stamp: to_ros(report.measured_at),
                frame_id: String::new(),
            },
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
    }
}

/// The PACMod's reports, published every `period` of simulated time.
struct PacmodReports {
    enabled: ros1_protocols::runtime::Publisher<Bool>,
    speed: ros1_protocols::runtime::Publisher<Float64>,
    speed_rpt: ros1_protocols::runtime::Publisher<VehicleSpeedRpt>,
    steer_rpt: ros1_protocols::runtime::Publisher<SystemRptFloat>,
    accel_rpt: ros1_protocols::runtime::Publisher<SystemRptFloat>,
    brake_rpt: ros1_protocols::runtime::Publisher<SystemRptFloat>,
    global_rpt: ros1_protocols::runtime::Publisher<GlobalRpt>,
    period: Duration,
    last: Option<Time>,
}

impl PacmodReports {
    fn new(rate_hz: f64) -> Result<Self, RosError> {
        Ok(PacmodReports {
            enabled: PACMOD_ENABLED.publish()?,
            speed: PACMOD_SPEED.publish()?,
            speed_rpt: PACMOD_SPEED_RPT.publish()?,
            steer_rpt: PACMOD_STEER_RPT.publish()?,
            accel_rpt: PACMOD_ACCEL_RPT.publish()?,
            brake_rpt: PACMOD_BRAKE_RPT.publish()?,
            global_rpt: PACMOD_GLOBAL_RPT.publish()?,
            period: Duration::from_secs_f64(1.0 / rate_hz),
            last: None,
        })
    }

    /// Publishes the reports when a period has passed since the last ones (or time went
    /// back).
    fn publish_if_due(&mut self, world: &World, now: Time) {
        let due = self
            .last
            .is_none_or(|at| now < at || now.saturating_since(at) >= self.period);
        if !due {
            return;
        }
        self.last = Some(now);
        let report = {
            let mut m = world.lock();
            let speed = m.vehicle.state().speed_mps;
            match &mut m.pacmod {
                Some(plant) => plant.report(now, speed),
                None => return,
            }
        };
        let header = Header {
            seq: 0,
            stamp: to_ros(now),
            frame_id: String::new(),
        };
        let _ = self.speed_rpt.send(VehicleSpeedRpt {
            header: header.clone(),
            vehicle_speed: report.speed_mph,
            vehicle_speed_valid: true,
            ..Default::default()
        });
        let _ = self.speed.send(Float64 {
            data: report.speed_mps,
        });
        let _ = self.steer_rpt.send(SystemRptFloat {
            header: header.clone(),
            enabled: report.enabled,
            override_active: report.override_active,
            command: report.wheel_command_rad,
            output: report.wheel_rad,
            ..Default::default()
        });
        let pedal = |(command, output): (f64, f64)| SystemRptFloat {
            header: header.clone(),
            enabled: report.enabled,
            override_active: report.override_active,
            command,
            output,
            ..Default::default()
        };
        let _ = self
            .accel_rpt
            .send(pedal((report.pedal_commands.0, report.pedal_outputs.0)));
        let _ = self
            .brake_rpt
            .send(pedal((report.pedal_commands.1, report.pedal_outputs.1)));
        let _ = self.global_rpt.send(GlobalRpt {
            header,
            enabled: report.enabled,
            override_active: report.override_active,
            ..Default::default()
        });
        let _ = self.enabled.send(Bool {
            data: report.enabled,
        });
    }
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
    [t.linear.x, t.linear.y] = s.velocity_of_point_ahead(0.0);
    t.angular.z = s.yaw_rate_rad_s;
    t
}
