//! The task planner as a pure state machine (docs/spec.md §3).
//!
//! The planner owns at most one task (a list of waypoints) and drives it through goals it
//! sends to the controller's action server. It reacts to five kinds of event: a serve
//! request, a cancel request, the system state, goal feedback and a goal's end. Each
//! reaction is one arm of one `match (task, event)`, and returns the effects the node
//! carries out (send a goal, cancel a goal).
//!
//! | task | status published | data |
//! |---|---|---|
//! | `NoTask` | NO_TASK | – |
//! | `Running` | RUNNING_TASK | the goal in flight and the last feedback index |
//! | `Paused` | PAUSED_TASK | the index to resume from, and a cancel still in flight |
//!
//! Rules, and the original's mistakes they avoid:
//! - Entering ERROR cancels the goal and keeps the task (Paused) with the last feedback
//!   `target_index`; leaving ERROR resumes it from there with a new goal.
//! - Only a change between ERROR and not-ERROR matters: IDLE→RUNNING (the planner's own task
//!   starting) and repeated identical states do nothing, so a fresh task is never cancelled
//!   and resent (the original briefly stopped the car every time).
//! - A serve while ERROR stores the task Paused at index 0; a serve while Running or Paused
//!   replaces the task (the server preempts the old goal).
//! - Goal ids are the planner's own sequence numbers: events about an older goal (a result
//!   racing a cancel, a preempted goal replaced by a new one) are recognised and ignored.
//! - SUCCEEDED and ABORTED (and REJECTED) end the task; PREEMPTED, RECALLED and LOST keep it
//!   Paused. A goal that SUCCEEDS while its cancel is in flight still completes the task.

use crate::geometry::Pose;
use std::fmt;
use std::sync::Arc;

/// A goal sent by the planner, numbered by it.
pub type GoalSeq = u64;

/// How a goal ended (actionlib's terminal statuses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GoalOutcome {
    /// Reached the last waypoint.
    Succeeded,
    /// The controller gave up (bad goal, lost pose...).
    Aborted,
    /// Refused without starting.
    Rejected,
    /// Stopped after it started (our cancel, or another goal).
    Preempted,
    /// Cancelled before it started.
    Recalled,
    /// The server forgot it.
    Lost,
}

/// What the planner reacts to.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A new task (already loaded and validated).
    Serve(Arc<[Pose]>),
    /// `/cancel_tasks`.
    Cancel,
    /// The system state: `true` while ERROR (or while no `system_state` arrives).
    SystemError(bool),
    /// Feedback of goal `goal`.
    Feedback {
        /// Which goal.
        goal: GoalSeq,
        /// Its `target_index`.
        target_index: usize,
    },
    /// Goal `goal` ended.
    Done {
        /// Which goal.
        goal: GoalSeq,
        /// How.
        outcome: GoalOutcome,
    },
}

/// What the node must do.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Send `waypoints` from `start_index` as goal `goal`.
    SendGoal {
        /// The planner's number for it.
        goal: GoalSeq,
        /// The waypoints.
        waypoints: Arc<[Pose]>,
        /// Where to start.
        start_index: usize,
    },
    /// Cancel goal `goal`.
    CancelGoal {
        /// Which goal.
        goal: GoalSeq,
    },
}

/// The planner's task.
#[derive(Clone, Debug, PartialEq)]
pub enum Task {
    /// Nothing to do.
    NoTask,
    /// Goal `goal` is driving the task; `last_index` is its latest feedback.
    Running {
        /// The waypoints.
        waypoints: Arc<[Pose]>,
        /// The goal in flight.
        goal: GoalSeq,
        /// Latest feedback `target_index` (the start index before any feedback).
        last_index: usize,
    },
    /// The task waits (ERROR, or its goal was preempted); it resumes at `resume_index`.
    Paused {
        /// The waypoints.
        waypoints: Arc<[Pose]>,
        /// Where to resume.
        resume_index: usize,
        /// A goal we asked to cancel whose end has not arrived yet.
        cancelling: Option<GoalSeq>,
    },
}

/// `TaskPlannerStatus.status` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// `STATUS_NO_TASK = 0`
    NoTask,
    /// `STATUS_PAUSED_TASK = 1`
    Paused,
    /// `STATUS_RUNNING_TASK = 2`
    Running,
}

impl Status {
    /// The wire value.
    pub const fn as_u8(self) -> u8 {
        match self {
            Status::NoTask => 0,
            Status::Paused => 1,
            Status::Running => 2,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::NoTask => "NO_TASK",
            Status::Paused => "PAUSED",
            Status::Running => "RUNNING",
        })
    }
}

/// The planner: task, whether running is allowed, goal numbering.
#[derive(Clone, Debug)]
pub struct Planner {
    task: Task,
    /// False while the system is in ERROR. Starts false: nothing runs before the first
    /// `system_state` says the system is fine.
    allow_run: bool,
    next_goal: GoalSeq,
}

impl Default for Planner {
    fn default() -> Self {
        Planner {
            task: Task::NoTask,
            allow_run: false,
            next_goal: 1,
        }
    }
}

impl Planner {
    /// The current task.
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// The status to publish.
    pub fn status(&self) -> Status {
        match self.task {
            Task::NoTask => Status::NoTask,
            Task::Running { .. } => Status::Running,
            Task::Paused { .. } => Status::Paused,
        }
    }

