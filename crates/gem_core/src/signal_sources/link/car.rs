//! The car's end of the operator link, as a state machine the node feeds with datagrams
//! and the time: which datagrams it takes, which it drops and why, where heartbeats go,
//! and when an engage request is good.
//!
//! A hello asks for heartbeats at its address; heartbeats go to every address that said
//! a good hello within [`HELLO_FORGOTTEN_AFTER`] (at most [`MAX_LISTENERS`]). Only answers
//! count for the link's strength, and with a key only a holder of the key can answer: an
//! echo is signed over this car's session and the heartbeat's number. So a spoofer that
//! replays a captured hello gets heartbeats it cannot answer, and the real station's
//! link is measured as before.

use super::wire::{open, Freshness, Message, OperatorKey, Reject, Rejections, Sealer};
use super::{LinkLimits, LinkMeter};
use crate::state_manager::Strength;
use std::net::SocketAddr;
use std::time::Duration;

/// A listener that has not said hello for this long gets no more heartbeats (the
/// station says hello every second).
pub const HELLO_FORGOTTEN_AFTER: Duration = Duration::from_secs(3);
/// Addresses heartbeats go to at most.
pub const MAX_LISTENERS: usize = 4;

/// What a datagram changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Heard {
    /// Nothing to say (a hello, or an echo from the station already known).
    Nothing,
    /// A good echo came from an address other than the last one: the station is there.
    Station(SocketAddr),
    /// A good engage request: engage the car, then [`CarEnd::answer_engage`].
    Engage {
        /// Where it came from.
        from: SocketAddr,
        /// The station's session.
        station: u64,
        /// The request's counter.
        request: u64,
    },
    /// Dropped; `log` is true for the drops worth a log line (see [`Rejections`]).
    Dropped {
        /// Where it came from.
        from: SocketAddr,
        /// Why.
        kind: Reject,
        /// In a few words.
        why: String,
        /// Whether to log it.
        log: bool,
    },
}

/// An address that asked for heartbeats.
#[derive(Clone, Copy, Debug)]
struct Listener {
    at: SocketAddr,
    /// Its last good hello.
    hello: Duration,
    /// Whether a good answer ever came from it: such a listener is the last to give its
    /// place to a new one.
    answered: bool,
}

/// The car's end of the link.
#[derive(Debug)]
pub struct CarEnd {
    limits: LinkLimits,
    sealer: Sealer,
    fresh: Freshness,
    meter: LinkMeter,
    /// The addresses that said hello lately, the most recent last.
    listeners: Vec<Listener>,
    station: Option<SocketAddr>,
    /// The session of the station's last good answer: never forgotten by `fresh`.
    station_session: Option<u64>,
    /// The heartbeat the last engage request taken named: a request must name a later one.
    last_engage: u64,
    seq: u64,
    next_beat: Duration,
    rejections: Rejections,
}

impl CarEnd {
    /// A link with these limits, this key (none: unsigned, anyone may answer) and
    /// session (a random number: [`super::wire::new_session`]).
    pub fn new(limits: LinkLimits, key: Option<OperatorKey>, session: u64) -> CarEnd {
        CarEnd {
            limits,
            sealer: Sealer::new(key, session),
            fresh: Freshness::default(),
            meter: LinkMeter::new(limits),
            listeners: Vec::new(),
            station: None,
            station_session: None,
            last_engage: 0,
            seq: 0,
            next_beat: Duration::ZERO,
            rejections: Rejections::default(),
        }
    }

    /// Whether datagrams must be signed.
    pub fn keyed(&self) -> bool {
        self.sealer.key().is_some()
    }

    /// The heartbeats due at `now`, each with its address; and when to call again.
    pub fn tick(&mut self, now: Duration) -> (Vec<(SocketAddr, Vec<u8>)>, Duration) {
        let mut out = Vec::new();
        if now >= self.next_beat {
            self.next_beat = (self.next_beat + self.limits.period).max(now);
            self.listeners
                .retain(|l| now.saturating_sub(l.hello) < HELLO_FORGOTTEN_AFTER);
            if !self.listeners.is_empty() {
                self.seq += 1;
                self.meter.sent(self.seq, now);
                let beat = Message::Beat { seq: self.seq };
                for l in &self.listeners {
                    out.push((l.at, self.sealer.seal(&beat)));
                }
            }
        }
        (out, self.next_beat)
    }

