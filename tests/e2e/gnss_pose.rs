//! `gnss_pose` against a real master: a rospy GNSS/INS (`tests/py/gnss_publisher.py`)
//! publishes `Inspva` (or `NavSatFix` + `Imu`); the node's `gazebo/get_model_state` answers
//! the rear axle's pose in the local frame, and its `gps_accuracy` goes bad on a bad status,
//! NaN values, duplicate or backward stamps, and good again after; a bad origin is refused
//! at start-up, naming the parameter.

use gem_core::gnss::health::FAULT_ACCURACY_MM;
use gem_core::gnss::pose::{InsFix, InsPose, InsPoseConfig};
use gem_core::names;
use gem_msgs::diagnostic_msgs::{DiagnosticArray, DiagnosticStatus};
use gem_msgs::gazebo_msgs::{GetModelState, GetModelStateReq, GetModelStateRes};
use gem_msgs::gem_state_msgs::GpsAccuracyStamped;
use gem_nodes::gnss_pose::params::{HOLD, INPUT, ORIGIN_LAT, ORIGIN_LON};
use gem_testbed::{
    fresh_ns, repo_root, ros, wait_for_service, wait_until, Collector, NodeProc, RosGuard,
};
use ros1_protocols::service::Client;
use std::io::Write;
use std::process::{Child, ChildStdin};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// Bound of every wait.
const T: Duration = Duration::from_secs(20);
/// Position tolerance, m.
const CM: f64 = 0.01;

/// The rospy GNSS/INS, driven line by line on its standard input.
struct Gnss {
    child: Child,
    /// Its standard input; closed, the script shuts down.
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    sent: usize,
}

impl Gnss {
    fn start(ns: &str, kind: &str) -> Gnss {
        let script = repo_root().join("tests/py/gnss_publisher.py");
        let (mut child, lines) =
            gem_testbed::tool_piped("/usr/bin/python3", &[script.to_str().unwrap(), ns, kind]);
        let stdin = child.stdin.take().expect("stdin");
        let mut g = Gnss {
            child,
            stdin: Some(stdin),
            lines,
            sent: 0,
        };
        g.expect("ready");
        g
    }

    fn expect(&mut self, want: &str) {
        loop {
            match self.lines.recv_timeout(T) {
                Ok(line) if line == want => return,
                Ok(_) => continue,
                Err(e) => panic!("gnss_publisher.py: no \"{want}\" within {T:?}: {e}"),
            }
        }
    }

    /// Applies a JSON line (`{"status": "INS_ALIGNING"}`) and waits until the script has.
    fn set(&mut self, json: &str) {
        let stdin = self
            .stdin
            .as_mut()
            .expect("gnss_publisher.py's standard input");
        writeln!(stdin, "{json}").expect("write to gnss_publisher.py");
        stdin.flush().expect("flush");
        self.sent += 1;
        let ok = format!("ok {}", self.sent);
        self.expect(&ok);
    }
}

impl Drop for Gnss {
    fn drop(&mut self) {
        // Standard input closed, the script shuts rospy down, which unregisters it from
        // the master. A killed one would stay registered, and its port could be another
        // process's by the time a tool such as roswtf calls it (another test process's
        // node, with the lanes of runners/test.sh).
        drop(self.stdin.take());
        let ended = gem_testbed::wait_until(Duration::from_secs(5), || {
            self.child.try_wait().is_ok_and(|s| s.is_some())
        });
        // Still running: SIGKILL to its own process group (tool_piped). Not once it has
        // ended and been reaped, when its ID may already be another process's.
        if !ended {
            unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
            let _ = self.child.wait();
        }
    }
}

/// The node in `ns`, with `args` (`_name:=value`), and its inputs' observers.
struct Node {
    proc: NodeProc,
    ns: String,
    accuracy: Collector<GpsAccuracyStamped>,
    diagnostics: Collector<DiagnosticArray>,
    client: Client<GetModelState>,
}

impl Node {
    fn start(r: &RosGuard, ns: &str, params: &[(&str, &str)]) -> Node {
        let mut b = r.node("gnss_pose").arg(&format!("__ns:={ns}"));
        for (k, v) in params {
            b = b.param(k, v);
        }
        let proc = b.spawn();
        let service = format!("{ns}/{}", names::GET_MODEL_STATE);
        assert!(wait_for_service(&service, T), "{}", proc.output());
        Node {
            proc,
            ns: ns.to_owned(),
            accuracy: Collector::new(&format!("{ns}/{}", names::GPS_ACCURACY)),
            diagnostics: Collector::new(names::DIAGNOSTICS),
            client: Client::new(&service).expect("client"),
        }
    }

