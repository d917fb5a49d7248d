//! The whole suite's end-to-end scenarios (docs/spec.md §6), written once and run two
//! ways: by the cargo tests in `tests/e2e/suite_scenarios.rs` (which bring the suite up with
//! `roslaunch`) and by the rostest runner `tests/rostest/suite_rostest.rs` (which rostest
//! starts beside the suite from `launch/test/*.test`). A scenario only observes topics and
//! uses real ROS tools (`dynparam`, `rosservice`, `rosnode`), so it does not care who
//! launched the nodes. Scenarios return `Err(reason)` instead of panicking, so the rostest
//! runner can report every case.

use gem_core::faults::{Fault, CATALOGUE};
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::actionlib_msgs::GoalStatusArray;
use gem_msgs::gazebo_msgs::ModelStates;
use gem_msgs::gem_controller_action::{
    NavigateWaypointsActionFeedback, NavigateWaypointsActionGoal, NavigateWaypointsActionResult,
};
use gem_msgs::gem_state_msgs::{SystemStateStamped as Sys, TaskPlannerStatus as Planner};
use gem_nodes::mock_signals::injection::Injection;
use gem_testbed::{check, wait_until, Collector};
use std::time::Duration;

/// A scenario's verdict.
pub type Outcome = Result<(), String>;

/// Runs a command-line tool and returns its stdout, or why it failed.
pub type Tool = Box<dyn Fn(&str, &[&str]) -> Result<String, String>>;

