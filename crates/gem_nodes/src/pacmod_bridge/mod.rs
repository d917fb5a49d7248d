//! `pacmod_bridge`: the suite's `AckermannDrive` commands to the GEM e2's PACMod 2, through
//! `gem_core::pacmod::bridge` (docs/spec.md §7). The node only converts messages and
//! carries out what the core returns: the engagement, the pedal loop, the steering
//! relation and the watchdog are the core's.
//!
//! Each input is handed to the core the moment it arrives (an override stops commanding
//! before the next tick); each tick of `~rate` (ROS time) sends what the core says, or
//! nothing. Its topics and services: [`INTERFACE`].

pub mod params;
pub use params::PARAMS;

use crate::learning::{stamped, LearnerThread};
use anyhow::Context;
use gem_core::names;
use gem_core::pacmod::bridge::{
    Bridge, BridgeTransition, Event, Output, PacmodCommand, State, StateName,
};
use gem_core::pacmod::calibration::Request;
use gem_core::pacmod::longitudinal::Longitudinal;
use gem_core::pacmod::pedal_map::Pedal;
use gem_core::pacmod::{SHIFT_FORWARD, TURN_NONE};
use gem_core::time::Time;
use gem_core::vehicle::actuator::SteeringActuator;
use gem_core::vehicle::identify::{Command, Motor, Reading};
use gem_core::vehicle::learn::LearnConfig;
use gem_core::vehicle::DriveCommand;
use gem_core::vehicle::VehicleParams;
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::diagnostic_msgs::{DiagnosticArray, KeyValue};
use gem_msgs::gem_state_msgs::{CalibrationRun, CalibrationRunRes, EstopStamped};
use gem_msgs::pacmod_msgs::{GlobalRpt, PacmodCmd, PositionWithSpeed, SystemRptFloat};
use gem_msgs::std_msgs::{Bool, Float64, Header};
use gem_msgs::std_srvs::{Trigger, TriggerRes};
use gem_ros::time::{self, to_ros, Ticker};
use gem_ros::topics::Decl;
use params::Params;
use ros1_protocols::direct::DirectSubscriber;
use ros1_protocols::runtime::Publisher;
use ros1_protocols::service::Service;
use ros1_protocols::Lock;
use ros1_protocols::RosError;
use std::sync::{Arc, Mutex};
use std::time::Duration;

