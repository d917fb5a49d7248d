//! The suite across containers, as `docker/compose.yml` deploys it: a master, a vehicle
//! and a supervisor container of the headless image on a user-defined network, each with
//! a fixed address. The host joins that network through its gateway (`<subnet>.1`), so
//! the test's own tools (`gemctl`, `rostopic`, the observer) run on the host.
//!
//! Every container and network a [`Compose`] makes carries the label
//! `org.gem-rs.owner=<hostname>:<pid of this test>`. Dropping the [`Compose`] copies each
//! container's output and ROS logs to `build/docker/containers/<project>/`, then removes
//! the containers and the network, however a test ends; the leftovers of a test process
//! that was killed are removed by the next one (`gem_remove_leftovers` in
//! `runners/docker_common.sh`, the one home of that rule).

use crate::hosts::{spawn_ros, HostProc, RosEnv};
use crate::lap::{SPEEDUP, TIMEOUT_S};
use gem_testbed::repo_root;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The image the compose file runs (`runners/docker_build.sh --target headless`).
pub const IMAGE: &str = "gem-rs:headless-prod";
/// The master's port in its container.
pub const MASTER_PORT: u16 = 11311;

/// A computer of the compose file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// roscore.
    Master,
    /// vehicle.launch: gem_sim and the controller.
    Vehicle,
    /// supervisor.launch: mock_signals, state_manager, task_planner, overlay, monitor.
    Supervisor,
}

impl Service {
    /// All three.
    pub const ALL: [Service; 3] = [Service::Master, Service::Vehicle, Service::Supervisor];

    /// The service's name in the compose file.
    pub fn name(self) -> &'static str {
        match self {
            Service::Master => "master",
            Service::Vehicle => "vehicle",
            Service::Supervisor => "supervisor",
        }
    }

    /// The last octet of its address (the compose file's).
    fn host(self) -> u8 {
        match self {
            Service::Master => 2,
            Service::Vehicle => 3,
            Service::Supervisor => 4,
        }
    }
}

/// Whether this machine can run the suite in containers: `Err` says why not.
pub fn available() -> Result<(), String> {
    let ok = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !ok("docker", &["info"]) {
        return Err("no Docker engine answers (`docker info`)".into());
    }
    if !ok("docker-compose", &["version"]) {
        return Err("docker-compose is not installed".into());
    }
    if !ok("docker", &["image", "inspect", IMAGE]) {
        return Err(format!(
            "image {IMAGE} not found: build it with runners/docker_build.sh --target headless"
        ));
    }
    Ok(())
}

/// One deployment of `docker/compose.yml`, removed when dropped.
pub struct Compose {
    /// The compose project (prefix of every container's and the network's name).
    pub project: String,
    /// The first three octets of the network's /24.
    pub subnet: String,
    /// Logs and the host tools' `ROS_HOME`.
    pub dir: PathBuf,
    counter: AtomicU32,
}

impl Compose {
    /// Removes leftovers of killed test runs, then starts the three containers
    /// (`docker-compose up -d`).
    pub fn up() -> Result<Compose, String> {
        static N: AtomicU32 = AtomicU32::new(0);
        remove_leftovers();
        let pid = std::process::id();
        let n = N.fetch_add(1, Ordering::Relaxed);
        let project = format!("gemtest{pid}x{n}");
        // One /24 per test process and deployment, away from common LAN ranges.
        let subnet = format!("10.232.{}", 16 + (pid * 7 + n) % 224);
        let dir = repo_root().join("build/docker/containers").join(&project);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let compose = Compose {
            project,
            subnet,
            dir,
            counter: AtomicU32::new(0),
        };
        compose.compose(&["up", "-d"])?;
        Ok(compose)
    }

    /// `docker-compose <args>` on this deployment; its output, or why it failed.
    pub fn compose(&self, args: &[&str]) -> Result<String, String> {
        let file = repo_root().join("docker/compose.yml");
        let mut cmd = Command::new("docker-compose");
        cmd.arg("--file")
            .arg(file)
            .args(["--project-name", &self.project])
            .args(args)
            .env("GEM_IMAGE", IMAGE)
            .env("GEM_SUBNET", &self.subnet)
            .env("GEM_OWNER", owner())
            // The lap's speed-up and timeouts are the ones its bounds assume.
            .env("GEM_SPEEDUP", SPEEDUP.to_string())
            .env("GEM_TIMEOUT_S", TIMEOUT_S.to_string())
            .env("GEM_STATE_TIMEOUT_MS", format!("{}", TIMEOUT_S * 1000.0));
        output(cmd, &format!("docker-compose {}", args.join(" ")))
    }

