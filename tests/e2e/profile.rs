//! `gemctl profile` end to end: a short profile (3 runs of every failure type,
//! on sim time, a 3 s nominal window) of the suite the profiler launches itself on a
//! private master. The report must be written, every link of both chains must have a
//! sample from every run, and the latencies must be positive and ordered along the chain:
//! medians, up to the receive skew between two connections (`RECEIPT_SKEW_MS`); a lagging
//! subscription can deliver a single effect a little before its cause, which the report
//! counts (never by more than `PAIRING_BOUND_MS`).
//! The stall probes run through the rounds and the report splits every fault chain by
//! whether a CPU stall overlapped it.
//! `--record` leaves one bag per injection holding its chain. Bad arguments are refused
//! before anything starts.

use gem_core::faults::FaultKind;
use gem_e2e::bags::scratch_dir;
use gem_profile::{check, early_samples, runs_of, Direction, RunRecord};
use gem_testbed::{cli, node_binary, ros};
use std::time::Duration;

const RUNS: usize = 3;

/// How far before its chain's start a sample may be received (a lagging subscription on a
/// busy machine) before it must be a pairing error.
const PAIRING_BOUND_MS: f64 = 20.0;

fn gemctl(args: &[&str], timeout: Duration) -> std::process::Output {
    let bin = node_binary("gemctl");
    cli(bin.to_str().expect("utf-8 path"), args, timeout)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn short_profile_reports_every_link_with_positive_ordered_latencies() {
    // The machine alone: the profiler launches its own suite on a private master and
    // measures its latencies and CPU stalls.
    let _machine = gem_testbed::exclusive();
    let out = scratch_dir("profile");
    let out_s = out.to_str().expect("utf-8 path");
    let o = gemctl(
        &[
            "profile",
            "--runs",
            &RUNS.to_string(),
            "--resources-s",
            "3",
            "--out",
            out_s,
        ],
        Duration::from_secs(400),
    );
    let log = format!("stdout: {}\nstderr: {}", text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "gemctl profile failed\n{log}");

    let json: serde_json::Value = serde_json::from_reader(
        std::fs::File::open(out.join("profile.json")).expect("profile.json written"),
    )
    .expect("profile.json parses");
    assert_eq!(json["failures"].as_array().map(Vec::len), Some(0), "{log}");
    let runs: Vec<RunRecord> =
        serde_json::from_value(json["runs"].clone()).expect("runs read back");
    for kind in FaultKind::ALL {
        for direction in [Direction::Fault, Direction::Recovery] {
            let mine = runs_of(&runs, kind, direction);
            assert_eq!(mine.len(), RUNS, "{kind:?} {direction:?} runs");
            for r in mine {
                let links: Vec<_> = r.links.iter().map(|s| s.link).collect();
                assert_eq!(links, direction.links(), "every link sampled");
            }
        }
    }
    // Medians positive and ordered along the chain; single samples received before their
    // chain's start (a lagging subscription) are rare and reported, not failures.
    let problems = check(&runs);
    assert!(problems.is_empty(), "{problems:#?}");
    // A sample paired with the wrong run would be at least a heartbeat (50 ms) off; a
    // lagging subscription delays a receipt by milliseconds at most.
    for (r, link, ms) in early_samples(&runs) {
        assert!(
            ms > -PAIRING_BOUND_MS,
            "{:?} {:?} run {}: {link:?} {ms} ms before the chain's start",
            r.kind,
            r.direction,
            r.index
        );
    }
    // The hold-off windows are the ones the launched state manager runs with, read from
    // its parameters; held faults really waited them out (sim time), and no longer than a
    // tick.
    let hold_offs = json["settings"]["hold_offs"]
        .as_array()
        .expect("hold-offs reported");
    assert_eq!(hold_offs.len(), 3, "{hold_offs:?}");
    let window_of = |kind: FaultKind| {
        let param = gem_nodes::state_manager::params::hold_off_param(kind.fault().hold_off?);
        let used = hold_offs.iter().find(|h| h["param"] == param)?;
        assert_eq!(
            used["source"],
            format!("/state_manager/{param}"),
            "read from the state manager: {used}"
        );
        used["seconds"].as_f64()
    };
    for r in runs.iter().filter(|r| r.direction == Direction::Fault) {
        let cfg = gem_core::state_manager::StateManagerConfig::default();
        assert_eq!(
            window_of(r.kind),
            r.kind.hold_off(&cfg).map(|w| w.as_secs_f64()),
            "{:?}: the launched state manager runs with the default window",
            r.kind
        );
        if let Some(w) = window_of(r.kind) {
            let held = r.observed_hold_off_s.expect("hold-off measured");
            assert!(held > w && held < w + 0.5, "{:?} held {held} s", r.kind);
        }
    }

    let md = std::fs::read_to_string(out.join("profile.md")).expect("profile.md written");
    for needle in [
        "## Summary",
        "| hold-off windows | gps_lost_after_s 15 s (/state_manager/gps_lost_after_s)",
        "p99 fault → braking command",
        "| failure type | stops | fault → at rest (sim s) p50 |",
        "## Resources",
        "/state_manager",
    ] {
        assert!(md.contains(needle), "profile.md lacks {needle:?}:\n{md}");
    }
    for kind in FaultKind::ALL {
        assert!(
            md.contains(&format!("### {}", kind.name())),
            "{}",
            kind.name()
        );
        // Every fault run's stop, from cruise: the car at rest within seconds, having
        // driven some way.
        let stops = &md[md.find("| failure type | stops |").expect("the stop table")..];
        let row = stops
            .lines()
            .find(|l| l.starts_with(&format!("| {} | {RUNS} | ", kind.name())))
            .unwrap_or_else(|| panic!("no stop row for {}:\n{md}", kind.name()));
        let cells: Vec<f64> = row
            .split('|')
            .filter_map(|c| c.trim().parse().ok())
            .collect();
        assert!(cells.len() >= 8, "{row}");
        let (rest_max, dist_max) = (cells[2], cells[4]);
        assert!(rest_max > 0.3 && rest_max < 15.0, "{row}");
        assert!(dist_max > 0.3, "{row}");
    }
    // Receive times are the kernel's; how late the profiler's threads read is stated.
    let waits = json["settings"]["profiler_socket_wait_ms"]
        .as_array()
        .expect("socket waits reported");
    let wait = |i: usize| waits[i].as_f64().expect("a number");
    assert!(
        wait(0) >= 0.0 && wait(0) <= wait(1) && wait(1) <= wait(2),
        "{waits:?}"
    );
    assert!(md.contains("arrival timestamps"), "{md}");
    // The fault chain's nodes run at the default SCHED_FIFO 20 (signal sources +2, state
    // manager and controller +1), every thread of them, when this machine permits it (the
    // profiler's own policy tells); else all run normally.
    let s = &json["settings"];
    let fifo = s["profiler_scheduling"] == "SCHED_FIFO 20";
    let policy_of = |node: &str| {
        s["suite_scheduling"]
            .as_array()
            .and_then(|a| a.iter().find(|p| p[0] == node))
            .and_then(|p| p[1].as_str().map(str::to_owned))
    };
    for (node, priority) in [
        ("/mock_signals", 22),
        ("/gem_sim", 22),
        ("/state_manager", 21),
        ("/controller", 21),
        ("/task_planner", 20),
    ] {
        let expected = if fifo {
            format!("SCHED_FIFO {priority}")
        } else {
            "SCHED_OTHER".to_owned()
        };
        assert_eq!(policy_of(node), Some(expected), "{node}: {s}");
    }
    let periods = json["periods"].as_array().expect("periods");
    assert!(
        periods.iter().any(|p| p[0] == "/system_state"),
        "/system_state periods: {periods:?}"
    );
    let usage = json["resources"].as_array().expect("resources");
    for node in ["/state_manager", "/controller", "/task_planner", "/gem_sim"] {
        let u = usage
            .iter()
            .find(|u| u["node"] == node)
            .unwrap_or_else(|| panic!("no resource figures of {node}: {usage:?}"));
        assert!(u["rss_max_mib"].as_f64().unwrap_or(0.0) > 1.0, "{u}");
        // Every node of the suite is woken at least by its own timers.
        assert!(u["wakeups_per_s"].as_f64().unwrap_or(0.0) > 0.0, "{u}");
    }
    for svg in ["latency_boxplot.svg", "chain_breakdown.svg"] {
        let body = std::fs::read_to_string(out.join(svg)).expect("figure written");
        assert!(body.contains("<svg") && body.len() > 2000, "{svg}");
    }
    // The stall probes ran on every CPU through the rounds (where SCHED_FIFO is allowed),
    // and every fault chain is split by whether a stall overlapped it.
    let probes = &json["stall_probes"];
    assert!(md.contains("## CPU stalls during the rounds"), "{md}");
    if fifo {
        assert_eq!(probes["off"], serde_json::Value::Null, "{probes}");
        let cpus = probes["cpus"].as_u64().expect("cpus");
        assert!(cpus >= 1, "{probes}");
        // 1 kHz per CPU over the rounds: far more than one wake-up per CPU per 10 ms, even
        // after long stalls.
        let rounds_s = s["injection_wall_s"].as_f64().expect("rounds' wall time");
        let wakeups = probes["wakeups"].as_u64().expect("wake-ups") as f64;
        assert!(wakeups > rounds_s * 100.0 * cpus as f64, "{probes}");
        for link in ["system_error", "braking_command"] {
            let split = &probes[link];
            let n = |k: &str| split[k].as_u64().expect("a count");
            assert_eq!(n("events"), (RUNS * FaultKind::ALL.len()) as u64, "{split}");
            assert!(n("overlapped") <= n("events") && n("above_overlapped") <= n("above"));
        }
        for stall in probes["stalls"].as_array().expect("stall list") {
            let (from, to) = (stall["from_s"].as_f64(), stall["to_s"].as_f64());
            assert!(from < to && stall["cpu"].as_u64() < Some(cpus), "{stall}");
        }
    } else {
        assert!(probes["off"].as_str().is_some(), "{probes}");
    }
}

#[test]
fn record_writes_one_bag_per_injection_holding_its_chain() {
    let _serial = ros();
    let out = scratch_dir("profile_record");
    let out_s = out.to_str().expect("utf-8 path");
    let args = [
        "profile",
        "--runs",
        "2",
        "--faults",
        "estop",
        "--resources-s",
        "0",
        "--record",
        "--out",
        out_s,
    ];
    let o = gemctl(&args, Duration::from_secs(300));
    let log = format!("stdout: {}\nstderr: {}", text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "gemctl profile --record failed\n{log}");
    for bag in ["estop_000.bag", "estop_001.bag"] {
        let file = out.join("bags").join(bag);
        let info = gemctl(
            &["bag", "info", file.to_str().expect("utf-8 path")],
            Duration::from_secs(60),
        );
        let info = text(&info.stdout);
        // The recorder was connected before the injection: the whole chain is in the bag.
        for topic in [
            "/estop",
            "/system_state",
            "/task_planner_status",
            "/navigate_waypoints/cancel",
            "/navigate_waypoints/result",
            "/navigate_waypoints/goal",
            "/gem/ackermann_cmd",
        ] {
            assert!(info.contains(topic), "{bag} lacks {topic}:\n{info}");
        }
    }
}

#[test]
fn bad_arguments_are_refused_before_anything_starts() {
    for (args, expect) in [
        (&["profile", "--runs", "0"][..], "--runs must be at least 1"),
        (
            &["profile", "--faults", "estop,gps201"][..],
            "unknown failure type \"gps201\"",
        ),
        (&["profile", "--speedup", "0"][..], "--speedup must be > 0"),
        (
            &["profile", "--settle-s=-1"][..],
            "--settle-s must be within 0..60 s",
        ),
        (
            &["profile", "--settle-s", "nan"][..],
            "--settle-s must be within 0..60 s",
        ),
        (
            &["profile", "--speedup", "nan"][..],
            "--speedup must be > 0",
        ),
        (
            &["profile", "--stall-probe-us", "2000000"][..],
            "--stall-probe-us",
        ),
        (
            &["profile", "--launch-arg", "waypoints:=gem_track.csv"][..],
            "write it waypoints=gem_track.csv",
        ),
        (
            &["profile", "--launch-arg", "stanley"][..],
            "expected NAME=VALUE",
        ),
    ] {
        let o = gemctl(args, Duration::from_secs(30));
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{args:?} accepted");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
}
