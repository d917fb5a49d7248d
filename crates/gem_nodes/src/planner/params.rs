//! The task planner's private parameters: one table, read once at start-up.

use gem_ros::params::{ParamError, ParamSpec};
use std::path::PathBuf;
use std::time::Duration;

gem_ros::param_table! {
    /// Every parameter, in the order of its documentation table.
    pub const PARAMS = [
        RATE = ParamSpec::float("rate", 20.0, "Hz", "heartbeat rate of `task_planner_status` (changes are also published at once)").positive();
        WAYPOINT_FILE = ParamSpec::str("waypoint_file", "", "a waypoint file to serve at start-up (empty: none)");
        WAYPOINT_DIR = ParamSpec::str("waypoint_dir", "", "relative waypoint paths resolve against this directory (empty: the node's working directory)");
        SERVER_TIMEOUT = ParamSpec::float("server_timeout_s", 5.0, "s", "wall time to wait for the action server before logging an error (waiting continues)").positive();
        STATE_TIMEOUT = ParamSpec::float("system_state_timeout_s", gem_core::state_manager::SYSTEM_STATE_TIMEOUT_S, "s", "no `system_state` for this long (ROS time) is treated as ERROR").positive();
    ];
}

/// Validated settings of the planner.
#[derive(Clone, Debug)]
pub struct Params {
    /// Status heartbeat rate, Hz.
    pub rate_hz: f64,
    /// File to serve at start-up.
    pub waypoint_file: Option<String>,
    /// Base of relative paths.
    pub waypoint_dir: PathBuf,
    /// How long to wait for the server before complaining.
    pub server_timeout: Duration,
    /// Missing `system_state` limit.
    pub state_timeout: Duration,
}

impl Params {
    /// Reads and validates every parameter.
    pub fn load() -> Result<Params, ParamError> {
        let file = WAYPOINT_FILE.string()?;
        let dir = WAYPOINT_DIR.string()?;
        Ok(Params {
            rate_hz: RATE.f64()?,
            waypoint_file: (!file.is_empty()).then_some(file),
            waypoint_dir: if dir.is_empty() {
                std::env::current_dir().unwrap_or_default()
            } else {
                PathBuf::from(dir)
            },
            server_timeout: SERVER_TIMEOUT.seconds()?,
            state_timeout: STATE_TIMEOUT.seconds()?,
        })
    }

    /// `file` as given if absolute, else under `~waypoint_dir`.
    pub fn resolve(&self, file: &str) -> PathBuf {
        let p = PathBuf::from(file);
        if p.is_absolute() {
            p
        } else {
            self.waypoint_dir.join(p)
        }
    }
}
