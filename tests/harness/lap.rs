//! A lap of the GEM track across computers, watched from them: the bounds the multi-host
//! tests (`tests/e2e/hosts.rs`, namespaces) and the multi-container tests
//! (`tests/e2e/containers.rs`, Docker) share, and [`Observer`], a `tests/py/host_observer.py`
//! read from its log.

use crate::hosts::HostProc;
use gem_core::control::stop::{StopLimits, StopProfile, STOPPED_BELOW_MPS};
use serde_json::Value;
use std::time::Duration;

/// Simulated seconds per wall second.
pub const SPEEDUP: f64 = 5.0;
/// The suite's ROS-time timeouts (staleness, system_state, pose), as the demo sets them
/// for 5×.
pub const TIMEOUT_S: f64 = 3.0;
/// Speed of the car mid-lap on the GEM track's straights, m/s (the controller's cruise).
pub const CRUISE_MPS: f64 = gem_core::control::speed::SpeedConfig::DEFAULT.nominal_mps;
/// Wall time for a whole lap at 5× with room to spare.
pub const LAP: Duration = Duration::from_secs(150);
/// Wall time within which the car moves again once its supervisor is back.
pub const RESUME_WITHIN_S: f64 = 5.0;
/// Planner status codes (gem_state_msgs/TaskPlannerStatus).
pub const RUNNING_TASK: u64 = 2;
/// actionlib SUCCEEDED.
pub const SUCCEEDED: u64 = 3;
/// The STALE_DATA bit of /system_state.
pub const STALE_DATA: u64 = gem_core::state_manager::ErrorBits::STALE_DATA.bits() as u64;
/// The nodes of the suite, as a master lists them.
pub const NODES: [&str; 7] = [
    "/controller",
    "/gem_sim",
    "/mock_signals",
    "/state_manager",
    "/task_planner",
    "/health_monitor",
    "/status_overlay",
];

/// A `tests/py/host_observer.py` process, read from its log.
pub struct Observer {
    /// The observer process.
    pub proc: HostProc,
}

impl Observer {
    /// Starts one on `role`'s host of `hosts`.
    pub fn on(hosts: &crate::hosts::Hosts, role: crate::hosts::Role) -> Observer {
        Observer {
            proc: hosts.spawn(role, "/usr/bin/python3", &["tests/py/host_observer.py"]),
        }
    }

