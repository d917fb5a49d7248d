//! The link to the operator station as a signal strength: the car sends a numbered
//! heartbeat every `period`, `gemctl operator` on the operator's computer answers each, and
//! the round trips and the losses of the last `window` heartbeats give the strength:
//!
//! - **NOT_CONNECTED** when no answer arrived for `lost_after` (or none ever did);
//! - **LOW_SIGNAL** when more than `low_loss` of the heartbeats that should have been
//!   answered by now were not, or the median round trip exceeds `low_rtt`;
//! - **CONNECTED** otherwise.
//!
//! The heartbeats an outage swallowed (the link NOT_CONNECTED) are forgotten at the first
//! answer after it: the outage was reported as such, and the returning link is judged by
//! what it does from then on. Until a quarter of the window has been answered since its
//! return it reads LOW_SIGNAL, so a link that answers only now and then never reads
//! CONNECTED.
//!
//! Times are wall-clock offsets from any fixed origin (a network's round trip is wall
//! time, whatever the simulation's clock does).

pub mod car;
pub mod station;
pub mod wire;

use crate::state_manager::Strength;
use serde::Deserialize;
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

/// The link's limits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkLimits {
    /// Heartbeat period.
    pub period: Duration,
    /// How many of the latest heartbeats count.
    pub window: usize,
    /// A median round trip above this is LOW_SIGNAL.
    pub low_rtt: Duration,
    /// A lost share above this is LOW_SIGNAL.
    pub low_loss: f64,
    /// No answer for this long is NOT_CONNECTED; a heartbeat unanswered this long is lost.
    pub lost_after: Duration,
    /// The only address a station may say hello from; any address when unset. IPv4: the
    /// link listens on IPv4.
    pub station: Option<Ipv4Addr>,
}

impl LinkLimits {
    /// The defaults: 5 heartbeats a second, the last 4 s of them, LOW_SIGNAL above 250 ms
    /// or 20 % lost, NOT_CONNECTED after 1 s without an answer.
    pub const DEFAULT: LinkLimits = LinkLimits {
        period: Duration::from_millis(200),
        window: 20,
        low_rtt: Duration::from_millis(250),
        low_loss: 0.2,
        lost_after: Duration::from_secs(1),
        station: None,
    };

    /// Whether a hello from `from` may make it the station: the pinned address, or any
    /// when none is pinned.
    pub fn accepts(&self, from: IpAddr) -> bool {
        self.station.is_none_or(|pinned| IpAddr::V4(pinned) == from)
    }
}

impl Default for LinkLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The `operator:` keys of a sources file (all optional: [`LinkLimits::DEFAULT`]).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkFile {
    period_s: Option<f64>,
    window: Option<usize>,
    low_rtt_s: Option<f64>,
    low_loss: Option<f64>,
    lost_after_s: Option<f64>,
    station: Option<String>,
    key_file: Option<String>,
}

impl LinkFile {
    /// The operator key's file, as the sources file gives it: absolute, from the home
    /// folder (`~/`), or relative to the sources file's folder.
    pub fn key_file(&self) -> Option<&str> {
        self.key_file.as_deref()
    }

