//! `tracing` → `/rosout` bridge.
//!
//! The core and the nodes log with `tracing`; this layer forwards each event to rosrust's
//! logger, which prints it to the terminal and publishes it on `/rosout` (so `rqt_console`
//! and `rosout.log` see it). Before rosrust is initialised events go to stderr.

use std::fmt::Write as _;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::EnvFilter;

/// Installs the bridge as the global `tracing` subscriber (idempotent). The level filter
/// comes from `RUST_LOG` (default `info`).
pub fn install() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let subscriber = tracing_subscriber::registry()
        .with(filter)
        .with(RosoutLayer);
    // A second call (tests, several nodes in one process) keeps the first subscriber.
    let _ = tracing::subscriber::set_global_default(subscriber);
}

/// Forwards `tracing` events to rosrust's logger.
struct RosoutLayer;

impl<S: Subscriber> Layer<S> for RosoutLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut text = MessageText::default();
        event.record(&mut text);
        let meta = event.metadata();
        let file = meta.file().unwrap_or("");
        let line = meta.line().unwrap_or(0);
        if rosrust::is_initialized() {
            rosrust::log(rosout_level(*meta.level()), text.0, file, line);
            // rosrust prints INFO with println!, block-buffered when stdout is a file
            // (roslaunch logs, tests); flush so a crash does not lose the last lines.
            let _ = std::io::Write::flush(&mut std::io::stdout());
        } else {
            eprintln!("[{}] {}", meta.level(), text.0);
        }
    }
}

fn rosout_level(level: Level) -> i8 {
    use rosrust::msg::rosgraph_msgs::Log;
    match level {
        Level::ERROR => Log::ERROR,
        Level::WARN => Log::WARN,
        Level::INFO => Log::INFO,
        Level::DEBUG | Level::TRACE => Log::DEBUG,
    }
}

/// The event's message followed by its other fields as `key=value`.
#[derive(Default)]
struct MessageText(String);

impl Visit for MessageText {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}
