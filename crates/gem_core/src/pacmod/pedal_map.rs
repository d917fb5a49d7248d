//! Speed-dependent pedal maps: the acceleration a pedal position gives at a speed, and
//! the inverse, the pedal position for a wanted acceleration at the current speed.
//!
//! A map is a table: one column per speed `v_j` (m/s, strictly increasing, ≥ 0), one row
//! per pedal position `p_i` (fraction 0–1, strictly increasing), and in each cell the
//! acceleration `a_ij` (m/s²) measured on level ground with that pedal held at that
//! speed. Between the grid points the map is bilinear; outside it the speed and the
//! pedal are clamped to the table's range, so the table's last row is the furthest the
//! controller ever presses that pedal.
//!
//! The inverse at speed `v`: each row is interpolated at `v` (linear in speed), which
//! gives a column `a_i(v)`; the pedal is then found by linear interpolation in that
//! column. For that to be unique the column must be monotonic: an accelerator map's
//! accelerations must not fall as the pedal rises, a brake map's must not rise, and at
//! every speed the first and last rows must differ. A flat stretch (a dead zone) is
//! allowed: the inverse gives the smallest pedal that reaches the acceleration.
//!
//! The CSV layout is that of Autoware's `raw_vehicle_cmd_converter` (`accel_map.csv`,
//! `brake_map.csv`): the first row is a label cell followed by the speeds; each further
//! row is a pedal position followed by its accelerations. Blank lines and lines starting
//! with `#` are ignored; cells may be padded with spaces. [`AcceleratorMap`] and
//! [`BrakeMap`] parse that text ([`str::parse`]) and deserialise from it with serde, so
//! a map can be a parameter holding the CSV text or a file.
//!
//! The defaults ([`DEFAULT_ACCELERATOR_CSV`], [`DEFAULT_BRAKE_CSV`]) are placeholders of
//! the right shape for the GEM e2, not measurements: the accelerator moves the car from
//! about 0.30 and the public GEM code never presses it beyond 0.48, the speeds span 0 to
//! 5.5 m/s, the brake reaches about −4 m/s². Calibrate both on the car before relying on
//! the feed-forward (the PID feedback of [`super::longitudinal`] hides a poor map only
//! partly).

use serde::Deserialize;
use std::str::FromStr;
use thiserror::Error;

/// The placeholder accelerator map (see the module documentation).
pub const DEFAULT_ACCELERATOR_CSV: &str = include_str!("gem_e2_accel_map.csv");
/// The placeholder brake map (see the module documentation).
pub const DEFAULT_BRAKE_CSV: &str = include_str!("gem_e2_brake_map.csv");

/// Which pedal a map describes; it decides the direction the accelerations must run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pedal {
    /// Accelerations do not fall as the pedal rises.
    Accelerator,
    /// Accelerations do not rise as the pedal rises.
    Brake,
}

impl Pedal {
    fn name(self) -> &'static str {
        match self {
            Pedal::Accelerator => "accelerator",
            Pedal::Brake => "brake",
        }
    }

    /// +1 for the accelerator, −1 for the brake: accelerations times this rise with the
    /// pedal.
    fn direction(self) -> f64 {
        match self {
            Pedal::Accelerator => 1.0,
            Pedal::Brake => -1.0,
        }
    }
}

