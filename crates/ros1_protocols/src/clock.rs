//! ROS time: the latest `/clock` under `/use_sim_time`, the wall clock otherwise, and
//! waits that end when that clock moves.
//!
//! A loop that sleeps on a deadline of ROS time (as rosrust's `Rate` does) never wakes when
//! a simulator resets its clock, and cannot notice shutdown while `/clock` is paused. Here
//! a wait ([`wait_for_clock_or`]) ends at the clock message that reaches its deadline, on a
//! [`Waker`], or on shutdown within [`MAX_NAP`]. `/clock` is read when the time is asked
//! for, not as each message arrives ([`on_demand`] says how).

use crate::msgs::rosgraph_msgs::Clock;
use crate::Lock;
use rosrust::Time;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

mod on_demand;

use on_demand::{bell_of_this_thread, clock_reached, Reading, Wait};
pub use on_demand::{is_zero, Timing};

/// The `/clock` links, what they last gave, and a condition variable notified when that
/// ends a wait (or a [`Waker`] rings).
struct SimClock {
    reading: Mutex<Reading>,
    changed: Condvar,
}

static SIM: OnceLock<Option<SimClock>> = OnceLock::new();

/// `None` when the node runs on wall time. Initialised on first use, after `this_node::init`;
/// the first call under sim time also subscribes to `/clock`.
fn sim_clock() -> Option<&'static SimClock> {
    static SUBSCRIPTION: Mutex<Option<crate::direct::DirectSubscriber>> = Mutex::new(None);
    let clock = SIM
        .get_or_init(|| {
            uses_sim_time().then(|| SimClock {
                reading: Mutex::new(Reading::default()),
                changed: Condvar::new(),
            })
        })
        .as_ref()?;
    let mut sub = SUBSCRIPTION.locked();
    if sub.is_none() {
        // Read when the time is asked for (see `on_demand`): no thread wakes for a
        // message that no one looks at.
        *sub = crate::this_node::get()
            .and_then(|node| {
                crate::direct::subscribe_reading::<Clock>(
                    &node,
                    "/clock",
                    |_| {},
                    |link, stream, stop| {
                        let c = SIM.get().and_then(Option::as_ref);
                        match c {
                            Some(c) => crate::lazy::keep_link(
                                &c.reading,
                                |r| &mut r.links,
                                |r| r.drain(&c.changed),
                                link,
                                stream,
                                stop,
                                crate::lazy::Keep::LAZY,
                            ),
                            None => std::io::Error::other("not under sim time"),
                        }
                    },
                )
            })
            .map_err(|e| tracing::error!("cannot subscribe to /clock: {e}"))
            .ok();
    }
    Some(clock)
}

fn uses_sim_time() -> bool {
    crate::this_node::param("/use_sim_time")
        .and_then(|p| p.get::<bool>().ok())
        .unwrap_or(false)
}

/// Under sim time, how long ago (wall time) the last `/clock` message arrived; `None`
/// under wall time or before the first message.
pub fn clock_silence() -> Option<Duration> {
    let c = sim_clock()?;
    let mut r = c.reading.locked();
    r.drain(&c.changed);
    let heard = r.heard;
    heard.map(|t| t.elapsed())
}

/// True when the node follows `/clock`.
pub fn is_sim_time() -> bool {
    sim_clock().is_some()
}

/// ROS now: the latest `/clock` under sim time (zero before the first one), else wall time.
pub fn now() -> Time {
    match sim_clock() {
        Some(c) => {
            let mut r = c.reading.locked();
            r.drain(&c.changed);
            r.latest
        }
        None => crate::this_node::wall_now(),
    }
}

/// ROS time at `instant`, a moment in the recent past (a message's arrival, read
/// later): under sim time, the `/clock` value then, from the last message's arrival and
/// the clock's measured pace (standing still while the pace is not known); under wall
/// time, the wall clock then.
pub fn at(instant: std::time::Instant) -> Time {
    match sim_clock() {
        Some(c) => {
            let mut r = c.reading.locked();
            r.drain(&c.changed);
            r.time_at(instant)
        }
        None => {
            let ago = instant.elapsed().as_nanos().min(i64::MAX as u128) as i64;
            Time::from_nanos(
                crate::this_node::wall_now()
                    .nanos()
                    .saturating_sub(ago)
                    .max(0),
            )
        }
    }
}

