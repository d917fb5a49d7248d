//! `signal_sources`: the state manager's battery, temperature, signal and e-stop inputs on
//! a real car, each from the source a YAML file declares (`gem_core::signal_sources`): a
//! field of any topic (`topic.rs`), the computer's own temperature sensors, or the heartbeat
//! link to `gemctl operator` on the operator's computer ([`operator`]).
//!
//! The file is checked whole at start-up; a bad one stops the node with the file, the input
//! and the reason. Each input is published at `~rate` while its source is fresh, and not at
//! all once it is stale: the state manager then sees the input stale (STALE_DATA), never a
//! made-up value. An e-stop press is published at once, from the message that carries it.
//! Where each input comes from is stored under `~sources/<input>` for `gemctl status`.
//!
//! Its topics: [`INTERFACE`].

pub mod operator;
mod outputs;
mod sensors;
mod topic;

pub use outputs::INTERFACE;
use outputs::{Board, Outputs};
use sensors::Thermal;

use gem_core::signal_sources::link::wire::OperatorKey;
use gem_core::signal_sources::readings::Readings;
use gem_core::signal_sources::{self as core, Fed, Source, Sources};
use gem_core::state_manager::Strength;
use gem_msgs::diagnostic_msgs::{DiagnosticArray, KeyValue};
use gem_msgs::std_srvs::TriggerReq;
use gem_ros::params::ParamSpec;
use gem_ros::time::{self, Ticker};
use ros1_protocols::Lock;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

gem_ros::param_table! {
    /// The node's parameters.
    pub const PARAMS = [
        SOURCES_FILE = ParamSpec::str("sources_file", "", "path of the YAML file that says where each input comes from (see `launch/config/signal_sources/gem_e2.yaml`)");
        RATE = ParamSpec::float("rate", 20.0, "Hz", "publication rate of each input whose source is fresh").positive();
        SYSFS_ROOT = ParamSpec::str("sysfs_root", "/sys", "where thermal sources find `class/thermal` and `class/hwmon` (a test or a simulator points it at a folder)");
        REQUIRE_OPERATOR_KEY = ParamSpec::bool("require_operator_key", false, "refuse to start when the operator link has no `key_file` (supervisor.launch sets it on platform:=gem_e2: on the car only a holder of the operator key keeps the link up or engages the car)");
        OPERATOR_PORT = ParamSpec::int("operator_port", core::link::DEFAULT_PORT as i64, "", "UDP port the operator link listens on (all addresses); `gemctl operator --car HOST:PORT` sends there").within(1.0, 65535.0);
    ];
}

/// Reads and checks the sources file; errors name it.
pub fn load(path: &str) -> anyhow::Result<Sources> {
    anyhow::ensure!(
        !path.is_empty(),
        "no sources file: set ~sources_file (docs/nodes/signal_sources.md)"
    );
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{path}: cannot read: {e}"))?;
    core::parse(&text).map_err(|e| anyhow::anyhow!("{path}: {e}"))
}

/// `signal_sources`' `main`.
pub fn main() -> anyhow::Result<()> {
    crate::run_node("signal_sources", &PARAMS, INTERFACE, run)
}

fn run() -> anyhow::Result<()> {
    let path = SOURCES_FILE.string()?;
    let sources = load(&path)?;
    let rate = RATE.f64()?;
    let sysfs = PathBuf::from(SYSFS_ROOT.string()?);
    let port = OPERATOR_PORT.i64()? as u16;
    let require_key = REQUIRE_OPERATOR_KEY.bool_value()?;
    if !time::wait_for_valid_time() {
        return Ok(());
    }
    let outputs = Arc::new(Outputs::new(&sources)?);
    let board: Board = Arc::new(Mutex::new(Readings::new(&sources)));
    let mut subscriptions = Vec::new();
    let mut thermal = None;
    let mut link = None;
    for (fed, source) in sources.iter() {
        let described = source.describe();
        if let Some(p) = ros1_protocols::this_node::param(&format!("~sources/{}", fed.key())) {
            if let Err(e) = p.set(&described) {
                tracing::warn!("cannot store ~sources/{}: {e}", fed.key());
            }
        }
        tracing::info!("{}: {described}", fed.input().topic());
        match source {
            Source::Field(f) => subscriptions.push(topic::subscribe(
                fed,
                f.clone(),
                board.clone(),
                outputs.clone(),
            )?),
            Source::Thermal(t) => thermal = Some(Thermal::new(t.clone(), &sysfs)),
            Source::Operator(limits, key_file) => {
                let key = operator_key(&path, key_file.as_deref(), require_key)?;
                link = Some(operator::Link::start(*limits, key, port, engage_bridge()?)?);
            }
        }
    }
    tracing::info!("signal_sources up: {path}, {rate} Hz");
    let mut status = Status::new()?;
    let mut ticker = Ticker::from_rate(rate).relaxed();
    while let Some(now) = ticker.wait() {
        if let Some(t) = thermal.as_mut() {
            if let Some((celsius, stale_after)) = t.read(now) {
                board
                    .locked()
                    .read(Fed::Temperature, celsius, now, stale_after);
            }
        }
        // Published under the board's lock, as a press is (`topic.rs`): a press sent from a
        // message's thread is never followed by this tick's older release.
        let mut readings = board.locked();
        for (fed, value) in readings.due(now) {
            outputs.send(fed, value, now);
        }
        drop(readings);
        if let Some(link) = &link {
            outputs.send(Fed::Signal, f64::from(link.strength().code()), now);
        }
        status.report(link.as_ref(), now);
    }
    drop(subscriptions);
    Ok(())
}

