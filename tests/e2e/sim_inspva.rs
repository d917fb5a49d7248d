//! The car's pose chain in simulation: `gem_sim` publishing the GNSS/INS solution
//! (`~pose_output: inspva`, its defaults: 20 Hz, 50 ms latency, 3 cm and 5 mrad of noise)
//! and `gnss_pose` serving the pose from it, against a real master on the simulator's
//! clock. The simulator stops serving `gazebo/get_model_state` (`gnss_pose` does);
//! `gnss_pose`'s answers follow the simulator's true odometry at their measurement stamps
//! within the noise while the car drives a curve; a status set on `~ins_status` turns
//! `gps_accuracy` bad within a bounded wait, logged once however often it is repeated, and
//! an empty one makes it good again.

use gem_core::geometry::{wrap_angle, yaw_from_quaternion};
use gem_core::gnss::health::{FAULT_ACCURACY_MM, GOOD_STATUS};
use gem_core::names;
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::gazebo_msgs::{GetModelState, GetModelStateReq, GetModelStateRes};
use gem_msgs::gem_state_msgs::GpsAccuracyStamped;
use gem_msgs::nav_msgs::Odometry;
use gem_msgs::novatel_gps_msgs::Inspva;
use gem_nodes::sim::params::POSE_OUTPUT;
use gem_testbed::{
    cli_background, cli_ok, fresh_ns, ros, wait_for_service, wait_until, Collector, NodeProc,
    RosGuard,
};
use ros1_protocols::service::Client;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Bound of each wait (wall time; the simulator runs at real time).
const T: Duration = Duration::from_secs(30);
/// Position tolerance, m: 6.7 σ of the default noise (0.03 m per axis).
const POSITION_TOL: f64 = 0.2;
/// Heading tolerance, rad: 6 σ of the default noise (0.005 rad).
const YAW_TOL: f64 = 0.03;
/// Velocity tolerance, m/s: the yaw rate `gnss_pose` estimates from two noisy headings
/// 50 ms apart is off by 0.14 rad/s (1 σ), 0.065 m/s at the antenna's lever arm.
const VELOCITY_TOL: f64 = 0.4;

/// `gem_sim` as the GNSS/INS, and `gnss_pose` once started, in a fresh namespace.
struct Rig {
    ns: String,
    sim: NodeProc,
    gnss: Option<NodeProc>,
    inspva: Collector<Inspva>,
    odom: Collector<Odometry>,
    accuracy: Collector<GpsAccuracyStamped>,
    stop: Arc<AtomicBool>,
    driver: Option<JoinHandle<()>>,
}

impl Rig {
    /// The simulator alone, owning the clock at real time, its odometry at every step (so
    /// every measurement time has its true state), publishing `Inspva` at its defaults.
    fn start(ros: &RosGuard) -> Rig {
        ros.set_sim_time(true);
        let ns = fresh_ns("si");
        let sim = ros
            .node("gem_sim")
            .arg(&format!("__ns:={ns}"))
            .param(POSE_OUTPUT.name, "inspva")
            .param("publish_clock", true)
            .param("speedup", 1.0)
            .param("state_rate", 100.0)
            .param("publish_tf", false)
            .spawn();
        let topic = |name: &str| format!("{ns}/{name}");
        Rig {
            inspva: Collector::new(&topic(names::INSPVA)),
            odom: Collector::new(&topic(names::ODOM)),
            accuracy: Collector::new(&topic(names::GPS_ACCURACY)),
            ns,
            sim,
            gnss: None,
            stop: Arc::new(AtomicBool::new(false)),
            driver: None,
        }
    }

    fn topic(&self, name: &str) -> String {
        format!("{}/{name}", self.ns)
    }

