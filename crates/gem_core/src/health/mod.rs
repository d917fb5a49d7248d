//! Topic health supervision: for each monitored topic, whether it was ever
//! heard, whether it is fresh, at what rate it arrives, of which type, and whether its
//! latest message satisfies its rules ([`rule`]), condensed into one diagnostic level and
//! message per topic. Everything is a function of the `now` the caller passes (ROS time in
//! the node), so the monitor behaves the same under wall time, sim time and bag replay.
//!
//! Deliberate differences from the "check message alive" supervisor it replaces: any topic
//! from a config file instead of 13 hard-coded ones; a timeout and a rate band per topic;
//! "never received" is STALE, not OK; rules are parsed at start-up and a rule that cannot
//! be evaluated fails instead of passing.

pub mod config;
pub mod rule;

use crate::time::Time;
use rule::{Fields, Rule};
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::time::Duration;

/// Diagnostic level, with `diagnostic_msgs/DiagnosticStatus`'s values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// 0: alive, rules pass, rate in band.
    Ok = 0,
    /// 1: rate outside its band.
    Warn = 1,
    /// 2: a rule fails or the type is wrong.
    Error = 2,
    /// 3: never received, or silent longer than the timeout.
    Stale = 3,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Ok => "OK",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
            Level::Stale => "STALE",
        })
    }
}

/// What to watch on one topic.
#[derive(Clone, Debug)]
pub struct TopicSpec {
    /// Topic name.
    pub topic: String,
    /// Expected type (`pkg/Type`); `None`: any.
    pub type_name: Option<String>,
    /// Silence longer than this is STALE; `None`: silence is fine once heard (a topic
    /// published only while something happens, such as a command).
    pub timeout: Option<Duration>,
    /// Accepted rate band, Hz.
    pub rate_hz: Option<(f64, f64)>,
    /// Rules every message must satisfy.
    pub rules: Vec<Rule>,
}

/// Window over which the rate is estimated.
const RATE_WINDOW: Duration = Duration::from_secs(5);
/// Messages needed before the rate band is judged.
const RATE_MIN_SAMPLES: usize = 5;

#[derive(Clone, Debug, Default)]
struct TopicState {
    arrivals: VecDeque<Time>,
    count: u64,
    type_seen: Option<String>,
    fields: Option<Fields>,
    /// The first failing rule of the latest message and why.
    failure: Option<String>,
    /// Per publisher, the last `header.seq` seen.
    sequences: BTreeMap<String, u64>,
    /// Messages missing from the publishers' sequences (lost before they reached us).
    lost: u64,
}

/// One topic's condensed health.
#[derive(Clone, Debug, PartialEq)]
pub struct Health {
    /// Topic name.
    pub topic: String,
    /// Level.
    pub level: Level,
    /// One human line.
    pub message: String,
    /// Details as key/value pairs (rate, age, count, type, failed rule).
    pub values: Vec<(String, String)>,
}

/// The supervisor's state over every configured topic.
#[derive(Clone, Debug)]
pub struct Monitor {
    specs: Vec<TopicSpec>,
    states: Vec<TopicState>,
    started: Time,
}

impl Monitor {
    /// Monitors `specs` from `now` on.
    pub fn new(specs: Vec<TopicSpec>, now: Time) -> Monitor {
        let states = vec![TopicState::default(); specs.len()];
        Monitor {
            specs,
            states,
            started: now,
        }
    }

    /// The monitored topics, in configuration order.
    pub fn specs(&self) -> &[TopicSpec] {
        &self.specs
    }

    /// Restarts timing (a clock reset: every silence is measured from `now` again).
    pub fn reset_clock(&mut self, now: Time) {
        self.started = now;
        for s in &mut self.states {
            s.arrivals.clear();
        }
    }

