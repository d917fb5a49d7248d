//! The operator link's datagrams (`gem-op` version 2) and the key that signs them.
//!
//! The link is the operator's dead-man switch, so a datagram must prove that it comes
//! from a holder of the operator key and that it is new. Each one carries:
//!
//! - the sender's **session**, a random number drawn when the sender starts;
//! - a **counter**, strictly increasing within the session (a datagram whose counter is not
//!   above the last one seen from its session is a replay);
//! - a **tag**: HMAC-SHA-256 under the 256-bit operator key over every byte before it,
//!   truncated to 128 bits (RustCrypto's `hmac` and `sha2`).
//!
//! An answer names what it answers: an echo or an engage request carries the car's
//! session and the number of the heartbeat it answers, so a captured answer is worthless
//! once that heartbeat is old, and worthless to a car that restarted (a new session).
//!
//! Layout (integers big-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 0–6 | `gem-op` and the version, 2 |
//! | 7 | kind: 1 hello, 2 beat, 3 echo, 4 engage, 5 engage answer |
//! | 8 | flags: bit 0 set when signed with a key |
//! | 9–16 | the sender's session |
//! | 17–24 | the sender's counter |
//! | 25–32 | echo, engage: the car's session answered; answer: the station's session |
//! | 33–40 | beat: its number; echo, engage: the beat answered; answer: the request's counter |
//! | 41– | answer only: 1 if engaged, then at most [`MAX_TEXT`] bytes of UTF-8 saying why |
//! | last 16 | the tag (zeros when unsigned) |
//!
//! A link without a key (the simulated platforms) sends the same datagrams unsigned;
//! an end with a key refuses them as *unkeyed*.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::fmt;
use std::path::Path;
use thiserror::Error;

/// The key's length: 256 bits.
pub const KEY_BYTES: usize = 32;
/// The tag's length: HMAC-SHA-256 truncated to 128 bits.
pub const TAG_BYTES: usize = 16;
/// The longest reason an engage answer carries.
pub const MAX_TEXT: usize = 200;
/// The fixed part before the tag.
const HEAD: usize = 41;
/// The shortest datagram: the fixed part and the tag.
pub const MIN_DATAGRAM: usize = HEAD + TAG_BYTES;
/// The longest datagram: an engage answer with the longest reason.
pub const MAX_DATAGRAM: usize = MIN_DATAGRAM + 1 + MAX_TEXT;
const MAGIC: &[u8; 7] = b"gem-op\x02";
const SIGNED: u8 = 1;

/// The operator key: 256 random bits shared by the car and its operator stations.
#[derive(Clone, PartialEq, Eq)]
pub struct OperatorKey([u8; KEY_BYTES]);

impl fmt::Debug for OperatorKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OperatorKey(..)")
    }
}