    /// Every event it printed so far.
    pub fn events(&self) -> Vec<Value> {
        self.proc
            .output()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Waits for the first event (from the start) that satisfies `pred`.
    pub fn wait(&self, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        let mut found = None;
        gem_testbed::wait_until(timeout, || {
            found = self.events().into_iter().find(|e| pred(e));
            found.is_some()
        });
        found
    }

    /// Waits for the first event of `kind` after wall time `w` that satisfies `pred`.
    pub fn after(
        &self,
        w: f64,
        kind: &str,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        self.wait(timeout, |e| ev(e) == kind && num(e, "w") > w && pred(e))
    }

    /// Waits for SIGNAL_LOST after the operator link went quiet at wall time `since_w`
    /// (`why`: a cut, a frozen station): the event and the seconds it took, an error if
    /// it took longer than the documented time (the link's `lost_after`, then the state
    /// manager's `signal_lost_after` of ROS time at [`SPEEDUP`], plus 1 s of slack),
    /// which is returned too.
    pub fn signal_lost_after(&self, since_w: f64, why: &str) -> Result<(Value, f64, f64), String> {
        let limits = gem_core::signal_sources::link::LinkLimits::DEFAULT;
        let hold_off = gem_core::state_manager::StateManagerConfig::default()
            .signal_lost_after
            .as_secs_f64();
        let bound = limits.lost_after.as_secs_f64() + hold_off / SPEEDUP + 1.0;
        let signal_lost = gem_core::state_manager::ErrorBits::SIGNAL_LOST.bits() as u64;
        let lost = self
            .after(
                since_w,
                "state",
                Duration::from_secs_f64(bound + 10.0),
                |e| (num(e, "errors") as u64) & signal_lost != 0,
            )
            .ok_or_else(|| format!("no SIGNAL_LOST after {why}"))?;
        let took = num(&lost, "w") - since_w;
        if took > bound {
            return Err(format!(
                "SIGNAL_LOST {took:.2} s (wall) after {why}: more than {bound:.2} s"
            ));
        }
        Ok((lost, took, bound))
    }

    /// The car's simulated time and speed at or after wall time `w`, waiting at most
    /// `timeout`.
    pub fn odom_after(&self, w: f64, timeout: Duration) -> Option<Value> {
        self.wait(timeout, |e| ev(e) == "odom" && num(e, "w") >= w)
    }

    /// Waits until the car moves and the planner runs the task: the lap has started.
    pub fn lap_started(&self, planner: &Observer) -> Result<(), String> {
        self.wait(Duration::from_secs(60), |e| {
            ev(e) == "odom" && num(e, "speed") > 1.0
        })
        .ok_or("the car never moved")?;
        planner
            .wait(Duration::from_secs(10), |e| {
                ev(e) == "planner" && num(e, "status") == RUNNING_TASK as f64
            })
            .ok_or("the planner was never seen running the task")?;
        Ok(())
    }

    /// Waits until the lap has gone on for `sim_s` of sim time (this observer sees the
    /// car).
    pub fn mid_lap(&self, sim_s: f64) -> Result<(), String> {
        let first = self
            .wait(Duration::from_secs(5), |e| ev(e) == "odom")
            .ok_or("no odometry")?;
        self.wait(Duration::from_secs_f64(sim_s / SPEEDUP + 20.0), |e| {
            ev(e) == "odom" && num(e, "sim") > num(&first, "sim") + sim_s
        })
        .map(|_| ())
        .ok_or_else(|| format!("the lap did not go on for {sim_s} s"))
    }

    /// Mid-lap (`sim_s` into it), `act` (`what` names it in errors) stops the car: when
    /// it began (wall), what it returned, and the car at rest after it (see
    /// [`Observer::at_rest_after`]).
    pub fn stop_mid_lap<T>(
        &self,
        sim_s: f64,
        what: &str,
        act: impl FnOnce() -> Result<T, String>,
    ) -> Result<(f64, T, Rest), String> {
        self.mid_lap(sim_s)?;
        let w = wall_now();
        let out = act()?;
        let rest = self.at_rest_after(w, wall_now(), what)?;
        Ok((w, out, rest))
    }

    /// The car comes to rest after `what`, which happened between wall times `w` and
    /// `done_w`, within the controller's watchdog timeout plus a comfortable stop from its
    /// speed at `w`, plus 1 s, plus the sim time `what` itself took (the silence the
    /// watchdog sees begins somewhere in it: a `docker kill` on a loaded machine takes a
    /// while). This observer sees the car.
    pub fn at_rest_after(&self, w: f64, done_w: f64, what: &str) -> Result<Rest, String> {
        let then = self
            .odom_after(w, Duration::from_secs(5))
            .ok_or_else(|| format!("no odometry after {what}"))?;
        let done = self
            .odom_after(done_w, Duration::from_secs(5))
            .ok_or_else(|| format!("no odometry after {what} ended"))?;
        let speed = num(&then, "speed");
        let taking = (num(&done, "sim") - num(&then, "sim")).max(0.0);
        let bound = TIMEOUT_S + stop_time(speed.max(CRUISE_MPS)) + 1.0 + taking;
        let at = self
            .wait(Duration::from_secs_f64(bound / SPEEDUP + 20.0), |e| {
                ev(e) == "odom" && num(e, "w") > w && num(e, "speed") < STOPPED_BELOW_MPS
            })
            .ok_or_else(|| {
                format!("the car was not at rest within {bound:.1} s (sim) of {what}")
            })?;
        let to_rest = num(&at, "sim") - num(&then, "sim");
        if to_rest > bound {
            return Err(format!(
                "at rest {to_rest:.2} s (sim) after {what} at {speed:.2} m/s: more than the bound {bound:.2} s ({taking:.2} s of it {what} itself)"
            ));
        }
        Ok(Rest {
            speed,
            to_rest,
            bound,
            taking,
            at,
        })
    }

    /// The car, at rest at `rest`, is still at rest 2 s (wall) later.
    pub fn stays_at_rest(&self, rest: &Rest) -> Result<(), String> {
        let later = self
            .odom_after(num(&rest.at, "w") + 2.0, Duration::from_secs(10))
            .ok_or("no odometry later")?;
        if num(&later, "speed") >= STOPPED_BELOW_MPS {
            return Err(format!("the car moved again: {later}"));
        }
        Ok(())
    }

    /// Wall seconds after `w` until the car moved again (above 0.5 m/s), at most
    /// [`RESUME_WITHIN_S`] plus a margin to say by how much it missed.
    pub fn moving_again_after(&self, w: f64, what: &str) -> Result<f64, String> {
        let moving = self
            .after(w, "odom", Duration::from_secs(20), |e| {
                num(e, "speed") > 0.5
            })
            .ok_or_else(|| format!("the car did not move again within 20 s of {what}"))?;
        let after = num(&moving, "w") - w;
        if after > RESUME_WITHIN_S {
            return Err(format!(
                "the car moved again {after:.2} s (wall) after {what}: more than {RESUME_WITHIN_S} s"
            ));
        }
        Ok(after)
    }

    /// Waits for the lap to end successfully; returns the wall seconds it took from now.
    pub fn lap_completes(&self, timeout: Duration) -> Result<f64, String> {
        let started = std::time::Instant::now();
        self.wait(timeout, |e| {
            ev(e) == "result" && num(e, "status") == SUCCEEDED as f64
        })
        .ok_or_else(|| format!("no successful result within {timeout:?}"))?;
        Ok(started.elapsed().as_secs_f64())
    }
}

/// The car at rest after a loss.
pub struct Rest {
    /// Its speed when the loss happened, m/s.
    pub speed: f64,
    /// Sim seconds from then to rest.
    pub to_rest: f64,
    /// The bound on `to_rest`, s (sim).
    pub bound: f64,
    /// The sim time the loss itself took to bring about (in the bound), s.
    pub taking: f64,
    /// The odometry event at rest.
    pub at: Value,
}

impl std::fmt::Display for Rest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "at {:.2} m/s: at rest {:.2} s (sim) later (bound {:.2} s: watchdog {TIMEOUT_S} s + comfortable stop + 1 s + {:.2} s bringing it about)",
            self.speed, self.to_rest, self.bound, self.taking
        )
    }
}

