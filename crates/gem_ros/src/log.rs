//! `tracing` → `/rosout` bridge.
//!
//! The core and the nodes log with `tracing`; this layer prints each event on the terminal
//! (INFO and DEBUG on stdout, warnings and errors on stderr, as roscpp does) and, once the
//! node runs, publishes it on `/rosout` (so `rqt_console` and `rosout.log` see it).

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

/// Forwards `tracing` events to the terminal and `/rosout`.
struct RosoutLayer;

impl<S: Subscriber> Layer<S> for RosoutLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut text = MessageText::default();
        event.record(&mut text);
        let meta = event.metadata();
        let file = meta.file().unwrap_or("");
        let line = meta.line().unwrap_or(0);
        let level = *meta.level();
        let name = ros1_protocols::this_node::name();
        let who = if name.is_empty() {
            String::new()
        } else {
            format!(" {name}")
        };
        let stamp = ros1_protocols::this_node::wall_now();
        let line_text = format!(
            "[{level:>5}] [{}.{:06}]{who}: {}",
            stamp.sec,
            stamp.nsec / 1000,
            text.0
        );
        if level <= Level::WARN {
            eprintln!("{line_text}");
        } else {
            println!("{line_text}");
            // Block-buffered when stdout is a file (roslaunch logs, tests): flush so a
            // crash does not lose the last lines.
            let _ = std::io::Write::flush(&mut std::io::stdout());
        }
        ros1_protocols::this_node::rosout(rosout_level(level), &text.0, file, line);
    }
}

fn rosout_level(level: Level) -> i8 {
    use gem_msgs::rosgraph_msgs::Log;
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