/// Why a key could not be made, read or written.
#[derive(Debug, Error)]
pub enum KeyError {
    /// The file could not be read or written.
    #[error("operator key {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// The file does not hold a key.
    #[error("operator key {path}: {why} (make one with `gemctl operator keygen --out {path}`)")]
    Malformed {
        /// The file.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// Other users may read the file.
    #[error("operator key {path}: readable by other users (mode {mode:03o}); `chmod 600 {path}`")]
    Exposed {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// The system has no randomness to give.
    #[error("no randomness for a key: {0}")]
    Random(String),
}

impl OperatorKey {
    /// A new key from the system's random source.
    pub fn generate() -> Result<OperatorKey, KeyError> {
        let mut bytes = [0u8; KEY_BYTES];
        getrandom::getrandom(&mut bytes).map_err(|e| KeyError::Random(e.to_string()))?;
        Ok(OperatorKey(bytes))
    }

    /// A key of these bytes (tests, benchmarks).
    pub fn from_bytes(bytes: [u8; KEY_BYTES]) -> OperatorKey {
        OperatorKey(bytes)
    }

    /// The key as a file holds it: 64 hexadecimal digits and a newline.
    pub fn to_text(&self) -> String {
        let mut s: String = self.0.iter().map(|b| format!("{b:02x}")).collect();
        s.push('\n');
        s
    }

    /// The key in `text` (64 hexadecimal digits; surrounding white space is ignored).
    pub fn from_text(text: &str) -> Result<OperatorKey, String> {
        let t = text.trim();
        if t.len() != 2 * KEY_BYTES || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!(
                "a key is {} hexadecimal digits; this holds {} characters",
                2 * KEY_BYTES,
                t.chars().count()
            ));
        }
        let mut bytes = [0u8; KEY_BYTES];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::from_str_radix(&t[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
        }
        Ok(OperatorKey(bytes))
    }

    /// The key in the file at `path`, which only its owner may read.
    pub fn load(path: &Path) -> Result<OperatorKey, KeyError> {
        let shown = path.display().to_string();
        let io = |source| KeyError::Io {
            path: shown.clone(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(io)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(KeyError::Exposed { path: shown, mode });
            }
        }
        #[cfg(not(unix))]
        let _ = meta;
        let text = std::fs::read_to_string(path).map_err(io)?;
        OperatorKey::from_text(&text).map_err(|why| KeyError::Malformed { path: shown, why })
    }

    /// Writes a new key to `path`, readable by its owner only; an existing file is left
    /// alone (an error), so a key in use is never overwritten by mistake.
    pub fn write_new(&self, path: &Path) -> Result<(), KeyError> {
        use std::io::Write;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let io = |source| KeyError::Io {
            path: path.display().to_string(),
            source,
        };
        let mut file = options.open(path).map_err(io)?;
        file.write_all(self.to_text().as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)
    }

    fn mac(&self) -> Hmac<Sha256> {
        <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length")
    }
}

/// What a datagram says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// The station is there (its address is the datagram's source): heartbeats, please.
    Hello,
    /// The car's heartbeat number `seq`.
    Beat {
        /// The heartbeat's number.
        seq: u64,
    },
    /// The station's answer to heartbeat `seq` of the car's session `car`.
    Echo {
        /// The car's session.
        car: u64,
        /// The heartbeat answered.
        seq: u64,
    },
    /// The operator engages the car; `car` and `seq` name the latest heartbeat the
    /// station heard (the request is good only while that heartbeat is recent).
    Engage {
        /// The car's session.
        car: u64,
        /// The heartbeat answered.
        seq: u64,
    },
    /// The car's answer to the engage request `request` of station session `station`.
    Engaged {
        /// The station's session.
        station: u64,
        /// The request's counter.
        request: u64,
        /// Whether the car engaged.
        ok: bool,
        /// What the car says (the bridge's state, or why not).
        text: String,
    },
}

impl Message {
    fn kind(&self) -> u8 {
        match self {
            Message::Hello => 1,
            Message::Beat { .. } => 2,
            Message::Echo { .. } => 3,
            Message::Engage { .. } => 4,
            Message::Engaged { .. } => 5,
        }
    }

    fn refs(&self) -> (u64, u64) {
        match self {
            Message::Hello => (0, 0),
            Message::Beat { seq } => (0, *seq),
            Message::Echo { car, seq } | Message::Engage { car, seq } => (*car, *seq),
            Message::Engaged {
                station, request, ..
            } => (*station, *request),
        }
    }
}

/// A datagram opened: who sent it and what it says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opened {
    /// The sender's session.
    pub session: u64,
    /// The sender's counter.
    pub counter: u64,
    /// Whether it was signed (always, for an end that has a key).
    pub signed: bool,
    /// What it says.
    pub message: Message,
}

/// Why a datagram was dropped; each kind is counted on the link's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reject {
    /// Not a version 2 datagram of this link: too short or long, another protocol or
    /// version, an unknown kind, a reason that is not UTF-8.
    Malformed,
    /// Unsigned, where the receiver has a key.
    Unkeyed,
    /// Signed, but not with the receiver's key (or altered on the way).
    Forged,
    /// A counter not above the last one of its session, or an answer given already.
    Replayed,
    /// An answer to a heartbeat that is not recent, or to another session of the car.
    Stale,
    /// A hello from an address other than the pinned station's.
    Unpinned,
}

