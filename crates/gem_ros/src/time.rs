//! ROS time for the nodes, in core time: `now()`, conversions, and a fixed-rate ticker.
//!
//! Nodes read time only through this module. The clock itself (following `/clock` under
//! `/use_sim_time`, waits that end when it moves) is [`ros1_protocols::clock`]; this module
//! gives it in `gem_core` time and adds [`Ticker`], which wakes on every `/clock` message
//! (or a short wall sleep), re-arms when the clock jumps backwards, and returns `None` once
//! the node shuts down.

use gem_core::time::Time;
use ros1_protocols::clock::{self, clock_silence, wait_for_clock_or, Timing, MAX_NAP};
pub use ros1_protocols::clock::{is_sim_time, wait_for_valid_time, Waker};
use std::time::Duration;

/// Converts a ROS stamp to core time.
pub fn to_core(t: rosrust::Time) -> Time {
    Time::from_sec_nsec(t.sec, t.nsec)
}

/// Converts core time to a ROS stamp.
pub fn to_ros(t: Time) -> rosrust::Time {
    rosrust::Time::from_nanos(t.as_nanos() as i64)
}

/// ROS now in core time: the latest `/clock` under sim time (zero before the first one),
/// else wall time (see [`ros1_protocols::clock::now`]).
pub fn now() -> Time {
    to_core(clock::now())
}

/// ROS time at `instant`, a moment in the recent past such as a message's arrival read
/// later (see [`ros1_protocols::clock::at`]).
pub fn at(instant: std::time::Instant) -> Time {
    to_core(clock::at(instant))
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
    /// How closely a periodic tick, and a deadline, follows its `/clock` message.
    tick_timing: Timing,
    deadline_timing: Timing,
}

impl Ticker {
    /// A ticker firing every `period` of ROS time, on the times that are whole multiples
    /// of the period ([`gem_core::time::next_on_grid`]): the suite's nodes with the same
    /// rate tick together, so a node gets their messages in one burst.
    pub fn new(period: Duration) -> Self {
        let start = now();
        Ticker {
            period,
            next: gem_core::time::next_on_grid(start, period),
            last_seen: start,
            last_advance: std::time::Instant::now(),
            stall_reported: false,
            stall_limit: None,
            stall_on_silence: false,
            waker: None,
            tick_timing: Timing::Exact,
            deadline_timing: Timing::Exact,
        }
    }

    /// Under sim time, read each periodic tick in one wake-up, up to half a `/clock`
    /// period of wall time after its message ([`Timing::Relaxed`]) rather than as it
    /// arrives (two wake-ups). The tick's ROS time is the same; deadlines given to
    /// [`Ticker::wait_or_until`] stay exact. For a heartbeat or a status, not a control
    /// loop.
    pub fn relaxed(mut self) -> Self {
        self.tick_timing = Timing::Relaxed;
        self
    }

    /// [`Ticker::relaxed`] for the deadlines given to [`Ticker::wait_or_until`] too: for
    /// a node whose deadlines are a rhythm of its own (look again in 0.1 s), not the
    /// moment a rule fires.
    pub fn relaxed_deadlines(mut self) -> Self {
        self.deadline_timing = Timing::Relaxed;
        self
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
            if !ros1_protocols::this_node::is_ok() {
                return None;
            }
            match self.check(deadline) {
                Ok(wake) => return Some(wake),
                Err(pending) => {
                    let waker = self.waker.clone();
                    wait_for_clock_or(pending.gap, pending.seen, pending.timing, || {
                        waker.as_ref().is_some_and(Waker::is_set)
                    });
                }
            }
        }
    }

    /// [`Ticker::wait_or_until`] without the wait: why it returns now, or what it would
    /// wait for (see [`Ticker::sleep`]).
    pub fn check(&mut self, deadline: Option<Time>) -> Result<Wake, Pending> {
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
            // The next time on the grid after now: a ticker that fell more than a period
            // behind (a slow consumer, a clock jump forward) skips the missed ticks rather
            // than firing them back to back, and one re-armed by a jump back returns to
            // the grid after its first tick.
            self.next = gem_core::time::next_on_grid(now, self.period);
            // A tick serves any event that arrived meanwhile too.
            if let Some(w) = &self.waker {
                w.take();
            }
            return Ok(Wake::Tick(now));
        }
        if deadline.is_some_and(|d| now >= d) {
            return Ok(Wake::Deadline(now));
        }
        if self.waker.as_ref().is_some_and(Waker::take) {
            return Ok(Wake::Event(now));
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
            return Ok(Wake::Stalled(now));
        }
        let (wake_at, timing) = match deadline {
            Some(d) if d < self.next => (d, self.deadline_timing),
            _ => (self.next, self.tick_timing),
        };
        Err(Pending {
            gap: wake_at.saturating_since(now),
            seen: to_ros(now),
            timing,
        })
    }

    /// What [`Ticker::check`]'s `pending` asks a thread that waits on sockets of its own
    /// to wait for ([`clock::sleep_for`]).
    pub fn sleep(pending: &Pending) -> clock::Sleep {
        clock::sleep_for(pending.gap, pending.seen, pending.timing)
    }
}

/// What a [`Ticker`] waits for next: ROS time `gap` past `seen`, followed with `timing`.
#[derive(Clone, Copy, Debug)]
pub struct Pending {
    gap: Duration,
    seen: rosrust::Time,
    timing: Timing,
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
            Some(wake) => serve(wake, &mut heartbeat, &mut stalled),
            None => return,
        }
    }
}

/// What a deadline loop does when its ticker wakes it (a deadline or an event only makes
/// it judge again, at its next `catch_up`).
fn serve(wake: Wake, heartbeat: &mut impl FnMut(), stalled: &mut impl FnMut(Time)) {
    match wake {
        Wake::Tick(_) => heartbeat(),
        Wake::Stalled(now) => stalled(now),
        Wake::Deadline(_) | Wake::Event(_) => {}
    }
}

/// One turn of [`deadline_loop`] for a thread that waits on sockets of its own (a
/// [`ros1_protocols::polled::PolledGroup::run`]): runs what is due, then returns what to
/// wait for until something else is; `None` on shutdown.
pub fn deadline_turn(
    ticker: &mut Ticker,
    mut catch_up: impl FnMut() -> Option<Time>,
    mut heartbeat: impl FnMut(),
    mut stalled: impl FnMut(Time),
) -> Option<clock::Sleep> {
    loop {
        if !ros1_protocols::this_node::is_ok() {
            return None;
        }
        let deadline = catch_up();
        match ticker.check(deadline) {
            Ok(wake) => serve(wake, &mut heartbeat, &mut stalled),
            Err(pending) => {
                let sleep = Ticker::sleep(&pending);
                if !sleep.within.is_zero() {
                    return Some(sleep);
                }
            }
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
