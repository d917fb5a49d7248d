//! `health_monitor` (issue 8): supervises any topic of any type listed in a YAML
//! configuration (`gem_core::health::config`) and reports one `diagnostic_msgs/DiagnosticStatus`
//! per topic on `/diagnostics`, at `~rate` and at once whenever a topic's level changes.
//!
//! Topics are subscribed as raw bytes and decoded with the message definition each
//! publisher sends in its connection header (`rosrust::DynamicMsg`), so types unknown at
//! compile time, even ones defined only by the publisher, are monitored; a topic that
//! appears later is picked up when its publisher connects. Silence and rates are measured
//! in ROS time (sim time and bag replay work), and the loop sleeps until the next heartbeat
//! or the next timeout: no polling.
//!
//! | direction | topic | type |
//! |---|---|---|
//! | in | every configured topic | any |
//! | out | `/diagnostics` | `diagnostic_msgs/DiagnosticArray` |

use gem_core::health::rule::{Fields, Scalar};
use gem_core::health::{config, Health, Level, Monitor};
use gem_core::time::Time;
use gem_msgs::diagnostic_msgs::{DiagnosticArray, DiagnosticStatus, KeyValue};
use gem_msgs::std_msgs::Header;
use gem_ros::node::RosError;
use gem_ros::params::ParamSpec;
use gem_ros::time::{self, to_ros, Ticker, Waker};
use rosrust::{DynamicMsg, MsgValue, RawMessage};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

const CONFIG_FILE: ParamSpec = ParamSpec::str(
    "config_file",
    "",
    "path of the YAML configuration (see `launch/config/health_monitor.yaml`)",
);
const CONFIG: ParamSpec = ParamSpec::str(
    "config",
    "",
    "the YAML configuration itself, instead of `~config_file`",
);
const RATE: ParamSpec = ParamSpec::float(
    "rate",
    1.0,
    "Hz",
    "heartbeat rate of `/diagnostics` (level changes are published at once)",
);
const HARDWARE_ID: ParamSpec =
    ParamSpec::str("hardware_id", "gem_e2e", "`hardware_id` of every status");

/// The node's parameters.
pub const PARAMS: [ParamSpec; 4] = [CONFIG_FILE, CONFIG, RATE, HARDWARE_ID];

/// Flattens a decoded message into `out` under `prefix` (`pose.position.x`,
/// `points.3.x`); times and durations become seconds.
pub fn flatten(prefix: &str, value: &MsgValue, out: &mut Fields) {
    let key = |name: &str| {
        if prefix.is_empty() {
            name.to_owned()
        } else {
            format!("{prefix}.{name}")
        }
    };
    let scalar = match value {
        MsgValue::Message(fields) => {
            for (name, v) in fields {
                flatten(&key(name), v, out);
            }
            return;
        }
        MsgValue::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                flatten(&key(&i.to_string()), v, out);
            }
            return;
        }
        MsgValue::Bool(b) => Scalar::Bool(*b),
        MsgValue::I8(v) => Scalar::Num(f64::from(*v)),
        MsgValue::I16(v) => Scalar::Num(f64::from(*v)),
        MsgValue::I32(v) => Scalar::Num(f64::from(*v)),
        MsgValue::I64(v) => Scalar::Num(*v as f64),
        MsgValue::U8(v) => Scalar::Num(f64::from(*v)),
        MsgValue::U16(v) => Scalar::Num(f64::from(*v)),
        MsgValue::U32(v) => Scalar::Num(f64::from(*v)),
        MsgValue::U64(v) => Scalar::Num(*v as f64),
        MsgValue::F32(v) => Scalar::Num(f64::from(*v)),
        MsgValue::F64(v) => Scalar::Num(*v),
        MsgValue::String(s) => Scalar::Str(s.clone()),
        MsgValue::Time(t) => Scalar::Num(f64::from(t.sec) + f64::from(t.nsec) * 1e-9),
        MsgValue::Duration(d) => Scalar::Num(f64::from(d.sec) + f64::from(d.nsec) * 1e-9),
    };
    out.insert(prefix.to_owned(), scalar);
}

