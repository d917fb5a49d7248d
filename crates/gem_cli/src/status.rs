//! `gemctl status`: the overlay's text in a terminal for headless users, redrawn in place
//! (or printed once for scripts), and below it where each of the state manager's inputs
//! comes from. It subscribes exactly what `status_overlay` subscribes
//! (`gem_nodes::overlay::subscribe`) and renders with the same `gem_core::overlay::render`,
//! so the two views cannot disagree. The refresh runs on wall time: a terminal view must
//! keep drawing when a simulation is paused.
//!
//! The sources come from the master: the nodes publishing each input topic (resolved as
//! the state manager in this namespace resolves it) and, for a `signal_sources` node, the
//! line it stores under `~sources/<input>`.

use gem_core::overlay::{render, render_sources, Feeder, Snapshot, INPUT_ROWS};
use gem_core::signal_sources::Fed;
use gem_nodes::overlay::{subscribe, Shared};
use ros1_protocols::master_api::Master;
use ros1_protocols::{this_node, Lock, RosError};
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How long `--once` waits, after the state and the planner status are heard, for the
/// rows still silent: the five inputs, and the speed when something publishes it. The
/// inputs come at 20 Hz, so a live one arrives well within this; one that has not is
/// named as silent.
const SETTLE: Duration = Duration::from_secs(2);

/// How often the live view asks the master again where the inputs come from.
const SOURCES_EVERY: Duration = Duration::from_secs(2);

/// The poll period of `--once`'s wait.
const POLL: Duration = Duration::from_millis(20);

#[derive(clap::Args)]
pub struct Args {
    /// Print one snapshot once the state manager and the planner have been heard from
    /// (or `--timeout` passed) and then every input (up to 2 s more), then exit;
    /// non-zero when no /system_state arrived.
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
    let mut graph: Option<(Instant, Result<Graph, RosError>)> = None;
    while this_node::is_ok() {
        if graph
            .as_ref()
            .is_none_or(|(at, _)| at.elapsed() >= SOURCES_EVERY)
        {
            graph = Some((Instant::now(), Graph::ask()));
        }
        let sources = graph.as_ref().map_or_else(String::new, |(_, g)| sources(g));
        let text = format!("{}\n\n{sources}", render(&read()));
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

fn once(read: impl Fn() -> Snapshot, timeout: Duration) -> anyhow::Result<()> {
    let start = Instant::now();
    let deadline = start + timeout;
    // Asked once the state and the planner are heard (or at the end): whether to wait
    // for the speed, and the sources to print.
    let mut graph: Option<Result<Graph, RosError>> = None;
    let mut settle_by = None;
    while this_node::is_ok() {
        let s = read();
        if s.system.is_some() && s.planner.is_some() {
            let speed = graph
                .get_or_insert_with(Graph::ask)
                .as_ref()
                .is_ok_and(|g| g.speed_published);
            let by = *settle_by.get_or_insert_with(|| Instant::now() + SETTLE);
            if s.unheard(speed).is_empty() || Instant::now() >= by {
                break;
            }
        } else if Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(POLL);
    }
    let s = read();
    let listened = start.elapsed();
    let graph = graph.unwrap_or_else(Graph::ask);
    let silent = s.unheard(graph.as_ref().is_ok_and(|g| g.speed_published));
    println!("{}", render(&s));
    if !silent.is_empty() {
        println!(
            "silent for {:.1} s: {}",
            listened.as_secs_f64(),
            silent.join(", ")
        );
    }
    println!("\n{}", sources(&graph));
    anyhow::ensure!(
        s.system.is_some(),
        "no system_state within {:.0} s: is the state manager running?",
        timeout.as_secs_f64()
    );
    Ok(())
}

/// What the master says about the overlay's inputs.
struct Graph {
    /// Each input row's label with its publishers.
    sources: Vec<(&'static str, Vec<Feeder>)>,
    /// Whether anything publishes the commanded speed.
    speed_published: bool,
}

impl Graph {
    /// Asks the master: one `getSystemState`, and a `getParam` per publisher of an input a
    /// `signal_sources` node can feed (each call bounded by the master client's limit).
    fn ask() -> Result<Graph, RosError> {
        let master = this_node::master()?;
        let state = master.system_state()?;
        let publishers = |topic: &str| -> Result<Vec<String>, RosError> {
            let name = this_node::resolve(topic)?;
            Ok(state
                .publishers
                .iter()
                .find(|l| l.name == name)
                .map(|l| l.connections.clone())
                .unwrap_or_default())
        };
        let mut sources = Vec::new();
        for (input, label) in INPUT_ROWS {
            let fed = Fed::ALL.into_iter().find(|f| f.input() == input);
            let mut feeders = Vec::new();
            for node in publishers(input.topic())? {
                let source = match fed {
                    Some(fed) => described(&master, &node, fed)?,
                    None => None,
                };
                feeders.push(Feeder { node, source });
            }
            sources.push((label, feeders));
        }
        Ok(Graph {
            sources,
            speed_published: !publishers(gem_core::names::ACKERMANN_CMD)?.is_empty(),
        })
    }
}

/// The line `node` stores under `~sources/<input>` for `fed`, as `signal_sources` does;
/// `None` when it stores none.
fn described(master: &Master, node: &str, fed: Fed) -> Result<Option<String>, RosError> {
    let key = format!("{}/sources/{}", node.trim_end_matches('/'), fed.key());
    Ok(match master.get_param(&key)? {
        Some(xml_rpc::Value::String(s)) => Some(s),
        _ => None,
    })
}

/// The sources block, or why there is none.
fn sources(graph: &Result<Graph, RosError>) -> String {
    match graph {
        Ok(g) => render_sources(&g.sources),
        Err(e) => format!("sources\n(cannot ask the master: {e})"),
    }
}