    /// Records a message of topic `index` of type `type_name` received at `now`, checks its
    /// rules (reading other topics' latest fields) and returns the topic's new level.
    pub fn on_message(
        &mut self,
        index: usize,
        now: Time,
        type_name: &str,
        fields: Fields,
    ) -> Level {
        let failure = self.specs[index].rules.iter().find_map(|r| {
            let others = |topic: &str| {
                self.specs
                    .iter()
                    .position(|s| s.topic == topic)
                    .and_then(|i| self.states[i].fields.as_ref())
            };
            match r.check(&fields, &others) {
                Ok(true) => None,
                Ok(false) => Some(format!("rule `{}` failed", r.text())),
                Err(why) => Some(format!("rule `{}` cannot be checked: {why}", r.text())),
            }
        });
        let timeout = self.specs[index].timeout;
        let st = &mut self.states[index];
        // After a silence past the timeout the rate restarts: the outage was reported as
        // STALE already and must not linger as a low rate.
        if let (Some(last), Some(timeout)) = (st.arrivals.back(), timeout) {
            if now.saturating_since(*last) > timeout {
                st.arrivals.clear();
            }
        }
        st.arrivals.push_back(now);
        while st
            .arrivals
            .front()
            .is_some_and(|t| now.saturating_since(*t) > RATE_WINDOW)
        {
            st.arrivals.pop_front();
        }
        st.count += 1;
        if st.type_seen.as_deref() != Some(type_name) {
            st.type_seen = Some(type_name.to_owned());
        }
        st.fields = Some(fields);
        st.failure = failure;
        // The level alone: the words of `health` are made only when they are published.
        self.verdict(index, now, self.rate(index, now)).level()
    }

    /// Records the `header.seq` of a message from `publisher` on topic `index` and returns
    /// how many of that publisher's messages were skipped since its previous one: lost
    /// between it and us (a subscriber queue that overflowed, a burst dropped). A sequence
    /// that does not move forward is a publisher that started again, not a loss.
    pub fn on_sequence(&mut self, index: usize, publisher: &str, seq: u64) -> u64 {
        let st = &mut self.states[index];
        let skipped = match st.sequences.insert(publisher.to_owned(), seq) {
            Some(prev) if seq > prev => seq - prev - 1,
            _ => 0,
        };
        st.lost += skipped;
        skipped
    }

    /// When topic `index` turns STALE if nothing arrives (`None` if it already is).
    fn stale_at(&self, index: usize) -> Option<Time> {
        let last = *self.states[index].arrivals.back()?;
        Some(last.saturating_add(self.specs[index].timeout?))
    }

    /// The earliest time a level can change without a message (a timeout expiring).
    pub fn next_deadline(&self, now: Time) -> Option<Time> {
        (0..self.specs.len())
            .filter_map(|i| self.stale_at(i))
            .filter(|t| *t > now)
            .min()
    }

    /// Messages per second over the rate window, once there are two.
    fn rate(&self, index: usize, now: Time) -> Option<f64> {
        let a = &self.states[index].arrivals;
        let (first, last) = (*a.front()?, *a.back()?);
        if a.len() < 2 || now.saturating_since(last) > RATE_WINDOW {
            return None;
        }
        let span = last.saturating_since(first).as_secs_f64();
        (span > 0.0).then(|| (a.len() - 1) as f64 / span)
    }

    /// The health of topic `index` at `now`.
    pub fn health(&self, index: usize, now: Time) -> Health {
        let spec = &self.specs[index];
        let st = &self.states[index];
        let mut values = vec![("messages".to_string(), st.count.to_string())];
        let rate = self.rate(index, now);
        values.push((
            "rate_hz".into(),
            rate.map_or("-".into(), |r| format!("{r:.2}")),
        ));
        if let Some(last) = st.arrivals.back() {
            let age = now.saturating_since(*last);
            values.push(("age_s".into(), format!("{:.3}", age.as_secs_f64())));
        }
        let verdict = self.verdict(index, now, rate);
        let (level, message) = (verdict.level(), verdict.message(self, now));
        if let Some(t) = &st.type_seen {
            values.push(("type".into(), t.clone()));
        }
        if let Some(f) = &st.failure {
            values.push(("last_failed_rule".into(), f.clone()));
        }
        if !st.sequences.is_empty() {
            values.push(("lost_messages".into(), st.lost.to_string()));
        }
        Health {
            topic: spec.topic.clone(),
            level,
            message,
            values,
        }
    }