    /// The container of `service`.
    pub fn container(&self, service: Service) -> String {
        format!("{}_{}_1", self.project, service.name())
    }

    /// The network the containers share.
    pub fn network(&self) -> String {
        format!("{}_gem", self.project)
    }

    /// The address of `service`.
    pub fn ip(&self, service: Service) -> String {
        format!("{}.{}", self.subnet, service.host())
    }

    /// The host's address on the network (its gateway).
    pub fn host_ip(&self) -> String {
        format!("{}.1", self.subnet)
    }

    /// The master's URI.
    pub fn master_uri(&self) -> String {
        format!("http://{}:{MASTER_PORT}/", self.ip(Service::Master))
    }

    /// `docker <verb> <container of service> [extra]`.
    pub fn docker(&self, verb: &str, service: Service, extra: &[&str]) -> Result<String, String> {
        let mut cmd = Command::new("docker");
        cmd.arg(verb).args(extra).arg(self.container(service));
        output(cmd, &format!("docker {verb} {}", service.name()))
    }

    /// Disconnects `service` from the network: its cable is cut.
    pub fn disconnect(&self, service: Service) -> Result<(), String> {
        self.docker("network", service, &["disconnect", &self.network()])
            .map(|_| ())
    }

    /// Connects `service` to the network again, with its own address.
    pub fn connect(&self, service: Service) -> Result<(), String> {
        let ip = self.ip(service);
        self.docker(
            "network",
            service,
            &["connect", "--ip", &ip, &self.network()],
        )
        .map(|_| ())
    }

    /// What `service`'s container printed (stdout and stderr, each line stamped by
    /// Docker: `<RFC 3339> <line>`).
    pub fn logs(&self, service: Service) -> String {
        self.docker("logs", service, &["--timestamps"])
            .unwrap_or_else(|e| e)
    }

    /// Starts `program args` on the host, joined to the deployment's network.
    pub fn spawn(&self, program: &str, args: &[&str]) -> HostProc {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let base = program.rsplit('/').next().unwrap_or(program).to_string();
        let mut cmd = Command::new(program);
        cmd.args(args);
        spawn_ros(
            cmd,
            format!("host:{base}"),
            self.dir.join(format!("{n:02}_host_{base}.log")),
            &RosEnv {
                master_uri: &self.master_uri(),
                ip: &self.host_ip(),
                home: &self.dir.join("ros_home_host"),
            },
        )
    }

    /// Runs `program args` on the host to completion (at most `timeout`); its success
    /// and output.
    pub fn run(&self, program: &str, args: &[&str], timeout: Duration) -> (bool, String) {
        self.spawn(program, args).finish(timeout)
    }

    /// Copies each container's output and ROS logs to [`Compose::dir`].
    fn keep_logs(&self) {
        for s in Service::ALL {
            let _ = std::fs::write(self.dir.join(format!("{}.log", s.name())), self.logs(s));
            let to = self.dir.join(format!("{}_ros_log", s.name()));
            let _ = Command::new("docker")
                .arg("cp")
                .arg(format!(
                    "{}:/opt/gem-rs/build/ros_home/log",
                    self.container(s)
                ))
                .arg(&to)
                .output();
        }
    }
}

impl Drop for Compose {
    fn drop(&mut self) {
        // A paused container can be neither copied from nor stopped.
        for s in Service::ALL {
            let _ = self.docker("unpause", s, &[]);
        }
        self.keep_logs();
        if let Err(e) = self.compose(&["down", "--volumes", "--remove-orphans", "--timeout", "5"]) {
            eprintln!("{e}");
        }
    }
}

/// The owner label of what this test process creates.
fn owner() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    format!("{}:{}", host.trim(), std::process::id())
}

/// Removes containers, networks and volumes left by test runs whose process is gone.
pub fn remove_leftovers() {
    let _ = gem_testbed::sourced("runners/docker_common.sh", "gem_remove_leftovers").status();
}

fn output(mut cmd: Command, what: &str) -> Result<String, String> {
    match cmd.output() {
        Ok(o) if o.status.success() => Ok(format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )),
        Ok(o) => Err(format!(
            "{what} failed ({}): {}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => Err(format!("{what}: {e}")),
    }
}