    /// The checked limits.
    pub fn limits(self) -> Result<LinkLimits, String> {
        let d = LinkLimits::DEFAULT;
        let secs = |v: Option<f64>, what: &str, default: Duration| -> Result<Duration, String> {
            match v {
                None => Ok(default),
                Some(s) if s.is_finite() && s > 0.0 && s <= 60.0 => Ok(Duration::from_secs_f64(s)),
                Some(s) => Err(format!("operator {what} must be within (0, 60] s, not {s}")),
            }
        };
        let l = LinkLimits {
            period: secs(self.period_s, "period_s", d.period)?,
            window: self.window.unwrap_or(d.window),
            low_rtt: secs(self.low_rtt_s, "low_rtt_s", d.low_rtt)?,
            low_loss: self.low_loss.unwrap_or(d.low_loss),
            lost_after: secs(self.lost_after_s, "lost_after_s", d.lost_after)?,
            station: match self.station {
                None => None,
                Some(a) => Some(a.parse().map_err(|_| {
                    format!("operator station must be the IPv4 address of the station's computer (the link listens on IPv4), not {a:?}")
                })?),
            },
        };
        if !(2..=1000).contains(&l.window) {
            return Err(format!(
                "operator window must be 2..=1000 heartbeats, not {}",
                l.window
            ));
        }
        if !(l.low_loss.is_finite() && (0.0..1.0).contains(&l.low_loss)) {
            return Err(format!(
                "operator low_loss must be within [0, 1), not {}",
                l.low_loss
            ));
        }
        if l.lost_after <= l.period {
            return Err(format!(
                "operator lost_after_s ({:?}) must be longer than period_s ({:?})",
                l.lost_after, l.period
            ));
        }
        Ok(l)
    }
}

/// One heartbeat sent: its number, when, and its round trip once answered.
#[derive(Clone, Copy, Debug)]
struct Beat {
    seq: u64,
    sent: Duration,
    rtt: Option<Duration>,
}

/// The link's measure from the heartbeats sent and answered.
#[derive(Clone, Debug)]
pub struct LinkMeter {
    limits: LinkLimits,
    beats: VecDeque<Beat>,
    last_answer: Option<Duration>,
    /// Answers since the link last came back after an outage (or first answered).
    since_return: usize,
}

impl LinkMeter {
    /// A link nothing was sent on yet.
    pub fn new(limits: LinkLimits) -> LinkMeter {
        LinkMeter {
            limits,
            beats: VecDeque::with_capacity(limits.window + 1),
            last_answer: None,
            since_return: 0,
        }
    }

    /// Heartbeat `seq` was sent at `at`.
    pub fn sent(&mut self, seq: u64, at: Duration) {
        self.beats.push_back(Beat {
            seq,
            sent: at,
            rtt: None,
        });
        while self.beats.len() > self.limits.window {
            self.beats.pop_front();
        }
    }

    /// The answer to heartbeat `seq` arrived at `at`: its round trip, or `None` for a
    /// heartbeat not (or no longer) in the window, or answered already.
    pub fn answered(&mut self, seq: u64, at: Duration) -> Option<Duration> {
        let beat = self
            .beats
            .iter_mut()
            .find(|b| b.seq == seq && b.rtt.is_none())?;
        let rtt = at.checked_sub(beat.sent)?;
        beat.rtt = Some(rtt);
        let sent = beat.sent;
        let after_outage = self
            .last_answer
            .is_none_or(|l| at.saturating_sub(l) >= self.limits.lost_after);
        if after_outage {
            // The outage was reported as NOT_CONNECTED; the link's quality is measured
            // afresh from here, not from the heartbeats the outage swallowed. It must
            // then prove itself (see `strength`).
            self.beats.retain(|b| b.rtt.is_some() || b.sent >= sent);
            self.since_return = 0;
        }
        self.since_return += 1;
        self.last_answer = Some(self.last_answer.map_or(at, |l| l.max(at)));
        Some(rtt)
    }

    /// When heartbeat `seq` was sent, while it is in the window.
    pub fn sent_at(&self, seq: u64) -> Option<Duration> {
        self.beats.iter().find(|b| b.seq == seq).map(|b| b.sent)
    }

    /// Whether heartbeat `seq`, in the window, was answered.
    pub fn was_answered(&self, seq: u64) -> bool {
        self.beats.iter().any(|b| b.seq == seq && b.rtt.is_some())
    }