    /// The rule that decides topic `index`'s level at `now` (its `rate`).
    fn verdict<'a>(&'a self, index: usize, now: Time, rate: Option<f64>) -> Verdict<'a> {
        let (spec, st) = (&self.specs[index], &self.states[index]);
        let Some(last) = st.arrivals.back() else {
            return if st.count == 0 {
                Verdict::NeverReceived
            } else {
                Verdict::ClockReset
            };
        };
        let age = now.saturating_since(*last);
        if let Some(timeout) = spec.timeout.filter(|t| age > *t) {
            return Verdict::Silent { age, timeout };
        }
        if let (Some(want), Some(seen)) = (&spec.type_name, &st.type_seen) {
            if want != seen {
                return Verdict::WrongType { seen, want };
            }
        }
        if let Some(f) = &st.failure {
            return Verdict::RuleFailed(f);
        }
        if let (Some((lo, hi)), Some(r)) = (spec.rate_hz, rate) {
            if st.arrivals.len() >= RATE_MIN_SAMPLES && !(lo..=hi).contains(&r) {
                return Verdict::RateOutside { rate: r, lo, hi };
            }
        }
        Verdict::Alive(rate)
    }

    /// Every topic's level at `now`, without the words of [`Self::healths`] (what a node
    /// compares on each message to see whether anything changed).
    pub fn levels(&self, now: Time) -> Vec<Level> {
        (0..self.specs.len())
            .map(|i| self.verdict(i, now, self.rate(i, now)).level())
            .collect()
    }

    /// Every topic's health at `now`.
    pub fn healths(&self, now: Time) -> Vec<Health> {
        (0..self.specs.len()).map(|i| self.health(i, now)).collect()
    }
}

/// Why a topic has its level ([`Monitor::verdict`]).
enum Verdict<'a> {
    NeverReceived,
    ClockReset,
    Silent { age: Duration, timeout: Duration },
    WrongType { seen: &'a str, want: &'a str },
    RuleFailed(&'a str),
    RateOutside { rate: f64, lo: f64, hi: f64 },
    Alive(Option<f64>),
}

impl Verdict<'_> {
    fn level(&self) -> Level {
        match self {
            Verdict::NeverReceived | Verdict::ClockReset | Verdict::Silent { .. } => Level::Stale,
            Verdict::WrongType { .. } | Verdict::RuleFailed(_) => Level::Error,
            Verdict::RateOutside { .. } => Level::Warn,
            Verdict::Alive(_) => Level::Ok,
        }
    }

    fn message(&self, monitor: &Monitor, now: Time) -> String {
        match self {
            Verdict::NeverReceived => format!(
                "never received ({:.1} s since monitoring started)",
                now.saturating_since(monitor.started).as_secs_f64()
            ),
            Verdict::ClockReset => "no message since the clock was reset".into(),
            Verdict::Silent { age, timeout } => format!(
                "no message for {:.2} s (timeout {:.2} s)",
                age.as_secs_f64(),
                timeout.as_secs_f64()
            ),
            Verdict::WrongType { seen, want } => format!("type {seen}, expected {want}"),
            Verdict::RuleFailed(f) => (*f).to_owned(),
            Verdict::RateOutside { rate, lo, hi } => {
                format!("rate {rate:.2} Hz outside {lo}..{hi} Hz")
            }
            Verdict::Alive(rate) => rate.map_or("alive".into(), |r| format!("alive, {r:.1} Hz")),
        }
    }
}

/// The name of the status that reports the ROS master beside the topics.
pub const MASTER_STATUS: &str = "ROS master";

/// The ROS master's level and message, from whether it answered at the node's last look
/// (`None`: not looked yet). Unreachable is an error: the links made go on, but no new
/// subscriber, publisher or service can find another.
pub fn master_health(reachable: Option<bool>) -> (Level, &'static str) {
    match reachable {
        Some(true) => (Level::Ok, "reachable"),
        Some(false) => (
            Level::Error,
            "unreachable: established links go on, nothing new can link",
        ),
        None => (Level::Stale, "not checked yet"),
    }
}

#[cfg(test)]
mod tests {
    use super::rule::Scalar;
    use super::*;

    #[test]
    fn an_unreachable_master_is_an_error() {
        assert_eq!(master_health(Some(true)).0, Level::Ok);
        assert_eq!(master_health(Some(false)).0, Level::Error);
        assert_eq!(master_health(None).0, Level::Stale);
    }

    fn t(s: f64) -> Time {
        Time::from_secs_f64(s)
    }

    fn spec(rules: &[&str]) -> TopicSpec {
        TopicSpec {
            topic: "/battery_level".into(),
            type_name: Some("gem_state_msgs/BatteryLevelStamped".into()),
            timeout: Some(Duration::from_millis(500)),
            rate_hz: Some((15.0, 25.0)),
            rules: rules.iter().map(|r| Rule::parse(r).unwrap()).collect(),
        }
    }

    fn battery(v: f64) -> Fields {
        [("battery_level".to_string(), Scalar::Num(v))].into()
    }