/// Wakes every wait in this module (the node is ending: its loops see that at once).
pub fn wake_all() {
    if let Some(c) = SIM.get().and_then(Option::as_ref) {
        let r = c.reading.locked();
        c.changed.notify_all();
        r.ring_all();
    }
    let _guard = WALL.0.locked();
    WALL.1.notify_all();
}

/// Under wall time, what a [`Waker`] notifies (under sim time it is the clock's own).
static WALL: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());

/// Blocks until the ROS clock reaches `gap` past `seen` (the time the caller last read;
/// under sim time) or jumps back from it, until a [`Waker`] wakes the caller, or for the
/// wall time [`nap`] allows, whichever is first. Both are checked under the lock the
/// clock's update and a waker take, so neither can slip in between the caller's check and
/// the wait: a clock message that already reached the deadline returns at once. Clock
/// messages short of the deadline do not wake the caller (a node ticking at 20 Hz under a
/// 100 Hz clock wakes for its ticks, not for every message): the wait is registered, and
/// the subscription notifies only when a message ends one.
///
/// `timing` says how closely the wait ends on that message under sim time ([`Timing`]);
/// under wall time it ends on the deadline.
pub fn wait_for_clock_or(gap: Duration, seen: Time, timing: Timing, ready: impl Fn() -> bool) {
    match sim_clock() {
        Some(c) => {
            static NEXT: AtomicU64 = AtomicU64::new(0);
            let id = NEXT.fetch_add(1, Ordering::Relaxed);
            let bell = bell_of_this_thread();
            let started = std::time::Instant::now();
            let mut r = c.reading.locked();
            r.waits.push(Wait {
                id,
                seen,
                gap,
                bell,
            });
            loop {
                r.drain(&c.changed);
                let left = nap(true, gap).saturating_sub(started.elapsed());
                if ready() || clock_reached(r.latest, seen, gap) || left.is_zero() {
                    break;
                }
                r = match r.sleep_before(seen, gap, timing) {
                    Some(sleep) => c
                        .changed
                        .wait_timeout(r, sleep.min(left))
                        .map_or_else(|e| e.into_inner().0, |(r, _)| r),
                    None => on_demand::watch_sockets(&c.reading, r, bell, left),
                };
            }
            r.waits.retain(|w| w.id != id);
        }
        None => {
            let guard = WALL.0.locked();
            if !ready() {
                let _ = WALL.1.wait_timeout(guard, nap(false, gap));
            }
        }
    }
}

/// What a thread that waits on sockets of its own ([`crate::polled::PolledGroup::run`])
/// waits for until the ROS clock reaches `gap` past `seen`: at most [`Sleep::within`] of
/// wall time, or until one of [`Sleep::watch`] (the `/clock` links) is readable.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Sleep {
    /// The longest to sleep (zero: the clock is there already).
    pub within: Duration,
    /// Sockets whose next message may reach the time (watched when its arrival is due or
    /// cannot be foreseen).
    pub watch: Vec<std::os::fd::RawFd>,
}

/// [`wait_for_clock_or`]'s wait, described rather than done: how long until ROS time
/// reaches `gap` past `seen` with `timing` (capped at [`MAX_NAP`], so shutdown is seen),
/// and under sim time, whether to watch the `/clock` links for it.
pub fn sleep_for(gap: Duration, seen: Time, timing: Timing) -> Sleep {
    match sim_clock() {
        Some(c) => {
            let mut r = c.reading.locked();
            r.drain(&c.changed);
            if clock_reached(r.latest, seen, gap) {
                return Sleep::default();
            }
            match r.sleep_before(seen, gap, timing) {
                Some(sleep) => Sleep {
                    within: sleep.min(MAX_NAP),
                    watch: Vec::new(),
                },
                None => Sleep {
                    within: MAX_NAP,
                    watch: r.links.fds(),
                },
            }
        }
        None => Sleep {
            within: nap(false, gap),
            watch: Vec::new(),
        },
    }
}

fn wait_for_clock(gap: Duration, seen: Time) {
    wait_for_clock_or(gap, seen, Timing::Exact, || false);
}

/// Wakes a loop waiting in [`wait_for_clock_or`] from another thread, e.g. when an action
/// goal or cancel arrives, so a loop reacts at once instead of at its next tick.
#[derive(Clone, Debug, Default)]
pub struct Waker(Arc<AtomicBool>);