    /// `gnss_pose` at its defaults (the same origin and antenna offset as the simulator's),
    /// once it serves the pose.
    fn start_gnss_pose(&mut self, ros: &RosGuard) -> Client<GetModelState> {
        let gnss = ros
            .node("gnss_pose")
            .arg(&format!("__ns:={}", self.ns))
            .spawn();
        let service = self.topic(names::GET_MODEL_STATE);
        assert!(
            wait_for_service(&service, T),
            "{}\n{}",
            gnss.output(),
            self.sim.output()
        );
        self.gnss = Some(gnss);
        Client::new(&service).expect("client")
    }

    /// A controller's 20 Hz of one drive command, from now on.
    fn drive(&mut self, command: AckermannDrive) {
        let out = ros1_protocols::this_node::publish::<AckermannDrive>(
            &self.topic(names::ACKERMANN_CMD),
            10,
        )
        .expect("a command publisher");
        let halt = self.stop.clone();
        // A rate, not a synchronisation.
        self.driver = Some(std::thread::spawn(move || {
            while !halt.load(Ordering::Relaxed) {
                let _ = out.send(command.clone());
                std::thread::sleep(Duration::from_millis(50));
            }
        }));
    }

    /// Both nodes' output, for assertion messages.
    fn output(&self) -> String {
        format!(
            "--- gem_sim ---\n{}\n--- gnss_pose ---\n{}",
            self.sim.output(),
            self.gnss.as_ref().map(NodeProc::output).unwrap_or_default()
        )
    }

    /// The node serving `service`, as the master has it.
    fn provider(&self, service: &str) -> Option<String> {
        let name = self.topic(service);
        ros1_protocols::this_node::state()
            .ok()?
            .services
            .into_iter()
            .find(|s| s.name == name)
            .and_then(|s| s.connections.into_iter().next())
    }

    fn wait_accuracy(&self, what: &str, pred: impl Fn(f32) -> bool) {
        assert!(
            self.accuracy.wait_latest(T, |m| pred(m.accuracy)).is_some(),
            "{what}: latest gps_accuracy {:?}\n{}",
            self.accuracy.last().map(|m| m.accuracy),
            self.output()
        );
    }

    fn wait_status(&self, status: &str) {
        assert!(
            self.inspva.wait_latest(T, |m| m.status == status).is_some(),
            "Inspva status never {status}: latest {:?}\n{}",
            self.inspva.last().map(|m| m.status),
            self.output()
        );
    }

    /// `rostopic pub -1` of `text` on the simulator's `~ins_status`.
    fn set_status_once(&self, text: &str) {
        let topic = format!("{}/gem_sim/ins_status", self.ns);
        let data = format!("data: '{text}'");
        cli_ok(
            "rostopic",
            &["pub", "-1", &topic, "std_msgs/String", &data],
            T,
        );
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(d) = self.driver.take() {
            let _ = d.join();
        }
    }
}

fn call(client: &Client<GetModelState>) -> Option<GetModelStateRes> {
    let req = GetModelStateReq {
        model_name: "gem".into(),
        relative_entity_name: String::new(),
    };
    client.call(&req, Duration::from_secs(2)).ok()
}

/// Seconds of a ROS time, for messages.
fn secs(t: rosrust::Time) -> f64 {
    f64::from(t.sec) + f64::from(t.nsec) * 1e-9
}

