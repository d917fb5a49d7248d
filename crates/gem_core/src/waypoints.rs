//! Waypoint files (docs/spec.md §3): CSV rows of `x, y, yaw` in metres and radians.
//!
//! Accepted: extra columns (ignored; the GEM track has `vx, speed` too), CRLF line endings,
//! surrounding spaces, one optional header row (`x,y,yaw`: three non-numeric names) and
//! blank lines. Rejected with the file and line: a missing or unreadable file, no rows, a
//! single row (nothing to follow), a row with fewer than three fields, a field that is not
//! a number, NaN or infinite values, and a yaw outside [−2π, 2π], which is what a file
//! logged in degrees looks like (88.4 where 1.54 rad was meant); loading it as radians
//! would send the car in circles.

use crate::geometry::Pose;
use std::f64::consts::TAU;
use std::path::Path;
use thiserror::Error;

/// Why a waypoint file cannot be used. Every variant names the file, most the line.
#[derive(Debug, Error, PartialEq)]
pub enum WaypointFileError {
    /// The file cannot be read.
    #[error("{origin}: cannot read: {reason}")]
    Unreadable {
        /// File name.
        origin: String,
        /// The I/O error.
        reason: String,
    },
    /// No data rows.
    #[error("{origin}: no waypoints (the file is empty)")]
    Empty {
        /// File name.
        origin: String,
    },
    /// Exactly one data row.
    #[error("{origin}: a single waypoint is not a path")]
    SinglePoint {
        /// File name.
        origin: String,
    },
    /// A row with fewer than 3 fields.
    #[error("{origin}:{line}: expected x,y,yaw, found {fields} field(s)")]
    ShortRow {
        /// File name.
        origin: String,
        /// 1-based line.
        line: u64,
        /// Fields found.
        fields: usize,
    },
    /// A field that does not parse as a number.
    #[error("{origin}:{line}: {column} \"{text}\" is not a number")]
    NotANumber {
        /// File name.
        origin: String,
        /// 1-based line.
        line: u64,
        /// `x`, `y` or `yaw`.
        column: &'static str,
        /// The text found.
        text: String,
    },
    /// NaN or infinite.
    #[error("{origin}:{line}: {column} is {value}, not a finite number")]
    NotFinite {
        /// File name.
        origin: String,
        /// 1-based line.
        line: u64,
        /// `x`, `y` or `yaw`.
        column: &'static str,
        /// The value.
        value: f64,
    },
    /// A yaw outside [−2π, 2π].
    #[error("{origin}:{line}: yaw {yaw} is outside [-2π, 2π]: the file looks like it holds degrees, expected radians")]
    YawNotRadians {
        /// File name.
        origin: String,
        /// 1-based line.
        line: u64,
        /// The yaw found.
        yaw: f64,
    },
    /// The CSV itself is malformed (e.g. invalid UTF-8).
    #[error("{origin}:{line}: {reason}")]
    Csv {
        /// File name.
        origin: String,
        /// 1-based line.
        line: u64,
        /// The parser's message.
        reason: String,
    },
}

const COLUMNS: [&str; 3] = ["x", "y", "yaw"];

/// Loads and validates a waypoint file.
pub fn load(path: &Path) -> Result<Vec<Pose>, WaypointFileError> {
    let origin = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| WaypointFileError::Unreadable {
        origin: origin.clone(),
        reason: e.to_string(),
    })?;
    parse(&bytes, &origin)
}

/// Parses waypoint CSV `data`; `origin` names it in errors.
pub fn parse(data: &[u8], origin: &str) -> Result<Vec<Pose>, WaypointFileError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(data);
    // ~50 bytes per row in logged files: reserve once instead of growing 20 times.
    let mut out = Vec::with_capacity(data.len() / 40);
    let mut record = csv::ByteRecord::new();
    let mut first = true;
    loop {
        let line = reader.position().line();
        match reader.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                return Err(WaypointFileError::Csv {
                    origin: origin.into(),
                    line,
                    reason: e.to_string(),
                })
            }
        }
        let line = record.position().map_or(line, |p| p.line());
        if record.iter().all(|f| f.trim_ascii().is_empty()) {
            continue;
        }
        if std::mem::take(&mut first) && is_header(&record) {
            continue;
        }
        out.push(row(&record, origin, line)?);
    }
    match out.len() {
        0 => Err(WaypointFileError::Empty {
            origin: origin.into(),
        }),
        1 => Err(WaypointFileError::SinglePoint {
            origin: origin.into(),
        }),
        _ => Ok(out),
    }
}

/// A header row: at least three fields, none of the first three a number.
fn is_header(record: &csv::ByteRecord) -> bool {
    record.len() >= 3
        && record
            .iter()
            .take(3)
            .all(|f| parse_f64(f).is_none() && f.first().is_some_and(u8::is_ascii_alphabetic))
}

