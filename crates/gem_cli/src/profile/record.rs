//! `--record`: one `rosbag record` per injection, started and verified connected to every
//! topic before the injection (the original lost messages because its recorder was still
//! connecting), stopped with SIGINT after the recovery so the bag is closed properly.

use anyhow::{anyhow, bail, Context};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What every bag holds: the inputs, the chain topics, the clock.
pub const TOPICS: [&str; 13] = [
    "/clock",
    "/estop",
    "/battery_level",
    "/temperature",
    "/gps_accuracy",
    "/signal_strength",
    "/system_state",
    "/task_planner_status",
    "/gem/ackermann_cmd",
    "/navigate_waypoints/goal",
    "/navigate_waypoints/cancel",
    "/navigate_waypoints/status",
    "/navigate_waypoints/result",
];

/// See [`Recorder::start`].
const PUBLISHER_SIDE_MARGIN: Duration = Duration::from_millis(200);

/// Starts recorders in one directory.
pub struct Recorder {
    dir: PathBuf,
}

/// One running recorder.
pub struct Bag {
    child: Child,
    file: PathBuf,
}

impl Recorder {
    /// Bags go to `dir` (created on the first one).
    pub fn new(dir: &Path) -> Recorder {
        Recorder {
            dir: dir.to_path_buf(),
        }
    }

    /// Starts `rosbag record` into `DIR/<name>.bag` and waits until it has an inbound
    /// connection on every topic.
    pub fn start(&self, name: &str) -> anyhow::Result<Bag> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        let file = self.dir.join(format!("{name}.bag"));
        let node = format!("/gemctl_record_{}_{name}", std::process::id());
        let child = gem_ros::realtime::run_normally(&mut Command::new("rosbag"))
            .args(["record", "-O"])
            .arg(&file)
            .args(TOPICS)
            .arg(format!("__name:={}", node.trim_start_matches('/')))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot run rosbag (source runners/env.sh)")?;
        let mut bag = Bag { child, file };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let connected = gem_ros::node::inbound_topics(&node).unwrap_or_default();
            if TOPICS.iter().all(|t| connected.contains(*t)) {
                // The recorder's side is connected; a rosrust publisher adds the new
                // subscriber from its own writer thread a moment later and cannot be asked
                // (its slave API has no getBusInfo). Without this margin about one bag in
                // twenty missed the goal's result.
                std::thread::sleep(PUBLISHER_SIDE_MARGIN);
                return Ok(bag);
            }
            if let Ok(Some(status)) = bag.child.try_wait() {
                bail!("rosbag record for {} exited: {status}", bag.file.display());
            }
            if Instant::now() > deadline {
                let missing: Vec<&str> = TOPICS
                    .iter()
                    .filter(|t| !connected.contains(**t))
                    .copied()
                    .collect();
                bag.stop();
                return Err(anyhow!(
                    "rosbag record not connected to {} after 30 s",
                    missing.join(", ")
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Bag {
    /// Stops the recorder (it closes the bag on SIGINT).
    pub fn stop(mut self) {
        super::stop_child(&mut self.child, Duration::from_secs(15));
    }
}
