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
    rosrust::init("state_manager_rostest");
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
        if let Err(e) = std::fs::write(&path, junit("state_manager_scenarios", &cases)) {
            eprintln!("cannot write {path}: {e}");
        }
    }
    rosrust::shutdown();
    std::process::exit(if failures == 0 { 0 } else { 1 });
}

/// A JUnit XML report, the format rostest reads.
fn junit(suite: &str, cases: &[(String, f64, Option<String>)]) -> String {
    let failures = cases.iter().filter(|c| c.2.is_some()).count();
    let total: f64 = cases.iter().map(|c| c.1).sum();
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<testsuite name=\"{suite}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{total:.3}\">\n",
        cases.len()
    );
    for (name, time, failure) in cases {
        match failure {
            None => {
                xml += &format!(
                    "  <testcase classname=\"{suite}\" name=\"{name}\" time=\"{time:.3}\"/>\n"
                )
            }
            Some(msg) => {
                let msg = escape(msg);
                xml += &format!(
                    "  <testcase classname=\"{suite}\" name=\"{name}\" time=\"{time:.3}\">\n    <failure message=\"{msg}\">{msg}</failure>\n  </testcase>\n"
                );
            }
        }
    }
    xml + "</testsuite>\n"
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
