//! Wiring a node's declared interface: subscriptions and services made from a node's
//! [`Decl`]s, so the message or service type the node handles is the one its table
//! documents (publishers come from [`Decl::publish`]).
//!
//! Each node module holds its declarations and an `INTERFACE` table of them; the test
//! below checks every table against the node's page under `docs/nodes/`.

use gem_msgs::diagnostic_msgs::{DiagnosticArray, DiagnosticStatus, KeyValue};
use gem_msgs::gazebo_msgs::GetModelStateRes;
use gem_msgs::std_msgs::Header;
use gem_ros::topics::Decl;
use ros1_protocols::direct::{self, Arrival, DirectSubscriber};
use ros1_protocols::lazy::{self, LazySubscriber};
use ros1_protocols::polled::{PolledGroup, PolledSubscriber};
use ros1_protocols::runtime::Publisher;
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

/// Subscribes to `topic` in `group` ([`ros1_protocols::polled`]): `on_message` gets each message as it
/// arrives, on the one thread that reads every subscription of the group.
pub fn subscribe_polled<T: Message>(
    group: &PolledGroup,
    topic: &Decl<T>,
    mut on_message: impl FnMut(T, Arrival) + Send + 'static,
) -> Result<PolledSubscriber, RosError> {
    group.subscribe(topic.name(), move |m, at, _| on_message(m, at))
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

/// Serves `service` to callers on this computer only (and, with a trust file, only those
/// it allows): everyone else gets an error naming their address.
pub fn serve_from_this_computer<S, F>(service: &Decl<S>, handler: F) -> Result<Service, RosError>
where
    S: ServicePair,
    F: Fn(S::Request) -> Answer<S> + Send + Sync + 'static,
{
    service::advertise_from_this_computer::<S, F>(service.name(), handler)
}

/// A caller of the service `service` (it connects on the first call).
pub fn client<S: ServicePair>(service: &Decl<S>) -> Result<Client<S>, RosError> {
    Client::new(service.name())
}

/// Publishes this node's one status on `/diagnostics`, named `<node>: <what>` and stamped
/// `now`, with the peers the trust file refused, if any (a failure to publish is logged).
pub fn publish_status(
    out: &Publisher<DiagnosticArray>,
    now: gem_core::time::Time,
    what: &str,
    (level, message): (i8, String),
    mut values: Vec<KeyValue>,
) {
    values.extend(refused_value());
    let msg = DiagnosticArray {
        header: Header {
            seq: 0,
            stamp: gem_ros::time::to_ros(now),
            frame_id: String::new(),
        },
        status: vec![DiagnosticStatus {
            level,
            name: format!("{}: {what}", ros1_protocols::this_node::name()),
            message,
            hardware_id: String::new(),
            values,
        }],
    };
    if let Err(e) = out.send(msg) {
        tracing::error!("cannot publish /diagnostics: {e}");
    }
}

/// The peers the trust file refused (docs/security.md), as a status value, if any: every
/// node's status names them.
pub fn refused_value() -> Option<KeyValue> {
    ros1_protocols::trust::refusal_summary().map(|value| KeyValue {
        key: "refused (trust file)".into(),
        value,
    })
}

/// `gazebo/get_model_state`'s answer for a model it does not know, worded as Gazebo's.
pub fn unknown_model(name: &str) -> GetModelStateRes {
    GetModelStateRes {
        success: false,
        status_message: format!("GetModelState: model [{name}] does not exist"),
        ..Default::default()
    }
}
