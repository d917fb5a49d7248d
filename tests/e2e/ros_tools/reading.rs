//! The ROS tools reading our nodes: rosnode, rostopic and rosservice, rospy's persistent service clients, and a subscriber that comes and goes.

use super::*;

#[test]
fn rosnode_rostopic_and_rosservice_read_our_nodes() {
    let ros = ros();
    let _sm = state_manager(&ros);
    let _signals = start(
        &ros,
        "mock_signals",
        "mock_signals",
        &["pub /estop", "srv /mock_signals/set_parameters"],
        &[],
    );
    // rosnode info lists what the master knows, then asks the node's slave API for its
    // connections (getBusInfo): the estop link from mock_signals is inbound once the
    // state manager has connected to the publisher the master announced to it.
    let (mut out, mut err) = (String::new(), String::new());
    let linked = wait_until(T, || {
        let info = cli("rosnode", &["info", "/state_manager"], T);
        out = String::from_utf8_lossy(&info.stdout).into_owned();
        err = String::from_utf8_lossy(&info.stderr).into_owned();
        out.contains("Connections:") && out.contains("direction: inbound")
    });
    assert!(
        out.contains("/system_state") && out.contains("/estop"),
        "{out}"
    );
    assert!(linked, "getBusInfo: {out}\n{err}");
    let ping = cli_ok("rosnode", &["ping", "-c", "3", "/state_manager"], T);
    assert!(ping.contains("xmlrpc reply"), "{ping}");
    let topic = cli_ok("rostopic", &["info", "/system_state"], T);
    assert!(
        topic.contains("gem_state_msgs/SystemStateStamped") && topic.contains("/state_manager"),
        "{topic}"
    );
    // rostopic hz and bw run until interrupted: four seconds of a 20 Hz heartbeat, then
    // SIGINT from `timeout` (its exit status 124 is that, not a failure).
    for (tool, expect) in [("hz", "average rate: "), ("bw", "average: ")] {
        let out = cli(
            "timeout",
            &[
                "-s",
                "INT",
                "4",
                "rostopic",
                tool,
                "-w",
                "20",
                "/system_state",
            ],
            T,
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(expect), "rostopic {tool}:\n{text}");
        if tool == "hz" {
            // The state manager's heartbeat (`~rate`, 20 Hz).
            let rate: f64 = text
                .lines()
                .filter_map(|l| l.trim().strip_prefix(expect)?.trim().parse().ok())
                .next_back()
                .unwrap_or_default();
            assert!(
                (18.0..22.0).contains(&rate),
                "rostopic hz: {rate} Hz\n{text}"
            );
        }
    }
    let kind = cli_ok("rosservice", &["type", "/mock_signals/set_parameters"], T);
    assert_eq!(kind.trim(), "dynamic_reconfigure/Reconfigure");
    let sinfo = cli_ok("rosservice", &["info", "/mock_signals/set_parameters"], T);
    assert!(
        sinfo.contains("Node: /mock_signals") && sinfo.contains("rosrpc://"),
        "{sinfo}"
    );
    // roswtf: no error, and no warning beyond two true ones: the test's own node links to
    // nothing, and no planner publishes the state manager's /task_planner_status here.
    let wtf = cli("roswtf", &[], Duration::from_secs(60));
    let report = String::from_utf8_lossy(&wtf.stdout)
        .replace("\x1b[31m", "")
        .replace("\x1b[1m", "")
        .replace("\x1b[0m", "");
    let online = report
        .split("Online checks summary")
        .nth(1)
        .unwrap_or_else(|| panic!("no online checks:\n{report}"));
    let findings: Vec<&str> = online
        .lines()
        .filter(|l| l.starts_with("ERROR") || l.starts_with("WARNING"))
        .collect();
    for line in findings {
        assert!(
            line.contains("Node [/gem_e2e] is not connected to anything")
                || line.contains("node subscriptions are unconnected"),
            "roswtf found: {line}\n{online}"
        );
    }
    let unconnected: Vec<&str> = online
        .lines()
        .skip_while(|l| !l.contains("node subscriptions are unconnected"))
        .skip(1)
        .take_while(|l| l.trim_start().starts_with('*'))
        .filter(|l| l.trim_start().starts_with("* /") && !l.contains(':'))
        .map(str::trim)
        .collect();
    assert!(
        unconnected.iter().all(|t| *t == "* /task_planner_status"),
        "unconnected: {unconnected:?}\n{online}"
    );
    // Every private parameter the state manager documents, one `rosparam get` each.
    let documented = documented_parameters("state_manager");
    let listed = cli_ok("rosparam", &["list", "/state_manager"], T);
    for p in &documented {
        let name = format!("/state_manager/{p}");
        assert!(
            listed.lines().any(|l| l.trim() == name),
            "{name} not in:\n{listed}"
        );
        let out = cli("rosparam", &["get", &name], T);
        assert!(out.status.success(), "rosparam get {name}: {out:?}");
    }
}

