//! The suite's end-to-end scenarios (`gem_e2e::suite`), each on a fresh
//! `roslaunch gem_bringup integration_run.launch` (gem_sim at 3×, real master, every node
//! a process, faults injected with Debian's `dynparam`). The same scenarios run under
//! rostest from `launch/test/suite_*.test` (see `tests/e2e/rostest_files.rs`).
//!
//! In the test command the image's rostest run is the one that counts
//! (`GEM_ROSTESTS_RAN_IN_DOCKER` set; `rostest_files` checks each scenario's result there),
//! and these native runs, the developer's fast loop, stand aside.

use gem_e2e::suite::{scenario, tool_result, Suite, COMMON_ARGS};
use gem_testbed::{cli, cli_background, ros};
use std::time::Duration;

const T: Duration = Duration::from_secs(60);

fn run(name: &str) {
    if std::env::var_os("GEM_ROSTESTS_RAN_IN_DOCKER").is_some() {
        eprintln!("{name}: ran under rostest in the image; rostest_files checks its result");
        return;
    }
    let _ros = ros();
    let sc = scenario(name).expect("a known scenario");
    let suite = Suite::new(
        Box::new(|program, args| tool_result(program, args, cli(program, args, T))),
        T,
    );
    let mut args = vec!["gem_bringup", "integration_run.launch"];
    args.extend(COMMON_ARGS);
    args.extend(sc.launch_args);
    let launch = cli_background("roslaunch", &args);
    let started = std::time::Instant::now();
    let outcome = (sc.run)(&suite);
    eprintln!(
        "{name}: {:?} in {:.1} s wall",
        outcome,
        started.elapsed().as_secs_f64()
    );
    if let Err(e) = outcome {
        panic!("{name}: {e}\n--- roslaunch output ---\n{}", launch.output());
    }
}

scenario_tests! { run:
    estop_before_serving,
    every_fault_then_completion,
    state_manager_death,
    task_planner_death,
    simulator_death,
}
