//! `gem_bench`: benchmarks that print figures.
//!
//! ```text
//! cargo run --release -p gem_bench -- state-manager [--updates N] [--samples N]
//! ```

mod state_manager;
mod stats;

use clap::{Parser, Subcommand};

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
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().bench {
        Bench::StateManager { updates, samples } => state_manager::run(updates, samples),
    }
}