/// Why a map is refused. Lines and columns count from 1, as an editor shows them.
#[derive(Debug, Error)]
pub enum PedalMapError {
    /// The text is not CSV.
    #[error("not CSV: {0}")]
    Csv(#[from] csv::Error),
    /// A cell is not a finite number.
    #[error("line {line}, column {column}: \"{text}\" is not a finite number")]
    NotANumber {
        /// Line of the cell.
        line: u64,
        /// Column of the cell.
        column: usize,
        /// The cell's text.
        text: String,
    },
    /// A row has the wrong number of cells.
    #[error("line {line}: {found} cells, the speed row has {expected}")]
    RowLength {
        /// Line of the row.
        line: u64,
        /// Cells in it.
        found: usize,
        /// Cells in the speed row.
        expected: usize,
    },
    /// Fewer than two speeds or two pedal rows.
    #[error("{speeds} speeds and {pedals} pedal rows: a map needs at least 2 of each (first row: a label, then the speeds; each further row: a pedal position, then its accelerations)")]
    TooSmall {
        /// Speeds in the first row.
        speeds: usize,
        /// Pedal rows.
        pedals: usize,
    },
    /// A speed is negative or not above the one before it.
    #[error("line {line}, column {column}: speed {value} m/s must be >= 0 and above the previous speed ({previous} m/s)")]
    Speeds {
        /// Line of the speed row.
        line: u64,
        /// Column of the speed.
        column: usize,
        /// The speed.
        value: f64,
        /// The speed before it (−∞ for the first).
        previous: f64,
    },
    /// A pedal position outside 0–1 or not above the one before it.
    #[error(
        "line {line}: pedal {value} must be within 0..1 and above the previous row's ({previous})"
    )]
    Pedals {
        /// Line of the row.
        line: u64,
        /// The pedal position.
        value: f64,
        /// The row before's (−∞ for the first).
        previous: f64,
    },
    /// An acceleration runs against the pedal's direction.
    #[error("line {line}, column {column} ({speed_mps} m/s): {value} m/s² is {wrong} the {previous} m/s² of the row above; with the {pedal}, acceleration must not {forbidden} as the pedal rises")]
    NotMonotonic {
        /// Line of the cell.
        line: u64,
        /// Column of the cell.
        column: usize,
        /// The column's speed.
        speed_mps: f64,
        /// The acceleration.
        value: f64,
        /// The acceleration of the row above.
        previous: f64,
        /// `below` or `above`.
        wrong: &'static str,
        /// `accelerator` or `brake`.
        pedal: &'static str,
        /// `fall` or `rise`.
        forbidden: &'static str,
    },
    /// Every pedal gives the same acceleration at one speed.
    #[error("column {column} ({speed_mps} m/s): every pedal position gives {value} m/s², so no pedal can be chosen for an acceleration")]
    Flat {
        /// Column of the speed.
        column: usize,
        /// The speed.
        speed_mps: f64,
        /// The one acceleration.
        value: f64,
    },
}

/// A validated pedal map (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct PedalMap {
    pedal: Pedal,
    speeds_mps: Vec<f64>,
    pedals_frac: Vec<f64>,
    /// `accel_mps2[i][j]`: pedal row `i`, speed column `j`.
    accel_mps2: Vec<Vec<f64>>,
}

impl PedalMap {
    /// Parses CSV text in the layout of the module documentation and validates it.
    pub fn parse(pedal: Pedal, text: &str) -> Result<PedalMap, PedalMapError> {
        let rows = read_rows(text)?;
        let Some(((speed_line, speed_row), pedal_rows)) = rows.split_first() else {
            return Err(PedalMapError::TooSmall {
                speeds: 0,
                pedals: 0,
            });
        };
        let speeds_mps: Vec<f64> = speed_row[1..].to_vec();
        check_size(speeds_mps.len(), pedal_rows.len())?;
        check_speeds(*speed_line, &speeds_mps)?;
        let mut map = PedalMap {
            pedal,
            speeds_mps,
            pedals_frac: Vec::new(),
            accel_mps2: Vec::new(),
        };
        for (line, row) in pedal_rows {
            map.push_row(*line, row, speed_row.len())?;
        }
        map.check_not_flat()?;
        Ok(map)
    }

    /// Which pedal the map describes.
    pub fn pedal(&self) -> Pedal {
        self.pedal
    }

    /// The speeds of the columns, m/s.
    pub fn speeds_mps(&self) -> &[f64] {
        &self.speeds_mps
    }

    /// The pedal positions of the rows, fractions.
    pub fn pedals_frac(&self) -> &[f64] {
        &self.pedals_frac
    }

    /// The acceleration with the pedal at `pedal_frac` at `speed_mps` (both clamped to
    /// the table), m/s².
    pub fn acceleration(&self, speed_mps: f64, pedal_frac: f64) -> f64 {
        let column = self.column_at(speed_mps);
        interpolate(&self.pedals_frac, &column, pedal_frac)
    }

    /// The pedal position, fraction, that gives `accel_mps2` at `speed_mps`: the smallest
    /// such position, or the table's first or last row when the acceleration is beyond
    /// what the pedal can give.
    pub fn pedal_for(&self, speed_mps: f64, accel_mps2: f64) -> f64 {
        let d = self.pedal.direction();
        let rising: Vec<f64> = self
            .column_at(speed_mps)
            .into_iter()
            .map(|a| d * a)
            .collect();
        inverse(&self.pedals_frac, &rising, d * accel_mps2)
    }

