//! The controller node's loop: goals from the action server, the pose from
//! `gazebo/get_model_state`, a [`Tracker`] per goal, commands on `gem/ackermann_cmd`.
//!
//! The command is a stream, as a drive-by-wire expects: while a goal is driven every tick
//! publishes one (a tick without a pose repeats the last, until `~pose_timeout_s` ends the
//! goal). Every way a goal ends publishes a zero command: success, preemption, a bad goal,
//! a pose that stays unavailable for `~pose_timeout_s`, a non-finite pose; from then until
//! the next goal every tick repeats it (zero speed, the steering held), so one lost message
//! cannot leave the vehicle on its last speed until the actuator's own command timeout.
//! The safety gate starts a stop from the `system_state` callback itself, without waiting
//! for a tick: the error bits' class (`~stop_classes`) decides between an emergency stop
//! (zero speed at once) and a comfortable one (the speed ramps down along
//! `gem_core::control::stop`'s profile). A stop outlives the goal: when the planner cancels
//! it the goal ends PREEMPTED at once, but the tracker keeps steering along the path while
//! the speed follows the stop, until the car is at rest. A cancel without a fault stops a
//! moving car comfortably too (the cancel can also overtake the ERROR that caused it; the
//! ERROR then escalates the stop as its bits say). A new goal, or the fault clearing
//! while the goal is still active, takes over from the speed the car has. Without a pose
//! during a stop the command falls back to zero speed.
//!
//! The pose's twist is checked against the pose history by the tracker
//! (`gem_core::control::twist`); the checks are carried from goal to goal, each doubt is
//! logged once, and `/diagnostics` carries the choice for each component at 1 Hz and at
//! once when it changes.
//!
//! A lost link to the state manager's computer silences both the ERROR and the planner's
//! cancel, so the gate also watches `system_state`'s heartbeat: while a goal is driven, no
//! message for `~system_state_timeout_s` starts the stop a `STALE_DATA` fault would. The
//! goal is held (the car at rest on the path, the goal still active), and drives on when
//! `system_state` returns without ERROR; the planner's cancel and resume, once they get
//! through, take over as for any fault.

use super::params::Params;
use gem_core::control::stop::{
    Stop, StopClass, StopCommand, StopLimits, StopPolicy, STOPPED_BELOW_MPS,
};
use gem_core::control::tracker::{Command, Observation, Tracker};
use gem_core::control::twist::{SourceStatus, TwistSource};
use gem_core::geometry::{yaw_from_quaternion, Point, Pose};
use gem_core::state_manager::ErrorBits;
use gem_core::time::{Time, Watchdog};
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::diagnostic_msgs::{DiagnosticArray, DiagnosticStatus, KeyValue};
use gem_msgs::gazebo_msgs::{GetModelState, GetModelStateReq};
use gem_msgs::gem_controller_action::{
    NavigateWaypointsFeedback, NavigateWaypointsGoal, NavigateWaypointsResult,
};
use gem_msgs::gem_state_msgs::SystemStateStamped;
use gem_msgs::geometry_msgs::PoseStamped;
use gem_msgs::nav_msgs::Path as PathMsg;
use gem_msgs::std_msgs::{Float64, Header};
use gem_msgs::visualization_msgs::Marker;
use gem_ros::action::NavigateWaypoints;
use gem_ros::time::Waker;
use gem_ros::time::{to_core, to_ros};
use ros1_protocols::actionlib::{ActionServer, GoalHandle};
use ros1_protocols::direct::DirectSubscriber;
use ros1_protocols::service::Client;
use ros1_protocols::Lock;
use ros1_protocols::RosError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Publishers and the stop, shared with the safety-gate callback.
struct Outputs {
    command: ros1_protocols::runtime::Publisher<AckermannDrive>,
    /// Last (steering, speed) sent: a stop keeps the steering, and a tick without a pose
    /// repeats the command.
    last: Mutex<(f32, f32)>,
    /// A goal or a stop is being driven (the gate only acts then).
    driving: AtomicBool,
    /// `system_state` is ERROR (or silent, see `silent`) and the gate is on.
    gated: AtomicBool,
    /// `system_state`'s heartbeat.
    state_watch: Mutex<Watchdog>,
    /// The heartbeat was lost while a goal was driven, and no message has come since.
    silent: AtomicBool,
    /// The stop in progress, if any.
    stop: Mutex<Option<Stop>>,
    /// The last measured forward speed, m/s (where a stop begins).
    speed: Mutex<f64>,
    policy: StopPolicy,
    limits: StopLimits,
    /// One control period, s: a stop command is the speed due at the next tick.
    period_s: f64,
}

