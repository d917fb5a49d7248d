//! CPU stalls seen from inside a virtual machine, and which measured events they touched.
//!
//! On a shared host the hypervisor sometimes runs another guest on a virtual CPU's
//! physical one ("steal"). The guest does not see that happen: a thread that was due to
//! run simply runs later. A probe thread per CPU, pinned and at the highest real-time
//! priority, asks to wake at a fixed period; a wake-up later than a threshold means the
//! CPU ran none of this machine's threads for that long (or ran with interrupts off).
//! [`Probe`] is the rule each probe applies (a wake-up more than [`THRESHOLD`] late);
//! [`overlaps`] and [`Split`] say which events of a measurement such a stall could have
//! delayed. `gemctl profile` runs the probe threads and hands over their [`ProbeLog`].

use gem_core::stats::Summary;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A wake-up later than this is a stall.
pub const THRESHOLD: Duration = Duration::from_micros(500);
/// [`THRESHOLD`] in ms, as the report states it.
pub const THRESHOLD_MS: f64 = THRESHOLD.as_secs_f64() * 1e3;

/// What the probes of one measurement saw.
#[derive(Clone, Debug, Default)]
pub struct ProbeLog {
    /// How many CPUs were probed.
    pub cpus: usize,
    /// Every stall, in time order.
    pub stalls: Vec<Stall>,
    /// Wake-ups of all probes (about run time × CPUs / period when the probes kept up).
    pub wakeups: u64,
}

/// A stretch of wall time in which one CPU ran none of this machine's threads, in seconds
/// since the measurement's epoch.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stall {
    /// The CPU (its number in the kernel's list).
    pub cpu: usize,
    /// The last instant the CPU is known to have run the probe (its previous wake-up).
    pub from_s: f64,
    /// When the probe finally ran.
    pub to_s: f64,
}

impl Stall {
    /// How long the stall may have lasted, ms.
    pub fn ms(&self) -> f64 {
        (self.to_s - self.from_s) * 1e3
    }
}

/// One CPU's probe: judges each of its wake-ups.
#[derive(Clone, Debug)]
pub struct Probe {
    cpu: usize,
    threshold_s: f64,
    last_woke_s: Option<f64>,
}

impl Probe {
    /// A probe on `cpu` calling any wake-up later than `threshold` a stall.
    pub fn new(cpu: usize, threshold: Duration) -> Probe {
        Probe {
            cpu,
            threshold_s: threshold.as_secs_f64(),
            last_woke_s: None,
        }
    }

    /// A wake-up due at `due_s` that happened at `woke_s`. Later than the threshold: a
    /// stall, from the probe's previous wake-up (the CPU was running then; when between
    /// that and `due_s` it stopped is unknown) to this one. The first wake-up only starts
    /// the record.
    pub fn woke(&mut self, due_s: f64, woke_s: f64) -> Option<Stall> {
        let from_s = self.last_woke_s.replace(woke_s)?;
        (woke_s - due_s > self.threshold_s).then_some(Stall {
            cpu: self.cpu,
            from_s,
            to_s: woke_s,
        })
    }
}

/// Whether any of `stalls` shares an instant with the span `from_s..=to_s`.
pub fn overlaps(stalls: &[Stall], from_s: f64, to_s: f64) -> bool {
    stalls.iter().any(|s| s.from_s <= to_s && s.to_s >= from_s)
}

/// A set of latencies split by whether a stall overlapped the event, against a bound.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Split {
    /// Events in all.
    pub events: usize,
    /// Events a stall overlapped.
    pub overlapped: usize,
    /// Events above the bound.
    pub above: usize,
    /// Events above the bound that a stall overlapped.
    pub above_overlapped: usize,
    /// p99 of every event, ms (`None` without events).
    pub p99_ms: Option<f64>,
    /// p99 of the events no stall overlapped, ms (`None` without such events).
    pub p99_clear_ms: Option<f64>,
}

