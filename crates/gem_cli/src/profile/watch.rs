//! The profiler's subscriptions: every message is stamped with its arrival on the socket
//! (the kernel's receive timestamp, so a reading thread that was slow to be scheduled does
//! not move it; how slow is kept apart), translated into a [`Seen`] and fed to the armed run; the latest values
//! and, while measuring, each topic's message periods are kept too.

use anyhow::anyhow;
use gem_core::control::stop::StopSample;
use gem_core::faults::FaultKind;
use gem_core::geometry::Point;
use gem_core::names;
use gem_core::state_manager::{ErrorBits, Input};
use gem_core::time::Time;
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::actionlib_msgs::{GoalID, GoalStatus, GoalStatusArray};
use gem_msgs::gem_controller_action::{
    NavigateWaypointsActionFeedback, NavigateWaypointsActionGoal, NavigateWaypointsActionResult,
};
use gem_msgs::gem_state_msgs::{self as msg, SystemStateStamped as Sys, TaskPlannerStatus};
use gem_msgs::nav_msgs::Odometry;
use gem_msgs::rosgraph_msgs::Clock;
use gem_msgs::std_msgs::Header;
use gem_profile::{Periods, Run, Seen, Stamp};
use gem_ros::time::to_core;
use ros1_protocols::direct::{Arrival, DirectSubscriber};
use ros1_protocols::Lock;
use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What the subscriptions know.
#[derive(Default)]
pub struct Live {
    /// Latest `/clock`.
    pub sim: Time,
    /// Latest `/system_state` (state, error bits).
    pub state: Option<(u8, u8)>,
    /// Latest `/task_planner_status`.
    pub planner: Option<u8>,
    /// Latest commanded speed.
    pub speed: Option<f32>,
    /// Latest goal progress (0..1).
    pub progress: f64,
    /// Per input topic: its last message (value, sim stamp).
    pub last_input: BTreeMap<&'static str, (f64, Time)>,
    /// The run being measured.
    pub run: Option<(FaultKind, Run)>,
    /// Message periods per topic, while `measuring`.
    pub periods: BTreeMap<&'static str, Periods>,
    /// Count periods now.
    pub measuring: bool,
    /// Messages per topic since start.
    pub counts: BTreeMap<&'static str, u64>,
    /// For every message received while a run was armed: how long it waited in the
    /// profiler's socket for the reading thread (ms; not part of the latencies).
    pub socket_wait_ms: Vec<f64>,
    /// While a fault is injected: the car from its odometry (the state's sim stamp,
    /// position, distance from the route along +x, speed), for the stop's figures.
    pub stop_samples: Option<Vec<StopSample>>,
    /// The car's latest speed from its odometry, m/s.
    pub car_speed: f64,
}

/// [`Live`] behind a lock, with a condition variable the callbacks notify.
pub struct Watch {
    live: Mutex<Live>,
    changed: Condvar,
    epoch: Instant,
}

impl Watch {
    /// A watch whose wall stamps count from now.
    pub fn new() -> Arc<Watch> {
        Arc::new(Watch {
            live: Mutex::default(),
            changed: Condvar::new(),
            epoch: Instant::now(),
        })
    }

