//! Any ROS 1 message decoded at run time from its definition text, with no dependency on ROS
//! and no compile-time message types.
//!
//! How: parse the full definition text a bag connection or a TCPROS connection
//! header carries (the main definition, then each dependency after a line of `=` and
//! `MSG: pkg/Type`; see [`schema`]), then decode serialized bytes into a flat list of
//! `key → value` pairs in wire order (`header.seq`, `pose.position.x`, `points.3.x`).
//! Nested fields are joined with `.`, array elements are named by their index, and values
//! keep their type ([`ValueRef`]: booleans, signed and unsigned integers, floats, times,
//! durations, strings). [`rename`] turns index-addressed elements into name-addressed keys
//! (`position.0` → `first_joint.pos`).
//!
//! Arrays are kept whole by default. A limit ([`ArrayPolicy`]) is explicit and every
//! truncation is reported in [`Flat::truncated`]; elements past the limit are skipped on
//! the wire, so every field after a large array is still decoded. Malformed input (a
//! truncated buffer, a length larger than the bytes left, bad UTF-8, a bad definition) is
//! an error, never a panic or a huge allocation.
//!
//! Speed comes from reuse: [`Flat`] keeps its key strings and value slots between
//! messages, so decoding a stream of same-shaped messages allocates nothing.
#![warn(missing_docs)]

pub mod encode;
pub mod rename;
pub mod schema;

use schema::{Elem, Field, Prim, Schema, Shape};
use thiserror::Error;

/// Why a definition or a message cannot be introspected.
#[derive(Debug, Error, PartialEq)]
pub enum IntrospectError {
    /// The message definition text is malformed.
    #[error("bad message definition: {0}")]
    Definition(String),
    /// The bytes end before the message does.
    #[error("truncated message: {key} needs {need} more bytes at offset {at} of {len}")]
    Truncated {
        /// The field being read.
        key: String,
        /// Bytes needed.
        need: usize,
        /// Offset.
        at: usize,
        /// Buffer length.
        len: usize,
    },
    /// A string field that is not UTF-8.
    #[error("{key}: string is not UTF-8")]
    Utf8 {
        /// The field.
        key: String,
    },
    /// Bytes left over after the message.
    #[error("{extra} bytes after the end of the message")]
    Trailing {
        /// How many.
        extra: usize,
    },
}

/// One decoded scalar; `S` is how a string is held.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar<S> {
    /// `bool`.
    Bool(bool),
    /// Signed integers.
    Int(i64),
    /// Unsigned integers.
    UInt(u64),
    /// `float32` / `float64`.
    Float(f64),
    /// `time` (sec, nsec).
    Time(u32, u32),
    /// `duration` (sec, nsec).
    Duration(i32, i32),
    /// `string`.
    Str(S),
}

/// One decoded value: a string is a byte range (start, end) of [`Flat`]'s string buffer.
pub type Value = Scalar<(u32, u32)>;

/// A value with its string resolved.
pub type ValueRef<'a> = Scalar<&'a str>;

impl ValueRef<'_> {
    /// The value as a number (times and durations in seconds; `None` for strings).
    pub fn as_f64(&self) -> Option<f64> {
        Some(match *self {
            ValueRef::Bool(b) => f64::from(u8::from(b)),
            ValueRef::Int(i) => i as f64,
            ValueRef::UInt(u) => u as f64,
            ValueRef::Float(f) => f,
            ValueRef::Time(s, n) => f64::from(s) + f64::from(n) * 1e-9,
            ValueRef::Duration(s, n) => f64::from(s) + f64::from(n) * 1e-9,
            ValueRef::Str(_) => return None,
        })
    }
}

impl std::fmt::Display for ValueRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueRef::Bool(b) => write!(f, "{b}"),
            ValueRef::Int(i) => write!(f, "{i}"),
            ValueRef::UInt(u) => write!(f, "{u}"),
            ValueRef::Float(x) => write!(f, "{x}"),
            ValueRef::Time(s, n) => write!(f, "{s}.{n:09}"),
            ValueRef::Duration(s, n) if *s < 0 || *n < 0 => {
                write!(f, "{}", f64::from(*s) + f64::from(*n) * 1e-9)
            }
            ValueRef::Duration(s, n) => write!(f, "{s}.{n:09}"),
            ValueRef::Str(s) => f.write_str(s),
        }
    }
}

