//! The suite across three containers (`docker/compose.yml`, `gem_e2e::containers`): a
//! master, a vehicle and a supervisor container of the headless image on a user-defined
//! network, each with a fixed address. `docker-compose up` drives a lap; `gemctl status`
//! on the host shows it; mid-lap the supervisor's container is cut off the network,
//! paused or killed, or the master's container is restarted. The bounds are those of
//! `tests/e2e/hosts.rs` (`gem_e2e::lap`). Each scenario prints its figures.
//!
//! Without a Docker engine, docker-compose or the image, every scenario writes
//! `skipped: <reason>` and passes; under `CI=true` it fails naming what is missing.
//! `cargo test --release --test e2e containers::` runs them.

use gem_e2e::containers::{available, Compose, Service};
use gem_e2e::lap::{
    goal_starts, graph_back, new_goal_start, no_panics, num, wall_now, Observer, LAP,
};
use std::time::Duration;

#[test]
fn leftovers_of_a_killed_run_are_removed() {
    crate::scenario(available, leftovers_of_a_killed_run);
}

// (a), (b) and (d) share one lap: each fault once the car drives again after the one
// before, and the lap completes after all three (two deployments and two laps less).
scenario_tests! { on_a_fresh_deployment:
    abd_supervisor_cut_off_then_paused_then_the_master_restarted => cut_off_paused_restarted,
    c_supervisor_killed => supervisor_killed,
}

/// Runs `check` on a lap of a fresh deployment.
fn on_a_fresh_deployment(check: fn(&Suite) -> Result<(), String>) {
    crate::scenario(available, || {
        crate::on_lap(|| Suite::start(Compose::up()?), check)
    });
}

/// Sim seconds into the lap of (a) the cut and (c) the kill, (b) the pause and (d) the
/// master's restart: each well after the car drives again from the fault before.
const MID_LAP_S: f64 = 40.0;
const PAUSE_AT_S: f64 = 100.0;
const RESTART_AT_S: f64 = 160.0;

impl crate::Deployment for Suite {
    fn dump(&self) {
        eprintln!("{}", self.logs());
        eprintln!(
            "(kept in {} after the containers are removed)",
            self.compose.dir.display()
        );
    }

    fn no_panics(&self) -> Result<(), String> {
        no_panics(&self.logs())
    }
}

/// A deployment driving a lap, and an observer on the host.
struct Suite {
    compose: Compose,
    view: Observer,
}

impl Suite {
    /// The lap has started: the car moves, the planner runs the task, and `gemctl status`
    /// on the host shows both.
    fn start(compose: Compose) -> Result<Suite, String> {
        let view = Observer {
            proc: compose.spawn("/usr/bin/python3", &["tests/py/host_observer.py"]),
        };
        let suite = Suite { compose, view };
        suite.view.lap_started(&suite.view)?;
        let (ok, out) = suite.compose.run(
            "gemctl",
            &["status", "--once", "--timeout", "20"],
            Duration::from_secs(30),
        );
        let shows = |key: &str, value: &str| {
            out.lines()
                .any(|l| l.starts_with(key) && l.split_whitespace().nth(1) == Some(value))
        };
        if !ok || !shows("state", "RUNNING") || !shows("planner", "RUNNING") {
            return Err(format!(
                "gemctl status on the host does not show the lap:\n{out}"
            ));
        }
        Ok(suite)
    }

    /// Every container's output and the host processes' logs.
    fn logs(&self) -> String {
        Service::ALL
            .iter()
            .map(|&s| format!("--- {} ---\n{}", s.name(), self.compose.logs(s)))
            .chain(std::iter::once(format!(
                "--- {} ({}) ---\n{}",
                self.view.proc.label,
                self.view.proc.log.display(),
                self.view.proc.output()
            )))
            .collect()
    }

    /// The controller's log (the vehicle container's output).
    fn controller_log(&self) -> String {
        self.compose.logs(Service::Vehicle)
    }
}

/// Wall time (s since the epoch) of the first line of `service`'s output after `after`
/// that contains every one of `needles`, waiting at most `timeout`.
fn logged_after(
    s: &Suite,
    service: Service,
    after: f64,
    needles: &[&str],
    timeout: Duration,
) -> Option<f64> {
    let mut found = None;
    gem_testbed::wait_until(timeout, || {
        found = s.compose.logs(service).lines().find_map(|l| {
            let (stamp, text) = l.split_once(' ')?;
            let w = rfc3339_secs(stamp)?;
            (w > after && needles.iter().all(|n| text.contains(n))).then_some(w)
        });
        found.is_some()
    });
    found
}

