//! Processing acknowledgements for lockstep drivers and replayers.
//!
//! A node that enables them publishes, after it has fully handled an input message
//! (including anything it published in response), one `std_msgs/Header` on `~processed`:
//! `frame_id` = the input topic as subscribed, `stamp` = the input's header stamp, `seq` =
//! a running count. A driver that steps sim time, or a replayer that plays a bag in bursts,
//! waits for these instead of guessing how long the node needs, so a slow or loaded
//! machine changes only the wall time of a run, never its result.

use crate::node::RosError;
use gem_msgs::std_msgs::Header;
use std::sync::atomic::{AtomicU32, Ordering};

/// Publishes acknowledgements when enabled; does nothing otherwise.
pub struct Acks {
    publisher: Option<rosrust::Publisher<Header>>,
    count: AtomicU32,
}

impl Acks {
    /// Advertises `~processed` when `enabled`.
    pub fn new(enabled: bool) -> Result<Acks, RosError> {
        let publisher = if enabled {
            Some(rosrust::publish("~processed", 1000)?)
        } else {
            None
        };
        Ok(Acks {
            publisher,
            count: AtomicU32::new(0),
        })
    }

    /// Acknowledges one input message of `topic` stamped `stamp`.
    pub fn ack(&self, topic: &str, stamp: rosrust::Time) {
        let Some(p) = &self.publisher else { return };
        let seq = self.count.fetch_add(1, Ordering::Relaxed);
        let header = Header {
            seq,
            stamp,
            frame_id: topic.to_owned(),
        };
        if let Err(e) = p.send(header) {
            tracing::warn!("cannot publish ~processed: {e}");
        }
    }
}