// The simulator's PACMod rows (`crate::sim::topics`, `~interface: pacmod`) are the other
// end of this table's PACMod rows (all but the turn signal's): the same names and message
// types, the other direction. Two tables on purpose: each node declares what it does on a
// topic and describes it in its own documentation's interface table. A change to a PACMod
// topic is made in both.
gem_ros::interface_table! {
    /// Every topic and service of the node.
    pub const INTERFACE = [
        /// The drive commands.
        COMMAND: AckermannDrive = Decl::subscribes(names::ACKERMANN_CMD, "drive commands: `steering_angle` (front wheel, rad), `speed` (m/s), `acceleration` (a magnitude, m/s², 0: none; a stop's deceleration); NaN or out of range: refused, logged, braked");
        /// The PACMod's enabled state.
        ENABLED: Bool = Decl::subscribes(names::PACMOD_ENABLED, "whether the PACMod is enabled; dropping while engaged disengages the bridge (latched)");
        /// The speed.
        SPEED: Float64 = Decl::subscribes(names::PACMOD_VEHICLE_SPEED, "the speed, m/s (the driver's parsed `vehicle_speed_rpt` is in mph; this is it × 0.44704)");
        /// The override.
        GLOBAL_RPT: GlobalRpt = Decl::subscribes(names::PACMOD_GLOBAL_RPT, "`override_active`: a driver override disengages the bridge (latched)");
        /// The steering wheel.
        STEER_RPT: SystemRptFloat = Decl::subscribes(names::PACMOD_STEER_RPT, "`output`: the steering wheel, rad, watched against the command");
        /// Engage.
        ENABLE_CMD: Bool = Decl::publishes(names::PACMOD_ENABLE_CMD, 10, "`true` every tick while the bridge commands the PACMod; nothing otherwise");
        /// Accelerator.
        ACCEL_CMD: PacmodCmd = Decl::publishes(names::PACMOD_ACCEL_CMD, 10, "every tick while commanding: the accelerator, fraction 0–1; 0 whenever the brake is pressed (the released pedal's command is sent first)");
        /// Brake.
        BRAKE_CMD: PacmodCmd = Decl::publishes(names::PACMOD_BRAKE_CMD, 10, "every tick while commanding: the brake, fraction 0–1; 0 whenever the accelerator is pressed (the released pedal's command is sent first)");
        /// Gear.
        SHIFT_CMD: PacmodCmd = Decl::publishes(names::PACMOD_SHIFT_CMD, 10, "every tick while engaged: `SHIFT_FORWARD` (3)");
        /// Turn signal.
        TURN_CMD: PacmodCmd = Decl::publishes(names::PACMOD_TURN_CMD, 10, "every tick while engaged: `TURN_NONE` (1)");
        /// Steering wheel.
        STEER_CMD: PositionWithSpeed = Decl::publishes(names::PACMOD_STEER_CMD, 10, "every tick while driving or braking: the steering wheel (rad, + left) for the last valid command's front-wheel angle, with `~steering_rate_rad_s`");
        /// The fault, for the state manager.
        FAULT: EstopStamped = Decl::publishes(names::VEHICLE_FAULT, 10, "every tick: `enabled` is true while a fault stops the car (braking to rest, or disengaged: not commanding)");
        /// The status.
        DIAGNOSTICS: DiagnosticArray = Decl::publishes(names::DIAGNOSTICS, 10, "one status, `<node>: PACMod`, at `~diagnostics_rate` and at once on a change of state: OK engaging, ready or driving, WARN waiting for the PACMod, ERROR braking on a fault or disengaged; the message says why");
        /// The enable request.
        ENABLE: Trigger = Decl::serves("~enable", "an operator's enable request, from the car computer only (signal_sources calls it on the operator's signed engage; other hosts are refused, naming their address): engages from waiting, from a disengagement or from a latched fault (the handshake again); answers the state");
        /// Calibration runs.
        CALIBRATE: CalibrationRun = Decl::serves("~calibrate", "a calibration run, from the car computer only (other hosts are refused, naming their address): hold a pedal fraction (`accelerator`, `brake`, at most the map's last row) or a speed (`speed`), and a steering-wheel angle, until a duration, a distance or a speed limit, then brake to rest; `stop` ends it; refused while a controller drives the car or a report is missing; the status's `calibration` value follows the run");
    ];
}

/// The PACMod publishers.
struct Outputs {
    enable: Publisher<Bool>,
    accel: Publisher<PacmodCmd>,
    brake: Publisher<PacmodCmd>,
    shift: Publisher<PacmodCmd>,
    turn: Publisher<PacmodCmd>,
    steer: Publisher<PositionWithSpeed>,
    fault: Publisher<EstopStamped>,
    diagnostics: Publisher<DiagnosticArray>,
}

/// A calibration run as the status showed it: its number, and whether it had ended.
type RunShown = (u32, bool);

/// The core and what was last published about it.
struct Inner {
    bridge: Bridge,
    /// The last output, for the status.
    output: Output,
    /// When the status was last published, the state it showed and the calibration run
    /// it showed.
    reported: Option<(Time, State, Option<RunShown>)>,
    diagnostics_period: Duration,
}

struct Shared {
    inner: Mutex<Inner>,
    out: Outputs,
    /// `~learn_steering`: the learner, and whether the check follows it (`~use_learned`).
    learning: Option<(LearnerThread, bool)>,
}

/// `pacmod_bridge`'s `main`.
pub fn main() -> anyhow::Result<()> {
    crate::run_node("pacmod_bridge", &params::PARAMS, INTERFACE, run)
}

