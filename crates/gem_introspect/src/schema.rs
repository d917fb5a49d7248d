//! ROS 1 message definitions parsed at run time: the full text a bag connection or a
//! TCPROS header carries (the main definition, then each dependency after a line of `=`
//! and `MSG: pkg/Type`), compiled into a layout the decoder walks without lookups.

use crate::IntrospectError;

/// A built-in field type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prim {
    /// `bool`.
    Bool,
    /// `int8`, and `byte` (its deprecated alias).
    I8,
    /// `uint8`, and `char` (its deprecated alias).
    U8,
    /// `int16`.
    I16,
    /// `uint16`.
    U16,
    /// `int32`.
    I32,
    /// `uint32`.
    U32,
    /// `int64`.
    I64,
    /// `uint64`.
    U64,
    /// `float32`.
    F32,
    /// `float64`.
    F64,
    /// `string`.
    Str,
    /// `time`.
    Time,
    /// `duration`.
    Duration,
}

impl Prim {
    fn from_name(name: &str) -> Option<Prim> {
        Some(match name {
            "bool" => Prim::Bool,
            "int8" | "byte" => Prim::I8,
            "uint8" | "char" => Prim::U8,
            "int16" => Prim::I16,
            "uint16" => Prim::U16,
            "int32" => Prim::I32,
            "uint32" => Prim::U32,
            "int64" => Prim::I64,
            "uint64" => Prim::U64,
            "float32" => Prim::F32,
            "float64" => Prim::F64,
            "string" => Prim::Str,
            "time" => Prim::Time,
            "duration" => Prim::Duration,
            _ => return None,
        })
    }

    /// Encoded size, `None` for strings.
    pub fn size(self) -> Option<usize> {
        Some(match self {
            Prim::Bool | Prim::I8 | Prim::U8 => 1,
            Prim::I16 | Prim::U16 => 2,
            Prim::I32 | Prim::U32 | Prim::F32 => 4,
            Prim::I64 | Prim::U64 | Prim::F64 | Prim::Time | Prim::Duration => 8,
            Prim::Str => return None,
        })
    }
}

/// A field's element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    /// A built-in.
    Prim(Prim),
    /// A message: index into [`Schema::messages`].
    Msg(usize),
}

/// Scalar, fixed-size array or variable-length array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One element.
    Scalar,
    /// `T[N]`.
    Fixed(usize),
    /// `T[]` (a `uint32` length first).
    Var,
}

/// One field of a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Field name.
    pub name: String,
    /// Element type.
    pub elem: Elem,
    /// Array shape.
    pub shape: Shape,
}

/// A message type's fields, in wire order (constants dropped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MsgDef {
    /// `pkg/Type`.
    pub name: String,
    /// Fields.
    pub fields: Vec<Field>,
}

/// A root message type and every type it uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schema {
    /// `messages[0]` is the root.
    pub messages: Vec<MsgDef>,
}

struct RawField {
    type_name: String,
    shape: Shape,
    name: String,
}

impl Schema {
    /// Parses `definition` (with dependencies) of type `root` (`pkg/Type`).
    pub fn parse(root: &str, definition: &str) -> Result<Schema, IntrospectError> {
        split_type(root)
            .ok_or_else(|| IntrospectError::Definition(format!("type {root:?} is not pkg/Type")))?;
        let mut sections: Vec<(String, Vec<RawField>)> = Vec::new();
        let mut name = root.to_owned();
        let mut body = String::new();
        let flush = |name: &str, body: &str, out: &mut Vec<(String, Vec<RawField>)>| {
            parse_fields(name, body).map(|f| out.push((name.to_owned(), f)))
        };
        let mut lines = definition.lines().peekable();
        while let Some(line) = lines.next() {
            if line.starts_with("==") && line.trim().chars().all(|c| c == '=') {
                flush(&name, &body, &mut sections)?;
                body.clear();
                let header = lines
                    .next()
                    .and_then(|l| l.trim().strip_prefix("MSG:"))
                    .map(str::trim)
                    .ok_or_else(|| {
                        IntrospectError::Definition(
                            "a `===` separator not followed by `MSG: pkg/Type`".into(),
                        )
                    })?;
                name = header.to_owned();
            } else {
                body.push_str(line);
                body.push('\n');
            }
        }
        flush(&name, &body, &mut sections)?;
        let mut schema = Schema {
            messages: Vec::new(),
        };
        schema.resolve(root, &sections, &mut Vec::new())?;
        Ok(schema)
    }