    /// The accelerations of every row at `speed_mps` (linear in speed, clamped).
    fn column_at(&self, speed_mps: f64) -> Vec<f64> {
        self.accel_mps2
            .iter()
            .map(|row| interpolate(&self.speeds_mps, row, speed_mps))
            .collect()
    }

    fn push_row(&mut self, line: u64, row: &[f64], width: usize) -> Result<(), PedalMapError> {
        if row.len() != width {
            return Err(PedalMapError::RowLength {
                line,
                found: row.len(),
                expected: width,
            });
        }
        let previous = self
            .pedals_frac
            .last()
            .copied()
            .unwrap_or(f64::NEG_INFINITY);
        let value = row[0];
        if !((0.0..=1.0).contains(&value) && value > previous) {
            return Err(PedalMapError::Pedals {
                line,
                value,
                previous,
            });
        }
        if let Some(above) = self.accel_mps2.last() {
            self.check_monotonic(line, above, &row[1..])?;
        }
        self.pedals_frac.push(value);
        self.accel_mps2.push(row[1..].to_vec());
        Ok(())
    }

    fn check_monotonic(&self, line: u64, above: &[f64], row: &[f64]) -> Result<(), PedalMapError> {
        let d = self.pedal.direction();
        let bad = (0..row.len()).find(|&j| d * row[j] < d * above[j]);
        match bad {
            None => Ok(()),
            Some(j) => Err(PedalMapError::NotMonotonic {
                line,
                column: j + 2,
                speed_mps: self.speeds_mps[j],
                value: row[j],
                previous: above[j],
                wrong: if d > 0.0 { "below" } else { "above" },
                pedal: self.pedal.name(),
                forbidden: if d > 0.0 { "fall" } else { "rise" },
            }),
        }
    }

    fn check_not_flat(&self) -> Result<(), PedalMapError> {
        let (first, last) = (
            &self.accel_mps2[0],
            &self.accel_mps2[self.accel_mps2.len() - 1],
        );
        match (0..first.len()).find(|&j| first[j] == last[j]) {
            None => Ok(()),
            Some(j) => Err(PedalMapError::Flat {
                column: j + 2,
                speed_mps: self.speeds_mps[j],
                value: first[j],
            }),
        }
    }
}

/// Rows of numbers with their line numbers; the first cell of the first row (a label) is
/// read as NaN.
fn read_rows(text: &str) -> Result<Vec<(u64, Vec<f64>)>, PedalMapError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record?;
        let line = record.position().map_or(0, |p| p.line());
        if record.iter().all(str::is_empty) {
            continue;
        }
        let label = rows.is_empty();
        let cells = record.iter().enumerate().map(|(i, text)| {
            if label && i == 0 {
                return Ok(f64::NAN);
            }
            number(text).ok_or_else(|| PedalMapError::NotANumber {
                line,
                column: i + 1,
                text: text.to_owned(),
            })
        });
        rows.push((line, cells.collect::<Result<Vec<f64>, _>>()?));
    }
    Ok(rows)
}

fn number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn check_size(speeds: usize, pedals: usize) -> Result<(), PedalMapError> {
    if speeds < 2 || pedals < 2 {
        return Err(PedalMapError::TooSmall { speeds, pedals });
    }
    Ok(())
}

fn check_speeds(line: u64, speeds: &[f64]) -> Result<(), PedalMapError> {
    let mut previous = f64::NEG_INFINITY;
    for (j, &value) in speeds.iter().enumerate() {
        if !(value >= 0.0 && value > previous) {
            return Err(PedalMapError::Speeds {
                line,
                column: j + 2,
                value,
                previous,
            });
        }
        previous = value;
    }
    Ok(())
}

/// `ys` at `x` by linear interpolation over strictly increasing `xs`, clamped at the ends.
fn interpolate(xs: &[f64], ys: &[f64], x: f64) -> f64 {
    let last = xs.len() - 1;
    if x.is_nan() || x <= xs[0] {
        return ys[0];
    }
    if x >= xs[last] {
        return ys[last];
    }
    let i = xs.partition_point(|&v| v <= x) - 1;
    let t = (x - xs[i]) / (xs[i + 1] - xs[i]);
    ys[i] + t * (ys[i + 1] - ys[i])
}

