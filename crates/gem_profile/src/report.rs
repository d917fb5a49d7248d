//! The profile's report, built from what `gemctl profile` measured: `profile.md`
//! (machine and settings, the summary table, per-type chain tables, CPU stalls, message
//! periods, resources, failed runs), what `profile.json` holds (every raw sample), and the
//! lines printed at the end. The figures it links are drawn by `gem_plot`.

use crate::hold_offs::{describe, Used as HoldOffUsed};
use crate::stalls::{per_cpu, ProbeLog, Split, Stall, THRESHOLD_MS};
use crate::{
    early_samples, link_events, link_samples, run_label, Direction, Failure, Link, LinkStats,
    PeriodStats, RunRecord,
};
use gem_core::control::stop::StopFigures;
use gem_core::faults::FaultKind;
use gem_core::stats::Summary;
use serde::Serialize;
use std::fmt::Write as _;
use std::time::Duration;

/// The latency bounds the profile is judged by, p99 over every failure type.
const BRAKING_COMMAND_P99_MS: f64 = 5.0;
const SYSTEM_STATE_P99_MS: f64 = 2.0;

/// Everything the report is made of.
pub struct Report<'a> {
    /// The machine it ran on.
    pub machine: Machine,
    /// Rounds: injections per failure type (`--runs`).
    pub rounds: usize,
    /// Simulated seconds per wall second while a hold-off window ran.
    pub speedup: f64,
    /// Wall seconds of the nominal window (0: not measured).
    pub resources_s: f64,
    /// The failure types injected, in order.
    pub kinds: &'a [FaultKind],
    /// Every complete run.
    pub runs: &'a [RunRecord],
    /// Every run that did not complete.
    pub failures: &'a [Failure],
    /// Message periods per topic in the nominal window.
    pub periods: Vec<(String, PeriodStats)>,
    /// Each node's resources in the nominal window.
    pub usage: Vec<NodeUsage>,
    /// Wall time of the whole profile.
    pub total_wall: Duration,
    /// Wall time of the rounds.
    pub injection_wall: Duration,
    /// Whether the profiler attached to a running suite (else it launched one).
    pub attached: bool,
    /// How the profiler itself is scheduled.
    pub scheduling: String,
    /// Each node's scheduling policy (name, `SCHED_FIFO 20` / `SCHED_OTHER`).
    pub suite_scheduling: Vec<(String, String)>,
    /// CPU steal (percent of all CPU time) in the nominal window and during the rounds.
    pub steal_percent: (Option<f64>, Option<f64>),
    /// How long the messages of the runs waited in the profiler's sockets (ms).
    pub socket_wait_ms: Vec<f64>,
    /// What the stall probes saw during the rounds.
    pub stalls: Stalls,
    /// The hold-off windows the held faults were timed by, and where each came from.
    pub hold_offs: &'a [HoldOffUsed],
    /// Each fault run's stop.
    pub stops: &'a [(FaultKind, StopFigures)],
}

/// The stall probes' settings and findings (or why there are none).
pub struct Stalls {
    /// The probes' period, µs.
    pub period_us: u64,
    /// What the probes saw with the fault chains split by it, or why they did not run.
    probed: Result<Probed, String>,
}

/// What the probes saw and the fault chains' ERROR and zero-command latencies split by
/// stall overlap (computed once: every chain against every stall).
struct Probed {
    seen: ProbeLog,
    system_error: Split,
    braking_command: Split,
}

impl Stalls {
    /// The probes' findings (`seen`) set against the fault chains of `runs`.
    pub fn new(period_us: u64, seen: Result<ProbeLog, String>, runs: &[RunRecord]) -> Stalls {
        let probed = seen.map(|seen| {
            let split = |link, bound| {
                Split::new(
                    &link_events(runs, Direction::Fault, link),
                    &seen.stalls,
                    bound,
                )
            };
            Probed {
                system_error: split(Link::SystemError, SYSTEM_STATE_P99_MS),
                braking_command: split(Link::BrakingCommand, BRAKING_COMMAND_P99_MS),
                seen,
            }
        });
        Stalls { period_us, probed }
    }
}

