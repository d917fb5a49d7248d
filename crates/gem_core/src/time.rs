//! Time as the core sees it: a point on some clock, passed in by the caller.
//!
//! The core never reads a clock. A node converts ROS time (wall or `/clock`) into a
//! [`Time`] and hands it to every time-dependent function, so unit tests drive time
//! explicitly and sim time works without special cases. Durations are plain
//! [`std::time::Duration`]s.

use std::fmt;
use std::time::Duration;

/// A point in time, in nanoseconds since the clock's epoch (the Unix epoch for wall time,
/// the simulation start for sim time). Zero means "unset", as a zero ROS stamp does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time {
    nanos: u64,
}

impl Time {
    /// The zero time, which ROS uses for "no stamp".
    pub const ZERO: Time = Time { nanos: 0 };

    /// Builds a time from nanoseconds since the epoch.
    pub const fn from_nanos(nanos: u64) -> Self {
        Time { nanos }
    }

    /// Builds a time from seconds and nanoseconds, as in a ROS stamp.
    pub const fn from_sec_nsec(sec: u32, nsec: u32) -> Self {
        Time {
            nanos: sec as u64 * 1_000_000_000 + nsec as u64,
        }
    }

    /// Builds a time from floating-point seconds (test convenience; negative or NaN → zero).
    pub fn from_secs_f64(secs: f64) -> Self {
        if secs.is_finite() && secs > 0.0 {
            Time::from_nanos((secs * 1e9).round() as u64)
        } else {
            Time::ZERO
        }
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.nanos
    }

    /// Seconds since the epoch as a float (for display and plots).
    pub fn as_secs_f64(self) -> f64 {
        self.nanos as f64 * 1e-9
    }

    /// True for the zero ("unset") time.
    pub const fn is_zero(self) -> bool {
        self.nanos == 0
    }

    /// Time elapsed from `earlier` to `self`, or `None` if `earlier` is later than `self`
    /// (a clock that went backwards must be handled by the caller, not hidden).
    pub fn since(self, earlier: Time) -> Option<Duration> {
        self.nanos
            .checked_sub(earlier.nanos)
            .map(Duration::from_nanos)
    }

    /// Time elapsed from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Time) -> Duration {
        self.since(earlier).unwrap_or(Duration::ZERO)
    }

    /// `self − d`, saturating at zero.
    pub fn saturating_sub(self, d: Duration) -> Time {
        let d = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Time::from_nanos(self.nanos.saturating_sub(d))
    }

    /// `self + d`, saturating at the end of the representable range.
    pub fn saturating_add(self, d: Duration) -> Time {
        let d = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Time::from_nanos(self.nanos.saturating_add(d))
    }
}

/// The first time after `t` that is a whole number of `period`s from the clock's epoch
/// (`t` itself for a zero period). Periodic tasks that tick on these times share their
/// phase whenever they share a period, in whatever order their processes started: a node
/// whose inputs come from several such tasks gets them at the same moments, not spread
/// over the period, and wakes once for them.
pub fn next_on_grid(t: Time, period: Duration) -> Time {
    let p = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX);
    if p == 0 {
        return t;
    }
    let next = (t.nanos / p).saturating_add(1).saturating_mul(p);
    Time::from_nanos(next)
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:09}",
            self.nanos / 1_000_000_000,
            self.nanos % 1_000_000_000
        )
    }
}

/// Times on a grid, one every `period` from the first time asked about: a periodic task
/// stepped by a caller's clock (a sensor's updates, a node's ticks in a simulation) keeps
/// to the grid without drifting, and skips the times it missed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    period: Duration,
    next: Option<Time>,
}

impl Grid {
    /// A grid of `period` (zero: every time asked about is due).
    pub fn new(period: Duration) -> Self {
        Grid { period, next: None }
    }

    /// Whether a time of the grid has come by `now` (the first call's always has); if so,
    /// the next one is the first of the grid after `now`.
    pub fn due(&mut self, now: Time) -> bool {
        if self.next.is_some_and(|t| now < t) {
            return false;
        }
        let mut next = self.next.unwrap_or(now).saturating_add(self.period);
        while next <= now && !self.period.is_zero() {
            next = next.saturating_add(self.period);
        }
        self.next = Some(next);
        true
    }

    /// Starts afresh: the next call is due and begins a new grid.
    pub fn reset(&mut self) {
        self.next = None;
    }
}

/// Wall time, s, that ROS time may stand still before a node under sim time says its
/// clock has stopped (the simulator, or the link to its computer, is gone): the default
/// of the nodes' `~clock_stall_s`.
pub const CLOCK_STALL_S: f64 = 2.0;

/// A stream of messages expected at least every `timeout` (a heartbeat): silent once
/// nothing has arrived for longer. Time is the caller's (ROS time in the nodes).
///
/// A watchdog that is `armed` from the start counts a stream that never arrived as silent
/// from `start`; one that is not arms itself with the first message, for a node that may
/// run without that stream at all (a controller driven without a state manager).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watchdog {
    timeout: std::time::Duration,
    last: Option<Time>,
}

impl Watchdog {
    /// Armed at `start`: silent `timeout` after it unless a message arrives.
    pub fn armed(timeout: std::time::Duration, start: Time) -> Self {
        Watchdog {
            timeout,
            last: Some(start),
        }
    }

    /// Armed by the first message.
    pub fn on_first_message(timeout: std::time::Duration) -> Self {
        Watchdog {
            timeout,
            last: None,
        }
    }