fn run() -> anyhow::Result<()> {
    let p = Params::load().context("invalid parameters")?;
    if !time::wait_for_valid_time() {
        return Ok(());
    }
    let longitudinal = Longitudinal::new(p.longitudinal.clone(), p.accelerator, p.brake);
    let shared = Arc::new(Shared {
        inner: Mutex::new(Inner {
            bridge: Bridge::new(p.bridge.clone(), longitudinal),
            output: Output::Silent,
            reported: None,
            diagnostics_period: Duration::from_secs_f64(1.0 / p.diagnostics_rate_hz),
        }),
        out: Outputs {
            enable: ENABLE_CMD.publish()?,
            accel: ACCEL_CMD.publish()?,
            brake: BRAKE_CMD.publish()?,
            shift: SHIFT_CMD.publish()?,
            turn: TURN_CMD.publish()?,
            steer: STEER_CMD.publish()?,
            fault: FAULT.publish()?,
            diagnostics: DIAGNOSTICS.publish()?,
        },
        learning: match p.learning {
            Some(use_learned) => {
                let b = &p.bridge;
                let configured = Motor::symmetric(
                    b.steering_rate_rad_s,
                    b.steering_lag_s,
                    b.steering_dead_time_s,
                );
                let cfg = LearnConfig::for_wheelbase(VehicleParams::DEFAULT.wheelbase_m);
                Some((LearnerThread::start(cfg, configured)?, use_learned))
            }
            None => None,
        },
    });
    let _io = wire(&shared)?;
    tracing::info!(
        "pacmod_bridge up: {} Hz, command timeout {:?}, sim time {}",
        p.rate_hz,
        p.bridge.command_timeout,
        time::is_sim_time()
    );
    // Only a simulated car engages by itself: on wall time (the real car) the parameter,
    // which any host that reaches the master can set, is refused, and the operator
    // engages (docs/security.md).
    match (p.enable_at_start, time::is_sim_time()) {
        (true, true) => {
            shared.handle(Event::EnableRequest);
        }
        (true, false) => tracing::warn!(
            "~enable_at_start refused: not on sim time (a real car is engaged by its operator, `gemctl operator`)"
        ),
        (false, _) => {}
    }
    let mut ticker = Ticker::from_rate(p.rate_hz);
    while ticker.wait().is_some() {
        shared.tick();
    }
    Ok(())
}

/// The subscriptions and the service.
fn wire(s: &Arc<Shared>) -> Result<(Vec<DirectSubscriber>, [Service; 2]), RosError> {
    let sh = s.clone();
    let command = crate::interface::subscribe(&COMMAND, move |m, _| {
        sh.handle(Event::Command(DriveCommand {
            steering_rad: m.steering_angle.into(),
            speed_mps: m.speed.into(),
            accel_limit_mps2: m.acceleration.into(),
        }));
    })?;
    let sh = s.clone();
    let enabled = crate::interface::subscribe(&ENABLED, move |m, _| {
        sh.handle(Event::Enabled(m.data));
    })?;
    let sh = s.clone();
    let speed = crate::interface::subscribe(&SPEED, move |m, _| {
        sh.handle(Event::Speed(m.data));
    })?;
    let sh = s.clone();
    let global = crate::interface::subscribe(&GLOBAL_RPT, move |m, _| {
        sh.handle(Event::Override(m.override_active));
    })?;
    let sh = s.clone();
    let steer = crate::interface::subscribe(&STEER_RPT, move |m, _| {
        if let Some((learning, _)) = &sh.learning {
            learning.learner().report(Reading {
                t_s: stamped(m.header.stamp),
                angle_rad: m.output,
            });
        }
        sh.handle(Event::SteeringReport(m.output));
    })?;
    let sh = s.clone();
    // Engaging is the operator's act: from the car computer (signal_sources, on the
    // operator's signed request, or a person at the car), never from another host.
    let enable = crate::interface::serve_from_this_computer(&ENABLE, move |_| {
        let state = sh.handle(Event::EnableRequest);
        Ok(TriggerRes {
            success: true,
            message: state.to_string(),
        })
    })?;
    let sh = s.clone();
    // A calibration run drives the car: from the car computer only, as the engage.
    let calibrate = crate::interface::serve_from_this_computer(&CALIBRATE, move |req| {
        Ok(match sh.calibrate(&req) {
            Ok((run, message)) => CalibrationRunRes {
                accepted: true,
                run,
                message,
            },
            Err(message) => {
                tracing::warn!("calibration request refused: {message}");
                CalibrationRunRes {
                    accepted: false,
                    run: 0,
                    message,
                }
            }
        })
    })?;
    Ok((
        vec![command, enabled, speed, global, steer],
        [enable, calibrate],
    ))
}

