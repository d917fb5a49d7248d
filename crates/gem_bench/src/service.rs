//! Service call round trip on loopback, one process: rosrust's client and server (a new
//! connection per call) against `ros1_protocols::service` (one persistent connection), each at the
//! rate a controller polls `get_model_state`. With `--load`, one busy process per CPU runs
//! for the whole benchmark, as in the demo's load test. Rounds alternate the kinds, so a
//! noisy stretch of the machine does not land on one kind only.

use gem_core::stats::Summary;
use gem_msgs::std_srvs::{SetBool, SetBoolReq, SetBoolRes};
use gem_testbed::{ros, wait_until};
use std::time::{Duration, Instant};

/// One kind of call, made once.
type Call<'a> = Box<dyn Fn() -> anyhow::Result<()> + 'a>;

/// What a call may take before the benchmark counts it as a stall.
const STALL: Duration = Duration::from_millis(100);

fn answer(req: SetBoolReq) -> Result<SetBoolRes, String> {
    Ok(SetBoolRes {
        success: req.data,
        message: String::new(),
    })
}

pub fn run(calls: usize, rounds: usize, rate_hz: f64, load: bool) -> anyhow::Result<()> {
    let _ros = ros();
    let _load = load.then(CpuLoad::start).transpose()?;
    crate::subscribe::rosrust_beside()?;
    let _rosrust = rosrust::service::<SetBool, _>("/bench_service/rosrust", answer)
        .map_err(|e| anyhow::anyhow!("advertise: {e}"))?;
    let _ours = ros1_protocols::service::advertise::<SetBool, _>("/bench_service/gem_ros", answer)?;
    let rosrust_client = rosrust::client::<SetBool>("/bench_service/rosrust")
        .map_err(|e| anyhow::anyhow!("client: {e}"))?;
    let our_client = ros1_protocols::service::Client::<SetBool>::new("/bench_service/gem_ros")?;
    let timeout = Duration::from_secs(10);
    let kinds: [(&str, Call); 2] = [
        (
            "rosrust client → rosrust server (connection per call)",
            Box::new(|| {
                rosrust_client
                    .req(&SetBoolReq { data: true })
                    .map_err(|e| anyhow::anyhow!("{e}"))?
                    .map_err(|e| anyhow::anyhow!("{e}"))
                    .map(|_| ())
            }),
        ),
        (
            "ros1_protocols::service::Client → advertise (persistent)",
            Box::new(|| {
                our_client
                    .call(&SetBoolReq { data: true }, timeout)
                    .map(|_| ())
                    .map_err(Into::into)
            }),
        ),
    ];
    for (name, call) in &kinds {
        anyhow::ensure!(
            wait_until(Duration::from_secs(20), || call().is_ok()),
            "{name}: no answer"
        );
    }
    let period = Duration::from_secs_f64(1.0 / rate_hz);
    let mut latencies: Vec<Vec<f64>> = vec![Vec::new(); kinds.len()];
    for _ in 0..rounds {
        for (k, (_, call)) in kinds.iter().enumerate() {
            let mut next = Instant::now();
            for _ in 0..calls {
                let t0 = Instant::now();
                call()?;
                latencies[k].push(t0.elapsed().as_secs_f64() * 1e6);
                next += period;
                if let Some(wait) = next.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
        }
    }
    println!(
        "service call round trip on loopback, one process, {calls} calls × {rounds} rounds per kind at {rate_hz} Hz{} (µs)",
        if load { ", one busy process per CPU" } else { "" }
    );
    println!(
        "| caller → server | p50 | p95 | p99 | max | calls over {} ms |\n|---|---|---|---|---|---|",
        STALL.as_millis()
    );
    for ((name, _), l) in kinds.iter().zip(latencies) {
        let stalls = l
            .iter()
            .filter(|&&us| us > STALL.as_secs_f64() * 1e6)
            .count();
        let s = Summary::new(l);
        println!(
            "| {name} | {:.0} | {:.0} | {:.0} | {:.0} | {stalls} |",
            s.percentile(50.0),
            s.percentile(95.0),
            s.percentile(99.0),
            s.percentile(100.0)
        );
    }
    Ok(())
}

/// One busy shell loop per CPU, killed on drop.
struct CpuLoad(Vec<std::process::Child>);

impl CpuLoad {
    fn start() -> anyhow::Result<CpuLoad> {
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        let children = (0..cpus)
            .map(|_| {
                std::process::Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .spawn()
            })
            .collect::<Result<_, _>>()?;
        Ok(CpuLoad(children))
    }
}

impl Drop for CpuLoad {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
