//! The launch and test files (`launch/launch/*.launch`, `launch/test/*.test`) against the
//! nodes' parameter tables.
//!
//! The rule: a launch file passes a node only what its user sets.
//! - A `<param>` of a `gem_nodes` node that takes an argument, `value="$(arg A)"`, is
//!   guarded by `if="$(eval A != '')"`, and `A` is declared with an empty default: left
//!   unset, the node runs on its table's default.
//! - Every other value given to a node parameter (a literal `<param value>`, or the value or
//!   default of an `<arg>` that feeds one) is listed in [`DELIBERATE`] with its reason, and
//!   differs from the table's default: a launch file never restates a default, so a default
//!   changed in the table is the default everywhere.

use crate::{
    controller, gnss_pose, health_monitor, mock_signals, overlay, pacmod_bridge, planner,
    signal_sources, sim, state_manager,
};
use gem_ros::params::{ParamSpec, ParamValue};
use std::path::{Path, PathBuf};
use xml::reader::{EventReader, XmlEvent};

/// Each value a launch or test file gives on purpose: the file, the parameter (or the
/// argument feeding it), why.
const DELIBERATE: &[(&str, &str, &str)] = &[
    (
        "vehicle.launch",
        "publish_clock",
        "gem_sim owns /clock in the suite (sim time)",
    ),
    (
        "vehicle.launch",
        "interface",
        "platform gem_e2_sim: the simulated car is driven through the PACMod 2 topics",
    ),
    (
        "vehicle.launch",
        "pose_output",
        "platform gem_e2_sim: the simulated car gives a GNSS/INS solution, as the car does",
    ),
    (
        "vehicle.launch",
        "hold_pose_s",
        "the car's platforms: a short INS outage pauses the task (longer than the state manager's GPS hold-off there plus a stop)",
    ),
    (
        "vehicle.launch",
        "enable_at_start",
        "platform gem_e2_sim: no operator engages the simulated PACMod (unless engage_at_start:=false)",
    ),
    (
        "supervisor.launch",
        "require_operator_key",
        "platform gem_e2: on the real car only a holder of the operator key keeps the link up or engages it",
    ),
    (
        "vehicle.launch",
        "pacmod_steering",
        "the car's platforms: the controller plans with the PACMod's steering",
    ),
    (
        "vehicle.launch",
        "use_learned",
        "the car's platforms: the controller plans with the steering it learns, so a wrong configured motor does not leave it weaving (gem_bench pacmod --motor-mismatch-only)",
    ),
    (
        "vehicle.launch",
        "learn_steering",
        "the car's platforms: the controller learns the PACMod's steering and says on /diagnostics where the configuration is wrong",
    ),
    (
        "vehicle.launch",
        "algorithm",
        "the car's platforms: lqr steers the PACMod's slow steering best (gem_bench pacmod)",
    ),
    (
        "supervisor.launch",
        "publish_gps",
        "the car's platforms: gnss_pose gives gps_accuracy",
    ),
    (
        "supervisor.launch",
        "watch_vehicle_fault",
        "the car's platforms: the PACMod bridge's fault stops the suite",
    ),
    (
        "supervisor.launch",
        "gps_lost_after_s",
        "the car's platforms: a bad solution is a fault well within gnss_pose's pose hold",
    ),
    (
        "supervisor.launch",
        "sources_file",
        "the car platforms: the GEM e2's sources file unless the user gives one",
    ),
    (
        "supervisor.launch",
        "sysfs_root",
        "gem_e2_sim: the simulated car computer's thermal zone, which gem_sim writes",
    ),
    (
        "vehicle.launch",
        "computer_thermal_root",
        "gem_e2_sim: the car computer's thermal zone, for signal_sources",
    ),
    (
        "supervisor.launch",
        "waypoint_dir",
        "relative waypoint files resolve in gem_bringup",
    ),
    (
        "supervisor.launch",
        "config_file",
        "the suite's health monitor configuration",
    ),
    (
        "state_manager.test",
        "publish_processed",
        "the runner steps /clock in lockstep",
    ),
    (
        "suite_*.test",
        "speedup",
        "the scenarios run at 3× real time",
    ),
    (
        "suite_*.test",
        "state_timeout_ms",
        "ROS-time timeouts raised with the speed-up",
    ),
    (
        "suite_*.test",
        "system_state_timeout_s",
        "ROS-time timeouts raised with the speed-up",
    ),
    (
        "suite_*.test",
        "pose_timeout_s",
        "ROS-time timeouts raised with the speed-up",
    ),
    ("suite_*.test", "waypoints", "the scenario's path"),
];

/// The parameter table of a node type as launch files name it.
fn table(node_type: &str) -> &'static [ParamSpec] {
    match node_type {
        "state_manager" => &state_manager::params::PARAMS,
        "task_planner" => &planner::params::PARAMS,
        "gem_sim" => &sim::params::PARAMS,
        "mock_signals" => &mock_signals::PARAMS,
        "signal_sources" => &signal_sources::PARAMS,
        "status_overlay" => &overlay::PARAMS,
        "health_monitor" => &health_monitor::PARAMS,
        "gnss_pose" => &gnss_pose::PARAMS,
        "pacmod_bridge" => &pacmod_bridge::PARAMS,
        // The controller binaries, also as `type="$(arg controller)"`.
        _ => &controller::params::PARAMS,
    }
}