/// The smallest `x` at which the non-decreasing piecewise-linear `ys(xs)` reaches `y`,
/// clamped to the ends.
fn inverse(xs: &[f64], ys: &[f64], y: f64) -> f64 {
    if y.is_nan() || y <= ys[0] {
        return xs[0];
    }
    for i in 0..xs.len() - 1 {
        if y <= ys[i + 1] {
            // ys[i] < y ≤ ys[i+1], so the segment is not flat.
            let t = (y - ys[i]) / (ys[i + 1] - ys[i]);
            return xs[i] + t * (xs[i + 1] - xs[i]);
        }
    }
    xs[xs.len() - 1]
}

/// An accelerator map: [`PedalMap`] for [`Pedal::Accelerator`], parsed from its CSV
/// text with `str::parse` or serde (a string holding the CSV).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "String")]
pub struct AcceleratorMap(pub PedalMap);

/// A brake map: [`PedalMap`] for [`Pedal::Brake`], parsed like [`AcceleratorMap`].
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "String")]
pub struct BrakeMap(pub PedalMap);

impl FromStr for AcceleratorMap {
    type Err = PedalMapError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        PedalMap::parse(Pedal::Accelerator, text).map(AcceleratorMap)
    }
}

impl FromStr for BrakeMap {
    type Err = PedalMapError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        PedalMap::parse(Pedal::Brake, text).map(BrakeMap)
    }
}

