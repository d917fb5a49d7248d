//! The `task_planner` with `gem_sim` (owning /clock) and the `pure_pursuit` controller on a
//! real master; `serve_waypoints` and `cancel_tasks` are called with Debian's `rosservice`;
//! the test plays the state manager by publishing `system_state`.

use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::gazebo_msgs::ModelStates;
use gem_msgs::gem_controller_action::{
    NavigateWaypointsActionFeedback, NavigateWaypointsActionGoal,
};
use gem_msgs::gem_state_msgs::{SystemStateStamped, TaskPlannerStatus};
use gem_testbed::{cli, fresh_ns, ros, wait_until, Collector, NodeProc, RosGuard};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);
const SPEEDUP: f64 = 5.0;
const NO_TASK: u8 = TaskPlannerStatus::STATUS_NO_TASK;
const PAUSED: u8 = TaskPlannerStatus::STATUS_PAUSED_TASK;
const RUNNING: u8 = TaskPlannerStatus::STATUS_RUNNING_TASK;

/// A directory of waypoint files for one test.
fn files() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "gem_tp_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let line = |n: usize| {
        (0..n)
            .map(|i| format!("{}.0,0.0,0.0\n", i))
            .collect::<String>()
    };
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    write("line30.csv", &line(31));
    write(
        "line200.csv",
        &format!("x,y,yaw\r\n{}", line(201).replace('\n', "\r\n")),
    );
    write("empty.csv", "");
    write("single.csv", "1.0,2.0,0.0\n");
    write("short_row.csv", "0,0,0\n1,0\n");
    write("not_a_number.csv", "0,0,0\n1,0,abc\n");
    write("nan.csv", "0,0,0\nnan,0,0\n");
    write("inf.csv", "0,0,0\n1,inf,0\n");
    write(
        "degrees.csv",
        "-0.128,-0.002,88.449\n-0.128,-0.002,88.448\n",
    );
    dir
}

/// gem_sim, pure_pursuit and task_planner in a fresh namespace, and a `system_state`
/// publisher whose state the test switches.
struct Stack {
    ns: String,
    nodes: Vec<NodeProc>,
    error: Arc<AtomicBool>,
    /// Stop publishing `system_state` (a dead state manager).
    silent: Arc<AtomicBool>,
    statuses: Collector<TaskPlannerStatus>,
    cmds: Collector<AckermannDrive>,
    states: Collector<ModelStates>,
    goals: Collector<NavigateWaypointsActionGoal>,
    feedback: Collector<NavigateWaypointsActionFeedback>,
}

impl Stack {
    fn start(ros: &RosGuard, dir: &std::path::Path) -> Stack {
        ros.set_sim_time(true);
        let ns = fresh_ns("tp");
        let arg = format!("__ns:={ns}");
        let sim = ros
            .node("gem_sim")
            .arg(&arg)
            .param("publish_clock", true)
            .param("speedup", SPEEDUP)
            .spawn();
        let controller = ros
            .node("pure_pursuit")
            .arg(&arg)
            .param("safety_gate", false)
            .spawn();
        let planner = ros
            .node("task_planner")
            .arg(&arg)
            .param("waypoint_dir", dir.display())
            .param("system_state_timeout_s", 5.0)
            .spawn();
        let topic = |t: &str| format!("{ns}/{t}");
        let stack = Stack {
            statuses: Collector::new(&topic("task_planner_status")),
            cmds: Collector::new(&topic("gem/ackermann_cmd")),
            states: Collector::new(&topic("gazebo/model_states")),
            goals: Collector::new(&topic("navigate_waypoints/goal")),
            feedback: Collector::new(&topic("navigate_waypoints/feedback")),
            error: Arc::new(AtomicBool::new(false)),
            silent: Arc::new(AtomicBool::new(false)),
            nodes: vec![sim, controller, planner],
            ns,
        };
        stack.play_state_manager();
        assert!(
            stack
                .statuses
                .wait_for(T, |s| s.status == NO_TASK)
                .is_some(),
            "no planner status\n{}",
            stack.output()
        );
        stack
    }

