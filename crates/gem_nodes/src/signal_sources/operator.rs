//! The car's end of the operator link: a UDP socket that learns the operator station's
//! address from its datagrams, sends it a numbered heartbeat every `period` and feeds the
//! answers to a [`LinkMeter`] (`gem_core::signal_sources::link`, where the strength's
//! mapping is). UDP, not a ROS topic: a cut link must show as lost heartbeats at once, not
//! as a TCP stream that retransmits and then delivers a burst.
//!
//! Heartbeats run on wall time whatever the simulation's clock does: a network's round trip
//! is wall time.

use gem_core::signal_sources::link::{Datagram, LinkLimits, LinkMeter};
use gem_core::state_manager::Strength;
use ros1_protocols::Lock;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The longest the thread waits for a datagram: a stop is seen within it whatever the
/// heartbeat period.
const READ_AT_MOST: Duration = Duration::from_millis(100);

/// The running link: its meter, and its thread's stop flag.
pub struct Link {
    meter: Arc<Mutex<LinkMeter>>,
    origin: Instant,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Link {
    /// Listens on UDP `port` (every address) and starts the heartbeat thread.
    pub fn start(limits: LinkLimits, port: u16) -> anyhow::Result<Link> {
        let socket = UdpSocket::bind(("0.0.0.0", port))
            .map_err(|e| anyhow::anyhow!("operator link: cannot listen on UDP port {port}: {e}"))?;
        socket.set_read_timeout(Some(READ_AT_MOST))?;
        let meter = Arc::new(Mutex::new(LinkMeter::new(limits)));
        let origin = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (meter, stop) = (meter.clone(), stop.clone());
            std::thread::Builder::new()
                .name("operator_link".into())
                .spawn(move || beat(&socket, limits, &meter, origin, &stop))?
        };
        match limits.station {
            Some(at) => tracing::info!(
                "operator link: listening on UDP port {port}, waiting for `gemctl operator` at {at}"
            ),
            None => tracing::info!(
                "operator link: listening on UDP port {port}, waiting for `gemctl operator`"
            ),
        }
        Ok(Link {
            meter,
            origin,
            stop,
            thread: Some(thread),
        })
    }

    /// The link's strength now.
    pub fn strength(&self) -> Strength {
        self.meter.locked().strength(self.origin.elapsed())
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

/// The heartbeat loop: a beat to the station every `period`, the datagrams that arrive
/// in between read as they come.
fn beat(
    socket: &UdpSocket,
    limits: LinkLimits,
    meter: &Mutex<LinkMeter>,
    origin: Instant,
    stop: &AtomicBool,
) {
    let mut station: Option<SocketAddr> = None;
    let mut seq = 0u64;
    let mut next = Instant::now();
    let mut strays = 0u64;
    let mut buf = [0u8; 64];
    let mut last = Strength::NotConnected;
    let mut refused = 0u64;
    let period = limits.period;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= next {
            next += period;
            if next < now {
                next = now + period;
            }
            if let Some(to) = station {
                seq += 1;
                meter.locked().sent(seq, origin.elapsed());
                // A send can fail while the route is gone: the beat then counts as lost.
                let _ = socket.send_to(&Datagram::Beat(seq).encode(), to);
            }
            let strength = meter.locked().strength(origin.elapsed());
            if strength != last {
                tracing::info!("operator link: {last:?} -> {strength:?}");
                last = strength;
            }
        }
        let wait = next.saturating_duration_since(Instant::now());
        let _ = socket.set_read_timeout(Some(wait.clamp(Duration::from_millis(1), READ_AT_MOST)));
        let Ok((n, from)) = socket.recv_from(&mut buf) else {
            continue;
        };
        match Datagram::decode(&buf[..n]) {
            Ok(Datagram::Hello) if !limits.accepts(from.ip()) => {
                refused += 1;
                if refused.is_power_of_two() {
                    tracing::warn!(
                        "operator link: {refused} hello(s) refused, the last from {from}: the file pins the station to {}",
                        limits.station.map_or(String::new(), |a| a.to_string())
                    );
                }
            }
            Ok(Datagram::Hello) => match station {
                Some(at) if at == from => {}
                // The same computer from a new port: `gemctl operator` restarted.
                Some(at) if at.ip() == from.ip() => {
                    tracing::info!("operator link: station at {from} (restarted)");
                    station = Some(from);
                }
                Some(at) => {
                    tracing::warn!(
                        "operator link: station moved from {at} to {from} (pin one with `station:` in the sources file)"
                    );
                    station = Some(from);
                }
                None => {
                    tracing::info!("operator link: station at {from}");
                    station = Some(from);
                }
            },
            Ok(Datagram::Echo(s)) if station == Some(from) => {
                meter.locked().answered(s, origin.elapsed());
            }
            Ok(_) => {}
            Err(e) => {
                strays += 1;
                if strays.is_power_of_two() {
                    tracing::warn!(
                        "operator link: {strays} stray datagram(s), the last from {from}: {e}"
                    );
                }
            }
        }
    }
}
