//! Debian's ROS tools against our nodes, the way a ROS user meets them: every node ends
//! and leaves nothing behind in the master on every way out (SIGINT, SIGTERM,
//! `rosnode kill`, a start-up error), `rosnode` and `rostopic` and `rosservice` read the
//! nodes, and rospy's persistent service clients call each of our services 100 times.

use gem_msgs::jsk_rviz_plugins::OverlayText;
use gem_testbed::{
    cli, cli_background, cli_ok, master_log, ros, wait_until, Collector, NodeProc, OwnMaster,
    RosGuard,
};
use ros1_protocols::master_api::{Master, MASTER_CALL_WITHIN};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(20);
/// How long a node may take to end once told to (roscpp's nodes end at once).
const EXIT_WITHIN: Duration = Duration::from_secs(1);

/// A node binary, the entries the master lists once it is up (`pub`, `sub` or `srv` and
/// the resolved name, the node running under its binary's name), and its parameters.
struct Case {
    binary: &'static str,
    up: &'static [&'static str],
    params: Vec<(&'static str, String)>,
}

fn nodes() -> Vec<Case> {
    let config = gem_testbed::repo_root().join("launch/config/health_monitor.yaml");
    let case = |binary, up| Case {
        binary,
        up,
        params: vec![],
    };
    vec![
        case(
            "gem_sim",
            &[
                "srv /gazebo/get_model_state",
                "srv /gazebo/set_model_state",
                "pub /gem/base_footprint/odom",
            ],
        ),
        case(
            "mock_signals",
            &["srv /mock_signals/set_parameters", "pub /temperature"],
        ),
        case(
            "state_manager",
            &["sub /task_planner_status", "pub /system_state"],
        ),
        case(
            "task_planner",
            &[
                "srv /serve_waypoints",
                "srv /cancel_tasks",
                "pub /navigate_waypoints/goal",
            ],
        ),
        case(
            "pure_pursuit",
            &["sub /navigate_waypoints/goal", "pub /gem/ackermann_cmd"],
        ),
        case(
            "stanley",
            &["sub /navigate_waypoints/goal", "pub /gem/ackermann_cmd"],
        ),
        // Told to follow its inputs with no viewer, so that they are subscribed here
        // and their withdrawal on every way out is checked.
        Case {
            binary: "status_overlay",
            up: &["sub /system_state", "pub /gem/status_overlay"],
            params: vec![("always_subscribe", "true".into())],
        },
        case(
            "gnss_pose",
            &[
                "srv /gazebo/get_model_state",
                "sub /novatel/inspva",
                "pub /gps_accuracy",
            ],
        ),
        case(
            "pacmod_bridge",
            &[
                "srv /pacmod_bridge/enable",
                "sub /gem/ackermann_cmd",
                "pub /pacmod/as_rx/enable",
            ],
        ),
        Case {
            binary: "health_monitor",
            up: &["pub /diagnostics"],
            params: vec![("config_file", config.display().to_string())],
        },
    ]
}

/// What the master lists under `node`: `pub /topic`, `sub /topic`, `srv /service`.
fn entries_of(node: &str) -> Vec<String> {
    ros1_protocols::this_node::master().map_or(vec![], |m| entries_at(&m, node))
}

/// What `master` lists under `node`, as [`entries_of`].
fn entries_at(master: &Master, node: &str) -> Vec<String> {
    let Ok(state) = master.system_state() else {
        return vec![];
    };
    let mut out = vec![];
    for (kind, list) in [
        ("pub", &state.publishers),
        ("sub", &state.subscribers),
        ("srv", &state.services),
    ] {
        for t in list.iter() {
            if t.connections.iter().any(|c| c == node) {
                out.push(format!("{kind} {}", t.name));
            }
        }
    }
    out
}

/// Starts `binary` as `/name` and waits until the master lists every entry in `up`.
/// A state manager under its own name, publishing `/system_state`.
fn state_manager(ros: &RosGuard) -> NodeProc {
    start(
        ros,
        "state_manager",
        "state_manager",
        &["pub /system_state"],
        &[],
    )
}

fn start(
    ros: &RosGuard,
    binary: &str,
    name: &str,
    up: &[&str],
    params: &[(&str, String)],
) -> NodeProc {
    let mut b = ros.node(binary).name(name);
    for (k, v) in params {
        b = b.param(k, v);
    }
    let node = b.spawn();
    let full = format!("/{name}");
    let ready = wait_until(T, || {
        let have = entries_of(&full);
        up.iter().all(|e| have.iter().any(|h| h == e))
    });
    assert!(
        ready,
        "{name} never listed {up:?}; the master has {:?}\n{}",
        entries_of(&full),
        node.output()
    );
    node
}