    /// The state, locked.
    pub fn lock(&self) -> MutexGuard<'_, Live> {
        self.live.locked()
    }

    /// The instant wall stamps count from.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// Seconds since the epoch.
    pub fn wall_s(&self, at: Instant) -> f64 {
        at.duration_since(self.epoch).as_secs_f64()
    }

    /// Waits until `cond` holds or `timeout` passes; the final verdict of `cond`.
    pub fn wait(&self, timeout: Duration, mut cond: impl FnMut(&mut Live) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut live = self.lock();
        loop {
            if cond(&mut live) {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !ros1_protocols::this_node::is_ok() {
                return false;
            }
            // Bounded so a shut-down ROS is noticed even without messages.
            live = self
                .changed
                .wait_timeout(live, left.min(Duration::from_millis(200)))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Records one message of `topic` that arrived at `at` with ROS time `stamp` (zero:
    /// none, the latest clock is used) and feeds `seen` to the armed run.
    fn note(
        &self,
        topic: &'static str,
        at: Arrival,
        stamp: Time,
        seen: &[Seen],
        f: impl FnOnce(&mut Live),
    ) {
        let wall_s = self.wall_s(at.wire);
        let mut live = self.lock();
        f(&mut live);
        if live.run.is_some() {
            live.socket_wait_ms.push(at.queued().as_secs_f64() * 1e3);
        }
        let sim = if stamp.is_zero() { live.sim } else { stamp };
        let t = Stamp { wall_s, sim };
        *live.counts.entry(topic).or_default() += 1;
        if live.measuring {
            live.periods.entry(topic).or_default().push(t);
        }
        if let Some((kind, run)) = &mut live.run {
            let mine = kind.fault().input.global_topic() == topic;
            for s in seen {
                if mine || !matches!(s, Seen::Input(_)) {
                    run.observe(*s, t);
                }
            }
        }
        drop(live);
        self.changed.notify_all();
    }
}

fn stamp_of(h: &Header) -> Time {
    to_core(h.stamp)
}

/// A direct subscription (`ros1_protocols::direct`): the message's arrival on the socket as the
/// kernel timestamped it, and when the reading thread had it.
fn sub<T: rosrust::Message>(
    w: &Arc<Watch>,
    topic: &'static str,
    handle: fn(&Watch, &'static str, Arrival, T),
) -> anyhow::Result<DirectSubscriber> {
    let w = w.clone();
    ros1_protocols::direct::subscribe(topic, move |m: T, at| handle(&w, topic, at, m))
        .map_err(|e| anyhow!("subscribe {topic}: {e}"))
}

/// An input topic's message: remember it as the last value, feed it as `Input`.
fn input(w: &Watch, topic: &'static str, at: Arrival, value: f64, h: &Header) {
    let stamp = stamp_of(h);
    w.note(topic, at, stamp, &[Seen::Input(value)], |l| {
        l.last_input.insert(topic, (value, stamp));
    });
}

/// Subscribes to the topic of `which` (`read` gives a message's value, as
/// [`FaultKind::is_faulty`] reads it, and its header); each message goes to [`input`].
fn input_sub<T: rosrust::Message>(
    w: &Arc<Watch>,
    which: Input,
    read: fn(&T) -> (f64, &Header),
) -> anyhow::Result<(&'static str, DirectSubscriber)> {
    let topic = which.global_topic();
    let w = w.clone();
    let sub = ros1_protocols::direct::subscribe(topic, move |m: T, at| {
        let (value, header) = read(&m);
        input(&w, topic, at, value, header)
    })
    .map_err(|e| anyhow!("subscribe {topic}: {e}"))?;
    Ok((topic, sub))
}

/// Subscribes to everything the chains need; keep the subscribers alive.
pub fn subscribe(w: &Arc<Watch>) -> anyhow::Result<Vec<(&'static str, DirectSubscriber)>> {
    // A state-manager input: its message type and the field holding its value (a flag
    // reads 1 or 0).
    macro_rules! input {
        ($which:ident, $msg:ident, $field:ident) => {
            input_sub(w, Input::$which, |m: &msg::$msg| {
                (f64::from(m.$field), &m.header)
            })?
        };
    }
    let subs = vec![
        (
            names::CLOCK,
            sub(w, names::CLOCK, |w, topic, at, m: Clock| {
                let t = to_core(m.clock);
                w.note(topic, at, t, &[Seen::Clock], |l| l.sim = t)
            })?,
        ),
        input!(Estop, EstopStamped, enabled),
        input!(Battery, BatteryLevelStamped, battery_level),
        input!(Temperature, TemperatureStamped, temperature),
        input!(Gps, GpsAccuracyStamped, accuracy),
        input!(Signal, SignalStrengthStamped, strength),
        (
            names::global::SYSTEM_STATE,
            sub(w, names::global::SYSTEM_STATE, |w, topic, at, m: Sys| {
                let seen = match m.state {
                    Sys::STATE_ERROR => Some(Seen::SystemError(ErrorBits::from_bits(m.error_code))),
                    Sys::STATE_RUNNING => Some(Seen::SystemRunning),
                    _ => None,
                };
                w.note(topic, at, stamp_of(&m.header), seen.as_slice(), |l| {
                    l.state = Some((m.state, m.error_code))
                })
            })?,
        ),
        (
            Input::PlannerStatus.global_topic(),
            sub(
                w,
                Input::PlannerStatus.global_topic(),
                |w, topic, at, m: TaskPlannerStatus| {
                    let seen = match m.status {
                        TaskPlannerStatus::STATUS_PAUSED_TASK => Some(Seen::PlannerPaused),
                        TaskPlannerStatus::STATUS_RUNNING_TASK => Some(Seen::PlannerRunning),
                        _ => None,
                    };
                    w.note(topic, at, stamp_of(&m.header), seen.as_slice(), |l| {
                        l.planner = Some(m.status)
                    })
                },
            )?,
        ),
        (
            names::global::ACKERMANN_CMD,
            sub(
                w,
                names::global::ACKERMANN_CMD,
                |w, topic, at, m: AckermannDrive| {
                    w.note(
                        topic,
                        at,
                        Time::ZERO,
                        &[Seen::Command(f64::from(m.speed), f64::from(m.acceleration))],
                        |l| l.speed = Some(m.speed),
                    )
                },
            )?,
        ),
        (
            names::global::ODOM,
            sub(w, names::global::ODOM, |w, topic, at, m: Odometry| {
                // The state's own sim stamp: a windowed deceleration needs exact times.
                let t = stamp_of(&m.header);
                w.note(topic, at, t, &[], |l| {
                    let (p, v) = (&m.pose.pose.position, &m.twist.twist.linear);
                    let speed_mps = v.x.hypot(v.y);
                    l.car_speed = speed_mps;
                    if let Some(samples) = &mut l.stop_samples {
                        samples.push(StopSample {
                            t: t.as_secs_f64(),
                            position: Point::new(p.x, p.y),
                            // The route runs along +x from the origin.
                            cross_track_m: p.y,
                            speed_mps,
                        });
                    }
                })
            })?,
        ),
        (
            names::global::navigate_waypoints::CANCEL,
            sub(
                w,
                names::global::navigate_waypoints::CANCEL,
                |w, topic, at, _m: GoalID| {
                    w.note(topic, at, Time::ZERO, &[Seen::CancelSent], |_| {})
                },
            )?,
        ),
        (
            names::global::navigate_waypoints::GOAL,
            sub(
                w,
                names::global::navigate_waypoints::GOAL,
                |w, topic, at, m: NavigateWaypointsActionGoal| {
                    w.note(
                        topic,
                        at,
                        stamp_of(&m.header),
                        &[Seen::GoalSent(&m.goal_id.id)],
                        |_| {},
                    )
                },
            )?,
        ),
        (
            names::global::navigate_waypoints::STATUS,
            sub(
                w,
                names::global::navigate_waypoints::STATUS,
                |w, topic, at, m: GoalStatusArray| {
                    let seen: Vec<Seen> = m
                        .status_list
                        .iter()
                        .filter(|s| s.status == GoalStatus::ACTIVE)
                        .map(|s| Seen::GoalActive(&s.goal_id.id))
                        .collect();
                    w.note(topic, at, stamp_of(&m.header), &seen, |_| {})
                },
            )?,
        ),
        (
            names::global::navigate_waypoints::RESULT,
            sub(
                w,
                names::global::navigate_waypoints::RESULT,
                |w, topic, at, m: NavigateWaypointsActionResult| {
                    let seen: &[Seen] = if m.status.status == GoalStatus::PREEMPTED {
                        &[Seen::GoalPreempted]
                    } else {
                        &[]
                    };
                    w.note(topic, at, stamp_of(&m.header), seen, |_| {})
                },
            )?,
        ),
        (
            names::global::navigate_waypoints::FEEDBACK,
            sub(
                w,
                names::global::navigate_waypoints::FEEDBACK,
                |w, topic, at, m: NavigateWaypointsActionFeedback| {
                    w.note(topic, at, stamp_of(&m.header), &[], |l| {
                        l.progress = f64::from(m.feedback.progress)
                    })
                },
            )?,
        ),
    ];
    Ok(subs)
}