    const TYPE: &str = "gem_state_msgs/BatteryLevelStamped";

    /// A monitor that received `n` messages at 20 Hz from t = 100 s.
    fn alive(n: usize) -> (Monitor, Time) {
        let mut m = Monitor::new(vec![spec(&["battery_level in 0..1"])], t(100.0));
        let mut now = t(100.0);
        for i in 0..n {
            now = t(100.0 + i as f64 * 0.05);
            m.on_message(0, now, TYPE, battery(0.8));
        }
        (m, now)
    }

    #[test]
    fn gaps_in_a_publishers_sequence_are_counted_as_lost_per_publisher() {
        let (mut m, now) = alive(1);
        let lost = |m: &Monitor| {
            let h = m.health(0, now);
            h.values
                .iter()
                .find(|(k, _)| k == "lost_messages")
                .map(|(_, v)| v.clone())
        };
        assert_eq!(lost(&m), None, "no sequence seen: not reported");
        assert_eq!(m.on_sequence(0, "/a", 10), 0);
        assert_eq!(m.on_sequence(0, "/a", 11), 0);
        assert_eq!(
            m.on_sequence(0, "/b", 500),
            0,
            "another publisher's own count"
        );
        assert_eq!(m.on_sequence(0, "/a", 15), 3);
        assert_eq!(m.on_sequence(0, "/b", 502), 1);
        assert_eq!(lost(&m).as_deref(), Some("4"));
        // A publisher that restarted counts from 0 again: not a loss.
        assert_eq!(m.on_sequence(0, "/a", 0), 0);
        assert_eq!(m.on_sequence(0, "/a", 1), 0);
        assert_eq!(lost(&m).as_deref(), Some("4"));
        assert_eq!(m.health(0, now).level, Level::Ok, "reported, not a level");
    }

    #[test]
    fn the_levels_alone_are_the_levels_of_the_full_report_in_every_verdict() {
        let spec_typed = |type_name: &str| TopicSpec {
            type_name: Some(type_name.into()),
            ..spec(&["battery_level in 0..1"])
        };
        // Never received, alive, then a failed rule, a wrong type, silent, a rate outside.
        let mut m = Monitor::new(
            vec![spec_typed(TYPE), spec_typed("std_msgs/Float64"), spec(&[])],
            t(100.0),
        );
        let check = |m: &Monitor, now: Time| {
            let full: Vec<Level> = m.healths(now).iter().map(|h| h.level).collect();
            assert_eq!(m.levels(now), full, "at {now:?}");
            full
        };
        assert_eq!(check(&m, t(100.1)), vec![Level::Stale; 3]);
        for i in 0..20 {
            let now = t(100.0 + i as f64 * 0.05);
            m.on_message(0, now, TYPE, battery(0.8));
            m.on_message(1, now, TYPE, battery(0.8));
            m.on_message(2, now, TYPE, battery(0.8));
        }
        let levels = check(&m, t(101.0));
        assert_eq!(levels, vec![Level::Ok, Level::Error, Level::Ok]);
        m.on_message(0, t(101.0), TYPE, battery(7.0));
        assert_eq!(check(&m, t(101.0))[0], Level::Error, "the rule failed");
        assert_eq!(check(&m, t(103.0)), vec![Level::Stale; 3], "silent");
        // 5 Hz, below 15..25 Hz.
        let mut slow = Monitor::new(vec![spec(&[])], t(100.0));
        for i in 0..20 {
            slow.on_message(0, t(100.0 + i as f64 * 0.2), TYPE, battery(0.8));
        }
        assert_eq!(check(&slow, t(103.9)), vec![Level::Warn]);
    }

    #[test]
    fn never_received_is_stale_not_ok() {
        let m = Monitor::new(vec![spec(&[])], t(100.0));
        let h = m.health(0, t(103.0));
        assert_eq!(h.level, Level::Stale);
        assert!(h.message.contains("never received (3.0 s"), "{}", h.message);
    }

    #[test]
    fn alive_at_20_hz_is_ok_with_the_rate() {
        let (m, now) = alive(20);
        let h = m.health(0, now);
        assert_eq!(h.level, Level::Ok, "{h:?}");
        assert!(h.message.contains("20.0 Hz"), "{}", h.message);
    }

