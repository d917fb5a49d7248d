//! XML-RPC as the slave server reads and writes it: a `methodCall` parsed into a method
//! name and [`Value`]s, a `methodResponse` written from one [`Value`].
//!
//! Why here: the `xml_rpc` crate that [`crate::xmlrpc`] calls with keeps its parser and
//! its writer private (they serve its own HTTP server, which is what this runtime
//! replaces), so the server side reads the XML with `xml-rs` and writes it itself. The
//! values are `xml_rpc`'s, so one [`Value`] type runs through the whole crate.

use xml::reader::{EventReader, ParserConfig, XmlEvent};
use xml_rpc::Value;

/// How deep values may nest: ROS's slave calls nest three levels (a list of protocol
/// lists); a parameter value a little more. A deeper document is refused rather than
/// recursed into.
const MAX_DEPTH: usize = 32;

/// A method call that could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("not an XML-RPC call: {0}")]
pub struct BadCall(String);

/// One element of the document: its name, its text and its child elements.
#[derive(Debug, Default)]
struct Element {
    name: String,
    text: String,
    children: Vec<Element>,
}

/// Parses an XML-RPC `methodCall`: the method's name and its parameters.
pub fn parse_call(body: &[u8]) -> Result<(String, Vec<Value>), BadCall> {
    let root = parse_tree(body)?;
    if root.name != "methodCall" {
        return Err(BadCall(format!("<{}> at the root", root.name)));
    }
    let name = child(&root, "methodName")?.text.trim().to_owned();
    if name.is_empty() {
        return Err(BadCall("an empty method name".into()));
    }
    let params = match root.children.iter().find(|c| c.name == "params") {
        None => Vec::new(),
        Some(params) => params
            .children
            .iter()
            .filter(|p| p.name == "param")
            .map(|p| value(child(p, "value")?))
            .collect::<Result<_, _>>()?,
    };
    Ok((name, params))
}

fn child<'a>(e: &'a Element, name: &str) -> Result<&'a Element, BadCall> {
    e.children
        .iter()
        .find(|c| c.name == name)
        .ok_or_else(|| BadCall(format!("<{}> without <{name}>", e.name)))
}

fn parse_tree(body: &[u8]) -> Result<Element, BadCall> {
    let config = ParserConfig::new()
        .cdata_to_characters(true)
        .ignore_comments(true)
        .coalesce_characters(true);
    let reader = EventReader::new_with_config(body, config);
    let mut open: Vec<Element> = Vec::new();
    for event in reader {
        match event.map_err(|e| BadCall(e.to_string()))? {
            XmlEvent::StartElement { name, .. } => {
                if open.len() >= MAX_DEPTH * 3 {
                    return Err(BadCall("nested too deep".into()));
                }
                open.push(Element {
                    name: name.local_name,
                    ..Element::default()
                });
            }
            XmlEvent::EndElement { .. } => {
                let done = open
                    .pop()
                    .ok_or_else(|| BadCall("an unmatched end".into()))?;
                match open.last_mut() {
                    Some(parent) => parent.children.push(done),
                    None => return Ok(done),
                }
            }
            XmlEvent::Characters(text) | XmlEvent::Whitespace(text) => {
                if let Some(e) = open.last_mut() {
                    e.text.push_str(&text);
                }
            }
            _ => {}
        }
    }
    Err(BadCall("no root element".into()))
}

/// A `<value>`: a typed child, or plain text (a string).
fn value(e: &Element) -> Result<Value, BadCall> {
    let Some(typed) = e.children.first() else {
        return Ok(Value::String(e.text.clone()));
    };
    let text = typed.text.trim();
    let bad = |what: &str| BadCall(format!("<{}>{what}</{}>", typed.name, typed.name));
    Ok(match typed.name.as_str() {
        "i4" | "int" => Value::Int(text.parse().map_err(|_| bad(text))?),
        "boolean" => Value::Bool(match text {
            "1" => true,
            "0" => false,
            other => return Err(bad(other)),
        }),
        // A string keeps its whitespace.
        "string" => Value::String(typed.text.clone()),
        "double" => Value::Double(text.parse().map_err(|_| bad(text))?),
        "dateTime.iso8601" => Value::DateTime(text.to_owned()),
        "base64" => {
            use base64::Engine as _;
            let compact: String = text.split_whitespace().collect();
            Value::Base64(
                base64::engine::general_purpose::STANDARD
                    .decode(compact)
                    .map_err(|_| bad("(not base64)"))?,
            )
        }
        "array" => Value::Array(
            child(typed, "data")?
                .children
                .iter()
                .filter(|v| v.name == "value")
                .map(value)
                .collect::<Result<_, _>>()?,
        ),
        "struct" => Value::Struct(
            typed
                .children
                .iter()
                .filter(|m| m.name == "member")
                .map(|m| Ok((child(m, "name")?.text.clone(), value(child(m, "value")?)?)))
                .collect::<Result<_, BadCall>>()?,
        ),
        other => return Err(BadCall(format!("a value of type <{other}>"))),
    })
}