impl Outputs {
    fn send(&self, steering: f32, speed: f32) {
        self.send_limited(steering, speed, 0.0, 0.0);
    }

    /// A command with `AckermannDrive`'s acceleration and jerk limits (0: the vehicle's own).
    fn send_limited(&self, steering: f32, speed: f32, accel: f32, jerk: f32) {
        *self.last.locked() = (steering, speed);
        let cmd = AckermannDrive {
            steering_angle: steering,
            speed,
            acceleration: accel,
            jerk,
            ..Default::default()
        };
        if let Err(e) = self.command.send(cmd) {
            tracing::error!("cannot publish {}: {e}", super::topics::COMMAND.name());
        }
    }

    /// Zero speed, the steering held.
    fn stop(&self) {
        let (steering, _) = *self.last.locked();
        self.send(steering, 0.0);
    }

    /// A stop's command with `steering`, its speed no higher than `cap`.
    fn send_stop(&self, steering: f32, cmd: StopCommand, cap: f64) {
        self.send_limited(
            steering,
            cmd.speed_mps.min(cap) as f32,
            cmd.accel_mps2 as f32,
            cmd.jerk_mps3 as f32,
        );
    }

    /// Begins a stop of `class` from the last measured speed, or escalates the one in
    /// progress, and with `brake` sends its first command before the stop's lock is let
    /// go; returns the stop, whether it began, and whether it was escalated.
    fn begin_or_escalate(&self, class: StopClass, now: Time, brake: bool) -> (Stop, bool, bool) {
        let speed = *self.speed.locked();
        let steering = self.last.locked().0;
        let mut current = self.stop.locked();
        let (began, escalated) = match current.as_mut() {
            Some(stop) => (false, stop.escalate(class)),
            None => {
                *current = Some(Stop::begin(class, speed, self.limits, now));
                (true, false)
            }
        };
        let stop = current.expect("set above");
        if brake {
            self.send_stop(steering, stop.command(now, self.period_s), f64::INFINITY);
        }
        (stop, began, escalated)
    }

    /// A tick's command, decided under the stop's lock: the stop in progress if there is
    /// one (its speed no higher than `speed`), else `speed` (zero while gated). The gate
    /// begins and escalates stops and sends their first command under the same lock, so
    /// a tick that computed its command before the gate acted never publishes it after
    /// the gate's: an emergency's zero is never followed by an older, faster command.
    /// Returns the stop obeyed.
    fn send_tick(&self, steering: f32, speed: f64, now: Time) -> Option<Stop> {
        let current = self.stop.locked();
        match *current {
            Some(stop) => self.send_stop(steering, stop.command(now, self.period_s), speed),
            None if self.gated.load(Ordering::Relaxed) => self.send(steering, 0.0),
            None => self.send(steering, speed as f32),
        }
        *current
    }

    /// Ends the stop in progress unless the gate is on; true when it did. Decided under
    /// the stop's lock, as the gate begins and escalates stops under it: a stop the gate
    /// has just begun is never wiped by a tick that read the gate off before it acted.
    fn lift_stop(&self) -> bool {
        let mut stop = self.stop.locked();
        if self.gated.load(Ordering::Relaxed) {
            return false;
        }
        *stop = None;
        true
    }

