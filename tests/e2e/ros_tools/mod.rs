//! Debian's ROS tools against our nodes, the way a ROS user meets them: every node ends
//! and leaves nothing behind in the master on every way out (SIGINT, SIGTERM,
//! `rosnode kill`, a start-up error), `rosnode` and `rostopic` and `rosservice` read the
//! nodes, and rospy's persistent service clients call each of our services 100 times.

mod ending;
mod reading;

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
    // A topic source and the operator link (its UDP thread ends with the node too), on a
    // port of its own.
    let sources =
        std::env::temp_dir().join(format!("gem_ending_sources_{}.yaml", std::process::id()));
    std::fs::write(
        &sources,
        "battery:\n  topic: /bms\n  field: percentage\nsignal:\n  operator: {}\n",
    )
    .expect("the sources file");
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
            binary: "signal_sources",
            up: &["sub /bms", "pub /battery_level", "pub /signal_strength"],
            params: vec![
                ("sources_file", sources.display().to_string()),
                ("operator_port", "11623".into()),
            ],
        },
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
