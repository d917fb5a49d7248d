//! Wiring a node's declared interface: subscriptions and services made from a node's
//! [`Decl`]s, so the message or service type the node handles is the one its table
//! documents (publishers come from [`Decl::publish`]).
//!
//! Each node module holds its declarations and an `INTERFACE` table of them; the test
//! below checks every table against the node's page under `docs/nodes/`.

use gem_ros::topics::Decl;
use ros1_protocols::direct::{self, Arrival, DirectSubscriber};
use ros1_protocols::lazy::{self, LazySubscriber};
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

/// Subscribes to `topic` lazily ([`lazy`]): messages are read when the caller
/// asks ([`LazySubscriber::catch_up`]) or once a second, for a display that shows the
/// latest values at its own pace; no thread wakes for each message.
pub fn subscribe_lazily<T: Message>(
    topic: &Decl<T>,
    mut on_message: impl FnMut(T) + Send + 'static,
) -> Result<LazySubscriber, RosError> {
    lazy::subscribe_lazily(topic.name(), move |m, _, _| on_message(m))
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
