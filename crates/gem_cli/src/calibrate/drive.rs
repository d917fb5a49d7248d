//! A calibration drive on the ROS side, for `gemctl calibrate pedals|steering --collect`:
//! the runs of a plan asked of `pacmod_bridge`'s `~calibrate` service one after the other
//! while `rosbag record` records the drive. When a step may start, and when the drive must
//! stop, is `gem_calibrate::collect::next`'s to say; this module listens (the bridge's
//! `/diagnostics` status and `/system_state`), calls and records.

use anyhow::{anyhow, bail, ensure, Context};
use gem_calibrate::collect::{self, BridgeSeen, Next, Start, Step};
use gem_core::names;
use gem_core::pacmod::calibration::{Hold, RunRequest};
use gem_core::state_manager::ErrorBits;
use gem_msgs::diagnostic_msgs::DiagnosticArray;
use gem_msgs::gem_state_msgs::{CalibrationRun, CalibrationRunReq, SystemStateStamped};
use ros1_protocols::direct::{Arrival, DirectSubscriber};
use ros1_protocols::service::Client;
use ros1_protocols::Lock;
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command as Process};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The command line of a drive (`--collect`).
#[derive(clap::Args)]
pub struct DriveArgs {
    /// --collect: wait for Enter before each run from rest, or each straight and circle
    /// pair (on the car: time for the safety driver to line up and check the space).
    #[arg(long)]
    pub pause: bool,
    /// --collect: the bridge's node name.
    #[arg(long, default_value = "/pacmod_bridge")]
    pub bridge: String,
    /// --collect: seconds to wait for the master, the bridge and the recorder.
    #[arg(long, default_value_t = 15.0)]
    pub timeout: f64,
}

/// Where and how a drive runs.
pub struct Drive<'a> {
    /// What the bag is named after (`pedals`, `steering`).
    pub what: &'a str,
    /// The directory of the bag.
    pub out: &'a Path,
    /// The bridge's node name.
    pub bridge: &'a str,
    /// Bound of each wait for the master, the bridge and the recorder.
    pub timeout: Duration,
    /// Before step `i`, a prompt to wait for Enter on, if any (`--pause`).
    pub pause: &'a dyn Fn(usize, &Step) -> Option<String>,
}

impl Drive<'_> {
    /// Drives `plan`, recording `OUT/<what>-<date>-<time>.bag`; the bag. On any stop the
    /// bridge is asked to end the run (it brakes to rest) and the bag is kept.
    pub fn run(&self, plan: &[Step]) -> anyhow::Result<PathBuf> {
        std::fs::create_dir_all(self.out)
            .with_context(|| format!("cannot create {}", self.out.display()))?;
        gem_ros::node::start_within(
            &format!("gemctl_calibrate_{}_{}", self.what, std::process::id()),
            self.timeout,
        )?;
        let heard = Arc::new(Mutex::new(Heard::default()));
        let _subs = listen(&heard, self.bridge.trim_start_matches('/'))?;
        let service = format!("{}/calibrate", self.bridge.trim_end_matches('/'));
        ros1_protocols::this_node::wait_for_service(&service, self.timeout)
            .map_err(|e| anyhow!("{e}: is pacmod_bridge running, and engaged?"))?;
        let client: Client<CalibrationRun> = Client::new(&service)?;
        wait_for(self.timeout, || {
            let h = heard.locked();
            h.bridge.is_some() && h.system_error.is_some()
        })
        .map_err(|_| {
            anyhow!(
                "no status from {} on /diagnostics, or no /system_state, within {:.0} s: the drive needs both the bridge and the state manager",
                self.bridge,
                self.timeout.as_secs_f64()
            )
        })?;
        let bag = self.out.join(format!("{}-{}.bag", self.what, stamp()));
        let mut recorder = Recorder::start(&bag, self.timeout)?;
        let result = self.steps(plan, &client, &heard);
        if result.is_err() {
            let stop = CalibrationRunReq {
                pedal: "stop".into(),
                ..Default::default()
            };
            let _ = client.call(&stop, Duration::from_secs(2));
        }
        let recorded = recorder.stop();
        result?;
        recorded
    }

    /// The runs, one after the other, each when its start allows; then the car at rest.
    fn steps(
        &self,
        plan: &[Step],
        client: &Client<CalibrationRun>,
        heard: &Arc<Mutex<Heard>>,
    ) -> anyhow::Result<()> {
        let mut ours: Option<u32> = None;
        for (i, step) in plan.iter().enumerate() {
            // A run lasts at most its duration, then brakes to rest: 90 s more is plenty
            // even at a slow real-time factor.
            let limit = step.request.duration + Duration::from_secs(90);
            await_start(heard, step.start, ours, limit)?;
            if let Some(prompt) = (self.pause)(i, step) {
                eprintln!("{prompt}; press Enter to start");
                let mut line = String::new();
                std::io::stdin().read_line(&mut line)?;
            }
            let answer = client
                .call(&request(&step.request), Duration::from_secs(5))
                .map_err(|e| anyhow!("{}/calibrate: {e}", self.bridge))?;
            ensure!(
                answer.accepted,
                "calibration drive stopped: the bridge refused run {}/{} ({}): {}",
                i + 1,
                plan.len(),
                describe(&step.request),
                answer.message
            );
            eprintln!("run {}/{}: {}", i + 1, plan.len(), answer.message);
            ours = Some(answer.run);
        }
        await_start(heard, Start::AtRest, ours, Duration::from_secs(120))
    }
}

