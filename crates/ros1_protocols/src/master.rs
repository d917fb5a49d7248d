//! Watching the ROS master, and registering again with a new one.
//!
//! ROS 1 nodes talk to each other directly once linked; the master only introduces them.
//! When it dies, established links go on, but nothing new can link, and neither roscpp nor
//! rospy nor rosrust says so: a node finds out at its next master call. When a master is
//! started again on the same address it knows nothing of the nodes that were running, and
//! those clients never tell it: the graph stays invisible to every tool, and a subscriber
//! started afterwards never finds the old publishers.
//!
//! Every node of ours runs [`watch`]: once a [`PERIOD`] it asks the master for its own
//! registration (`lookupNode`, one call). It logs when the master becomes unreachable and
//! when it is back, and when a master answers again or answers without knowing the node
//! (a restarted one), it registers the node's publications, subscriptions and services
//! again, in one pass ([`crate::registration::register_missing`]). (Knowing the node is
//! not enough: a restarted master may know it from one registration and still lack the
//! rest.)
//! Parameters set by a launch file are not restored (the nodes read theirs at start-up).
//!
//! The same pass takes the node's name back when another process registered it (which
//! makes the master drop every registration under the name and ask this node to shut
//! down): under a trust file the node refuses that `shutdown` ([`crate::runtime::slave`])
//! and wakes the watch ([`crate::runtime::Node::on_name_taken`]), which looks at once
//! instead of at its next period.

use crate::xmlrpc::master_uri;
use crate::Lock;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// How often the master is asked. A restarted master is noticed within this (plus its
/// own start-up); one XML-RPC call a second is the watch's whole cost, a wake-up of one
/// thread, far below what a node may spend idle.
pub const PERIOD: Duration = Duration::from_secs(1);

/// What one look at the master found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// It answered and knows this node.
    Registered,
    /// It answered but does not know this node (a new master).
    Unknown,
    /// It did not answer (the reason).
    Unreachable(String),
}

/// A change worth a log line (and, for [`Change::Replaced`], registering again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The master stopped answering.
    Lost(String),
    /// The same master answers again.
    Back,
    /// A master answers that does not know this node.
    Replaced,
}

/// The watch's memory: what the last look found.
#[derive(Debug, Default)]
pub struct Watch {
    last: Option<Seen>,
}

impl Watch {
    /// Records what a look found and returns the change it makes, if any. The first look
    /// is a change only when it finds the master gone or not knowing the node; a master
    /// that still does not know the node (registering again failed) is reported again.
    pub fn observe(&mut self, seen: Seen) -> Option<Change> {
        let change = match (&self.last, &seen) {
            (Some(Seen::Unreachable(_)), Seen::Unreachable(_)) => None,
            (_, Seen::Unreachable(why)) => Some(Change::Lost(why.clone())),
            // Still unknown after registering again (it failed): try again.
            (_, Seen::Unknown) => Some(Change::Replaced),
            (Some(Seen::Unreachable(_)), Seen::Registered) => Some(Change::Back),
            (_, Seen::Registered) => None,
        };
        self.last = Some(seen);
        change
    }
}

/// The master as last seen by this process's watch: 0 not yet looked, 1 reachable, 2 not.
static REACHABLE: AtomicU8 = AtomicU8::new(0);

/// Whether the master answered at the watch's last look (`None` before the first one, or
/// without a watch).
pub fn reachable() -> Option<bool> {
    match REACHABLE.load(Ordering::Relaxed) {
        1 => Some(true),
        2 => Some(false),
        _ => None,
    }
}

/// Wakes the watch before its period ends: set by [`wake`], taken by the watch.
static WAKE: (Mutex<bool>, Condvar) = (Mutex::new(false), Condvar::new());

/// Set when the node refused the master's `shutdown` because another process registered
/// its name (what the watch's next registration is for, for its log line).
static NAME_TAKEN: AtomicBool = AtomicBool::new(false);

/// Makes the watch look at once (another process registered the node's name).
fn wake() {
    NAME_TAKEN.store(true, Ordering::SeqCst);
    *WAKE.0.locked() = true;
    WAKE.1.notify_all();
}

/// Sleeps for [`PERIOD`], or until [`wake`].
fn nap() {
    let woken = WAKE.0.locked();
    let (mut woken, _) = WAKE
        .1
        .wait_timeout_while(woken, PERIOD, |w| !*w)
        .unwrap_or_else(|e| e.into_inner());
    *woken = false;
}