    #[test]
    fn silence_up_to_the_timeout_is_ok_and_past_it_stale() {
        let (m, now) = alive(20);
        assert_eq!(
            m.health(0, now.saturating_add(Duration::from_millis(500)))
                .level,
            Level::Ok
        );
        let h = m.health(0, now.saturating_add(Duration::from_millis(501)));
        assert_eq!(h.level, Level::Stale);
        assert!(h.message.contains("timeout 0.50 s"), "{}", h.message);
    }

    #[test]
    fn deadline_is_when_the_topic_would_go_stale() {
        let (m, now) = alive(3);
        assert_eq!(
            m.next_deadline(now),
            Some(now.saturating_add(Duration::from_millis(500)))
        );
        let m = Monitor::new(vec![spec(&[])], t(0.0));
        assert_eq!(m.next_deadline(t(1.0)), None);
    }

    #[test]
    fn recovers_when_messages_resume() {
        let (mut m, now) = alive(20);
        let later = now.saturating_add(Duration::from_secs(2));
        assert_eq!(m.health(0, later).level, Level::Stale);
        assert_eq!(m.on_message(0, later, TYPE, battery(0.8)), Level::Ok);
    }

    #[test]
    fn failing_rule_is_error_naming_the_rule_and_clears() {
        let (mut m, now) = alive(20);
        let later = now.saturating_add(Duration::from_millis(50));
        assert_eq!(m.on_message(0, later, TYPE, battery(1.5)), Level::Error);
        let h = m.health(0, later);
        assert_eq!(h.message, "rule `battery_level in 0..1` failed");
        assert!(h.values.iter().any(|(k, _)| k == "last_failed_rule"));
        assert_eq!(
            m.on_message(
                0,
                later.saturating_add(Duration::from_millis(50)),
                TYPE,
                battery(0.5)
            ),
            Level::Ok
        );
    }

    #[test]
    fn wrong_type_is_error() {
        let mut m = Monitor::new(vec![spec(&[])], t(0.0));
        assert_eq!(
            m.on_message(0, t(0.1), "std_msgs/Float32", battery(0.5)),
            Level::Error
        );
    }

    #[test]
    fn rate_out_of_band_is_warn_after_enough_samples() {
        let mut m = Monitor::new(vec![spec(&[])], t(0.0));
        // 2 Hz with a 3 s timeout: slow but never stale.
        m.specs[0].timeout = Some(Duration::from_secs(3));
        let mut level = Level::Stale;
        for i in 0..6 {
            level = m.on_message(0, t(i as f64 * 0.5), TYPE, battery(0.5));
            if i < 4 {
                assert_eq!(level, Level::Ok, "judged after {} samples", i + 1);
            }
        }
        assert_eq!(level, Level::Warn);
        assert!(m
            .health(0, t(2.5))
            .message
            .contains("rate 2.00 Hz outside 15..25"));
    }

    #[test]
    fn conditional_rule_reads_another_topic() {
        let speed = TopicSpec {
            topic: "/cmd".into(),
            type_name: None,
            timeout: Some(Duration::from_secs(1)),
            rate_hz: None,
            rules: vec![Rule::parse("speed != 0 || /estop:enabled").unwrap()],
        };
        let estop = TopicSpec {
            topic: "/estop".into(),
            type_name: None,
            timeout: Some(Duration::from_secs(1)),
            rate_hz: None,
            rules: vec![],
        };
        let mut m = Monitor::new(vec![speed, estop], t(0.0));
        let zero: Fields = [("speed".to_string(), Scalar::Num(0.0))].into();
        assert_eq!(m.on_message(0, t(0.1), "x/Cmd", zero.clone()), Level::Error);
        let pressed: Fields = [("enabled".to_string(), Scalar::Bool(true))].into();
        m.on_message(1, t(0.2), "x/Estop", pressed);
        assert_eq!(m.on_message(0, t(0.3), "x/Cmd", zero), Level::Ok);
    }

    #[test]
    fn without_timeout_silence_is_fine_once_heard() {
        let (mut m, now) = alive(1);
        m.specs[0].timeout = None;
        assert_eq!(
            m.health(0, now.saturating_add(Duration::from_secs(60)))
                .level,
            Level::Ok
        );
        assert_eq!(m.next_deadline(now), None);
    }

    #[test]
    fn clock_reset_restarts_the_silence() {
        let (mut m, _) = alive(20);
        m.reset_clock(t(1.0));
        let h = m.health(0, t(1.2));
        assert_eq!(h.level, Level::Stale);
        assert_eq!(m.on_message(0, t(1.3), TYPE, battery(0.5)), Level::Ok);
    }
}
