//! `waypoints`: how long `gem_core::waypoints::load` takes for a large file.

use gem_core::stats::Summary;
use std::io::Write;
use std::time::Instant;

/// Writes a `rows`-row file like the GEM track (five columns), loads it 5 times, prints
/// the median.
pub fn run(rows: usize) -> anyhow::Result<()> {
    let path = std::env::temp_dir().join(format!("gem_bench_waypoints_{}.csv", std::process::id()));
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
        for i in 0..rows {
            let a = i as f64 * 1e-4;
            writeln!(
                f,
                "{:.6},{:.6},{:.6},{:.6},{:.6}",
                100.0 * a.cos(),
                100.0 * a.sin(),
                (a + 1.5).sin(),
                2.8,
                2.8
            )?;
        }
    }
    let bytes = std::fs::metadata(&path)?.len();
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let w = gem_core::waypoints::load(&path)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        anyhow::ensure!(w.len() == rows, "loaded {} of {rows} rows", w.len());
    }
    std::fs::remove_file(&path)?;
    let s = Summary::new(times);
    println!(
        "waypoint loader: {rows} rows ({:.1} MB): median {:.0} ms (min {:.0}, max {:.0}) over 5 loads",
        bytes as f64 / 1e6,
        s.percentile(50.0),
        s.percentile(0.0),
        s.percentile(100.0)
    );
    Ok(())
}
