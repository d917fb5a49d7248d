//! `health_monitor`: supervises any topic of any type listed in a YAML
//! configuration (`gem_core::health::config`) and reports one `diagnostic_msgs/DiagnosticStatus`
//! per topic on `/diagnostics`, at `~rate` and at once whenever a topic's level changes.
//!
//! Topics are subscribed as raw bytes, decoded with the message definition each publisher
//! sends in its connection header and flattened by `gem_introspect` ([`MessageDecoder`]),
//! so types unknown at compile time, even ones defined only by the publisher, are
//! monitored; a topic that appears later is picked up when its publisher connects. Silence
//! and rates are measured in ROS time (sim time and bag replay work), and the loop sleeps
//! until the next heartbeat or the next timeout: no polling.
//!
//! Its topics: [`INTERFACE`].

use gem_core::health::rule::{Fields, Scalar};
use gem_core::health::{config, Health, Level, Monitor};
use gem_core::time::Time;
use gem_introspect::{Decoder, Flat, IntrospectError, ValueRef};
use gem_msgs::diagnostic_msgs::{DiagnosticArray, DiagnosticStatus, KeyValue};
use gem_msgs::std_msgs::Header;
use gem_ros::params::ParamSpec;
use gem_ros::time::{self, to_ros, Ticker};
use gem_ros::topics::{Decl, Entry, Role};
use ros1_protocols::direct::{Arrival, Link};
use ros1_protocols::lazy::LazySubscriber;
use ros1_protocols::master;
use ros1_protocols::Lock;
use ros1_protocols::RosError;
use rosrust::RawMessage;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

gem_ros::param_table! {
    /// The node's parameters.
    pub const PARAMS = [
        CONFIG_FILE = ParamSpec::str("config_file", "", "path of the YAML configuration (see `launch/config/health_monitor.yaml`)");
        CONFIG = ParamSpec::str("config", "", "the YAML configuration itself, instead of `~config_file`");
        RATE = ParamSpec::float("rate", 1.0, "Hz", "heartbeat rate of `/diagnostics` (level changes are published within 0.2 s, 1 s while ROS time stands still)").positive();
        HARDWARE_ID = ParamSpec::str("hardware_id", "gem_e2e", "`hardware_id` of every status");
    ];
}

/// The report.
pub const DIAGNOSTICS: Decl<DiagnosticArray> = Decl::publishes(
    gem_core::names::DIAGNOSTICS,
    10,
    "one status per configured topic and one for the master, at `~rate` and within 0.2 s of every level change (1 s while ROS time stands still)",
);

/// Every topic of the node.
pub const INTERFACE: &[Entry] = &[
    Entry::configured(
        "every configured topic",
        Role::Subscribes,
        "decoded with the definition its publisher sends",
    ),
    DIAGNOSTICS.entry(),
];

/// A flattened value as the rules see it: integers, floats, times and durations (in
/// seconds) are numbers; booleans and strings stay what they are.
pub fn scalar(value: ValueRef<'_>) -> Scalar {
    match value {
        ValueRef::Bool(b) => Scalar::Bool(b),
        ValueRef::Int(i) => Scalar::Num(i as f64),
        ValueRef::UInt(u) => Scalar::Num(u as f64),
        ValueRef::Float(x) => Scalar::Num(x),
        ValueRef::Time(sec, nsec) => Scalar::Num(f64::from(sec) + f64::from(nsec) * 1e-9),
        ValueRef::Duration(sec, nsec) => Scalar::Num(f64::from(sec) + f64::from(nsec) * 1e-9),
        ValueRef::Str(s) => Scalar::Str(s.to_owned()),
    }
}

/// Decodes one publisher's messages with the definition it sent in its connection header
/// (`type` and `message_definition`), into the flattened [`Fields`] the rules read
/// (`pose.position.x`, `points.3.x`). The [`Flat`] is reused from one message to the next.
pub struct MessageDecoder {
    type_name: String,
    decoder: Decoder,
    flat: Flat,
}

impl MessageDecoder {
    /// A decoder for `type_name` (`pkg/Type`) from its full definition text (the main
    /// definition and every dependency after it).
    pub fn new(type_name: &str, definition: &str) -> Result<MessageDecoder, IntrospectError> {
        Ok(MessageDecoder {
            type_name: type_name.to_owned(),
            decoder: Decoder::from_definition(type_name, definition)?,
            flat: Flat::default(),
        })
    }

