//! The stall probes' threads: one per CPU, pinned to it at `SCHED_FIFO` 99, waking at a
//! fixed period and judging each wake-up by `gem_profile::stalls` (a late one is a stall
//! of that CPU). Nothing of this machine can keep a top-priority thread that is due from
//! running for long, so a late probe means the hypervisor ran another guest on the CPU
//! (or the kernel ran with interrupts off).

use gem_profile::stalls::{Probe, ProbeLog, Stall, THRESHOLD};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The probes' priority: above every thread of the suite and the profiler.
const PRIORITY: i32 = 99;

/// The running probes; [`Monitor::stop`] collects what they saw.
pub struct Monitor {
    stop: Arc<AtomicBool>,
    probes: Vec<JoinHandle<Vec<Stall>>>,
    wakeups: Arc<AtomicU64>,
    cpus: usize,
}

/// CLOCK_MONOTONIC in ns (what `Instant` reads on Linux).
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given and nothing else.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until CLOCK_MONOTONIC reads `ns`.
fn sleep_until_ns(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: reads the timespec during the call; an interrupted sleep returns early and the
    // loop goes on (a probe that woke early is on time).
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is an empty set; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above; the size is the set's own.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET reads the set for an index below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Pins the calling thread to `cpu` at `SCHED_FIFO` [`PRIORITY`].
fn pin_and_raise(cpu: usize) -> Result<(), String> {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET adds one CPU below CPU_SETSIZE.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; the set outlives the call.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) } != 0 {
        return Err(format!(
            "cannot pin a probe to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        ));
    }
    gem_ros::realtime::set_thread_fifo(0, PRIORITY).map_err(|e| {
        format!(
            "{}; a probe at normal priority would count scheduling delays as stalls",
            gem_ros::realtime::fifo_refused(PRIORITY, &e)
        )
    })?;
    Ok(())
}

impl Monitor {
    /// Starts a probe on every CPU this process may use, each waking every `period`; stall
    /// times are seconds since `epoch`. Fails (and starts nothing) when a probe cannot be
    /// pinned or given its priority.
    pub fn start(epoch: Instant, period: Duration) -> Result<Monitor, String> {
        let cpus = allowed_cpus();
        if cpus.is_empty() {
            return Err("no CPU to probe (sched_getaffinity failed)".into());
        }
        // One reading of both clocks maps CLOCK_MONOTONIC onto the epoch.
        let (base_ns, base_s) = (
            monotonic_ns(),
            Instant::now().duration_since(epoch).as_secs_f64(),
        );
        let to_s = move |ns: u64| base_s + (ns as f64 - base_ns as f64) / 1e9;
        let period_ns = period.as_nanos().max(1) as u64;
        let stop = Arc::new(AtomicBool::new(false));
        let wakeups = Arc::new(AtomicU64::new(0));
        let (ready_tx, ready_rx) = mpsc::channel();
        let mut monitor = Monitor {
            stop: stop.clone(),
            probes: Vec::new(),
            wakeups: wakeups.clone(),
            cpus: cpus.len(),
        };
        for &cpu in &cpus {
            let (stop, ready, wakeups) = (stop.clone(), ready_tx.clone(), wakeups.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("stall-probe-{cpu}"))
                .spawn(move || {
                    let started = pin_and_raise(cpu);
                    let ok = started.is_ok();
                    let _ = ready.send(started);
                    let mut stalls = Vec::new();
                    if !ok {
                        return stalls;
                    }
                    let mut probe = Probe::new(cpu, THRESHOLD);
                    let mut due = monotonic_ns() + period_ns;
                    while !stop.load(Ordering::Relaxed) {
                        sleep_until_ns(due);
                        let woke = monotonic_ns();
                        if woke < due {
                            continue; // interrupted early: sleep again
                        }
                        wakeups.fetch_add(1, Ordering::Relaxed);
                        stalls.extend(probe.woke(to_s(due), to_s(woke)));
                        // After a stall, count from now rather than catching up in a burst.
                        due = (due + period_ns).max(woke + period_ns / 2);
                    }
                    stalls
                });
            match spawned {
                Ok(h) => monitor.probes.push(h),
                Err(e) => return Err(format!("cannot start a stall probe: {e}")),
            }
        }
        for _ in &cpus {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(e), // dropping the monitor stops the others
                Err(_) => return Err("a stall probe died while starting".into()),
            }
        }
        Ok(monitor)
    }

    /// Wake-ups so far, all probes.
    pub fn wakeups(&self) -> u64 {
        self.wakeups.load(Ordering::Relaxed)
    }

    /// Stops the probes; what they saw.
    pub fn stop(mut self) -> ProbeLog {
        self.stop.store(true, Ordering::Relaxed);
        let mut stalls: Vec<Stall> = std::mem::take(&mut self.probes)
            .into_iter()
            .filter_map(|h| h.join().ok())
            .flatten()
            .collect();
        stalls.sort_by(|a, b| a.from_s.total_cmp(&b.from_s));
        ProbeLog {
            cpus: self.cpus,
            stalls,
            wakeups: self.wakeups(),
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.probes.drain(..) {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_every_allowed_cpu_and_stops_or_says_why_not() {
        let epoch = Instant::now();
        match Monitor::start(epoch, Duration::from_millis(1)) {
            Ok(m) => {
                assert_eq!(m.cpus, allowed_cpus().len());
                let cpus = m.cpus as u64;
                // Every probe wakes at 1 kHz: 20 wake-ups per CPU come within a bounded wait.
                let want = 20 * cpus;
                let until = Instant::now() + Duration::from_secs(10);
                while m.wakeups() < want && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(1));
                }
                let seen = m.stop();
                assert!(seen.wakeups >= want, "{} wake-ups", seen.wakeups);
                let (now, cpus) = (epoch.elapsed().as_secs_f64(), allowed_cpus());
                for s in &seen.stalls {
                    assert!(cpus.contains(&s.cpu) && s.from_s < s.to_s && s.to_s <= now);
                }
            }
            // Without the permission for SCHED_FIFO the reason is given.
            Err(e) => assert!(e.contains("SCHED_FIFO 99 refused"), "{e}"),
        }
    }

    #[test]
    fn monotonic_nanoseconds_advance() {
        let a = monotonic_ns();
        sleep_until_ns(a + 200_000);
        assert!(monotonic_ns() >= a + 200_000);
    }
}
