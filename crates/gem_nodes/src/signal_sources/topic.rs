//! A topic source: any topic, subscribed as raw bytes and decoded with the definition its
//! publisher sends (the health monitor's [`MessageDecoder`]), its field made into the
//! input's value (`gem_core::signal_sources::field`). A field the type does not have, or
//! one that is not a number, is an error logged at the first message from each publisher
//! (and again only when the reason changes); the input then stays unpublished, so the state
//! manager sees it stale. A reading goes to the node's `Readings`, which debounce the
//! e-stop; a press is published from the message's own thread at once.

use super::outputs::{Board, Outputs};
use crate::health_monitor::MessageDecoder;
use gem_core::signal_sources::field::FieldSource;
use gem_core::signal_sources::Fed;
use ros1_protocols::direct::{DirectSubscriber, Link};
use ros1_protocols::Lock;
use ros1_protocols::RosError;
use rosrust::RawMessage;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Per publisher: its decoder, and the last error reported.
#[derive(Default)]
struct Publishers {
    decoders: HashMap<String, MessageDecoder>,
    reported: HashMap<String, String>,
}

impl Publishers {
    /// Logs `error` for `caller` unless it was the last one logged for it.
    fn report(&mut self, caller: &str, error: String) {
        if self.reported.get(caller) != Some(&error) {
            tracing::error!("{error}");
            self.reported.insert(caller.to_owned(), error);
        }
    }
}

/// Subscribes to `source`'s topic for `fed`: a boolean for the e-stop, a number otherwise.
pub(super) fn subscribe(
    fed: Fed,
    source: FieldSource,
    board: Board,
    outputs: Arc<Outputs>,
) -> Result<DirectSubscriber, RosError> {
    let publishers: Arc<Mutex<Publishers>> = Arc::default();
    let on_connect = publishers.clone();
    let topic = source.topic.clone();
    let on_link = move |link: &Link| {
        let mut p = on_connect.locked();
        match MessageDecoder::for_link(link) {
            Ok((caller, md)) => {
                p.decoders.insert(caller, md);
            }
            Err(e) => p.report(link.caller_id(), format!("{}: {e}", fed.key())),
        }
    };
    ros1_protocols::direct::subscribe_linked(
        &topic,
        on_link,
        move |raw: RawMessage, _, link: &Link| {
            let caller = link.caller_id();
            let now = gem_ros::time::now();
            let mut p = publishers.locked();
            let Some(md) = p.decoders.get_mut(caller) else {
                return;
            };
            let type_name = md.type_name().to_owned();
            let value = match md.fields(&raw.0) {
                Err(e) => Err(format!("cannot decode a {type_name} from {caller}: {e}")),
                Ok(fields) => match fed {
                    Fed::Estop => source
                        .boolean(&fields, &type_name)
                        .map(|b| f64::from(u8::from(b)))
                        .map_err(|e| e.to_string()),
                    _ => source
                        .number(&fields, &type_name)
                        .map_err(|e| e.to_string()),
                },
            };
            let value = match value {
                Ok(v) => {
                    if p.reported.remove(caller).is_some() {
                        tracing::info!("{}: {} readable again", fed.key(), source.describe());
                    }
                    v
                }
                Err(e) => return p.report(caller, format!("{}: {e}", fed.key())),
            };
            drop(p);
            let mut readings = board.locked();
            if readings.read(fed, value, now, source.stale_after) {
                // A press goes out now, not at the next tick, and under the board's lock: a
                // tick publishes under it too, so its older reading never follows the press.
                outputs.send(fed, 1.0, now);
            }
        },
    )
}
