//! The command-line options both calibrations share: where the data comes from (bags, or a
//! drive with `--collect`), where the results go, and the rosparam file they may join.

use super::drive::{Drive, DriveArgs};
use anyhow::ensure;
use gem_calibrate::collect::Step;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args)]
pub struct CommonArgs {
    /// Bags to fit (without --collect); the command's description says what they hold.
    pub bags: Vec<PathBuf>,
    /// Drive the runs through pacmod_bridge, record them in DIR (`--out`), and fit them.
    #[arg(long)]
    pub collect: bool,
    /// The output directory (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Also set what was fitted as parameters in this rosparam YAML file (created, or
    /// merged into), for `calibration:=FILE`.
    #[arg(long)]
    pub params: Option<PathBuf>,
    #[command(flatten)]
    pub drive: DriveArgs,
}

impl CommonArgs {
    /// Whether to drive (`--collect`, which takes no bags) or to fit the bags given (at
    /// least one); a clear error for either mistake.
    pub fn collecting(&self) -> anyhow::Result<bool> {
        if self.collect {
            ensure!(
                self.bags.is_empty(),
                "--collect records new bags; give bags to fit without it"
            );
            return Ok(true);
        }
        ensure!(
            !self.bags.is_empty(),
            "no bags: give the bags to fit, or --collect to drive and record them"
        );
        Ok(false)
    }

    /// The drive of `--collect`: its bag named after `what` in `--out`, waiting before a
    /// step where `pause` gives a prompt.
    pub fn driving<'a>(
        &'a self,
        what: &'a str,
        pause: &'a dyn Fn(usize, &Step) -> Option<String>,
    ) -> Drive<'a> {
        Drive {
            what,
            out: &self.out,
            bridge: &self.drive.bridge,
            timeout: Duration::from_secs_f64(self.drive.timeout),
            pause,
        }
    }
}