impl Split {
    /// Splits `events` (span start and end in seconds, latency in ms) against `stalls`,
    /// counting those above `bound_ms`.
    pub fn new(events: &[(f64, f64, f64)], stalls: &[Stall], bound_ms: f64) -> Split {
        let mut split = Split {
            events: events.len(),
            ..Split::default()
        };
        let (mut all, mut clear) = (Vec::new(), Vec::new());
        for &(from_s, to_s, ms) in events {
            let hit = overlaps(stalls, from_s, to_s);
            split.overlapped += usize::from(hit);
            split.above += usize::from(ms > bound_ms);
            split.above_overlapped += usize::from(hit && ms > bound_ms);
            all.push(ms);
            if !hit {
                clear.push(ms);
            }
        }
        let p99 = |v: Vec<f64>| (!v.is_empty()).then(|| Summary::new(v).percentile(99.0));
        split.p99_ms = p99(all);
        split.p99_clear_ms = p99(clear);
        split
    }
}

/// Per CPU: (stalls, total ms, longest ms), for every CPU in `0..cpus`.
pub fn per_cpu(stalls: &[Stall], cpus: usize) -> Vec<(usize, f64, f64)> {
    (0..cpus)
        .map(|cpu| {
            stalls
                .iter()
                .filter(|s| s.cpu == cpu)
                .fold((0, 0.0, 0.0), |(n, total, longest), s| {
                    (n + 1, total + s.ms(), f64::max(longest, s.ms()))
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: f64 = 1e-3;

    #[test]
    fn a_late_wake_up_is_a_stall_from_the_previous_one() {
        let mut p = Probe::new(1, Duration::from_micros(500));
        assert_eq!(p.woke(1.0, 1.0 + 0.9 * MS), None, "the first only starts");
        assert_eq!(
            p.woke(1.0 + MS, 1.0 + 1.2 * MS),
            None,
            "0.2 ms late is fine"
        );
        // Due at 2 ms, ran at 7 ms: the CPU was gone from somewhere after 1.2 ms.
        let s = p.woke(1.0 + 2.0 * MS, 1.0 + 7.0 * MS).expect("a stall");
        assert_eq!(s.cpu, 1);
        assert!((s.from_s - (1.0 + 1.2 * MS)).abs() < 1e-12);
        assert!((s.ms() - 5.8).abs() < 1e-9, "{}", s.ms());
        // Exactly the threshold late is not a stall.
        assert_eq!(p.woke(1.0 + 7.5 * MS, 1.0 + 8.0 * MS), None);
    }

    #[test]
    fn overlap_includes_touching_spans() {
        let stalls = [Stall {
            cpu: 0,
            from_s: 2.0,
            to_s: 2.005,
        }];
        assert!(overlaps(&stalls, 2.004, 2.006));
        assert!(overlaps(&stalls, 1.9, 2.0));
        assert!(overlaps(&stalls, 2.001, 2.002), "inside");
        assert!(!overlaps(&stalls, 2.0051, 2.01));
        assert!(!overlaps(&[], 0.0, 10.0));
    }

    #[test]
    fn split_counts_slow_events_and_the_p99_of_the_clear_ones() {
        let stalls = [Stall {
            cpu: 1,
            from_s: 10.0,
            to_s: 10.004,
        }];
        // 99 quick clear events, one slow event a stall overlapped, one slow clear one.
        let mut events: Vec<(f64, f64, f64)> = (0..99)
            .map(|i| (i as f64 + 0.5, i as f64 + 0.5003, 0.3))
            .collect();
        events.push((10.001, 10.0045, 3.5));
        events.push((200.0, 200.0025, 2.5));
        let s = Split::new(&events, &stalls, 2.0);
        assert_eq!(
            (s.events, s.overlapped, s.above, s.above_overlapped),
            (101, 1, 2, 1)
        );
        assert!(s.p99_ms.unwrap() > 2.0);
        assert!(s.p99_clear_ms.unwrap() <= 2.5);
        assert_eq!(Split::new(&[], &stalls, 2.0).p99_ms, None);
    }

    #[test]
    fn per_cpu_sums_each_cpu_and_lists_quiet_ones() {
        let stalls = [
            Stall {
                cpu: 0,
                from_s: 1.0,
                to_s: 1.003,
            },
            Stall {
                cpu: 0,
                from_s: 2.0,
                to_s: 2.001,
            },
        ];
        let p = per_cpu(&stalls, 2);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].0, 2);
        assert!((p[0].1 - 4.0).abs() < 1e-9 && (p[0].2 - 3.0).abs() < 1e-9);
        assert_eq!(p[1], (0, 0.0, 0.0));
    }
}
