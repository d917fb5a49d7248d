//! `gemctl operator`: the operator station's end of the heartbeat link that gives the car's
//! `signal_sources` its signal strength (docs/nodes/signal_sources.md). Run it on the
//! operator's computer: it says hello to the car until heartbeats come, answers each one at
//! once, and keeps saying hello every second so a restarted car finds it again. It needs no
//! ROS: the link is plain UDP (`gem_core::signal_sources::link::Datagram`).

use gem_core::signal_sources::link::{Datagram, DEFAULT_PORT};
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// The car's computer: HOST or HOST:PORT (the port of its `signal_sources`,
    /// `~operator_port`, 11622 unless changed).
    #[arg(long)]
    car: String,
    /// Stop after this many seconds (0: run until interrupted).
    #[arg(long, default_value_t = 0.0)]
    duration: f64,
}

/// How often the station says hello.
const HELLO_EVERY: Duration = Duration::from_secs(1);
/// Without a heartbeat for this long the station says the car is not heard.
const QUIET_AFTER: Duration = Duration::from_secs(1);

/// The car's address from `--car`.
fn car_address(car: &str) -> anyhow::Result<SocketAddr> {
    let with_port = if car
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        car.to_owned()
    } else {
        format!("{car}:{DEFAULT_PORT}")
    };
    let addresses: Vec<SocketAddr> = with_port
        .to_socket_addrs()
        .map_err(|e| anyhow::anyhow!("--car {car}: {e}"))?
        .collect();
    // The car listens on IPv4 (`signal_sources` binds 0.0.0.0): its IPv4 address first.
    addresses
        .iter()
        .find(|a| a.is_ipv4())
        .or(addresses.first())
        .copied()
        .ok_or_else(|| anyhow::anyhow!("--car {car}: no address"))
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let car = car_address(&args.car)?;
    anyhow::ensure!(
        args.duration.is_finite() && args.duration >= 0.0,
        "--duration must be a number of seconds >= 0, not {}",
        args.duration
    );
    let any: SocketAddr = if car.is_ipv6() {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(any)?;
    socket.set_read_timeout(Some(Duration::from_millis(100)))?;
    let end =
        (args.duration > 0.0).then(|| Instant::now() + Duration::from_secs_f64(args.duration));
    println!("operator station: heartbeats with the car at {car}");
    let mut hello_due = Instant::now();
    let mut heard: Option<Instant> = None;
    let mut answered = 0u64;
    let mut buf = [0u8; 64];
    while end.is_none_or(|e| Instant::now() < e) {
        let now = Instant::now();
        if now >= hello_due {
            hello_due = now + HELLO_EVERY;
            // A failed send (no route while a cable is out) is retried at the next hello.
            let _ = socket.send_to(&Datagram::Hello.encode(), car);
        }
        if let Some(at) = heard {
            if now.duration_since(at) > QUIET_AFTER {
                println!(
                    "no heartbeat from the car for {:.1} s ({answered} answered so far)",
                    now.duration_since(at).as_secs_f64()
                );
                heard = None;
            }
        }
        let Ok((n, from)) = socket.recv_from(&mut buf) else {
            continue;
        };
        if from != car {
            continue;
        }
        if let Ok(Datagram::Beat(seq)) = Datagram::decode(&buf[..n]) {
            let _ = socket.send_to(&Datagram::Echo(seq).encode(), car);
            answered += 1;
            if heard.is_none() {
                println!("car heard: answering its heartbeats (heartbeat {seq})");
            }
            heard = Some(Instant::now());
        }
    }
    println!("operator station: {answered} heartbeats answered");
    Ok(())
}
