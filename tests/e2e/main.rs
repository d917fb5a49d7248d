//! The end-to-end tests: one module per area, all in this one test binary.
//!
//! Tests that use ROS take [`gem_testbed::ros`]: the binary's private rosmaster, one test at
//! a time. Scenarios that bring their own masters (rostest, network namespaces, containers)
//! take [`gem_testbed::exclusive`], the same lock, so no two of them share the machine;
//! tests that only read files run alongside. `cargo test --release --test e2e hosts::`
//! runs one module.

/// One test per scenario, named as the scenario: `runner(check)` for `name => check`, and
/// `runner("name")` for a bare `name`.
macro_rules! scenario_tests {
    ($runner:ident: $($name:ident => $check:ident),+ $(,)?) => {
        $(
            #[test]
            fn $name() {
                $runner($check);
            }
        )+
    };
    ($runner:ident: $($name:ident),+ $(,)?) => {
        $(
            #[test]
            fn $name() {
                $runner(stringify!($name));
            }
        )+
    };
}

mod actuator_calibration;
mod bag;
mod calibration;
mod car;
mod containers;
mod controller;
mod demo;
mod docker_static;
mod docs;
mod gnss_pose;
mod health_monitor;
mod hostile_peers;
mod hosts;
mod house;
mod integration_launch;
mod interop;
mod interrupt;
mod md5;
mod mock_signals;
mod pacmod;
mod pose_source;
mod profile;
mod replay;
mod ros_tools;
mod rostest_files;
mod route;
mod rviz;
mod security;
mod services;
mod signal_sources;
mod sim_inspva;
mod state_manager;
mod steering_calibration;
mod stops;
mod suite_scenarios;
mod task_planner;

use std::io::Write;
use std::time::Instant;

/// Runs a scenario that needs the machine to itself and what `available` checks for (root
/// and iproute2, a Docker engine...). Without it the test writes `skipped: <reason>` to
/// stderr, past the output capture, and passes, except under `CI=true`, where it fails
/// naming what is missing ([`skip_or_fail`]); an error of the scenario fails the test.
pub(crate) fn scenario(
    available: impl FnOnce() -> Result<(), String>,
    run: impl FnOnce() -> Result<(), String>,
) {
    let _machine = gem_testbed::exclusive();
    let name = std::thread::current()
        .name()
        .unwrap_or("scenario")
        .to_owned();
    if let Err(why) = available() {
        skip_or_fail(&name, &why);
        return;
    }
    let started = Instant::now();
    let outcome = run();
    let secs = started.elapsed().as_secs_f64();
    match outcome {
        Ok(()) => println!("{name}: ok ({secs:.1} s)"),
        Err(e) => panic!("{name}: failed after {secs:.1} s: {e}"),
    }
}

/// A test that cannot run here because `why` (root, iproute2 or a Docker engine missing):
/// a `skipped` line past the output capture on a developer's machine; under `CI=true`, where
/// every scenario must run, a failure naming what is missing.
#[track_caller]
pub(crate) fn skip_or_fail(name: &str, why: &str) {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{name}: cannot run under CI=true: {why}");
    }
    let _ = writeln!(std::io::stderr(), "test {name} ... skipped: {why}");
}

/// A deployment of the suite driving a lap (on hosts or in containers).
pub(crate) trait Deployment {
    /// Prints what each process has logged (after a failure).
    fn dump(&self);
    /// No process panicked.
    fn no_panics(&self) -> Result<(), String>;
}

/// Runs `check` on the deployment `start` brings up; dumps its logs when `check` fails,
/// and requires that no process panicked.
pub(crate) fn on_lap<D: Deployment>(
    start: impl FnOnce() -> Result<D, String>,
    check: fn(&D) -> Result<(), String>,
) -> Result<(), String> {
    let deployment = start()?;
    let outcome = check(&deployment);
    if outcome.is_err() {
        deployment.dump();
    }
    outcome.and_then(|()| deployment.no_panics())
}
