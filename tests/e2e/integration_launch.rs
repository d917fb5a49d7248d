//! `roslaunch gem_bringup integration_run.launch` brings the whole headless suite up on a
//! real master; an e-stop injected with `dynparam` during the task stops the car and
//! pauses the task, releasing it resumes the task to completion (docs/spec.md §6, "e-stop during a
//! task"). Run at 2× with 3 s (ROS time) staleness, state and pose timeouts: at 5× on a
//! loaded 2-core machine a 0.6 s scheduling stall already looks like a dead input.

use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::diagnostic_msgs::DiagnosticArray;
use gem_msgs::gazebo_msgs::ModelStates;
use gem_msgs::gem_state_msgs::{SystemStateStamped, TaskPlannerStatus};
use gem_testbed::{cli_background, ros, wait_until, Collector};
use std::time::Duration;

const T: Duration = Duration::from_secs(60);

#[test]
fn estop_during_a_task_pauses_stops_and_resumes_to_completion() {
    let _ros = ros();
    let dir = std::env::temp_dir().join(format!("gem_launch_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("line80.csv");
    std::fs::write(
        &file,
        (0..=80)
            .map(|i| format!("{i}.0,0.0,0.0\n"))
            .collect::<String>(),
    )
    .unwrap();
    let status = Collector::<TaskPlannerStatus>::new("/task_planner_status");
    let state = Collector::<SystemStateStamped>::new("/system_state");
    let cmds = Collector::<AckermannDrive>::new("/gem/ackermann_cmd");
    let poses = Collector::<ModelStates>::new("/gazebo/model_states");
    let waypoints = format!("waypoints:={}", file.display());
    let launch = cli_background(
        "roslaunch",
        &[
            "gem_bringup",
            "integration_run.launch",
            "speedup:=2",
            &waypoints,
            "state_timeout_ms:=3000",
            "system_state_timeout_s:=3",
            "pose_timeout_s:=3",
            "controller:=stanley",
        ],
    );
    let x = || gem_e2e::suite::car_x(&poses);
    let running = |m: &TaskPlannerStatus| m.status == TaskPlannerStatus::STATUS_RUNNING_TASK;
    assert!(
        status.wait_latest(T, running).is_some(),
        "the task never ran\n{}",
        launch.output()
    );
    assert!(
        wait_until(T, || x() > 15.0),
        "the car did not drive\n{}",
        launch.output()
    );

    rviz_config_names_live_topics_of_the_right_type(T);
    tf_is_the_gazebo_tree_and_carries_the_pose(&poses);
    // The supervisor sees the suite's inputs and state alive and within their rules.
    let diag = Collector::<DiagnosticArray>::new("/diagnostics");
    for topic in ["/battery_level", "/system_state", "/task_planner_status"] {
        assert!(
            diag.wait_latest(T, |m| m
                .status
                .iter()
                .any(|s| s.name == topic && s.level == 0))
                .is_some(),
            "{topic} not OK in /diagnostics: {:?}",
            diag.last()
        );
    }
    // Stamped topics carry a count of messages lost before the monitor (header.seq gaps).
    // The health monitor's report (the controller publishes its own status there too).
    let last = diag
        .all()
        .into_iter()
        .rev()
        .find(|m| m.status.iter().any(|s| s.name == "/system_state"))
        .expect("a /diagnostics message from the health monitor");
    let state_diag = last.status.iter().find(|s| s.name == "/system_state");
    let lost = state_diag.and_then(|s| s.values.iter().find(|kv| kv.key == "lost_messages"));
    assert!(
        lost.is_some_and(|kv| kv.value.parse::<u64>().is_ok()),
        "no lost_messages count for /system_state: {state_diag:?}"
    );

    let dynparam = |v: &str| gem_testbed::dynparam_set("/mock_signals", "estop_enabled", v, T);
    dynparam("true");
    let error = state
        .wait_latest(T, |m| m.state == SystemStateStamped::STATE_ERROR)
        .expect("ERROR after the e-stop");
    assert_eq!(error.error_code, SystemStateStamped::ERROR_ESTOP);
    assert!(
        status
            .wait_latest(T, |m| m.status == TaskPlannerStatus::STATUS_PAUSED_TASK)
            .is_some(),
        "not PAUSED"
    );
    assert!(
        cmds.wait_latest(T, |c| c.speed == 0.0).is_some(),
        "no zero command"
    );
    let x_stopped = x();

    dynparam("false");
    assert!(
        status.wait_latest(T, running).is_some(),
        "did not resume\n{}",
        launch.output()
    );
    assert!(
        wait_until(T, || x() > x_stopped + 5.0),
        "the car did not continue"
    );
    let done = |m: &TaskPlannerStatus| m.status == TaskPlannerStatus::STATUS_NO_TASK;
    assert!(
        status.wait_latest(T, done).is_some(),
        "the task did not complete\n{}",
        launch.output()
    );
    assert!((x() - 80.0).abs() < 1.0, "stopped at x = {}", x());
}

/// `gem_sim`'s TF: the description's fixed joints latched on `/tf_static`, and on `/tf`
/// `world` → `base_footprint` with the very pose `gazebo/model_states` reports.
fn tf_is_the_gazebo_tree_and_carries_the_pose(poses: &Collector<ModelStates>) {
    use gem_core::vehicle::frames::{BASE_FOOTPRINT, FIXED_JOINTS, WORLD};
    use gem_msgs::tf2_msgs::TFMessage;
    let fixed = Collector::<TFMessage>::new("/tf_static");
    let joints = fixed
        .wait_for(T, |m| m.transforms.len() == FIXED_JOINTS.len())
        .expect("the fixed joints on /tf_static (latched)");
    for (t, j) in joints.transforms.iter().zip(FIXED_JOINTS) {
        let v = &t.transform.translation;
        assert_eq!(
            (t.header.frame_id.as_str(), t.child_frame_id.as_str()),
            (j.parent, j.child)
        );
        assert_eq!([v.x, v.y, v.z], j.xyz);
        assert_eq!(t.transform.rotation.w, 1.0);
    }
    let tf = Collector::<TFMessage>::new("/tf");
    let same_pose = |m: &TFMessage| {
        let t = &m.transforms[0];
        let v = &t.transform.translation;
        t.header.frame_id == WORLD
            && t.child_frame_id == BASE_FOOTPRINT
            && poses.all().iter().rev().take(200).any(|p| {
                p.pose.first().is_some_and(|p| {
                    (p.position.x, p.position.y, &p.orientation)
                        == (v.x, v.y, &t.transform.rotation)
                })
            })
    };
    assert!(
        wait_until(T, || tf.all().iter().rev().take(20).any(same_pose)),
        "no world -> base_footprint on /tf with a pose of gazebo/model_states"
    );
}

/// Every topic the RViz layouts display (`launch/rviz/gem.rviz`, stock displays only, and
/// `gem_jsk.rviz`) is published by the running suite with the type its RViz display
/// expects (so a layout does not silently show nothing).
fn rviz_config_names_live_topics_of_the_right_type(timeout: Duration) {
    for (layout, displays_with_a_topic) in [("gem.rviz", 3), ("gem_jsk.rviz", 4)] {
        let file = gem_testbed::repo_root().join("launch/rviz").join(layout);
        let config: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let displays = config["Visualization Manager"]["Displays"]
            .as_sequence()
            .expect("a display list");
        let mut checked = 0;
        for d in displays {
            let class = d["Class"].as_str().unwrap_or_default();
            let topic = d["Topic"].as_str().or(d["Marker Topic"].as_str());
            let Some(topic) = topic else { continue };
            let expected = match class {
                "rviz/Path" => "nav_msgs/Path",
                "rviz/Marker" => "visualization_msgs/Marker",
                "rviz/MarkerArray" => "visualization_msgs/MarkerArray",
                "rviz/Odometry" => "nav_msgs/Odometry",
                "jsk_rviz_plugin/OverlayText" => "jsk_rviz_plugins/OverlayText",
                other => panic!(
                    "{}: no expected type for display class {other}",
                    file.display()
                ),
            };
            let found = wait_until(timeout, || {
                ros1_protocols::this_node::topics()
                    .unwrap_or_default()
                    .iter()
                    .any(|t| t.name == topic && t.datatype == expected)
            });
            assert!(
                found,
                "{topic} ({expected}) of {} is not published",
                file.display()
            );
            checked += 1;
        }
        assert_eq!(
            checked,
            displays_with_a_topic,
            "displays with a topic in {}",
            file.display()
        );
    }
}