/// How many elements of each array to keep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ArrayPolicy {
    /// Every element (the default).
    #[default]
    KeepAll,
    /// At most this many per array; the rest is skipped and reported.
    KeepFirst(usize),
}

/// A flattened message. Reused across messages: call [`Decoder::flatten`] again.
///
/// It remembers the array lengths of the last message and which decoder produced it: while
/// the next message has the same lengths, its keys are the ones already stored, and only
/// values are written (the common case for a stream of one topic).
#[derive(Clone, Debug, Default)]
pub struct Flat {
    keys: Vec<String>,
    values: Vec<Value>,
    len: usize,
    strings: String,
    /// Arrays cut by the [`ArrayPolicy`]: key and original length.
    pub truncated: Vec<(String, usize)>,
    /// Array lengths of the last complete message, in wire order, and of the current one.
    shape: Vec<u32>,
    shape_next: Vec<u32>,
    /// The decoder the stored keys belong to (0: none; keys changed by a renamer).
    keys_of: u64,
}

impl Flat {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Entry `i`.
    pub fn entry(&self, i: usize) -> (&str, ValueRef<'_>) {
        let v = match self.values[i] {
            Value::Bool(b) => ValueRef::Bool(b),
            Value::Int(x) => ValueRef::Int(x),
            Value::UInt(x) => ValueRef::UInt(x),
            Value::Float(x) => ValueRef::Float(x),
            Value::Time(s, n) => ValueRef::Time(s, n),
            Value::Duration(s, n) => ValueRef::Duration(s, n),
            Value::Str((a, b)) => ValueRef::Str(&self.strings[a as usize..b as usize]),
        };
        (&self.keys[i], v)
    }

    /// Every entry in wire order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, ValueRef<'_>)> {
        (0..self.len).map(|i| self.entry(i))
    }

    /// The value of `key` (linear search).
    pub fn get(&self, key: &str) -> Option<ValueRef<'_>> {
        (0..self.len)
            .find(|&i| self.keys[i] == key)
            .map(|i| self.entry(i).1)
    }

    fn clear(&mut self) {
        self.len = 0;
        self.strings.clear();
        self.truncated.clear();
    }

    /// Appends a value whose key is already in place (same shape as the last message).
    fn push_value(&mut self, v: Value) {
        if self.len < self.keys.len() {
            self.values[self.len] = v;
        } else {
            // Unreachable while shapes match; a wrong key is better than a panic.
            self.keys.push(String::new());
            self.values.push(v);
        }
        self.len += 1;
    }

    fn push(&mut self, key: &str, v: Value) {
        if self.len < self.keys.len() {
            let k = &mut self.keys[self.len];
            if k != key {
                k.clear();
                k.push_str(key);
            }
            self.values[self.len] = v;
        } else {
            self.keys.push(key.to_owned());
            self.values.push(v);
        }
        self.len += 1;
    }

    /// Renames entry `i`'s key (used by [`rename`]); the next message rebuilds its keys.
    fn set_key(&mut self, i: usize, key: String) {
        self.keys[i] = key;
        self.keys_of = 0;
    }
}

/// Decodes messages of one schema.
#[derive(Clone, Debug)]
pub struct Decoder {
    schema: Schema,
    policy: ArrayPolicy,
    /// Identifies this decoder's key layout in a [`Flat`].
    id: u64,
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, key: &str) -> Result<&'a [u8], IntrospectError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            return Err(IntrospectError::Truncated {
                key: key.to_owned(),
                need: n.saturating_sub(self.buf.len() - self.pos),
                at: self.pos,
                len: self.buf.len(),
            });
        };
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u32(&mut self, key: &str) -> Result<u32, IntrospectError> {
        Ok(u32::from_le_bytes(arr(self.take(4, key)?)))
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
}

/// The first `N` bytes of `b` (callers pass exactly `N`).
fn arr<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