    /// Takes the datagram `bytes` from `from`, arrived at `now`.
    pub fn receive(&mut self, bytes: &[u8], from: SocketAddr, now: Duration) -> Heard {
        let opened = match open(self.sealer.key(), bytes) {
            Ok(o) => o,
            Err((kind, why)) => return self.drop(from, kind, why),
        };
        // The pin first: datagrams from elsewhere touch nothing, not even the counters.
        if !self.limits.accepts(from.ip()) {
            return self.drop(from, Reject::Unpinned, "not the pinned station".into());
        }
        if !self
            .fresh
            .take_keeping(opened.session, opened.counter, self.station_session)
        {
            return self.drop(
                from,
                Reject::Replayed,
                format!("counter {} of a session heard already", opened.counter),
            );
        }
        let session = self.sealer.session();
        match opened.message {
            Message::Hello => {
                let answered = match self.listeners.iter().position(|l| l.at == from) {
                    Some(i) => self.listeners.remove(i).answered,
                    None => false,
                };
                if self.listeners.len() >= MAX_LISTENERS {
                    // The oldest that never answered goes; else the oldest but the station.
                    let i = self
                        .listeners
                        .iter()
                        .position(|l| !l.answered)
                        .or_else(|| {
                            self.listeners
                                .iter()
                                .position(|l| Some(l.at) != self.station)
                        })
                        .unwrap_or(0);
                    self.listeners.remove(i);
                }
                self.listeners.push(Listener {
                    at: from,
                    hello: now,
                    answered,
                });
                Heard::Nothing
            }
            Message::Echo { car, .. } | Message::Engage { car, .. } if car != session => self.drop(
                from,
                Reject::Stale,
                "an answer to another session of the car".into(),
            ),
            Message::Echo { seq, .. }
                if self
                    .meter
                    .sent_at(seq)
                    .is_some_and(|at| now.saturating_sub(at) >= self.limits.lost_after) =>
            {
                // Held back on the way: counting it would keep a dead link alive.
                self.drop(
                    from,
                    Reject::Stale,
                    format!("the answer to heartbeat {seq} came after lost_after"),
                )
            }
            Message::Echo { seq, .. } => match self.meter.answered(seq, now) {
                Some(_) => {
                    self.station_session = Some(opened.session);
                    if let Some(l) = self.listeners.iter_mut().find(|l| l.at == from) {
                        l.answered = true;
                    }
                    if self.station == Some(from) {
                        Heard::Nothing
                    } else {
                        self.station = Some(from);
                        Heard::Station(from)
                    }
                }
                None if self.meter.was_answered(seq) => self.drop(
                    from,
                    Reject::Replayed,
                    format!("heartbeat {seq} answered already"),
                ),
                None => self.drop(
                    from,
                    Reject::Stale,
                    format!("heartbeat {seq} is not one awaiting an answer"),
                ),
            },
            Message::Engage { seq, .. } if seq <= self.last_engage => self.drop(
                from,
                Reject::Replayed,
                format!(
                    "an engage request on heartbeat {seq}: one on heartbeat {} was taken",
                    self.last_engage
                ),
            ),
            Message::Engage { seq, .. } => match self.meter.sent_at(seq) {
                Some(at) if now.saturating_sub(at) < self.limits.lost_after => {
                    // One engage per heartbeat, whatever the counters: a replayed request
                    // is refused even once its session is forgotten.
                    self.last_engage = seq;
                    Heard::Engage {
                        from,
                        station: opened.session,
                        request: opened.counter,
                    }
                }
                _ => self.drop(
                    from,
                    Reject::Stale,
                    format!("an engage request on heartbeat {seq}, which is not recent"),
                ),
            },
            Message::Beat { .. } | Message::Engaged { .. } => self.drop(
                from,
                Reject::Malformed,
                "a datagram only the car sends".into(),
            ),
        }
    }

