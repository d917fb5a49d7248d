//! The task planner node's shared state: the core planner behind a mutex, the action
//! client, and the mapping between the planner's goal numbers and actionlib goal ids.
//!
//! Every input (service call, `system_state`, client event, timer) becomes a planner
//! [`Event`]; the planner's lock is held only while it decides, never across file I/O
//! (waypoint files are loaded before the lock is taken) or the action client.

use super::params::Params;
use gem_core::geometry::Pose;
use gem_core::planner::{Effect, Event, GoalOutcome, GoalSeq, Planner, Status};
use gem_core::time::{Time, Watchdog};
use gem_msgs::gem_controller_action::NavigateWaypointsGoal;
use gem_msgs::gem_state_msgs::{SystemStateStamped, TaskPlannerStatus};
use gem_msgs::geometry_msgs::Pose2D;
use gem_msgs::std_msgs::Header;
use gem_ros::action::NavigateWaypoints;
use gem_ros::time::{self, to_ros};
use ros1_protocols::actionlib::{status, ActionClient, ClientEvent};
use ros1_protocols::Lock;
use ros1_protocols::RosError;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Everything the callbacks and the timer share.
pub struct PlannerNode {
    params: Params,
    planner: Mutex<Planner>,
    client: ActionClient<NavigateWaypoints>,
    ids: Mutex<Ids>,
    status_pub: ros1_protocols::runtime::Publisher<TaskPlannerStatus>,
    last_status: Mutex<Option<Status>>,
    /// `system_state`'s heartbeat, armed at start-up.
    state_watch: Mutex<Watchdog>,
}

/// actionlib ids of our goals, and goals waiting for the server.
#[derive(Default)]
struct Ids {
    by_id: HashMap<String, GoalSeq>,
    by_seq: HashMap<GoalSeq, String>,
    unsent: VecDeque<(GoalSeq, Arc<[Pose]>, usize)>,
    waiting_since: Option<Instant>,
    complained: bool,
}

impl PlannerNode {
    /// Connects the action client and advertises the status.
    pub fn new(params: Params) -> Result<Arc<Self>, RosError> {
        Ok(Arc::new(PlannerNode {
            // Feedback is read at the planner's own moments (its tick, a pause, a goal's
            // end): it only needs the newest target index, and no thread then wakes for
            // each of the server's 20 a second.
            client: ActionClient::with_feedback_on_demand(super::topics::NAVIGATE.name())?,
            status_pub: super::topics::STATUS.publish()?,
            planner: Mutex::new(Planner::default()),
            ids: Mutex::default(),
            last_status: Mutex::new(None),
            state_watch: Mutex::new(Watchdog::armed(params.state_timeout, time::now())),
            params,
        }))
    }

    /// Loads `file` and serves it; `Err` carries the reason (the current task is untouched).
    pub fn serve(&self, file: &str) -> Result<usize, String> {
        let path = self.params.resolve(file);
        let waypoints = gem_core::waypoints::load(&path).map_err(|e| e.to_string())?;
        let n = waypoints.len();
        tracing::info!("serving {} ({n} waypoints)", path.display());
        self.handle(Event::Serve(waypoints.into()));
        Ok(n)
    }

    /// `/cancel_tasks`.
    pub fn cancel(&self) {
        tracing::info!("cancel_tasks: dropping the task");
        self.handle(Event::Cancel);
    }

    /// A `system_state` message.
    pub fn system_state(&self, m: &SystemStateStamped) {
        self.state_watch.locked().feed(time::now());
        let error = m.state == SystemStateStamped::STATE_ERROR;
        if error {
            // A pause keeps the newest target index to resume from.
            self.take_feedback();
        }
        self.handle(Event::SystemError(error));
    }

    /// Hands the planner the newest feedback of each goal that came since the last look.
    fn take_feedback(&self) {
        for (id, feedback) in self.client.take_feedback() {
            let goal = self.ids.locked().by_id.get(&id).copied();
            if let Some(goal) = goal {
                self.handle(Event::Feedback {
                    goal,
                    target_index: feedback.target_index as usize,
                });
            }
        }
    }

    /// Blocks on the action client's events and feeds them to the planner (own thread).
    pub fn pump_client_events(&self) {
        // The timeout only lets the loop see shutdown, and nothing waits for this thread
        // to end (the process does): once a second is enough.
        while ros1_protocols::this_node::is_ok() {
            let Some(ev) = self.client.next_event(Duration::from_secs(1)) else {
                continue;
            };
            // Feedback is taken on demand (see `new`): only goal ends come here.
            let ClientEvent::Done {
                id,
                status: s,
                text,
                ..
            } = ev
            else {
                continue;
            };
            let Some(goal) = self.ids.locked().by_id.get(&id).copied() else {
                continue;
            };
            tracing::info!("goal {id} ended {} ({text})", status::name(s));
            // The feedback the server sent before its result counts first (a preempted
            // goal resumes from it).
            self.take_feedback();
            if let Some(outcome) = outcome(s) {
                self.handle(Event::Done { goal, outcome });
            }
            // The goal is over: its ids go with it (a planner serves goals all day).
            let mut ids = self.ids.locked();
            ids.by_id.remove(&id);
            ids.by_seq.remove(&goal);
        }
    }

