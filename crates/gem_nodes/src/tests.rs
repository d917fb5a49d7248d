//! Every node's parameter and interface tables against its documentation page and the core's defaults.

use crate::{
    controller, gnss_pose, health_monitor, mock_signals, overlay, pacmod_bridge, planner,
    signal_sources, sim, state_manager,
};
use gem_core::control::stanley::StanleyConfig;
use gem_core::control::tracker::{Law, TrackerConfig};
use gem_core::state_manager::StateManagerConfig;
use gem_core::vehicle::VehicleParams;
use gem_ros::params::{
    check_docs, with_every_default, with_values, ParamError, ParamSpec, ParamValue,
};
use gem_ros::topics::Entry;

/// A node's row of [`NODES`], its page under `docs/nodes/` named once.
macro_rules! node {
    ($node:ident, $page:literal) => {
        (
            &$node::PARAMS,
            $node::INTERFACE,
            concat!("docs/nodes/", $page),
            include_str!(concat!("../../../docs/nodes/", $page)),
        )
    };
}

/// Each node: its parameter table, its interface table, its page under `docs/nodes/` and
/// that page's text.
const NODES: &[(&[ParamSpec], &[Entry], &str, &str)] = &[
    node!(state_manager, "state_manager.md"),
    node!(controller, "controller.md"),
    node!(planner, "task_planner.md"),
    node!(sim, "gem_sim.md"),
    node!(mock_signals, "mock_signals.md"),
    node!(signal_sources, "signal_sources.md"),
    node!(overlay, "status_overlay.md"),
    node!(health_monitor, "health_monitor.md"),
    node!(gnss_pose, "gnss_pose.md"),
    node!(pacmod_bridge, "pacmod_bridge.md"),
];

#[test]
fn every_node_documents_exactly_its_parameter_and_interface_tables() {
    let stale: Vec<String> = NODES
        .iter()
        .flat_map(|(params, entries, page, text)| {
            [
                check_docs(params, page, text).err(),
                gem_ros::topics::check_docs(entries, page, text).err(),
            ]
        })
        .flatten()
        .collect();
    assert!(stale.is_empty(), "{}", stale.join("\n\n"));
}

#[test]
fn every_reconfigurable_node_documents_exactly_its_values() {
    use ros1_protocols::dynamic_reconfigure::{markdown_table, DynParam};
    let nodes: [(&[DynParam], &str, &str); 2] = [
        (
            mock_signals::DYN_PARAMS,
            "docs/nodes/mock_signals.md",
            include_str!("../../../docs/nodes/mock_signals.md"),
        ),
        (
            sim::DYN_PARAMS,
            "docs/nodes/gem_sim.md",
            include_str!("../../../docs/nodes/gem_sim.md"),
        ),
    ];
    for (params, page, text) in nodes {
        let table = markdown_table(params);
        assert!(
            text.contains(&table),
            "the reconfigurable table of {page} is out of date; it must contain:\n{table}"
        );
    }
}

#[test]
fn a_node_left_at_its_defaults_runs_on_the_core_defaults() {
    with_every_default(|| {
        let sm = state_manager::params::Params::load().expect("state manager defaults");
        assert_eq!(sm.config, StateManagerConfig::default());
        let pp = controller::params::Params::load("pure_pursuit").expect("pure pursuit");
        assert_eq!(pp.tracker, TrackerConfig::default());
        let st = controller::params::Params::load("stanley").expect("stanley");
        let stanley = TrackerConfig {
            law: Law::Stanley(StanleyConfig::default()),
            ..TrackerConfig::default()
        };
        assert_eq!(st.tracker, stanley);
        let sim = sim::params::Params::load().expect("gem_sim defaults");
        assert_eq!(sim.vehicle, VehicleParams::default());
        // The controllers drive the vehicle the simulator models.
        assert_eq!(pp.tracker.wheelbase_m, sim.vehicle.wheelbase_m);
        assert_eq!(pp.tracker.max_steer_rad, sim.vehicle.max_steer_rad);
        planner::params::Params::load().expect("planner defaults");
        let gnss = gnss_pose::params::Params::load().expect("gnss_pose defaults");
        assert_eq!(gnss.pose, gem_core::gnss::pose::InsPoseConfig::default());
        assert_eq!(
            gnss.health,
            gem_core::gnss::health::InsHealthConfig::default()
        );
        let bridge = pacmod_bridge::params::Params::load().expect("pacmod_bridge defaults");
        assert_eq!(
            bridge.bridge,
            gem_core::pacmod::bridge::BridgeConfig::default()
        );
        assert_eq!(
            bridge.longitudinal,
            gem_core::pacmod::longitudinal::LongitudinalConfig::default()
        );
        let sim = sim::params::Params::load().expect("gem_sim defaults");
        assert_eq!(sim.pacmod, gem_core::pacmod::plant::PlantConfig::default());
        // The simulator's GNSS/INS and gnss_pose share the frame and the antenna.
        assert_eq!(sim.pose_output, sim::params::PoseOutput::ModelState);
        assert_eq!(sim.ins_frame, gnss.pose);
        assert_eq!(
            sim.inspva,
            gem_core::vehicle::localization::LocalizationParams::INSPVA
        );
        assert_eq!(
            sim.localization,
            gem_core::vehicle::localization::LocalizationParams::OFF
        );
    });
}

