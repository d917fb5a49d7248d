//! The state manager's shared state: the core behind a mutex, the publisher, and the one
//! function every subscription and the timer go through.

use gem_core::state_manager::{Input, InputIssue, IssueFilter, Report, StateManager};
use gem_core::time::Time;
use gem_msgs::gem_state_msgs::SystemStateStamped;
use gem_msgs::std_msgs::Header;
use gem_ros::convert;
use gem_ros::processed::Acks;
use gem_ros::time::Waker;
use gem_ros::topics::Decl;
use ros1_protocols::polled::{PolledGroup, PolledSubscriber};
use ros1_protocols::Lock;
use std::sync::{Arc, Mutex};

/// Core + publisher; cheap to share between subscription threads.
pub struct Shared {
    inner: Mutex<Inner>,
    publisher: ros1_protocols::runtime::Publisher<SystemStateStamped>,
    acks: Acks,
    /// Wakes the timer loop when an input brings a deadline earlier than the one it sleeps
    /// on (a GPS fault's hold-off window starting, say).
    waker: Waker,
}

struct Inner {
    core: StateManager,
    issues: IssueFilter,
}

impl Shared {
    /// Wraps a core and advertises `system_state` (and the acknowledgements when `acks`); `waker`
    /// is the timer loop's.
    pub fn new(
        core: StateManager,
        acks: bool,
        waker: Waker,
    ) -> Result<Arc<Self>, ros1_protocols::RosError> {
        let publisher = super::topics::SYSTEM_STATE.publish()?;
        let inner = Mutex::new(Inner {
            core,
            issues: IssueFilter::default(),
        });
        Ok(Arc::new(Shared {
            inner,
            publisher,
            acks: Acks::new(acks)?,
            waker,
        }))
    }

    /// Registers with a replayer on `/replay/ready` (when acknowledgements are on); call
    /// after subscribing the inputs.
    pub fn register_acks(&self) {
        self.acks.register();
    }

    /// Applies one `input` message stamped `stamp` through `update` (given ROS now), then
    /// evaluates and publishes at once if the state or the error code changed (under the
    /// lock, so messages stay in order), then acknowledges the message if enabled.
    ///
    /// "Now" is read *under the lock*: read before it, a callback thread descheduled
    /// between the read and the lock (a busy machine, CPU steal) would hand the core a time
    /// older than one another thread already applied, which looks exactly like a simulator
    /// reset and restarts every hold-off window (`gemctl profile` caught a GPS fault raised
    /// 4.7 s late that way).
    pub fn ingest(
        &self,
        input: Input,
        stamp: rosrust::Time,
        update: impl FnOnce(&mut StateManager, Time) -> Vec<InputIssue>,
    ) {
        let earlier = {
            let mut inner = self.lock();
            let now = gem_ros::time::now();
            let before = inner.core.next_deadline(now);
            let issues = update(&mut inner.core, now);
            for issue in issues {
                if inner.issues.first_time(&issue) {
                    tracing::warn!("{issue}");
                }
            }
            self.evaluate(&mut inner, now, false);
            let after = inner.core.next_deadline(now);
            after.is_some_and(|a| before.is_none_or(|b| a < b))
        };
        if earlier {
            self.waker.wake();
        }
        self.acks.ack(input.topic(), stamp);
    }

    /// Subscribes to `input` on `topic` (its declaration), read by `group`'s thread: each
    /// message goes through
    /// `update` (given the header stamp, the message and ROS now) and then
    /// [`Shared::ingest`].
    pub fn subscribe<T: rosrust::Message>(
        self: &Arc<Self>,
        group: &PolledGroup,
        input: Input,
        topic: &Decl<T>,
        header: fn(&T) -> &Header,
        update: fn(&mut StateManager, Time, &T, Time) -> Vec<InputIssue>,
    ) -> Result<PolledSubscriber, ros1_protocols::RosError> {
        let shared = self.clone();
        crate::interface::subscribe_polled(group, topic, move |m, _| {
            let h = header(&m);
            shared.ingest(input, h.stamp, |sm, now| {
                update(sm, convert::stamp(h), &m, now)
            });
        })
    }

    /// Heartbeat: evaluates at ROS now (read under the lock, see [`Shared::ingest`]) and
    /// publishes whether or not anything changed.
    pub fn heartbeat(&self) {
        let mut inner = self.lock();
        let now = gem_ros::time::now();
        self.evaluate(&mut inner, now, true);
    }

    /// ROS time has stood still at `now` for `wall` of wall time: STALE_DATA, published at
    /// once (a heartbeat, as the ticks have stopped with the clock).
    pub fn clock_stalled(&self, now: Time, wall: std::time::Duration) {
        let mut inner = self.lock();
        inner.core.clock_stalled(now, wall);
        self.evaluate(&mut inner, now, true);
    }

    /// Evaluates at ROS now (publishing a change) and returns when the next time-driven
    /// rule may fire after that now (see [`gem_ros::time::deadline_loop`]).
    pub fn catch_up(&self) -> Option<Time> {
        let mut inner = self.lock();
        let now = gem_ros::time::now();
        self.evaluate(&mut inner, now, false);
        inner.core.next_deadline(now)
    }

    fn evaluate(&self, inner: &mut Inner, now: Time, heartbeat: bool) {
        let before = inner.core.state();
        let report = inner.core.evaluate(now);
        // Publish first, log after: a fault must not wait for its log line.
        if report.changed || heartbeat {
            if let Err(e) =
                self.publisher
                    .send(convert::system_state(report.state, report.errors, now))
            {
                tracing::error!("cannot publish {}: {e}", super::topics::SYSTEM_STATE.name());
            }
        }
        log_report(inner, &report, before, now);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic elsewhere must not silence the safety node: keep using the data.
        self.inner.locked()
    }
}

/// One log line per transition or error-code change, with the explanation.
fn log_report(
    inner: &mut Inner,
    report: &Report,
    before: gem_core::state_manager::SystemState,
    now: Time,
) {
    if let Some(reset) = &report.clock_reset {
        tracing::warn!("{reset}");
    }
    if report.estop_causes_changed {
        // Same bits on the wire, another cause: the e-stop switch and the drive-by-wire's
        // fault share ESTOP.
        tracing::info!(
            "{}: error code still {}, now {}",
            report.state,
            report.errors,
            inner.core.explain(now)
        );
    }
    if !report.changed {
        return;
    }
    let why = inner.core.explain(now);
    match &report.transition {
        Some(t) => tracing::info!("{} => {} ({}): {why}", t.from, t.to, t.reason),
        None => tracing::info!("{before}: error code now {} ({why})", report.errors),
    }
}
