//! docs/spec.md §1: every wire type's MD5, as genmsg computes it from `msg/` and as our Rust types
//! report it, equals the table. A renamed field, a changed type or a reordered constant
//! changes both sums and fails this test.

use gem_msgs::*;
use gem_testbed::{repo_root, succeeded};
use rosrust::Message;
use std::collections::HashMap;
use std::process::Command;

/// Declares [`table`] from one list of Rust types with their expected MD5s.
macro_rules! table {
    ($($ty:ty => $md5:literal,)+) => {
        /// (type name, MD5 from docs/spec.md §1 or, for types the SPEC does not list, from
        /// the upstream package, the Rust type's MD5), the name as the Rust type gives it.
        fn table() -> Vec<(String, &'static str, String)> {
            vec![$((<$ty>::msg_type(), $md5, <$ty>::md5sum())),+]
        }
    };
}

table! {
    gem_state_msgs::BatteryLevelStamped => "2c98eccffaf9eb14e1eea1b036728773",
    gem_state_msgs::EstopStamped => "16f2c6a9217095a0995db3f04d09de1e",
    gem_state_msgs::GpsAccuracyStamped => "198da9dc2684aac2aa03a85a3344f5ef",
    gem_state_msgs::SignalStrengthStamped => "1a695c7a861068d52ef129050888fff0",
    gem_state_msgs::TemperatureStamped => "16d1d830ffd3865b5b86e75415fd6e0b",
    gem_state_msgs::SystemStateStamped => "af176b3ec1323cb7860d1e0cbcfbc1df",
    gem_state_msgs::TaskPlannerStatus => "12187a4dd3c7aa8ec57c362a8634bf5e",
    gem_controller_action::NavigateWaypointsAction => "bd30ce2aeb25755b1f1708f32dfbce55",
    gem_controller_action::NavigateWaypointsActionGoal => "5fdc22a26a381b592066e4ddd1310bd7",
    gem_controller_action::NavigateWaypointsActionResult => "0698ce25b2d595b82357c010557e935f",
    gem_controller_action::NavigateWaypointsActionFeedback => "dc482a8388a483456196c2ee762d48f7",
    gem_controller_action::NavigateWaypointsGoal => "c741b7659aefdd09743653a567699452",
    gem_controller_action::NavigateWaypointsResult => "358e233cde0c8a8bcfea4ce193f8fc15",
    gem_controller_action::NavigateWaypointsFeedback => "b933774c571e4a15d5a70589325c7d9c",
    gem_controller_action::ServeWaypoints => "f732eb3375b6de82d0c46f9dd3676e7b",
    gem_state_msgs::CalibrationRun => "1a297210a3ba4ef98b30de27048ff1c2",
    ackermann_msgs::AckermannDrive => "3512e91b48d69674a0e86fadf1ea8231",
    gazebo_msgs::GetModelState => "4c515e936d3319c9610c559c60bfc3d4",
    gazebo_msgs::ModelState => "9330fd35f2fcd82d457e54bd54e10593",
    pacmod_msgs::PacmodCmd => "5651e3d1d38e01689421d6d8a4e924f6",
    pacmod_msgs::PositionWithSpeed => "7e96a8c8cbc8234d4d2c87880ddb7cfe",
    pacmod_msgs::VehicleSpeedRpt => "33c26f1bbea2c9136f0821ddc90cd049",
    pacmod_msgs::SystemRptFloat => "e3af53d7d085bbad777634bcc2681141",
    pacmod_msgs::GlobalRpt => "e844957facaf4f6bfdea20a3ffdb048f",
    novatel_gps_msgs::Inspva => "f6fbcfee08847158b28edeb7f76b942f",
    novatel_gps_msgs::Insstdev => "5a3ffc9969b49cd107b55c9843133d1c",
    sensor_msgs::NavSatFix => "2d3a8cd499b9b4a0249fb98fd05cfa48",
    sensor_msgs::Imu => "6a62c6daae103f4ff57a132d6f95cec2",
    // Not in docs/spec.md §1; the sums published by the upstream ROS 1 packages.
    gazebo_msgs::ModelStates => "48c080191eb15c41858319b4d8a609c2",
    jsk_rviz_plugins::OverlayText => "7efc1ed34881f913afcee6ba02aa1242",
    tf2_msgs::TFMessage => "94810edda583a504dfda3829e70d7eec",
    visualization_msgs::MarkerArray => "d155b9ce5188fbaf89745847fd5882d7",
}

#[test]
fn rust_types_report_the_spec_md5() {
    let wrong: Vec<String> = table()
        .into_iter()
        .filter(|(_, md5, rust)| rust != md5)
        .map(|(ty, md5, rust)| format!("{ty}: Rust {rust} != expected {md5}"))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn genmsg_computes_the_spec_md5_from_msg_tree() {
    let root = repo_root();
    let out = Command::new("/usr/bin/python3")
        .arg(root.join("runners/ros_md5.py"))
        .arg(root.join("msg"))
        .args(table().iter().map(|(ty, _, _)| ty))
        .output()
        .expect("run /usr/bin/python3 runners/ros_md5.py (genmsg; runners/setup.sh installs it)");
    let computed: HashMap<String, String> = succeeded(&out, "ros_md5.py")
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(t, m)| (t.to_owned(), m.to_owned()))
        .collect();
    let wrong: Vec<String> = table()
        .into_iter()
        .filter(|(ty, md5, _)| computed.get(ty).map(String::as_str) != Some(*md5))
        .map(|(ty, md5, _)| format!("{ty}: genmsg {:?} != expected {md5}", computed.get(&ty)))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn vendored_standard_packages_are_byte_identical_to_the_installed_ones() {
    let std_root = repo_root().join("msg/std");
    let mut compared = 0;
    for pkg in std::fs::read_dir(&std_root).expect("msg/std") {
        let pkg = pkg.expect("entry").path();
        for kind in ["msg", "srv"] {
            let Ok(files) = std::fs::read_dir(pkg.join(kind)) else {
                continue;
            };
            for f in files {
                let f = f.expect("entry").path();
                let installed = std::path::Path::new("/usr/share")
                    .join(pkg.file_name().unwrap())
                    .join(kind)
                    .join(f.file_name().unwrap());
                let ours = std::fs::read(&f).expect("read vendored");
                let theirs = std::fs::read(&installed)
                    .unwrap_or_else(|e| panic!("{}: {e}", installed.display()));
                assert!(
                    ours == theirs,
                    "{} differs from {}",
                    f.display(),
                    installed.display()
                );
                compared += 1;
            }
        }
    }
    assert!(
        compared > 100,
        "only {compared} vendored definitions compared"
    );
}
