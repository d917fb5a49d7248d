//! `/clock` read when its time is asked for, not whenever a message arrives.
//!
//! A simulator publishes `/clock` at 100 Hz or more. A subscriber that reads each message
//! as it arrives wakes a thread 100 times a second in every node, though most nodes look
//! at the time 10 or 20 times a second: that is most of an idle node's CPU. Here nothing
//! wakes for a message:
//!
//! - the link's socket is non-blocking, and whoever asks for the time ([`super::now`], a
//!   wait) first reads what has queued on it ([`Reading::drain`]);
//! - a wait for a deadline of ROS time sleeps in wall time until shortly before the
//!   deadline's message is due (the clock's pace is measured: [`Pace`]), then waits on the
//!   socket for the message that reaches the deadline;
//! - the link's own thread sleeps until the publisher hangs up, and reads what queued once
//!   every [`crate::lazy::DRAIN_EVERY`] (a lazy link, [`crate::lazy`]).
//!
//! A [`super::Waker`], shutdown or a new link interrupts a thread waiting on the sockets
//! through the thread's own event file descriptor ([`Bell`]).

use crate::lazy::LazyLinks;
use crate::msgs::rosgraph_msgs::Clock;
use crate::net::Bell;
use rosrust::{RosMsg, Time};
use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Zero: no time yet (sim time before the first `/clock` message).
pub fn is_zero(t: Time) -> bool {
    t.sec == 0 && t.nsec == 0
}

/// How closely a wait ends on the `/clock` message that reaches its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    /// As that message arrives: the waiting thread sleeps until shortly before it is due,
    /// then watches the sockets for it (two wake-ups). For a control loop, whose inputs
    /// are read at the tick.
    Exact,
    /// Half a message period (of wall time) after it is due, in one wake-up; the time
    /// read is still that message's unless it came that late. For a heartbeat or a status
    /// whose stamp matters and whose wall-time phase does not. A message that has not
    /// come by then is waited for as [`Timing::Exact`] does.
    Relaxed,
}

/// One thread's wait for the clock to reach `gap` past `seen`, and the thread's
/// [`Bell`] (to interrupt its watch on the sockets).
#[derive(Clone, Copy)]
pub(super) struct Wait {
    pub(super) id: u64,
    pub(super) seen: Time,
    pub(super) gap: Duration,
    pub(super) bell: RawFd,
}

/// Whether our `/clock` value `latest` ends a wait that began at `seen` for `gap`: it is
/// `gap` or more past `seen`, or before it (a simulator reset). Zero (no message yet)
/// ends nothing.
pub(super) fn clock_reached(latest: Time, seen: Time, gap: Duration) -> bool {
    if is_zero(latest) {
        return false;
    }
    latest < seen || latest.nanos() >= due(seen, gap)
}

/// The `/clock` value, in nanoseconds, at which a wait from `seen` for `gap` is due.
fn due(seen: Time, gap: Duration) -> i64 {
    seen.nanos()
        .saturating_add(gap.as_nanos().min(i64::MAX as u128) as i64)
}

/// Whether a `/clock` value `latest` ends any of `waits` (so the waiting threads are woken).
pub(super) fn ends_a_wait(waits: &[Wait], latest: Time) -> bool {
    waits.iter().any(|w| clock_reached(latest, w.seen, w.gap))
}

/// What the `/clock` links last gave, the waits they may end, and the links themselves.
#[derive(Default)]
pub(super) struct Reading {
    pub(super) latest: Time,
    /// When the last `/clock` message read arrived (the kernel's receive time).
    pub(super) heard: Option<Instant>,
    /// The waits in [`super::wait_for_clock_or`] now.
    pub(super) waits: Vec<Wait>,
    pub(super) links: LazyLinks,
    /// The links last counted, to tell the threads watching the sockets of a new one.
    counted: usize,
    pace: Pace,
}

impl Reading {
    /// Reads every message queued on the links, keeping the latest time; notifies the
    /// threads asleep on `changed` when one ends a wait.
    pub(super) fn drain(&mut self, changed: &Condvar) {
        let mut times = Vec::new();
        let mut arrived = None;
        self.links.drain(
            |body, at, link| match Clock::decode(std::io::Cursor::new(body)) {
                Ok(m) => {
                    times.push(m.clock);
                    arrived = Some(at.wire);
                }
                Err(e) => tracing::warn!("cannot decode /clock from {}: {e}", link.uri),
            },
        );
        if self.links.live() != self.counted {
            // Threads already watching the sockets watch a new one too.
            self.counted = self.links.live();
            self.ring_all();
        }
        if times.is_empty() {
            return;
        }
        // The pace is sampled at the last message's arrival (the kernel's time), not at
        // this read, which may come much later.
        let at = arrived.unwrap_or_else(Instant::now);
        for &t in &times {
            if t < self.latest {
                // A simulator reset: the pace so far says nothing of the new epoch.
                self.pace = Pace::default();
            }
            self.latest = t;
        }
        self.pace.observe(at, &times);
        self.heard = Some(at);
        if ends_a_wait(&self.waits, self.latest) {
            changed.notify_all();
        }
    }