impl Reject {
    /// Every kind, in the status's order.
    pub const ALL: [Reject; 6] = [
        Reject::Malformed,
        Reject::Unkeyed,
        Reject::Forged,
        Reject::Replayed,
        Reject::Stale,
        Reject::Unpinned,
    ];

    /// The kind's name.
    pub fn name(self) -> &'static str {
        match self {
            Reject::Malformed => "malformed",
            Reject::Unkeyed => "unkeyed",
            Reject::Forged => "forged",
            Reject::Replayed => "replayed",
            Reject::Stale => "stale",
            Reject::Unpinned => "unpinned",
        }
    }
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Signs the datagrams one end sends: its session, and a counter that only grows.
#[derive(Debug)]
pub struct Sealer {
    key: Option<OperatorKey>,
    session: u64,
    counter: u64,
}

impl Sealer {
    /// An end with this key (none: unsigned) and session.
    pub fn new(key: Option<OperatorKey>, session: u64) -> Sealer {
        Sealer {
            key,
            session,
            counter: 0,
        }
    }

    /// This end's session.
    pub fn session(&self) -> u64 {
        self.session
    }

    /// The counter the next datagram gets.
    pub fn next_counter(&self) -> u64 {
        self.counter + 1
    }

    /// The key, if any.
    pub fn key(&self) -> Option<&OperatorKey> {
        self.key.as_ref()
    }

    /// The datagram saying `message`, with the next counter.
    pub fn seal(&mut self, message: &Message) -> Vec<u8> {
        self.counter += 1;
        let mut out = Vec::with_capacity(MIN_DATAGRAM + 8);
        out.extend_from_slice(MAGIC);
        out.push(message.kind());
        out.push(if self.key.is_some() { SIGNED } else { 0 });
        out.extend_from_slice(&self.session.to_be_bytes());
        out.extend_from_slice(&self.counter.to_be_bytes());
        let (a, b) = message.refs();
        out.extend_from_slice(&a.to_be_bytes());
        out.extend_from_slice(&b.to_be_bytes());
        if let Message::Engaged { ok, text, .. } = message {
            out.push(u8::from(*ok));
            let mut end = text.len().min(MAX_TEXT);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            out.extend_from_slice(&text.as_bytes()[..end]);
        }
        let tag = match &self.key {
            Some(k) => tag(k, &out),
            None => [0u8; TAG_BYTES],
        };
        out.extend_from_slice(&tag);
        out
    }
}

fn tag(key: &OperatorKey, bytes: &[u8]) -> [u8; TAG_BYTES] {
    let mut mac = key.mac();
    mac.update(bytes);
    let full = mac.finalize().into_bytes();
    let mut t = [0u8; TAG_BYTES];
    t.copy_from_slice(&full[..TAG_BYTES]);
    t
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_be_bytes(b)
}

