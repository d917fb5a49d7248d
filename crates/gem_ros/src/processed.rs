//! Processing acknowledgements for lockstep drivers and replayers.
//!
//! A node that enables them publishes, after it has fully handled an input message
//! (including anything it published in response):
//! - one `std_msgs/Header` on `~processed`: `frame_id` = the input topic as subscribed,
//!   `stamp` = the input's header stamp, `seq` = a running count (from 0);
//! - one latched `std_msgs/Header` on `/replay/ready`: `frame_id` = the node's name, `seq` =
//!   how many inputs it has handled so far. [`Acks::register`] publishes it once the node
//!   has subscribed its inputs, so the node registers itself with a replayer
//!   (`gemctl replay`) that starts before or after it.
//!
//! rosrust's subscriber drops messages when more than 8 arrive on one connection faster
//! than its forwarding thread passes them on (a bounded(8) channel and `try_send` in
//! `tcpros/subscriber.rs`), so a burst of acknowledgements can lose its last ones. The
//! `/replay/ready` count is cumulative, and a helper thread re-publishes it within
//! [`RESEND`] whenever it changed since the last re-publication: a lost one is replaced.
//!
//! A driver that steps sim time, or a replayer that plays a bag in bursts, waits for these
//! instead of guessing how long the node needs, so a slow or loaded machine changes only
//! the wall time of a run, never its result.

use crate::topics::Decl;
use gem_msgs::std_msgs::Header;
use ros1_protocols::RosError;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How soon a changed `/replay/ready` count is re-published (wall time).
pub const RESEND: Duration = Duration::from_millis(20);

/// The topic on which consumers report readiness to a replayer.
pub const READY_TOPIC: &str = gem_core::names::REPLAY_READY;

/// The acknowledgement of each handled input.
pub const PROCESSED: Decl<Header> = Decl::publishes(
    "~processed",
    1000,
    "topic (`frame_id`) and stamp of each handled input",
);

/// The node's handled count, for a replayer.
pub const READY: Decl<Header> = Decl::latched(
    READY_TOPIC,
    1000,
    "the node's name (`frame_id`) and how many inputs it has handled (`seq`)",
);

struct Outputs {
    processed: ros1_protocols::runtime::Publisher<Header>,
    ready: ros1_protocols::runtime::Publisher<Header>,
}

/// Publishes acknowledgements when enabled; does nothing otherwise.
pub struct Acks {
    outputs: Option<Outputs>,
    count: Arc<AtomicU32>,
}

impl Acks {
    /// Advertises `~processed` and `/replay/ready` (and registers) when `enabled`.
    pub fn new(enabled: bool) -> Result<Acks, RosError> {
        let outputs = if enabled {
            let ready = READY.publish()?;
            Some(Outputs {
                processed: PROCESSED.publish()?,
                ready,
            })
        } else {
            None
        };
        let count = Arc::new(AtomicU32::new(0));
        if let Some(o) = &outputs {
            resend_changes(o.ready.clone(), count.clone());
        }
        Ok(Acks { outputs, count })
    }

    /// Announces the node on `/replay/ready`: call once its input subscriptions exist (a
    /// replayer learns from the master which topics each registered consumer reads).
    pub fn register(&self) {
        let Some(o) = &self.outputs else { return };
        let handled = self.count.load(Ordering::Relaxed);
        if let Err(e) = o
            .ready
            .send(ready_header(handled, rosrust::Time::default()))
        {
            tracing::warn!("cannot publish {READY_TOPIC}: {e}");
        }
    }

    /// Acknowledges one input message of `topic` stamped `stamp`.
    pub fn ack(&self, topic: &str, stamp: rosrust::Time) {
        let Some(o) = &self.outputs else { return };
        let seq = self.count.fetch_add(1, Ordering::Relaxed);
        let header = Header {
            seq,
            stamp,
            frame_id: topic.to_owned(),
        };
        if let Err(e) = o.processed.send(header) {
            tracing::warn!("cannot publish {}: {e}", PROCESSED.name());
        }
        if let Err(e) = o.ready.send(ready_header(seq + 1, stamp)) {
            tracing::warn!("cannot publish {READY_TOPIC}: {e}");
        }
    }
}

fn ready_header(handled: u32, stamp: rosrust::Time) -> Header {
    Header {
        seq: handled,
        stamp,
        frame_id: ros1_protocols::this_node::name(),
    }
}

/// Re-publishes the handled count every [`RESEND`] while it changes, so the latest one
/// reaches the replayer even if a burst lost it.
fn resend_changes(ready: ros1_protocols::runtime::Publisher<Header>, count: Arc<AtomicU32>) {
    std::thread::spawn(move || {
        let mut sent = 0;
        while ros1_protocols::this_node::is_ok() {
            std::thread::sleep(RESEND);
            let now = count.load(Ordering::Relaxed);
            if now != sent {
                if ready
                    .send(ready_header(now, rosrust::Time::default()))
                    .is_err()
                {
                    return;
                }
                sent = now;
            }
        }
    });
}
