//! TCPROS framing shared by our subscriber and our services: length-prefixed frames and
//! connection headers (`len | (len | key=value)*`), as every ROS 1 client writes them.

use std::collections::HashMap;
use std::io::Read;

/// Largest message accepted (a corrupt length must not allocate gigabytes).
pub(crate) const MAX_MESSAGE: usize = 64 << 20;

/// Reads one length-prefixed frame (a message or a connection header).
pub(crate) fn read_frame(stream: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len)?;
    read_body(stream, len)
}

pub(crate) fn read_body(stream: &mut impl Read, len: [u8; 4]) -> std::io::Result<Vec<u8>> {
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_MESSAGE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes"),
        ));
    }
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body)?;
    Ok(body)
}

/// A connection header: `len | (len | key=value)*`.
pub(crate) fn encode_header(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut body = Vec::new();
    for (k, v) in fields {
        let field = format!("{k}={v}");
        body.extend_from_slice(&(field.len() as u32).to_le_bytes());
        body.extend_from_slice(field.as_bytes());
    }
    let mut out = (body.len() as u32).to_le_bytes().to_vec();
    out.extend(body);
    out
}

/// The fields of a connection header's body.
pub(crate) fn decode_header(mut body: &[u8]) -> Result<HashMap<String, String>, String> {
    let mut fields = HashMap::new();
    while !body.is_empty() {
        let Some((len, rest)) = body.split_first_chunk::<4>() else {
            return Err("a truncated connection header".into());
        };
        let len = u32::from_le_bytes(*len) as usize;
        if rest.len() < len {
            return Err("a truncated connection header".into());
        }
        let (field, rest) = rest.split_at(len);
        let field = String::from_utf8_lossy(field);
        let (k, v) = field
            .split_once('=')
            .ok_or_else(|| format!("a header field without '=': {field:?}"))?;
        fields.insert(k.to_owned(), v.to_owned());
        body = rest;
    }
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip() {
        let encoded = encode_header(&[("topic", "/a"), ("md5sum", "*"), ("x", "1=2")]);
        let body = read_frame(&mut std::io::Cursor::new(&encoded)).unwrap();
        let fields = decode_header(&body).unwrap();
        assert_eq!(fields["topic"], "/a");
        assert_eq!(fields["md5sum"], "*");
        assert_eq!(fields["x"], "1=2");
    }

    #[test]
    fn bad_headers_and_frames_are_errors() {
        assert!(decode_header(&[5, 0, 0, 0, b'a']).is_err());
        assert!(decode_header(&[1, 0, 0]).is_err());
        assert!(decode_header(&[1, 0, 0, 0, b'a']).is_err());
        let huge = (u32::MAX).to_le_bytes();
        assert!(read_frame(&mut std::io::Cursor::new(&huge)).is_err());
        assert!(read_frame(&mut std::io::Cursor::new(&[3, 0, 0, 0, 1])).is_err());
    }
}