    /// A message arrived at `at`.
    pub fn feed(&mut self, at: Time) {
        self.last = Some(self.last.map_or(at, |l| l.max(at)));
    }

    /// How long the stream has been silent at `now`, counted from the later of its last
    /// message and `since` (when the caller started to need it, e.g. a goal's start), if
    /// that is longer than the timeout; `None` while it is fresh or not armed. A clock that
    /// went back (a simulator reset) makes it fresh, not silent.
    pub fn silent(&self, now: Time, since: Time) -> Option<std::time::Duration> {
        let from = self.last?.max(since);
        let quiet = now.saturating_since(from);
        (quiet > self.timeout).then_some(quiet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_on_the_grid_are_shared_whenever_a_task_starts() {
        let period = Duration::from_millis(50);
        // Two tasks started 10 ms and 37 ms into a period meet at the same next tick.
        let a = next_on_grid(Time::from_secs_f64(12.01), period);
        let b = next_on_grid(Time::from_secs_f64(12.037), period);
        assert_eq!(a, Time::from_secs_f64(12.05));
        assert_eq!(a, b);
        // A time on the grid is followed by the next one, never by itself.
        assert_eq!(next_on_grid(a, period), Time::from_secs_f64(12.1));
        // A period that does not divide a second evenly still gives one grid for all.
        let third = Duration::from_nanos(333_333_333);
        assert_eq!(
            next_on_grid(Time::from_nanos(1_000_000_001), third),
            Time::from_nanos(1_333_333_332)
        );
        assert_eq!(next_on_grid(a, Duration::ZERO), a);
    }

    #[test]
    fn since_later_is_duration() {
        let a = Time::from_secs_f64(1.5);
        let b = Time::from_secs_f64(3.0);
        assert_eq!(b.since(a), Some(Duration::from_millis(1500)));
    }

    #[test]
    fn since_earlier_is_none() {
        let a = Time::from_secs_f64(1.5);
        let b = Time::from_secs_f64(3.0);
        assert_eq!(a.since(b), None);
        assert_eq!(a.saturating_since(b), Duration::ZERO);
    }

    #[test]
    fn sec_nsec_roundtrip_and_display() {
        let t = Time::from_sec_nsec(12, 5);
        assert_eq!(t.as_nanos(), 12_000_000_005);
        assert_eq!(t.to_string(), "12.000000005");
    }

    #[test]
    fn from_secs_f64_rejects_nan_and_negative() {
        assert!(Time::from_secs_f64(f64::NAN).is_zero());
        assert!(Time::from_secs_f64(-1.0).is_zero());
        assert!(Time::from_secs_f64(f64::INFINITY).is_zero());
    }

    #[test]
    fn saturating_add_does_not_overflow() {
        let t = Time::from_nanos(u64::MAX - 1);
        assert_eq!(
            t.saturating_add(Duration::from_secs(5)).as_nanos(),
            u64::MAX
        );
    }

    #[test]
    fn a_watchdog_is_silent_only_past_its_timeout_from_the_later_of_message_and_need() {
        let t = |ms: u64| Time::from_nanos(ms * 1_000_000);
        let timeout = std::time::Duration::from_millis(500);
        let mut w = Watchdog::armed(timeout, t(1000));
        // Never fed: silent from the start.
        assert_eq!(w.silent(t(1500), t(0)), None);
        assert_eq!(
            w.silent(t(1600), t(0)),
            Some(std::time::Duration::from_millis(600))
        );
        w.feed(t(1550));
        assert_eq!(w.silent(t(1600), t(0)), None);
        // A need that began after the last message counts from the need.
        assert_eq!(w.silent(t(2100), t(2000)), None);
        assert!(w.silent(t(2600), t(2000)).is_some());
        // A message older than the last one does not wind it back.
        w.feed(t(100));
        assert!(w.silent(t(2100), t(0)).is_some());
        // The clock went back (a simulator reset): fresh, not silent.
        assert_eq!(w.silent(t(10), t(0)), None);
    }

    #[test]
    fn a_watchdog_armed_by_the_first_message_is_never_silent_before_it() {
        let t = |ms: u64| Time::from_nanos(ms * 1_000_000);
        let mut w = Watchdog::on_first_message(std::time::Duration::from_millis(500));
        assert_eq!(w.silent(t(100_000), t(0)), None);
        w.feed(t(100_000));
        assert!(w.silent(t(100_501), t(0)).is_some());
    }

    #[test]
    fn a_grid_keeps_its_times_and_skips_the_missed_ones() {
        let t = |ms: u64| Time::from_nanos(ms * 1_000_000);
        let mut g = Grid::new(Duration::from_millis(100));
        let due: Vec<u64> = [5, 50, 104, 105, 199, 205, 530, 600, 605]
            .into_iter()
            .filter(|ms| g.due(t(*ms)))
            .collect();
        // Times 105, 205, 305 (missed), 405 (missed), 505, 605.
        assert_eq!(due, [5, 105, 205, 530, 605]);
        g.reset();
        assert!(g.due(t(606)));
        assert!(!g.due(t(705)));
        assert!(g.due(t(706)));
    }

    #[test]
    fn a_grid_of_zero_is_due_every_time() {
        let mut g = Grid::new(Duration::ZERO);
        let t = Time::from_secs_f64(1.0);
        assert!(g.due(t) && g.due(t) && g.due(t.saturating_add(Duration::from_nanos(1))));
    }
}