    fn call(&self) -> Option<GetModelStateRes> {
        let req = GetModelStateReq {
            model_name: "gem".into(),
            relative_entity_name: String::new(),
        };
        self.client.call(&req, Duration::from_secs(2)).ok()
    }

    /// Waits until an answer satisfies `pred`; returns it.
    fn wait_answer(&self, pred: impl Fn(&GetModelStateRes) -> bool) -> GetModelStateRes {
        let mut last = None;
        let found = wait_until(T, || {
            last = self.call();
            last.as_ref().is_some_and(&pred)
        });
        assert!(found, "last answer {last:?}\n{}", self.proc.output());
        last.expect("an answer")
    }

    fn wait_accuracy(&self, pred: impl Fn(f32) -> bool, what: &str) {
        assert!(
            self.accuracy.wait_latest(T, |m| pred(m.accuracy)).is_some(),
            "{what}: latest gps_accuracy {:?}\n{}",
            self.accuracy.last().map(|m| m.accuracy),
            self.proc.output()
        );
    }

    fn good(&self) {
        self.wait_accuracy(|a| a == 0.0, "good solution");
        self.wait_answer(|a| a.success);
    }

    fn bad(&self, fault: &str) {
        self.wait_accuracy(|a| a >= FAULT_ACCURACY_MM, fault);
        self.wait_answer(|a| !a.success && a.status_message.contains(fault));
    }

    /// The node's latest `/diagnostics` status.
    fn status(&self) -> Option<DiagnosticStatus> {
        let name = format!("{}/gnss_pose: GNSS/INS solution", self.ns);
        self.diagnostics
            .all()
            .into_iter()
            .flat_map(|m| m.status)
            .rfind(|s| s.name == name)
    }

    fn alive(&mut self) {
        assert!(
            self.proc.wait(Duration::ZERO).is_none(),
            "gnss_pose ended\n{}",
            self.proc.output()
        );
        assert!(
            !self.proc.output().contains("panicked"),
            "{}",
            self.proc.output()
        );
    }
}

fn expected(lat_deg: f64, lon_deg: f64, azimuth_deg: f64) -> gem_core::geometry::Pose {
    InsPose::new(&InsPoseConfig::DEFAULT)
        .unwrap()
        .rear_axle(InsFix {
            lat_deg,
            lon_deg,
            azimuth_deg,
        })
        .unwrap()
}

fn assert_pose(a: &GetModelStateRes, x: f64, y: f64, yaw: f64) {
    let q = &a.pose.orientation;
    let got_yaw = gem_core::geometry::yaw_from_quaternion(q.x, q.y, q.z, q.w);
    let dyaw = gem_core::geometry::wrap_angle(got_yaw - yaw);
    assert!(
        (a.pose.position.x - x).abs() < CM
            && (a.pose.position.y - y).abs() < CM
            && dyaw.abs() < 1e-3,
        "served ({:.4}, {:.4}, {got_yaw:.5}), expected ({x:.4}, {y:.4}, {yaw:.5})",
        a.pose.position.x,
        a.pose.position.y
    );
}

fn near(a: &GetModelStateRes, x: f64, y: f64) -> bool {
    a.success && (a.pose.position.x - x).abs() < CM && (a.pose.position.y - y).abs() < CM
}

/// The node on wall time in a fresh namespace with `params`, and a publisher of `input`.
fn started(input: &str, params: &[(&str, &str)]) -> (RosGuard, Node, Gnss) {
    let r = ros();
    r.set_sim_time(false);
    let ns = fresh_ns("gp");
    let node = Node::start(&r, &ns, params);
    let gnss = Gnss::start(&ns, input);
    (r, node, gnss)
}

const LAT: f64 = 40.092_856_3;
const LON: f64 = -88.235_999_4;

