//! The operator station's end of the link (`gemctl operator`): hellos, an echo for each
//! good heartbeat, and the engage request, made on the latest heartbeat heard so that
//! it is good only while that heartbeat is recent.

use super::wire::{open, Freshness, Message, OperatorKey, Reject, Rejections, Sealer};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

/// What a datagram from the car said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FromCar {
    /// A good heartbeat; send `echo` back.
    Beat {
        /// Its number.
        seq: u64,
        /// The answer to send.
        echo: Vec<u8>,
    },
    /// The answer to this station's engage request.
    Engaged {
        /// Whether the car engaged.
        ok: bool,
        /// What the car says.
        text: String,
    },
    /// Dropped, and why; `log` for the 1st, 2nd, 4th, 8th... drop of any kind.
    Dropped {
        /// Why.
        kind: Reject,
        /// In a few words.
        why: String,
        /// Whether to say so.
        log: bool,
    },
}

/// The station's end.
#[derive(Debug)]
pub struct StationEnd {
    sealer: Sealer,
    fresh: Freshness,
    /// The car's session, the heartbeat and when it came.
    last_beat: Option<(u64, u64, Duration)>,
    /// The engage request awaiting its answer (its counter).
    engage: Option<u64>,
    recent: Duration,
    rejections: Rejections,
}

impl StationEnd {
    /// A station with this key (none: unsigned) and session; an engage request needs a
    /// heartbeat heard within `recent` (the car's `lost_after`).
    pub fn new(key: Option<OperatorKey>, session: u64, recent: Duration) -> StationEnd {
        StationEnd {
            sealer: Sealer::new(key, session),
            fresh: Freshness::default(),
            last_beat: None,
            engage: None,
            recent,
            rejections: Rejections::default(),
        }
    }

    /// A hello.
    pub fn hello(&mut self) -> Vec<u8> {
        self.sealer.seal(&Message::Hello)
    }

    /// The engage request, on the latest heartbeat; an error when none came within
    /// `recent` of `now`.
    pub fn engage(&mut self, now: Duration) -> Result<Vec<u8>, String> {
        match self.last_beat {
            Some((car, seq, at)) if now.saturating_sub(at) < self.recent => {
                self.engage = Some(self.sealer.next_counter());
                Ok(self.sealer.seal(&Message::Engage { car, seq }))
            }
            _ => Err(format!(
                "no heartbeat from the car in the last {:.1} s: it would refuse the request",
                self.recent.as_secs_f64()
            )),
        }
    }

    /// Takes a datagram from the car (the caller drops those from other addresses).
    pub fn receive(&mut self, bytes: &[u8], now: Duration) -> FromCar {
        let opened = match open(self.sealer.key(), bytes) {
            Ok(o) => o,
            Err((kind, why)) => return self.drop(kind, why),
        };
        if !self.fresh.take(opened.session, opened.counter) {
            return self.drop(Reject::Replayed, "a counter heard already".into());
        }
        match opened.message {
            Message::Beat { seq } => {
                self.last_beat = Some((opened.session, seq, now));
                let echo = self.sealer.seal(&Message::Echo {
                    car: opened.session,
                    seq,
                });
                FromCar::Beat { seq, echo }
            }
            Message::Engaged {
                station,
                request,
                ok,
                text,
            } if station == self.sealer.session() && Some(request) == self.engage => {
                self.engage = None;
                FromCar::Engaged { ok, text }
            }
            Message::Engaged { .. } => {
                self.drop(Reject::Stale, "an answer to no request of ours".into())
            }
            _ => self.drop(Reject::Malformed, "a datagram only a station sends".into()),
        }
    }

    fn drop(&mut self, kind: Reject, why: String) -> FromCar {
        // One source (the car): the limiter logs the 1st, 2nd, 4th... drop.
        let log = self
            .rejections
            .count(kind, IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        FromCar::Dropped { kind, why, log }
    }

    /// The datagrams dropped, by kind.
    pub fn rejections(&self) -> &Rejections {
        &self.rejections
    }
}
