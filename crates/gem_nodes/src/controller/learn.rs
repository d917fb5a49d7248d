//! `~learn_steering`: the controller learns the car's steering while it drives
//! (`gem_core::vehicle::learn` decides everything): the PACMod's steering commands and
//! reports come from their topics, the car's speed and yaw rate and the front wheel
//! commanded from the controller's own loop. A thread of its own runs each refit
//! ([`crate::learning`]).
//! After each refit the figures go on `/diagnostics` (`<node>: steering learned`, WARN
//! naming each configured figure outside the learned bounds) and, with `~learned_file`,
//! into that calibration file (written whole, atomically).

use super::params::Learning;
use crate::learning::{stamped, LearnerThread};
use gem_core::vehicle::identify::{Command, Estimate, Motor, Rate, Reading};
use gem_core::vehicle::learn::{Configured, Figure, LearnConfig};
use gem_msgs::diagnostic_msgs::{DiagnosticArray, DiagnosticStatus, KeyValue};
use ros1_protocols::direct::DirectSubscriber;
use ros1_protocols::Lock;
use ros1_protocols::RosError;

/// The learner, its inputs' subscriptions and its thread.
pub struct SteeringLearning {
    thread: LearnerThread,
    settings: Learning,
    /// The refits published.
    published: u64,
    _subs: [DirectSubscriber; 2],
}

impl SteeringLearning {
    /// Subscribes to the PACMod's steering topics and starts the refit thread.
    pub fn start(settings: Learning, wheelbase_m: f64) -> Result<Self, RosError> {
        let thread = LearnerThread::start(LearnConfig::for_wheelbase(wheelbase_m), settings.start)?;
        let l = thread.shared();
        let cmd = crate::interface::subscribe(&super::topics::PACMOD_STEER_CMD, move |m, _| {
            l.locked().command(Command {
                t_s: stamped(m.header.stamp),
                angle_rad: m.angular_position,
                rate_rad_s: m.angular_velocity_limit,
            });
        })?;
        let l = thread.shared();
        let rpt = crate::interface::subscribe(&super::topics::PACMOD_STEER_RPT, move |m, _| {
            l.locked().report(Reading {
                t_s: stamped(m.header.stamp),
                angle_rad: m.output,
            });
        })?;
        Ok(SteeringLearning {
            thread,
            settings,
            published: 0,
            _subs: [cmd, rpt],
        })
    }

    /// What the car did at `t_s` (its rear-axle speed and yaw rate) under the front-wheel
    /// command in force.
    pub fn observe(&self, t_s: f64, front_rad: f64, speed_mps: f64, yaw_rate_rad_s: f64) {
        let mut l = self.thread.learner();
        l.front_command(t_s, front_rad);
        l.motion(t_s, speed_mps, yaw_rate_rad_s);
    }

    /// The motor to plan with: the learned one with `~use_learned`, else none.
    pub fn planning_motor(&self) -> Option<Motor> {
        self.settings
            .use_learned
            .then(|| self.thread.learner().applied())
    }

    /// After a refit: the status on `/diagnostics` and, with `~learned_file`, the file.
    pub fn publish(
        &mut self,
        publisher: &ros1_protocols::runtime::Publisher<DiagnosticArray>,
        now: gem_core::time::Time,
    ) {
        let done = self.thread.refits();
        if done == self.published {
            return;
        }
        self.published = done;
        let l = self.thread.learner();
        let configured = Configured {
            motor: self.settings.configured,
        };
        let mismatches = l.mismatches(&configured);
        let mut values = Vec::new();
        let mut value = |key: &str, v: String| {
            values.push(KeyValue {
                key: key.into(),
                value: v,
            })
        };
        let rate = |r: Rate| r.to_string();
        let est = |e: Estimate| e.to_string();
        if let Some(fit) = l.motor_fit() {
            value("rate left, rad/s of steering wheel", rate(fit.rate_left));
            value("rate right, rad/s", rate(fit.rate_right));
            value("lag, s", est(fit.lag));
            value("dead time, s", est(fit.dead_time));
        }
        let applied = l.applied();
        value(
            "planned with (rate, lag, dead time)",
            format!(
                "{:.3} rad/s, {:.3} s, {:.3} s{}",
                applied.rate_left_rad_s.min(applied.rate_right_rad_s),
                applied.lag_s,
                applied.dead_time_s,
                if self.settings.use_learned {
                    ""
                } else {
                    " (not used: ~use_learned is off)"
                }
            ),
        );
        if let Some(rel) = l.relation() {
            value("offset, deg of front wheel", est(rel.offset_deg));
            if let Some(s) = rel.scale {
                value("relation scale", est(s));
            }
            value("relation samples", rel.samples.to_string());
        }
        if let Some(e) = l.last_error() {
            value("last refit", e.to_owned());
        }
        let (level, text) = if mismatches.is_empty() {
            (
                DiagnosticStatus::OK,
                if l.motor_fit().is_some() {
                    "the configured steering agrees with what was learned".to_owned()
                } else {
                    format!("learning: {}", l.last_error().unwrap_or("no refit yet"))
                },
            )
        } else {
            (
                DiagnosticStatus::WARN,
                mismatches
                    .iter()
                    .map(|m| format!("{} ({})", m, parameter(m.figure)))
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        };
        crate::interface::publish_status(publisher, now, "steering learned", (level, text), values);
        if let (Some(file), Some(learned)) = (&self.settings.file, l.learned()) {
            let text = format!(
                "# The steering motor learned while driving by the controller (~learn_steering).\n# Launch with calibration:=THIS_FILE, or give the controller ~learned_file and ~use_learned.\n{}",
                crate::calibration_file::motor_yaml(&learned)
            );
            if let Err(e) = crate::calibration_file::write_atomically(file, &text) {
                tracing::warn!("cannot write {}: {e}", file.display());
            }
        }
    }
}

/// The parameter that configures `figure`, for the message.
fn parameter(figure: Figure) -> &'static str {
    match figure {
        Figure::Rate => {
            "~pacmod_steering_wheel_rate_rad_s here, pacmod_bridge's ~steering_rate_rad_s"
        }
        Figure::Lag => "~pacmod_steering_lag_s here, pacmod_bridge's ~steering_lag_s",
        Figure::DeadTime => {
            "~pacmod_steering_dead_time_s here, pacmod_bridge's ~steering_dead_time_s"
        }
        Figure::Offset => "pacmod_bridge's ~steering_offset_deg",
        Figure::Scale => "pacmod_bridge's ~steering_linear and ~steering_quadratic_deg",
    }
}