    /// True while the system is not in ERROR.
    pub fn allow_run(&self) -> bool {
        self.allow_run
    }

    /// Reacts to `event`; returns the effects to carry out, in order.
    pub fn step(&mut self, event: Event) -> Vec<Effect> {
        let task = std::mem::replace(&mut self.task, Task::NoTask);
        let (task, effects) = self.transition(task, event);
        self.task = task;
        effects
    }

    fn transition(&mut self, task: Task, event: Event) -> (Task, Vec<Effect>) {
        use Event::*;
        use Task::*;
        match (task, event) {
            // ----- serve: start now, or store paused while ERROR; replaces any task
            (NoTask, Serve(w)) => self.start_or_store(w, None),
            (Running { goal, .. }, Serve(w)) => self.start_or_store(w, Some(goal)),
            (Paused { cancelling, .. }, Serve(w)) => self.start_or_store(w, cancelling),

            // ----- cancel: drop the task, stop its goal
            (NoTask, Cancel) => (NoTask, vec![]),
            (Running { goal, .. }, Cancel) => (NoTask, vec![Effect::CancelGoal { goal }]),
            (Paused { .. }, Cancel) => (NoTask, vec![]),

            // ----- system state: only a change of ERROR matters
            // Already in that state (error == !allow_run).
            (t, SystemError(e)) if e != self.allow_run => (t, vec![]),
            (NoTask, SystemError(e)) => {
                self.allow_run = !e;
                (NoTask, vec![])
            }
            (
                Running {
                    waypoints,
                    goal,
                    last_index,
                },
                SystemError(true),
            ) => {
                self.allow_run = false;
                let paused = Paused {
                    waypoints,
                    resume_index: last_index,
                    cancelling: Some(goal),
                };
                (paused, vec![Effect::CancelGoal { goal }])
            }
            (t @ Running { .. }, SystemError(false)) => {
                self.allow_run = true;
                (t, vec![])
            }
            (t @ Paused { .. }, SystemError(true)) => {
                self.allow_run = false;
                (t, vec![])
            }
            (
                Paused {
                    waypoints,
                    resume_index,
                    ..
                },
                SystemError(false),
            ) => {
                self.allow_run = true;
                self.send(waypoints, resume_index)
            }

            // ----- feedback of the running goal moves the resume point
            (
                Running {
                    waypoints,
                    goal,
                    last_index,
                },
                Feedback {
                    goal: g,
                    target_index,
                },
            ) => {
                let last_index = if g == goal { target_index } else { last_index };
                (
                    Running {
                        waypoints,
                        goal,
                        last_index,
                    },
                    vec![],
                )
            }
            (t @ (NoTask | Paused { .. }), Feedback { .. }) => (t, vec![]),

            // ----- a goal ended
            (
                Running {
                    waypoints,
                    goal,
                    last_index,
                },
                Done { goal: g, outcome },
            ) if g == goal => match outcome {
                GoalOutcome::Succeeded | GoalOutcome::Aborted | GoalOutcome::Rejected => {
                    (NoTask, vec![])
                }
                GoalOutcome::Preempted | GoalOutcome::Recalled | GoalOutcome::Lost => (
                    Paused {
                        waypoints,
                        resume_index: last_index,
                        cancelling: None,
                    },
                    vec![],
                ),
            },
            (
                Paused {
                    waypoints,
                    resume_index,
                    cancelling: Some(c),
                },
                Done { goal: g, outcome },
            ) if g == c => {
                match outcome {
                    // It finished before our cancel reached it: the task is complete.
                    GoalOutcome::Succeeded | GoalOutcome::Aborted | GoalOutcome::Rejected => {
                        (NoTask, vec![])
                    }
                    GoalOutcome::Preempted | GoalOutcome::Recalled | GoalOutcome::Lost => (
                        Paused {
                            waypoints,
                            resume_index,
                            cancelling: None,
                        },
                        vec![],
                    ),
                }
            }
            // The end of a goal we no longer track (replaced, or after a cancel).
            (t @ (NoTask | Running { .. } | Paused { .. }), Done { .. }) => (t, vec![]),
        }
    }

    /// A new task: send it now, or keep it paused while ERROR. `previous` is a goal of the
    /// replaced task still in flight.
    fn start_or_store(
        &mut self,
        waypoints: Arc<[Pose]>,
        previous: Option<GoalSeq>,
    ) -> (Task, Vec<Effect>) {
        if self.allow_run {
            // The server preempts the previous goal when the new one arrives.
            self.send(waypoints, 0)
        } else {
            let effects = previous
                .map(|goal| Effect::CancelGoal { goal })
                .into_iter()
                .collect();
            (
                Task::Paused {
                    waypoints,
                    resume_index: 0,
                    cancelling: previous,
                },
                effects,
            )
        }
    }

    fn send(&mut self, waypoints: Arc<[Pose]>, start_index: usize) -> (Task, Vec<Effect>) {
        let goal = self.next_goal;
        self.next_goal += 1;
        let effect = Effect::SendGoal {
            goal,
            waypoints: waypoints.clone(),
            start_index,
        };
        (
            Task::Running {
                waypoints,
                goal,
                last_index: start_index,
            },
            vec![effect],
        )
    }
}

#[cfg(test)]
mod tests;