/// The operator key named by the sources file at `sources` (relative to its folder, or
/// from the home folder with `~/`); none without `key_file`, which is an error when
/// `required`.
fn operator_key(
    sources: &str,
    key_file: Option<&str>,
    required: bool,
) -> anyhow::Result<Option<OperatorKey>> {
    let Some(file) = key_file else {
        anyhow::ensure!(
            !required,
            "{sources}: the operator link has no key_file, and this car requires one: make a key with `gemctl operator keygen --out /etc/gem/operator.key`, name it in the file (`operator: {{key_file: /etc/gem/operator.key}}`) and give it to the operator's station (docs/security.md)"
        );
        tracing::warn!(
            "operator link UNSIGNED (no key_file in {sources}): any host on the network can keep it up or engage the car; give it a key on a real car (docs/security.md)"
        );
        return Ok(None);
    };
    let path = match file.strip_prefix("~/") {
        Some(rest) => PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(rest),
        None => std::path::Path::new(sources)
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .join(file),
    };
    let key = OperatorKey::load(&path).map_err(|e| anyhow::anyhow!("{sources}: {e}"))?;
    tracing::info!("operator link signed with the key in {}", path.display());
    Ok(Some(key))
}

/// Engages the car through pacmod_bridge's `~enable` on the operator's signed request.
fn engage_bridge() -> anyhow::Result<operator::Engage> {
    let client = Mutex::new(crate::interface::client(&outputs::ENGAGE)?);
    Ok(Arc::new(move || {
        let answer = client
            .locked()
            .call(&TriggerReq {}, std::time::Duration::from_secs(2));
        match answer {
            Ok(a) => (a.success, a.message),
            Err(e) => (false, format!("cannot reach the bridge: {e}")),
        }
    }))
}

/// The node's `/diagnostics` status, at 1 Hz and at once on a change of the link's
/// strength: the operator link's, or without a link, only while the trust file refuses
/// peers, theirs (each status names the refusals: `crate::interface::publish_status`).
struct Status {
    out: ros1_protocols::runtime::Publisher<DiagnosticArray>,
    last: Option<(gem_core::time::Time, Option<Strength>)>,
}

impl Status {
    fn new() -> anyhow::Result<Status> {
        Ok(Status {
            out: outputs::DIAGNOSTICS.publish()?,
            last: None,
        })
    }

    fn report(&mut self, link: Option<&operator::Link>, now: gem_core::time::Time) {
        let strength = link.map(operator::Link::strength);
        if link.is_none() && ros1_protocols::trust::refusal_summary().is_none() {
            return;
        }
        let due = self.last.is_none_or(|(at, was)| {
            was != strength || now.saturating_since(at) >= std::time::Duration::from_secs(1)
        });
        if !due {
            return;
        }
        self.last = Some((now, strength));
        let (what, level, message, values) = match (link, strength) {
            (Some(link), Some(strength)) => (
                "operator link",
                if strength == Strength::Connected {
                    0
                } else {
                    1
                },
                format!("{strength:?}"),
                link.status()
                    .into_iter()
                    .map(|(key, value)| KeyValue { key, value })
                    .collect(),
            ),
            _ => (
                "trust file",
                1,
                "refusing untrusted peers".to_owned(),
                Vec::new(),
            ),
        };
        crate::interface::publish_status(&self.out, now, what, (level, message), values);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gem_core::names::global;

    const GEM_E2: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../launch/config/signal_sources/gem_e2.yaml"
    );

    #[test]
    fn the_gem_e2_file_reads_what_gem_e2_sim_simulates() {
        let s = load(GEM_E2).unwrap_or_else(|e| panic!("{e}"));
        let topic = |f: Fed| match s.of(f) {
            Some(Source::Field(field)) => field.topic.clone(),
            other => panic!("{f:?}: {other:?}"),
        };
        assert_eq!(topic(Fed::Battery), global::GEM_BMS);
        assert_eq!(topic(Fed::Estop), global::GEM_ESTOP_BUTTON);
        assert!(
            matches!(s.of(Fed::Temperature), Some(Source::Thermal(t)) if t.sensors == ["thermal_zone0"])
        );
        assert!(matches!(s.of(Fed::Signal), Some(Source::Operator(..))));
    }

    #[test]
    fn a_missing_or_bad_file_is_refused_naming_it() {
        let e = load("/nonexistent/sources.yaml").unwrap_err().to_string();
        assert!(e.contains("/nonexistent/sources.yaml"), "{e}");
        let e = load("").unwrap_err().to_string();
        assert!(e.contains("~sources_file"), "{e}");
    }

    #[test]
    fn the_operator_key_is_found_beside_the_file_or_at_home_and_required_on_the_car() {
        let dir = std::env::temp_dir().join(format!("gem_key_node_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let key = OperatorKey::generate().unwrap();
        key.write_new(&dir.join("operator.key")).unwrap();
        let sources = dir.join("sources.yaml").display().to_string();
        let beside = operator_key(&sources, Some("operator.key"), true).unwrap();
        assert_eq!(beside, Some(key));
        assert!(operator_key(&sources, None, false).unwrap().is_none());
        let e = operator_key(&sources, None, true).unwrap_err().to_string();
        assert!(e.contains("gemctl operator keygen"), "{e}");
        let e = operator_key(&sources, Some("~/no/such.key"), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no/such.key") && e.contains(&sources), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