/// The monitor, the levels last published, and the output.
struct Shared {
    monitor: Monitor,
    published: Vec<Level>,
    last_now: Time,
    out: rosrust::Publisher<DiagnosticArray>,
    hardware_id: String,
    /// Wakes the loop when a silent topic speaks: its first staleness deadline appears,
    /// and the loop, asleep until its next tick, must learn it.
    waker: Waker,
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
        let healths = self.monitor.healths(now);
        let levels: Vec<Level> = healths.iter().map(|h| h.level).collect();
        if !always && levels == self.published {
            return now;
        }
        for (h, old) in healths.iter().zip(&self.published) {
            if h.level != *old {
                tracing::info!("{}: {old} => {} ({})", h.topic, h.level, h.message);
            }
        }
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
                .collect(),
        };
        if let Err(e) = self.out.send(msg) {
            tracing::error!("cannot publish /diagnostics: {e}");
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

fn lock(s: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// Decoders per publisher (caller id), from the connection headers.
type Decoders = Arc<Mutex<HashMap<String, (String, DynamicMsg)>>>;

fn subscribe(
    shared: &Arc<Mutex<Shared>>,
    index: usize,
    topic: &str,
) -> Result<rosrust::Subscriber, RosError> {
    let decoders: Decoders = Arc::default();
    let on_connect = decoders.clone();
    let topic_name = topic.to_owned();
    let s = shared.clone();
    Ok(rosrust::subscribe_with_ids_and_headers(
        topic,
        1000,
        move |raw: RawMessage, caller: &str| {
            let decoded = {
                let d = decoders.lock().unwrap_or_else(|e| e.into_inner());
                d.get(caller).map(|(type_name, dm)| {
                    (type_name.clone(), dm.decode(std::io::Cursor::new(&raw.0)))
                })
            };
            match decoded {
                Some((type_name, Ok(value))) => {
                    let mut fields = Fields::new();
                    flatten("", &MsgValue::Message(value), &mut fields);
                    let seq = match fields.get("header.seq") {
                        Some(Scalar::Num(n)) if *n >= 0.0 => Some(*n as u64),
                        _ => None,
                    };
                    let mut sh = lock(&s);
                    let now = time::now();
                    // rosrust's subscriber drops a burst silently; a gap in the
                    // publisher's header.seq is how a loss is counted and reported.
                    if let Some(seq) = seq {
                        let lost = sh.monitor.on_sequence(index, caller, seq);
                        if lost > 0 {
                            tracing::warn!(
                                "{topic_name}: {lost} message(s) from {caller} lost before the monitor (header.seq reached {seq})"
                            );
                        }
                    }
                    let was_silent = sh.published[index] == Level::Stale;
                    sh.monitor.on_message(index, now, &type_name, fields);
                    sh.publish(false);
                    let waker = sh.waker.clone();
                    drop(sh);
                    if was_silent {
                        waker.wake();
                    }
                }
                Some((type_name, Err(e))) => {
                    tracing::warn!("{topic_name}: cannot decode a {type_name} from {caller}: {e}")
                }
                None => tracing::warn!("{topic_name}: a message from {caller} before its header"),
            }
        },
        move |mut headers: HashMap<String, String>| {
            let caller = headers.remove("callerid").unwrap_or_default();
            let type_name = headers.get("type").cloned().unwrap_or_default();
            match DynamicMsg::from_headers(headers) {
                Ok(dm) => {
                    on_connect
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(caller, (type_name, dm));
                }
                Err(e) => tracing::error!("cannot decode {type_name} from {caller}: {e}"),
            }
        },
    )?)
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
    crate::run_node("health_monitor", run)
}

fn run() -> anyhow::Result<()> {
    let specs = load_config()?;
    let rate = RATE.positive_f64()?;
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
        out: rosrust::publish("/diagnostics", 10).map_err(RosError::from)?,
        hardware_id,
        waker: Waker::default(),
    }));
    let _subs = topics
        .iter()
        .enumerate()
        .map(|(i, t)| subscribe(&shared, i, t))
        .collect::<Result<Vec<_>, _>>()?;
    tracing::info!("health_monitor up: {} topics, {rate} Hz", topics.len());
    // Report at once: "never received" is news too.
    lock(&shared).publish(true);
    let ticker = Ticker::from_rate(rate).with_waker(lock(&shared).waker.clone());
    time::deadline_loop(
        ticker,
        || lock(&shared).catch_up(),
        || {
            lock(&shared).publish(true);
        },
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readme_lists_exactly_this_table() {
        let readme = include_str!("../../../docs/nodes/health_monitor.md");
        gem_ros::params::check_readme(&PARAMS, readme).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn shipped_config_parses() {
        let text = include_str!("../../../launch/config/health_monitor.yaml");
        let specs = config::parse(text).unwrap_or_else(|e| panic!("{e}"));
        assert!(specs.len() >= 9);
    }

    #[test]
    fn flatten_names_nested_fields_and_array_elements() {
        use std::collections::HashMap;
        let point =
            |x: f64| MsgValue::Message(HashMap::from([("x".to_string(), MsgValue::F64(x))]));
        let msg = HashMap::from([
            (
                "points".to_string(),
                MsgValue::Array(vec![point(1.0), point(2.0)]),
            ),
            ("ok".to_string(), MsgValue::Bool(true)),
            ("n".to_string(), MsgValue::U8(7)),
            ("name".to_string(), MsgValue::String("gem".into())),
        ]);
        let mut out = Fields::new();
        flatten("", &MsgValue::Message(msg), &mut out);
        assert_eq!(out["points.1.x"], Scalar::Num(2.0));
        assert_eq!(out["ok"], Scalar::Bool(true));
        assert_eq!(out["n"], Scalar::Num(7.0));
        assert_eq!(out["name"], Scalar::Str("gem".into()));
        assert_eq!(out.len(), 5);
    }
}