/// A finished tool's stdout, or why it failed (for a [`Tool`]).
pub fn tool_result(
    program: &str,
    args: &[&str],
    out: std::process::Output,
) -> Result<String, String> {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(format!(
            "{program} {args:?} failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The straight 300 m route (1 m spacing) the scenarios serve; shipped in
/// `launch/waypoints/`, so the rostest files can name it too.
pub const ROUTE: &str = "straight_300m.csv";

/// Everything a scenario watches, subscribed before the suite does anything.
pub struct Suite {
    /// `/task_planner_status`.
    pub status: Collector<Planner>,
    /// `/system_state`.
    pub state: Collector<Sys>,
    /// `/gem/ackermann_cmd`.
    pub cmds: Collector<AckermannDrive>,
    /// `/gazebo/model_states`.
    pub poses: Collector<ModelStates>,
    /// `/navigate_waypoints/goal`.
    pub goals: Collector<NavigateWaypointsActionGoal>,
    /// `/navigate_waypoints/feedback`.
    pub feedback: Collector<NavigateWaypointsActionFeedback>,
    /// `/navigate_waypoints/status`.
    pub goal_status: Collector<GoalStatusArray>,
    /// `/navigate_waypoints/result`.
    pub results: Collector<NavigateWaypointsActionResult>,
    tool: Tool,
    /// Wall-time bound of every wait.
    pub timeout: Duration,
}

impl Suite {
    /// Subscribes everything; `tool` runs the ROS command-line tools.
    pub fn new(tool: Tool, timeout: Duration) -> Suite {
        Suite {
            status: Collector::new("/task_planner_status"),
            state: Collector::new("/system_state"),
            cmds: Collector::new("/gem/ackermann_cmd"),
            poses: Collector::new("/gazebo/model_states"),
            goals: Collector::new("/navigate_waypoints/goal"),
            feedback: Collector::new("/navigate_waypoints/feedback"),
            goal_status: Collector::new("/navigate_waypoints/status"),
            results: Collector::new("/navigate_waypoints/result"),
            tool,
            timeout,
        }
    }

    fn tool(&self, program: &str, args: &[&str]) -> Result<String, String> {
        (self.tool)(program, args)
    }

    /// `rosrun dynamic_reconfigure dynparam set /mock_signals <param> <value>`.
    pub fn set(&self, param: &str, value: &str) -> Outcome {
        self.tool(
            "rosrun",
            &[
                "dynamic_reconfigure",
                "dynparam",
                "set",
                "/mock_signals",
                param,
                value,
            ],
        )
        .map(drop)
    }

    /// The car's x position (NaN before the first pose).
    pub fn x(&self) -> f64 {
        car_x(&self.poses)
    }

    fn car_speed(&self) -> f64 {
        car_speed(&self.poses)
    }

    fn planner_is(&self, status: u8, what: &str) -> Outcome {
        check(
            self.status
                .wait_latest(self.timeout, |m| m.status == status)
                .is_some(),
            || format!("the planner never reported {what}"),
        )
    }

    /// Waits for ERROR with `bit` set.
    fn error_with(&self, bit: u8, what: &str) -> Outcome {
        check(
            self.state
                .wait_latest(self.timeout, |m| {
                    m.state == Sys::STATE_ERROR && m.error_code & bit != 0
                })
                .is_some(),
            || format!("{what}: no ERROR with bit {bit} in /system_state"),
        )
    }

    /// The car is commanded to zero and comes to rest.
    fn stopped(&self, what: &str) -> Outcome {
        check(
            self.cmds
                .wait_latest(self.timeout, |c| c.speed == 0.0)
                .is_some(),
            || format!("{what}: no zero speed command"),
        )?;
        check(
            wait_until(self.timeout, || self.car_speed().abs() < 0.01),
            || format!("{what}: the car still moves at {} m/s", self.car_speed()),
        )
    }

    /// No goal on the action server is PENDING or ACTIVE.
    fn no_active_goal(&self, what: &str) -> Outcome {
        let idle = |m: &GoalStatusArray| m.status_list.iter().all(|s| s.status > 1);
        check(
            self.goal_status.wait_latest(self.timeout, idle).is_some(),
            || format!("{what}: a goal is still active on /navigate_waypoints"),
        )
    }

    /// The car drives on by `metres`.
    fn drives_on(&self, metres: f64, what: &str) -> Outcome {
        let from = self.x();
        check(
            wait_until(self.timeout, || self.x() > from + metres),
            || format!("{what}: the car did not move on from x = {from:.2}"),
        )
    }

    /// The task is running and the car has passed `x`.
    fn running_past(&self, x: f64) -> Outcome {
        self.planner_is(Planner::STATUS_RUNNING_TASK, "RUNNING")?;
        check(wait_until(self.timeout, || self.x() > x), || {
            format!("the car did not reach x = {x} (at {:.2})", self.x())
        })
    }
}

/// docs/spec.md §6, first scenario of the original: the e-stop is pressed before a task is served.
/// The served task waits PAUSED with no goal; the release starts it and the car moves.
/// Needs a suite launched without `waypoints`.
pub fn estop_before_serving(s: &Suite) -> Outcome {
    s.planner_is(Planner::STATUS_NO_TASK, "NO_TASK")?;
    s.set("estop_enabled", "true")?;
    s.error_with(Sys::ERROR_ESTOP, "e-stop")?;
    s.tool(
        "rosservice",
        &[
            "call",
            "/serve_waypoints",
            &format!("waypoints_file: '{ROUTE}'"),
        ],
    )?;
    s.planner_is(
        Planner::STATUS_PAUSED_TASK,
        "PAUSED after serving under ERROR",
    )?;
    check(s.goals.is_empty(), || {
        "a goal was sent while the e-stop was pressed".into()
    })?;
    s.no_active_goal("served under e-stop")?;
    check(s.cmds.all().iter().all(|c| c.speed == 0.0), || {
        "a non-zero speed was commanded under e-stop".into()
    })?;
    s.set("estop_enabled", "false")?;
    s.planner_is(Planner::STATUS_RUNNING_TASK, "RUNNING after the release")?;
    check(
        s.goals
            .wait_for(s.timeout, |g| g.goal.start_index == 0)
            .is_some(),
        || "no goal from index 0 after the release".into(),
    )?;
    check(
        s.cmds.wait_latest(s.timeout, |c| c.speed > 0.0).is_some(),
        || "speed never > 0 after the release".into(),
    )?;
    s.drives_on(2.0, "after the release")
}

/// One fault mid-route: ERROR with its bit, PAUSED, no active goal, zero command, the car
/// at rest; the clear resumes the task with a new goal starting at the index the planner
/// cached from the last feedback, and the car drives on. Needs a task running.
pub fn fault_and_resume(s: &Suite, f: &Fault) -> Outcome {
    let what = f.name;
    let injection = Injection::of(f.kind);
    let (faulty, healthy) = (
        injection.faulty.to_string(),
        injection.healthy().to_string(),
    );
    s.planner_is(Planner::STATUS_RUNNING_TASK, "RUNNING before the fault")?;
    let goals_before = s.goals.len();
    // The goal being driven, from its feedback (under rostest the planner may have sent
    // it before this runner subscribed to the goal topic).
    let goal_id = s
        .feedback
        .wait_latest(s.timeout, |_| true)
        .map(|m| m.status.goal_id.id)
        .ok_or("no feedback before the fault")?;
    s.set(injection.param, &faulty)?;
    s.error_with(f.bit.bits(), what)?;
    s.planner_is(Planner::STATUS_PAUSED_TASK, "PAUSED after the fault")?;
    s.no_active_goal(what)?;
    s.stopped(what)?;
    // Every index the cancelled goal reported: the resume point must be one of the last.
    let reported: Vec<u64> = s
        .feedback
        .all()
        .iter()
        .filter(|m| m.status.goal_id.id == goal_id)
        .map(|m| m.feedback.target_index)
        .collect();
    let last = *reported
        .iter()
        .max()
        .ok_or("no feedback before the fault")?;

    s.set(injection.param, &healthy)?;
    s.planner_is(Planner::STATUS_RUNNING_TASK, "RUNNING after the clear")?;
    check(
        wait_until(s.timeout, || s.goals.len() > goals_before),
        || format!("{what}: no new goal after the clear"),
    )?;
    let resumed = s.goals.last().ok_or("no goal")?.goal.start_index;
    check(
        reported.contains(&resumed) && resumed + 1 >= last && resumed > 0,
        || {
            format!(
                "{what}: resumed at {resumed}, expected the cached index (last feedback {last})"
            )
        },
    )?;
    s.drives_on(2.0, what)
}

/// Every failure type of the catalogue in turn on the long straight route, then the task
/// completes at its end. Needs a suite launched with `waypoints:=straight_500m.csv`: the
/// hold-off windows alone take about 130 m at the cruise speed, and every `dynparam` call
/// (a Python start-up of a second or more, wall time, on a loaded machine) costs metres
/// at the speed-up.
pub fn every_fault_then_completion(s: &Suite) -> Outcome {
    s.running_past(5.0)?;
    for f in &CATALOGUE {
        fault_and_resume(s, f)?;
    }
    completes(s, 500.0)
}

/// The task runs to its end: SUCCEEDED, NO_TASK, the car at rest near `end_x`.
pub fn completes(s: &Suite, end_x: f64) -> Outcome {
    check(
        s.results
            .wait_for(s.timeout, |r| r.result.success)
            .is_some(),
        || format!("the goal did not succeed (car at x = {:.2})", s.x()),
    )?;
    s.planner_is(Planner::STATUS_NO_TASK, "NO_TASK after completion")?;
    s.stopped("at the end")?;
    check((s.x() - end_x).abs() < 1.0, || {
        format!("stopped at x = {:.2}, not {end_x}", s.x())
    })
}

/// The car's x position in the latest `gazebo/model_states` (NaN before the first).
pub fn car_x(poses: &Collector<ModelStates>) -> f64 {
    poses
        .last()
        .and_then(|m| m.pose.first().map(|p| p.position.x))
        .unwrap_or(f64::NAN)
}

/// The car's speed over the ground in the latest `gazebo/model_states` (NaN before the
/// first).
pub fn car_speed(poses: &Collector<ModelStates>) -> f64 {
    poses
        .last()
        .and_then(|m| m.twist.first().map(|t| t.linear.x.hypot(t.linear.y)))
        .unwrap_or(f64::NAN)
}

/// The PID of the node called `node` on our master. rosrust does not answer the slave
/// API's `getPid` (so `rosnode info` cannot tell), hence `/proc`: the process whose
/// command line carries roslaunch's `__name:=<name>` and whose environment names our master.
fn pid_of(node: &str) -> Result<i32, String> {
    let master = std::env::var("ROS_MASTER_URI").map_err(|_| "ROS_MASTER_URI is not set")?;
    pid_of_node(node, &master)
}

/// The PID of the node called `node` on the master at `master` (see [`pid_of`]).
pub fn pid_of_node(node: &str, master: &str) -> Result<i32, String> {
    let name_arg = format!("__name:={}", node.trim_start_matches('/'));
    let master_env = format!("ROS_MASTER_URI={}", master.trim_end_matches('/'));
    let read =
        |pid: &str, file: &str| std::fs::read(format!("/proc/{pid}/{file}")).unwrap_or_default();
    let fields = |bytes: Vec<u8>| -> Vec<String> {
        bytes
            .split(|b| *b == 0)
            .map(|f| String::from_utf8_lossy(f).trim_end_matches('/').to_owned())
            .collect()
    };
    let dir = std::fs::read_dir("/proc").map_err(|e| format!("/proc: {e}"))?;
    dir.filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        .find(|pid| {
            fields(read(pid, "cmdline")).contains(&name_arg)
                && fields(read(pid, "environ")).contains(&master_env)
        })
        .and_then(|pid| pid.parse().ok())
        .ok_or_else(|| format!("no process of node {node} on {master}"))
}

/// SIGKILL, as a crash.
fn kill(node: &str) -> Outcome {
    let pid = pid_of(node)?;
    check(unsafe { libc::kill(pid, libc::SIGKILL) } == 0, || {
        format!("cannot kill {node} (pid {pid})")
    })
}

/// The state manager dies mid-route: the planner's `system_state` timeout pauses the task
/// and cancels the goal; the car is commanded to zero and stops.
pub fn state_manager_death(s: &Suite) -> Outcome {
    s.running_past(5.0)?;
    kill("/state_manager")?;
    s.planner_is(
        Planner::STATUS_PAUSED_TASK,
        "PAUSED without a state manager",
    )?;
    s.no_active_goal("state manager dead")?;
    s.stopped("state manager dead")
}

/// The planner dies mid-route: its status goes stale, the state manager reports ERROR
/// with STALE_DATA and the controller's safety gate stops the car.
pub fn task_planner_death(s: &Suite) -> Outcome {
    s.running_past(5.0)?;
    kill("/task_planner")?;
    s.error_with(Sys::ERROR_STALE_DATA, "task planner dead")?;
    s.stopped("task planner dead")
}

/// The simulator dies mid-route: `/clock` stops with it; the state manager reports
/// STALE_DATA, the goal ends and the controller commands zero.
pub fn simulator_death(s: &Suite) -> Outcome {
    s.running_past(5.0)?;
    kill("/gem_sim")?;
    // Without /clock, time stands still for every node: the state manager reports the
    // lost time source as STALE_DATA, and the goal ends, preempted by the planner on that
    // ERROR or aborted by the controller, which finds no pose; a zero command follows.
    s.error_with(Sys::ERROR_STALE_DATA, "simulator dead")?;
    check(
        s.results
            .wait_for(s.timeout, |r| {
                use gem_msgs::actionlib_msgs::GoalStatus;
                matches!(r.status.status, GoalStatus::ABORTED | GoalStatus::PREEMPTED)
            })
            .is_some(),
        || "the goal did not end".into(),
    )?;
    check(
        s.cmds.wait_latest(s.timeout, |c| c.speed == 0.0).is_some(),
        || "no zero command after the simulator died".into(),
    )
}

/// A named scenario and the launch arguments it needs beyond the common ones.
pub struct Scenario {
    /// Name (the rostest runner's argument, the JUnit case).
    pub name: &'static str,
    /// `integration_run.launch` arguments it needs.
    pub launch_args: &'static [&'static str],
    /// The body.
    pub run: fn(&Suite) -> Outcome,
}

/// Every scenario.
pub const SCENARIOS: [Scenario; 5] = [
    Scenario {
        name: "estop_before_serving",
        launch_args: &[],
        run: estop_before_serving,
    },
    Scenario {
        name: "every_fault_then_completion",
        launch_args: &["waypoints:=straight_500m.csv"],
        run: every_fault_then_completion,
    },
    Scenario {
        name: "state_manager_death",
        launch_args: &["waypoints:=straight_300m.csv"],
        run: state_manager_death,
    },
    Scenario {
        name: "task_planner_death",
        launch_args: &["waypoints:=straight_300m.csv"],
        run: task_planner_death,
    },
    Scenario {
        name: "simulator_death",
        launch_args: &["waypoints:=straight_300m.csv", "sim_required:=false"],
        run: simulator_death,
    },
];

/// The launch arguments every scenario shares: faster than real time, with ROS-time
/// timeouts wide enough for a loaded 2-core machine at that speed-up.
pub const COMMON_ARGS: [&str; 5] = [
    "speedup:=3",
    "state_timeout_ms:=3000",
    "system_state_timeout_s:=3",
    "pose_timeout_s:=3",
    "controller:=pure_pursuit",
];

/// The scenario called `name`.
pub fn scenario(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}
