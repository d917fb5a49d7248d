//! The controller node's loop: goals from the action server, the pose from
//! `gazebo/get_model_state`, a [`Tracker`] per goal, commands on `gem/ackermann_cmd`.
//!
//! The command is a stream, as a drive-by-wire expects: while a goal is driven every tick
//! publishes one (a tick without a pose repeats the last, until `~pose_timeout_s` ends the
//! goal). Every way a goal ends publishes a zero command: success, preemption, a bad goal,
//! a pose that stays unavailable for `~pose_timeout_s`, a non-finite pose; from then until
//! the next goal every tick repeats it (zero speed, the steering held), so one lost message
//! cannot leave the vehicle on its last speed until the actuator's own command timeout.
//! The safety gate zeroes the speed from the `system_state` callback itself, without
//! waiting for a tick.

use super::params::Params;
use gem_core::control::tracker::{Command, Observation, Tracker};
use gem_core::geometry::{yaw_from_quaternion, Point, Pose};
use gem_core::time::Time;
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::gazebo_msgs::{GetModelState, GetModelStateReq};
use gem_msgs::gem_controller_action::{
    NavigateWaypointsFeedback, NavigateWaypointsGoal, NavigateWaypointsResult,
};
use gem_msgs::gem_state_msgs::SystemStateStamped;
use gem_msgs::geometry_msgs::PoseStamped;
use gem_msgs::nav_msgs::Path as PathMsg;
use gem_msgs::std_msgs::{Float64, Header};
use gem_msgs::visualization_msgs::Marker;
use gem_ros::node::RosError;
use gem_ros::protocols::actionlib::{ActionServer, GoalHandle, NavigateWaypoints};
use gem_ros::protocols::direct::DirectSubscriber;
use gem_ros::protocols::service::Client;
use gem_ros::time::Waker;
use gem_ros::time::{to_core, to_ros};
use gem_ros::Lock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Publishers shared with the safety-gate callback.
struct Outputs {
    command: rosrust::Publisher<AckermannDrive>,
    /// Last (steering, speed) sent: the gate keeps the steering while zeroing the speed,
    /// and a tick without a pose repeats the command.
    last: Mutex<(f32, f32)>,
    /// A goal is being driven (the gate only acts then).
    driving: AtomicBool,
    /// `system_state` is ERROR and the gate is on.
    gated: AtomicBool,
}

impl Outputs {
    fn send(&self, steering: f32, speed: f32) {
        *self.last.locked() = (steering, speed);
        let cmd = AckermannDrive {
            steering_angle: steering,
            speed,
            ..Default::default()
        };
        if let Err(e) = self.command.send(cmd) {
            tracing::error!("cannot publish gem/ackermann_cmd: {e}");
        }
    }

    fn stop(&self) {
        let (steering, _) = *self.last.locked();
        self.send(steering, 0.0);
    }

    /// The last command again (zero speed while gated): the stream goes on through a tick
    /// without a pose, until `~pose_timeout_s` ends the goal.
    fn repeat(&self) {
        let (steering, speed) = *self.last.locked();
        let gated = self.gated.load(Ordering::Relaxed);
        self.send(steering, if gated { 0.0 } else { speed });
    }
}

/// Debug topics for RViz.
struct Debug {
    path: rosrust::Publisher<PathMsg>,
    target: rosrust::Publisher<Marker>,
    cross_track: rosrust::Publisher<Float64>,
}

/// The goal being driven.
struct Active {
    handle: GoalHandle,
    tracker: Tracker,
    /// ROS time of the last good pose (or of acceptance).
    last_pose: Time,
}

/// A controller node: action server, pose client, outputs, current goal.
pub struct Controller {
    params: Params,
    server: ActionServer<NavigateWaypoints>,
    pose: Client<GetModelState>,
    out: Arc<Outputs>,
    debug: Debug,
    active: Option<Active>,
    /// A goal has ended and no new one has started: every tick repeats the zero command.
    holding: bool,
    _gate: Option<DirectSubscriber>,
}