#[test]
fn inspva_gives_the_rear_axle_pose_in_the_local_frame_stamped_with_the_measurement() {
    let (_r, mut node, mut gnss) = started("inspva", &[]);
    // At the origin facing east: the rear axle 0.46 m west of the antenna.
    node.good();
    let a = node.wait_answer(|a| near(a, -0.46, 0.0));
    assert_pose(&a, -0.46, 0.0, 0.0);
    let stamp = gem_ros::time::to_core(a.header.stamp);
    // The node runs on wall time here; this test process's ROS time may follow a /clock
    // another test set up before (it is chosen once per process).
    let now = gem_ros::time::to_core(ros1_protocols::this_node::wall_now());
    assert!(
        !stamp.is_zero() && now.saturating_since(stamp) < Duration::from_secs(1) && stamp <= now,
        "stamp {stamp} vs now {now}"
    );
    // About a kilometre north-east, heading 30° (north-north-east), moving 3 m/s.
    let (lat, lon, az) = (LAT + 0.0064, LON + 0.0083, 30.0);
    let e = expected(lat, lon, az);
    assert!(e.x.hypot(e.y) > 900.0, "{e:?}");
    let (ve, vn) = (3.0 * az.to_radians().sin(), 3.0 * az.to_radians().cos());
    gnss.set(&format!(
        r#"{{"lat": {lat}, "lon": {lon}, "azimuth": {az}, "ve": {ve}, "vn": {vn}}}"#
    ));
    // Straight ahead, no turning (from the second solution there on: the first one's yaw
    // rate is the jump from the origin's heading): the rear axle's velocity is the
    // antenna's.
    let a = node.wait_answer(|a| {
        let v = &a.twist.linear;
        near(a, e.x, e.y) && (v.x - ve).abs() < 1e-6 && (v.y - vn).abs() < 1e-6
    });
    assert_pose(&a, e.x, e.y, e.yaw);
    let w = a.twist.angular.z;
    assert!(w.abs() < 1e-6, "yaw rate {w}");
    assert_eq!(node.status().map(|s| s.level), Some(DiagnosticStatus::OK));
    node.alive();
}