/// Reclaims of the node's name so far (logged the first time, then at the 10th, ...).
static RECLAIMS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Starts the watch on a thread of its own (after [`crate::this_node::init`]). It also
/// takes the node's name back when another process registers it, under a trust file (see
/// the module's text).
pub fn watch() {
    if let Ok(node) = crate::this_node::get() {
        node.on_name_taken(wake);
    }
    let spawned = std::thread::Builder::new()
        .name("master_watch".into())
        .spawn(|| {
            let mut watch = Watch::default();
            let mut last_error = String::new();
            while crate::this_node::is_ok() {
                // Taken before the look: a takeover said after it is for the next one.
                let taken = NAME_TAKEN.swap(false, Ordering::SeqCst);
                let seen = look();
                REACHABLE.store(
                    if matches!(seen, Seen::Unreachable(_)) { 2 } else { 1 },
                    Ordering::Relaxed,
                );
                match watch.observe(seen) {
                    Some(Change::Lost(why)) => tracing::warn!(
                        "the ROS master at {} is unreachable ({why}): established links go on; new links, service look-ups and parameters wait for it",
                        master_uri()
                    ),
                    // Back, or a master that does not know the node: compare what the
                    // node has with what the master lists. A restarted master can already
                    // know the node from a subscription's own registration, so "it knows
                    // the node" does not mean "it knows all of it".
                    Some(change @ (Change::Back | Change::Replaced)) => {
                        // A node on its way out is unknown because it withdrew itself.
                        let Some(result) =
                            crate::registration::registering()
                                .map(|_registering| crate::registration::register_missing())
                        else {
                            continue;
                        };
                        match result {
                            Ok((topics, services)) if taken => {
                                last_error.clear();
                                let n = RECLAIMS.fetch_add(1, Ordering::Relaxed) + 1;
                                if crate::trust::logged_at(n) {
                                    let times = if n > 1 {
                                        format!(" ({n} times now)")
                                    } else {
                                        String::new()
                                    };
                                    tracing::warn!(
                                        "another process registered this node's name at the ROS master at {}; took it back, registering {topics} topic(s) and {services} service(s) again{times}",
                                        master_uri()
                                    )
                                }
                            }
                            Ok((0, 0)) if change == Change::Back => tracing::info!(
                                "the ROS master at {} answers again",
                                master_uri()
                            ),
                            Ok((topics, services)) => {
                                last_error.clear();
                                tracing::warn!(
                                    "a new ROS master at {} did not list all of this node: registered {topics} topic(s) and {services} service(s) again",
                                    master_uri()
                                )
                            }
                            Err(e) if e.to_string() != last_error => {
                                last_error = e.to_string();
                                tracing::error!(
                                    "the ROS master at {} does not list all of this node, and registering again failed (trying again every {:?}): {e}",
                                    master_uri(),
                                    PERIOD
                                )
                            }
                            Err(_) => {}
                        }
                    }
                    None => {}
                }
                nap();
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the master watch: {e}");
    }
}

/// One look: does the master answer (within [`crate::master_api::MASTER_CALL_WITHIN`]), and
/// does it know this node at this node's URI?
fn look() -> Seen {
    let Ok(master) = crate::this_node::master() else {
        return Seen::Unreachable("the node has ended".into());
    };
    let name = crate::this_node::name();
    match master.answer("lookupNode", vec![xml_rpc::Value::String(name)]) {
        Ok((_, _, xml_rpc::Value::String(uri))) if uri == crate::this_node::uri() => {
            Seen::Registered
        }
        // Another URI, or the master's "unknown node": an answer all the same.
        Ok(_) => Seen::Unknown,
        Err(e) => Seen::Unreachable(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_master_is_reported_once_and_its_return_once() {
        let mut w = Watch::default();
        assert_eq!(w.observe(Seen::Registered), None);
        let gone = || Seen::Unreachable("connection refused".into());
        assert_eq!(
            w.observe(gone()),
            Some(Change::Lost("connection refused".into()))
        );
        assert_eq!(w.observe(gone()), None);
        assert_eq!(w.observe(Seen::Registered), Some(Change::Back));
        assert_eq!(w.observe(Seen::Registered), None);
    }

    #[test]
    fn a_master_that_does_not_know_the_node_is_a_new_one_until_it_does() {
        let mut w = Watch::default();
        assert_eq!(w.observe(Seen::Registered), None);
        assert_eq!(
            w.observe(Seen::Unreachable("refused".into())),
            Some(Change::Lost("refused".into()))
        );
        // Restarted: it answers, but without this node.
        assert_eq!(w.observe(Seen::Unknown), Some(Change::Replaced));
        // Registering again failed: the next look asks for another attempt.
        assert_eq!(w.observe(Seen::Unknown), Some(Change::Replaced));
        assert_eq!(w.observe(Seen::Registered), None);
        // A master replaced while this node was not looking.
        assert_eq!(w.observe(Seen::Unknown), Some(Change::Replaced));
    }

    #[test]
    fn a_node_that_starts_without_a_master_says_so() {
        let mut w = Watch::default();
        assert_eq!(
            w.observe(Seen::Unreachable("refused".into())),
            Some(Change::Lost("refused".into()))
        );
    }
}
