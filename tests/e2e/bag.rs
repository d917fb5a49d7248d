//! `gemctl bag info|export` on bags recorded by Debian's `rosbag record` during the test
//! (no committed fixtures): our `mock_signals` with a battery level set by `dynparam`, and
//! a `sensor_msgs/JointState` from `rostopic pub` exported with renamer rules.

use gem_e2e::bags::{finish, gemctl, recording, start_recording};
use gem_testbed::{cli, cli_background, ros};
use std::path::Path;
use std::time::Duration;

const T: Duration = Duration::from_secs(60);

fn read_csv(file: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut rd = csv::Reader::from_path(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let header = rd.headers().unwrap().iter().map(String::from).collect();
    let rows = rd
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect();
    (header, rows)
}

/// `gemctl bag export <bag> --out <out>` with `more` arguments.
fn export(bag: &Path, out: &Path, more: &[&str]) {
    let mut args = vec![
        "bag",
        "export",
        bag.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(more);
    gemctl(&args);
}

fn column<'a>(header: &[String], rows: &'a [Vec<String>], name: &str) -> Vec<&'a str> {
    let i = header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name} in {header:?}"));
    rows.iter().map(|r| r[i].as_str()).collect()
}

#[test]
fn exported_csv_holds_the_published_values() {
    let (r, d, bag) = recording("signals", "signals.bag");
    let signals = r.node("mock_signals").arg("__ns:=/bag1").spawn();
    gem_testbed::dynparam_set("/bag1/mock_signals", "battery_level", "42", T);
    finish(start_recording(
        &bag,
        Some(20),
        None,
        &["/bag1/battery_level", "/bag1/estop"],
    ));
    drop(signals);

    let info = gemctl(&["bag", "info", bag.to_str().unwrap()]);
    assert!(
        info.contains("/bag1/battery_level") && info.contains("gem_state_msgs/BatteryLevelStamped"),
        "{info}"
    );
    assert!(info.contains("messages:  40"), "{info}");

    let out = d.join("csv");
    export(
        &bag,
        &out,
        &["--topic", "/bag1/battery_level", "--time", "header"],
    );
    let (header, rows) = read_csv(&out.join("bag1_battery_level.csv"));
    assert_eq!(
        header,
        [
            "time",
            "header.seq",
            "header.stamp",
            "header.frame_id",
            "battery_level"
        ]
    );
    assert_eq!(rows.len(), 20);
    for v in column(&header, &rows, "battery_level") {
        let v: f64 = v.parse().unwrap();
        assert!((v - 0.42).abs() < 1e-6, "battery_level {v}");
    }
    // The time column is the header stamp here, and it increases.
    let times: Vec<f64> = column(&header, &rows, "time")
        .iter()
        .map(|t| t.parse().unwrap())
        .collect();
    assert_eq!(
        column(&header, &rows, "time"),
        column(&header, &rows, "header.stamp")
    );
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
}

#[test]
fn joint_state_export_with_renamer_rules() {
    let (_r, d, bag) = recording("joints", "joints.bag");
    let topic = "/bag2/joint_states";
    let msg = "{name: [first_joint, second_joint], position: [0.1, 0.2], velocity: [], effort: [1.5, 2.5]}";
    let publisher = cli_background(
        "rostopic",
        &["pub", "-r", "20", topic, "sensor_msgs/JointState", msg],
    );
    finish(start_recording(&bag, Some(5), None, &[topic]));
    drop(publisher);
    let rules = d.join("rules.yaml");
    std::fs::write(
        &rules,
        "- {from: 'position.#', name: 'name.#', to: '#.pos'}\n- {from: 'effort.#', name: 'name.#', to: '#.eff'}\n",
    )
    .unwrap();
    let out = d.join("csv");
    export(&bag, &out, &["--rename", rules.to_str().unwrap()]);
    let (header, rows) = read_csv(&out.join("bag2_joint_states.csv"));
    assert_eq!(rows.len(), 5);
    assert_eq!(column(&header, &rows, "first_joint.pos"), vec!["0.1"; 5]);
    assert_eq!(column(&header, &rows, "second_joint.pos"), vec!["0.2"; 5]);
    assert_eq!(column(&header, &rows, "second_joint.eff"), vec!["2.5"; 5]);
    assert_eq!(column(&header, &rows, "name.0"), vec!["first_joint"; 5]);
    assert!(
        !header.iter().any(|h| h.starts_with("position.")),
        "{header:?}"
    );
}

#[test]
fn unknown_topic_and_missing_bag_are_clear_errors() {
    let _r = ros();
    let bin = gem_testbed::node_binary("gemctl");
    let out = cli(
        bin.to_str().unwrap(),
        &["bag", "info", "/nonexistent/x.bag"],
        T,
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/x.bag"), "{err}");
}