#[test]
fn gnss_pose_fed_by_the_simulated_ins_follows_the_true_state_while_the_car_drives() {
    let ros = ros();
    let mut rig = Rig::start(&ros);
    // The stepping loop starts after every service is up: with a first solution out, the
    // simulator would serve get_model_state by now if it ever did.
    assert!(
        rig.inspva.wait_for(T, |_| true).is_some(),
        "no Inspva\n{}",
        rig.output()
    );
    assert_eq!(
        rig.provider(names::GET_MODEL_STATE),
        None,
        "gem_sim serves get_model_state with pose_output inspva"
    );
    assert_eq!(
        rig.provider(names::SET_MODEL_STATE),
        Some(format!("{}/gem_sim", rig.ns))
    );
    // 20 Hz of sim time, good, measured at the steps the odometry reports.
    assert!(wait_until(T, || rig.inspva.len() >= 6), "{}", rig.output());
    let first: Vec<Inspva> = rig.inspva.all().into_iter().take(6).collect();
    for pair in first.windows(2) {
        let gap = secs(pair[1].header.stamp) - secs(pair[0].header.stamp);
        assert!((gap - 0.05).abs() < 1e-6, "stamps {gap} s apart");
    }
    assert!(first.iter().all(|m| m.status == GOOD_STATUS));
    let client = rig.start_gnss_pose(&ros);
    assert_eq!(
        rig.provider(names::GET_MODEL_STATE),
        Some(format!("{}/gnss_pose", rig.ns))
    );
    // A left curve at 2 m/s: the antenna's velocity carries the yaw rate's lever arm.
    rig.drive(AckermannDrive {
        steering_angle: 0.15,
        speed: 2.0,
        ..Default::default()
    });
    assert!(
        rig.odom
            .wait_latest(T, |m| m.twist.twist.linear.x > 1.9)
            .is_some(),
        "the car does not drive\n{}",
        rig.output()
    );
    let mut compared = Vec::new();
    let mut last_answer = None;
    let enough = wait_until(T, || {
        let Some(a) = call(&client) else {
            return false;
        };
        last_answer = Some(a.clone());
        if !a.success {
            return false;
        }
        if compared
            .last()
            .is_some_and(|(t, _): &(rosrust::Time, f64)| *t == a.header.stamp)
        {
            return false;
        }
        // The true state at the measurement's stamp (odometry at every step).
        let truth = rig.odom.wait_for(T, |o| o.header.stamp == a.header.stamp);
        let truth = truth.unwrap_or_else(|| {
            panic!(
                "no odometry stamped {:.3} s\n{}",
                secs(a.header.stamp),
                rig.output()
            )
        });
        let (p, q) = (&truth.pose.pose.position, &truth.pose.pose.orientation);
        let true_yaw = yaw_from_quaternion(q.x, q.y, q.z, q.w);
        let o = &a.pose.orientation;
        let yaw = yaw_from_quaternion(o.x, o.y, o.z, o.w);
        let error = (a.pose.position.x - p.x).hypot(a.pose.position.y - p.y);
        assert!(
            error < POSITION_TOL && wrap_angle(yaw - true_yaw).abs() < YAW_TOL,
            "at {:.3} s: served ({:.3}, {:.3}, {yaw:.4}), true ({:.3}, {:.3}, {true_yaw:.4})\n{}",
            secs(a.header.stamp),
            a.pose.position.x,
            a.pose.position.y,
            p.x,
            p.y,
            rig.output()
        );
        // The rear axle's world velocity: the odometry's body twist, turned by the yaw.
        let t = &truth.twist.twist.linear;
        let (sin, cos) = true_yaw.sin_cos();
        let (vx, vy) = (t.x * cos - t.y * sin, t.x * sin + t.y * cos);
        let v = &a.twist.linear;
        assert!(
            (v.x - vx).hypot(v.y - vy) < VELOCITY_TOL,
            "at {:.3} s: served velocity ({:.3}, {:.3}), true ({vx:.3}, {vy:.3})\n{}",
            secs(a.header.stamp),
            v.x,
            v.y,
            rig.output()
        );
        compared.push((a.header.stamp, error));
        compared.len() >= 20
    });
    assert!(
        enough,
        "{} answers compared; last {last_answer:?}\n{}",
        compared.len(),
        rig.output()
    );
    let worst = compared.iter().map(|(_, e)| *e).fold(0.0, f64::max);
    let mean = compared.iter().map(|(_, e)| *e).sum::<f64>() / compared.len() as f64;
    eprintln!(
        "gnss_pose against the true state, {} solutions: position error mean {mean:.3} m, worst {worst:.3} m",
        compared.len()
    );
    // The noise is there (a served pose that is the truth exactly would be the
    // simulator's own, not the solution's), and no more: 2-D errors of 0.03 m per axis
    // average 0.038 m, while a stamp one latency (50 ms, 10 cm at 2 m/s) off the
    // measurement would add about that much.
    assert!(
        mean > 0.005 && mean < 0.06,
        "mean error {mean} m\n{}",
        rig.output()
    );
}

