//! ROS time for the nodes: conversions to and from core time, `now()`, and a ticker.
//!
//! Nodes read time only through [`now`], which follows `/clock` when `/use_sim_time` is set
//! and the wall clock otherwise. rosrust's own `Rate` is not used: it sleeps on a deadline
//! that never arrives when a simulator resets its clock, and it cannot notice shutdown while
//! `/clock` is paused. [`Ticker`] wakes on every `/clock` message (or a short wall sleep),
//! re-arms when the clock jumps backwards, and returns `false` once the node shuts down.

use crate::Lock;
use gem_core::time::Time;
use gem_msgs::rosgraph_msgs::Clock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

/// Converts a ROS stamp to core time.
pub fn to_core(t: rosrust::Time) -> Time {
    Time::from_sec_nsec(t.sec, t.nsec)
}

/// Converts core time to a ROS stamp.
pub fn to_ros(t: Time) -> rosrust::Time {
    rosrust::Time::from_nanos(t.as_nanos() as i64)
}

/// The latest `/clock` value, and a condition variable notified on each update.
struct SimClock {
    latest: Mutex<Time>,
    changed: Condvar,
    /// When our subscription last received a `/clock` message.
    heard: Mutex<Option<std::time::Instant>>,
}

static SIM: OnceLock<Option<SimClock>> = OnceLock::new();

/// `None` when the node runs on wall time. Initialised on first use, after `rosrust::init`;
/// the first call under sim time also subscribes to `/clock`.
fn sim_clock() -> Option<&'static SimClock> {
    static SUBSCRIPTION: Mutex<Option<crate::protocols::direct::DirectSubscriber>> =
        Mutex::new(None);
    let clock = SIM
        .get_or_init(|| {
            uses_sim_time().then(|| SimClock {
                latest: Mutex::new(Time::ZERO),
                changed: Condvar::new(),
                heard: Mutex::new(None),
            })
        })
        .as_ref()?;
    let mut sub = SUBSCRIPTION.locked();
    if sub.is_none() {
        // A direct subscription: a deadline that a `/clock` message passes (a hold-off
        // window's end) is seen on the thread that read the message, not after rosrust's
        // fan-out and callback threads.
        *sub = crate::protocols::direct::subscribe("/clock", |m: Clock, _| {
            if let Some(c) = SIM.get().and_then(Option::as_ref) {
                *c.heard.locked() = Some(std::time::Instant::now());
                *c.latest.locked() = to_core(m.clock);
                c.changed.notify_all();
            }
        })
        .map_err(|e| tracing::error!("cannot subscribe to /clock: {e}"))
        .ok();
    }
    Some(clock)
}

fn uses_sim_time() -> bool {
    rosrust::param("/use_sim_time")
        .and_then(|p| p.get::<bool>().ok())
        .unwrap_or(false)
}

/// Under sim time, how long ago (wall time) the last `/clock` message arrived; `None`
/// under wall time or before the first message.
pub fn clock_silence() -> Option<Duration> {
    let heard = *sim_clock()?.heard.locked();
    heard.map(|t| t.elapsed())
}

/// True when the node follows `/clock`.
pub fn is_sim_time() -> bool {
    sim_clock().is_some()
}

/// ROS now: the latest `/clock` under sim time (zero before the first one), else wall time.
///
/// Our `/clock` subscription links to the clock's publisher a moment after rosrust's own
/// (opened at `init`), and a latched clock message (a paused simulator) may have reached
/// only rosrust's. Until ours has seen a message, rosrust's sim clock is the answer.
pub fn now() -> Time {
    match sim_clock() {
        Some(c) => {
            let ours = *c.latest.locked();
            if ours.is_zero() {
                to_core(rosrust::now())
            } else {
                ours
            }
        }
        None => to_core(rosrust::now()),
    }
}

/// Under wall time, what a [`Waker`] notifies (under sim time it is the clock's own).
static WALL: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());

/// Blocks until the ROS clock moves on from `seen` (the time the caller last read; under
/// sim time), until a [`Waker`] wakes the caller, or for the wall time [`nap`] allows for
/// a wake-up `gap` of ROS time ahead, whichever is first. Both are checked under the lock
/// the clock's update and a waker take, so neither can slip in between the caller's check
/// and the wait: a clock message that arrived after the caller read `seen` returns at once.
fn wait_for_clock_or(gap: Duration, seen: Time, ready: impl Fn() -> bool) {
    match sim_clock() {
        Some(c) => {
            let guard = c.latest.locked();
            if !ready() && !clock_moved(*guard, seen) {
                // Zero: no message of ours yet, `now` follows rosrust's clock, which does
                // not notify us.
                let notifies = !guard.is_zero();
                let _ = c.changed.wait_timeout(guard, nap(notifies, gap));
            }
        }
        None => {
            let guard = WALL.0.locked();
            if !ready() {
                let _ = WALL.1.wait_timeout(guard, nap(false, gap));
            }
        }
    }
}

fn wait_for_clock(gap: Duration, seen: Time) {
    wait_for_clock_or(gap, seen, || false);
}

