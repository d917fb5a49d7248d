//! Publish → callback latency on loopback, per subscriber kind, in one process: rosrust's
//! subscriber (a message passes its reader, fan-out and callback threads) with Nagle's
//! algorithm on and with `TCP_NODELAY` (`ros1_protocols::net`), and `ros1_protocols::direct` (the callback
//! runs on the reading thread). Each message carries its send time; messages go out 5 ms
//! apart so no queue builds up. Rounds alternate the kinds, so a noisy stretch of the
//! machine does not land on one kind only.

use gem_core::stats::Summary;
use gem_msgs::std_msgs::Float64;
use gem_testbed::{ros, wait_until};
use ros1_protocols::Lock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Rosrust,
    RosrustNodelay,
    Direct,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Rosrust => "rosrust publisher and subscriber, Nagle on",
            Kind::RosrustNodelay => "rosrust publisher and subscriber, TCP_NODELAY",
            Kind::Direct => "runtime publisher → ros1_protocols::direct, TCP_NODELAY",
        }
    }
}

/// Keeps a subscription of either kind alive.
enum Sub {
    Rosrust(#[allow(dead_code)] rosrust::Subscriber),
    Direct(#[allow(dead_code)] ros1_protocols::direct::DirectSubscriber),
}

pub fn run(messages: usize, rounds: usize) -> anyhow::Result<()> {
    let _ros = ros();
    rosrust_beside()?;
    let epoch = Instant::now();
    let kinds = [Kind::Rosrust, Kind::RosrustNodelay, Kind::Direct];
    let mut latencies: Vec<Vec<f64>> = vec![Vec::new(); kinds.len()];
    // The direct subscriber's kernel arrival times (publish → on the socket), µs.
    let wire: std::sync::Arc<std::sync::Mutex<Vec<f64>>> = Default::default();
    let mut wire_all = Vec::new();
    for round in 0..rounds {
        for (k, kind) in kinds.iter().enumerate() {
            let topic = format!("/bench_subscribe/r{round}k{k}");
            let (tx, rx) = mpsc::channel::<f64>();
            let since = move |at: Instant, sent: f64| at.duration_since(epoch).as_secs_f64() - sent;
            let _sub = match kind {
                Kind::Direct => {
                    let wire = wire.clone();
                    Sub::Direct(ros1_protocols::direct::subscribe(
                        &topic,
                        move |m: Float64, at: ros1_protocols::direct::Arrival| {
                            if tx.send(since(at.read, m.data)).is_ok() {
                                let mut w = wire.locked();
                                w.push(since(at.wire, m.data) * 1e6);
                            }
                        },
                    )?)
                }
                _ => Sub::Rosrust(
                    rosrust::subscribe(&topic, 100, move |m: Float64| {
                        let _ = tx.send(since(Instant::now(), m.data));
                    })
                    .map_err(|e| anyhow::anyhow!("subscribe {topic}: {e}"))?,
                ),
            };
            // Each kind with its own node's publisher: rosrust's, or the suite's runtime.
            let send: Box<dyn Fn(f64) -> bool> = match kind {
                Kind::Direct => {
                    let p = ros1_protocols::this_node::publish::<Float64>(&topic, 100)?;
                    Box::new(move |data| p.send(Float64 { data }).is_ok())
                }
                _ => {
                    let p = rosrust::publish::<Float64>(&topic, 100)
                        .map_err(|e| anyhow::anyhow!("publish {topic}: {e}"))?;
                    Box::new(move |data| p.send(Float64 { data }).is_ok())
                }
            };
            let now = || epoch.elapsed().as_secs_f64();
            // Warm up until the link delivers.
            anyhow::ensure!(
                wait_until(Duration::from_secs(20), || {
                    send(now()) && rx.recv_timeout(Duration::from_millis(50)).is_ok()
                }),
                "{topic}: no link"
            );
            if *kind != Kind::Rosrust {
                ros1_protocols::net::set_nodelay_on_all_sockets();
            }
            while rx.try_recv().is_ok() {}
            wire.locked().clear();
            for _ in 0..messages {
                anyhow::ensure!(send(now()), "{topic}: cannot publish");
                std::thread::sleep(Duration::from_millis(5));
            }
            let got: Vec<f64> = (0..messages)
                .map_while(|_| rx.recv_timeout(Duration::from_secs(5)).ok())
                .map(|s| s * 1e6)
                .collect();
            anyhow::ensure!(
                got.len() == messages,
                "{topic}: {} of {messages} arrived",
                got.len()
            );
            latencies[k].extend(got);
            if *kind == Kind::Direct {
                wire_all.append(&mut wire.locked());
            }
        }
    }
    println!(
        "publish → callback on loopback, one process, {messages} messages × {rounds} rounds per kind, 5 ms apart (µs)"
    );
    println!("| subscriber | p50 | p95 | p99 | max |\n|---|---|---|---|---|");
    let rows = kinds.iter().map(|k| k.name()).zip(latencies).chain([(
        "ros1_protocols::direct, kernel arrival (SO_TIMESTAMPNS), not the callback",
        wire_all,
    )]);
    for (name, l) in rows {
        let s = Summary::new(l);
        println!(
            "| {name} | {:.0} | {:.0} | {:.0} | {:.0} |",
            s.percentile(50.0),
            s.percentile(95.0),
            s.percentile(99.0),
            s.percentile(100.0)
        );
    }
    Ok(())
}

/// Starts rosrust's own node beside the process's runtime node (under another name), for
/// the rows that measure rosrust's links: the suite itself no longer runs on it.
pub fn rosrust_beside() -> anyhow::Result<()> {
    if !rosrust::is_initialized() {
        rosrust::try_init_with_options(&format!("gem_bench_rosrust_{}", std::process::id()), false)
            .map_err(|e| anyhow::anyhow!("rosrust's node: {e}"))?;
    }
    Ok(())
}