/// The stall probes in `profile.json`.
#[derive(Serialize)]
struct StallsJson<'a> {
    period_us: u64,
    threshold_ms: f64,
    /// Why the probes did not run.
    off: Option<&'a str>,
    cpus: usize,
    wakeups: u64,
    /// Fault → /system_state ERROR and fault → braking command, split by stall overlap.
    system_error: Option<&'a Split>,
    braking_command: Option<&'a Split>,
    stalls: &'a [Stall],
}

/// The machine a profile ran on.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// Host name.
    pub host: String,
    /// CPU model.
    pub cpu: String,
    /// CPUs available.
    pub cores: usize,
    /// Memory, GiB.
    pub memory_gib: f64,
    /// Kernel release.
    pub kernel: String,
    /// When the report was written, `YYYY-MM-DDTHH:MM:SSZ`.
    pub date_utc: String,
}

/// One node's resources over the nominal window.
#[derive(Clone, Debug, Serialize)]
pub struct NodeUsage {
    /// ROS node name.
    pub node: String,
    /// Process id.
    pub pid: u32,
    /// CPU time over wall time, percent of one core.
    pub cpu_percent: f64,
    /// Times per second one of its threads was woken (voluntary context switches of
    /// its threads over the window).
    pub wakeups_per_s: f64,
    /// Mean resident set size, MiB.
    pub rss_mean_mib: f64,
    /// Largest resident set size seen, MiB.
    pub rss_max_mib: f64,
    /// Threads at the end of the window.
    pub threads: u64,
}

fn pcts(s: &Summary) -> String {
    if s.is_empty() {
        return "— | — | — | —".into();
    }
    format!(
        "{:.2} | {:.2} | {:.2} | {:.2}",
        s.percentile(50.0),
        s.percentile(95.0),
        s.percentile(99.0),
        s.percentile(100.0)
    )
}

/// A latency in ms to two decimals, or "—" when there is none.
fn ms_or_dash(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| format!("{v:.2}"))
}

fn percent(p: Option<f64>) -> String {
    p.map_or("—".into(), |p| format!("{p:.1} %"))
}

fn four(v: &[f64; 4]) -> String {
    format!("{:.2} | {:.2} | {:.2} | {:.2}", v[0], v[1], v[2], v[3])
}

#[derive(Serialize)]
struct Json<'a> {
    machine: &'a Machine,
    settings: Settings,
    stats: Vec<LinkStats>,
    runs: &'a [RunRecord],
    failures: &'a [Failure],
    periods: &'a [(String, PeriodStats)],
    resources: &'a [NodeUsage],
    stall_probes: StallsJson<'a>,
}

#[derive(Serialize)]
struct Settings {
    runs: usize,
    faults: Vec<&'static str>,
    speedup: f64,
    resources_s: f64,
    attached: bool,
    total_wall_s: f64,
    injection_wall_s: f64,
    steal_percent_nominal: Option<f64>,
    steal_percent_rounds: Option<f64>,
    profiler_scheduling: String,
    suite_scheduling: Vec<(String, String)>,
    /// p50, p99, max of the profiler's socket waits (ms), if any message was received.
    profiler_socket_wait_ms: Option<[f64; 3]>,
    /// The state manager's hold-off windows the held faults were timed by.
    hold_offs: Vec<HoldOffUsed>,
}