/// A fixed-size built-in from exactly its encoded bytes.
fn fixed_value(p: Prim, b: &[u8]) -> Value {
    match p {
        Prim::Bool => Value::Bool(b[0] != 0),
        Prim::I8 => Value::Int(i64::from(b[0] as i8)),
        Prim::U8 => Value::UInt(u64::from(b[0])),
        Prim::I16 => Value::Int(i64::from(i16::from_le_bytes(arr(b)))),
        Prim::U16 => Value::UInt(u64::from(u16::from_le_bytes(arr(b)))),
        Prim::I32 => Value::Int(i64::from(i32::from_le_bytes(arr(b)))),
        Prim::U32 => Value::UInt(u64::from(u32::from_le_bytes(arr(b)))),
        Prim::I64 => Value::Int(i64::from_le_bytes(arr(b))),
        Prim::U64 => Value::UInt(u64::from_le_bytes(arr(b))),
        Prim::F32 => Value::Float(f64::from(f32::from_le_bytes(arr(b)))),
        Prim::F64 => Value::Float(f64::from_le_bytes(arr(b))),
        Prim::Time => Value::Time(u32::from_le_bytes(arr(b)), u32::from_le_bytes(arr(&b[4..]))),
        Prim::Duration => {
            Value::Duration(i32::from_le_bytes(arr(b)), i32::from_le_bytes(arr(&b[4..])))
        }
        // Strings are variable-length; never passed here.
        Prim::Str => Value::Str((0, 0)),
    }
}

/// Decoding state: the current key path, and whether the stored keys still apply.
struct Ctx {
    key: String,
    fast: bool,
}

impl Ctx {
    fn emit(&mut self, out: &mut Flat, v: Value) {
        if self.fast {
            out.push_value(v);
        } else {
            out.push(&self.key, v);
        }
    }
}