    /// The answer to an engage request, for its sender.
    pub fn answer_engage(&mut self, station: u64, request: u64, ok: bool, text: &str) -> Vec<u8> {
        self.sealer.seal(&Message::Engaged {
            station,
            request,
            ok,
            text: text.to_owned(),
        })
    }

    fn drop(&mut self, from: SocketAddr, kind: Reject, why: String) -> Heard {
        let log = self.rejections.count(kind, from.ip());
        Heard::Dropped {
            from,
            kind,
            why,
            log,
        }
    }

    /// The link's strength at `now`.
    pub fn strength(&self, now: Duration) -> Strength {
        self.meter.strength(now)
    }

    /// The datagrams dropped, by kind.
    pub fn rejections(&self) -> &Rejections {
        &self.rejections
    }

    /// The address the last good answer came from.
    pub fn station(&self) -> Option<SocketAddr> {
        self.station
    }
}

#[cfg(test)]
mod tests {
    use super::super::station::{FromCar, StationEnd};
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn key() -> OperatorKey {
        OperatorKey::from_bytes([7; 32])
    }

    const OPS: &str = "10.0.0.30:40000";
    const SPOOF: &str = "10.0.0.66:40000";

    fn addr(a: &str) -> SocketAddr {
        a.parse().unwrap()
    }

    /// Runs the car and the station for `until`, datagrams delivered at once; the station
    /// answers while `answering(t)`. Every datagram the station sends is kept in `sent`.
    fn run(
        car: &mut CarEnd,
        station: &mut StationEnd,
        from: Duration,
        until: Duration,
        answering: impl Fn(Duration) -> bool,
        sent: &mut Vec<Vec<u8>>,
    ) {
        let mut t = from;
        while t < until {
            if t.as_millis().is_multiple_of(1000) && answering(t) {
                let h = station.hello();
                sent.push(h.clone());
                car.receive(&h, addr(OPS), t);
            }
            let (beats, _) = car.tick(t);
            for (to, b) in beats {
                if to == addr(OPS) && answering(t) {
                    if let FromCar::Beat { echo, .. } = station.receive(&b, t) {
                        sent.push(echo.clone());
                        car.receive(&echo, addr(OPS), t + ms(5));
                    }
                }
            }
            t += ms(100);
        }
    }

    /// The car (session 1) and a station (session 2) holding the same key.
    fn keyed(limits: LinkLimits) -> (CarEnd, StationEnd) {
        (
            CarEnd::new(limits, Some(key()), 1),
            StationEnd::new(Some(key()), 2, limits.lost_after),
        )
    }

    /// [`run`] with the station answering throughout.
    fn answering(
        car: &mut CarEnd,
        station: &mut StationEnd,
        from: Duration,
        until: Duration,
        sent: &mut Vec<Vec<u8>>,
    ) {
        run(car, station, from, until, |_| true, sent);
    }

    /// The car and a station of [`keyed`] with the default limits, the station answering
    /// from 0 to `until`; with every datagram the station sent.
    fn linked(until: Duration) -> (CarEnd, StationEnd, Vec<Vec<u8>>) {
        let (mut car, mut station) = keyed(LinkLimits::DEFAULT);
        let mut sent = Vec::new();
        answering(&mut car, &mut station, ms(0), until, &mut sent);
        (car, station, sent)
    }

    /// Asserts that `heard` is a datagram dropped as `kind`.
    #[track_caller]
    fn assert_dropped(heard: Heard, kind: Reject) {
        assert!(
            matches!(heard, Heard::Dropped { kind: k, .. } if k == kind),
            "{heard:?}"
        );
    }

