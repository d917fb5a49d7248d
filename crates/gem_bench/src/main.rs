//! `gem_bench`: benchmarks that print figures.
//!
//! ```text
//! cargo run --release -p gem_bench -- state-manager [--updates N] [--samples N]
//! cargo run --release -p gem_bench -- track [--out DIR] [--dynamic-only | --sources-only]
//! cargo run --release -p gem_bench -- crosscheck [--track FILE]
//! cargo run --release -p gem_bench -- pacmod [--steps-only | --laps-only] [--speed-sigma-mps S]
//!     [--slow-steering-only | --motor-mismatch-only] [--report-latency-s S] [--kp-per-s K] [--ki-per-s2 K]
//!     [--steering-rate-rad-s R]
//!     [--track FILE]
//! cargo run --release -p gem_bench -- stop
//! cargo run --release -p gem_bench -- operator-link [--samples N]
//! cargo run --release -p gem_bench -- waypoints [--rows N]
//! cargo run --release -p gem_bench -- health [--messages N] [--seconds S]
//! cargo run --release -p gem_bench -- introspect [--messages N]
//! cargo run --release -p gem_bench -- replay [--per-topic N]
//! cargo run --release -p gem_bench -- subscribe [--messages N] [--rounds N]
//! cargo run --release -p gem_bench -- service [--calls N] [--rounds N] [--rate HZ] [--load]
//! cargo run --release -p gem_bench -- resources [--idle-s S] [--lap-s S]
//! ```

mod baseline;
mod crosscheck;
mod health;
mod introspect;
mod mismatch;
mod operator_link;
mod pacmod;
mod replay;
mod resources;
mod service;
mod soak;
mod state_manager;
mod steering;
mod stop;
mod subscribe;
mod track;
mod waypoints;

use clap::{Parser, Subcommand};
use gem_core::pacmod::bridge::BridgeConfig;
use gem_core::pacmod::longitudinal::LongitudinalConfig;

#[derive(Parser)]
#[command(about = "Benchmarks of the GEM e2 suite (figures, not pass/fail)")]
struct Cli {
    #[command(subcommand)]
    bench: Bench,
}