impl Decoder {
    /// A decoder for `schema`, keeping arrays according to `policy`.
    pub fn new(schema: Schema, policy: ArrayPolicy) -> Decoder {
        use std::sync::atomic::{AtomicU64, Ordering};
        static IDS: AtomicU64 = AtomicU64::new(1);
        Decoder {
            schema,
            policy,
            id: IDS.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Parses `definition` of type `type_name` and keeps every array element.
    pub fn from_definition(type_name: &str, definition: &str) -> Result<Decoder, IntrospectError> {
        Ok(Decoder::new(
            Schema::parse(type_name, definition)?,
            ArrayPolicy::KeepAll,
        ))
    }

    /// The schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Flattens one serialized message (without the length prefix) into `out`.
    pub fn flatten(&self, bytes: &[u8], out: &mut Flat) -> Result<(), IntrospectError> {
        out.clear();
        out.shape_next.clear();
        let mut ctx = Ctx {
            key: String::with_capacity(64),
            fast: out.keys_of == self.id,
        };
        let mut r = Reader { buf: bytes, pos: 0 };
        let result = self
            .message(0, &mut r, &mut ctx, out)
            .and_then(|()| match r.remaining() {
                0 => Ok(()),
                extra => Err(IntrospectError::Trailing { extra }),
            });
        if result.is_ok() {
            std::mem::swap(&mut out.shape, &mut out.shape_next);
            out.keys_of = self.id;
        } else {
            out.keys_of = 0;
        }
        result
    }

    fn message(
        &self,
        index: usize,
        r: &mut Reader,
        ctx: &mut Ctx,
        out: &mut Flat,
    ) -> Result<(), IntrospectError> {
        for field in &self.schema.messages[index].fields {
            let base = ctx.key.len();
            if base > 0 {
                ctx.key.push('.');
            }
            ctx.key.push_str(&field.name);
            self.field(field, r, ctx, out)?;
            ctx.key.truncate(base);
        }
        Ok(())
    }

    fn field(
        &self,
        field: &Field,
        r: &mut Reader,
        ctx: &mut Ctx,
        out: &mut Flat,
    ) -> Result<(), IntrospectError> {
        let n = match field.shape {
            Shape::Scalar => return self.element(field.elem, r, ctx, out),
            Shape::Fixed(n) => n,
            Shape::Var => r.u32(&ctx.key)? as usize,
        };
        // Every element takes at least one byte (four for a string's length): a length
        // beyond what is left is corrupt input, not a reason to loop for minutes.
        let min = match field.elem {
            Elem::Prim(p) => p.size().unwrap_or(4),
            Elem::Msg(_) => 0,
        };
        if n.saturating_mul(min) > r.remaining() {
            return Err(IntrospectError::Truncated {
                key: ctx.key.clone(),
                need: n.saturating_mul(min) - r.remaining(),
                at: r.pos,
                len: r.buf.len(),
            });
        }
        let len = u32::try_from(n).unwrap_or(u32::MAX);
        if ctx.fast && out.shape.get(out.shape_next.len()) != Some(&len) {
            ctx.fast = false;
        }
        out.shape_next.push(len);
        let keep = match self.policy {
            ArrayPolicy::KeepAll => n,
            ArrayPolicy::KeepFirst(k) => n.min(k),
        };
        if keep < n {
            out.truncated.push((ctx.key.clone(), n));
        }
        match field.elem {
            Elem::Prim(p) if p.size().is_some() => self.prim_array(p, keep, r, ctx, out)?,
            elem => {
                let base = ctx.key.len();
                for i in 0..keep {
                    ctx.key.push('.');
                    push_index(&mut ctx.key, i);
                    self.element(elem, r, ctx, out)?;
                    ctx.key.truncate(base);
                }
            }
        }
        if keep < n {
            self.skip(field.elem, n - keep, r, &ctx.key)?;
        }
        Ok(())
    }

    /// `count` fixed-size built-ins: one bounds check, then values (and keys if needed).
    fn prim_array(
        &self,
        p: Prim,
        count: usize,
        r: &mut Reader,
        ctx: &mut Ctx,
        out: &mut Flat,
    ) -> Result<(), IntrospectError> {
        let size = p.size().unwrap_or(1);
        let bytes = r.take(size * count, &ctx.key)?;
        let base = ctx.key.len();
        for (i, b) in bytes.chunks_exact(size).enumerate() {
            let v = fixed_value(p, b);
            if ctx.fast {
                out.push_value(v);
            } else {
                ctx.key.push('.');
                push_index(&mut ctx.key, i);
                out.push(&ctx.key, v);
                ctx.key.truncate(base);
            }
        }
        Ok(())
    }

    /// Skips `count` elements on the wire without recording them.
    fn skip(
        &self,
        elem: Elem,
        count: usize,
        r: &mut Reader,
        key: &str,
    ) -> Result<(), IntrospectError> {
        match elem {
            Elem::Prim(p) => match p.size() {
                Some(size) => {
                    r.take(size * count, key)?;
                }
                None => {
                    for _ in 0..count {
                        let len = r.u32(key)? as usize;
                        r.take(len, key)?;
                    }
                }
            },
            Elem::Msg(m) => {
                let mut sink = Flat::default();
                let mut ctx = Ctx {
                    key: key.to_owned(),
                    fast: false,
                };
                for _ in 0..count {
                    sink.clear();
                    self.message(m, r, &mut ctx, &mut sink)?;
                }
            }
        }
        Ok(())
    }

    fn element(
        &self,
        elem: Elem,
        r: &mut Reader,
        ctx: &mut Ctx,
        out: &mut Flat,
    ) -> Result<(), IntrospectError> {
        let p = match elem {
            Elem::Msg(m) => return self.message(m, r, ctx, out),
            Elem::Prim(p) => p,
        };
        let v = match p.size() {
            Some(size) => fixed_value(p, r.take(size, &ctx.key)?),
            None => {
                let len = r.u32(&ctx.key)? as usize;
                let bytes = r.take(len, &ctx.key)?;
                let s = std::str::from_utf8(bytes).map_err(|_| IntrospectError::Utf8 {
                    key: ctx.key.clone(),
                })?;
                let start = out.strings.len();
                out.strings.push_str(s);
                Value::Str((start as u32, out.strings.len() as u32))
            }
        };
        ctx.emit(out, v);
        Ok(())
    }
}

/// Appends `i` in decimal (`write!` costs more than the rest of an element's work).
fn push_index(key: &mut String, mut i: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (i % 10) as u8;
        i /= 10;
        if i == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        key.push(char::from(d));
    }
}

#[cfg(test)]
mod tests;