    /// Publishes `system_state` at 50 Hz wall until the test ends.
    fn play_state_manager(&self) {
        let publisher = ros1_protocols::this_node::publish::<SystemStateStamped>(
            &format!("{}/system_state", self.ns),
            10,
        )
        .unwrap();
        let (error, silent) = (self.error.clone(), self.silent.clone());
        std::thread::spawn(move || {
            while Arc::strong_count(&error) > 1 {
                if silent.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                let e = error.load(Ordering::Relaxed);
                let msg = SystemStateStamped {
                    error_code: if e {
                        SystemStateStamped::ERROR_ESTOP
                    } else {
                        0
                    },
                    state: if e {
                        SystemStateStamped::STATE_ERROR
                    } else {
                        SystemStateStamped::STATE_RUNNING
                    },
                    ..Default::default()
                };
                let _ = publisher.send(msg);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
    }

    fn serve(&self, file: &str) -> bool {
        let out = cli(
            "rosservice",
            &["call", &format!("{}/serve_waypoints", self.ns), file],
            T,
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "rosservice failed: {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text.contains("success: True")
    }

    fn wait_status(&self, status: u8, what: &str) {
        assert!(
            self.statuses
                .wait_latest(T, |s| s.status == status)
                .is_some(),
            "{what}: status never {status}\n{}",
            self.output()
        );
    }

    fn x(&self) -> f64 {
        gem_e2e::suite::car_x(&self.states)
    }

    fn output(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("--- {} ---\n{}", n.name(), n.output()))
            .collect()
    }
}

#[test]
fn serve_runs_the_task_to_completion_with_no_early_zero_command() {
    let ros = ros();
    let dir = files();
    let stack = Stack::start(&ros, &dir);
    assert!(stack.serve("line30.csv"), "{}", stack.output());
    stack.wait_status(RUNNING, "serve");
    assert!(
        stack.cmds.wait_for(T, |c| c.speed > 0.0).is_some(),
        "the car never got a command\n{}",
        stack.output()
    );
    assert!(
        wait_until(T, || stack.x() > 5.0),
        "the car did not move\n{}",
        stack.output()
    );
    stack.wait_status(NO_TASK, "completion");
    // The first second of the task (20 commands at 20 Hz): no zero command.
    let cmds = stack.cmds.all();
    let start = cmds.iter().position(|c| c.speed > 0.0).unwrap();
    let first_second = 20;
    assert!(
        cmds[start..start + first_second]
            .iter()
            .all(|c| c.speed > 0.0),
        "a zero command in the first second: {:?}",
        &cmds[start..start + first_second]
    );
    assert_eq!(
        stack.goals.len(),
        1,
        "exactly one goal for one task (no cancel-and-resend)"
    );
}

#[test]
fn error_pauses_and_stops_the_car_and_recovery_resumes_forward() {
    let ros = ros();
    let dir = files();
    let stack = Stack::start(&ros, &dir);
    assert!(stack.serve("line200.csv"));
    assert!(
        wait_until(T, || stack.x() > 20.0),
        "the car did not get going\n{}",
        stack.output()
    );
    stack.error.store(true, Ordering::Relaxed);
    stack.wait_status(PAUSED, "ERROR");
    assert!(
        stack.cmds.wait_latest(T, |c| c.speed == 0.0).is_some(),
        "no zero command after the cancel"
    );
    let last_fb = stack
        .feedback
        .last()
        .expect("feedback")
        .feedback
        .target_index;
    let x_paused = stack.x();
    stack.error.store(false, Ordering::Relaxed);
    stack.wait_status(RUNNING, "recovery");
    let resumed = stack
        .goals
        .wait_for(T, |g| g.goal.start_index > 0)
        .expect("a resumed goal");
    assert!(
        resumed.goal.start_index >= last_fb.saturating_sub(2)
            && resumed.goal.start_index <= last_fb + 2,
        "resumed at {} but the last feedback was {last_fb}",
        resumed.goal.start_index
    );
    assert!(
        wait_until(T, || stack.x() > x_paused + 10.0),
        "the car did not continue\n{}",
        stack.output()
    );
    let min_x = stack
        .states
        .all()
        .iter()
        .filter_map(|m| m.pose.first().map(|p| p.position.x))
        .skip_while(|x| *x < x_paused - 0.01)
        .fold(f64::MAX, f64::min);
    assert!(
        min_x > x_paused - 0.5,
        "the car went back from {x_paused} to {min_x}"
    );
}

#[test]
fn cancel_tasks_drops_the_task_and_stops_the_car() {
    let ros = ros();
    let dir = files();
    let stack = Stack::start(&ros, &dir);
    assert!(stack.serve("line200.csv"));
    assert!(wait_until(T, || stack.x() > 5.0));
    let out = cli(
        "rosservice",
        &["call", &format!("{}/cancel_tasks", stack.ns)],
        T,
    );
    assert!(out.status.success());
    stack.wait_status(NO_TASK, "cancel");
    assert!(
        stack.cmds.wait_latest(T, |c| c.speed == 0.0).is_some(),
        "no zero command after cancel"
    );
}

#[test]
fn bad_files_are_refused_and_the_running_task_is_untouched() {
    let ros = ros();
    let dir = files();
    let stack = Stack::start(&ros, &dir);
    assert!(stack.serve("line200.csv"));
    stack.wait_status(RUNNING, "serve");
    assert!(stack.goals.wait_for(T, |_| true).is_some());
    let goal_id = stack.goals.last().unwrap().goal_id.id;
    for bad in [
        "missing.csv",
        "empty.csv",
        "single.csv",
        "short_row.csv",
        "not_a_number.csv",
        "nan.csv",
        "inf.csv",
        "degrees.csv",
    ] {
        assert!(!stack.serve(bad), "{bad} was accepted");
    }
    assert_eq!(stack.goals.len(), 1, "a bad file sent a goal");
    assert_eq!(stack.goals.last().unwrap().goal_id.id, goal_id);
    assert_eq!(stack.statuses.last().unwrap().status, RUNNING);
    for reason in [
        "cannot read",
        "no waypoints",
        "single waypoint",
        "found 2 field",
        "\"abc\" is not a number",
        "not a finite number",
        "degrees",
    ] {
        assert!(
            stack.nodes[2].wait_output(T, reason),
            "the log does not say \"{reason}\":\n{}",
            stack.nodes[2].output()
        );
    }
}

#[test]
fn missing_system_state_counts_as_error() {
    let ros = ros();
    let dir = files();
    let stack = Stack::start(&ros, &dir);
    assert!(stack.serve("line200.csv"));
    stack.wait_status(RUNNING, "serve");
    stack.silent.store(true, Ordering::Relaxed);
    stack.wait_status(
        PAUSED,
        "system_state silent for longer than ~system_state_timeout_s",
    );
    assert!(
        stack.nodes[2].wait_output(T, "no system_state"),
        "{}",
        stack.output()
    );
    stack.silent.store(false, Ordering::Relaxed);
    stack.wait_status(RUNNING, "system_state back");
}