impl Controller {
    /// Advertises, subscribes and connects everything; `waker` is woken by every goal and
    /// cancel (give the loop's ticker the same one).
    pub fn new(params: Params, waker: Waker) -> Result<Self, RosError> {
        let out = Arc::new(Outputs {
            command: rosrust::publish("gem/ackermann_cmd", 10)?,
            last: Mutex::new((0.0, 0.0)),
            driving: AtomicBool::new(false),
            gated: AtomicBool::new(false),
        });
        let mut path = rosrust::publish("~debug/path", 1)?;
        path.set_latching(true);
        let debug = Debug {
            path,
            target: rosrust::publish("~debug/target", 5)?,
            cross_track: rosrust::publish("~debug/cross_track", 5)?,
        };
        let gate = if params.safety_gate {
            Some(safety_gate(out.clone())?)
        } else {
            None
        };
        Ok(Controller {
            server: ActionServer::new("navigate_waypoints")?.with_waker(waker),
            pose: Client::new("gazebo/get_model_state")?,
            params,
            out,
            debug,
            active: None,
            holding: false,
            _gate: gate,
        })
    }

    /// One loop iteration at ROS time `now`.
    pub fn tick(&mut self, now: Time) {
        if let Some((handle, goal)) = self.server.accept_new_goal() {
            self.start(handle, goal, now);
        }
        let Some(active) = &self.active else {
            if self.holding {
                self.out.stop();
            }
            return;
        };
        if self.server.is_preempt_requested(&active.handle) {
            self.end(|s, h| s.preempt(h, NavigateWaypointsResult { success: false }, "cancelled"));
            return;
        }
        match self.read_pose() {
            Ok(obs) => self.drive(obs, now),
            Err(reason) => self.pose_missing(now, &reason),
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
        let points: Vec<Point> = goal
            .waypoints
            .iter()
            .map(|w| Point::new(w.x, w.y))
            .collect();
        let start = usize::try_from(goal.start_index).unwrap_or(usize::MAX);
        match Tracker::new(&points, start, self.params.tracker.clone()) {
            Ok(tracker) => {
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
                let speed = if self.out.gated.load(Ordering::Relaxed) {
                    0.0
                } else {
                    cmd.speed_mps as f32
                };
                self.out.send(cmd.steering_rad as f32, speed);
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

    /// Zero command, then `finish` the active goal on the server.
    fn end(&mut self, finish: impl FnOnce(&ActionServer<NavigateWaypoints>, &GoalHandle)) {
        self.out.driving.store(false, Ordering::Relaxed);
        self.out.stop();
        self.holding = true;
        if let Some(active) = self.active.take() {
            finish(&self.server, &active.handle);
        }
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
            frame_id: "world".into(),
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
                frame_id: "world".into(),
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
        (m.color.r, m.color.g, m.color.a) = (1.0, 0.3, 1.0);
        let _ = self.debug.target.send(m);
        let _ = self.debug.cross_track.send(Float64 {
            data: cmd.cross_track_m,
        });
    }
}

/// Zeroes the speed the moment `system_state` reports ERROR while a goal is driven.
fn safety_gate(out: Arc<Outputs>) -> Result<DirectSubscriber, RosError> {
    gem_ros::protocols::direct::subscribe("system_state", move |m: SystemStateStamped, _| {
        let error = m.state == SystemStateStamped::STATE_ERROR;
        let was = out.gated.swap(error, Ordering::Relaxed);
        if error && out.driving.load(Ordering::Relaxed) {
            // Stop first, log after: the log line (stdout and /rosout) is not on the
            // fault's critical path.
            out.stop();
            if !was {
                tracing::warn!(
                    "system_state ERROR (error_code {}): speed zeroed",
                    m.error_code
                );
            }
        }
    })
}