    /// Ends `over`, a stop this thread judged over, unless the gate has since begun or
    /// escalated another (which then goes on, and `false` says so). Decided under the
    /// stop's lock, as in [`Outputs::lift_stop`].
    fn end_stop(&self, over: Stop) -> bool {
        let mut stop = self.stop.locked();
        let ends = *stop == Some(over);
        if ends {
            *stop = None;
        }
        ends
    }

    /// The stop in progress.
    fn current_stop(&self) -> Option<Stop> {
        *self.stop.locked()
    }

    /// The last command again (zero speed while gated): the stream goes on through a tick
    /// without a pose, until `~pose_timeout_s` ends the goal.
    fn repeat(&self) {
        // Decided under the stop's lock, as a tick's command is (`send_tick`).
        let stop = self.stop.locked();
        let (steering, speed) = *self.last.locked();
        let gated = self.gated.load(Ordering::Relaxed) || stop.is_some();
        self.send(steering, if gated { 0.0 } else { speed });
        drop(stop);
    }
}

/// Debug topics for RViz.
struct Debug {
    path: ros1_protocols::runtime::Publisher<PathMsg>,
    target: ros1_protocols::runtime::Publisher<Marker>,
    cross_track: ros1_protocols::runtime::Publisher<Float64>,
}

/// `/diagnostics` of the pose source: the checks carried from goal to goal, and what was
/// published last.
struct SourceReport {
    publisher: ros1_protocols::runtime::Publisher<DiagnosticArray>,
    /// The twist checks of the last tracker (a new goal's tracker continues them).
    source: TwistSource,
    /// ROS time and text of the last publication.
    last: Option<(Time, String)>,
    /// The MPC law's fallbacks not yet published, and the last one's reason.
    mpc_fallbacks: Option<(u64, String)>,
}

/// How often the pose source's status is published without a change, s.
const SOURCE_REPORT_PERIOD_S: f64 = 1.0;

impl SourceReport {
    /// Logs the news of `tracker`'s checks and keeps them for the next goal.
    fn follow(&mut self, tracker: &mut Tracker) {
        for news in tracker.twist_source_mut().take_news() {
            tracing::warn!("{news}");
        }
        self.source = tracker.twist_source().clone();
        if let Some(r) = tracker.take_mpc_report() {
            if let (n @ 1.., Some(e)) = (r.fallbacks, r.last_error) {
                tracing::warn!("mpc: {n} update(s) fell back to the last plan: {e}");
                let total = self.mpc_fallbacks.as_ref().map_or(0, |(t, _)| *t) + n;
                self.mpc_fallbacks = Some((total, e.to_string()));
            }
        }
    }

    /// Publishes the status if it changed or a period has passed, and the MPC's fallbacks
    /// since the last call.
    fn publish(&mut self, now: Time) {
        if let Some((n, reason)) = self.mpc_fallbacks.take() {
            crate::interface::publish_status(
                &self.publisher,
                now,
                "mpc",
                (
                    DiagnosticStatus::WARN,
                    format!("{n} update(s) fell back to the last plan: {reason}"),
                ),
                Vec::new(),
            );
        }
        let status = self.source.status();
        let text = summary(&status);
        let due = match &self.last {
            None => true,
            Some((at, last)) => {
                *last != text
                    || now.saturating_since(*at).as_secs_f64() >= SOURCE_REPORT_PERIOD_S
                    || now < *at
            }
        };
        if !due {
            return;
        }
        let mut values: Vec<KeyValue> = status
            .describe()
            .into_iter()
            .map(|(c, v)| KeyValue {
                key: c.name().into(),
                value: v,
            })
            .collect();
        values.push(KeyValue {
            key: "twist reference point, m ahead of the rear axle".into(),
            value: format!("{:.2}", status.reference_x_m),
        });
        values.push(KeyValue {
            key: "configured reference point, m".into(),
            value: format!("{:.2}", self.source.configured_reference_x_m()),
        });
        let level = if status.all_measured() {
            DiagnosticStatus::OK
        } else {
            DiagnosticStatus::WARN
        };
        crate::interface::publish_status(
            &self.publisher,
            now,
            "pose source",
            (level, text.clone()),
            values,
        );
        self.last = Some((now, text));
    }
}

