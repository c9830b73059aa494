//! TraceLogging self-describing events: the event's name and field types
//! travel in an extended data item (EVENT_SCHEMA_TL) of every event.
//!
//! ```text
//! u16 size (including itself) · event tags (7 bits a byte, high bit: more)
//! · event name (UTF-8, NUL) · fields until the end:
//!   name (UTF-8, NUL) · InMeta: bits 0–4 in-type, 0x20 constant count,
//!   0x40 variable count (u16 count in the payload), 0x60 custom, 0x80 OutMeta
//!   follows · OutMeta: bits 0–6 out-type (TraceLogging numbering), 0x80 field
//!   tags follow · tags · u16 constant count · custom: u16 size + schema
//! A struct is in-type 24 whose out-type is the number of member fields that follow.
//! ```

use std::sync::Arc;

use crate::intype::{InType, OutType};
use crate::schema::{EventSchema, Field, Len, ProviderInfo, Source};

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn u8(&mut self) -> Option<u8> {
        let b = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from(self.u8()?) | u16::from(self.u8()?) << 8)
    }

    fn cstr(&mut self) -> Option<&'a str> {
        let rest = self.data.get(self.pos..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        self.pos += end + 1;
        std::str::from_utf8(rest.get(..end)?).ok()
    }

    /// Tags: 1 to 4 bytes, continued while the high bit is set.
    fn skip_tags(&mut self) -> Option<()> {
        for _ in 0..4 {
            if self.u8()? & 0x80 == 0 {
                return Some(());
            }
        }
        Some(())
    }

    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }
}

/// TraceLogging in-types are TDH's; the ones with a u16 length prefix in
/// the payload map to TDH's counted types.
fn in_type(v: u8) -> Option<InType> {
    Some(match v {
        14 => InType::CountedBinary,
        16 => InType::Pointer,
        _ => InType::from_tdh(u16::from(v)).filter(|t| *t != InType::Null)?,
    })
}

fn fields(r: &mut Reader<'_>, limit: Option<usize>, depth: u8) -> Result<Vec<Field>, &'static str> {
    let mut out = Vec::new();
    while !r.done() && limit.is_none_or(|n| out.len() < n) {
        let name = r.cstr().ok_or("field name is not NUL-terminated UTF-8")?;
        let in_meta = r.u8().ok_or("metadata ends before a field's type")?;
        let mut out_meta = 0;
        if in_meta & 0x80 != 0 {
            out_meta = r.u8().ok_or("metadata ends before a field's out-type")?;
            if out_meta & 0x80 != 0 {
                r.skip_tags().ok_or("metadata ends inside field tags")?;
            }
        }
        let raw_type = in_meta & 0x1F;
        let mut field = if raw_type == 24 {
            if depth > 8 {
                return Err("structs nested too deep");
            }
            let members = usize::from(out_meta & 0x7F);
            let mut f = Field::new(name, InType::Struct);
            f.members = fields(r, Some(members), depth + 1)?;
            f
        } else {
            let t = in_type(raw_type).ok_or("unknown in-type")?;
            let mut f = Field::new(name, t);
            f.out_type = OutType::from_tracelogging(out_meta & 0x7F);
            f
        };
        match in_meta & 0x60 {
            0x20 => field.count = Some(Len::Fixed(u32::from(r.u16().ok_or("metadata ends before a count")?))),
            0x40 => field.count = Some(Len::Prefixed),
            0x60 => {
                let size = usize::from(r.u16().ok_or("metadata ends before a custom schema")?);
                r.pos += size;
                // Custom-serialized data: a u16 byte count, then the bytes.
                field = Field::new(name, InType::CountedBinary);
            }
            _ => {}
        }
        out.push(field);
    }
    if limit.is_some_and(|n| out.len() < n) {
        return Err("a struct has fewer members than it declares");
    }
    Ok(out)
}

/// The schema of a TraceLogging event from its metadata blob.
pub fn parse(provider: Arc<ProviderInfo>, metadata: &[u8]) -> Result<EventSchema, &'static str> {
    let mut r = Reader { data: metadata, pos: 0 };
    let size = usize::from(r.u16().ok_or("metadata shorter than its size field")?);
    if size < 2 || size > metadata.len() {
        return Err("metadata size field does not match the blob");
    }
    r.data = metadata.get(..size).ok_or("metadata size field does not match the blob")?;
    r.skip_tags().ok_or("metadata ends inside event tags")?;
    let name = r.cstr().ok_or("event name is not NUL-terminated UTF-8")?.to_string();
    let fields = fields(&mut r, None, 0)?;
    Ok(EventSchema {
        provider,
        source: Source::TraceLogging,
        task: Some(name.clone()),
        name: Some(name),
        opcode: None,
        message: None,
        fields,
        declared: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_types_arrays_and_structs() {
        let mut m = vec![0, 0, 0x00]; // size, one tag byte
        m.extend_from_slice(b"Connect\0");
        m.extend_from_slice(b"Host\0");
        m.push(0x01); // UTF-16 string
        m.extend_from_slice(b"Port\0");
        m.extend_from_slice(&[0x86, 0x07]); // u16, out-type 7 (port)
        m.extend_from_slice(b"Ids\0");
        m.push(0x48); // u32, variable count
        m.extend_from_slice(b"Peer\0");
        m.extend_from_slice(&[0x98, 0x02]); // struct of 2
        m.extend_from_slice(b"Addr\0");
        m.extend_from_slice(&[0x88, 0x08]); // u32 IPv4
        m.extend_from_slice(b"Tag\0");
        m.extend_from_slice(&[0x84, 0x82, 0x05]); // u8 shown as string, with a field tag byte
        m.extend_from_slice(b"Raw\0");
        m.push(0x0E); // binary (u16 length prefix)
        let n = m.len() as u16;
        m[..2].copy_from_slice(&n.to_le_bytes());
        let s = parse(Arc::new(ProviderInfo::default()), &m).unwrap();
        assert_eq!(s.name.as_deref(), Some("Connect"));
        let names: Vec<&str> = s.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["Host", "Port", "Ids", "Peer", "Raw"]);
        assert_eq!(s.fields[1].out_type, OutType::Port);
        assert_eq!(s.fields[2].count, Some(Len::Prefixed));
        assert_eq!(s.fields[3].members.len(), 2);
        assert_eq!(s.fields[3].members[0].out_type, OutType::Ipv4);
        assert_eq!(s.fields[3].members[1].out_type, OutType::String);
        assert_eq!(s.fields[4].in_type, InType::CountedBinary);
    }

    #[test]
    fn bad_metadata_is_an_error() {
        assert!(parse(Arc::new(ProviderInfo::default()), &[9, 0]).is_err());
        assert!(parse(Arc::new(ProviderInfo::default()), &[7, 0, 0, b'E', 0, b'F', 0]).is_err());
    }
}