/// Opens a datagram with `key` (none: the receiver has no key and checks no tag): what
/// it says, or why it is dropped with a few words for the log.
pub fn open(key: Option<&OperatorKey>, bytes: &[u8]) -> Result<Opened, (Reject, String)> {
    let malformed = |why: String| Err((Reject::Malformed, why));
    if bytes.len() < MIN_DATAGRAM || bytes.len() > MAX_DATAGRAM {
        return malformed(format!("{} bytes", bytes.len()));
    }
    if bytes[..6] != MAGIC[..6] {
        return malformed("not a gem-op datagram".into());
    }
    if bytes[6] != MAGIC[6] {
        return malformed(format!(
            "gem-op version {} (this end speaks {})",
            bytes[6], MAGIC[6]
        ));
    }
    let (body, their_tag) = bytes.split_at(bytes.len() - TAG_BYTES);
    let signed = body[8] & SIGNED != 0;
    if body[8] & !SIGNED != 0 {
        return malformed(format!("unknown flags {:#04x}", body[8]));
    }
    if let Some(k) = key {
        if !signed {
            return Err((Reject::Unkeyed, "unsigned, and this end has a key".into()));
        }
        let mut mac = k.mac();
        mac.update(body);
        // `verify_truncated_left` compares in constant time.
        if mac.verify_truncated_left(their_tag).is_err() {
            return Err((Reject::Forged, "the tag does not match the key".into()));
        }
    }
    let (session, counter) = (u64_at(body, 9), u64_at(body, 17));
    let (a, b) = (u64_at(body, 25), u64_at(body, 33));
    let rest = &body[HEAD..];
    let fixed = |m: Message| {
        if rest.is_empty() {
            Ok(m)
        } else {
            Err((Reject::Malformed, format!("{} bytes too many", rest.len())))
        }
    };
    let message = match body[7] {
        1 => fixed(Message::Hello)?,
        2 => fixed(Message::Beat { seq: b })?,
        3 => fixed(Message::Echo { car: a, seq: b })?,
        4 => fixed(Message::Engage { car: a, seq: b })?,
        5 => {
            let Some((&ok, text)) = rest.split_first() else {
                return malformed("an engage answer without its outcome".into());
            };
            if ok > 1 {
                return malformed(format!("engage outcome {ok}"));
            }
            let text = std::str::from_utf8(text)
                .map_err(|_| (Reject::Malformed, "a reason that is not UTF-8".to_string()))?;
            Message::Engaged {
                station: a,
                request: b,
                ok: ok == 1,
                text: text.to_owned(),
            }
        }
        k => return malformed(format!("unknown kind {k}")),
    };
    Ok(Opened {
        session,
        counter,
        signed,
        message,
    })
}

/// The sessions heard from and the last counter of each: a datagram whose counter is not
/// above its session's last is a replay. Holds the latest [`Freshness::SESSIONS`] sessions.
#[derive(Clone, Debug, Default)]
pub struct Freshness {
    /// (session, last counter), the most recent last.
    seen: Vec<(u64, u64)>,
}

impl Freshness {
    /// Sessions remembered.
    pub const SESSIONS: usize = 16;

    /// Whether (`session`, `counter`) is new, without taking it.
    pub fn is_fresh(&self, session: u64, counter: u64) -> bool {
        self.seen
            .iter()
            .find(|(s, _)| *s == session)
            .is_none_or(|(_, last)| counter > *last)
    }

    /// Takes (`session`, `counter`): true if it was new (and is now the session's last).
    pub fn take(&mut self, session: u64, counter: u64) -> bool {
        self.take_keeping(session, counter, None)
    }

    /// [`Freshness::take`], never forgetting session `keep` (the station's, so that a
    /// flood of other sessions cannot make its old datagrams new again).
    pub fn take_keeping(&mut self, session: u64, counter: u64, keep: Option<u64>) -> bool {
        if !self.is_fresh(session, counter) {
            return false;
        }
        self.seen.retain(|(s, _)| *s != session);
        if self.seen.len() >= Self::SESSIONS {
            let oldest = self
                .seen
                .iter()
                .position(|(s, _)| Some(*s) != keep)
                .unwrap_or(0);
            self.seen.remove(oldest);
        }
        self.seen.push((session, counter));
        true
    }
}

/// The datagrams dropped, by kind, and a log limiter per source: the first drop from an
/// address is logged, then the 2nd, 4th, 8th... so a flood costs a few lines.
#[derive(Clone, Debug, Default)]
pub struct Rejections {
    counts: [u64; Reject::ALL.len()],
    /// (source, drops from it), the most recent last; at most [`Rejections::SOURCES`].
    sources: Vec<(std::net::IpAddr, u64)>,
}

impl Rejections {
    /// Sources whose drops are counted for the log limiter.
    pub const SOURCES: usize = 64;

