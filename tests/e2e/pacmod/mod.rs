//! `pacmod_bridge` driving `gem_sim` in its PACMod mode, against a real master and on sim
//! time: drive commands from a 20 Hz publisher in the test (a controller's rate), the
//! PACMod's commands and reports watched on the wire. A speed step tracked through the
//! pedals; a stop on the brake at the command's deceleration with the accelerator
//! released; the bridge's watchdog stopping the car when the commands fall silent; a
//! driver override (taken with `rostopic pub`) that stops the bridge commanding until a
//! deliberate re-enable (`rosservice call`); a NaN command refused and braked; a steering
//! report disagreeing with the command latched as a fault; noisy,
//! late reports; the bridge itself killed, which leaves the car driving on its last
//! command as the `pacmod2` driver re-sends it; and an override reaching a state manager
//! that watches `vehicle/fault` as an ESTOP.

mod driving;
mod faults;

use gem_core::pacmod::MPS_PER_MPH;
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::diagnostic_msgs::{DiagnosticArray, DiagnosticStatus};
use gem_msgs::gazebo_msgs::ModelStates;
use gem_msgs::gem_state_msgs::EstopStamped;
use gem_msgs::pacmod_msgs::{PacmodCmd, PositionWithSpeed, VehicleSpeedRpt};
use gem_msgs::std_msgs::Float64;
use gem_testbed::{cli_ok, fresh_ns, ros, wait_until, Collector, NodeProc, RosGuard};
use ros1_protocols::Lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Bound of each wait (wall time; the simulator runs at real time).
const T: Duration = Duration::from_secs(30);
/// The speed of the step, m/s.
const CRUISE: f32 = 2.0;
/// The steering of the commands, rad (front wheel).
const STEER: f32 = 0.1;

/// The simulator, the bridge, a command publisher and the wire.
struct Rig {
    ns: String,
    sim: NodeProc,
    bridge: NodeProc,
    command: Arc<Mutex<Option<AckermannDrive>>>,
    stop: Arc<AtomicBool>,
    publisher: Option<JoinHandle<()>>,
    accel: Collector<PacmodCmd>,
    brake: Collector<PacmodCmd>,
    shift: Collector<PacmodCmd>,
    steer: Collector<PositionWithSpeed>,
    speed: Collector<Float64>,
    speed_rpt: Collector<VehicleSpeedRpt>,
    diag: Collector<DiagnosticArray>,
    fault: Collector<EstopStamped>,
}

impl Rig {
    /// Both nodes in a fresh namespace on sim time, the bridge asked to enable at start,
    /// and the command publisher silent.
    fn start(ros: &RosGuard) -> Rig {
        Rig::start_with(ros, &[])
    }