    /// The share of the heartbeats that should have been answered by now and were not
    /// (unanswered for `lost_after`, or older than one answered since: the link keeps
    /// order), and the median round trip of those answered (None: none was).
    pub fn loss_and_median_rtt(&self, now: Duration) -> (f64, Option<Duration>) {
        let newest_answered = self
            .beats
            .iter()
            .filter(|b| b.rtt.is_some())
            .map(|b| b.sent)
            .max();
        let due: Vec<&Beat> = self
            .beats
            .iter()
            .filter(|b| {
                b.rtt.is_some()
                    || now.saturating_sub(b.sent) >= self.limits.lost_after
                    || newest_answered.is_some_and(|n| b.sent < n)
            })
            .collect();
        let lost = due.iter().filter(|b| b.rtt.is_none()).count();
        let loss = if due.is_empty() {
            0.0
        } else {
            lost as f64 / due.len() as f64
        };
        let mut rtts: Vec<Duration> = self.beats.iter().filter_map(|b| b.rtt).collect();
        rtts.sort();
        (loss, rtts.get(rtts.len() / 2).copied())
    }

    /// Answers a returning link needs before it can read CONNECTED.
    fn returning_needs(&self) -> usize {
        (self.limits.window / 4).max(1)
    }

    /// The strength at `now`.
    pub fn strength(&self, now: Duration) -> Strength {
        match self.last_answer {
            Some(at) if now.saturating_sub(at) < self.limits.lost_after => {}
            _ => return Strength::NotConnected,
        }
        // A link back from an outage is LOW_SIGNAL until a quarter of the window has
        // been answered since: one that answers only now and then, each answer after an
        // outage, never reads CONNECTED.
        if self.since_return < self.returning_needs() {
            return Strength::Low;
        }
        let (loss, median) = self.loss_and_median_rtt(now);
        if loss > self.limits.low_loss || median.is_some_and(|m| m > self.limits.low_rtt) {
            Strength::Low
        } else {
            Strength::Connected
        }
    }
}

/// The UDP port the car's `signal_sources` listens on for the operator station, when
/// neither side says otherwise.
pub const DEFAULT_PORT: u16 = 11_622;

#[cfg(test)]
mod tests {
    use super::*;

    const L: LinkLimits = LinkLimits::DEFAULT;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Sends heartbeats every period from `from` for `n` beats, each answered after
    /// `rtt` unless `lost(i)`; returns the next sequence number.
    fn drive(
        m: &mut LinkMeter,
        seq: u64,
        from: Duration,
        n: u64,
        rtt: Duration,
        lost: impl Fn(u64) -> bool,
    ) -> u64 {
        for i in 0..n {
            let at = from + L.period * i as u32;
            m.sent(seq + i, at);
            if !lost(i) {
                m.answered(seq + i, at + rtt);
            }
        }
        seq + n
    }

    #[test]
    fn a_good_link_is_connected_and_nothing_answered_is_not() {
        let mut m = LinkMeter::new(L);
        assert_eq!(m.strength(ms(0)), Strength::NotConnected);
        drive(&mut m, 0, ms(0), 20, ms(10), |_| false);
        assert_eq!(m.strength(ms(3_900)), Strength::Connected);
    }

    #[test]
    fn a_slow_or_lossy_link_is_low() {
        let mut slow = LinkMeter::new(L);
        drive(&mut slow, 0, ms(0), 20, ms(300), |_| false);
        assert_eq!(slow.strength(ms(4_100)), Strength::Low);
        let mut lossy = LinkMeter::new(L);
        drive(&mut lossy, 0, ms(0), 20, ms(10), |i| i % 3 == 1);
        let (loss, _) = lossy.loss_and_median_rtt(ms(5_000));
        assert!((loss - 7.0 / 20.0).abs() < 1e-9, "{loss}");
        assert_eq!(lossy.strength(ms(3_900)), Strength::Low);
        // One lost in ten is within the limit.
        let mut fine = LinkMeter::new(L);
        drive(&mut fine, 0, ms(0), 20, ms(10), |i| i % 10 == 5);
        assert_eq!(fine.strength(ms(3_900)), Strength::Connected);
    }