impl Shared {
    /// One input, at ROS now (read under the lock, so inputs reach the core in time
    /// order); the state after it.
    fn handle(&self, event: Event) -> State {
        let mut inner = self.inner.locked();
        let now = time::now();
        let transitions = inner.bridge.handle(event, now);
        log(&transitions, inner.bridge.state());
        if !transitions.is_empty() {
            self.report(&mut inner, now);
        }
        inner.bridge.state()
    }

    /// A calibration request: the run's number and a line about it, or why not.
    fn calibrate(
        &self,
        req: &gem_msgs::gem_state_msgs::CalibrationRunReq,
    ) -> Result<(u32, String), String> {
        let mut inner = self.inner.locked();
        let now = time::now();
        let request = Request::parse(
            &req.pedal,
            req.fraction,
            req.speed_mps,
            req.steering_wheel_rad,
            req.steering_rate_rad_s,
            req.duration_s,
            req.distance_m,
            req.max_speed_mps,
            &inner.bridge.calibration_limits(),
        )
        .map_err(|e| e.to_string())?;
        let run = inner
            .bridge
            .calibrate(request, now)
            .map_err(|e| e.to_string())?;
        let line = inner
            .bridge
            .calibration_run()
            .map_or_else(String::new, ToString::to_string);
        tracing::info!("{line}");
        self.report(&mut inner, now);
        Ok((run, line))
    }

    /// One tick: what the core says, sent.
    fn tick(&self) {
        let mut inner = self.inner.locked();
        let now = time::now();
        if let Some((learning, true)) = &self.learning {
            let l = learning.learner();
            if l.motor_fit().is_some() {
                let m = l.applied();
                inner.bridge.follow_motor(SteeringActuator {
                    rate_rad_s: m.rate_left_rad_s.min(m.rate_right_rad_s),
                    lag_s: m.lag_s,
                    dead_time_s: m.dead_time_s,
                });
            }
        }
        let tick = inner.bridge.tick(now);
        if let Output::Command(c) = tick.output {
            self.send(c, now);
            if let (Some((learning, _)), Some(s)) = (&self.learning, c.steer) {
                learning.learner().command(Command {
                    t_s: now.as_secs_f64(),
                    angle_rad: s.angle_rad,
                    rate_rad_s: s.rate_limit_rad_s,
                });
            }
        }
        inner.output = tick.output;
        log(&tick.transitions, tick.state);
        let _ = self.out.fault.send(EstopStamped {
            header: header(now),
            enabled: tick.state.fault().is_some(),
        });
        self.report(&mut inner, now);
    }

    /// Sends a command: the released pedal before the pressed one.
    fn send(&self, c: PacmodCommand, now: Time) {
        let o = &self.out;
        let cmd = |f64_cmd: f64, ui16_cmd: u16| PacmodCmd {
            header: header(now),
            f64_cmd,
            ui16_cmd,
            enable: c.enable,
            clear: c.clear_override,
            ignore: false,
        };
        let [first, second] = c.pedals.send_order().map(|(pedal, frac)| match pedal {
            Pedal::Accelerator => (&o.accel, cmd(frac, 0)),
            Pedal::Brake => (&o.brake, cmd(frac, 0)),
        });
        let sent = [
            o.enable.send(Bool { data: c.enable }),
            first.0.send(first.1).and(second.0.send(second.1)),
            match c.forward {
                true => o
                    .shift
                    .send(cmd(0.0, SHIFT_FORWARD))
                    .and(o.turn.send(cmd(0.0, TURN_NONE))),
                false => Ok(()),
            },
            match c.steer {
                Some(s) => o.steer.send(PositionWithSpeed {
                    header: header(now),
                    angular_position: s.angle_rad,
                    angular_velocity_limit: s.rate_limit_rad_s,
                }),
                None => Ok(()),
            },
        ];
        for e in sent.into_iter().filter_map(Result::err) {
            tracing::error!("cannot send a PACMod command: {e}");
        }
    }

