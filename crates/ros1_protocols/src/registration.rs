//! A node's registrations with the master, and its orderly withdrawal.
//!
//! rosrust registers a node's publishers, subscribers and services but never withdraws
//! them: its singleton is never dropped. [`shutdown`] asks the master what it lists under
//! this node and withdraws each entry. Threads of ours that register beside the node (the
//! master watch, direct subscriptions' discovery rounds) announce their calls through
//! [`registering`], so none lands after the withdrawal.

use crate::xmlrpc::{master, master_uri};
use crate::RosError;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// Set when the node starts leaving: from then on nothing of ours registers with the
/// master again (the master watch, direct subscriptions' discovery rounds).
static LEAVING: AtomicBool = AtomicBool::new(false);

/// True once [`shutdown`] has begun.
pub fn leaving() -> bool {
    LEAVING.load(Ordering::SeqCst)
}

/// True while the node runs: initialised, not shut down by a signal or `rosnode kill`, and
/// not leaving.
pub fn running() -> bool {
    rosrust::is_initialized() && rosrust::is_ok() && !leaving()
}

/// Registration calls to the master in progress (see [`registering`]).
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// A registration call to the master in progress; dropping it ends it.
pub struct Registering(());

impl Drop for Registering {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Announces a registration call about to be made by a thread of ours that runs beside the
/// node (a discovery round, the master watch); `None` when the node is ending and the call
/// must not be made. [`shutdown`] waits for the calls announced before it began, so no
/// registration lands after the node's withdrawal. (Counted before the check: a call
/// either sees the node leaving or is seen by it.)
pub fn registering() -> Option<Registering> {
    IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
    let call = Registering(());
    running().then_some(call)
}

/// How long [`shutdown`] waits for the master to take the node's unregistrations: a
/// master out of reach must not hold up the exit (roscpp gives up the same way).
pub const UNREGISTER_WITHIN: Duration = Duration::from_millis(500);

/// Ends the node: stops rosrust, then unregisters from the master every publication,
/// subscription and service the master still lists for this node. Call before `main`
/// returns, on every way out (a signal, `rosnode kill`, a start-up error).
///
/// Unregistering relies on nothing being dropped: rosrust's singleton never is, and a
/// publisher or a subscription held by a thread that is still running when `main` returns
/// would otherwise stay listed, misleading `rosnode list` and every subscriber that tries
/// to connect to it. So the master is asked what it holds under this node's name, and
/// each of those entries is withdrawn, within [`UNREGISTER_WITHIN`].
pub fn shutdown() {
    if !rosrust::is_initialized() {
        return;
    }
    LEAVING.store(true, Ordering::SeqCst);
    rosrust::shutdown();
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("unregister".into())
        .spawn(move || {
            // The registrations already on their way finish first (bounded by the wait
            // below, like everything here).
            while IN_FLIGHT.load(Ordering::SeqCst) > 0 {
                std::thread::sleep(Duration::from_millis(2));
            }
            let _ = tx.send(unregister_all());
        });
    if spawned.is_err() {
        return;
    }
    match rx.recv_timeout(UNREGISTER_WITHIN) {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => eprintln!("[{}] leaving: {e}", rosrust::name()),
        Err(_) => eprintln!(
            "[{}] leaving: the master at {} did not take the unregistrations within {:?}",
            rosrust::name(),
            master_uri(),
            UNREGISTER_WITHIN
        ),
    }
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
    let master = master()?;
    let state: rosrust::api::SystemState = master
        .get_system_state()
        .map_err(|e| RosError::new(format!("getSystemState: {e}")))?
        .into();
    let [publishers, subscribers, services] = [state.publishers, state.subscribers, state.services]
        .map(|list| {
            list.into_iter()
                .map(|t| (t.name, t.connections))
                .collect::<Vec<_>>()
        });
    Ok(Registrations::of(
        &rosrust::name(),
        &publishers,
        &subscribers,
        &services,
    ))
}

/// Withdraws every entry the master lists for this node; returns how many.
fn unregister_all() -> Result<usize, RosError> {
    let master = master()?;
    // rosrust subscribes every node to the whole parameter tree ("/") the first time it
    // reads a parameter, and never withdraws it: the master would go on sending every
    // later parameter change to this node's dead slave, one refused connection (and a
    // logged traceback) each, on the same few threads that carry `publisherUpdate`. A
    // suite restarting its nodes would slow every other node's linking more each time.
    // `getSystemState` does not list parameter subscriptions, so this one is named; its
    // failure is reported after the rest is withdrawn, which it must not hold up.
    let parameters = master.unsubscribe_param("/");
    let mine = registrations()?;
    // Services are withdrawn by name and URI, and the master gives the URI of whichever
    // node holds the name now: when another node has taken this node's name (the master
    // lists it at another slave URI), only the services this process serves are its own.
    let named_here = master
        .lookup_node(&rosrust::name())
        .is_ok_and(|uri| uri == rosrust::uri());
    fn fail(what: &str, name: &str, e: impl std::fmt::Display) -> RosError {
        RosError::new(format!("{what} {name}: {e}"))
    }
    for topic in &mine.publications {
        master
            .unregister_publisher(topic)
            .map_err(|e| fail("unregisterPublisher", topic, e))?;
    }
    for topic in &mine.subscriptions {
        master
            .unregister_subscriber(topic)
            .map_err(|e| fail("unregisterSubscriber", topic, e))?;
    }
    for service in &mine.services {
        // The master withdraws a service only for the URI it was registered with.
        let api = master
            .lookup_service(service)
            .map_err(|e| fail("lookupService", service, e))?;
        if !named_here && !crate::service::serves(&api) {
            continue;
        }
        master
            .unregister_service(service, &api)
            .map_err(|e| fail("unregisterService", service, e))?;
    }
    parameters.map_err(|e| RosError::new(format!("unsubscribeParam /: {e}")))?;
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