    #[test]
    fn a_keyed_station_keeps_the_link_and_a_replay_of_its_datagrams_does_not() {
        let (mut car, _station, captured) = linked(ms(5000));
        assert_eq!(car.strength(ms(5000)), Strength::Connected);
        assert_eq!(car.station(), Some(addr(OPS)));
        // The station freezes at 5 s; a spoofer replays everything it captured, from
        // another address and from the station's own.
        let mut t = ms(5000);
        for (i, d) in captured.iter().enumerate() {
            car.tick(t);
            let from = if i % 2 == 0 { SPOOF } else { OPS };
            assert_dropped(car.receive(d, addr(from), t), Reject::Replayed);
            t += ms(10);
        }
        assert!(t < ms(6000));
        assert_eq!(car.strength(ms(6100)), Strength::NotConnected);
        let replayed = car
            .rejections()
            .counts()
            .find(|(k, _)| *k == Reject::Replayed);
        assert_eq!(replayed, Some((Reject::Replayed, captured.len() as u64)));
    }

    #[test]
    fn a_replay_to_a_restarted_car_gets_heartbeats_it_cannot_answer() {
        let limits = LinkLimits::DEFAULT;
        let mut old = CarEnd::new(limits, Some(key()), 1);
        let mut station = StationEnd::new(Some(key()), 2, limits.lost_after);
        let mut captured = Vec::new();
        answering(&mut old, &mut station, ms(0), ms(3000), &mut captured);
        // The car restarts (a new session); the spoofer replays the captured hello and
        // echoes, the last ones again and again.
        let mut car = CarEnd::new(limits, Some(key()), 3);
        let mut t = ms(0);
        let mut beats_to_spoofer = 0;
        while t < ms(4000) {
            for d in &captured {
                let heard = car.receive(d, addr(SPOOF), t);
                assert!(
                    !matches!(heard, Heard::Station(_) | Heard::Engage { .. }),
                    "{heard:?}"
                );
            }
            beats_to_spoofer += car.tick(t).0.len();
            t += ms(100);
        }
        assert!(beats_to_spoofer > 0, "a replayed hello asks for heartbeats");
        assert_eq!(car.strength(t), Strength::NotConnected);
    }

    #[test]
    fn an_unkeyed_or_forged_station_is_never_heard() {
        let limits = LinkLimits::DEFAULT;
        for other in [None, Some(OperatorKey::from_bytes([8; 32]))] {
            let mut car = CarEnd::new(limits, Some(key()), 1);
            let mut station = StationEnd::new(other.clone(), 2, limits.lost_after);
            let h = station.hello();
            let heard = car.receive(&h, addr(SPOOF), ms(0));
            let want = if other.is_none() {
                Reject::Unkeyed
            } else {
                Reject::Forged
            };
            assert!(
                matches!(heard, Heard::Dropped { kind, log: true, .. } if kind == want),
                "{heard:?}"
            );
            assert!(car.tick(ms(0)).0.is_empty(), "no heartbeats for it");
            // Echoes of heartbeats it sniffed from the real link: forged or unkeyed.
            let (beats, _) = car.tick(ms(200));
            assert!(beats.is_empty());
        }
    }

    #[test]
    fn an_engage_request_counts_once_and_only_on_a_recent_heartbeat() {
        let (mut car, mut station, mut sent) = linked(ms(2000));
        let request = station.engage(ms(2000)).unwrap();
        let heard = car.receive(&request, addr(OPS), ms(2005));
        let Heard::Engage {
            station: s,
            request: r,
            ..
        } = heard
        else {
            panic!("{heard:?}")
        };
        // Its replay, from anywhere, is refused.
        assert_dropped(
            car.receive(&request, addr(SPOOF), ms(2010)),
            Reject::Replayed,
        );
        let answer = car.answer_engage(s, r, true, "engaging");
        assert_eq!(
            station.receive(&answer, ms(2010)),
            FromCar::Engaged {
                ok: true,
                text: "engaging".into()
            }
        );
        // A second request on the same heartbeat, however new its counter, is refused.
        let again = station.engage(ms(2020)).unwrap();
        assert_dropped(car.receive(&again, addr(OPS), ms(2030)), Reject::Replayed);
        // A request made on a heartbeat older than lost_after is stale: the station froze.
        answering(&mut car, &mut station, ms(2100), ms(2500), &mut sent);
        let late = station.engage(ms(2500)).unwrap();
        assert_dropped(car.receive(&late, addr(OPS), ms(4000)), Reject::Stale);
        // The station itself will not ask without a recent heartbeat.
        assert!(station.engage(ms(4000)).is_err());
    }