/// rospy calls `service` of type `srv` 100 times on one persistent connection with
/// `request` (Python), and prints `ok N`.
fn persistent_calls(service: &str, module: &str, srv: &str, request: &str) -> String {
    let script = format!(
        "import rospy\nfrom {module}.srv import {srv}\n\
         rospy.wait_for_service('{service}', 10)\n\
         p = rospy.ServiceProxy('{service}', {srv}, persistent=True)\n\
         n = 0\n\
         for i in range(100):\n    p({request})\n    n += 1\n\
         print('ok', n)\n"
    );
    cli_ok("/usr/bin/python3", &["-c", &script], T)
}

#[test]
fn rospy_persistent_clients_call_every_service_of_ours_100_times() {
    let ros = ros();
    // Owning /clock, gem_sim serves its dynamic_reconfigure service too.
    let _sim = start(
        &ros,
        "gem_sim",
        "gem_sim",
        &["srv /gazebo/get_model_state", "srv /gem_sim/set_parameters"],
        &[("publish_clock", "true".into())],
    );
    let _signals = start(
        &ros,
        "mock_signals",
        "mock_signals",
        &["srv /mock_signals/set_parameters"],
        &[],
    );
    let _planner = start(
        &ros,
        "task_planner",
        "task_planner",
        &["srv /cancel_tasks", "srv /serve_waypoints"],
        &[],
    );
    for (service, module, srv, request) in [
        (
            "/gazebo/get_model_state",
            "gazebo_msgs",
            "GetModelState",
            "'gem', ''",
        ),
        (
            "/gazebo/set_model_state",
            "gazebo_msgs",
            "SetModelState",
            "__import__('gazebo_msgs.msg', fromlist=['ModelState']).ModelState(model_name='gem')",
        ),
        (
            "/gem_sim/set_parameters",
            "dynamic_reconfigure",
            "Reconfigure",
            "",
        ),
        (
            "/mock_signals/set_parameters",
            "dynamic_reconfigure",
            "Reconfigure",
            "",
        ),
        ("/cancel_tasks", "std_srvs", "Empty", ""),
        // A file that does not exist: refused (success false) 100 times, nothing started.
        (
            "/serve_waypoints",
            "gem_controller_action",
            "ServeWaypoints",
            "'no_such_file.csv'",
        ),
    ] {
        let out = persistent_calls(service, module, srv, request);
        assert!(out.contains("ok 100"), "{service}: {out}");
    }
}

#[test]
fn the_overlay_subscribes_its_inputs_only_while_someone_watches() {
    let ros = ros();
    let _inputs = start(&ros, "mock_signals", "mock_signals", &["pub /estop"], &[]);
    let _manager = state_manager(&ros);
    let overlay = start(
        &ros,
        "status_overlay",
        "status_overlay",
        &["pub /gem/status_overlay", "pub /gem/status_markers"],
        &[],
    );
    let inputs = || {
        entries_of("/status_overlay")
            .into_iter()
            .filter(|e| e.starts_with("sub ") && e != "sub /clock")
            .collect::<Vec<_>>()
    };
    // Nobody watches: for 2 s (twenty frames) the overlay subscribes nothing.
    assert!(
        !wait_until(Duration::from_secs(2), || !inputs().is_empty()),
        "unwatched, it subscribes {:?}",
        inputs()
    );
    // A viewer: every input is subscribed, and the frames show their values.
    let mut viewer = cli_background("rostopic", &["hz", "/gem/status_markers"]);
    let all = [
        "sub /system_state",
        "sub /battery_level",
        "sub /estop",
        "sub /gps_accuracy",
        "sub /signal_strength",
        "sub /temperature",
    ];
    assert!(
        wait_until(T, || all.iter().all(|e| inputs().iter().any(|i| i == e))),
        "watched, it subscribes {:?}\n{}",
        inputs(),
        overlay.output()
    );
    let text = Collector::<OverlayText>::new("/gem/status_overlay");
    let shows = |m: &OverlayText| {
        ["battery   80 %", "temp      30.0 °C", "signal    CONNECTED"]
            .iter()
            .all(|part| m.text.contains(part))
            && !m.text.contains("state     —")
    };
    assert!(
        text.wait_latest(T, shows).is_some(),
        "the frames show {:?}",
        text.last().map(|m| m.text)
    );
    drop(text);
    // The viewers leave: the subscriptions go with them.
    viewer.kill();
    assert!(
        wait_until(T, || inputs().is_empty()),
        "unwatched again, it still subscribes {:?}",
        inputs()
    );
}