    /// Publishes the status when the state changed or the heartbeat is due.
    fn report(&self, inner: &mut Inner, now: Time) {
        let state = inner.bridge.state();
        let run = inner.bridge.calibration_run().cloned();
        let run_key = run.as_ref().map(|r| (r.id, r.ended.is_some()));
        let due = match inner.reported {
            None => true,
            Some((at, shown, shown_run)) => {
                !shown.same(state)
                    || shown_run != run_key
                    || now < at
                    || now.saturating_since(at) >= inner.diagnostics_period
            }
        };
        if !due {
            return;
        }
        inner.reported = Some((now, state, run_key));
        let (accel, brake, wheel) = match inner.output {
            Output::Command(c) => (
                format!("{:.3}", c.pedals.accelerator_frac()),
                format!("{:.3}", c.pedals.brake_frac()),
                c.steer
                    .map_or_else(|| "-".to_owned(), |s| format!("{:.3}", s.angle_rad)),
            ),
            Output::Silent => ("-".into(), "-".into(), "-".into()),
        };
        let values = [
            ("state", state.name().to_string()),
            (
                "fault",
                state.fault().map_or_else(String::new, |f| f.to_string()),
            ),
            ("accelerator", accel),
            ("brake", brake),
            ("steering wheel, rad", wheel),
            (
                "calibration run",
                run.as_ref().map_or_else(String::new, |r| r.id.to_string()),
            ),
            (
                "calibration",
                run.as_ref().map_or_else(String::new, calibration_value),
            ),
            ("steering check built on", {
                let m = inner.bridge.expected_motor();
                format!(
                    "{:.3} rad/s, {:.3} s lag, {:.3} s dead time{}",
                    m.rate_rad_s,
                    m.lag_s,
                    m.dead_time_s,
                    match &self.learning {
                        Some((_, true)) => " (following the learned motor)",
                        Some((_, false)) => " (learning; ~use_learned is off)",
                        None => "",
                    }
                )
            }),
        ]
        .into_iter()
        .map(|(key, value)| KeyValue {
            key: key.into(),
            value,
        })
        .collect();
        crate::interface::publish_status(
            &self.out.diagnostics,
            now,
            "PACMod",
            (
                state.level() as i8,
                match (&run, state) {
                    (Some(r), State::Calibrating) => r.to_string(),
                    _ => state.to_string(),
                },
            ),
            values,
        );
    }
}

/// The status's `calibration` value: `holding`, or `ended: <why>`, then the run.
fn calibration_value(run: &gem_core::pacmod::calibration::Run) -> String {
    match &run.ended {
        None => format!("holding: {run}"),
        Some(end) => format!("ended: {end}"),
    }
}

/// One log line per transition, its reason said once: a warning into a fault, else
/// information.
fn log(transitions: &[BridgeTransition], state: State) {
    let now = state.to_string();
    for t in transitions {
        let line = if now.contains(&t.reason) {
            format!("{} => {}: {now}", t.from, t.to)
        } else {
            format!("{} => {} ({}): {now}", t.from, t.to, t.reason)
        };
        match t.to {
            StateName::Braking | StateName::Disengaged => tracing::warn!("{line}"),
            _ => tracing::info!("{line}"),
        }
    }
}

fn header(now: Time) -> Header {
    Header {
        seq: 0,
        stamp: to_ros(now),
        frame_id: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use gem_msgs::pacmod_msgs::PacmodCmd;

    #[test]
    fn the_core_constants_are_the_message_constants() {
        assert_eq!(gem_core::pacmod::SHIFT_FORWARD, PacmodCmd::SHIFT_FORWARD);
        assert_eq!(gem_core::pacmod::SHIFT_NEUTRAL, PacmodCmd::SHIFT_NEUTRAL);
        assert_eq!(gem_core::pacmod::TURN_NONE, PacmodCmd::TURN_NONE);
    }
}