/// Whether our `/clock` value `latest` differs from the `seen` time a caller read (zero:
/// no message yet, which [`now`] answers from rosrust's clock: not a move).
fn clock_moved(latest: Time, seen: Time) -> bool {
    !latest.is_zero() && latest != seen
}

/// Wakes a [`Ticker`] (with [`Wake::Event`]) from another thread, e.g. when an action
/// goal or cancel arrives, so a loop reacts at once instead of at its next tick.
#[derive(Clone, Debug, Default)]
pub struct Waker(Arc<AtomicBool>);

impl Waker {
    /// Sets the event and wakes the waiting ticker.
    pub fn wake(&self) {
        match sim_clock() {
            Some(c) => {
                let _guard = c.latest.locked();
                self.0.store(true, Ordering::SeqCst);
                c.changed.notify_all();
            }
            None => {
                let _guard = WALL.0.locked();
                self.0.store(true, Ordering::SeqCst);
                WALL.1.notify_all();
            }
        }
    }

    fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    fn take(&self) -> bool {
        self.0.swap(false, Ordering::SeqCst)
    }
}

/// Blocks until ROS time is non-zero (the first `/clock` under sim time). Returns `false`
/// if the node shuts down first.
pub fn wait_for_valid_time() -> bool {
    while now().is_zero() {
        if !rosrust::is_ok() {
            return false;
        }
        wait_for_clock(MAX_NAP, Time::ZERO);
    }
    true
}

/// A fixed-rate loop on ROS time.
pub struct Ticker {
    period: Duration,
    next: Time,
    last_seen: Time,
    /// Wall time since ROS time last moved, and whether that stall was reported.
    last_advance: std::time::Instant,
    stall_reported: bool,
    stall_limit: Option<Duration>,
    /// The stall is `/clock` falling silent, not ROS time standing still.
    stall_on_silence: bool,
    waker: Option<Waker>,
}

/// Longest wall-clock nap between checks for shutdown.
const MAX_NAP: Duration = Duration::from_millis(100);

impl Ticker {
    /// A ticker firing every `period` of ROS time, first one period from now.
    pub fn new(period: Duration) -> Self {
        let start = now();
        Ticker {
            period,
            next: start.saturating_add(period),
            last_seen: start,
            last_advance: std::time::Instant::now(),
            stall_reported: false,
            stall_limit: None,
            stall_on_silence: false,
            waker: None,
        }
    }

    /// Also wake with [`Wake::Event`] when `waker` is woken (the periodic ticks keep
    /// their schedule).
    pub fn with_waker(mut self, waker: Waker) -> Self {
        self.waker = Some(waker);
        self
    }

    /// Also wake with [`Wake::Stalled`], once per stall, when ROS time has not moved for
    /// `limit` of *wall* time: under sim time a dead simulator stops `/clock`, and a
    /// node whose every timeout is in ROS time would otherwise wait forever.
    pub fn with_stall_limit(mut self, limit: Duration) -> Self {
        self.stall_limit = Some(limit);
        self
    }

    /// Also wake with [`Wake::Stalled`], once per silence, when under sim time no `/clock`
    /// message has arrived for `limit` of wall time: the clock's source, or the link to
    /// its computer, is gone. Unlike [`Ticker::with_stall_limit`], a source that holds
    /// time still but keeps publishing it (a replayer waiting for its consumers) is no
    /// stall.
    pub fn with_clock_silence_limit(mut self, limit: Duration) -> Self {
        self.stall_limit = Some(limit);
        self.stall_on_silence = true;
        self
    }

    /// A ticker at `rate_hz` (must be positive and finite; validated by the caller).
    pub fn from_rate(rate_hz: f64) -> Self {
        Ticker::new(Duration::from_secs_f64(1.0 / rate_hz))
    }

    /// Blocks until the next tick and returns its ROS time, or `None` on shutdown.
    pub fn wait(&mut self) -> Option<Time> {
        loop {
            match self.wait_or_until(None)? {
                Wake::Tick(now) => return Some(now),
                Wake::Deadline(_) | Wake::Stalled(_) | Wake::Event(_) => continue,
            }
        }
    }