impl Waker {
    /// Sets the event and wakes the waiting ticker.
    pub fn wake(&self) {
        match sim_clock() {
            Some(c) => {
                let r = c.reading.locked();
                self.0.store(true, Ordering::SeqCst);
                c.changed.notify_all();
                r.ring_all();
            }
            None => {
                let _guard = WALL.0.locked();
                self.0.store(true, Ordering::SeqCst);
                WALL.1.notify_all();
            }
        }
    }

    /// Whether the event is set (without taking it).
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Takes the event: whether it was set.
    pub fn take(&self) -> bool {
        self.0.swap(false, Ordering::SeqCst)
    }
}

/// Blocks until ROS time is non-zero (the first `/clock` under sim time). Returns `false`
/// if the node shuts down first.
pub fn wait_for_valid_time() -> bool {
    while is_zero(now()) {
        if !crate::this_node::is_ok() {
            return false;
        }
        wait_for_clock(Duration::from_nanos(1), Time::new());
    }
    true
}

/// Longest wall-clock nap between checks for shutdown.
pub const MAX_NAP: Duration = Duration::from_millis(100);

/// Wall time to sleep for a wake-up `gap` of ROS time ahead, at most [`MAX_NAP`] (so
/// shutdown is noticed).
///
/// Under wall time, the gap. When ROS time moves only with our `/clock` messages
/// (`clock_notifies`), the one that reaches the deadline ends the wait, and the gap in
/// simulated time says nothing about wall time: sleep until that message. Sleeping for the gap instead was a busy
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

#[cfg(test)]
mod tests {
    use super::on_demand::ends_a_wait;
    use super::*;

    #[test]
    fn a_clock_message_that_reaches_the_deadline_ends_the_wait_and_earlier_ones_do_not() {
        let t = |ms: i64| Time::from_nanos(ms * 1_000_000);
        let gap = Duration::from_millis(50);
        // Read at 10 ms, due at 60 ms: 20 ms is short of it, 60 ms and later reach it.
        assert!(!clock_reached(t(20), t(10), gap));
        assert!(clock_reached(t(60), t(10), gap));
        assert!(clock_reached(t(70), t(10), gap));
        // A deadline 1 ns ahead: the next message reaches it.
        assert!(clock_reached(t(11), t(10), Duration::from_nanos(1)));
        // No message yet: wait.
        assert!(!clock_reached(Time::new(), t(10), gap));
        // A simulator reset moved the clock back: that ends the wait too.
        assert!(clock_reached(t(5), t(10), gap));
    }

    #[test]
    fn a_clock_message_wakes_the_waiters_only_when_it_ends_one_of_their_waits() {
        let t = |ms: i64| Time::from_nanos(ms * 1_000_000);
        let wait = |id, seen, gap_ms| Wait {
            id,
            seen,
            gap: Duration::from_millis(gap_ms),
            bell: -1,
        };
        // No one waits: no wake-up.
        assert!(!ends_a_wait(&[], t(100)));
        // A 20 Hz tick read at 0 ms (due at 50 ms) and a hold-off read at 0 ms (due at
        // 1000 ms): the 100 Hz messages at 10..40 ms wake no one, 50 ms does.
        let waits = [wait(1, t(0), 50), wait(2, t(0), 1000)];
        for ms in [10, 20, 30, 40] {
            assert!(!ends_a_wait(&waits, t(ms)), "{ms} ms");
        }
        assert!(ends_a_wait(&waits, t(50)));
        // A reset (the clock moved back) ends every wait.
        assert!(ends_a_wait(&[wait(3, t(500), 50)], t(100)));
    }

    #[test]
    fn under_sim_time_a_wait_naps_until_the_clock_moves_not_for_the_simulated_gap() {
        // A hold-off deadline 1 ns after the current clock value: under sim time only the
        // next /clock message can reach it (and ends the nap); no 1 ns busy loop.
        let gap = Duration::from_nanos(1);
        assert_eq!(nap(true, gap), MAX_NAP);
        // Under wall time the wall clock itself reaches it.
        assert_eq!(nap(false, gap), Duration::from_nanos(1));
        // Far deadlines are capped, so shutdown is noticed.
        assert_eq!(nap(false, Duration::from_secs(45)), MAX_NAP);
        assert_eq!(nap(false, Duration::ZERO), Duration::ZERO);
    }
}