/// Seconds since the epoch of a Docker log stamp such as `2026-11-26T02:33:21.891108309Z`.
fn rfc3339_secs(stamp: &str) -> Option<f64> {
    let (date, time) = stamp.strip_suffix('Z')?.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let mut t = time.split(':');
    let (h, min) = (
        t.next()?.parse::<f64>().ok()?,
        t.next()?.parse::<f64>().ok()?,
    );
    let sec = t.next()?.parse::<f64>().ok()?;
    // Days from the civil date (proleptic Gregorian), after H. Hinnant's algorithm.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days as f64 * 86_400.0 + h * 3600.0 + min * 60.0 + sec)
}

/// A killed test run leaves a labelled container and network behind; the next run's
/// start removes them, and leaves alone what a live process owns.
fn leftovers_of_a_killed_run() -> Result<(), String> {
    // A process that has ended: its pid is the owner of the "leftovers".
    let mut gone = std::process::Command::new("true")
        .spawn()
        .map_err(|e| e.to_string())?;
    let dead = gone.id();
    gone.wait().map_err(|e| e.to_string())?;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let label = |pid: u32| format!("org.gem-rs.owner={}:{pid}", host.trim());
    let docker = |args: &[&str]| {
        std::process::Command::new("docker")
            .args(args)
            .output()
            .map_err(|e| e.to_string())
            .and_then(|o| {
                o.status
                    .success()
                    .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
                    .ok_or_else(|| String::from_utf8_lossy(&o.stderr).into_owned())
            })
    };
    let name = format!("gemtest-leftover-{}", std::process::id());
    let image = gem_e2e::containers::IMAGE;
    let dead_label = label(dead);
    let live_label = label(std::process::id());
    docker(&[
        "create",
        "--name",
        &name,
        "--label",
        &dead_label,
        image,
        "true",
    ])?;
    docker(&["network", "create", "--label", &dead_label, &name])?;
    let live = format!("{name}-live");
    docker(&[
        "create",
        "--name",
        &live,
        "--label",
        &live_label,
        image,
        "true",
    ])?;
    gem_e2e::containers::remove_leftovers();
    let left = docker(&[
        "ps",
        "--all",
        "--filter",
        &format!("name={name}"),
        "--format",
        "{{.Names}}",
    ])?;
    let nets = docker(&[
        "network",
        "ls",
        "--filter",
        &format!("name={name}"),
        "--format",
        "{{.Name}}",
    ])?;
    let _ = docker(&["rm", "-f", &live]);
    let _ = docker(&["rm", "-f", &name]);
    let _ = docker(&["network", "rm", &name]);
    if left.lines().any(|l| l == name) || nets.lines().any(|l| l == name) {
        return Err(format!(
            "the leftovers of pid {dead} are still there: containers {left:?}, networks {nets:?}"
        ));
    }
    if !left.lines().any(|l| l == live) {
        return Err(format!(
            "the container of a live process was removed: {left:?}"
        ));
    }
    println!("[containers] a dead run's labelled container and network removed at the next start; a live run's kept");
    Ok(())
}

/// (a), (b) and (d) on one lap, which then completes.
fn cut_off_paused_restarted(s: &Suite) -> Result<(), String> {
    supervisor_cut_off(s)?;
    supervisor_paused(s)?;
    master_restarted(s)?;
    let wall = s.view.lap_completes(LAP)?;
    println!("[containers] the lap completed {wall:.1} s wall later");
    Ok(())
}