    /// The decoder for a link's publisher, from its connection header (`callerid`,
    /// `type`, `message_definition`): the caller id and the decoder, or why there is none
    /// (the message names the type and the caller).
    pub fn for_link(link: &Link) -> Result<(String, MessageDecoder), String> {
        let field = |name: &str| link.header.get(name).map_or("", String::as_str);
        let (caller, type_name) = (field("callerid"), field("type"));
        let definition = link.header.get("message_definition").ok_or_else(|| {
            format!("cannot decode {type_name} from {caller}: no message_definition in its connection header")
        })?;
        MessageDecoder::new(type_name, definition)
            .map(|md| (caller.to_owned(), md))
            .map_err(|e| format!("cannot decode {type_name} from {caller}: {e}"))
    }

    /// The type the publisher declared.
    pub fn type_name(&self) -> &str {
        &self.type_name
    }

    /// Decodes one serialized message (without its length prefix) and flattens it.
    pub fn fields(&mut self, bytes: &[u8]) -> Result<Fields, IntrospectError> {
        self.decoder.flatten(bytes, &mut self.flat)?;
        Ok(self
            .flat
            .iter()
            .map(|(key, value)| (key.to_owned(), scalar(value)))
            .collect())
    }
}

/// The monitor, the levels last published, and the output.
struct Shared {
    monitor: Monitor,
    published: Vec<Level>,
    last_now: Time,
    out: ros1_protocols::runtime::Publisher<DiagnosticArray>,
    hardware_id: String,
}

impl Shared {
    /// Publishes every topic's status when `always` or when a level changed; returns the
    /// ROS time it judged at. `now` is read here, under the lock, so every thread sees ROS
    /// time in order and only a real jump back (a simulator reset) looks like one.
    fn publish(&mut self, always: bool) -> Time {
        let now = time::now();
        if now < self.last_now {
            tracing::warn!("ROS time jumped back to {now}: silences restart");
            self.monitor.reset_clock(now);
        }
        self.last_now = now;
        let (master_level, master_message) = gem_core::health::master_health(master::reachable());
        let mut levels = self.monitor.levels(now);
        levels.push(master_level);
        if !always && levels == self.published {
            return now;
        }
        let healths = self.monitor.healths(now);
        for (h, old) in healths.iter().zip(&self.published) {
            if h.level != *old {
                tracing::info!("{}: {old} => {} ({})", h.topic, h.level, h.message);
            }
        }
        let master_status = DiagnosticStatus {
            level: master_level as i8,
            name: gem_core::health::MASTER_STATUS.into(),
            message: master_message.into(),
            hardware_id: self.hardware_id.clone(),
            values: [KeyValue {
                key: "uri".into(),
                value: ros1_protocols::xmlrpc::master_uri(),
            }]
            .into_iter()
            .chain(crate::interface::refused_value())
            .collect(),
        };
        self.published = levels;
        let msg = DiagnosticArray {
            header: Header {
                seq: 0,
                stamp: to_ros(now),
                frame_id: String::new(),
            },
            status: healths
                .iter()
                .map(|h| status(h, &self.hardware_id))
                .chain([master_status])
                .collect(),
        };
        if let Err(e) = self.out.send(msg) {
            tracing::error!("cannot publish {}: {e}", DIAGNOSTICS.name());
        }
        now
    }

    /// Publishes what changed by now and returns the next timeout after it (see
    /// [`time::deadline_loop`]).
    fn catch_up(&mut self) -> Option<Time> {
        let now = self.publish(false);
        self.monitor.next_deadline(now)
    }
}

fn status(h: &Health, hardware_id: &str) -> DiagnosticStatus {
    DiagnosticStatus {
        level: h.level as i8,
        name: h.topic.clone(),
        message: h.message.clone(),
        hardware_id: hardware_id.to_owned(),
        values: h
            .values
            .iter()
            .map(|(key, value)| KeyValue {
                key: key.clone(),
                value: value.clone(),
            })
            .collect(),
    }
}

/// How often the subscriptions are read. They are read lazily (no thread wakes for each
/// message; each message is judged at its arrival time all the same), so a level change
/// reaches `/diagnostics` within this: five times faster than the 1 Hz at which the
/// diagnostic aggregator and its viewers look. Each read of a link that took a message
/// makes the kernel acknowledge it to the publisher, so reading half as often halves that
/// traffic as well as the reads.
const READ_EVERY: Duration = Duration::from_millis(200);

/// Decoders per publisher (caller id), from the connection headers.
type Decoders = Arc<Mutex<HashMap<String, MessageDecoder>>>;