fn row(record: &csv::ByteRecord, origin: &str, line: u64) -> Result<Pose, WaypointFileError> {
    if record.len() < 3 {
        return Err(WaypointFileError::ShortRow {
            origin: origin.into(),
            line,
            fields: record.len(),
        });
    }
    let mut v = [0.0; 3];
    for (i, column) in COLUMNS.iter().enumerate() {
        let field = record[i].trim_ascii();
        let value = parse_f64(field).ok_or_else(|| WaypointFileError::NotANumber {
            origin: origin.into(),
            line,
            column,
            text: String::from_utf8_lossy(field).into_owned(),
        })?;
        if !value.is_finite() {
            return Err(WaypointFileError::NotFinite {
                origin: origin.into(),
                line,
                column,
                value,
            });
        }
        v[i] = value;
    }
    if v[2].abs() > TAU {
        return Err(WaypointFileError::YawNotRadians {
            origin: origin.into(),
            line,
            yaw: v[2],
        });
    }
    Ok(Pose::new(v[0], v[1], v[2]))
}

fn parse_f64(field: &[u8]) -> Option<f64> {
    std::str::from_utf8(field.trim_ascii()).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<Vec<Pose>, WaypointFileError> {
        parse(s.as_bytes(), "t.csv")
    }

    #[test]
    fn plain_rows() {
        let w = parse_str("0,0,0\n1,0.5,0.1\n").unwrap();
        assert_eq!(w, vec![Pose::new(0.0, 0.0, 0.0), Pose::new(1.0, 0.5, 0.1)]);
    }

    #[test]
    fn extra_columns_spaces_and_crlf() {
        let w = parse_str(" 0 , 0 , 0 , 9, 9\r\n1,2,3,4,5\r\n").unwrap();
        assert_eq!(w[1], Pose::new(1.0, 2.0, 3.0));
    }

    #[test]
    fn header_row_is_skipped() {
        assert_eq!(parse_str("x,y,yaw\n0,0,0\n1,1,1\n").unwrap().len(), 2);
    }

    #[test]
    fn blank_lines_are_skipped() {
        assert_eq!(parse_str("0,0,0\n\n1,1,1\n\n").unwrap().len(), 2);
    }

    #[test]
    fn empty_file() {
        assert_eq!(
            parse_str("").unwrap_err(),
            WaypointFileError::Empty {
                origin: "t.csv".into()
            }
        );
        assert!(matches!(
            parse_str("x,y,yaw\n").unwrap_err(),
            WaypointFileError::Empty { .. }
        ));
    }

    #[test]
    fn single_point() {
        assert!(matches!(
            parse_str("1,2,0\n").unwrap_err(),
            WaypointFileError::SinglePoint { .. }
        ));
    }

    #[test]
    fn short_row_names_its_line() {
        let e = parse_str("0,0,0\n1,2\n").unwrap_err();
        assert_eq!(
            e,
            WaypointFileError::ShortRow {
                origin: "t.csv".into(),
                line: 2,
                fields: 2
            }
        );
        assert_eq!(e.to_string(), "t.csv:2: expected x,y,yaw, found 2 field(s)");
    }

    #[test]
    fn non_numeric_names_line_column_and_text() {
        let e = parse_str("0,0,0\n1,1,0\n2,2,abc\n").unwrap_err();
        assert_eq!(e.to_string(), "t.csv:3: yaw \"abc\" is not a number");
    }

    #[test]
    fn header_after_the_first_row_is_an_error() {
        assert!(matches!(
            parse_str("0,0,0\nx,y,yaw\n").unwrap_err(),
            WaypointFileError::NotANumber { line: 2, .. }
        ));
    }

    #[test]
    fn nan_and_inf_are_rejected() {
        assert!(matches!(
            parse_str("0,0,0\nNaN,0,0\n").unwrap_err(),
            WaypointFileError::NotFinite {
                column: "x",
                line: 2,
                ..
            }
        ));
        assert!(matches!(
            parse_str("0,0,0\n0,inf,0\n").unwrap_err(),
            WaypointFileError::NotFinite { column: "y", .. }
        ));
    }

    #[test]
    fn degrees_are_detected() {
        let e = parse_str("-0.128,-0.002,88.449\n-0.128,-0.002,88.448\n").unwrap_err();
        assert!(matches!(
            e,
            WaypointFileError::YawNotRadians { line: 1, .. }
        ));
        assert!(e.to_string().contains("degrees"), "{e}");
    }

    #[test]
    fn yaw_at_two_pi_is_fine() {
        assert!(parse_str("0,0,6.283\n1,0,-6.28\n").is_ok());
    }

    #[test]
    fn missing_file_names_it() {
        let e = load(Path::new("/nonexistent/track.csv")).unwrap_err();
        assert!(matches!(e, WaypointFileError::Unreadable { .. }));
        assert!(
            e.to_string()
                .starts_with("/nonexistent/track.csv: cannot read"),
            "{e}"
        );
    }

    #[test]
    fn the_gem_track_loads() {
        let track = load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../launch/waypoints/gem_track.csv"),
        )
        .unwrap();
        assert_eq!(track.len(), 3822);
        assert!((track[0].x + 0.014336).abs() < 1e-9);
    }
}
