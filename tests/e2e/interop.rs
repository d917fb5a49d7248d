//! Wire interop between our Rust types and Debian's ROS 1 tools on a real master.

use gem_msgs::{gem_controller_action, gem_state_msgs};
use gem_testbed::{cli, cli_background, cli_ok, ros, wait_for_service, Collector};
use std::time::Duration;

const T: Duration = Duration::from_secs(20);

#[test]
fn rust_publisher_is_read_by_rostopic_echo() {
    let _ros = ros();
    // Latched: the tool gets the message whenever its connection comes up.
    let publisher = ros1_protocols::this_node::advertise::<gem_state_msgs::SystemStateStamped>(
        "/interop/system_state",
        10,
        true,
    )
    .unwrap();
    type S = gem_state_msgs::SystemStateStamped;
    let msg = S {
        error_code: S::ERROR_ESTOP | S::ERROR_GPS_LOST,
        state: S::STATE_ERROR,
        ..Default::default()
    };
    publisher.send(msg).unwrap();
    let out = cli_ok("rostopic", &["echo", "-n", "1", "/interop/system_state"], T);
    assert!(out.contains("error_code: 6"), "{out}");
    assert!(out.contains("state: 2"), "{out}");
}

#[test]
fn rostopic_pub_reaches_a_rust_subscriber() {
    let _ros = ros();
    let heard = Collector::<gem_state_msgs::BatteryLevelStamped>::new("/interop/battery_level");
    let _pub = cli_background(
        "rostopic",
        &[
            "pub",
            "-r",
            "20",
            "/interop/battery_level",
            "gem_state_msgs/BatteryLevelStamped",
            "{header: {frame_id: 'pack'}, battery_level: 0.42}",
        ],
    );
    let m = heard
        .wait_for(T, |_| true)
        .expect("no message from rostopic pub");
    assert!((m.battery_level - 0.42).abs() < 1e-6, "{m:?}");
    assert_eq!(m.header.frame_id, "pack");
}

#[test]
fn rust_service_answers_rosservice_call() {
    let _ros = ros();
    let _srv = ros1_protocols::service::advertise::<gem_controller_action::ServeWaypoints, _>(
        "/interop/serve_waypoints",
        |req| {
            Ok(gem_controller_action::ServeWaypointsRes {
                success: req.waypoints_file == "track.csv",
            })
        },
    )
    .unwrap();
    assert!(wait_for_service("/interop/serve_waypoints", T));
    let yes = cli_ok(
        "rosservice",
        &["call", "/interop/serve_waypoints", "track.csv"],
        T,
    );
    assert!(yes.contains("success: True"), "{yes}");
    let no = cli_ok(
        "rosservice",
        &["call", "/interop/serve_waypoints", "other.csv"],
        T,
    );
    assert!(no.contains("success: False"), "{no}");
    let info = cli("rosservice", &["type", "/interop/serve_waypoints"], T);
    assert_eq!(
        String::from_utf8_lossy(&info.stdout).trim(),
        "gem_controller_action/ServeWaypoints"
    );
}

/// A goal the server never lists in its status is sent again (every 0.5 s) with the same
/// id, so a goal lost while the server's connection was still being made is not lost for
/// good; once the status lists it, the repeats stop. The "server" is `rostopic pub`.
#[test]
fn action_client_resends_a_goal_the_server_never_listed() {
    use gem_controller_action::NavigateWaypointsActionGoal;
    use gem_ros::action::NavigateWaypoints;
    use ros1_protocols::actionlib::ActionClient;
    let _ros = ros();
    let goals = Collector::<NavigateWaypointsActionGoal>::new("/resend/goal");
    let status = |list: &str| {
        cli_background(
            "rostopic",
            &[
                "pub",
                "-r",
                "20",
                "/resend/status",
                "actionlib_msgs/GoalStatusArray",
                list,
            ],
        )
    };
    let silent = status("{}");
    let client = ActionClient::<NavigateWaypoints>::new("/resend").unwrap();
    let id = client.send_goal(Default::default()).unwrap();
    assert!(
        goals.wait_for(T, |g| g.goal_id.id == id).is_some()
            && gem_testbed::wait_until(T, || goals.len() >= 2),
        "the goal was not sent again\n{}",
        silent.output()
    );
    assert!(goals.all().iter().all(|g| g.goal_id.id == id));
    drop(silent);
    let listing = format!("{{status_list: [{{goal_id: {{id: '{id}'}}, status: 1}}]}}");
    let _server = status(&listing);
    assert!(gem_testbed::wait_until(T, || client.status_of(&id) == Some(1)));
    let copies = goals.len();
    // Absence over three acknowledgement periods: no further copy.
    assert!(!gem_testbed::wait_until(
        Duration::from_millis(1500),
        || goals.len() > copies
    ));
}

#[test]
fn direct_subscriber_reads_python_and_rust_publishers_and_refuses_a_wrong_type() {
    use gem_msgs::std_msgs::Float64;
    use std::sync::{Arc, Mutex};
    let _ros = ros();
    let topic = "/interop/direct";
    let heard: Arc<Mutex<Vec<f64>>> = Arc::default();
    let sink = heard.clone();
    let before = std::time::Instant::now();
    let sub = ros1_protocols::direct::subscribe(
        topic,
        move |m: Float64, at: ros1_protocols::direct::Arrival| {
            // The kernel's arrival time (the sockets are timestamped), before the read.
            assert!(at.wire >= before && at.wire <= at.read && at.wire != at.read);
            sink.lock().unwrap().push(m.data);
        },
    )
    .unwrap();
    let has = |v: f64| heard.lock().unwrap().contains(&v);
    // A publisher of another type: refused by its side, the subscription unharmed.
    let _wrong = cli_background(
        "rostopic",
        &["pub", "-r", "20", topic, "std_msgs/String", "x"],
    );
    // A Python publisher that appears after the subscription.
    let _py = cli_background(
        "rostopic",
        &["pub", "-r", "20", topic, "std_msgs/Float64", "2.5"],
    );
    assert!(
        gem_testbed::wait_until(T, || has(2.5)),
        "nothing from rostopic pub"
    );
    // A rosrust publisher in this process.
    let publisher = ros1_protocols::this_node::publish::<Float64>(topic, 10).unwrap();
    assert!(
        gem_testbed::wait_until(T, || {
            publisher.send(Float64 { data: 7.0 }).unwrap();
            has(7.0)
        }),
        "nothing from the rosrust publisher"
    );
    assert_eq!(
        sub.publisher_count(),
        2,
        "the String publisher must stay unlinked"
    );
    let info = cli_ok("rostopic", &["info", topic], T);
    assert!(info.contains(&ros1_protocols::this_node::name()), "{info}");
    // Dropped: unregistered from the master, links closed.
    drop(sub);
    assert!(
        gem_testbed::wait_until(T, || !cli_ok("rostopic", &["info", topic], T)
            .split("Subscribers:")
            .nth(1)
            .is_some_and(|s| s.contains(&ros1_protocols::this_node::name()))),
        "still registered"
    );
}
