//! Bounded waits: on a condition, on the master's graph, on messages ([`Collector`]).
//! Nothing sleeps to synchronise.

use ros1_protocols::Lock;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A scenario step: `Ok` when `cond` holds, else the error `what` describes.
pub fn check(cond: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(what())
    }
}

/// Waits until `cond` holds, checking every few milliseconds, for at most `timeout`.
/// Returns whether it held. This is a bounded wait on a condition, not a sleep.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until the master lists `topic` with at least one publisher.
pub fn wait_for_publisher(topic: &str, timeout: Duration) -> bool {
    wait_until(timeout, || {
        ros1_protocols::this_node::state()
            .map(|s| {
                s.publishers
                    .iter()
                    .any(|t| t.name == topic && !t.connections.is_empty())
            })
            .unwrap_or(false)
    })
}

/// Waits until the master lists `topic` with at least one subscriber.
pub fn wait_for_subscriber(topic: &str, timeout: Duration) -> bool {
    wait_until(timeout, || {
        ros1_protocols::this_node::state()
            .map(|s| {
                s.subscribers
                    .iter()
                    .any(|t| t.name == topic && !t.connections.is_empty())
            })
            .unwrap_or(false)
    })
}

/// Waits until `service` is registered with the master.
pub fn wait_for_service(service: &str, timeout: Duration) -> bool {
    ros1_protocols::this_node::wait_for_service(service, timeout).is_ok()
}

/// Collects messages from a subscription for later assertions.
pub struct Collector<T> {
    items: std::sync::Arc<Mutex<Vec<(Instant, T)>>>,
    _sub: ros1_protocols::direct::DirectSubscriber,
}

impl<T: rosrust::Message> Collector<T> {
    /// Subscribes to `topic` and records each message with its wall receive time.
    pub fn new(topic: &str) -> Self {
        let items: std::sync::Arc<Mutex<Vec<(Instant, T)>>> = Default::default();
        let sink = items.clone();
        let sub = ros1_protocols::direct::subscribe(topic, move |m: T, _| {
            sink.locked().push((Instant::now(), m));
        })
        .expect("subscribe");
        Collector { items, _sub: sub }
    }

    /// A copy of every message so far.
    pub fn all(&self) -> Vec<T> {
        self.items
            .lock()
            .unwrap()
            .iter()
            .map(|(_, m)| m.clone())
            .collect()
    }

    /// A copy of every message so far with its wall receive time.
    pub fn timed(&self) -> Vec<(Instant, T)> {
        self.items.lock().unwrap().clone()
    }

    /// The latest message, if any.
    pub fn last(&self) -> Option<T> {
        self.items.lock().unwrap().last().map(|(_, m)| m.clone())
    }

    /// Number of messages so far.
    pub fn len(&self) -> usize {
        self.items.lock().unwrap().len()
    }

    /// True before the first message.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets the messages received so far.
    pub fn clear(&self) {
        self.items.lock().unwrap().clear();
    }

    /// Waits until some message received so far satisfies `pred`; returns it.
    pub fn wait_for(&self, timeout: Duration, mut pred: impl FnMut(&T) -> bool) -> Option<T> {
        let mut found = None;
        wait_until(timeout, || {
            found = self
                .items
                .lock()
                .unwrap()
                .iter()
                .find(|(_, m)| pred(m))
                .map(|(_, m)| m.clone());
            found.is_some()
        });
        found
    }

    /// Waits until the *latest* message satisfies `pred`; returns it.
    pub fn wait_latest(&self, timeout: Duration, mut pred: impl FnMut(&T) -> bool) -> Option<T> {
        let mut found = None;
        wait_until(timeout, || {
            found = self.last().filter(|m| pred(m));
            found.is_some()
        });
        found
    }
}
