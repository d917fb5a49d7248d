//! `operator-link`: the cost of the operator link's security, per datagram: sealing one
//! (HMAC-SHA-256 over 41 bytes, truncated to 128 bits) and the car's whole check of one
//! (the tag, the session's counter, the heartbeat it answers), measured on a real echo
//! stream. The figure that matters is the check: every datagram that reaches the car's
//! port pays it, a flood's included.

use gem_core::signal_sources::link::car::{CarEnd, Heard};
use gem_core::signal_sources::link::station::{FromCar, StationEnd};
use gem_core::signal_sources::link::wire::{open, Message, OperatorKey, Sealer};
use gem_core::signal_sources::link::LinkLimits;
use gem_core::stats::Summary;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Per-datagram times in µs of `samples` batches of `batch` datagrams each.
fn per_datagram(samples: usize, batch: usize, mut one: impl FnMut(usize)) -> Summary {
    let mut times = Vec::with_capacity(samples);
    for s in 0..samples {
        let start = Instant::now();
        for i in 0..batch {
            one(s * batch + i);
        }
        times.push(start.elapsed().as_secs_f64() * 1e6 / batch as f64);
    }
    Summary::new(times)
}

fn row(what: &str, s: &Summary) {
    println!(
        "| {what} | {:.2} | {:.2} | {:.2} | {:.2} |",
        s.percentile(50.0),
        s.percentile(90.0),
        s.percentile(99.0),
        s.sorted().last().copied().unwrap_or(f64::NAN)
    );
}

pub fn run(samples: usize) -> anyhow::Result<()> {
    let key = OperatorKey::generate()?;
    let batch = 100;
    let limits = LinkLimits::DEFAULT;
    let ops: SocketAddr = "10.0.0.30:40000".parse()?;
    // Echoes a station really sends: one per heartbeat of a car that beats every
    // datagram (each answered once, so every check is a full, accepted one).
    let mut car = CarEnd::new(limits, Some(key.clone()), 1);
    let mut station = StationEnd::new(Some(key.clone()), 2, limits.lost_after);
    let mut echoes = Vec::with_capacity(samples * batch);
    let mut t = Duration::ZERO;
    let mut hellos = Vec::new();
    for n in 0..samples * batch {
        if n % 5 == 0 {
            // The station's hello every second, as `gemctl operator` says it.
            let hello = station.hello();
            car.receive(&hello, ops, t);
            hellos.push(hello);
        }
        let (beats, _) = car.tick(t);
        for (_, beat) in beats {
            if let FromCar::Beat { echo, .. } = station.receive(&beat, t) {
                echoes.push((echo, t));
            }
        }
        t += limits.period;
    }
    anyhow::ensure!(echoes.len() == samples * batch, "{} echoes", echoes.len());
    let mut sealer = Sealer::new(Some(key.clone()), 3);
    let seal = per_datagram(samples, batch, |i| {
        std::hint::black_box(sealer.seal(&Message::Echo {
            car: 1,
            seq: i as u64,
        }));
    });
    let tag_only = per_datagram(samples, batch, |i| {
        std::hint::black_box(open(Some(&key), &echoes[i].0).is_ok());
    });
    // The car's check, fresh: every echo is the answer to a heartbeat awaiting one. The
    // meter keeps a 20-beat window, so each is checked just after its heartbeat.
    let mut car = CarEnd::new(limits, Some(key.clone()), 1);
    let mut accepted = 0usize;
    let mut check = Vec::with_capacity(samples);
    let mut i = 0;
    for _ in 0..samples {
        let mut spent = Duration::ZERO;
        for _ in 0..batch {
            let (echo, at) = &echoes[i];
            if i % 5 == 0 {
                car.receive(&hellos[i / 5], ops, *at);
            }
            car.tick(*at);
            let start = Instant::now();
            let heard = car.receive(echo, ops, *at + Duration::from_millis(5));
            spent += start.elapsed();
            accepted += usize::from(!matches!(heard, Heard::Dropped { .. }));
            i += 1;
        }
        check.push(spent.as_secs_f64() * 1e6 / batch as f64);
    }
    let check = Summary::new(check);
    // A forged datagram costs the tag and nothing more.
    let forged_key = OperatorKey::from_bytes([9; 32]);
    let forged = per_datagram(samples, batch, |i| {
        std::hint::black_box(open(Some(&forged_key), &echoes[i].0).is_err());
    });
    println!(
        "operator link, per datagram, µs ({samples} batches of {batch}; {accepted} of {} echoes accepted)\n",
        samples * batch
    );
    println!("| step | p50 | p90 | p99 | max |\n|---|---|---|---|---|");
    row("seal (HMAC-SHA-256, station or car)", &seal);
    row("open: tag check only", &tag_only);
    row(
        "car's full check of an echo (tag, counter, heartbeat)",
        &check,
    );
    row("car drops a forged datagram", &forged);
    anyhow::ensure!(accepted == samples * batch, "an honest echo was dropped");
    Ok(())
}