/// The status in one line: "twist as measured" or the components taken elsewhere.
fn summary(status: &SourceStatus) -> String {
    if status.all_measured() {
        return "twist as measured".into();
    }
    let taken: Vec<String> = status
        .describe()
        .into_iter()
        .filter(|(_, how)| how != "measured")
        .map(|(c, how)| format!("{}: {how}", c.name()))
        .collect();
    taken.join("; ")
}

/// The goal being driven.
struct Active {
    handle: GoalHandle,
    tracker: Tracker,
    /// ROS time of the last good pose (or of acceptance).
    last_pose: Time,
    /// ROS time of acceptance.
    accepted: Time,
}

/// A controller node: action server, pose client, outputs, current goal.
pub struct Controller {
    params: Params,
    server: ActionServer<NavigateWaypoints>,
    pose: Client<GetModelState>,
    out: Arc<Outputs>,
    debug: Debug,
    active: Option<Active>,
    /// The tracker of a goal that ended during a stop: it steers until the car is at rest.
    stopping: Option<Tracker>,
    /// A goal has ended and no new one has started: every tick repeats the zero command.
    holding: bool,
    /// The pose source's checks and their `/diagnostics`.
    report: SourceReport,
    /// `~learn_steering`, if on.
    learning: Option<super::learn::SteeringLearning>,
    /// The learned actuator a goal refused last (not tried again).
    learned_refused: Option<gem_core::vehicle::actuator::SteeringActuator>,
    _gate: Option<DirectSubscriber>,
}

impl Controller {
    /// Advertises, subscribes and connects everything; `waker` is woken by every goal and
    /// cancel (give the loop's ticker the same one).
    pub fn new(params: Params, waker: Waker) -> Result<Self, RosError> {
        let out = Arc::new(Outputs {
            command: super::topics::COMMAND.publish()?,
            last: Mutex::new((0.0, 0.0)),
            driving: AtomicBool::new(false),
            gated: AtomicBool::new(false),
            state_watch: Mutex::new(Watchdog::on_first_message(params.state_timeout)),
            silent: AtomicBool::new(false),
            stop: Mutex::new(None),
            speed: Mutex::new(0.0),
            policy: params.stop_policy.clone(),
            limits: params.stop_limits,
            period_s: 1.0 / params.rate_hz,
        });
        let debug = Debug {
            path: super::topics::DEBUG_PATH.publish()?,
            target: super::topics::DEBUG_TARGET.publish()?,
            cross_track: super::topics::DEBUG_CROSS_TRACK.publish()?,
        };
        let gate = if params.safety_gate {
            Some(safety_gate(out.clone())?)
        } else {
            None
        };
        let report = SourceReport {
            publisher: super::topics::DIAGNOSTICS.publish()?,
            source: TwistSource::new(params.tracker.twist_reference_x_m),
            last: None,
            mpc_fallbacks: None,
        };
        let learning = match params.learning.clone() {
            Some(l) => Some(super::learn::SteeringLearning::start(
                l,
                params.tracker.wheelbase_m,
            )?),
            None => None,
        };
        Ok(Controller {
            report,
            learning,
            learned_refused: None,
            server: ActionServer::new(super::topics::NAVIGATE.name())?.with_waker(waker),
            pose: crate::interface::client(&super::topics::POSE)?,
            params,
            out,
            debug,
            active: None,
            stopping: None,
            holding: false,
            _gate: gate,
        })
    }

    /// One loop iteration at ROS time `now`, and the pose source's report.
    pub fn tick(&mut self, now: Time) {
        self.follow_learned();
        self.step(now);
        if let Some(tracker) = self
            .active
            .as_mut()
            .map(|a| &mut a.tracker)
            .or(self.stopping.as_mut())
        {
            self.report.follow(tracker);
        }
        self.report.publish(now);
        if let Some(learning) = &mut self.learning {
            learning.publish(&self.report.publisher, now);
        }
    }