    #[test]
    fn a_flood_of_other_sessions_makes_no_old_datagram_new_again() {
        let (mut car, mut station, sent) = linked(ms(2000));
        let request = station.engage(ms(2000)).unwrap();
        assert!(matches!(
            car.receive(&request, addr(OPS), ms(2005)),
            Heard::Engage { .. }
        ));
        // Hellos of many other sessions (recorded from earlier stations) push sessions out
        // of the counters' memory; the station's is kept, and the engage is refused by
        // its heartbeat anyway.
        for s in 100..100 + 2 * Freshness::SESSIONS as u64 {
            let hello = StationEnd::new(Some(key()), s, LinkLimits::DEFAULT.lost_after).hello();
            car.receive(&hello, addr(SPOOF), ms(2010));
        }
        for d in sent.iter().chain([&request]) {
            assert_dropped(car.receive(d, addr(SPOOF), ms(2020)), Reject::Replayed);
        }
        // The spoofed hellos never take the answering station's place among the listeners.
        let (beats, _) = car.tick(ms(2200));
        assert!(beats.iter().any(|(to, _)| *to == addr(OPS)), "{beats:?}");
    }

    #[test]
    fn an_answer_held_back_past_lost_after_does_not_count() {
        let limits = LinkLimits::DEFAULT;
        let (mut car, mut station) = keyed(limits);
        car.receive(&station.hello(), addr(OPS), ms(0));
        let (beats, _) = car.tick(ms(0));
        let FromCar::Beat { echo, .. } = station.receive(&beats[0].1, ms(0)) else {
            panic!()
        };
        assert_dropped(
            car.receive(&echo, addr(OPS), limits.lost_after),
            Reject::Stale,
        );
        assert_eq!(car.strength(limits.lost_after), Strength::NotConnected);
    }

    #[test]
    fn a_pinned_station_is_the_only_one_heard_even_with_the_key() {
        let limits = LinkLimits {
            station: Some("10.0.0.30".parse().unwrap()),
            ..LinkLimits::DEFAULT
        };
        let (mut car, mut station) = keyed(limits);
        assert_dropped(
            car.receive(&station.hello(), addr(SPOOF), ms(0)),
            Reject::Unpinned,
        );
        let mut sent = Vec::new();
        answering(&mut car, &mut station, ms(0), ms(5000), &mut sent);
        assert_eq!(car.strength(ms(5000)), Strength::Connected);
    }

    #[test]
    fn fuzzed_datagrams_change_nothing() {
        use rand::{Rng, SeedableRng};
        let (mut car, _station, sent) = linked(ms(3000));
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let before = car.rejections().total();
        let n = 5000;
        for i in 0..n {
            let mut d = sent[rng.gen_range(0..sent.len())].clone();
            match i % 4 {
                0 => d.truncate(rng.gen_range(0..d.len())),
                1 => d.resize(
                    rng.gen_range(d.len()..2 * super::super::wire::MAX_DATAGRAM),
                    0xa5,
                ),
                2 => d[6] = rng.gen_range(3..=255),
                _ => {
                    let bit = rng.gen_range(0..d.len() * 8);
                    d[bit / 8] ^= 1 << (bit % 8);
                }
            }
            let heard = car.receive(&d, addr(SPOOF), ms(3000));
            assert!(matches!(heard, Heard::Dropped { .. }), "{heard:?}");
        }
        assert_eq!(car.rejections().total() - before, n);
        assert_eq!(car.station(), Some(addr(OPS)));
        assert_eq!(car.strength(ms(3000)), Strength::Connected);
    }

    #[test]
    fn a_keyless_link_takes_any_station_as_before() {
        let limits = LinkLimits::DEFAULT;
        let mut car = CarEnd::new(limits, None, 1);
        let mut station = StationEnd::new(None, 2, limits.lost_after);
        let mut sent = Vec::new();
        answering(&mut car, &mut station, ms(0), ms(5000), &mut sent);
        assert!(!car.keyed());
        assert_eq!(car.strength(ms(5000)), Strength::Connected);
    }
}