impl Report<'_> {
    fn settings(&self) -> Settings {
        Settings {
            runs: self.rounds,
            faults: self.kinds.iter().map(|k| k.name()).collect(),
            speedup: self.speedup,
            resources_s: self.resources_s,
            attached: self.attached,
            total_wall_s: self.total_wall.as_secs_f64(),
            injection_wall_s: self.injection_wall.as_secs_f64(),
            steal_percent_nominal: self.steal_percent.0,
            steal_percent_rounds: self.steal_percent.1,
            profiler_scheduling: self.scheduling.clone(),
            suite_scheduling: self.suite_scheduling.clone(),
            profiler_socket_wait_ms: (!self.socket_wait_ms.is_empty()).then(|| {
                let s = Summary::new(self.socket_wait_ms.clone());
                [50.0, 99.0, 100.0].map(|p| s.percentile(p))
            }),
            hold_offs: self.hold_offs.to_vec(),
        }
    }

    /// The summary table (also printed at the end of the run).
    pub fn summary(&self) -> String {
        let mut md = String::from(
            "| failure type | runs | fault → /system_state ERROR p50 | p95 | p99 | max | fault → braking command p50 | p95 | p99 | max | cleared → speed > 1.0 p50 | p99 | hold-off observed (sim) |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        let mut rows: Vec<(String, Vec<FaultKind>)> = self
            .kinds
            .iter()
            .map(|k| (k.name().to_string(), vec![*k]))
            .collect();
        if self.kinds.len() > 1 {
            rows.push(("**all**".into(), self.kinds.to_vec()));
        }
        for (name, kinds) in rows {
            let err = Summary::new(link_samples(
                self.runs,
                &kinds,
                Direction::Fault,
                Link::SystemError,
            ));
            let zero = Summary::new(link_samples(
                self.runs,
                &kinds,
                Direction::Fault,
                Link::BrakingCommand,
            ));
            let moving = Summary::new(link_samples(
                self.runs,
                &kinds,
                Direction::Recovery,
                Link::MovingCommand,
            ));
            let holds: Vec<f64> = self
                .runs
                .iter()
                .filter(|r| kinds.contains(&r.kind))
                .filter_map(|r| r.observed_hold_off_s)
                .collect();
            let hold = if holds.is_empty() {
                "—".to_string()
            } else {
                let h = Summary::new(holds);
                format!("{:.2}–{:.2} s", h.percentile(0.0), h.percentile(100.0))
            };
            let _ = writeln!(
                md,
                "| {name} | {} | {} | {} | {:.1} | {:.1} | {hold} |",
                err.len(),
                pcts(&err),
                pcts(&zero),
                moving.percentile(50.0),
                moving.percentile(99.0),
            );
        }
        md += "\nLatencies in ms of wall time on loopback, from the fault's onset (first faulty input \
               message's arrival; for GPS and signal faults the first /clock past the hold-off \
               deadline), every instant the kernel's arrival timestamp of a message on the \
               profiler's own subscriptions.\n\n";
        md += &self.stop_table();
        md
    }

    /// The stops, per failure type: from the onset (sim), the car's own figures from its
    /// odometry (`gem/base_footprint/odom`, stamped with the state's sim time).
    fn stop_table(&self) -> String {
        let mut md = String::from(
            "| failure type | stops | fault → at rest (sim s) p50 | max | stopping distance (m) p50 | max | peak deceleration (m/s²) max | peak jerk (m/s³) max | largest distance from the route (m) max |\n\
             |---|---|---|---|---|---|---|---|---|\n",
        );
        for kind in self.kinds {
            let figures: Vec<&StopFigures> = self
                .stops
                .iter()
                .filter(|(k, _)| k == kind)
                .map(|(_, f)| f)
                .collect();
            if figures.is_empty() {
                continue;
            }
            let of =
                |f: fn(&StopFigures) -> f64| Summary::new(figures.iter().map(|x| f(x)).collect());
            let (rest, dist) = (of(|f| f.time_to_rest_s), of(|f| f.distance_m));
            let _ = writeln!(
                md,
                "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} | {:.3} |",
                kind.name(),
                figures.len(),
                rest.percentile(50.0),
                rest.percentile(100.0),
                dist.percentile(50.0),
                dist.percentile(100.0),
                of(|f| f.peak_decel_mps2).percentile(100.0),
                of(|f| f.peak_jerk_mps3).percentile(100.0),
                of(|f| f.max_deviation_m).percentile(100.0),
            );
        }
        md += "\nFrom the fault's onset until the car's speed is below 0.01 m/s; deceleration and jerk over 0.1 s windows.\n";
        md
    }

    fn stalls_json(&self) -> StallsJson<'_> {
        let (off, probed) = match &self.stalls.probed {
            Ok(p) => (None, Some(p)),
            Err(e) => (Some(e.as_str()), None),
        };
        StallsJson {
            period_us: self.stalls.period_us,
            threshold_ms: THRESHOLD_MS,
            off,
            cpus: probed.map_or(0, |p| p.seen.cpus),
            wakeups: probed.map_or(0, |p| p.seen.wakeups),
            system_error: probed.map(|p| &p.system_error),
            braking_command: probed.map(|p| &p.braking_command),
            stalls: probed.map_or(&[][..], |p| &p.seen.stalls),
        }
    }

    /// The stall section of `profile.md`.
    fn stalls_markdown(&self) -> String {
        let mut md = String::from("## CPU stalls during the rounds\n\n");
        let p = match &self.stalls.probed {
            Ok(p) => p,
            Err(e) => return md + &format!("No stall probes: {e}.\n\n"),
        };
        let rounds_ms = self.injection_wall.as_secs_f64() * 1e3;
        let _ = writeln!(
            md,
            "A probe thread per CPU, pinned to it at SCHED_FIFO 99, asked to wake every {} µs \
             ({} wake-ups in all). A wake-up more than {} ms late is a stall: for that long the \
             CPU ran none of this machine's threads (the hypervisor ran another guest; or the \
             kernel had interrupts off). A stall spans from the probe's previous wake-up to \
             the late one.\n\n\
             | CPU | stalls | stalled ms | % of the rounds | longest ms |\n|---|---|---|---|---|",
            self.stalls.period_us, p.seen.wakeups, THRESHOLD_MS
        );
        for (cpu, (n, total, longest)) in
            per_cpu(&p.seen.stalls, p.seen.cpus).into_iter().enumerate()
        {
            let _ = writeln!(
                md,
                "| {cpu} | {n} | {total:.0} | {:.1} | {longest:.1} |",
                100.0 * total / rounds_ms.max(1e-9)
            );
        }
        md += "\nWhich fault chains a stall of either CPU overlapped (from the fault's onset to the link):\n\n\
               | link | events | overlapped by a stall | above the bound | of those, overlapped | p99 all | p99 of the events no stall overlapped |\n\
               |---|---|---|---|---|---|---|\n";
        for (name, bound, s) in [
            (
                "fault → /system_state ERROR",
                SYSTEM_STATE_P99_MS,
                &p.system_error,
            ),
            (
                "fault → braking command",
                BRAKING_COMMAND_P99_MS,
                &p.braking_command,
            ),
        ] {
            let _ = writeln!(
                md,
                "| {name} | {} | {} | {} (> {bound} ms) | {} | {} | {} |",
                s.events,
                s.overlapped,
                s.above,
                s.above_overlapped,
                ms_or_dash(s.p99_ms),
                ms_or_dash(s.p99_clear_ms)
            );
        }
        md += "\nThe verdicts above count every event; this split only says where the slow ones \
               came from. The probes add one wake-up per CPU per period to the machine's load.\n";
        md + "\n"
    }

    fn verdicts(&self) -> String {
        let err = Summary::new(link_samples(
            self.runs,
            self.kinds,
            Direction::Fault,
            Link::SystemError,
        ));
        let zero = Summary::new(link_samples(
            self.runs,
            self.kinds,
            Direction::Fault,
            Link::BrakingCommand,
        ));
        let verdict = |s: &Summary, bound: f64| {
            if s.is_empty() {
                "no samples".to_string()
            } else if s.percentile(99.0) < bound {
                format!("met ({:.2} ms)", s.percentile(99.0))
            } else {
                format!("**NOT met** ({:.2} ms)", s.percentile(99.0))
            }
        };
        format!(
            "- p99 fault → /system_state ERROR below {SYSTEM_STATE_P99_MS} ms: {}\n\
             - p99 fault → braking command below {BRAKING_COMMAND_P99_MS} ms (the controller's safety gate): {}\n",
            verdict(&err, SYSTEM_STATE_P99_MS),
            verdict(&zero, BRAKING_COMMAND_P99_MS)
        )
    }

    /// `profile.md`; `stats` are [`crate::link_stats`] of the runs.
    pub fn markdown(&self, stats: &[LinkStats]) -> String {
        let (m, s) = (&self.machine, self.settings());
        let mut md = format!(
            "# GEM e2 fault-latency profile\n\n\
             | machine | |\n|---|---|\n\
             | host | {} |\n| CPU | {} ({} cores) |\n| memory | {:.1} GiB |\n| kernel | {} |\n| date | {} |\n\n\
             | settings | |\n|---|---|\n\
             | runs per failure type | {} (each a fault chain and a recovery chain) |\n\
             | failure types | {} |\n\
             | suite | {} |\n\
             | clock | links measured at 1×; hold-off windows fast-forwarded at {}× (gem_sim speed-up) |\n\
             | hold-off windows | {} |\n\
             | nominal window | {:.0} s at 1× |\n\
             | wall time | {:.0} s in all, {:.0} s of injections |\n\
             | CPU steal (hypervisor) | {} in the nominal window, {} during the rounds |\n\
             | scheduling | {}; the profiler: {} |\n\
             | receive times | the kernel's arrival timestamps on the profiler's sockets (SO_TIMESTAMPNS); its reading threads had the messages {} later |\n\n",
            m.host,
            m.cpu,
            m.cores,
            m.memory_gib,
            m.kernel,
            m.date_utc,
            s.runs,
            s.faults.join(", "),
            if self.attached {
                "attached to a running suite"
            } else {
                "launched by the profiler (integration_run.launch, headless)"
            },
            s.speedup,
            describe(&s.hold_offs),
            s.resources_s,
            s.total_wall_s,
            s.injection_wall_s,
            percent(s.steal_percent_nominal),
            percent(s.steal_percent_rounds),
            scheduling_line(&s.suite_scheduling),
            s.profiler_scheduling,
            s.profiler_socket_wait_ms.map_or("—".into(), |[p50, p99, max]| format!(
                "p50 {p50:.2} / p99 {p99:.2} / max {max:.2} ms"
            )),
        );
        md += "## Summary\n\n";
        md += &self.summary();
        md += "\n";
        md += &self.verdicts();
        md += "\nFigures: [latency box plots](latency_boxplot.svg), [chain breakdown](chain_breakdown.svg); raw samples in `profile.json`.\n\n";
        md += "## Chains per failure type\n\n\
               Each link: wall ms since the chain's first link and since its cause (the link it follows \
               in the chain; the safety gate's braking command follows ERROR directly, in parallel with \
               the planner's pause and cancel), and sim ms since the chain's start (header stamps, else \
               the latest /clock; quantised by the simulator's step).\n\n";
        for kind in self.kinds {
            let _ = writeln!(md, "### {}\n", kind.name());
            md += "| chain | link | after | n | since start p50 | p95 | p99 | max | since cause p50 | p95 | p99 | max | sim p50 | sim max |\n\
                   |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
            for st in stats.iter().filter(|s| s.kind == *kind) {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} | {:.0} | {:.0} |",
                    st.direction.name(),
                    st.link.label(),
                    st.link.cause().map_or("—", |c| c.label()),
                    st.n,
                    four(&st.wall_ms),
                    four(&st.step_wall_ms),
                    st.sim_ms[0],
                    st.sim_ms[1]
                );
            }
            md += "\n";
        }
        md += &self.stalls_markdown();
        md += "## Message periods (nominal window, 1×)\n\n";
        if self.periods.is_empty() {
            md += "Not measured (`--resources-s 0`).\n\n";
        } else {
            md += "| topic | messages | wall period p50 (ms) | p95 | p99 | max | sim period p50 (ms) | p95 | p99 | max |\n\
                   |---|---|---|---|---|---|---|---|---|---|\n";
            for (topic, p) in &self.periods {
                let _ = writeln!(
                    md,
                    "| {topic} | {} | {} | {} |",
                    p.messages,
                    four(&p.wall_ms),
                    four(&p.sim_ms)
                );
            }
            md += "\nEvent-driven topics (/system_state, /task_planner_status, the action's status) add \
                   messages between heartbeats, so their minimum periods are short by design.\n\n";
        }
        md += "## Resources (nominal window, 1×)\n\n";
        if self.usage.is_empty() {
            md += "Not measured (`--resources-s 0`).\n\n";
        } else {
            md +=
                "| node | pid | CPU (% of one core) | wake-ups/s | RSS mean (MiB) | RSS max (MiB) | threads |\n\
                   |---|---|---|---|---|---|---|\n";
            for u in &self.usage {
                let _ = writeln!(
                    md,
                    "| {} | {} | {:.2} | {:.1} | {:.1} | {:.1} | {} |",
                    u.node,
                    u.pid,
                    u.cpu_percent,
                    u.wakeups_per_s,
                    u.rss_mean_mib,
                    u.rss_max_mib,
                    u.threads
                );
            }
            md += "\nFrom /proc (user + system CPU time over the window; wake-ups: the voluntary \
                   context switches of the node's threads, each a sleep that ended in a wake-up; \
                   resident set sampled each second). \
                   The profiler's own subscriptions are part of the load.\n\n";
        }
        let early = early_samples(self.runs);
        let samples: usize = self.runs.iter().map(|r| r.links.len() - 1).sum();
        let _ = writeln!(
            md,
            "## Samples received before their chain's start\n\n\
             {} of {samples} link samples. Every link arrives on its own TCP connection: a \
             publisher writes a message to its subscribers one after the other, so when it is \
             preempted between two writes (by a subscriber it just woke, or CPU steal) an \
             effect can reach the profiler's socket before its cause. They stay in the \
             statistics above as measured.\n",
            early.len()
        );
        for (r, link, ms) in early.iter().take(20) {
            let run = run_label(r.kind, r.direction, r.index);
            let _ = writeln!(md, "- {run}: {} at {ms:.3} ms", link.label());
        }
        md += "\n## Failed runs\n\n";
        if self.failures.is_empty() {
            md += "None.\n";
        } else {
            for f in self.failures {
                let run = run_label(f.kind, f.direction, f.index);
                let _ = writeln!(md, "- {run}: {}", f.reason);
            }
        }
        md
    }

    /// What `profile.json` holds; `stats` are [`crate::link_stats`] of the runs.
    pub fn json<'a>(&'a self, stats: &[LinkStats]) -> impl Serialize + 'a {
        Json {
            machine: &self.machine,
            settings: self.settings(),
            stats: stats.to_vec(),
            runs: self.runs,
            failures: self.failures,
            periods: &self.periods,
            resources: &self.usage,
            stall_probes: self.stalls_json(),
        }
    }

    /// What the profiler prints once the report is written: the summary, the verdicts,
    /// the CPU steal and what the stall probes saw.
    pub fn console(&self) -> String {
        let mut text = format!("{}\n{}", self.summary(), self.verdicts());
        let _ = writeln!(
            text,
            "[profile] CPU steal during the rounds: {} (time the hypervisor ran other guests; it shows as outliers)",
            percent(self.steal_percent.1)
        );
        let _ = match &self.stalls.probed {
            Ok(Probed {
                seen,
                system_error: err,
                ..
            }) => writeln!(
                text,
                "[profile] stall probes: {} stalls ({:.0} ms); {} of the {} fault → ERROR events above {SYSTEM_STATE_P99_MS} ms overlapped one; p99 of the events none overlapped: {} ms",
                seen.stalls.len(),
                seen.stalls.iter().map(Stall::ms).sum::<f64>(),
                err.above_overlapped,
                err.above,
                ms_or_dash(err.p99_clear_ms)
            ),
            Err(e) => writeln!(text, "[profile] stall probes: {e}"),
        };
        text
    }
}