#[test]
fn a_bad_ins_status_makes_the_gps_accuracy_bad_until_it_is_good_again() {
    let (_r, mut node, mut gnss) = started("inspva", &[]);
    node.good();
    gnss.set(r#"{"status": "INS_ALIGNING"}"#);
    node.bad("INS_ALIGNING");
    assert!(
        wait_until(T, || node.status().is_some_and(|s| s.level
            == DiagnosticStatus::ERROR
            && s.message.contains("INS_ALIGNING"))),
        "diagnostics: {:?}",
        node.status()
    );
    gnss.set(r#"{"status": "INS_SOLUTION_GOOD"}"#);
    node.good();
    node.alive();
}

#[test]
fn nan_values_and_duplicate_or_backward_stamps_are_faults_never_a_crash() {
    let (_r, mut node, mut gnss) = started("inspva", &[]);
    node.good();
    gnss.set(r#"{"lat": NaN}"#);
    node.bad("latitude is not a finite number");
    gnss.set(&format!(r#"{{"lat": {LAT}, "azimuth": Infinity}}"#));
    node.bad("azimuth is not a finite number");
    gnss.set(r#"{"azimuth": 90.0}"#);
    node.good();
    // Every message stamped as the first: the solution ages and goes stale.
    gnss.set(r#"{"stamp": "fixed"}"#);
    node.bad("old");
    gnss.set(r#"{"stamp": "now"}"#);
    node.good();
    // Stamps going back: refused, stale again.
    gnss.set(r#"{"stamp": "back"}"#);
    node.bad("old");
    let refused = |s: &DiagnosticStatus| {
        s.values
            .iter()
            .find(|kv| kv.key == "solutions refused for their stamps")
            .and_then(|kv| kv.value.parse::<u64>().ok())
    };
    assert!(
        wait_until(T, || node
            .status()
            .as_ref()
            .and_then(refused)
            .is_some_and(|n| n > 10)),
        "diagnostics: {:?}",
        node.status()
    );
    assert!(
        node.proc.output().contains("solution refused"),
        "{}",
        node.proc.output()
    );
    gnss.set(r#"{"stamp": "now"}"#);
    node.good();
    node.alive();
}

#[test]
fn navsatfix_with_imu_gives_the_same_pose_and_a_lost_fix_is_a_fault() {
    let (_r, mut node, mut gnss) = started("navsatfix", &[(INPUT.name, "navsatfix")]);
    node.good();
    let (lat, lon, az) = (LAT - 0.0045, LON + 0.011, 200.0);
    let e = expected(lat, lon, az);
    gnss.set(&format!(
        r#"{{"lat": {lat}, "lon": {lon}, "azimuth": {az}}}"#
    ));
    let a = node.wait_answer(|a| near(a, e.x, e.y));
    assert_pose(&a, e.x, e.y, e.yaw);
    assert!((a.twist.angular.z - 0.1).abs() < 1e-9, "the IMU's yaw rate");
    gnss.set(r#"{"status": "NO_FIX"}"#);
    node.bad("NO_FIX");
    node.alive();
}

#[test]
fn a_bad_origin_is_refused_at_start_up_naming_the_parameter() {
    let r = ros();
    r.set_sim_time(false);
    for (name, value, says) in [
        (ORIGIN_LAT.name, ".nan", "NaN"),
        (ORIGIN_LON.name, "''", "expected float"),
        (ORIGIN_LAT.name, "95", "within -90..90"),
    ] {
        let ns = fresh_ns("gp");
        let mut proc = r
            .node("gnss_pose")
            .arg(&format!("__ns:={ns}"))
            .param(name, value)
            .spawn();
        let status = proc.wait(T);
        let out = proc.output();
        assert!(
            status.is_some_and(|s| !s.success()),
            "~{name} = {value}: {status:?}\n{out}"
        );
        assert!(
            out.contains(&format!("parameter ~{name}")) && out.contains(says),
            "~{name} = {value}:\n{out}"
        );
        assert!(!out.contains("panicked"), "{out}");
    }
}

/// The existing chain, its rules unchanged: a bad INS status → `gps_accuracy` bad →
/// the state manager's `GPS_LOST` once its hold-off (`~gps_lost_after_s`, shortened here
/// to 2 s from its 15 s default) has passed without a good fix → cleared when good again.
#[test]
fn a_bad_ins_status_raises_the_state_managers_gps_lost_after_its_hold_off() {
    use gem_msgs::gem_state_msgs::SystemStateStamped as S;
    let r = ros();
    r.set_sim_time(false);
    let ns = fresh_ns("gp");
    let node = Node::start(&r, &ns, &[]);
    // The other four signals from mock_signals, whose own GPS goes nowhere.
    let _signals = r
        .node("mock_signals")
        .arg(&format!("__ns:={ns}"))
        .remap(names::GPS_ACCURACY, "mock_gps_accuracy")
        .spawn();
    let manager = r
        .node("state_manager")
        .arg(&format!("__ns:={ns}"))
        .param("gps_lost_after_s", 2.0)
        .param("state_timeout_ms", 0)
        .spawn();
    let state = Collector::<S>::new(&format!("{ns}/{}", names::SYSTEM_STATE));
    let mut gnss = Gnss::start(&ns, "inspva");
    node.good();
    assert!(
        state
            .wait_latest(T, |m| m.state == S::STATE_IDLE && m.error_code == 0)
            .is_some(),
        "{:?}\n{}",
        state.last(),
        manager.output()
    );
    let bad_at = std::time::Instant::now();
    gnss.set(r#"{"status": "INS_HIGH_VARIANCE"}"#);
    let lost = state.wait_latest(T, |m| m.error_code & S::ERROR_GPS_LOST != 0);
    let after = bad_at.elapsed();
    assert!(lost.is_some(), "{:?}\n{}", state.last(), manager.output());
    // The window counts from the last good fix, stamped up to one period (50 ms) before
    // the status changed.
    assert!(
        after >= Duration::from_millis(1900),
        "GPS_LOST {after:?} after the bad status, before the hold-off"
    );
    println!(
        "GPS_LOST {:.2} s after the INS status went bad (hold-off 2 s)",
        after.as_secs_f64()
    );
    gnss.set(r#"{"status": "INS_SOLUTION_GOOD"}"#);
    assert!(
        state
            .wait_latest(T, |m| m.error_code & S::ERROR_GPS_LOST == 0)
            .is_some(),
        "{:?}\n{}",
        state.last(),
        manager.output()
    );
}

#[test]
fn with_a_hold_the_last_good_pose_is_answered_held_then_refused() {
    let (_r, mut node, mut gnss) = started("inspva", &[(HOLD.name, "1.5")]);
    node.good();
    node.wait_answer(|a| near(a, -0.46, 0.0));
    // Turned to face north, with a bad status: the good pose (facing east) is held.
    gnss.set(r#"{"status": "INS_ALIGNING", "azimuth": 0.0}"#);
    node.wait_accuracy(|a| a >= FAULT_ACCURACY_MM, "bad status");
    let held = node.wait_answer(|a| a.success && a.status_message.contains("held"));
    assert!(
        held.status_message.contains("INS_ALIGNING"),
        "{}",
        held.status_message
    );
    assert_pose(&held, -0.46, 0.0, 0.0);
    let again = node.wait_answer(|a| a.success && a.status_message.contains("held"));
    assert_eq!(
        again.header.stamp, held.header.stamp,
        "the held pose keeps its stamp"
    );
    node.wait_answer(|a| !a.success && a.status_message.contains("INS_ALIGNING"));
    node.alive();
}