    /// [`Rig::start`] with more parameters of the simulator.
    fn start_with(ros: &RosGuard, sim_params: &[(&str, &str)]) -> Rig {
        let ns = fresh_ns("pm");
        ros.set_sim_time(true);
        let mut sim = ros
            .node("gem_sim")
            .arg(&format!("__ns:={ns}"))
            .param("interface", "pacmod")
            .param("publish_clock", true)
            .param("speedup", 1.0);
        for (k, v) in sim_params {
            sim = sim.param(k, v);
        }
        let sim = sim.spawn();
        let bridge = ros
            .node("pacmod_bridge")
            .arg(&format!("__ns:={ns}"))
            .remap(gem_core::names::DIAGNOSTICS, &format!("{ns}/diagnostics"))
            .param("enable_at_start", true)
            .spawn();
        let topic = |name: &str| format!("{ns}/{name}");
        let command = Arc::new(Mutex::new(None::<AckermannDrive>));
        let stop = Arc::new(AtomicBool::new(false));
        let out = ros1_protocols::this_node::publish::<AckermannDrive>(
            &topic(gem_core::names::ACKERMANN_CMD),
            10,
        )
        .expect("a command publisher");
        let (cmd, halt) = (command.clone(), stop.clone());
        // A controller's 20 Hz: a rate, not a synchronisation.
        let publisher = std::thread::spawn(move || {
            while !halt.load(Ordering::Relaxed) {
                let next = cmd.locked().clone();
                if let Some(c) = next {
                    let _ = out.send(c);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        use gem_core::names as n;
        Rig {
            accel: Collector::new(&topic(n::PACMOD_ACCEL_CMD)),
            brake: Collector::new(&topic(n::PACMOD_BRAKE_CMD)),
            shift: Collector::new(&topic(n::PACMOD_SHIFT_CMD)),
            steer: Collector::new(&topic(n::PACMOD_STEER_CMD)),
            speed: Collector::new(&topic(n::PACMOD_VEHICLE_SPEED)),
            speed_rpt: Collector::new(&topic(n::PACMOD_VEHICLE_SPEED_RPT)),
            diag: Collector::new(&topic("diagnostics")),
            fault: Collector::new(&topic(n::VEHICLE_FAULT)),
            ns,
            sim,
            bridge,
            command,
            stop,
            publisher: Some(publisher),
        }
    }

    /// Commands `speed` (m/s) with `accel` (m/s², 0: none) from now on.
    fn drive(&self, speed: f32, accel: f32) {
        self.drive_steering(speed, accel, STEER);
    }

    /// [`Rig::drive`] with the front wheels at `steer` (rad).
    fn drive_steering(&self, speed: f32, accel: f32, steer: f32) {
        *self.command.locked() = Some(AckermannDrive {
            steering_angle: steer,
            speed,
            acceleration: accel,
            ..Default::default()
        });
    }

    /// No more commands.
    fn silence(&self) {
        *self.command.locked() = None;
    }

    /// The bridge's latest status.
    fn status(&self) -> Option<DiagnosticStatus> {
        self.diag
            .last()
            .and_then(|m| m.status.into_iter().find(|s| s.name.ends_with(": PACMod")))
    }

    /// The value of `key` in the bridge's latest status.
    fn value(&self, key: &str) -> Option<String> {
        self.status()?
            .values
            .into_iter()
            .find(|kv| kv.key == key)
            .map(|kv| kv.value)
    }

    /// Waits until the bridge's state is `name`.
    fn wait_state(&self, name: &str) {
        assert!(
            wait_until(T, || self.value("state").as_deref() == Some(name)),
            "never {name}: last status {:?}\n{}",
            self.status(),
            self.output()
        );
    }

    /// The latest speed report, m/s.
    fn speed_mps(&self) -> f64 {
        self.speed.last().map_or(f64::NAN, |m| m.data)
    }

    /// Waits until the reported speed satisfies `pred`.
    fn wait_speed(&self, what: &str, pred: impl Fn(f64) -> bool) {
        assert!(
            wait_until(T, || pred(self.speed_mps())),
            "{what}: speed {:.3} m/s, status {:?}\n{}",
            self.speed_mps(),
            self.status(),
            self.output()
        );
    }

    /// Engaged and cruising at [`CRUISE`].
    fn cruising(ros: &RosGuard) -> Rig {
        Rig::cruising_with(ros, &[])
    }

    /// [`Rig::cruising`] with more parameters of the simulator.
    fn cruising_with(ros: &RosGuard, sim_params: &[(&str, &str)]) -> Rig {
        let rig = Rig::start_with(ros, sim_params);
        rig.wait_state("READY");
        rig.drive(CRUISE, 0.0);
        rig.wait_state("DRIVING");
        rig.wait_speed("cruise", |v| (v - f64::from(CRUISE)).abs() < 0.1);
        rig
    }

    /// Waits until `n` more PACMod accelerator commands have been sent (ticks of the
    /// bridge), so what follows is judged on fresh output.
    fn wait_ticks(&self, n: usize) {
        let from = self.accel.len();
        assert!(
            wait_until(T, || self.accel.len() >= from + n),
            "the bridge stopped commanding\n{}",
            self.output()
        );
    }

    /// The (accelerator, brake) of each tick from the `from`-th messages of each on,
    /// paired by stamp.
    fn pedal_pairs(&self, from_accel: usize, from_brake: usize) -> Vec<(f64, f64)> {
        let brakes: HashMap<(u32, u32), f64> = self.brake.all()[from_brake..]
            .iter()
            .map(|m| ((m.header.stamp.sec, m.header.stamp.nsec), m.f64_cmd))
            .collect();
        self.accel.all()[from_accel..]
            .iter()
            .filter_map(|m| {
                brakes
                    .get(&(m.header.stamp.sec, m.header.stamp.nsec))
                    .map(|b| (m.f64_cmd, *b))
            })
            .collect()
    }

    fn output(&self) -> String {
        format!(
            "--- {} sim ---\n{}\n--- bridge ---\n{}",
            self.ns,
            self.sim.output(),
            self.bridge.output()
        )
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(p) = self.publisher.take() {
            let _ = p.join();
        }
    }
}

/// Seconds of a ROS stamp.
fn secs(t: rosrust::Time) -> f64 {
    f64::from(t.sec) + f64::from(t.nsec) * 1e-9
}