/// An event's kind.
pub fn ev(e: &Value) -> &str {
    e["ev"].as_str().unwrap_or_default()
}

/// An event's number `key` (NaN when absent).
pub fn num(e: &Value, key: &str) -> f64 {
    e[key].as_f64().unwrap_or(f64::NAN)
}

/// Wall time, s since the epoch (the observers' `w`).
pub fn wall_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The start index of every goal the controller accepted, from its log lines
/// (`goal <id>: <n> waypoints from index <i>`).
pub fn goal_starts(log: &str) -> Vec<u64> {
    log.lines()
        .filter_map(|l| l.split(" waypoints from index ").nth(1))
        .filter_map(|i| i.trim().parse().ok())
        .collect()
}

/// The longest a comfortable stop from `speed` takes, s (sim).
pub fn stop_time(speed: f64) -> f64 {
    StopProfile::new(speed, StopLimits::COMFORTABLE).time_to_rest()
}

/// The first line of `logs` that says a process panicked, as an error.
pub fn no_panics(logs: &str) -> Result<(), String> {
    match logs.lines().find(|l| l.contains("panicked")) {
        Some(line) => Err(format!("a process panicked: {line}")),
        None => Ok(()),
    }
}

/// Waits until the controller's log (read by `log`) shows a goal beyond the first
/// `goals_before`, and returns the waypoint index the newest one starts from.
pub fn new_goal_start(log: impl Fn() -> String, goals_before: usize) -> Result<u64, String> {
    gem_testbed::wait_until(Duration::from_secs(20), || {
        goal_starts(&log()).len() > goals_before
    })
    .then(|| goal_starts(&log()).last().copied())
    .flatten()
    .ok_or_else(|| "no new goal reached the controller".to_string())
}

/// A ROS command-line tool run to completion against the suite's master: (program,
/// arguments, timeout) → (success, output).
pub type Tool<'a> = &'a dyn Fn(&str, &[&str], Duration) -> (bool, String);

/// After a new master started at wall time `since`: every node of the suite is listed
/// again, and new links form (`rostopic echo` gets `/system_state`, `rosservice list`
/// shows the simulator's service). Returns the wall seconds from `since` until every node
/// was listed.
pub fn graph_back(run: Tool, since: f64) -> Result<f64, String> {
    let t = Duration::from_secs(20);
    let mut listed = String::new();
    let all_back = gem_testbed::wait_until(Duration::from_secs(30), || {
        listed = run("rosnode", &["list"], t).1;
        NODES.iter().all(|n| listed.lines().any(|l| l.trim() == *n))
    });
    if !all_back {
        return Err(format!(
            "the new master does not list every node:\n{listed}"
        ));
    }
    let registered_after = wall_now() - since;
    let (ok, out) = run("rostopic", &["echo", "-n", "1", "/system_state"], t);
    if !ok || !out.contains("header") {
        return Err(format!(
            "rostopic echo /system_state on the new master:\n{out}"
        ));
    }
    let (ok, out) = run("rosservice", &["list"], t);
    if !ok || !out.contains("/gazebo/get_model_state") {
        return Err(format!("rosservice list on the new master:\n{out}"));
    }
    Ok(registered_after)
}