    /// Counts a drop of `kind` from `from`; true if this one should be logged. Beyond
    /// [`Rejections::SOURCES`] sources at once, a new one is logged only at the 1st, 2nd,
    /// 4th... drop of all: many spoofed sources cannot flood the log.
    pub fn count(&mut self, kind: Reject, from: std::net::IpAddr) -> bool {
        self.counts[kind as usize] += 1;
        let crowded = self.sources.len() >= Self::SOURCES;
        let n = match self.sources.iter().position(|(a, _)| *a == from) {
            Some(i) => {
                let mut entry = self.sources.remove(i);
                entry.1 += 1;
                self.sources.push(entry);
                entry.1
            }
            None => {
                if crowded {
                    self.sources.remove(0);
                }
                self.sources.push((from, 1));
                if crowded {
                    return self.total().is_power_of_two();
                }
                1
            }
        };
        n.is_power_of_two()
    }

    /// The drops of each kind, in [`Reject::ALL`]'s order.
    pub fn counts(&self) -> impl Iterator<Item = (Reject, u64)> + '_ {
        Reject::ALL.iter().map(|k| (*k, self.counts[*k as usize]))
    }

    /// Every drop.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// A random session number.
pub fn new_session() -> u64 {
    let mut b = [0u8; 8];
    if getrandom::getrandom(&mut b).is_err() {
        // No randomness: the time still differs from one start to the next.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        return t.as_nanos() as u64 ^ u64::from(std::process::id()) << 32;
    }
    u64::from_be_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> OperatorKey {
        OperatorKey::from_bytes([b; KEY_BYTES])
    }

    fn every_kind() -> Vec<Message> {
        vec![
            Message::Hello,
            Message::Beat { seq: 7 },
            Message::Echo { car: 9, seq: 7 },
            Message::Engage {
                car: 9,
                seq: u64::MAX,
            },
            Message::Engaged {
                station: 3,
                request: 4,
                ok: true,
                text: "engaged: ready".into(),
            },
            Message::Engaged {
                station: 3,
                request: 5,
                ok: false,
                text: String::new(),
            },
        ]
    }

    #[test]
    fn every_kind_round_trips_signed_and_unsigned() {
        for k in [Some(key(1)), None] {
            let mut s = Sealer::new(k.clone(), 42);
            for (i, m) in every_kind().into_iter().enumerate() {
                let d = s.seal(&m);
                let o = open(k.as_ref(), &d).unwrap();
                assert_eq!(o.message, m);
                assert_eq!((o.session, o.counter), (42, i as u64 + 1));
                assert_eq!(o.signed, k.is_some());
                assert!(d.len() <= MAX_DATAGRAM);
            }
        }
    }

    #[test]
    fn a_long_reason_is_cut_at_a_character() {
        let mut s = Sealer::new(Some(key(1)), 1);
        let d = s.seal(&Message::Engaged {
            station: 1,
            request: 1,
            ok: false,
            text: "é".repeat(150),
        });
        let Message::Engaged { text, .. } = open(Some(&key(1)), &d).unwrap().message else {
            panic!()
        };
        assert_eq!(text.len(), MAX_TEXT);
    }

    #[test]
    fn the_wrong_key_no_key_and_any_flipped_bit_are_refused() {
        let mut s = Sealer::new(Some(key(1)), 42);
        let d = s.seal(&Message::Echo { car: 1, seq: 2 });
        assert_eq!(open(Some(&key(2)), &d).unwrap_err().0, Reject::Forged);
        let mut unsigned = Sealer::new(None, 42);
        let u = unsigned.seal(&Message::Hello);
        assert_eq!(open(Some(&key(1)), &u).unwrap_err().0, Reject::Unkeyed);
        // A keyless end takes both.
        assert!(open(None, &d).is_ok() && open(None, &u).is_ok());
        for bit in 0..d.len() * 8 {
            let mut f = d.clone();
            f[bit / 8] ^= 1 << (bit % 8);
            assert!(
                open(Some(&key(1)), &f).is_err(),
                "bit {bit} flipped was taken"
            );
        }
    }

    #[test]
    fn truncated_oversized_and_foreign_datagrams_are_malformed() {
        let mut s = Sealer::new(Some(key(1)), 42);
        let d = s.seal(&Message::Hello);
        for n in 0..d.len() {
            assert_eq!(
                open(Some(&key(1)), &d[..n]).unwrap_err().0,
                Reject::Malformed
            );
        }
        let mut long = d.clone();
        long.resize(MAX_DATAGRAM + 1, 0);
        assert_eq!(open(Some(&key(1)), &long).unwrap_err().0, Reject::Malformed);
        let mut v3 = d.clone();
        v3[6] = 3;
        let (kind, why) = open(Some(&key(1)), &v3).unwrap_err();
        assert_eq!(kind, Reject::Malformed);
        assert!(why.contains("version 3"), "{why}");
        let mut text = b"gem-op 1 echo 12".to_vec();
        text.resize(MIN_DATAGRAM, b' ');
        assert_eq!(open(None, &text).unwrap_err().0, Reject::Malformed);
        // A fixed-size kind with extra bytes, signed properly, is still malformed.
        let mut s2 = Sealer::new(None, 1);
        let mut extra = s2.seal(&Message::Hello);
        extra.splice(HEAD..HEAD, [0u8; 3]);
        assert_eq!(open(None, &extra).unwrap_err().0, Reject::Malformed);
    }

    #[test]
    fn counters_must_grow_within_a_session() {
        let mut f = Freshness::default();
        assert!(f.take(1, 1));
        assert!(!f.take(1, 1), "the same datagram again");
        assert!(f.take(1, 5));
        assert!(!f.take(1, 3), "an older one");
        assert!(f.take(2, 1), "another session");
        for s in 10..10 + Freshness::SESSIONS as u64 {
            f.take(s, 1);
        }
        assert!(f.take(1, 2), "forgotten after SESSIONS newer sessions");
    }

    #[test]
    fn drops_are_logged_at_powers_of_two_per_source_and_overall_when_crowded() {
        let mut r = Rejections::default();
        let a: std::net::IpAddr = "10.0.0.1".parse().unwrap();
        let logged: Vec<bool> = (0..5).map(|_| r.count(Reject::Forged, a)).collect();
        assert_eq!(logged, [true, true, false, true, false]);
        // Many spoofed sources round robin: few lines, not one per drop.
        let mut lines = 0;
        for i in 0..10_000u32 {
            let from = std::net::IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + (i % 500)));
            lines += usize::from(r.count(Reject::Unkeyed, from));
        }
        assert!(lines < 100, "{lines} lines for 10,000 drops");
        assert_eq!(r.total(), 10_005);
    }

    #[test]
    fn keys_round_trip_as_text_and_files_and_bad_ones_say_why() {
        let k = OperatorKey::generate().unwrap();
        assert_ne!(k, OperatorKey::generate().unwrap());
        assert_eq!(OperatorKey::from_text(&k.to_text()).unwrap(), k);
        assert_eq!(format!("{k:?}"), "OperatorKey(..)");
        for bad in ["", "abc", &"g".repeat(64), &"a".repeat(66)] {
            assert!(OperatorKey::from_text(bad).is_err(), "{bad:?}");
        }
        let dir = std::env::temp_dir().join(format!("gem-key-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("operator.key");
        k.write_new(&path).unwrap();
        assert_eq!(OperatorKey::load(&path).unwrap(), k);
        let again = k.write_new(&path).unwrap_err();
        assert!(matches!(again, KeyError::Io { .. }), "{again}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let e = OperatorKey::load(&path).unwrap_err().to_string();
            assert!(e.contains("chmod 600"), "{e}");
        }
        let junk = dir.join("junk.key");
        std::fs::write(&junk, "not a key").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&junk, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let e = OperatorKey::load(&junk).unwrap_err().to_string();
        assert!(e.contains("gemctl operator keygen"), "{e}");
        let e = OperatorKey::load(&dir.join("none"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("none"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
