//! Wire bytes built by hand, field by field: what a test of a decoder, or of a node fed raw
//! messages, writes instead of a generated message type.

/// A message's serialized bytes (ROS 1: little-endian, strings and variable arrays
/// prefixed by their `u32` length), built by chaining one call per field.
#[derive(Debug, Default)]
pub struct Encoder(pub Vec<u8>);

impl Encoder {
    /// A `uint8` (or `bool`).
    pub fn u8(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }
    /// A `uint32` (also a length prefix, or a `time`'s seconds).
    pub fn u32(mut self, v: u32) -> Self {
        self.0.extend(v.to_le_bytes());
        self
    }
    /// An `int32`.
    pub fn i32(mut self, v: i32) -> Self {
        self.0.extend(v.to_le_bytes());
        self
    }
    /// A `float64`.
    pub fn f64(mut self, v: f64) -> Self {
        self.0.extend(v.to_le_bytes());
        self
    }
    /// A `string`.
    pub fn str(self, s: &str) -> Self {
        let mut e = self.u32(s.len() as u32);
        e.0.extend(s.as_bytes());
        e
    }
    /// A `float64[]`.
    pub fn f64s(self, v: &[f64]) -> Self {
        v.iter().fold(self.u32(v.len() as u32), |e, x| e.f64(*x))
    }
}