    /// The clock's value at `instant`: the latest message's, less the wall time between
    /// `instant` and that message's arrival at the measured pace.
    pub(super) fn time_at(&self, instant: Instant) -> Time {
        let (Some(heard), Some(rate)) = (self.heard, self.pace.rate()) else {
            return self.latest;
        };
        let before = heard.saturating_duration_since(instant).as_nanos() as f64;
        let back = (before * rate.max(0.0)).min(i64::MAX as f64) as i64;
        Time::from_nanos(self.latest.nanos().saturating_sub(back).max(0))
    }

    /// Rings the bell of every thread waiting on the sockets.
    pub(super) fn ring_all(&self) {
        for w in &self.waits {
            Bell::ring(w.bell);
        }
    }

    /// How long a wait for `seen + gap` may sleep before it looks again: until half a
    /// message period before the deadline's message is due ([`Timing::Exact`], then it
    /// watches the sockets for it), or half a period after ([`Timing::Relaxed`], when the
    /// message should be queued already). `None`: watch the sockets now (the deadline is
    /// near, or the clock's pace is not known: paused, just started).
    pub(super) fn sleep_before(
        &self,
        seen: Time,
        gap: Duration,
        timing: Timing,
    ) -> Option<Duration> {
        if is_zero(self.latest) {
            return None;
        }
        let ahead = due(seen, gap).saturating_sub(self.latest.nanos());
        let since = self.heard.map_or(Duration::ZERO, |h| h.elapsed());
        self.pace.sleep_before(ahead, since, timing)
    }
}

/// The clock's pace: simulated seconds per wall second over the last two seconds, and the
/// step between messages.
#[derive(Default)]
struct Pace {
    /// (when read, time), one per 100 ms at most, the last two seconds.
    samples: VecDeque<(Instant, Time)>,
    last: Option<Time>,
    /// Simulated nanoseconds between the last two messages.
    step: Option<i64>,
}

impl Pace {
    const SPACING: Duration = Duration::from_millis(100);
    const WINDOW: Duration = Duration::from_secs(2);
    /// The shortest span the pace is measured over.
    const SPAN: Duration = Duration::from_millis(300);

    /// The times read at `at`, in order: the last of them is the freshest sample.
    fn observe(&mut self, at: Instant, times: &[Time]) {
        for &t in times {
            if let Some(last) = self.last {
                let step = t.nanos() - last.nanos();
                if step > 0 {
                    self.step = Some(step);
                }
            }
            self.last = Some(t);
        }
        let Some(t) = self.last else {
            return;
        };
        if self
            .samples
            .back()
            .is_none_or(|(when, _)| at.duration_since(*when) >= Self::SPACING)
        {
            self.samples.push_back((at, t));
        }
        while self.samples.len() > 2
            && self
                .samples
                .front()
                .is_some_and(|(when, _)| at.duration_since(*when) > Self::WINDOW)
        {
            self.samples.pop_front();
        }
    }

    /// Simulated seconds per wall second, once measured over [`Self::SPAN`].
    fn rate(&self) -> Option<f64> {
        let ((a, ta), (b, tb)) = (self.samples.front()?, self.samples.back()?);
        let wall = b.duration_since(*a);
        (wall >= Self::SPAN).then(|| (tb.nanos() - ta.nanos()) as f64 / wall.as_nanos() as f64)
    }

    /// `ahead_ns` of simulated time past the latest message, which arrived `since` ago.
    fn sleep_before(&self, ahead_ns: i64, since: Duration, timing: Timing) -> Option<Duration> {
        let rate = self.rate().filter(|r| *r > 1e-3)?;
        let step = self.step? as f64;
        // Wake half a message period before the message that reaches the deadline is due,
        // or (relaxed) half a period after it: late enough that jitter of the sender's
        // timer and of the wake-up rarely leaves it still on its way, early enough that
        // the next message has not come yet, so the time read is the deadline's own.
        let offset = match timing {
            Timing::Exact => -0.5 * step,
            Timing::Relaxed => 0.5 * step,
        };
        let wall_ns = (ahead_ns as f64 + offset) / rate - since.as_nanos() as f64;
        (wall_ns > 1e6).then(|| Duration::from_nanos(wall_ns.min(1e12) as u64))
    }
}

/// This thread's bell ([`Bell`]), rung to interrupt its wait on the sockets; -1 where the
/// kernel gave none (its waits end at their nap).
pub(super) fn bell_of_this_thread() -> RawFd {
    thread_local! {
        static BELL: Bell = Bell::new();
    }
    BELL.with(Bell::fd)
}