    /// Blocks until the next tick or until ROS time passes `deadline`, whichever is first;
    /// `None` on shutdown. A node uses the deadline to act the moment a time-driven rule
    /// can fire (a hold-off window ending) instead of up to one period later.
    pub fn wait_or_until(&mut self, deadline: Option<Time>) -> Option<Wake> {
        loop {
            if !rosrust::is_ok() {
                return None;
            }
            let now = now();
            if now < self.last_seen {
                // A simulator reset: tick at once, so the node reports from the new epoch.
                tracing::warn!(
                    "ROS time jumped back from {} to {now}; re-arming",
                    self.last_seen
                );
                self.next = now;
            }
            if now != self.last_seen {
                self.last_advance = std::time::Instant::now();
                self.stall_reported = false;
            }
            self.last_seen = now;
            if now >= self.next {
                let after = self.next.saturating_add(self.period);
                // Fell more than a period behind (a slow consumer, a clock jump forward):
                // skip the missed ticks rather than firing them back to back.
                self.next = if after <= now {
                    now.saturating_add(self.period)
                } else {
                    after
                };
                // A tick serves any event that arrived meanwhile too.
                if let Some(w) = &self.waker {
                    w.take();
                }
                return Some(Wake::Tick(now));
            }
            if deadline.is_some_and(|d| now >= d) {
                return Some(Wake::Deadline(now));
            }
            if self.waker.as_ref().is_some_and(Waker::take) {
                return Some(Wake::Event(now));
            }
            let stalled_for = if self.stall_on_silence {
                let silence = clock_silence();
                if silence.is_some_and(|s| s < MAX_NAP) {
                    // A message since the last look: a new silence may be reported.
                    self.stall_reported = false;
                }
                silence
            } else {
                Some(self.last_advance.elapsed())
            };
            if !self.stall_reported
                && self
                    .stall_limit
                    .zip(stalled_for)
                    .is_some_and(|(limit, stalled)| stalled >= limit)
            {
                self.stall_reported = true;
                return Some(Wake::Stalled(now));
            }
            let wake_at = deadline.map_or(self.next, |d| d.min(self.next));
            let waker = self.waker.clone();
            wait_for_clock_or(wake_at.saturating_since(now), now, || {
                waker.as_ref().is_some_and(Waker::is_set)
            });
        }
    }
}

/// Wall time to sleep for a wake-up `gap` of ROS time ahead, at most [`MAX_NAP`] (so
/// shutdown is noticed).
///
/// Under wall time, the gap. When ROS time moves only with our `/clock` messages
/// (`clock_notifies`), each of which ends the wait, the gap in simulated time says nothing
/// about wall time: sleep until the clock moves. Sleeping for the gap instead was a busy
/// loop: a deadline just after a clock value (a hold-off window ends 1 ns after its last
/// good stamp plus the window) left 1 ns to wait, over and over, for a whole clock period:
/// one CPU spun at the node's priority before every hold-off fault.
fn nap(clock_notifies: bool, gap: Duration) -> Duration {
    if clock_notifies {
        MAX_NAP
    } else {
        gap.min(MAX_NAP)
    }
}

/// A node's timer loop for time-driven rules, until shutdown. Each round, `catch_up`
/// judges at ROS now, publishes what changed and returns the next deadline *after that
/// now* (one `now` for both, under the node's lock): a deadline the clock jumped past while
/// the loop was busy is then handled, not dropped as "already past". `heartbeat` runs at
/// every periodic tick, and `stalled` when the ticker reports ROS time standing still (see
/// [`Ticker::with_stall_limit`]). Give the ticker a [`Waker`] that inputs wake when they
/// bring a deadline earlier than the one the loop sleeps on.
pub fn deadline_loop(
    mut ticker: Ticker,
    mut catch_up: impl FnMut() -> Option<Time>,
    mut heartbeat: impl FnMut(),
    mut stalled: impl FnMut(Time),
) {
    loop {
        let deadline = catch_up();
        match ticker.wait_or_until(deadline) {
            Some(Wake::Tick(_)) => heartbeat(),
            Some(Wake::Stalled(now)) => stalled(now),
            Some(Wake::Deadline(_) | Wake::Event(_)) => {}
            None => return,
        }
    }
}

/// Why [`Ticker::wait_or_until`] returned, with the ROS time it returned at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// The periodic tick.
    Tick(Time),
    /// ROS time has not moved for the stall limit of wall time (see
    /// [`Ticker::with_stall_limit`]).
    Stalled(Time),
    /// The requested deadline passed before the tick.
    Deadline(Time),
    /// The ticker's [`Waker`] was woken.
    Event(Time),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_message_after_the_callers_read_ends_the_wait_at_once() {
        let t = |ms: u64| Time::from_nanos(ms * 1_000_000);
        // The clock moved on after the caller read 10 ms: no wait (the lost wake-up).
        assert!(clock_moved(t(20), t(10)));
        // Nothing new: wait for the next message.
        assert!(!clock_moved(t(10), t(10)));
        // No message of ours yet (the caller read rosrust's clock): wait as well.
        assert!(!clock_moved(Time::ZERO, t(10)));
        // A simulator reset moved the clock back: that is a move too.
        assert!(clock_moved(t(5), t(10)));
    }

    #[test]
    fn under_sim_time_a_ticker_naps_until_the_clock_moves_not_for_the_simulated_gap() {
        let (now, deadline) = (
            Time::from_nanos(15_000_000_000),
            Time::from_nanos(15_000_000_001),
        );
        let gap = deadline.saturating_since(now);
        // A hold-off deadline 1 ns after the current clock value: under sim time only the
        // next /clock message can reach it (and ends the nap); no 1 ns busy loop.
        assert_eq!(nap(true, gap), MAX_NAP);
        // Under wall time the wall clock itself reaches it.
        assert_eq!(nap(false, gap), Duration::from_nanos(1));
        // Far deadlines are capped, so shutdown is noticed.
        assert_eq!(nap(false, Duration::from_secs(45)), MAX_NAP);
        assert_eq!(nap(false, Duration::ZERO), Duration::ZERO);
    }
}
