//! Percentiles of a sample set (benchmarks, the fault-latency profiler).

/// Sorted samples with nearest-rank percentiles.
pub struct Summary {
    sorted: Vec<f64>,
}

impl Summary {
    /// Sorts `samples` (NaN-free).
    pub fn new(mut samples: Vec<f64>) -> Self {
        samples.sort_by(|a, b| a.total_cmp(b));
        Summary { sorted: samples }
    }

    /// The `p`-th percentile (0..=100), nearest rank.
    pub fn percentile(&self, p: f64) -> f64 {
        if self.sorted.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * self.sorted.len() as f64).ceil() as usize;
        self.sorted[rank.clamp(1, self.sorted.len()) - 1]
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// True without samples.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// Arithmetic mean (NaN without samples).
    pub fn mean(&self) -> f64 {
        self.sorted.iter().sum::<f64>() / self.sorted.len() as f64
    }

    /// The samples, ascending.
    pub fn sorted(&self) -> &[f64] {
        &self.sorted
    }

    /// `p50 / p90 / p99 / max` formatted with `unit`.
    pub fn line(&self, unit: &str) -> String {
        format!(
            "n={} p50={:.1}{unit} p90={:.1}{unit} p99={:.1}{unit} max={:.1}{unit}",
            self.len(),
            self.percentile(50.0),
            self.percentile(90.0),
            self.percentile(99.0),
            self.percentile(100.0)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let s = Summary::new((1..=100).rev().map(f64::from).collect());
        assert_eq!(s.percentile(50.0), 50.0);
        assert_eq!(s.percentile(99.0), 99.0);
        assert_eq!(s.percentile(100.0), 100.0);
        assert_eq!(s.percentile(0.0), 1.0);
    }
}
