//! `gemctl replay` throughput: a bag of the five state-manager inputs (recorded here from
//! `mock_signals` by Debian's `rosbag record`) played in lockstep into one fast consumer,
//! the real `state_manager` acknowledging every message, at several burst sizes (a rosrust
//! consumer drops what exceeds 8 messages arriving at once on one topic, so bursts stay small).

use gem_testbed::{cli_background, cli_ok, ros, wait_for_subscriber};
use std::time::{Duration, Instant};

const TOPICS: [&str; 5] = [
    "/rb/battery_level",
    "/rb/estop",
    "/rb/gps_accuracy",
    "/rb/signal_strength",
    "/rb/temperature",
];

pub fn run(messages_per_topic: usize) -> anyhow::Result<()> {
    let r = ros();
    r.set_sim_time(false);
    let dir = std::env::temp_dir().join(format!("gem_bench_replay_{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let bag = dir.join("inputs.bag");
    {
        let signals = r
            .node("mock_signals")
            .arg("__ns:=/rb")
            .param("rate", 200)
            .spawn();
        let limit = messages_per_topic.to_string();
        let mut args = vec![
            "record",
            "-l",
            &limit,
            "-O",
            bag.to_str().unwrap_or_default(),
        ];
        args.extend(TOPICS);
        let mut recorder = cli_background("rosbag", &args);
        for t in TOPICS {
            anyhow::ensure!(
                wait_for_subscriber(t, Duration::from_secs(20)),
                "rosbag did not subscribe {t}"
            );
        }
        recorder
            .wait(Duration::from_secs(120))
            .ok_or_else(|| anyhow::anyhow!("rosbag record did not finish"))?;
        drop(signals);
    }
    let total = messages_per_topic * TOPICS.len();
    r.set_sim_time(true);
    let gemctl = gem_testbed::node_binary("gemctl");
    for burst in [1usize, 5, 10] {
        let node = r
            .node("state_manager")
            .arg("__ns:=/rb")
            .param("publish_processed", true)
            .param("state_timeout_ms", 0)
            .spawn();
        let start = Instant::now();
        let out = cli_ok(
            gemctl.to_str().unwrap_or_default(),
            &[
                "replay",
                bag.to_str().unwrap_or_default(),
                "--consumer",
                "/rb/state_manager",
                "--burst",
                &burst.to_string(),
            ],
            Duration::from_secs(300),
        );
        let wall = start.elapsed().as_secs_f64();
        let done = out
            .lines()
            .find(|l| l.starts_with("done:"))
            .unwrap_or_default()
            .to_owned();
        let handled = out
            .lines()
            .find(|l| l.contains("handled"))
            .unwrap_or_default()
            .trim()
            .to_owned();
        println!("replay lockstep, bursts of {burst:>3}: {done} [{handled}] (process {wall:.1} s incl. start-up)");
        drop(node);
    }
    println!("  ({total} messages: 5 topics × {messages_per_topic}, consumer = state_manager acking each)");
    Ok(())
}
