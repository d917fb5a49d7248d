//! Resource figures of the running nodes: CPU time, wake-ups and resident memory from `/proc`
//! (Linux; the nodes must run on this machine), sampled once a second over a window; the
//! machine's CPU steal and what the report says of the machine.

use gem_profile::report::{Machine, NodeUsage};
use gem_ros::procfs;
use std::time::{Duration, Instant};

/// The machine's CPU time so far, all CPUs: (total ticks, steal ticks). Steal is the time
/// a virtual machine's CPUs were ready but the hypervisor ran someone else: on a shared
/// host it shows up directly as latency outliers, so the report states it.
pub fn cpu_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
    // already part of user time.
    let total = f.iter().take(8).sum();
    Some((total, *f.get(7)?))
}

/// Percent of CPU time stolen between two [`cpu_ticks`] readings.
pub fn steal_percent(from: Option<(u64, u64)>, to: Option<(u64, u64)>) -> Option<f64> {
    let ((t0, s0), (t1, s1)) = (from?, to?);
    (t1 > t0).then(|| 100.0 * s1.saturating_sub(s0) as f64 / (t1 - t0) as f64)
}

/// A `/proc` file's text, trimmed (empty when it cannot be read).
fn read(path: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The machine this runs on, from `/proc`, and the date.
pub fn machine() -> Machine {
    let cpuinfo = read("/proc/cpuinfo");
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .unwrap_or("unknown")
        .trim()
        .to_owned();
    let mem_kib: f64 = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    Machine {
        host: read("/proc/sys/kernel/hostname"),
        cpu,
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
        memory_gib: mem_kib / 1024.0 / 1024.0,
        kernel: read("/proc/sys/kernel/osrelease"),
        date_utc: date,
    }
}

/// One reading of a node's process.
#[derive(Clone)]
struct Sample {
    /// User + system CPU time so far, clock ticks (every thread, ended ones too).
    cpu_ticks: u64,
    rss_kib: u64,
    threads: u64,
    /// Each thread's voluntary context switches so far: its wake-ups (see
    /// [`procfs::voluntary_switches`] for why these and not all switches).
    switches: std::collections::HashMap<u32, u64>,
}

fn sample(pid: u32) -> Option<Sample> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some(Sample {
        cpu_ticks: procfs::cpu_ticks(pid)?,
        rss_kib: procfs::status_field(&status, "VmRSS:")?,
        threads: procfs::status_field(&status, "Threads:")?,
        switches: procfs::voluntary_switches(pid)?,
    })
}

/// Samples `nodes` (name, pid) once a second for `window`, calling `tick` with the elapsed
/// time after each sample (for a progress line). Nodes whose process vanished are dropped.
pub fn measure(
    nodes: &[(String, u32)],
    window: Duration,
    mut tick: impl FnMut(Duration),
) -> Vec<NodeUsage> {
    let start = Instant::now();
    let first: Vec<Option<Sample>> = nodes.iter().map(|n| sample(n.1)).collect();
    let mut rss: Vec<Vec<u64>> = first
        .iter()
        .map(|s| s.as_ref().map(|s| vec![s.rss_kib]).unwrap_or_default())
        .collect();
    let mut last = first.clone();
    while start.elapsed() < window {
        let left = window.saturating_sub(start.elapsed());
        std::thread::sleep(left.min(Duration::from_secs(1)));
        for (i, n) in nodes.iter().enumerate() {
            if let Some(s) = sample(n.1) {
                rss[i].push(s.rss_kib);
                last[i] = Some(s);
            }
        }
        tick(start.elapsed());
    }
    let seconds = start.elapsed().as_secs_f64();
    let hz = procfs::ticks_per_second();
    nodes
        .iter()
        .enumerate()
        .filter_map(|(i, (node, pid))| {
            let (a, b) = (first[i].as_ref()?, last[i].as_ref()?);
            let r = &rss[i];
            Some(NodeUsage {
                node: node.clone(),
                pid: *pid,
                cpu_percent: 100.0 * (b.cpu_ticks.saturating_sub(a.cpu_ticks)) as f64
                    / hz
                    / seconds,
                wakeups_per_s: procfs::wakeups_between(&a.switches, &b.switches) as f64 / seconds,
                rss_mean_mib: r.iter().sum::<u64>() as f64 / r.len() as f64 / 1024.0,
                rss_max_mib: r.iter().copied().max().unwrap_or(0) as f64 / 1024.0,
                threads: b.threads,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_memory_threads_and_cpu_time() {
        let me = std::process::id();
        let s = sample(me).expect("own /proc entry");
        assert!(s.rss_kib > 100, "{} KiB", s.rss_kib);
        assert!(s.threads >= 1);
        assert!(!s.switches.is_empty());
        let usage = measure(&[("me".into(), me)], Duration::from_millis(300), |_| {});
        assert_eq!(usage.len(), 1);
        assert!(usage[0].rss_max_mib > 0.0);
        // This thread slept between the samples.
        assert!(usage[0].wakeups_per_s > 0.0);
    }

    #[test]
    fn steal_is_a_share_of_the_elapsed_cpu_time() {
        assert_eq!(steal_percent(Some((100, 5)), Some((300, 25))), Some(10.0));
        assert_eq!(steal_percent(Some((100, 5)), Some((100, 5))), None);
        assert!(cpu_ticks().is_some_and(|(total, steal)| total >= steal));
    }

    #[test]
    fn a_vanished_process_is_dropped() {
        assert!(measure(&[("ghost".into(), u32::MAX)], Duration::ZERO, |_| {}).is_empty());
    }
}