    /// Adds `name` (and what it uses) and returns its index.
    fn resolve(
        &mut self,
        name: &str,
        sections: &[(String, Vec<RawField>)],
        stack: &mut Vec<String>,
    ) -> Result<usize, IntrospectError> {
        if stack.iter().any(|s| s == name) {
            return Err(IntrospectError::Definition(format!(
                "{name} contains itself"
            )));
        }
        if let Some(i) = self.messages.iter().position(|m| m.name == name) {
            return Ok(i);
        }
        let raw = &sections
            .iter()
            .find(|(n, _)| n == name)
            .ok_or_else(|| {
                IntrospectError::Definition(format!("no definition of {name} in the text"))
            })?
            .1;
        let index = self.messages.len();
        self.messages.push(MsgDef {
            name: name.to_owned(),
            fields: Vec::new(),
        });
        stack.push(name.to_owned());
        let pkg = split_type(name).map_or("", |(p, _)| p).to_owned();
        let mut fields = Vec::with_capacity(raw.len());
        for f in raw {
            let elem = match Prim::from_name(&f.type_name) {
                Some(p) => Elem::Prim(p),
                None => {
                    let full = qualify(&f.type_name, &pkg);
                    Elem::Msg(self.resolve(&full, sections, stack)?)
                }
            };
            fields.push(Field {
                name: f.name.clone(),
                elem,
                shape: f.shape,
            });
        }
        stack.pop();
        self.messages[index].fields = fields;
        Ok(index)
    }

    /// The root type's name.
    pub fn root(&self) -> &str {
        &self.messages[0].name
    }
}

fn split_type(t: &str) -> Option<(&str, &str)> {
    t.split_once('/')
        .filter(|(p, n)| !p.is_empty() && !n.is_empty())
}

/// `Header` is `std_msgs/Header`; other unqualified names are in the same package.
fn qualify(type_name: &str, pkg: &str) -> String {
    if type_name.contains('/') {
        type_name.to_owned()
    } else if type_name == "Header" {
        "std_msgs/Header".to_owned()
    } else {
        format!("{pkg}/{type_name}")
    }
}

fn parse_fields(msg: &str, body: &str) -> Result<Vec<RawField>, IntrospectError> {
    let mut out = Vec::new();
    for (n, raw) in body.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why: &str| {
            IntrospectError::Definition(format!("{msg}, line {}: {why}: {raw:?}", n + 1))
        };
        let mut parts = line.split_whitespace();
        let (Some(ty), Some(rest)) = (parts.next(), parts.next()) else {
            return Err(bad("expected `type name`"));
        };
        // A constant (`uint8 OK=0`, `string S = a`): not on the wire.
        if line.contains('=') {
            continue;
        }
        if parts.next().is_some() {
            return Err(bad("extra words after the field name"));
        }
        let (type_name, shape) = match ty.split_once('[') {
            None => (ty.to_owned(), Shape::Scalar),
            Some((t, dims)) => {
                let dims = dims.strip_suffix(']').ok_or_else(|| bad("unclosed `[`"))?;
                let shape = if dims.is_empty() {
                    Shape::Var
                } else {
                    Shape::Fixed(dims.parse().map_err(|_| bad("bad array length"))?)
                };
                (t.to_owned(), shape)
            }
        };
        if !rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(bad("bad field name"));
        }
        out.push(RawField {
            type_name,
            shape,
            name: rest.to_owned(),
        });
    }
    Ok(out)
}
