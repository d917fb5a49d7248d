//! Wiring a node's declared interface: subscriptions and services made from a node's
//! [`Decl`]s, so the message or service type the node handles is the one its table
//! documents (publishers come from [`Decl::publish`]).
//!
//! Each node module holds its declarations and an `INTERFACE` table of them; the test
//! below checks every table against the node's page under `docs/nodes/`.

use gem_ros::topics::Decl;
use ros1_protocols::direct::{self, Arrival, DirectSubscriber};
use ros1_protocols::service::{self, Answer, Client, Service};
use ros1_protocols::RosError;
use rosrust::{Message, ServicePair};

/// Subscribes to `topic` through [`direct`]: `on_message` gets each message on the link's
/// own thread, and none is dropped in a burst.
pub fn subscribe<T: Message>(
    topic: &Decl<T>,
    on_message: impl Fn(T, Arrival) + Send + Sync + 'static,
) -> Result<DirectSubscriber, RosError> {
    direct::subscribe(topic.name(), on_message)
}

/// Advertises the service `service`, answering each request with `handler`.
pub fn serve<S, F>(service: &Decl<S>, handler: F) -> Result<Service, RosError>
where
    S: ServicePair,
    F: Fn(S::Request) -> Answer<S> + Send + Sync + 'static,
{
    service::advertise::<S, F>(service.name(), handler)
}

/// A caller of the service `service` (it connects on the first call).
pub fn client<S: ServicePair>(service: &Decl<S>) -> Result<Client<S>, RosError> {
    Client::new(service.name())
}

#[cfg(test)]
mod tests {
    use crate::{controller, health_monitor, mock_signals, overlay, planner, sim, state_manager};
    use gem_ros::topics::{check_docs, Entry};

    /// Each node: its interface table and its page, `docs/nodes/<page>.md`.
    const NODES: &[(&[Entry], &str)] = &[
        (state_manager::INTERFACE, "state_manager"),
        (controller::INTERFACE, "controller"),
        (planner::INTERFACE, "task_planner"),
        (sim::INTERFACE, "gem_sim"),
        (mock_signals::INTERFACE, "mock_signals"),
        (overlay::INTERFACE, "status_overlay"),
        (health_monitor::INTERFACE, "health_monitor"),
    ];

    #[test]
    fn every_node_documents_exactly_its_interface_table() {
        let stale: Vec<String> = NODES
            .iter()
            .filter_map(|(entries, page)| {
                let page = format!("docs/nodes/{page}.md");
                let path = format!("{}/../../{page}", env!("CARGO_MANIFEST_DIR"));
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
                check_docs(entries, &page, &text).err()
            })
            .collect();
        assert!(stale.is_empty(), "{}", stale.join("\n\n"));
    }

    #[test]
    fn no_node_declares_a_name_twice() {
        for (entries, page) in NODES {
            for (i, e) in entries.iter().enumerate() {
                assert!(
                    entries[..i]
                        .iter()
                        .all(|o| o.name != e.name || o.role != e.role),
                    "{page}: {} declared twice",
                    e.name
                );
            }
        }
    }
}
