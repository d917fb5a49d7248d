//! A running node ([`Node`]): its slave API and TCPROS port, and its registrations with
//! the master, all under one slave URI.

use super::config::{Config, RuntimeError};
use super::publisher::{self, Publisher, TypeInfo};
use super::serve;
use super::slave;
use super::state::{Shared, Watcher};
use crate::names::resolve;
use crate::xmlrpc::strings;
use crate::Lock;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use xml_rpc::Value;

/// A running node: its slave API and its TCPROS port. Dropping it withdraws its
/// registrations from the master and closes every link.
pub struct Node {
    shared: Arc<Shared>,
    // Dropped (stopped) before the withdrawal, so nothing new links meanwhile.
    slave: Option<serve::Listener>,
    tcpros: Option<serve::Listener>,
}

impl Node {
    /// Starts node `name` (made absolute when it is not): its slave API and TCPROS port
    /// listen at once. Nothing is registered with the master until something is
    /// advertised or watched.
    pub fn start(name: &str, config: Config) -> Result<Node, RuntimeError> {
        let name = resolve("/", name, &[]).map_err(RuntimeError::Name)?;
        let bind = serve::bind_address(&config.host);
        let io = |what: &str| {
            let what = format!("{name}: {what}");
            move |source| RuntimeError::Io { what, source }
        };
        // The slave's port must be known for the URI before `Shared` exists; its handler
        // finds the shared state through this cell, filled right after.
        let cell: Arc<std::sync::OnceLock<std::sync::Weak<Shared>>> = Arc::default();
        let slave = slave::listen(&name, bind, &config, cell.clone())
            .map_err(io("cannot start the slave API"))?;
        let shared = Arc::new(Shared {
            uri: format!("http://{}:{}/", config.host, slave.port()),
            name: name.clone(),
            config,
            tcpros_port: Mutex::new(0),
            publications: Mutex::default(),
            watches: Mutex::default(),
            next_id: AtomicU64::new(0),
            shutdown: (Mutex::new(None), Condvar::new()),
            on_param: Mutex::new(None),
            inbound: Mutex::default(),
            on_name_taken: Mutex::new(None),
            reclaim: Mutex::default(),
        });
        let _ = cell.set(Arc::downgrade(&shared));
        let tcpros = publisher::listen(&shared, bind).map_err(io("cannot start TCPROS"))?;
        *shared.tcpros_port.locked() = tcpros.port();
        Ok(Node {
            shared,
            slave: Some(slave),
            tcpros: Some(tcpros),
        })
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The slave API's URI, which the master knows this node by.
    pub fn uri(&self) -> &str {
        &self.shared.uri
    }

    /// `name` resolved against this node's name and remappings, as everything it
    /// registers is.
    pub fn resolve(&self, name: &str) -> Result<String, RuntimeError> {
        self.shared.resolve(name)
    }

    /// What the node's threads share (for tests of the servers that read it).
    #[cfg(test)]
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// A handle for a subscriber on this node to list its links in the node's `getBusInfo`.
    pub fn handle(&self) -> NodeHandle {
        NodeHandle(self.shared.clone())
    }

    /// The TCPROS port subscribers connect to.
    pub fn tcpros_port(&self) -> u16 {
        *self.shared.tcpros_port.locked()
    }

    /// Advertises `topic` (resolved against the node's name and remappings) with type `T`
    /// and registers it with the master. Each subscriber gets a queue of `queue_size`
    /// messages (the oldest dropped when full); a `latching` publisher gives each new
    /// subscriber its last message.
    pub fn advertise<T: rosrust::Message>(
        &self,
        topic: &str,
        queue_size: usize,
        latching: bool,
    ) -> Result<Publisher<T>, RuntimeError> {
        Publisher::advertise(
            &self.shared,
            topic,
            queue_size,
            latching,
            TypeInfo::of::<T>(),
        )
    }

    /// [`Node::advertise`] for a type known at run time (`T` encodes the bytes as they
    /// are, as `rosrust::RawMessage` does): a replayed bag's topics.
    pub fn advertise_as<T: rosrust::Message>(
        &self,
        topic: &str,
        queue_size: usize,
        latching: bool,
        info: TypeInfo,
    ) -> Result<Publisher<T>, RuntimeError> {
        Publisher::advertise(&self.shared, topic, queue_size, latching, info)
    }

    /// The node's deadlines, caps and addresses.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// The host other nodes reach this one at.
    pub fn host(&self) -> &str {
        &self.shared.config.host
    }

    /// The master's URI this node registers with.
    pub fn master_uri(&self) -> &str {
        &self.shared.config.master_uri
    }

    /// The topics this node publishes now.
    pub fn published_topics(&self) -> Vec<String> {
        self.shared.publications.locked().keys().cloned().collect()
    }

    /// Registers every publication and watch of this node with the master again (a master
    /// restarted on the same address knows nothing of it), handing each watch the
    /// publishers the master lists now. Returns how many topics were registered; the first
    /// failure ends the round (the caller tries again later).
    pub fn register_again(&self) -> Result<usize, RuntimeError> {
        self.shared.register_again()
    }

    /// Sets what takes the node's name back when the master asks the node to shut down
    /// because another process registered its name (refused under a trust file, see
    /// [`crate::trust`]): `hook` is called on a thread of its own, at most once per
    /// [`super::RECLAIM_EVERY`], and must register the node again. Without a hook the
    /// node registers its topics again itself ([`Node::register_again`]); a process that
    /// also serves services sets one (the master watch does: the master dropped every
    /// registration under the name). Replaces any earlier hook.
    pub fn on_name_taken(&self, hook: impl Fn() + Send + Sync + 'static) {
        *self.shared.on_name_taken.locked() = Some(Arc::new(hook));
    }

    /// Subscribes to `topic`'s publisher list: registers this node as a subscriber of type
    /// `msg_type` with the master, calls `on_update` at once with the publishers the master
    /// lists, then with each `publisherUpdate` the master sends (on the slave server's
    /// thread for that call: keep it short). Dropping the watch unregisters it.
    pub fn watch_publishers(
        &self,
        topic: &str,
        msg_type: &str,
        on_update: impl Fn(&[String]) + Send + Sync + 'static,
    ) -> Result<PublisherWatch, RuntimeError> {
        let topic = self.shared.resolve(topic)?;
        let id = self.shared.next_id();
        let watcher = Arc::new(Watcher {
            msg_type: msg_type.to_owned(),
            on_update: Arc::new(on_update),
            updated: Mutex::new(false),
        });
        // Listed first: an update the master sends while registering reaches it.
        self.shared
            .watches
            .locked()
            .entry(topic.clone())
            .or_default()
            .insert(id, watcher.clone());
        let watch = PublisherWatch {
            shared: self.shared.clone(),
            topic: topic.clone(),
            id,
        };
        let listed = self
            .shared
            .master_call("registerSubscriber", &[&topic, msg_type, &self.shared.uri])
            .map_err(RuntimeError::Master)?;
        let publishers = strings(&listed);
        let updated = watcher.updated.locked();
        if !*updated {
            (watcher.on_update)(&publishers);
        }
        drop(updated);
        Ok(watch)
    }

    /// Calls `on_update(key, value)` for each `paramUpdate` the master sends (for
    /// parameters subscribed to with `subscribeParam` at this node's URI).
    pub fn on_param_update(&self, on_update: impl Fn(&str, &Value) + Send + Sync + 'static) {
        *self.shared.on_param.locked() = Some(Arc::new(on_update));
    }

    /// Why the node was asked to shut down through its slave API, if it was.
    pub fn shutdown_requested(&self) -> Option<String> {
        self.shared.shutdown.0.locked().clone()
    }

    /// Waits until the node is asked to shut down (its reason), or `timeout` passes.
    pub fn wait_shutdown_request(&self, timeout: Duration) -> Option<String> {
        let reason = self.shared.shutdown.0.locked();
        let (reason, _) = self
            .shared
            .shutdown
            .1
            .wait_timeout_while(reason, timeout, |r| r.is_none())
            .unwrap_or_else(|e| e.into_inner());
        reason.clone()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.tcpros.take();
        let topics = std::mem::take(&mut *self.shared.publications.locked());
        for t in topics.into_values() {
            t.close();
            self.shared.withdraw("unregisterPublisher", &t.name);
        }
        let watched = std::mem::take(&mut *self.shared.watches.locked());
        for topic in watched.into_keys() {
            self.shared.withdraw("unregisterSubscriber", &topic);
        }
        self.slave.take();
    }
}

/// A watch on a topic's publishers (see [`Node::watch_publishers`]); dropping it ends it.
pub struct PublisherWatch {
    shared: Arc<Shared>,
    topic: String,
    id: u64,
}

impl PublisherWatch {
    /// The resolved topic.
    pub fn topic(&self) -> &str {
        &self.topic
    }
}

impl Drop for PublisherWatch {
    fn drop(&mut self) {
        let last = {
            let mut watches = self.shared.watches.locked();
            match watches.get_mut(&self.topic) {
                Some(w) => {
                    w.remove(&self.id);
                    let last = w.is_empty();
                    if last {
                        watches.remove(&self.topic);
                    }
                    last
                }
                None => false,
            }
        };
        if last {
            self.shared.withdraw("unregisterSubscriber", &self.topic);
        }
    }
}

/// A subscriber's handle on its [`Node`] (see [`Node::handle`]).
#[derive(Clone)]
pub struct NodeHandle(Arc<Shared>);

impl NodeHandle {
    /// The node's name: a subscriber's `callerid`.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// Lists a link to the publisher `publisher` (its name or URI) of `topic` in the node's
    /// `getBusInfo` until the returned value is dropped.
    pub fn inbound_link(&self, topic: &str, publisher: &str) -> InboundLink {
        let id = self.0.next_id();
        self.0
            .inbound
            .locked()
            .insert(id, (topic.to_owned(), publisher.to_owned()));
        InboundLink {
            shared: self.0.clone(),
            id,
        }
    }
}

/// An inbound link listed by a [`NodeHandle`]; dropping it takes it off the list.
pub struct InboundLink {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for InboundLink {
    fn drop(&mut self) {
        self.shared.inbound.locked().remove(&self.id);
    }
}