/// Waits up to `within` for a message on any `/clock` link or this thread's bell
/// (releasing `reading` meanwhile), and returns the lock.
pub(super) fn watch_sockets<'a>(
    lock: &'a Mutex<Reading>,
    reading: std::sync::MutexGuard<'a, Reading>,
    bell: RawFd,
    within: Duration,
) -> std::sync::MutexGuard<'a, Reading> {
    let mut fds: Vec<libc::pollfd> = reading
        .links
        .fds()
        .into_iter()
        .chain((bell >= 0).then_some(bell))
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    drop(reading);
    let ms = within.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: `fds` is a valid array of its length for the call.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    Bell::clear(bell);
    crate::Lock::locked(lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: i64) -> Time {
        Time::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn the_pace_is_measured_and_a_wait_sleeps_until_half_a_step_before_its_message() {
        let mut pace = Pace::default();
        let start = Instant::now();
        // 100 Hz at real time for 0.5 s.
        for i in 0..=50 {
            pace.observe(start + Duration::from_millis(i * 10), &[t(i as i64 * 10)]);
        }
        let rate = pace.rate().unwrap();
        assert!((rate - 1.0).abs() < 1e-6, "{rate}");
        // 50 ms ahead: sleep 45 ms, then watch the sockets for the 50 ms message.
        assert_eq!(
            pace.sleep_before(50_000_000, Duration::ZERO, Timing::Exact),
            Some(Duration::from_millis(45))
        );
        // Relaxed: half a step after the message is due, in one sleep.
        assert_eq!(
            pace.sleep_before(50_000_000, Duration::ZERO, Timing::Relaxed),
            Some(Duration::from_millis(55))
        );
        // The next message reaches it: watch now.
        assert_eq!(
            pace.sleep_before(10_000_000, Duration::ZERO, Timing::Exact),
            Some(Duration::from_millis(5))
        );
        assert_eq!(
            pace.sleep_before(5_000_000, Duration::ZERO, Timing::Exact),
            None
        );
        // Woken 5 ms before the 50 ms message, the 40 ms one read (it came 5 ms ago):
        // watch the sockets for the next one, exact; relaxed, sleep 10 ms more.
        let ms = Duration::from_millis;
        assert_eq!(pace.sleep_before(10_000_000, ms(5), Timing::Exact), None);
        assert_eq!(
            pace.sleep_before(10_000_000, ms(5), Timing::Relaxed),
            Some(ms(10))
        );
        // Relaxed, woken 5 ms after the 50 ms message was due, which is late (the 40 ms one
        // came 15 ms ago): watch for it, as exact does.
        assert_eq!(pace.sleep_before(10_000_000, ms(15), Timing::Relaxed), None);
    }

    #[test]
    fn an_unmeasured_or_stopped_clock_is_watched_on_the_sockets() {
        let mut pace = Pace::default();
        let start = Instant::now();
        assert_eq!(
            pace.sleep_before(50_000_000, Duration::ZERO, Timing::Exact),
            None,
            "no samples"
        );
        pace.observe(start, &[t(0)]);
        pace.observe(start + Duration::from_millis(100), &[t(100)]);
        assert_eq!(
            pace.sleep_before(50_000_000, Duration::ZERO, Timing::Exact),
            None,
            "too short a span"
        );
        // Paused: the time stands still for a second.
        let mut paused = Pace::default();
        for i in 0..=10 {
            paused.observe(start + Duration::from_millis(i * 100), &[t(500)]);
        }
        assert_eq!(
            paused.sleep_before(50_000_000, Duration::ZERO, Timing::Exact),
            None
        );
    }

    #[test]
    fn the_time_at_an_earlier_arrival_goes_back_at_the_pace() {
        let start = Instant::now();
        // No pace yet: the latest value.
        let mut r = Reading {
            latest: t(1000),
            ..Default::default()
        };
        assert_eq!(r.time_at(start), t(1000));
        // At 2× real time, the last message (2000 ms) arrived 1 s of wall after the first.
        let times: Vec<Time> = (0..=100).map(|i| t(i * 20)).collect();
        for (i, &time) in times.iter().enumerate() {
            r.pace
                .observe(start + Duration::from_millis(i as u64 * 10), &[time]);
        }
        r.latest = t(2000);
        r.heard = Some(start + Duration::from_secs(1));
        // 100 ms of wall before the last arrival: 200 ms of sim time before it.
        let at = r.time_at(start + Duration::from_millis(900));
        assert!((at.nanos() - t(1800).nanos()).abs() < 1_000_000, "{at:?}");
        // After the last arrival: the latest value (the clock has not said more).
        assert_eq!(r.time_at(start + Duration::from_secs(2)), t(2000));
    }

    #[test]
    fn at_twenty_times_real_time_the_sleep_shrinks_with_the_pace() {
        let mut pace = Pace::default();
        let start = Instant::now();
        // 100 Hz of sim time at 20×: a message every 0.5 ms of wall time.
        for i in 0..=1000 {
            pace.observe(start + Duration::from_micros(i * 500), &[t(i as i64 * 10)]);
        }
        // 50 ms of sim ahead is 2.5 ms of wall: sleep 2.25 ms.
        let sleep = pace
            .sleep_before(50_000_000, Duration::ZERO, Timing::Exact)
            .unwrap();
        assert!((sleep.as_secs_f64() - 0.00225).abs() < 1e-5, "{sleep:?}");
    }
}