#[test]
fn every_default_passes_its_own_check() {
    with_every_default(|| {
        for (params, _, page, _) in NODES {
            for p in params.iter() {
                let read = match p.default {
                    ParamValue::Float(_) => p.f64().err(),
                    ParamValue::Int(_) => p.i64().err(),
                    ParamValue::Bool(_) => p.bool_value().err(),
                    ParamValue::Str(_) => p.string().err(),
                };
                assert_eq!(read, None, "{page}");
            }
        }
    });
}

/// A float parameter that feeds a core field, set to NaN (which every core check refuses),
/// must be the parameter the node's error names: the table's `feeds` and the node's reading
/// agree.
#[test]
fn a_refused_core_field_is_reported_as_the_parameter_that_feeds_it() {
    type Load = fn() -> Result<(), ParamError>;
    let nodes: [(&[ParamSpec], &[Load]); 5] = [
        (
            &state_manager::params::PARAMS,
            &[|| state_manager::params::Params::load().map(drop)],
        ),
        (
            &controller::params::PARAMS,
            &[
                || controller::params::Params::load("pure_pursuit").map(drop),
                || controller::params::Params::load("stanley").map(drop),
                || controller::params::Params::load("lqr").map(drop),
                || controller::params::Params::load("mpc").map(drop),
            ],
        ),
        (
            &sim::params::PARAMS,
            &[|| sim::params::Params::load().map(drop)],
        ),
        (
            &gnss_pose::params::PARAMS,
            &[|| gnss_pose::params::Params::load().map(drop)],
        ),
        (
            &pacmod_bridge::params::PARAMS,
            &[|| pacmod_bridge::params::Params::load().map(drop)],
        ),
    ];
    for (params, loads) in nodes {
        for p in params.iter().filter(|p| !p.feeds.is_empty()) {
            if !matches!(p.default, ParamValue::Float(_)) {
                continue;
            }
            let named: Vec<String> = with_values(&[(p.name, ParamValue::Float(f64::NAN))], || {
                loads
                    .iter()
                    .filter_map(|load| load().err())
                    .map(|e| e.to_string())
                    .collect()
            });
            assert!(!named.is_empty(), "~{} = NaN is accepted", p.name);
            for e in &named {
                assert!(
                    e.starts_with(&format!("parameter ~{}:", p.name)),
                    "~{} = NaN: {e}",
                    p.name
                );
            }
        }
    }
}

/// Every node's interface table: one declaration per name.
mod interfaces {
    use super::NODES;

    #[test]
    fn no_node_declares_a_name_twice() {
        for (_, entries, page, _) in NODES {
            for (i, e) in entries.iter().enumerate() {
                assert!(
                    entries[..i]
                        .iter()
                        .all(|o| o.name != e.name || o.role != e.role),
                    "{page}: {} declared twice",
                    e.name
                );
            }
        }
    }
}

/// The steering relation's three parameters in both nodes that take one (the bridge's
/// `~steering_*`, the simulated car's `~pacmod_steering_*`): read as given, and a bad one
/// refused naming its parameter.
#[test]
fn the_steering_relation_is_read_and_a_bad_one_names_its_parameter() {
    use gem_core::pacmod::steering::SteeringRelation;
    type Load = fn(&[(&'static str, ParamValue)]) -> Result<SteeringRelation, String>;
    let nodes: [(&str, Load); 2] = [
        ("", |v| {
            with_values(v, pacmod_bridge::params::Params::load)
                .map(|p| p.bridge.steering)
                .map_err(|e| e.to_string())
        }),
        ("pacmod_", |v| {
            with_values(v, sim::params::Params::load)
                .map(|p| p.pacmod.steering)
                .map_err(|e| e.to_string())
        }),
    ];
    for (prefix, load) in nodes {
        let name = |n: &str| -> &'static str {
            Box::leak(format!("{prefix}steering_{n}").into_boxed_str())
        };
        let read = load(&[
            (name("quadratic_deg"), ParamValue::Float(-0.09)),
            (name("linear"), ParamValue::Float(19.8)),
            (name("offset_deg"), ParamValue::Float(1.0)),
        ]);
        assert_eq!(
            read,
            Ok(SteeringRelation {
                quadratic_deg: -0.09,
                linear: 19.8,
                offset_deg: 1.0,
            }),
            "{prefix}steering_*"
        );
        // An offset beyond 5°; a relation that folds back before 35°; no ratio.
        for (n, value) in [
            ("offset_deg", 6.0),
            ("quadratic_deg", -0.5),
            ("linear", 0.0),
        ] {
            let e = load(&[(name(n), ParamValue::Float(value))]).unwrap_err();
            assert!(e.starts_with(&format!("parameter ~{}:", name(n))), "{e}");
        }
    }
}
