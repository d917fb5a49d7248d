//! A node's registrations with the master, and its orderly withdrawal.
//!
//! [`shutdown`] ends this process's node ([`crate::this_node`]): its publications and
//! subscriptions are withdrawn as the runtime node ends, then whatever else the master
//! still lists under the node's name (the services our layer serves). Threads of ours
//! that register beside the node (the master watch) announce their calls through
//! [`registering`], so none lands after the withdrawal.

use crate::master_api::Master;
use crate::xmlrpc::master_uri;
use crate::{Lock, RosError};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// True once [`shutdown`] has begun: from then on nothing of ours registers with the
/// master again (the master watch).
pub use crate::this_node::leaving;

/// True while the node runs: initialised, not shut down by a signal or `rosnode kill`, and
/// not leaving.
pub fn running() -> bool {
    crate::this_node::is_ok()
}

/// Registration calls to the master in progress (see [`registering`]), and the
/// condition [`shutdown`] waits on for the count to reach zero.
static IN_FLIGHT: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());

/// A registration call to the master in progress; dropping it ends it.
pub struct Registering(());

impl Drop for Registering {
    fn drop(&mut self) {
        let mut n = IN_FLIGHT.0.locked();
        *n -= 1;
        if *n == 0 {
            IN_FLIGHT.1.notify_all();
        }
    }
}

/// Announces a registration call about to be made by a thread of ours that runs beside the
/// node (a discovery round, the master watch); `None` when the node is ending and the call
/// must not be made. [`shutdown`] waits for the calls announced before it began, so no
/// registration lands after the node's withdrawal. (Counted before the check: a call
/// either sees the node leaving or is seen by it.)
pub fn registering() -> Option<Registering> {
    *IN_FLIGHT.0.locked() += 1;
    let call = Registering(());
    running().then_some(call)
}

/// How long [`shutdown`] waits for the master to take the node's unregistrations: a
/// master out of reach must not hold up the exit (roscpp gives up the same way).
pub const UNREGISTER_WITHIN: Duration = Duration::from_millis(500);

/// Ends the node: withdraws from the master every publication and subscription of the
/// node, and every service the master still lists for it, within [`UNREGISTER_WITHIN`].
/// Call before `main` returns, on every way out (a signal, `rosnode kill`, a start-up
/// error). Publishers and subscribers still held by running threads stop working.
pub fn shutdown() {
    if !crate::this_node::is_initialized() || crate::this_node::begin_leaving() {
        return;
    }
    crate::clock::wake_all();
    let name = crate::this_node::name();
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("unregister".into())
        .spawn(move || {
            // The registrations already on their way finish first (bounded by the wait
            // below, like everything here).
            let in_flight = IN_FLIGHT.0.locked();
            drop(
                IN_FLIGHT
                    .1
                    .wait_while(in_flight, |n| *n > 0)
                    .unwrap_or_else(|e| e.into_inner()),
            );
            let master = crate::this_node::master();
            let uri = crate::this_node::uri();
            // The runtime node withdraws its topics as it ends.
            drop(crate::this_node::take());
            let _ = tx.send(master.and_then(|m| unregister_all(&m, &uri)));
        });
    if spawned.is_err() {
        return;
    }
    match rx.recv_timeout(UNREGISTER_WITHIN) {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => eprintln!("[{name}] leaving: {e}"),
        Err(_) => eprintln!(
            "[{name}] leaving: the master at {} did not take the unregistrations within {:?}",
            master_uri(),
            UNREGISTER_WITHIN
        ),
    }
}

/// Registers this node's topics again ([`crate::runtime::Node::register_again`], which
/// hands each subscription the publishers the master lists) and the services of this
/// process that the master does not list: the one way back into a master that lost the
/// node (restarted, or answering again after a gap), and back to its name when another
/// process registered it. Returns how many of each.
pub(crate) fn register_missing() -> Result<(usize, usize), RosError> {
    let node = crate::this_node::get()?;
    let master = crate::this_node::master()?;
    let topics = node
        .register_again()
        .map_err(|e| RosError::new(e.to_string()))?;
    // Listed after the topics: while another process holds the node's name, what the
    // master lists under it is that process's (and the master drops it all when the name
    // comes back). Every service is registered again unless the name is this node's.
    let ours = master
        .lookup_node(node.name())
        .is_ok_and(|uri| uri == node.uri());
    let listed = if ours {
        registrations_at(&master)?.services
    } else {
        Vec::new()
    };
    let services = crate::service::register_missing(&master, &listed)?;
    Ok((topics, services))
}