/// A run in words, for a refusal or a prompt.
pub fn describe(r: &RunRequest) -> String {
    format!(
        "{}, steering wheel {:.3} rad, for at most {:.0} s / {:.0} m / {:.1} m/s",
        r.hold,
        r.steering_wheel_rad,
        r.duration.as_secs_f64(),
        r.distance_m,
        r.max_speed_mps
    )
}

/// The service request for a run.
fn request(r: &RunRequest) -> CalibrationRunReq {
    let (pedal, fraction, speed_mps) = match r.hold {
        Hold::Accelerator(f) => ("accelerator", f, 0.0),
        Hold::Brake(f) => ("brake", f, 0.0),
        Hold::Speed(v) => ("speed", 0.0, v),
    };
    CalibrationRunReq {
        pedal: pedal.into(),
        fraction,
        speed_mps,
        steering_wheel_rad: r.steering_wheel_rad,
        steering_rate_rad_s: r.steering_rate_rad_s.unwrap_or(0.0),
        duration_s: r.duration.as_secs_f64(),
        distance_m: r.distance_m,
        max_speed_mps: r.max_speed_mps,
    }
}

/// What the drive hears: the bridge's status and the state manager's error (`Some(None)`:
/// heard, no error).
#[derive(Default)]
struct Heard {
    bridge: Option<BridgeSeen>,
    system_error: Option<Option<String>>,
}