    /// With `~use_learned`, the goal being driven plans with the motor learned so far
    /// (it moves by limited steps after each refit).
    fn follow_learned(&mut self) {
        let Some(motor) = self.learning.as_ref().and_then(|l| l.planning_motor()) else {
            return;
        };
        let act = motor.planning_actuator();
        if self.learned_refused == Some(act) {
            return;
        }
        for tracker in self
            .active
            .as_mut()
            .map(|a| &mut a.tracker)
            .into_iter()
            .chain(self.stopping.as_mut())
        {
            if tracker.config().actuator == act {
                continue;
            }
            match tracker.set_actuator(act) {
                Ok(()) => tracing::info!(
                    "planning with the learned steering: {:.3} rad/s of steering wheel, {:.3} s lag, {:.3} s dead time",
                    motor.rate_left_rad_s.min(motor.rate_right_rad_s),
                    motor.lag_s,
                    motor.dead_time_s
                ),
                Err(e) => {
                    tracing::warn!("the learned steering is not used: {e}");
                    self.learned_refused = Some(act);
                }
            }
        }
    }

    /// One loop iteration at ROS time `now`.
    fn step(&mut self, now: Time) {
        if let Some((handle, goal)) = self.server.accept_new_goal() {
            self.start(handle, goal, now);
        }
        if let Some(active) = &self.active {
            if self.server.is_preempt_requested(&active.handle) {
                // A cancel is no emergency: a moving car stops comfortably, on the path. The
                // planner's cancel can arrive before the ERROR that caused it; that ERROR
                // then escalates the stop if its bits say so.
                let speed = *self.out.speed.locked();
                let mut stop = self.out.stop.locked();
                if stop.is_none() && speed.abs() >= STOPPED_BELOW_MPS {
                    *stop = Some(Stop::begin(
                        StopClass::Comfortable,
                        speed,
                        self.out.limits,
                        now,
                    ));
                }
                drop(stop);
                self.end(|s, h| {
                    s.preempt(h, NavigateWaypointsResult { success: false }, "cancelled")
                });
            }
        }
        if self.params.safety_gate {
            self.watch_system_state(now);
        }
        if self.active.is_none() && self.stopping.is_none() {
            if self.holding {
                self.out.stop();
            }
            return;
        }
        match self.read_pose() {
            Ok(obs) => {
                *self.out.speed.locked() = obs.speed_mps;
                if let Some(learning) = &self.learning {
                    learning.observe(
                        obs.measured_at.as_secs_f64(),
                        f64::from(self.out.last.locked().0),
                        obs.speed_mps,
                        obs.yaw_rate_rad_s,
                    );
                }
                match self.out.current_stop() {
                    Some(stop) => self.drive_stop(stop, obs, now),
                    None => self.drive(obs, now),
                }
            }
            Err(reason) => self.pose_missing(now, &reason),
        }
    }

    /// While a goal is driven: `system_state` silent for longer than its timeout starts the
    /// stop a `STALE_DATA` fault would (once per silence; the next message ends it).
    fn watch_system_state(&mut self, now: Time) {
        let Some(active) = &self.active else { return };
        let Some(silent) = self.out.state_watch.locked().silent(now, active.accepted) else {
            return;
        };
        if self.out.silent.swap(true, Ordering::Relaxed) {
            return;
        }
        self.out.gated.store(true, Ordering::Relaxed);
        let class = self
            .out
            .policy
            .class_of(ErrorBits::STALE_DATA)
            .unwrap_or(StopClass::Emergency);
        let (stop, _, escalated) = self.out.begin_or_escalate(class, now, false);
        tracing::warn!(
            "no system_state for {:.2} s (timeout {:.2} s; a lost link or state manager?): {} stop{}, goal {} held until system_state returns",
            silent.as_secs_f64(),
            self.params.state_timeout.as_secs_f64(),
            stop.class(),
            if escalated { " (escalated)" } else { "" },
            active.handle.id.id
        );
    }