#[derive(Subcommand)]
enum Bench {
    /// Core ingest rate, and input → /system_state latency of the node on loopback.
    StateManager {
        /// Core updates per measured run (5 runs).
        #[arg(long, default_value_t = 2_000_000)]
        updates: usize,
        /// Latency samples (each an e-stop press or release).
        #[arg(long, default_value_t = 2000)]
        samples: usize,
    },
    /// Every controller closed-loop on the vehicle model: table + one SVG per run.
    Track {
        /// Where the plots go.
        #[arg(long, default_value = "target/bench/track")]
        out: std::path::PathBuf,
        /// The GEM track waypoint file.
        #[arg(long, default_value = track::TRACK_FILE)]
        track: std::path::PathBuf,
        /// Only the single-track (tyre slip) tables.
        #[arg(long)]
        dynamic_only: bool,
        /// Only the pose-source table.
        #[arg(long)]
        sources_only: bool,
    },
    /// The tracking controllers on an independent single-track model (cross-check of `track`).
    Crosscheck {
        /// The GEM track waypoint file.
        #[arg(long, default_value = track::TRACK_FILE)]
        track: std::path::PathBuf,
    },
    /// The PACMod path without ROS: the pedal loop on steps and ramps, laps of the GEM
    /// track through the bridge and the simulated PACMod against the Ackermann path, every
    /// law on slow steering, and on a steering motor the suite is not told of.
    Pacmod {
        /// The GEM track waypoint file.
        #[arg(long, default_value = track::TRACK_FILE)]
        track: std::path::PathBuf,
        /// Only the pedal loop's steps and ramps.
        #[arg(long, conflicts_with = "laps_only")]
        steps_only: bool,
        /// Only the laps.
        #[arg(long, conflicts_with = "slow_steering_only")]
        laps_only: bool,
        /// Only the slow-steering table: every law (mpc included) at steering-wheel rates
        /// of 2.0 and 3.5 rad/s with 0.1 s lag and 0.1 s dead time, joining from 2 m, on
        /// the path, after an INS jump and resuming 0.5 m off.
        #[arg(long, conflicts_with = "steps_only")]
        slow_steering_only: bool,
        /// Only the motor-mismatch table: every law on four true steering motors, the
        /// controllers and the bridge told the defaults, the truth or what the
        /// identification drive measures, joining from 2 m.
        #[arg(long, conflicts_with_all = ["steps_only", "laps_only", "slow_steering_only"])]
        motor_mismatch_only: bool,
        /// Speed report noise σ of the second pedal-loop table, m/s.
        #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
        speed_sigma_mps: f64,
        /// Report latency of the second pedal-loop table, s.
        #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
        report_latency_s: f64,
        /// The speed loop's proportional gain, (m/s²) per (m/s) (default: the bridge's).
        #[arg(long, default_value_t = LongitudinalConfig::DEFAULT.kp_per_s, allow_negative_numbers = true)]
        kp_per_s: f64,
        /// The speed loop's integral gain, (m/s²) per (m/s·s) (default: the bridge's).
        #[arg(long, default_value_t = LongitudinalConfig::DEFAULT.ki_per_s2, allow_negative_numbers = true)]
        ki_per_s2: f64,
        /// The steering-wheel rate limit the bridge sends, rad/s (default: the bridge's).
        #[arg(long, default_value_t = BridgeConfig::DEFAULT.steering_rate_rad_s, allow_negative_numbers = true)]
        steering_rate_rad_s: f64,
    },
    /// health_monitor: in-process throughput on Odometry with 3 rules, node CPU at 1 kHz.
    Health {
        /// Messages per in-process run (5 runs).
        #[arg(long, default_value_t = 200_000)]
        messages: usize,
        /// Seconds of each node phase (idle is half of it).
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
    },
    /// gem_introspect: µs per message to flatten large message shapes.
    Introspect {
        /// Messages per run (7 runs).
        #[arg(long, default_value_t = 200_000)]
        messages: usize,
    },
    /// gemctl replay: lockstep throughput into the state manager at bursts of 1, 10, 100.
    Replay {
        /// Messages per topic in the recorded bag (5 topics).
        #[arg(long, default_value_t = 1000)]
        per_topic: usize,
    },
    /// Publish → callback latency: rosrust's subscriber (Nagle on / TCP_NODELAY) vs ros1_protocols::direct.
    Subscribe {
        /// Messages per kind and round.
        #[arg(long, default_value_t = 1000)]
        messages: usize,
        /// Rounds (the kinds alternate within each).
        #[arg(long, default_value_t = 3)]
        rounds: usize,
    },
    /// Service round trip: rosrust's client and server vs ros1_protocols::service (persistent).
    Service {
        /// Calls per kind and round.
        #[arg(long, default_value_t = 1000)]
        calls: usize,
        /// Rounds (the kinds alternate within each).
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Calls per second (a controller polling the pose).
        #[arg(long, default_value_t = 50.0)]
        rate: f64,
        /// Keep every CPU busy with one shell loop each.
        #[arg(long)]
        load: bool,
    },
    /// CPU and wake-ups per node of the launched suite at 1x: idle, then during a lap.
    Resources {
        /// Seconds measured with the suite up and no goal.
        #[arg(long, default_value_t = 60.0)]
        idle_s: f64,
        /// Seconds measured during a lap of the GEM track (a lap takes about 320 s).
        #[arg(long, default_value_t = 60.0)]
        lap_s: f64,
        /// Instead: each node started alone beside a rosmaster (wall time), idle for
        /// IDLE_S.
        #[arg(long)]
        alone: bool,
    },
    /// Memory over a long run: laps of the GEM track with random faults; each node's RSS
    /// after the first lap and at the end.
    Soak {
        /// Wall minutes to run.
        #[arg(long, default_value_t = 60.0)]
        minutes: f64,
        /// Simulated seconds per wall second.
        #[arg(long, default_value_t = 5.0)]
        speedup: f64,
        /// Mean gap between faults, simulated seconds.
        #[arg(long, default_value_t = 20.0)]
        fault_every_s: f64,
        /// Seed of the faults' order and gaps.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Emergency and comfortable stops on a straight and in the tightest bend.
    Stop,
    /// The operator link's signing and checking, per datagram.
    OperatorLink {
        /// Batches of 100 datagrams per figure.
        #[arg(long, default_value_t = 2000)]
        samples: usize,
    },
    /// Load time of a large waypoint file.
    Waypoints {
        /// Rows in the generated file.
        #[arg(long, default_value_t = 1_000_000)]
        rows: usize,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().bench {
        Bench::StateManager { updates, samples } => state_manager::run(updates, samples),
        Bench::OperatorLink { samples } => operator_link::run(samples),
        Bench::Track {
            track,
            sources_only: true,
            ..
        } => track::scenarios(&track)
            .and_then(|s| track::run_sources(&s[0]))
            .map(|_| ()),
        Bench::Track {
            out,
            track,
            dynamic_only,
            ..
        } => track::run_all(&track, &out, dynamic_only).map(|_| ()),
        Bench::Crosscheck { track } => crosscheck::run_all(&track).map(|_| ()),
        Bench::Pacmod {
            track,
            steps_only,
            laps_only,
            slow_steering_only,
            motor_mismatch_only,
            speed_sigma_mps,
            report_latency_s,
            kp_per_s,
            ki_per_s2,
            steering_rate_rad_s,
        } => {
            let latency = std::time::Duration::try_from_secs_f64(report_latency_s)
                .ok()
                .filter(|d| *d <= std::time::Duration::from_secs(1))
                .ok_or_else(|| {
                    anyhow::anyhow!("--report-latency-s {report_latency_s} must be within 0..1 s")
                })?;
            let settings = pacmod::Settings {
                longitudinal: LongitudinalConfig {
                    kp_per_s,
                    ki_per_s2,
                    ..LongitudinalConfig::DEFAULT
                },
                steering_rate_rad_s,
                noisy: pacmod::Reports {
                    speed_sigma_mps,
                    latency,
                },
            };
            let only = steps_only || laps_only || slow_steering_only || motor_mismatch_only;
            let parts = pacmod::Parts {
                steps: !only || steps_only,
                laps: !only || laps_only,
            };
            pacmod::run_all(&track, &settings, parts)?;
            if !only || slow_steering_only || motor_mismatch_only {
                let scenarios = track::scenarios(&track)?;
                let spawn = scenarios.first().ok_or_else(|| {
                    anyhow::anyhow!("{}: no GEM track scenarios", track.display())
                })?;
                if !only || slow_steering_only {
                    steering::run_all(spawn);
                }
                if !only {
                    println!();
                }
                if !only || motor_mismatch_only {
                    mismatch::run_all(spawn);
                }
            }
            Ok(())
        }
        Bench::Waypoints { rows } => waypoints::run(rows),
        Bench::Stop => stop::run_all(),
        Bench::Soak {
            minutes,
            speedup,
            fault_every_s,
            seed,
        } => soak::run(&soak::Soak {
            minutes,
            speedup,
            fault_every_s,
            seed,
        }),
        Bench::Resources {
            idle_s,
            lap_s,
            alone: false,
        } => resources::run(idle_s, lap_s),
        Bench::Resources {
            idle_s,
            alone: true,
            ..
        } => resources::alone(idle_s),
        Bench::Health { messages, seconds } => health::run(messages, seconds),
        Bench::Introspect { messages } => introspect::run(messages),
        Bench::Replay { per_topic } => replay::run(per_topic),
        Bench::Subscribe { messages, rounds } => subscribe::run(messages, rounds),
        Bench::Service {
            calls,
            rounds,
            rate,
            load,
        } => service::run(calls, rounds, rate, load),
    }
}