fn subscribe(
    shared: &Arc<Mutex<Shared>>,
    index: usize,
    topic: &str,
) -> Result<LazySubscriber, RosError> {
    let decoders: Decoders = Arc::default();
    let on_connect = decoders.clone();
    let topic_name = topic.to_owned();
    let s = shared.clone();
    let on_link = move |link: &Link| match MessageDecoder::for_link(link) {
        Ok((caller, md)) => {
            on_connect.locked().insert(caller, md);
        }
        Err(e) => tracing::error!("{e}"),
    };
    ros1_protocols::lazy::subscribe_lazily_linked(
        topic,
        on_link,
        move |raw: RawMessage, arrival: Arrival, link: &Link| {
            let caller = link.caller_id();
            // Held while the message is judged: the type name is borrowed, not copied, and
            // only this topic's link threads and its `on_link` take this lock.
            let mut d = decoders.locked();
            let decoded = d
                .get_mut(caller)
                .map(|md| (md.fields(&raw.0), md.type_name()));
            match decoded {
                Some((Ok(fields), type_name)) => {
                    let seq = match fields.get("header.seq") {
                        Some(Scalar::Num(n)) if *n >= 0.0 => Some(*n as u64),
                        _ => None,
                    };
                    let mut sh = s.locked();
                    // A publisher's queue can drop a burst (rosrust's is lossy); a gap in the
                    // publisher's header.seq is how a loss is counted and reported.
                    if let Some(seq) = seq {
                        let lost = sh.monitor.on_sequence(index, caller, seq);
                        if lost > 0 {
                            tracing::warn!(
                                "{topic_name}: {lost} message(s) from {caller} lost before the monitor (header.seq reached {seq})"
                            );
                        }
                    }
                    // Judged at its arrival, not at the (later) read.
                    let at = time::at(arrival.wire);
                    sh.monitor.on_message(index, at, type_name, fields);
                    // Levels only, compared: cheap. A link's own thread reads what queued
                    // every second even while ROS time stands still, and a change it reads
                    // is published then.
                    sh.publish(false);
                }
                Some((Err(e), type_name)) => {
                    tracing::warn!("{topic_name}: cannot decode a {type_name} from {caller}: {e}")
                }
                None => tracing::warn!("{topic_name}: a message from {caller} before its header"),
            }
        },
    )
}

/// Reads the configuration from `~config` or `~config_file` (exactly one).
fn load_config() -> anyhow::Result<Vec<gem_core::health::TopicSpec>> {
    let (text, origin) = match (CONFIG.string()?, CONFIG_FILE.string()?) {
        (t, f) if !t.is_empty() && !f.is_empty() => {
            anyhow::bail!("set ~config or ~config_file, not both")
        }
        (t, _) if !t.is_empty() => (t, "~config".to_owned()),
        (_, f) if !f.is_empty() => (
            std::fs::read_to_string(&f).map_err(|e| anyhow::anyhow!("~config_file {f}: {e}"))?,
            f,
        ),
        _ => anyhow::bail!("no configuration: set ~config_file (a YAML file) or ~config"),
    };
    config::parse(&text).map_err(|e| anyhow::anyhow!("{origin}: {e}"))
}

/// `health_monitor`'s `main`.
pub fn main() -> anyhow::Result<()> {
    crate::run_node("health_monitor", &PARAMS, INTERFACE, run)
}