/// A `<param>` of a `gem_nodes` node.
struct NodeParam {
    file: String,
    node_type: String,
    name: String,
    value: String,
    guard: Option<String>,
}

/// An `<arg>` with its `default` or `value`.
struct Arg {
    file: String,
    name: String,
    default: Option<String>,
    value: Option<String>,
}

fn files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../launch");
    let mut out = Vec::new();
    for (dir, ext) in [("launch", "launch"), ("test", "test")] {
        for entry in std::fs::read_dir(root.join(dir)).expect("launch directory") {
            let path = entry.expect("launch file").path();
            if path.extension().is_some_and(|e| e == ext) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn parse(path: &Path) -> (Vec<NodeParam>, Vec<Arg>) {
    let file = path.file_name().unwrap().to_string_lossy().into_owned();
    let text = std::fs::read_to_string(path).expect("launch file");
    let (mut params, mut args) = (Vec::new(), Vec::new());
    let mut node: Option<String> = None;
    for event in EventReader::new(text.as_bytes()) {
        match event.unwrap_or_else(|e| panic!("{file}: {e}")) {
            XmlEvent::StartElement {
                name, attributes, ..
            } => {
                let attr = |key: &str| {
                    attributes
                        .iter()
                        .find(|a| a.name.local_name == key)
                        .map(|a| a.value.clone())
                };
                match name.local_name.as_str() {
                    "node" if attr("pkg").as_deref() == Some("gem_nodes") => {
                        node = attr("type");
                    }
                    "param" => {
                        if let Some(node_type) = &node {
                            params.push(NodeParam {
                                file: file.clone(),
                                node_type: node_type.clone(),
                                name: attr("name").expect("param name"),
                                value: attr("value").unwrap_or_default(),
                                guard: attr("if"),
                            });
                        }
                    }
                    "arg" => args.push(Arg {
                        file: file.clone(),
                        name: attr("name").expect("arg name"),
                        default: attr("default"),
                        value: attr("value"),
                    }),
                    _ => {}
                }
            }
            XmlEvent::EndElement { name } if name.local_name == "node" => node = None,
            _ => {}
        }
    }
    (params, args)
}

/// Whether `value` is what `spec` defaults to.
fn is_default(spec: &ParamSpec, value: &str) -> bool {
    match spec.default {
        ParamValue::Float(d) => value.parse::<f64>() == Ok(d),
        ParamValue::Int(d) => value.parse::<i64>() == Ok(d),
        ParamValue::Bool(d) => value.eq_ignore_ascii_case(&d.to_string()),
        ParamValue::Str(d) => value == d,
    }
}

fn deliberate(file: &str, name: &str) -> bool {
    DELIBERATE.iter().any(|(f, n, _)| {
        *n == name
            && match f.split_once('*') {
                Some((head, tail)) => file.starts_with(head) && file.ends_with(tail),
                None => *f == file,
            }
    })
}

#[test]
fn launch_files_pass_a_node_only_what_their_user_sets() {
    let (mut params, mut args) = (Vec::new(), Vec::new());
    for path in files() {
        let (p, a) = parse(&path);
        params.extend(p);
        args.extend(a);
    }
    assert!(
        params.len() >= 10,
        "only {} node parameters found",
        params.len()
    );
    let spec = |p: &NodeParam| -> &'static ParamSpec {
        table(&p.node_type)
            .iter()
            .find(|s| s.name == p.name)
            .unwrap_or_else(|| panic!("{}: {} has no ~{}", p.file, p.node_type, p.name))
    };
    let mut problems = Vec::new();
    // Each argument feeding a node parameter, with the parameters it feeds.
    let mut fed: Vec<(&str, &NodeParam)> = Vec::new();
    for p in &params {
        let spec = spec(p);
        match p
            .value
            .strip_prefix("$(arg ")
            .and_then(|v| v.strip_suffix(')'))
        {
            Some(arg) => {
                fed.push((arg, p));
                if p.guard.as_deref() != Some(&format!("$(eval {arg} != '')")) {
                    problems.push(format!(
                        "{}: ~{} is not guarded by `{arg} != ''`",
                        p.file, p.name
                    ));
                }
                let declared = args.iter().find(|a| a.file == p.file && a.name == arg);
                if declared.and_then(|a| a.default.as_deref()) != Some("") {
                    problems.push(format!(
                        "{}: argument {arg} (~{}) must default to empty",
                        p.file, p.name
                    ));
                }
            }
            None if !deliberate(&p.file, &p.name) => {
                problems.push(format!(
                    "{}: ~{} = {} is not in DELIBERATE",
                    p.file, p.name, p.value
                ));
            }
            None if is_default(spec, &p.value) => {
                problems.push(format!(
                    "{}: ~{} = {} restates the default",
                    p.file, p.name, p.value
                ));
            }
            None => {}
        }
    }
    for a in &args {
        let Some(value) = a
            .value
            .as_deref()
            .or(a.default.as_deref())
            .filter(|v| !v.is_empty())
        else {
            continue;
        };
        for (_, p) in fed.iter().filter(|(arg, _)| *arg == a.name) {
            if !deliberate(&a.file, &a.name) {
                problems.push(format!(
                    "{}: {} = {value} (~{}) is not in DELIBERATE",
                    a.file, a.name, p.name
                ));
            } else if is_default(spec(p), value) {
                problems.push(format!(
                    "{}: {} = {value} restates ~{}'s default",
                    a.file, a.name, p.name
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