    /// A tick during a stop: the tracker steers (the goal's, or the one kept after it
    /// ended), the speed follows the stop. The stop ends when the fault has cleared while
    /// a goal is still active (the goal drives on from here), or once the car is at rest.
    fn drive_stop(&mut self, stop: Stop, obs: Observation, now: Time) {
        if self.active.is_some() && self.out.lift_stop() {
            tracing::info!(
                "fault cleared during the {} stop: the goal drives on",
                stop.class()
            );
            return self.drive(obs, now);
        }
        let tracker = match (&mut self.active, &mut self.stopping) {
            (Some(active), _) => {
                active.last_pose = now;
                &mut active.tracker
            }
            (None, Some(tracker)) => tracker,
            (None, None) => return,
        };
        let (steering, cap) = match tracker.observe(obs, now) {
            Ok(cmd) if !cmd.done => (cmd.steering_rad as f32, cmd.speed_mps),
            // At the goal or with a bad pose: stand, the steering held.
            _ => (self.out.last.locked().0, 0.0),
        };
        // The gate may have escalated the stop since the tick read it: the one obeyed counts.
        let stop = self.out.send_tick(steering, cap, now).unwrap_or(stop);
        if stop.is_over(now, obs.speed_mps) {
            tracing::info!(
                "{} stop: at rest {:.2} s after it began",
                stop.class(),
                now.saturating_since(stop.started()).as_secs_f64()
            );
            // An escalated stop goes on: the next tick follows it with the same tracker.
            if self.out.end_stop(stop) && self.active.is_none() {
                if let Some(tracker) = self.stopping.as_mut() {
                    self.report.follow(tracker);
                }
                self.stopping = None;
                self.out.driving.store(false, Ordering::Relaxed);
                self.out.stop();
                self.holding = true;
            }
        }
    }

    /// ROS time stopped (see `~clock_stall_s`). A paused simulator still answers the pose
    /// service and the goal is kept; a dead one does not, and with the clock stopped the
    /// ROS-time pose timeout would never fire: stop and abort now.
    pub fn clock_stalled(&mut self, now: Time) {
        let Some(active) = &self.active else { return };
        match self.read_pose() {
            Ok(_) => tracing::warn!(
                "ROS time stopped at {now} for {:.1} s of wall time (paused simulator?); goal {} kept",
                self.params.clock_stall.as_secs_f64(),
                active.handle.id.id
            ),
            Err(reason) => {
                let text = format!(
                    "ROS time stopped for {:.1} s of wall time and no pose: {reason}",
                    self.params.clock_stall.as_secs_f64()
                );
                tracing::error!("goal {} aborted: {text}", active.handle.id.id);
                self.end(|s, h| s.abort(h, NavigateWaypointsResult { success: false }, &text));
            }
        }
    }

    fn start(&mut self, handle: GoalHandle, goal: NavigateWaypointsGoal, now: Time) {
        if self.active.is_some() {
            tracing::info!(
                "goal {} preempted by goal {}",
                self.active.as_ref().map_or("", |a| a.handle.id.id.as_str()),
                handle.id.id
            );
        }
        self.active = None;
        self.stopping = None;
        // A stop whose fault has cleared ends: the new goal drives on from the speed the
        // car has. While the gate is on, the stop goes on.
        self.out.lift_stop();
        let points: Vec<Point> = goal
            .waypoints
            .iter()
            .map(|w| Point::new(w.x, w.y))
            .collect();
        let start = usize::try_from(goal.start_index).unwrap_or(usize::MAX);
        // With `~use_learned`, each goal plans with the motor learned so far.
        let cfg = match self.learning.as_ref().and_then(|l| l.planning_motor()) {
            Some(m) => self
                .params
                .tracker
                .clone()
                .with_actuator(m.planning_actuator()),
            None => self.params.tracker.clone(),
        };
        match Tracker::new(&points, start, cfg) {
            Ok(tracker) => {
                let tracker = tracker.with_twist_source(self.report.source.clone());
                tracing::info!(
                    "goal {}: {} waypoints from index {start}",
                    handle.id.id,
                    points.len()
                );
                self.publish_path(&goal, now);
                self.out.driving.store(true, Ordering::Relaxed);
                self.holding = false;
                self.active = Some(Active {
                    handle,
                    tracker,
                    last_pose: now,
                    accepted: now,
                });
            }
            Err(e) => {
                tracing::warn!("goal {} rejected: {e}", handle.id.id);
                self.out.stop();
                self.holding = true;
                self.server.abort(
                    &handle,
                    NavigateWaypointsResult { success: false },
                    &e.to_string(),
                );
            }
        }
    }

