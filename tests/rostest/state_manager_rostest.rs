//! rostest runner for the state-manager scenarios (`launch/test/state_manager.test`).
//!
//! Plays every scenario of `gem_e2e::sm_scenarios` against the `state_manager` node that
//! rostest launched, and writes the JUnit XML file rostest asks for with
//! `--gtest_output=xml:PATH`. Exit code 0 when every scenario passed.

use gem_e2e::sm_scenarios::{Driver, ALL};
use std::time::Instant;

fn main() {
    let out =
        std::env::args().find_map(|a| a.strip_prefix("--gtest_output=xml:").map(String::from));
    if let Err(e) = ros1_protocols::this_node::init("state_manager_rostest") {
        eprintln!("cannot start: {e}");
        std::process::exit(1);
    }
    let mut cases = Vec::new();
    match Driver::connect("", 1_000_000_000_000) {
        Err(e) => cases.push(("connect".to_string(), 0.0, Some(e))),
        Ok(mut driver) => {
            for (name, body) in ALL {
                let start = Instant::now();
                let result = body(&mut driver).err();
                eprintln!("{name}: {}", result.as_deref().unwrap_or("ok"));
                cases.push((name.to_string(), start.elapsed().as_secs_f64(), result));
            }
        }
    }
    let failures = cases.iter().filter(|c| c.2.is_some()).count();
    if let Some(path) = out {
        if let Err(e) = std::fs::write(
            &path,
            gem_e2e::junit::report("state_manager_scenarios", &cases),
        ) {
            eprintln!("cannot write {path}: {e}");
        }
    }
    ros1_protocols::registration::shutdown();
    std::process::exit(if failures == 0 { 0 } else { 1 });
}