fn run() -> anyhow::Result<()> {
    let specs = load_config()?;
    let rate = RATE.f64()?;
    let hardware_id = HARDWARE_ID.string()?;
    if !time::wait_for_valid_time() {
        return Ok(());
    }
    let now = time::now();
    let topics: Vec<String> = specs.iter().map(|s| s.topic.clone()).collect();
    let shared = Arc::new(Mutex::new(Shared {
        published: vec![Level::Stale; specs.len()],
        monitor: Monitor::new(specs, now),
        last_now: now,
        out: DIAGNOSTICS.publish()?,
        hardware_id,
    }));
    let subs = topics
        .iter()
        .enumerate()
        .map(|(i, t)| subscribe(&shared, i, t))
        .collect::<Result<Vec<_>, _>>()?;
    tracing::info!("health_monitor up: {} topics, {rate} Hz", topics.len());
    // Report at once: "never received" is news too.
    shared.locked().publish(true);
    // Relaxed ticks and reads: the judgements use each message's arrival, not the phase
    // of the look that reads it.
    let ticker = Ticker::from_rate(rate).relaxed().relaxed_deadlines();
    time::deadline_loop(
        ticker,
        || {
            // Read what arrived (outside the lock: each message takes it), judge, and
            // come back at the next timeout or to read again, whichever is first.
            subs.iter().for_each(LazySubscriber::catch_up);
            let mut sh = shared.locked();
            let timeout = sh.catch_up();
            let read_again = sh.last_now.saturating_add(READ_EVERY);
            Some(timeout.map_or(read_again, |t| t.min(read_again)))
        },
        || {
            shared.locked().publish(true);
        },
        |_| {},
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gem_introspect::encode::Encoder;

    #[test]
    fn shipped_config_parses() {
        let text = include_str!("../../../launch/config/health_monitor.yaml");
        let specs = config::parse(text).unwrap_or_else(|e| panic!("{e}"));
        assert!(specs.len() >= 9);
    }

    const SEP: &str =
        "================================================================================";

    #[test]
    fn fields_name_nested_fields_and_array_elements() {
        let definition = format!(
            "Header header\nPoint[] points\nbool ok\nuint8 n\nint8 i\nstring name\nduration d\n\
             {SEP}\nMSG: std_msgs/Header\nuint32 seq\ntime stamp\nstring frame_id\n\
             {SEP}\nMSG: gem_test/Point\nfloat64 x\n"
        );
        let mut md = MessageDecoder::new("gem_test/Sample", &definition).unwrap();
        assert_eq!(md.type_name(), "gem_test/Sample");
        let sample = |points: &[f64]| {
            let e = Encoder::default()
                .u32(41)
                .u32(12)
                .u32(500_000_000)
                .str("map");
            let e = points
                .iter()
                .fold(e.u32(points.len() as u32), |e, x| e.f64(*x));
            e.u8(1).u8(7).u8(0xfe).str("gem").i32(-1).i32(0).0
        };
        let bytes = sample(&[1.0, 2.0]);
        for _ in 0..2 {
            // The second time through, the reused `Flat` writes values only.
            let out = md.fields(&bytes).unwrap();
            assert_eq!(out["header.seq"], Scalar::Num(41.0));
            assert_eq!(
                out["header.stamp"],
                Scalar::Num(12.0 + 500_000_000.0 * 1e-9)
            );
            assert_eq!(out["header.frame_id"], Scalar::Str("map".into()));
            assert_eq!(out["points.0.x"], Scalar::Num(1.0));
            assert_eq!(out["points.1.x"], Scalar::Num(2.0));
            assert_eq!(out["ok"], Scalar::Bool(true));
            assert_eq!(out["n"], Scalar::Num(7.0));
            assert_eq!(out["i"], Scalar::Num(-2.0));
            assert_eq!(out["name"], Scalar::Str("gem".into()));
            assert_eq!(out["d"], Scalar::Num(-1.0));
            assert_eq!(out.len(), 10);
        }
        // An empty array has no elements, which is what `nonempty(points)` looks for.
        let out = md.fields(&sample(&[])).unwrap();
        assert!(!out.keys().any(|k| k.starts_with("points.")));
        assert_eq!(out["ok"], Scalar::Bool(true));
        assert_eq!(out.len(), 8);
    }

    #[test]
    fn a_generated_message_decodes_with_the_definition_it_sends() {
        use gem_msgs::nav_msgs::Odometry;
        use rosrust::{Message, RosMsg};
        let mut m = Odometry::default();
        m.header.seq = 3;
        m.header.frame_id = "world".into();
        m.pose.pose.position.x = 1.5;
        m.pose.covariance[35] = 0.25;
        m.twist.twist.linear.x = 2.8;
        let mut bytes = Vec::new();
        m.encode(&mut bytes).unwrap();
        let mut md =
            MessageDecoder::new(&Odometry::msg_type(), &Odometry::msg_definition()).unwrap();
        let out = md.fields(&bytes).unwrap();
        assert_eq!(out["header.seq"], Scalar::Num(3.0));
        assert_eq!(out["header.frame_id"], Scalar::Str("world".into()));
        assert_eq!(out["child_frame_id"], Scalar::Str(String::new()));
        assert_eq!(out["pose.pose.position.x"], Scalar::Num(1.5));
        assert_eq!(out["pose.pose.orientation.w"], Scalar::Num(0.0));
        assert_eq!(out["pose.covariance.35"], Scalar::Num(0.25));
        assert_eq!(out["twist.twist.linear.x"], Scalar::Num(2.8));
        // header 3, child_frame_id 1, pose 7 + 36, twist 6 + 36.
        assert_eq!(out.len(), 89);
    }

    #[test]
    fn bad_definitions_and_bad_bytes_are_errors() {
        assert!(MessageDecoder::new("", "float64 x\n").is_err());
        assert!(MessageDecoder::new("gem_test/Bad", "Missing m\n").is_err());
        let mut md = MessageDecoder::new("gem_test/X", "float64 x\n").unwrap();
        assert!(md.fields(&[0; 7]).is_err());
        assert!(md.fields(&[0; 9]).is_err());
        assert_eq!(md.fields(&[0; 8]).unwrap()["x"], Scalar::Num(0.0));
    }
}