#[derive(Debug, Clone, Copy)]
enum Way {
    Interrupt,
    Terminate,
    RosnodeKill,
}

/// Ends `node` (`/name`) the `way` given; returns how long it took to exit after being
/// told (for `rosnode kill`: the tool's whole run, the node having exited by its end or
/// within [`EXIT_WITHIN`] after).
fn end(node: &mut NodeProc, name: &str, way: Way) -> Duration {
    let told = Instant::now();
    let status = match way {
        Way::Interrupt => node.signal(libc::SIGINT, T),
        Way::Terminate => node.signal(libc::SIGTERM, T),
        Way::RosnodeKill => {
            // Timed from the tool's start (its own start-up included); the node must be
            // gone within EXIT_WITHIN of the tool's return, which follows its shutdown call.
            cli_ok("rosnode", &["kill", &format!("/{name}")], T);
            let returned = Instant::now();
            let status = node.wait(EXIT_WITHIN);
            assert!(
                status.is_some(),
                "{name} still runs {EXIT_WITHIN:?} after rosnode kill returned\n{}",
                node.output()
            );
            return returned.duration_since(told);
        }
    };
    assert!(
        status.is_some(),
        "{name} did not end after {way:?}\n{}",
        node.output()
    );
    told.elapsed()
}

#[test]
fn every_node_ends_at_once_and_leaves_nothing_in_the_master_on_every_way_out() {
    let ros = ros();
    // Inputs flowing the whole time: the five signals at their rate.
    let _inputs = start(
        &ros,
        "mock_signals",
        "inputs",
        &["pub /estop", "pub /battery_level"],
        &[],
    );
    let mut figures = vec![];
    for case in nodes() {
        for way in [Way::Interrupt, Way::Terminate, Way::RosnodeKill] {
            let name = case.binary;
            let mut node = start(&ros, name, name, case.up, &case.params);
            if matches!(way, Way::Interrupt) {
                check_documented_parameters(name);
            }
            let took = end(&mut node, name, way);
            let full = format!("/{name}");
            let left = entries_of(&full);
            assert!(
                left.is_empty(),
                "{name} after {way:?}: the master still lists {left:?}\n{}",
                node.output()
            );
            // A node that ended and kept a subscription to the parameter tree would be
            // sent every later parameter change. Ours subscribe to none; had one
            // subscribed, its last entry in the master's log must be a withdrawal.
            let log = master_log();
            let last = log
                .lines()
                .rfind(|l| l.ends_with(&format!("CACHEDPARAM [/] by {full}")))
                .unwrap_or_default();
            assert!(
                last.is_empty() || last.contains("-CACHEDPARAM"),
                "{name} after {way:?}: its parameter subscription is still with the master ({last:?})"
            );
            let listed = cli_ok("rosnode", &["list"], T);
            assert!(
                !listed.lines().any(|l| l.trim() == full),
                "{name} after {way:?}: rosnode list still shows it:\n{listed}"
            );
            assert!(
                matches!(way, Way::RosnodeKill) || took <= EXIT_WITHIN,
                "{name} took {took:?} to end after {way:?} (at most {EXIT_WITHIN:?})\n{}",
                node.output()
            );
            figures.push(format!("{name} {way:?} {:.0} ms", took.as_secs_f64() * 1e3));
        }
    }
    println!("time to exit after being told:\n  {}", figures.join("\n  "));
}

/// How long a node may take to end on SIGINT while its master does not answer.
const EXIT_WITHOUT_MASTER_WITHIN: Duration = Duration::from_secs(2);