/// (a) The supervisor's container is cut off the network mid-lap: the controller's
/// watchdog stops the car, the supervisor reports STALE_DATA; connected again with the same
/// address, the task resumes from its cached index.
fn supervisor_cut_off(s: &Suite) -> Result<(), String> {
    let (cut_w, (), rest) = s.view.stop_mid_lap(MID_LAP_S, "the cut", || {
        s.compose.disconnect(Service::Supervisor)
    })?;
    let stale_w = logged_after(
        s,
        Service::Supervisor,
        cut_w,
        &["state_manager", "=> ERROR", "STALE_DATA"],
        Duration::from_secs(15),
    )
    .ok_or("the supervisor's state manager never reported STALE_DATA")?;
    logged_after(
        s,
        Service::Vehicle,
        cut_w,
        &["no system_state for"],
        Duration::from_secs(5),
    )
    .ok_or("the controller did not log the lost heartbeat")?;
    let goals_before = goal_starts(&s.controller_log()).len();
    let up_w = wall_now();
    s.compose.connect(Service::Supervisor)?;
    let resumed_after = s.view.moving_again_after(up_w, "the reconnection")?;
    let start_index = new_goal_start(|| s.controller_log(), goals_before)?;
    if start_index == 0 {
        return Err("the task restarted from index 0, not from its cached index".into());
    }
    println!(
        "[containers] (a) supervisor cut off the network {rest}; supervisor STALE_DATA after {:.2} s wall; \
         connected again: moving again after {resumed_after:.2} s wall, resumed from index {start_index}",
        stale_w - cut_w
    );
    Ok(())
}

/// (b) The supervisor's container is paused mid-lap (a hung computer): the car stops;
/// unpaused, it drives on.
fn supervisor_paused(s: &Suite) -> Result<(), String> {
    let (_, _, rest) = s.view.stop_mid_lap(PAUSE_AT_S, "the pause", || {
        s.compose.docker("pause", Service::Supervisor, &[])
    })?;
    let up_w = wall_now();
    s.compose.docker("unpause", Service::Supervisor, &[])?;
    let resumed_after = s.view.moving_again_after(up_w, "the unpause")?;
    println!(
        "[containers] (b) supervisor paused {rest}; unpaused: moving again after {resumed_after:.2} s wall"
    );
    Ok(())
}

/// (c) The supervisor's container is killed mid-lap (a lost computer): the car stops and
/// stays at rest; `docker-compose up -d supervisor` brings it back and a new goal is
/// served.
fn supervisor_killed(s: &Suite) -> Result<(), String> {
    let (_, _, rest) = s.view.stop_mid_lap(MID_LAP_S, "the kill", || {
        s.compose.docker("kill", Service::Supervisor, &[])
    })?;
    s.view.stays_at_rest(&rest)?;
    let goals_before = goal_starts(&s.controller_log()).len();
    let up_w = wall_now();
    s.compose.compose(&["up", "-d", "supervisor"])?;
    let start_index = new_goal_start(|| s.controller_log(), goals_before)?;
    // The goal is one message, sent as soon as the new planner starts, which an observer
    // linking to the new publisher may miss: the controller's log is the witness.
    let served_w = logged_after(
        s,
        Service::Vehicle,
        up_w,
        &["waypoints from index"],
        Duration::from_secs(5),
    )
    .ok_or("the controller logged no new goal")?;
    let t = Duration::from_secs(30);
    // The new planner serves its file anew: the car drives again.
    let moving = s
        .view
        .after(up_w, "odom", t, |e| num(e, "speed") > 0.5)
        .ok_or("the car did not drive again within 30 s of the new supervisor")?;
    let moving_after = num(&moving, "w") - up_w;
    println!(
        "[containers] (c) supervisor killed {rest}, and stayed at rest; docker-compose up -d supervisor: \
         a new goal from index {start_index} {:.2} s and the car moving {moving_after:.2} s wall later",
        served_w - up_w
    );
    Ok(())
}

/// (d) The master's container is restarted mid-lap: every node is listed again, new
/// links form, and the car drives on.
fn master_restarted(s: &Suite) -> Result<(), String> {
    s.view.mid_lap(RESTART_AT_S)?;
    let restart_w = wall_now();
    s.compose
        .docker("restart", Service::Master, &["--time", "5"])?;
    let back_w = wall_now();
    let registered_after = graph_back(
        &|program: &str, args: &[&str], t| s.compose.run(program, args, t),
        back_w,
    )?;
    let later = s
        .view
        .odom_after(wall_now(), Duration::from_secs(5))
        .ok_or("no odometry after the master's restart")?;
    if num(&later, "speed") < 1.0 {
        return Err(format!("the car slowed down: {later}"));
    }
    println!(
        "[containers] (d) master restarted ({:.1} s wall for docker restart): every node listed again {registered_after:.1} s wall \
         after it was back, rostopic echo and rosservice reach them",
        back_w - restart_w
    );
    Ok(())
}
