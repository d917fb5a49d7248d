//! `gemctl operator`: the operator station's end of the heartbeat link that gives the car's
//! `signal_sources` its signal strength (docs/nodes/signal_sources.md), and the operator's
//! way to engage the car. Run it on the operator's computer: it says hello to the car until
//! heartbeats come, answers each one at once, and keeps saying hello every second so a
//! restarted car finds it again. Typing `engage` (or `e`) and Enter, or `--engage-after`,
//! sends a signed engage request. It needs no ROS: the link is plain UDP
//! (`gem_core::signal_sources::link`, where the datagrams and the station's rules are).
//!
//! `gemctl operator keygen --out FILE` makes the key both ends hold.

use gem_core::signal_sources::link::station::{FromCar, StationEnd};
use gem_core::signal_sources::link::wire::{new_session, OperatorKey, MAX_DATAGRAM};
use gem_core::signal_sources::link::{LinkLimits, DEFAULT_PORT};
use std::io::BufRead;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    station: StationArgs,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Make a new operator key (256 random bits), readable by its owner only.
    Keygen {
        /// Where to write it (an existing file is left alone).
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(clap::Args)]
struct StationArgs {
    /// The car's computer: HOST or HOST:PORT (the port of its `signal_sources`,
    /// `~operator_port`, 11622 unless changed).
    #[arg(long)]
    car: Option<String>,
    /// The operator key (`gemctl operator keygen`); the car's `key_file` holds the same.
    /// Without it the datagrams go unsigned, which only a car without a key takes.
    #[arg(long)]
    key: Option<PathBuf>,
    /// Send one engage request this many seconds after the first heartbeat (besides
    /// typing `engage`).
    #[arg(long)]
    engage_after: Option<f64>,
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
    match &args.command {
        Some(Command::Keygen { out }) => {
            OperatorKey::generate()?.write_new(out)?;
            println!(
                "operator key written to {} (mode 600); install the same file on the car and name it in its sources file (`operator: {{key_file: …}}`)",
                out.display()
            );
            Ok(())
        }
        None => station(&args.station),
    }
}

/// Lines typed on standard input, read on a thread of their own.
fn typed() -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let _ = std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
    rx
}

fn station(args: &StationArgs) -> anyhow::Result<()> {
    let Some(car) = &args.car else {
        anyhow::bail!("--car HOST[:PORT] is needed (or `gemctl operator keygen --out FILE`)");
    };
    let car = car_address(car)?;
    anyhow::ensure!(
        args.duration.is_finite() && args.duration >= 0.0,
        "--duration must be a number of seconds >= 0, not {}",
        args.duration
    );
    if let Some(e) = args.engage_after {
        anyhow::ensure!(
            e.is_finite() && e >= 0.0,
            "--engage-after must be a number of seconds >= 0, not {e}"
        );
    }
    let key = args.key.as_deref().map(OperatorKey::load).transpose()?;
    let any: SocketAddr = if car.is_ipv6() {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(any)?;
    socket.set_read_timeout(Some(Duration::from_millis(100)))?;
    let origin = Instant::now();
    let end = (args.duration > 0.0).then(|| origin + Duration::from_secs_f64(args.duration));
    let signed = if key.is_some() { "signed" } else { "UNSIGNED" };
    println!("operator station: heartbeats with the car at {car} ({signed}); type `engage` and Enter to engage it");
    let mut link = StationEnd::new(key, new_session(), LinkLimits::DEFAULT.lost_after);
    let lines = typed();
    let mut hello_due = Instant::now();
    let mut heard: Option<Instant> = None;
    let mut engage_at: Option<Instant> = None;
    let mut answered = 0u64;
    let mut buf = [0u8; MAX_DATAGRAM + 1];
    while end.is_none_or(|e| Instant::now() < e) {
        let now = Instant::now();
        if now >= hello_due {
            hello_due = now + HELLO_EVERY;
            // A failed send (no route while a cable is out) is retried at the next hello.
            let _ = socket.send_to(&link.hello(), car);
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
        let mut engage = engage_at.is_some_and(|at| now >= at);
        while let Ok(line) = lines.try_recv() {
            match line.trim() {
                "engage" | "e" => engage = true,
                "" => {}
                other => println!("unknown command {other:?}: type `engage` (or `e`)"),
            }
        }
        if engage {
            engage_at = None;
            match link.engage(origin.elapsed()) {
                Ok(request) => {
                    let _ = socket.send_to(&request, car);
                    println!("engage request sent");
                }
                Err(e) => println!("engage not sent: {e}"),
            }
        }
        let Ok((n, from)) = socket.recv_from(&mut buf) else {
            continue;
        };
        if from != car {
            continue;
        }
        match link.receive(&buf[..n], origin.elapsed()) {
            FromCar::Beat { seq, echo } => {
                let _ = socket.send_to(&echo, car);
                answered += 1;
                if heard.is_none() {
                    println!("car heard: answering its heartbeats (heartbeat {seq})");
                    if answered == 1 {
                        engage_at = args.engage_after.and_then(|s| {
                            Instant::now().checked_add(Duration::try_from_secs_f64(s).ok()?)
                        });
                    }
                }
                heard = Some(Instant::now());
            }
            FromCar::Engaged { ok, text } => {
                // `ok`: the bridge took the request; `text` says where its handshake is.
                let verdict = if ok {
                    "took the engage request"
                } else {
                    "did NOT take the engage request"
                };
                println!("car {verdict}: {text}");
            }
            FromCar::Dropped {
                kind,
                why,
                log: true,
            } => println!("dropped {kind} datagram from the car: {why}"),
            FromCar::Dropped { .. } => {}
        }
    }
    println!("operator station: {answered} heartbeats answered");
    Ok(())
}
