//! rostest runner for the suite's scenarios (`launch/test/suite_*.test`): runs the
//! scenario named by its first argument (`gem_e2e::suite::SCENARIOS`) against the suite
//! rostest launched, and writes the JUnit XML rostest asks for. Exit code 0 on success.

use gem_e2e::suite::{scenario, tool_result, Suite};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = args
        .iter()
        .find_map(|a| a.strip_prefix("--gtest_output=xml:").map(String::from));
    let name = args
        .iter()
        .find(|a| !a.starts_with("--") && !a.starts_with("__"))
        .cloned()
        .unwrap_or_default();
    if let Err(e) = ros1_protocols::this_node::init("suite_rostest") {
        eprintln!("cannot start: {e}");
        std::process::exit(1);
    }
    let start = Instant::now();
    let result = match scenario(&name) {
        None => Err(format!("unknown scenario {name:?}")),
        Some(sc) => {
            let suite = Suite::new(Box::new(tool), Duration::from_secs(60));
            (sc.run)(&suite)
        }
    };
    eprintln!("{name}: {result:?}");
    let cases = [(name, start.elapsed().as_secs_f64(), result.err())];
    if let Some(path) = out {
        if let Err(e) = std::fs::write(&path, gem_e2e::junit::report("suite_scenarios", &cases)) {
            eprintln!("cannot write {path}: {e}");
        }
    }
    ros1_protocols::registration::shutdown();
    std::process::exit(if cases[0].2.is_none() { 0 } else { 1 });
}

/// Runs a ROS tool in the environment rostest gave us.
fn tool(program: &str, args: &[&str]) -> Result<String, String> {
    let out = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    tool_result(program, args, out)
}