    /// Timer: the goal's newest feedback, missing `system_state`, goals waiting for the
    /// server, status heartbeat.
    pub fn tick(&self, now: Time) {
        self.take_feedback();
        let silent = self.state_watch.locked().silent(now, Time::ZERO);
        if let Some(silent) = silent {
            let was = self.planner.locked().allow_run();
            if was {
                tracing::warn!(
                    "no system_state for {:.1} s: treating the system as in ERROR",
                    silent.as_secs_f64()
                );
            }
            self.handle(Event::SystemError(true));
        }
        self.flush_unsent();
        self.publish_status(now, true);
    }

    fn handle(&self, event: Event) {
        let effects = self.planner.locked().step(event);
        for effect in effects {
            match effect {
                Effect::SendGoal {
                    goal,
                    waypoints,
                    start_index,
                } => {
                    self.ids
                        .locked()
                        .unsent
                        .push_back((goal, waypoints, start_index));
                }
                Effect::CancelGoal { goal } => self.cancel_goal(goal),
            }
        }
        self.flush_unsent();
        self.publish_status(time::now(), false);
    }

    fn cancel_goal(&self, goal: GoalSeq) {
        let mut ids = self.ids.locked();
        ids.unsent.retain(|(g, _, _)| *g != goal);
        if let Some(id) = ids.by_seq.get(&goal).cloned() {
            drop(ids);
            match self.client.cancel(&id) {
                Ok(()) => tracing::info!("cancelled goal {id}"),
                Err(e) => tracing::error!("cannot cancel goal {id}: {e}"),
            }
        }
    }

    /// Sends queued goals once the server is there; complains (once) after the timeout.
    fn flush_unsent(&self) {
        let mut ids = self.ids.locked();
        if ids.unsent.is_empty() {
            ids.waiting_since = None;
            return;
        }
        if !self.client.is_server_connected() {
            let since = *ids.waiting_since.get_or_insert_with(Instant::now);
            if since.elapsed() > self.params.server_timeout
                && !std::mem::replace(&mut ids.complained, true)
            {
                tracing::error!(
                    "no action server on {} after {:.0} s; the task waits for it",
                    super::topics::NAVIGATE.name(),
                    since.elapsed().as_secs_f64()
                );
            }
            return;
        }
        ids.waiting_since = None;
        ids.complained = false;
        // Only the newest goal matters: older queued ones were superseded.
        let Some((seq, waypoints, start_index)) = ids.unsent.pop_back() else {
            return;
        };
        ids.unsent.clear();
        let goal = NavigateWaypointsGoal {
            waypoints: waypoints
                .iter()
                .map(|p| Pose2D {
                    x: p.x,
                    y: p.y,
                    theta: p.yaw,
                })
                .collect(),
            start_index: start_index as u64,
        };
        match self.client.send_goal(goal) {
            Ok(id) => {
                tracing::info!(
                    "goal {id}: {} waypoints from index {start_index}",
                    waypoints.len()
                );
                ids.by_id.insert(id.clone(), seq);
                ids.by_seq.insert(seq, id);
            }
            Err(e) => tracing::error!("cannot send the goal: {e}"),
        }
    }

    fn publish_status(&self, now: Time, heartbeat: bool) {
        let status = self.planner.locked().status();
        let mut last = self.last_status.locked();
        let changed = *last != Some(status);
        if changed {
            tracing::info!(
                "{} => {status}",
                last.map_or("start".to_string(), |s| s.to_string())
            );
            *last = Some(status);
        }
        if changed || heartbeat {
            let msg = TaskPlannerStatus {
                header: Header {
                    seq: 0,
                    stamp: to_ros(now),
                    frame_id: String::new(),
                },
                status: status.as_u8(),
            };
            if let Err(e) = self.status_pub.send(msg) {
                tracing::error!("cannot publish {}: {e}", super::topics::STATUS.name());
            }
        }
    }
}

/// The planner's view of an actionlib terminal status (`None` for non-terminal ones).
fn outcome(s: u8) -> Option<GoalOutcome> {
    match s {
        status::SUCCEEDED => Some(GoalOutcome::Succeeded),
        status::ABORTED => Some(GoalOutcome::Aborted),
        status::REJECTED => Some(GoalOutcome::Rejected),
        status::PREEMPTED => Some(GoalOutcome::Preempted),
        status::RECALLED => Some(GoalOutcome::Recalled),
        status::LOST => Some(GoalOutcome::Lost),
        _ => None,
    }
}