/// What the master lists under one node: the topics it publishes and subscribes to and
/// the services it provides.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Registrations {
    /// Topics published.
    pub publications: Vec<String>,
    /// Topics subscribed to.
    pub subscriptions: Vec<String>,
    /// Services provided.
    pub services: Vec<String>,
}

impl Registrations {
    /// The entries of `node` in a master's system state (`getSystemState`: for
    /// publishers, subscribers and services, each name with the nodes listed for it).
    pub fn of(
        node: &str,
        publishers: &[(String, Vec<String>)],
        subscribers: &[(String, Vec<String>)],
        services: &[(String, Vec<String>)],
    ) -> Registrations {
        let mine = |list: &[(String, Vec<String>)]| {
            list.iter()
                .filter(|(_, nodes)| nodes.iter().any(|n| n == node))
                .map(|(name, _)| name.clone())
                .collect()
        };
        Registrations {
            publications: mine(publishers),
            subscriptions: mine(subscribers),
            services: mine(services),
        }
    }

    /// Nothing listed.
    pub fn is_empty(&self) -> bool {
        self.publications.is_empty() && self.subscriptions.is_empty() && self.services.is_empty()
    }
}

/// This node's entries as the master lists them now.
pub fn registrations() -> Result<Registrations, RosError> {
    registrations_at(&crate::this_node::master()?)
}

fn registrations_at(master: &Master) -> Result<Registrations, RosError> {
    let state = master.system_state()?;
    let [publishers, subscribers, services] = [state.publishers, state.subscribers, state.services]
        .map(|list| {
            list.into_iter()
                .map(|t| (t.name, t.connections))
                .collect::<Vec<_>>()
        });
    Ok(Registrations::of(
        &crate::this_node::name(),
        &publishers,
        &subscribers,
        &services,
    ))
}

/// Withdraws every entry the master lists for this node (its slave URI was `uri`);
/// returns how many.
fn unregister_all(master: &Master, uri: &str) -> Result<usize, RosError> {
    let mine = registrations_at(master)?;
    // Services are withdrawn by name and URI, and the master gives the URI of whichever
    // node holds the name now: when another node has taken this node's name (the master
    // lists it at another slave URI), only the services this process serves are its own.
    let named_here = master
        .lookup_node(&crate::this_node::name())
        .is_ok_and(|listed| listed == uri);
    for topic in &mine.publications {
        master.unregister_publisher(topic)?;
    }
    for topic in &mine.subscriptions {
        master.unregister_subscriber(topic)?;
    }
    // A registration interrupted on the way out may have landed after the listing.
    for (method, topic) in crate::master_api::take_interrupted() {
        match method.as_str() {
            "registerPublisher" if !mine.publications.contains(&topic) => {
                master.unregister_publisher(&topic)?;
            }
            "registerSubscriber" if !mine.subscriptions.contains(&topic) => {
                master.unregister_subscriber(&topic)?;
            }
            _ => {}
        }
    }
    for service in &mine.services {
        // The master withdraws a service only for the URI it was registered with.
        let api = master.lookup_service(service)?;
        if !named_here && !crate::service::serves(&api) {
            continue;
        }
        master.unregister_service(service, &api)?;
    }
    Ok(mine.publications.len() + mine.subscriptions.len() + mine.services.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, nodes: &[&str]) -> (String, Vec<String>) {
        (name.into(), nodes.iter().map(|n| n.to_string()).collect())
    }

    #[test]
    fn a_nodes_registrations_are_the_entries_that_name_it() {
        let publishers = [
            entry("/task_planner_status", &["/task_planner"]),
            entry("/rosout", &["/task_planner", "/state_manager"]),
            entry("/system_state", &["/state_manager"]),
        ];
        let subscribers = [
            entry("/system_state", &["/task_planner", "/controller"]),
            // A node whose name starts like ours is another node.
            entry("/clock", &["/task_planner_2"]),
        ];
        let services = [entry("/serve_waypoints", &["/task_planner"])];
        let mine = Registrations::of("/task_planner", &publishers, &subscribers, &services);
        assert_eq!(mine.publications, ["/task_planner_status", "/rosout"]);
        assert_eq!(mine.subscriptions, ["/system_state"]);
        assert_eq!(mine.services, ["/serve_waypoints"]);
        assert!(!mine.is_empty());
        assert!(Registrations::of("/nobody", &publishers, &subscribers, &services).is_empty());
    }
}
