//! `gemctl status`: the overlay's text in a terminal for headless users, redrawn in place
//! (or printed once for scripts). It subscribes exactly what `status_overlay` subscribes
//! (`gem_nodes::overlay::subscribe`) and renders with the same `gem_core::overlay::render`,
//! so the two views cannot disagree. The refresh runs on wall time: a terminal view must
//! keep drawing when a simulation is paused.

use gem_nodes::overlay::{subscribe, Shared};
use ros1_protocols::Lock;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// Print one snapshot once the state manager and the planner have been heard from
    /// (or `--timeout` passed), then exit; non-zero when no /system_state arrived.
    #[arg(long)]
    once: bool,
    /// Redraws per second.
    #[arg(long, default_value_t = 4.0, value_parser = positive)]
    rate: f64,
    /// Seconds to wait for the master and, with `--once`, for the first messages.
    #[arg(long, default_value_t = 10.0, value_parser = positive)]
    timeout: f64,
}

fn positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a positive number")),
    }
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let timeout = Duration::from_secs_f64(args.timeout);
    gem_ros::node::start_within(&format!("gemctl_status_{}", std::process::id()), timeout)?;
    let snapshot = Shared::default();
    let subs = subscribe(&snapshot)?;
    let read = || {
        subs.catch_up();
        snapshot.locked().clone()
    };
    if args.once {
        return once(read, timeout);
    }
    let period = Duration::from_secs_f64(1.0 / args.rate);
    let mut out = std::io::stdout().lock();
    let tty = out.is_terminal();
    let mut drawn = 0;
    while ros1_protocols::this_node::is_ok() {
        let text = gem_core::overlay::render(&read());
        if tty && drawn > 0 {
            // Back to the first line of the previous frame, and clear to the end.
            write!(out, "\x1b[{drawn}A\x1b[J")?;
        }
        writeln!(out, "{text}")?;
        if !tty {
            writeln!(out)?;
        }
        out.flush()?;
        drawn = text.lines().count();
        std::thread::sleep(period);
    }
    Ok(())
}

fn once(read: impl Fn() -> gem_core::overlay::Snapshot, timeout: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline && ros1_protocols::this_node::is_ok() {
        let s = read();
        if s.system.is_some() && s.planner.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let s = read();
    println!("{}", gem_core::overlay::render(&s));
    anyhow::ensure!(
        s.system.is_some(),
        "no system_state within {:.0} s: is the state manager running?",
        timeout.as_secs_f64()
    );
    Ok(())
}