    #[test]
    fn a_cut_link_falls_to_not_connected_after_lost_after_and_comes_back() {
        let mut m = LinkMeter::new(L);
        let seq = drive(&mut m, 0, ms(0), 20, ms(10), |_| false);
        // The last answer at 3.81 s; the cable cut: heartbeats go unanswered.
        let seq = drive(&mut m, seq, ms(4_000), 5, ms(10), |_| true);
        assert_eq!(m.strength(ms(4_500)), Strength::Connected);
        assert_eq!(m.strength(ms(4_809)), Strength::Connected);
        assert_eq!(m.strength(ms(4_811)), Strength::NotConnected);
        // Back: the outage was NOT_CONNECTED, and the heartbeats it swallowed do not
        // count against the link afterwards; LOW_SIGNAL until five answers, then
        // CONNECTED.
        let seq = drive(&mut m, seq, ms(5_000), 2, ms(10), |_| false);
        assert_eq!(m.strength(ms(5_300)), Strength::Low);
        assert_eq!(m.loss_and_median_rtt(ms(5_300)).0, 0.0);
        let seq = drive(&mut m, seq, ms(5_400), 3, ms(10), |_| false);
        assert_eq!(m.strength(ms(5_900)), Strength::Connected);
        // A loss shorter than `lost_after` still counts as loss.
        let seq = drive(&mut m, seq, ms(5_400), 20, ms(10), |_| false);
        drive(&mut m, seq, ms(9_400), 4, ms(10), |i| i < 3);
        assert!(m.loss_and_median_rtt(ms(10_300)).0 > 0.1);
    }

    #[test]
    fn a_link_that_answers_only_now_and_then_never_reads_connected() {
        let mut m = LinkMeter::new(L);
        // One answer every 1.2 s (every sixth heartbeat): each comes after an outage.
        let mut seen = Vec::new();
        for i in 0..60u64 {
            let at = L.period * i as u32;
            m.sent(i, at);
            if i % 6 == 0 {
                m.answered(i, at + ms(10));
            }
            seen.push(m.strength(at + ms(20)));
        }
        assert!(!seen.contains(&Strength::Connected), "{seen:?}");
    }

    #[test]
    fn unknown_late_or_repeated_answers_change_nothing() {
        let mut m = LinkMeter::new(L);
        m.sent(1, ms(0));
        assert_eq!(m.answered(7, ms(5)), None);
        assert_eq!(m.answered(1, ms(5)), Some(ms(5)));
        assert_eq!(m.answered(1, ms(6)), None);
        // Pushed out of the window: no longer known.
        drive(&mut m, 2, ms(200), 20, ms(10), |_| false);
        m.sent(100, ms(10_000));
        assert_eq!(m.answered(1, ms(10_001)), None);
    }

    #[test]
    fn operator_limits_are_checked() {
        let file = |y: &str| serde_yaml::from_str::<LinkFile>(y).unwrap().limits();
        assert_eq!(file("{}").unwrap(), L);
        assert_eq!(
            file("{period_s: 0.5, lost_after_s: 2}").unwrap().period,
            ms(500)
        );
        for (y, says) in [
            ("{period_s: 0}", "period_s"),
            ("{window: 1}", "window"),
            ("{low_loss: 1.0}", "low_loss"),
            ("{low_rtt_s: -1}", "low_rtt_s"),
            ("{period_s: 2}", "longer than period_s"),
            ("{station: ops-laptop}", "must be the IPv4 address"),
            ("{station: '::1'}", "must be the IPv4 address"),
        ] {
            let e = file(y).unwrap_err();
            assert!(e.contains(says), "{y}: {e}");
        }
    }

    #[test]
    fn a_pinned_station_is_the_only_one_accepted() {
        let ip = |a: &str| a.parse::<IpAddr>().unwrap();
        assert!(L.accepts(ip("10.0.0.7")), "unpinned: any station");
        let pinned = serde_yaml::from_str::<LinkFile>("{station: 192.168.1.30}")
            .unwrap()
            .limits()
            .unwrap();
        assert!(pinned.accepts(ip("192.168.1.30")));
        assert!(!pinned.accepts(ip("192.168.1.31")));
        assert!(!pinned.accepts(ip("::1")));
    }
}