/// Waits until a step that starts `start` may start (bounded by `limit`, wall time); an
/// error when the drive must stop, or on Ctrl-C.
fn await_start(
    heard: &Arc<Mutex<Heard>>,
    start: Start,
    ours: Option<u32>,
    limit: Duration,
) -> anyhow::Result<()> {
    let began = Instant::now();
    loop {
        ensure!(
            ros1_protocols::this_node::is_ok(),
            "interrupted: the run was stopped and the bag kept"
        );
        let next = {
            let h = heard.locked();
            let seen = h.bridge.clone().unwrap_or_default();
            let error = h.system_error.clone().flatten();
            collect::next(start, ours, &seen, error.as_deref())
        };
        match next {
            Next::Start => return Ok(()),
            Next::Abort(why) => bail!("calibration drive stopped: {why}"),
            Next::Wait if began.elapsed() > limit => bail!(
                "calibration drive stopped: run {} did not end within {:.0} s",
                ours.unwrap_or_default(),
                limit.as_secs_f64()
            ),
            Next::Wait => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Subscribes the bridge's status and the state manager's state.
fn listen(heard: &Arc<Mutex<Heard>>, bridge: &str) -> anyhow::Result<Vec<DirectSubscriber>> {
    let h = heard.clone();
    let status_name = format!("{bridge}: PACMod");
    let diagnostics = ros1_protocols::direct::subscribe(
        names::DIAGNOSTICS,
        move |m: DiagnosticArray, _: Arrival| {
            for s in m.status {
                if s.name.trim_start_matches('/') != status_name {
                    continue;
                }
                let values: BTreeMap<String, String> =
                    s.values.into_iter().map(|kv| (kv.key, kv.value)).collect();
                let value = |k: &str| values.get(k).cloned().unwrap_or_default();
                let calibration = value("calibration");
                h.locked().bridge = Some(BridgeSeen {
                    state: value("state"),
                    message: s.message,
                    run: value("calibration run").parse().ok(),
                    ended: calibration.strip_prefix("ended: ").map(str::to_owned),
                });
            }
        },
    )
    .map_err(|e| anyhow!("subscribe /diagnostics: {e}"))?;
    let h = heard.clone();
    let system = ros1_protocols::direct::subscribe(
        names::SYSTEM_STATE,
        move |m: SystemStateStamped, _: Arrival| {
            let error = (m.state == SystemStateStamped::STATE_ERROR).then(|| {
                ErrorBits::from_bits(m.error_code)
                    .names()
                    .collect::<Vec<_>>()
                    .join(", ")
            });
            h.locked().system_error = Some(error);
        },
    )
    .map_err(|e| anyhow!("subscribe /system_state: {e}"))?;
    Ok(vec![diagnostics, system])
}

/// A topic as the car's drivers publish it, in the root namespace.
pub fn topic(relative: &str) -> String {
    format!("/{relative}")
}

/// `rosbag record` of the PACMod topics, the INS, the bridge's status and the system
/// state.
struct Recorder {
    child: Child,
    bag: PathBuf,
}

impl Recorder {
    fn start(bag: &Path, timeout: Duration) -> anyhow::Result<Recorder> {
        let node = format!("gemctl_record_{}", std::process::id());
        let topics = [
            names::PACMOD_VEHICLE_SPEED,
            names::PACMOD_ACCEL_CMD,
            names::PACMOD_BRAKE_CMD,
            names::PACMOD_ACCEL_RPT,
            names::PACMOD_BRAKE_RPT,
            names::PACMOD_STEER_CMD,
            names::PACMOD_STEER_RPT,
            names::PACMOD_GLOBAL_RPT,
            names::INSPVA,
            names::SYSTEM_STATE,
            names::DIAGNOSTICS,
        ];
        let mut command = Process::new("rosbag");
        command
            .arg("record")
            .arg("-O")
            .arg(bag)
            .args(topics.iter().map(|t| topic(t)))
            .arg(format!("__name:={node}"))
            .stdout(std::process::Stdio::null())
            // Its own process group: `rosbag` runs the recorder as a child, and both must
            // hear the SIGINT that ends the recording.
            .process_group(0);
        // Should gemctl die without stopping it, `rosbag` hears SIGINT all the same and
        // stops its recorder, rather than recording on with no one to end it.
        // SAFETY: prctl(2) only, between fork and exec.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT);
                Ok(())
            });
        }
        let child = command
            .spawn()
            .context("cannot start `rosbag record` (is ROS's rosbag installed?)")?;
        let mut r = Recorder {
            child,
            bag: bag.to_owned(),
        };
        let speed = topic(names::PACMOD_VEHICLE_SPEED);
        let me = format!("/{node}");
        let subscribed = wait_for(timeout, || {
            ros1_protocols::this_node::state().is_ok_and(|s| {
                s.subscribers
                    .iter()
                    .any(|t| t.name == speed && t.connections.contains(&me))
            })
        });
        if subscribed.is_err() {
            let _ = r.stop();
            bail!(
                "rosbag record did not subscribe {speed} within {:.0} s",
                timeout.as_secs_f64()
            );
        }
        Ok(r)
    }

    /// Ends the recording as Ctrl-C would, and waits for the bag to be closed: `rosbag`
    /// may return before its recorder has renamed `BAG.active` to `BAG`.
    fn stop(&mut self) -> anyhow::Result<PathBuf> {
        // SAFETY: kill(2) on the process group of our own child.
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGINT);
        }
        let mut active = self.bag.clone().into_os_string();
        active.push(".active");
        let active = PathBuf::from(active);
        let closed = wait_for(Duration::from_secs(15), || {
            matches!(self.child.try_wait(), Ok(Some(_))) && self.bag.exists() && !active.exists()
        });
        if closed.is_err() {
            let _ = self.child.kill();
            bail!(
                "rosbag record did not close {} within 15 s of SIGINT",
                self.bag.display()
            );
        }
        Ok(self.bag.clone())
    }
}

/// Waits (wall time, bounded) until `done`; Err on the timeout.
fn wait_for(timeout: Duration, mut done: impl FnMut() -> bool) -> Result<(), ()> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if done() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if done() {
        Ok(())
    } else {
        Err(())
    }
}

/// The local date and time as `YYYYmmdd-HHMMSS`, for file names.
fn stamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as libc::time_t;
    // SAFETY: localtime_r writes into the struct we give it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    unsafe {
        libc::localtime_r(&now, &mut tm);
    }
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}