/// Whether a `gps_accuracy` is the σ the simulated INS reports by default (a Novatel's in
/// RTK, on `novatel/insstdev`), in mm.
fn reports_rtk_sigma(accuracy_mm: f32) -> bool {
    let rtk_mm = gem_core::gnss::simulated::RTK_REPORTED_SIGMA_M * 1e3;
    (f64::from(accuracy_mm) - rtk_mm).abs() < 1e-3
}

#[test]
fn a_bad_ins_status_set_on_the_simulator_is_a_gps_fault_until_cleared() {
    let ros = ros();
    let mut rig = Rig::start(&ros);
    let client = rig.start_gnss_pose(&ros);
    rig.wait_accuracy("good solution", reports_rtk_sigma);
    assert!(call(&client).is_some_and(|a| a.success));
    // A status repeated at 20 Hz: the fault at once, logged once.
    let topic = format!("{}/gem_sim/ins_status", rig.ns);
    let repeated = Collector::<gem_msgs::std_msgs::String>::new(&topic);
    let mut publisher = cli_background(
        "rostopic",
        &[
            "pub",
            "-r",
            "20",
            &topic,
            "std_msgs/String",
            "data: 'INS_SOLUTION_FREE'",
        ],
    );
    rig.wait_status("INS_SOLUTION_FREE");
    let bad_seen = std::time::Instant::now();
    rig.wait_accuracy("INS_SOLUTION_FREE", |a| a >= FAULT_ACCURACY_MM);
    let fault_after = bad_seen.elapsed();
    let mut refused = None;
    assert!(
        wait_until(T, || {
            refused = call(&client);
            refused
                .as_ref()
                .is_some_and(|a| !a.success && a.status_message.contains("INS_SOLUTION_FREE"))
        }),
        "{refused:?}\n{}",
        rig.output()
    );
    assert!(
        wait_until(T, || repeated.len() >= 10),
        "{}",
        publisher.output()
    );
    publisher.kill();
    eprintln!(
        "gps_accuracy bad {:.0} ms after the first bad Inspva arrived here",
        fault_after.as_secs_f64() * 1e3
    );
    let set = "INS status set to \"INS_SOLUTION_FREE\"";
    assert_eq!(rig.sim.output().matches(set).count(), 1, "{}", rig.output());
    // An empty status: good again.
    rig.set_status_once("");
    rig.wait_status(GOOD_STATUS);
    rig.wait_accuracy("good again", reports_rtk_sigma);
    assert!(
        wait_until(T, || call(&client).is_some_and(|a| a.success)),
        "{}",
        rig.output()
    );
    assert!(
        rig.sim
            .wait_output(T, "INS status restored to INS_SOLUTION_GOOD"),
        "{}",
        rig.output()
    );
    // Another bad one, through the same topic once.
    rig.set_status_once("INS_ALIGNING");
    rig.wait_status("INS_ALIGNING");
    rig.wait_accuracy("INS_ALIGNING", |a| a >= FAULT_ACCURACY_MM);
    assert_eq!(rig.sim.output().matches(set).count(), 1, "{}", rig.output());
    for node in [Some(&mut rig.sim), rig.gnss.as_mut()]
        .into_iter()
        .flatten()
    {
        assert!(node.wait(Duration::ZERO).is_none(), "a node ended");
    }
    assert!(!rig.output().contains("panicked"), "{}", rig.output());
}