impl TryFrom<String> for AcceleratorMap {
    type Error = PedalMapError;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl TryFrom<String> for BrakeMap {
    type Error = PedalMapError;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl Default for AcceleratorMap {
    /// The placeholder map [`DEFAULT_ACCELERATOR_CSV`].
    fn default() -> Self {
        DEFAULT_ACCELERATOR_CSV
            .parse()
            .expect("the default accelerator map is valid (tested)")
    }
}

impl Default for BrakeMap {
    /// The placeholder map [`DEFAULT_BRAKE_CSV`].
    fn default() -> Self {
        DEFAULT_BRAKE_CSV
            .parse()
            .expect("the default brake map is valid (tested)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = "default, 0.0, 2.0\n0.0, -0.2, -0.4\n0.5, 1.0, 0.6\n1.0, 2.0, 1.0\n";

    fn small() -> PedalMap {
        SMALL.parse::<AcceleratorMap>().unwrap().0
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn the_defaults_parse() {
        let a = AcceleratorMap::default().0;
        let b = BrakeMap::default().0;
        assert_eq!(a.pedals_frac().last(), Some(&0.48));
        assert_eq!(a.speeds_mps().last(), Some(&5.5));
        assert_eq!(b.speeds_mps(), a.speeds_mps());
        // The accelerator barely moves the car below 0.30.
        assert!(a.acceleration(0.0, 0.30).abs() < 0.05);
    }

    #[test]
    fn grid_points_are_exact() {
        let m = small();
        assert!(close(m.acceleration(0.0, 0.5), 1.0));
        assert!(close(m.acceleration(2.0, 1.0), 1.0));
    }

    #[test]
    fn between_grid_points_the_map_is_bilinear() {
        let m = small();
        // At 1 m/s: rows 0.0 → -0.3, 0.5 → 0.8; pedal 0.25 is half-way: 0.25.
        assert!(close(m.acceleration(1.0, 0.25), 0.25));
    }

    #[test]
    fn speed_and_pedal_are_clamped_to_the_table() {
        let m = small();
        assert!(close(m.acceleration(9.0, 2.0), 1.0));
        assert!(close(m.acceleration(-1.0, -0.5), -0.2));
    }

    #[test]
    fn the_inverse_gives_back_the_pedal() {
        let m = small();
        for v in [0.0, 0.7, 1.3, 2.0] {
            for p in [0.0, 0.1, 0.5, 0.77, 1.0] {
                let a = m.acceleration(v, p);
                assert!((m.pedal_for(v, a) - p).abs() < 1e-12, "v {v} p {p}");
            }
        }
    }

    #[test]
    fn an_acceleration_beyond_the_map_saturates_the_pedal() {
        let m = small();
        assert_eq!(m.pedal_for(1.0, 50.0), 1.0);
        assert_eq!(m.pedal_for(1.0, -50.0), 0.0);
    }

    #[test]
    fn a_dead_zone_gives_its_smallest_pedal() {
        let m: PedalMap = "x,0,1\n0,0,0\n0.3,0,0\n0.5,1,1\n"
            .parse::<AcceleratorMap>()
            .unwrap()
            .0;
        assert_eq!(m.pedal_for(0.5, 0.0), 0.0);
        assert!(close(m.pedal_for(0.5, 0.5), 0.4));
    }

    #[test]
    fn the_brake_inverse_runs_the_other_way() {
        let b = BrakeMap::default().0;
        let strong = b.pedal_for(3.0, -3.0);
        let light = b.pedal_for(3.0, -1.0);
        assert!(strong > light && light > 0.0);
        assert!((b.acceleration(3.0, strong) + 3.0).abs() < 1e-9);
        assert_eq!(b.pedal_for(3.0, -100.0), 1.0);
    }

    #[test]
    fn comments_blank_lines_and_padding_are_accepted() {
        let text = format!(
            "# GEM e2, calibrated 2024\n\n{}",
            SMALL.replace(',', " ,  ")
        );
        assert_eq!(text.parse::<AcceleratorMap>().unwrap().0, small());
    }

    #[test]
    fn serde_reads_the_csv_text() {
        let yaml = "accel_map: |\n  default,0,2\n  0,-0.2,-0.4\n  1,2,1\n";
        #[derive(Deserialize)]
        struct Params {
            accel_map: AcceleratorMap,
        }
        let p: Params = serde_yaml::from_str(yaml).unwrap();
        assert_eq!(p.accel_map.0.pedals_frac(), &[0.0, 1.0]);
        let bad = "accel_map: \"default,0,2\\n0,1,1\\n1,0,0\\n\"";
        let e = serde_yaml::from_str::<Params>(bad).err().unwrap();
        assert!(e.to_string().contains("must not fall"), "{e}");
    }

    fn error(pedal: Pedal, text: &str) -> String {
        PedalMap::parse(pedal, text).unwrap_err().to_string()
    }

    #[test]
    fn a_non_number_names_its_cell() {
        assert_eq!(
            error(Pedal::Accelerator, "v,0,1\n0,0,abc\n1,1,1\n"),
            "line 2, column 3: \"abc\" is not a finite number"
        );
        assert!(error(Pedal::Accelerator, "v,0,1\n0,0,NaN\n1,1,1\n").contains("\"NaN\""));
    }

    #[test]
    fn a_short_row_is_refused() {
        assert_eq!(
            error(Pedal::Accelerator, "v,0,1\n0,0\n1,1,1\n"),
            "line 2: 2 cells, the speed row has 3"
        );
    }

    #[test]
    fn a_map_needs_two_speeds_and_two_pedals() {
        assert!(error(Pedal::Brake, "").starts_with("0 speeds and 0 pedal rows"));
        assert!(error(Pedal::Brake, "v,0\n0,0\n1,-1\n").starts_with("1 speeds and 2"));
        assert!(error(Pedal::Brake, "v,0,1\n0,0,0\n").starts_with("2 speeds and 1"));
    }

    #[test]
    fn speeds_must_rise_from_zero_or_more() {
        assert_eq!(
            error(Pedal::Accelerator, "v,0,2,2\n0,0,0,0\n1,1,1,1\n"),
            "line 1, column 4: speed 2 m/s must be >= 0 and above the previous speed (2 m/s)"
        );
        assert!(error(Pedal::Accelerator, "v,-1,2\n0,0,0\n1,1,1\n").contains("speed -1"));
    }

    #[test]
    fn pedals_must_rise_within_zero_to_one() {
        assert_eq!(
            error(Pedal::Accelerator, "v,0,1\n0.5,0,0\n0.4,1,1\n"),
            "line 3: pedal 0.4 must be within 0..1 and above the previous row's (0.5)"
        );
        assert!(error(Pedal::Brake, "v,0,1\n0,0,0\n1.5,-1,-1\n").contains("pedal 1.5"));
    }

    #[test]
    fn an_accelerator_map_must_not_fall() {
        assert_eq!(
            error(Pedal::Accelerator, "v,0,1\n0,0,0.5\n1,1,0.4\n"),
            "line 3, column 3 (1 m/s): 0.4 m/s² is below the 0.5 m/s² of the row above; \
             with the accelerator, acceleration must not fall as the pedal rises"
        );
    }

    #[test]
    fn a_brake_map_must_not_rise() {
        assert!(error(Pedal::Brake, "v,0,1\n0,0,0\n1,-1,0.1\n")
            .contains("with the brake, acceleration must not rise"));
    }

    #[test]
    fn a_flat_column_is_refused() {
        assert_eq!(
            error(Pedal::Accelerator, "v,0,1\n0,0,0\n1,1,0\n"),
            "column 3 (1 m/s): every pedal position gives 0 m/s², so no pedal can be chosen for an acceleration"
        );
    }
}