/// `/controller and /state_manager SCHED_FIFO 20, the others SCHED_OTHER`: the nodes whose
/// policy differs from the most common one, grouped by policy.
fn scheduling_line(nodes: &[(String, String)]) -> String {
    let mut by_policy: Vec<(&str, Vec<&str>)> = Vec::new();
    for (node, policy) in nodes {
        match by_policy.iter_mut().find(|(p, _)| p == policy) {
            Some((_, names)) => names.push(node),
            None => by_policy.push((policy, vec![node])),
        }
    }
    by_policy.sort_by_key(|(_, names)| std::cmp::Reverse(names.len()));
    let Some(((common, _), rest)) = by_policy.split_first() else {
        return "nodes not listed".into();
    };
    let mut parts: Vec<String> = rest
        .iter()
        .map(|(policy, names)| format!("{} {policy}", names.join(" and ")))
        .collect();
    parts.push(if rest.is_empty() {
        format!("every node {common}")
    } else {
        format!("the others {common}")
    });
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::evenly_spaced;

    #[test]
    fn the_report_has_every_section_and_judges_the_bounds() {
        let kinds = [FaultKind::Estop];
        let runs: Vec<RunRecord> = (0..3)
            .flat_map(|i| {
                [Direction::Fault, Direction::Recovery].map(|d| evenly_spaced(kinds[0], d, i, 0.5))
            })
            .collect();
        let failures = [Failure {
            kind: FaultKind::Estop,
            direction: Direction::Recovery,
            index: 3,
            reason: "timed out".into(),
        }];
        let report = Report {
            machine: Machine {
                host: "host".into(),
                cpu: "cpu".into(),
                cores: 2,
                memory_gib: 4.0,
                kernel: "6.1".into(),
                date_utc: "2026-01-01T00:00:00Z".into(),
            },
            rounds: 4,
            speedup: 10.0,
            resources_s: 0.0,
            kinds: &kinds,
            runs: &runs,
            failures: &failures,
            periods: Vec::new(),
            usage: Vec::new(),
            total_wall: Duration::from_secs(60),
            injection_wall: Duration::from_secs(50),
            attached: true,
            scheduling: "normal priority".into(),
            suite_scheduling: Vec::new(),
            steal_percent: (None, Some(0.5)),
            socket_wait_ms: vec![0.01, 0.02],
            stalls: Stalls::new(1000, Err("off (--stall-probe-us 0)".into()), &runs),
            hold_offs: &[],
            stops: &[],
        };
        let stats = crate::link_stats(&runs);
        let json = serde_json::to_value(report.json(&stats)).unwrap();
        for key in [
            "machine",
            "settings",
            "stats",
            "runs",
            "failures",
            "periods",
            "resources",
            "stall_probes",
        ] {
            assert!(json.get(key).is_some(), "{key} missing from the JSON");
        }
        assert_eq!(json["settings"]["runs"], 4);
        assert_eq!(json["stall_probes"]["off"], "off (--stall-probe-us 0)");
        let md = report.markdown(&stats);
        for section in [
            "# GEM e2 fault-latency profile",
            "## Summary",
            "### estop",
            "## CPU stalls during the rounds",
            "No stall probes: off (--stall-probe-us 0).",
            "## Message periods",
            "## Resources",
            "## Samples received before their chain's start",
            "- estop recovery run 3: timed out",
        ] {
            assert!(md.contains(section), "{section:?} missing:\n{md}");
        }
        // ERROR 0.5 ms and the braking command 2.5 ms after the onset: both bounds met.
        assert!(md.contains("below 2 ms: met (0.50 ms)"), "{md}");
        assert!(md.contains("below 5 ms (the controller's safety gate): met (2.50 ms)"));
        let console = report.console();
        assert!(console.starts_with(&report.summary()));
        assert!(console.contains("[profile] CPU steal during the rounds: 0.5 %"));
        assert!(console.ends_with("[profile] stall probes: off (--stall-probe-us 0)\n"));
    }

    #[test]
    fn scheduling_line_names_the_exceptions_and_then_the_rest() {
        let n = |a: &str, b: &str| (a.to_string(), b.to_string());
        let nodes = [
            n("/controller", "SCHED_FIFO 20"),
            n("/gem_sim", "SCHED_OTHER"),
            n("/mock_signals", "SCHED_OTHER"),
            n("/state_manager", "SCHED_FIFO 20"),
            n("/task_planner", "SCHED_OTHER"),
        ];
        assert_eq!(
            scheduling_line(&nodes),
            "/controller and /state_manager SCHED_FIFO 20, the others SCHED_OTHER"
        );
        assert_eq!(scheduling_line(&nodes[1..3]), "every node SCHED_OTHER");
        assert_eq!(scheduling_line(&[]), "nodes not listed");
    }
}