    fn drive(&mut self, obs: Observation, now: Time) {
        let Some(active) = &mut self.active else {
            return;
        };
        active.last_pose = now;
        match active.tracker.observe(obs, now) {
            Err(e) => {
                let reason = e.to_string();
                self.end(|s, h| s.abort(h, NavigateWaypointsResult { success: false }, &reason));
            }
            Ok(cmd) if cmd.done => {
                tracing::info!("goal {} reached", active.handle.id.id);
                let feedback = NavigateWaypointsFeedback {
                    target_index: cmd.target_index as u64,
                    progress: 1.0,
                };
                self.server.publish_feedback(&active.handle, feedback);
                self.end(|s, h| {
                    s.succeed(
                        h,
                        NavigateWaypointsResult { success: true },
                        "last waypoint reached",
                    )
                });
            }
            Ok(cmd) => {
                self.out
                    .send_tick(cmd.steering_rad as f32, cmd.speed_mps, now);
                let feedback = NavigateWaypointsFeedback {
                    target_index: cmd.target_index as u64,
                    progress: cmd.progress as f32,
                };
                self.server.publish_feedback(&active.handle, feedback);
                self.publish_debug(&cmd, now);
            }
        }
    }

    fn pose_missing(&mut self, now: Time, reason: &str) {
        if let Some(stop) = self.out.current_stop() {
            // No pose to steer by: today's stop, zero speed with the steering held.
            self.out.stop();
            if self.active.is_none() {
                tracing::warn!("no pose during a stop ({reason}): zero command");
                // An escalated stop goes on (zero already): the next tick ends it.
                if self.out.end_stop(stop) {
                    self.stopping = None;
                    self.out.driving.store(false, Ordering::Relaxed);
                    self.holding = true;
                }
                return;
            }
        }
        let Some(active) = &self.active else { return };
        let missing = now.saturating_since(active.last_pose);
        if missing > self.params.pose_timeout {
            let text = format!("no pose for {:.2} s: {reason}", missing.as_secs_f64());
            tracing::error!("goal {} aborted: {text}", active.handle.id.id);
            self.end(|s, h| s.abort(h, NavigateWaypointsResult { success: false }, &text));
        } else {
            self.out.repeat();
        }
    }

    /// Zero command, then `finish` the active goal on the server. During a stop the goal
    /// ends the same, but its tracker goes on steering until the car is at rest.
    fn end(&mut self, finish: impl FnOnce(&ActionServer<NavigateWaypoints>, &GoalHandle)) {
        let Some(mut active) = self.active.take() else {
            return;
        };
        self.report.follow(&mut active.tracker);
        if self.out.current_stop().is_some() {
            self.stopping = Some(active.tracker);
        } else {
            self.out.driving.store(false, Ordering::Relaxed);
            self.out.stop();
            self.holding = true;
        }
        finish(&self.server, &active.handle);
    }

