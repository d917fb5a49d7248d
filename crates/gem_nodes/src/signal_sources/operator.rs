//! The car's end of the operator link: a UDP socket fed to a [`CarEnd`]
//! (`gem_core::signal_sources::link::car`, which decides what is taken and what is dropped),
//! the heartbeats it asks for sent on time, and the operator's engage request passed to
//! pacmod_bridge. UDP, not a ROS topic: a cut link must show as lost heartbeats at once, not
//! as a TCP stream that retransmits and then delivers a burst.
//!
//! Heartbeats run on wall time whatever the simulation's clock does: a network's round trip
//! is wall time.

use gem_core::signal_sources::link::car::{CarEnd, Heard};
use gem_core::signal_sources::link::wire::{new_session, OperatorKey, Reject, MAX_DATAGRAM};
use gem_core::signal_sources::link::LinkLimits;
use gem_core::state_manager::Strength;
use ros1_protocols::Lock;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The longest the thread waits for a datagram: a stop is seen within it whatever the
/// heartbeat period.
const READ_AT_MOST: Duration = Duration::from_millis(100);

/// Engages the car: whether it did, and what the bridge said (or why not).
pub type Engage = Arc<dyn Fn() -> (bool, String) + Send + Sync>;

/// The running link: its end, and its thread's stop flag.
pub struct Link {
    end: Arc<Mutex<CarEnd>>,
    origin: Instant,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Link {
    /// Listens on UDP `port` (every address) and starts the heartbeat thread. With a `key`
    /// only its holders are heard; `engage` is called for each good engage request.
    pub fn start(
        limits: LinkLimits,
        key: Option<OperatorKey>,
        port: u16,
        engage: Engage,
    ) -> anyhow::Result<Link> {
        let socket = UdpSocket::bind(("0.0.0.0", port))
            .map_err(|e| anyhow::anyhow!("operator link: cannot listen on UDP port {port}: {e}"))?;
        socket.set_read_timeout(Some(READ_AT_MOST))?;
        let keyed = key.is_some();
        let end = Arc::new(Mutex::new(CarEnd::new(limits, key, new_session())));
        let origin = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (end, stop) = (end.clone(), stop.clone());
            std::thread::Builder::new()
                .name("operator_link".into())
                .spawn(move || beat(&socket, &end, origin, &stop, &engage))?
        };
        let station = limits.station.map_or(String::new(), |a| format!(" at {a}"));
        let signed = if keyed {
            "signed with the operator key"
        } else {
            "UNSIGNED: any host can keep it up or engage the car"
        };
        tracing::info!(
            "operator link: listening on UDP port {port} ({signed}), waiting for `gemctl operator`{station}"
        );
        Ok(Link {
            end,
            origin,
            stop,
            thread: Some(thread),
        })
    }

    /// The link's strength now.
    pub fn strength(&self) -> Strength {
        self.end.locked().strength(self.origin.elapsed())
    }

    /// The link's status values: signed or not, the station, the drops by kind.
    pub fn status(&self) -> Vec<(String, String)> {
        let end = self.end.locked();
        let mut values = vec![
            ("signed".to_owned(), end.keyed().to_string()),
            (
                "station".to_owned(),
                end.station().map_or("none yet".into(), |a| a.to_string()),
            ),
        ];
        values.extend(
            end.rejections()
                .counts()
                .map(|(kind, n)| (format!("dropped {kind}"), n.to_string())),
        );
        values
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The heartbeat loop: the beats due sent, the datagrams that arrive in between read as
/// they come.
fn beat(
    socket: &UdpSocket,
    end: &Arc<Mutex<CarEnd>>,
    origin: Instant,
    stop: &AtomicBool,
    engage: &Engage,
) {
    // One byte more than the longest datagram: a longer one shows as too long.
    let mut buf = [0u8; MAX_DATAGRAM + 1];
    // One engage request at a time: another while one is with the bridge is dropped.
    let engaging = Arc::new(AtomicBool::new(false));
    let mut last = Strength::NotConnected;
    while !stop.load(Ordering::Relaxed) {
        let (beats, next) = end.locked().tick(origin.elapsed());
        for (to, datagram) in beats {
            // A send can fail while the route is gone: the beat then counts as lost.
            let _ = socket.send_to(&datagram, to);
        }
        let strength = end.locked().strength(origin.elapsed());
        if strength != last {
            tracing::info!("operator link: {last:?} -> {strength:?}");
            last = strength;
        }
        let wait = next.saturating_sub(origin.elapsed());
        let _ = socket.set_read_timeout(Some(wait.clamp(Duration::from_millis(1), READ_AT_MOST)));
        let Ok((n, from)) = socket.recv_from(&mut buf) else {
            continue;
        };
        let heard = end.locked().receive(&buf[..n], from, origin.elapsed());
        match heard {
            Heard::Nothing => {}
            Heard::Station(at) => tracing::info!("operator link: station at {at}"),
            Heard::Dropped {
                from,
                kind,
                why,
                log: true,
            } => {
                let hint = match kind {
                    Reject::Unkeyed | Reject::Forged => {
                        " (is `gemctl operator` given the car's key with --key?)"
                    }
                    Reject::Unpinned => " (the sources file pins the station)",
                    _ => "",
                };
                tracing::warn!("operator link: dropped {kind} datagram from {from}: {why}{hint}");
            }
            Heard::Dropped { .. } => {}
            Heard::Engage {
                from,
                station,
                request,
            } => {
                if engaging.swap(true, Ordering::SeqCst) {
                    tracing::warn!(
                        "operator link: engage request from {from} dropped: the last one is still with the bridge"
                    );
                    continue;
                }
                tracing::warn!("operator link: engage requested by the operator station at {from}");
                // The bridge's answer may take a moment: not on the heartbeat's thread.
                let Ok(reply) = socket.try_clone() else {
                    engaging.store(false, Ordering::SeqCst);
                    continue;
                };
                let (end, engage, done) = (end.clone(), engage.clone(), engaging.clone());
                let spawned = std::thread::Builder::new()
                    .name("operator_engage".into())
                    .spawn(move || {
                        let (ok, text) = engage();
                        tracing::info!("operator link: engage from {from}: {text}");
                        let answer = end.locked().answer_engage(station, request, ok, &text);
                        let _ = reply.send_to(&answer, from);
                        done.store(false, Ordering::SeqCst);
                    });
                if spawned.is_err() {
                    engaging.store(false, Ordering::SeqCst);
                }
            }
        }
    }
}