#[test]
fn every_node_whose_master_stops_answering_says_so_in_time_and_still_ends_on_sigint() {
    let ros = ros();
    let own = OwnMaster::start();
    let probe = Master::new(own.uri(), "/e2e_probe", "");
    let mut running = vec![];
    for case in nodes() {
        let mut b = ros
            .node(case.binary)
            .name(case.binary)
            .env("ROS_MASTER_URI", own.uri());
        for (k, v) in &case.params {
            b = b.param(k, v);
        }
        running.push((case, b.spawn()));
    }
    // Two nodes serve /gazebo/get_model_state: the master lists only the later one.
    let contested = |e: &str| running.iter().filter(|(c, _)| c.up.contains(&e)).count() > 1;
    for (case, node) in &running {
        let full = format!("/{}", case.binary);
        let up = wait_until(T, || {
            let have = entries_at(&probe, &full);
            case.up
                .iter()
                .all(|e| contested(e) || have.iter().any(|h| h == e))
        });
        assert!(
            up,
            "{full} never registered with its master\n{}",
            node.output()
        );
    }
    own.stop();
    let stopped = Instant::now();
    // The master watch asks once a period; its call fails after the time limit.
    let told_within = MASTER_CALL_WITHIN + ros1_protocols::master::PERIOD + Duration::from_secs(3);
    let mut figures = vec![];
    for (case, node) in &mut running {
        let name = case.binary;
        let said = wait_until(told_within.saturating_sub(stopped.elapsed()), || {
            node.output()
                .lines()
                .any(|l| l.contains("unreachable") && l.contains("lookupNode"))
        });
        assert!(
            said,
            "{name} did not log its failing master call within {told_within:?} of the master stopping\n{}",
            node.output()
        );
        let told = Instant::now();
        let status = node.signal(libc::SIGINT, EXIT_WITHOUT_MASTER_WITHIN);
        let took = told.elapsed();
        assert!(
            status.is_some() && took <= EXIT_WITHOUT_MASTER_WITHIN,
            "{name} did not end within {EXIT_WITHOUT_MASTER_WITHIN:?} of SIGINT with its master stopped\n{}",
            node.output()
        );
        figures.push(format!("{name} {:.0} ms", took.as_secs_f64() * 1e3));
    }
    own.resume();
    println!(
        "master stopped: every node logged it within {:.1} s; time to exit on SIGINT:\n  {}",
        stopped.elapsed().as_secs_f64(),
        figures.join("\n  ")
    );
}

/// The private parameters `binary`'s page under docs/nodes lists (`| `~name` | ...` rows).
fn documented_parameters(binary: &str) -> Vec<String> {
    let page = match binary {
        "pure_pursuit" | "stanley" => "controller",
        other => other,
    };
    let path = gem_testbed::repo_root().join(format!("docs/nodes/{page}.md"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    text.lines()
        .filter_map(|l| l.strip_prefix("| `~")?.split('`').next())
        .map(str::to_owned)
        .collect()
}

/// `rosparam get /name` shows every parameter the node's page documents (the node writes
/// the defaults of those nobody set).
fn check_documented_parameters(name: &str) {
    let documented = documented_parameters(name);
    assert!(!documented.is_empty(), "no parameter table for {name}");
    let out = cli_ok("rosparam", &["get", &format!("/{name}")], T);
    let missing: Vec<&String> = documented
        .iter()
        .filter(|p| {
            !out.lines()
                .any(|l| l.trim_start().starts_with(&format!("{p}:")))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "rosparam get /{name} lacks {missing:?}:\n{out}"
    );
}

#[test]
fn rosnode_cleanup_purges_a_killed_node_and_keeps_the_live_ones() {
    let ros = ros();
    let _live = state_manager(&ros);
    let mut dead = start(
        &ros,
        "task_planner",
        "task_planner",
        &["srv /cancel_tasks"],
        &[],
    );
    // SIGKILL: no chance to withdraw anything, as a crash.
    dead.kill();
    assert!(
        !entries_of("/task_planner").is_empty(),
        "a killed node stays listed until cleanup"
    );
    let out = cli("sh", &["-c", "echo y | rosnode cleanup"], T);
    assert!(out.status.success(), "rosnode cleanup: {out:?}");
    assert!(
        entries_of("/task_planner").is_empty(),
        "after cleanup: {:?}",
        entries_of("/task_planner")
    );
    // Our live node answered cleanup's ping and keeps its registrations.
    assert!(entries_of("/state_manager").contains(&"pub /system_state".to_string()));
}

#[test]
fn a_node_that_fails_at_start_up_unregisters_what_it_had_registered() {
    let ros = ros();
    // The node registers /rosout before it reads its parameters; a rate of -1 is then
    // refused.
    let mut node = ros
        .node("state_manager")
        .name("bad_rate")
        .param("rate", -1)
        .spawn();
    let status = node.wait(T).expect("a node with a bad parameter exits");
    assert!(!status.success(), "{}", node.output());
    assert!(
        node.output().contains("rate"),
        "names the parameter:\n{}",
        node.output()
    );
    let left = entries_of("/bad_rate");
    assert!(left.is_empty(), "the master still lists {left:?}");
}

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
    // connections (getBusInfo): the estop link from mock_signals is inbound.
    let info = cli("rosnode", &["info", "/state_manager"], T);
    let (out, err) = (
        String::from_utf8_lossy(&info.stdout),
        String::from_utf8_lossy(&info.stderr),
    );
    assert!(
        out.contains("/system_state") && out.contains("/estop"),
        "{out}"
    );
    assert!(
        out.contains("Connections:") && out.contains("direction: inbound"),
        "getBusInfo: {out}\n{err}"
    );
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