    /// The model's rear-axle pose, its velocity in the body frame, its yaw rate and the
    /// time the pose was measured (the answer's stamp; now if the stamp is unset or ahead).
    fn read_pose(&self) -> Result<Observation, String> {
        let req = GetModelStateReq {
            model_name: self.params.model_name.clone(),
            relative_entity_name: String::new(),
        };
        let resp = self
            .pose
            .call(&req, self.params.pose_call_timeout)
            .map_err(|e| e.to_string())?;
        if !resp.success {
            return Err(format!("get_model_state failed: {}", resp.status_message));
        }
        let (p, q, v) = (
            &resp.pose.position,
            &resp.pose.orientation,
            &resp.twist.linear,
        );
        let yaw = yaw_from_quaternion(q.x, q.y, q.z, q.w);
        let stamp = to_core(resp.header.stamp);
        let now = gem_ros::time::now();
        Ok(Observation {
            pose: Pose::new(p.x, p.y, yaw),
            speed_mps: v.x * yaw.cos() + v.y * yaw.sin(),
            lateral_speed_mps: v.y * yaw.cos() - v.x * yaw.sin(),
            yaw_rate_rad_s: resp.twist.angular.z,
            measured_at: if stamp.is_zero() || stamp > now {
                now
            } else {
                stamp
            },
        })
    }

    fn publish_path(&self, goal: &NavigateWaypointsGoal, now: Time) {
        let header = Header {
            seq: 0,
            stamp: to_ros(now),
            frame_id: gem_core::vehicle::frames::WORLD.into(),
        };
        let poses = goal
            .waypoints
            .iter()
            .map(|w| {
                let mut p = PoseStamped {
                    header: header.clone(),
                    ..Default::default()
                };
                p.pose.position.x = w.x;
                p.pose.position.y = w.y;
                p.pose.orientation.z = (w.theta / 2.0).sin();
                p.pose.orientation.w = (w.theta / 2.0).cos();
                p
            })
            .collect();
        let _ = self.debug.path.send(PathMsg { header, poses });
    }

    fn publish_debug(&self, cmd: &Command, now: Time) {
        let mut m = Marker {
            header: Header {
                seq: 0,
                stamp: to_ros(now),
                frame_id: gem_core::vehicle::frames::WORLD.into(),
            },
            ns: "target".into(),
            type_: Marker::SPHERE as i32,
            action: Marker::ADD as i32,
            ..Default::default()
        };
        m.pose.position.x = cmd.target_point.x;
        m.pose.position.y = cmd.target_point.y;
        m.pose.orientation.w = 1.0;
        (m.scale.x, m.scale.y, m.scale.z) = (0.4, 0.4, 0.4);
        let [r, g, b, a] = gem_core::overlay::TARGET_COLOUR;
        m.color = gem_msgs::std_msgs::ColorRGBA { r, g, b, a };
        let _ = self.debug.target.send(m);
        let _ = self.debug.cross_track.send(Float64 {
            data: cmd.cross_track_m,
        });
    }
}

/// Starts (or escalates) a stop the moment `system_state` reports ERROR while a goal or a
/// stop is driven, and sends its first braking command from the callback itself.
fn safety_gate(out: Arc<Outputs>) -> Result<DirectSubscriber, RosError> {
    crate::interface::subscribe(&super::topics::SYSTEM_STATE, move |m, _| {
        let error = m.state == SystemStateStamped::STATE_ERROR;
        out.state_watch.locked().feed(gem_ros::time::now());
        let was_silent = out.silent.swap(false, Ordering::Relaxed);
        let was = out.gated.swap(error, Ordering::Relaxed) && !was_silent;
        if was_silent {
            tracing::info!(
                "system_state back ({}): the held goal {}",
                if error { "ERROR" } else { "no error" },
                if error { "stays stopped" } else { "drives on" }
            );
        }
        if !(error && out.driving.load(Ordering::Relaxed)) {
            return;
        }
        // ERROR without a known bit is treated as the most severe.
        let class = out
            .policy
            .class_of(ErrorBits::from_bits(m.error_code))
            .unwrap_or(StopClass::Emergency);
        let now = gem_ros::time::now();
        // Brake first, log after: the log line (stdout and /rosout) is not on the fault's
        // critical path.
        let (stop, began, escalated) = out.begin_or_escalate(class, now, true);
        if began || escalated || !was {
            tracing::warn!(
                "system_state ERROR (error_code {}, {}): {} stop{}",
                m.error_code,
                ErrorBits::from_bits(m.error_code),
                stop.class(),
                if escalated { " (escalated)" } else { "" }
            );
        }
    })
}
