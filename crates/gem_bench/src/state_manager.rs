//! State manager: how fast the core ingests updates, and how long an input message takes
//! to come back as the matching `/system_state` from the real node on loopback.

use gem_core::state_manager::{StateManager, StateManagerConfig};
use gem_core::stats::Summary;
use gem_core::time::Time;
use gem_msgs::gem_state_msgs::{EstopStamped, SystemStateStamped};
use gem_testbed::{ros, wait_until};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Runs both measurements and prints their figures.
pub fn run(updates: usize, samples: usize) -> anyhow::Result<()> {
    core_ingest(updates);
    node_latency(samples)
}

/// Updates/s of the core: one input update plus one evaluation per update, cycling
/// through the inputs with advancing time (so every rule is evaluated each time).
fn core_ingest(updates: usize) {
    let mut rates = Vec::new();
    for _ in 0..5 {
        let start_t = Time::from_secs_f64(1000.0);
        let mut sm = StateManager::new(StateManagerConfig::default(), start_t);
        let started = Instant::now();
        let mut errors = 0u32;
        for i in 0..updates {
            let now = start_t.saturating_add(Duration::from_micros(50 * i as u64));
            let v = (i % 97) as f32;
            let _ = match i % 6 {
                0 => sm.update_battery(now, 0.4 + v / 200.0, now),
                1 => sm.update_estop(now, i % 1000 == 1, now),
                2 => sm.update_gps(now, 150.0 + v, now),
                3 => sm.update_signal(now, (i % 3) as u8, now),
                4 => sm.update_temperature(now, 30.0 + v / 3.0, now),
                _ => sm.update_planner(now, (i % 3) as u8, now),
            };
            errors += u32::from(sm.evaluate(now).errors.bits());
        }
        let secs = started.elapsed().as_secs_f64();
        std::hint::black_box(errors);
        rates.push(updates as f64 / secs);
    }
    let s = Summary::new(rates);
    println!(
        "core ingest (update + evaluate): median {:.2} M updates/s (min {:.2}, max {:.2}) over 5 runs of {updates}",
        s.percentile(50.0) / 1e6,
        s.percentile(0.0) / 1e6,
        s.percentile(100.0) / 1e6
    );
}

/// Wall time from publishing an e-stop change to receiving the `/system_state` that
/// reflects it, through a real `state_manager` process and Debian's rosmaster.
fn node_latency(samples: usize) -> anyhow::Result<()> {
    let ros = ros();
    ros.set_sim_time(false);
    let node = ros
        .node("state_manager")
        .arg("__ns:=/bench")
        .param("state_timeout_ms", 0)
        .spawn();
    let (tx, rx) = mpsc::channel::<(Instant, u8)>();
    let _sub = ros1_protocols::direct::subscribe(
        "/bench/system_state",
        move |m: SystemStateStamped, _| {
            let _ = tx.send((Instant::now(), m.error_code));
        },
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let estop = ros1_protocols::this_node::publish::<EstopStamped>("/bench/estop", 1000)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if !wait_until(Duration::from_secs(20), || estop.subscriber_count() > 0) {
        anyhow::bail!("state_manager did not subscribe\n{}", node.output());
    }
    // Wait for heartbeats to flow (the subscriber side is connected too).
    rx.recv_timeout(Duration::from_secs(20))?;
    let mut latencies_us = Vec::with_capacity(samples);
    for i in 0..samples + 100 {
        let pressed = i % 2 == 0;
        let mut m = EstopStamped {
            enabled: pressed,
            ..Default::default()
        };
        m.header.stamp = ros1_protocols::this_node::wall_now();
        while rx.try_recv().is_ok() {}
        let sent = Instant::now();
        estop.send(m).map_err(|e| anyhow::anyhow!("{e}"))?;
        let deadline = sent + Duration::from_secs(5);
        loop {
            let (at, code) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))?;
            if (code & SystemStateStamped::ERROR_ESTOP != 0) == pressed {
                if i >= 100 {
                    // the first 100 are warm-up
                    latencies_us.push(at.duration_since(sent).as_secs_f64() * 1e6);
                }
                break;
            }
        }
    }
    let s = Summary::new(latencies_us);
    println!(
        "node latency estop → /system_state (loopback, wall time): {}",
        s.line(" µs")
    );
    println!(
        "  p99 {:.3} ms (target < 5 ms)",
        s.percentile(99.0) / 1000.0
    );
    drop(node);
    Ok(())
}