/// A `methodResponse` carrying `value`.
pub fn response(value: &Value) -> String {
    let mut out = String::from("<?xml version=\"1.0\"?><methodResponse><params><param>");
    write_value(&mut out, value);
    out.push_str("</param></params></methodResponse>");
    out
}

/// A `methodResponse` carrying a fault (an unknown method, a call that could not be read).
pub fn fault(code: i32, message: &str) -> String {
    let mut out = String::from("<?xml version=\"1.0\"?><methodResponse><fault>");
    let members = [
        ("faultCode".to_owned(), Value::Int(code)),
        ("faultString".to_owned(), Value::String(message.to_owned())),
    ];
    write_value(&mut out, &Value::Struct(members.into_iter().collect()));
    out.push_str("</fault></methodResponse>");
    out
}

fn write_value(out: &mut String, v: &Value) {
    use std::fmt::Write;
    out.push_str("<value>");
    match v {
        Value::Int(i) => {
            let _ = write!(out, "<i4>{i}</i4>");
        }
        Value::Bool(b) => {
            let _ = write!(out, "<boolean>{}</boolean>", u8::from(*b));
        }
        Value::String(s) => {
            out.push_str("<string>");
            escape(out, s);
            out.push_str("</string>");
        }
        Value::Double(d) => {
            let _ = write!(out, "<double>{d}</double>");
        }
        Value::DateTime(t) => {
            out.push_str("<dateTime.iso8601>");
            escape(out, t);
            out.push_str("</dateTime.iso8601>");
        }
        Value::Base64(bytes) => {
            use base64::Engine as _;
            let _ = write!(
                out,
                "<base64>{}</base64>",
                base64::engine::general_purpose::STANDARD.encode(bytes)
            );
        }
        Value::Array(items) => {
            out.push_str("<array><data>");
            for item in items {
                write_value(out, item);
            }
            out.push_str("</data></array>");
        }
        Value::Struct(members) => {
            out.push_str("<struct>");
            for (name, value) in members {
                out.push_str("<member><name>");
                escape(out, name);
                out.push_str("</name>");
                write_value(out, value);
                out.push_str("</member>");
            }
            out.push_str("</struct>");
        }
    }
    out.push_str("</value>");
}

fn escape(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_as_rospy_sends_it_parses() {
        let body = br#"<?xml version='1.0'?>
<methodCall>
<methodName>requestTopic</methodName>
<params>
<param><value><string>/listener</string></value></param>
<param><value>/chatter</value></param>
<param><value><array><data><value><array><data>
<value><string>TCPROS</string></value>
</data></array></value></data></array></value></param>
<param><value><struct><member><name>a</name><value><int>-3</int></value></member>
<member><name>b</name><value><boolean>1</boolean></value></member></struct></value></param>
<param><value><double>0.25</double></value></param>
<param><value><base64>aGk=</base64></value></param>
<param><value><string>a &amp; b <![CDATA[<c>]]></string></value></param>
</params>
</methodCall>"#;
        let (method, params) = parse_call(body).unwrap();
        assert_eq!(method, "requestTopic");
        assert_eq!(params[0], Value::String("/listener".into()));
        assert_eq!(params[1], Value::String("/chatter".into()));
        assert_eq!(
            params[2],
            Value::Array(vec![Value::Array(vec![Value::String("TCPROS".into())])])
        );
        let Value::Struct(s) = &params[3] else {
            panic!("{:?}", params[3])
        };
        assert_eq!(s["a"], Value::Int(-3));
        assert_eq!(s["b"], Value::Bool(true));
        assert_eq!(params[4], Value::Double(0.25));
        assert_eq!(params[5], Value::Base64(b"hi".to_vec()));
        assert_eq!(params[6], Value::String("a & b <c>".into()));
    }

    #[test]
    fn a_response_parses_back() {
        let v = Value::Array(vec![
            Value::Int(1),
            Value::String("<ok> & done".into()),
            Value::Array(vec![Value::Bool(false), Value::Double(1.5)]),
        ]);
        // A response has the shape of a call's parameters: read it back through a call.
        let text = response(&v)
            .replace("methodResponse>", "methodCall>")
            .replacen("<params>", "<methodName>x</methodName><params>", 1);
        assert_eq!(parse_call(text.as_bytes()).unwrap().1, vec![v]);
        assert!(fault(-1, "no such method").contains("<i4>-1</i4>"));
    }

    #[test]
    fn bad_calls_are_errors_not_panics() {
        for bad in [
            &b""[..],
            b"<methodCall>",
            b"<methodResponse/>",
            b"<methodCall><methodName></methodName></methodCall>",
            b"<methodCall><methodName>x</methodName><params><param><value><i4>z</i4></value></param></params></methodCall>",
            b"<methodCall><methodName>x</methodName><params><param><value><nope/></value></param></params></methodCall>",
            b"<methodCall><methodName>x</methodName><params><param></param></params></methodCall>",
        ] {
            assert!(parse_call(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let deep = format!(
            "<methodCall><methodName>x</methodName><params><param>{}{}</param></params></methodCall>",
            "<value><array><data>".repeat(200),
            "</data></array></value>".repeat(200)
        );
        assert!(parse_call(deep.as_bytes()).is_err());
    }
}
