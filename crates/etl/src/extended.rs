//! Extended data items: what ETW attaches to an EVENT_HEADER record beyond the
//! header — related activity id, SID, session, stacks, TraceLogging schema…
//!
//! On disk each item is `u16 item size (8 + data, rounded up to 8) · u16 type ·
//! u16 linkage (bit 0: another item follows) · u16 data size · data`, and the
//! user data starts after the last item.

use crate::bytes::{u16_at, u32_at, u64_at};
use crate::error::ErrorKind;
use crate::guid::Guid;

/// `EVENT_HEADER_EXT_TYPE_*`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExtType(pub u16);

impl ExtType {
    pub const RELATED_ACTIVITYID: ExtType = ExtType(1);
    pub const SID: ExtType = ExtType(2);
    pub const TS_ID: ExtType = ExtType(3);
    pub const INSTANCE_INFO: ExtType = ExtType(4);
    pub const STACK_TRACE32: ExtType = ExtType(5);
    pub const STACK_TRACE64: ExtType = ExtType(6);
    pub const PEBS_INDEX: ExtType = ExtType(7);
    pub const PMC_COUNTERS: ExtType = ExtType(8);
    pub const PSM_KEY: ExtType = ExtType(9);
    pub const EVENT_KEY: ExtType = ExtType(10);
    pub const EVENT_SCHEMA_TL: ExtType = ExtType(11);
    pub const PROV_TRAITS: ExtType = ExtType(12);
    pub const PROCESS_START_KEY: ExtType = ExtType(13);
    pub const CONTROL_GUID: ExtType = ExtType(14);
    pub const QPC_DELTA: ExtType = ExtType(15);
    pub const CONTAINER_ID: ExtType = ExtType(16);
    pub const STACK_KEY32: ExtType = ExtType(17);
    pub const STACK_KEY64: ExtType = ExtType(18);

    /// The snake_case name used in `dump` output.
    pub fn name(self) -> &'static str {
        match self.0 {
            1 => "related_activity_id",
            2 => "sid",
            3 => "terminal_session_id",
            4 => "instance_info",
            5 => "stack_trace32",
            6 => "stack_trace64",
            7 => "pebs_index",
            8 => "pmc_counters",
            9 => "psm_key",
            10 => "event_key",
            11 => "tracelogging_schema",
            12 => "provider_traits",
            13 => "process_start_key",
            14 => "control_guid",
            15 => "qpc_delta",
            16 => "container_id",
            17 => "stack_key32",
            18 => "stack_key64",
            _ => "unknown",
        }
    }
}

impl std::fmt::Debug for ExtType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

/// The extended items of one record (already checked when the record was parsed).
#[derive(Clone, Copy, Debug, Default)]
pub struct ExtendedItems<'a> {
    data: &'a [u8],
}

impl<'a> ExtendedItems<'a> {
    pub const EMPTY: ExtendedItems<'static> = ExtendedItems { data: &[] };

    /// Splits a record body into its extended items and the user data after
    /// them, checking every item's sizes.
    pub(crate) fn split(body: &'a [u8]) -> Result<(ExtendedItems<'a>, &'a [u8]), ErrorKind> {
        let mut pos = 0usize;
        loop {
            let remaining = body.len().saturating_sub(pos);
            let bad = |item_size, data_size| ErrorKind::BadExtendedItem { item_size, data_size, remaining };
            let (Some(item_size), Some(data_size), Some(linkage)) =
                (u16_at(body, pos), u16_at(body, pos + 6), u16_at(body, pos + 4))
            else {
                return Err(bad(0, 0));
            };
            if usize::from(item_size) < 8 + usize::from(data_size) || usize::from(item_size) > remaining {
                return Err(bad(item_size, data_size));
            }
            pos += usize::from(item_size);
            if linkage & 1 == 0 {
                break;
            }
        }
        let (items, rest) = body.split_at(pos);
        Ok((ExtendedItems { data: items }, rest))
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn iter(&self) -> ExtendedIter<'a> {
        ExtendedIter { data: self.data, pos: 0 }
    }

    /// The first item of a type.
    pub fn find(&self, ext_type: ExtType) -> Option<ExtendedItem<'a>> {
        self.iter().find(|item| item.ext_type == ext_type)
    }

    /// The related activity id, if the event has one.
    pub fn related_activity_id(&self) -> Option<Guid> {
        self.find(ExtType::RELATED_ACTIVITYID).and_then(|i| Guid::read(i.data, 0))
    }
}

impl<'a> IntoIterator for ExtendedItems<'a> {
    type Item = ExtendedItem<'a>;
    type IntoIter = ExtendedIter<'a>;

    fn into_iter(self) -> ExtendedIter<'a> {
        self.iter()
    }
}

#[derive(Clone, Debug)]
pub struct ExtendedIter<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for ExtendedIter<'a> {
    type Item = ExtendedItem<'a>;

    fn next(&mut self) -> Option<ExtendedItem<'a>> {
        let item_size = usize::from(u16_at(self.data, self.pos)?);
        let ext_type = ExtType(u16_at(self.data, self.pos + 2)?);
        let data_size = usize::from(u16_at(self.data, self.pos + 6)?);
        let start = self.pos + 8;
        let data = self.data.get(start..start + data_size)?;
        self.pos = if item_size == 0 { self.data.len() } else { self.pos + item_size };
        Some(ExtendedItem { ext_type, data })
    }
}

/// One extended data item.
#[derive(Clone, Copy, Debug)]
pub struct ExtendedItem<'a> {
    pub ext_type: ExtType,
    pub data: &'a [u8],
}

/// An extended item's data, interpreted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtendedData<'a> {
    RelatedActivityId(Guid),
    /// A SID (revision, count, authority, sub-authorities).
    Sid(&'a [u8]),
    TerminalSessionId(u32),
    InstanceInfo {
        instance_id: u32,
        parent_instance_id: u32,
        parent_guid: Guid,
    },
    /// Return addresses, innermost first. `match_id` ≠ 0 joins a kernel part
    /// to a user part logged separately.
    StackTrace32 {
        match_id: u64,
        frames: &'a [u8],
    },
    StackTrace64 {
        match_id: u64,
        frames: &'a [u8],
    },
    /// A reference to a stack in the kernel's stack cache.
    StackKey {
        match_id: u64,
        key: u64,
    },
    PebsIndex(u64),
    PmcCounters(&'a [u8]),
    /// A 64-bit key: PSM key, event key, process start key, QPC delta.
    Key(u64),
    /// TraceLogging event metadata: name and field types.
    TraceLoggingSchema(&'a [u8]),
    /// TraceLogging provider traits: size, name, traits.
    ProviderTraits(&'a [u8]),
    /// Control GUID or container id.
    Guid(Guid),
    /// An item type this reader does not know, or one too short for its type.
    Other(&'a [u8]),
}

impl<'a> ExtendedItem<'a> {
    pub fn parse(&self) -> ExtendedData<'a> {
        let d = self.data;
        let other = ExtendedData::Other(d);
        match self.ext_type {
            ExtType::RELATED_ACTIVITYID => Guid::read(d, 0).map_or(other, ExtendedData::RelatedActivityId),
            ExtType::SID => ExtendedData::Sid(d),
            ExtType::TS_ID => u32_at(d, 0).map_or(other, ExtendedData::TerminalSessionId),
            ExtType::INSTANCE_INFO => match (u32_at(d, 0), u32_at(d, 4), Guid::read(d, 8)) {
                (Some(instance_id), Some(parent_instance_id), Some(parent_guid)) => {
                    ExtendedData::InstanceInfo { instance_id, parent_instance_id, parent_guid }
                }
                _ => other,
            },
            ExtType::STACK_TRACE32 => match u64_at(d, 0) {
                Some(match_id) => ExtendedData::StackTrace32 { match_id, frames: d.get(8..).unwrap_or_default() },
                None => other,
            },
            ExtType::STACK_TRACE64 => match u64_at(d, 0) {
                Some(match_id) => ExtendedData::StackTrace64 { match_id, frames: d.get(8..).unwrap_or_default() },
                None => other,
            },
            ExtType::STACK_KEY32 => match (u64_at(d, 0), u32_at(d, 8)) {
                (Some(match_id), Some(key)) => ExtendedData::StackKey { match_id, key: u64::from(key) },
                _ => other,
            },
            ExtType::STACK_KEY64 => match (u64_at(d, 0), u64_at(d, 8)) {
                (Some(match_id), Some(key)) => ExtendedData::StackKey { match_id, key },
                _ => other,
            },
            ExtType::PEBS_INDEX => u64_at(d, 0).map_or(other, ExtendedData::PebsIndex),
            ExtType::PMC_COUNTERS => ExtendedData::PmcCounters(d),
            ExtType::PSM_KEY | ExtType::EVENT_KEY | ExtType::PROCESS_START_KEY | ExtType::QPC_DELTA => {
                u64_at(d, 0).map_or(other, ExtendedData::Key)
            }
            ExtType::EVENT_SCHEMA_TL => ExtendedData::TraceLoggingSchema(d),
            ExtType::PROV_TRAITS => ExtendedData::ProviderTraits(d),
            ExtType::CONTROL_GUID | ExtType::CONTAINER_ID => Guid::read(d, 0).map_or(other, ExtendedData::Guid),
            _ => other,
        }
    }
}

/// The provider name in a TraceLogging provider-traits blob
/// (`u16 size · UTF-8 name · NUL · traits`).
pub fn provider_traits_name(traits: &[u8]) -> Option<&str> {
    let declared = usize::from(u16_at(traits, 0)?);
    let blob = traits.get(2..declared.min(traits.len()))?;
    let end = blob.iter().position(|&b| b == 0)?;
    std::str::from_utf8(blob.get(..end)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(ext_type: u16, more: bool, data: &[u8]) -> Vec<u8> {
        let size = crate::bytes::align8(8 + data.len());
        let mut v = Vec::new();
        v.extend_from_slice(&(size as u16).to_le_bytes());
        v.extend_from_slice(&ext_type.to_le_bytes());
        v.extend_from_slice(&u16::from(more).to_le_bytes());
        v.extend_from_slice(&(data.len() as u16).to_le_bytes());
        v.extend_from_slice(data);
        v.resize(size, 0);
        v
    }

    #[test]
    fn split_follows_linkage_and_leaves_user_data() {
        let mut body = item(3, true, &7u32.to_le_bytes());
        let mut stack = 0u64.to_le_bytes().to_vec();
        stack.extend_from_slice(&0x7ff6_1234_5678u64.to_le_bytes());
        body.extend(item(6, false, &stack));
        body.extend_from_slice(b"payload");
        let (items, rest) = ExtendedItems::split(&body).unwrap();
        assert_eq!(rest, b"payload");
        let parsed: Vec<_> = items.iter().map(|i| i.parse()).collect();
        assert_eq!(parsed[0], ExtendedData::TerminalSessionId(7));
        assert!(matches!(parsed[1], ExtendedData::StackTrace64 { match_id: 0, frames } if frames.len() == 8));
    }

    #[test]
    fn every_item_type_is_interpreted() {
        let guid = Guid::parse_const("11111111-2222-3333-4444-555555555555");
        let sid = [1u8, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0]; // S-1-5-18
        let mut stack32 = 9u64.to_le_bytes().to_vec();
        stack32.extend_from_slice(&[0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80]);
        let mut key64 = 3u64.to_le_bytes().to_vec();
        key64.extend_from_slice(&0xABCDu64.to_le_bytes());
        let mut key32 = 4u64.to_le_bytes().to_vec();
        key32.extend_from_slice(&[0x34, 0x12, 0, 0, 0, 0, 0, 0]);
        let mut instance = 5u32.to_le_bytes().to_vec();
        instance.extend_from_slice(&6u32.to_le_bytes());
        instance.extend_from_slice(&guid.to_bytes_le());
        let items: Vec<(u16, Vec<u8>)> = vec![
            (1, guid.to_bytes_le().to_vec()),
            (2, sid.to_vec()),
            (3, 2u32.to_le_bytes().to_vec()),
            (4, instance),
            (5, stack32),
            (7, 77u64.to_le_bytes().to_vec()),
            (8, vec![1; 16]),
            (10, 1010u64.to_le_bytes().to_vec()),
            (11, vec![9; 5]),
            (13, 1313u64.to_le_bytes().to_vec()),
            (14, guid.to_bytes_le().to_vec()),
            (17, key32),
            (18, key64),
            (99, vec![1, 2]),
        ];
        let mut body = Vec::new();
        for (i, (t, data)) in items.iter().enumerate() {
            body.extend(item(*t, i + 1 < items.len(), data));
        }
        let (parsed, rest) = ExtendedItems::split(&body).unwrap();
        assert!(rest.is_empty());
        let got: Vec<ExtendedData<'_>> = parsed.iter().map(|i| i.parse()).collect();
        assert_eq!(got[0], ExtendedData::RelatedActivityId(guid));
        assert_eq!(got[1], ExtendedData::Sid(&sid));
        assert_eq!(got[2], ExtendedData::TerminalSessionId(2));
        assert_eq!(got[3], ExtendedData::InstanceInfo { instance_id: 5, parent_instance_id: 6, parent_guid: guid });
        assert!(matches!(got[4], ExtendedData::StackTrace32 { match_id: 9, frames } if frames.len() == 8));
        assert_eq!(got[5], ExtendedData::PebsIndex(77));
        assert!(matches!(got[6], ExtendedData::PmcCounters(c) if c.len() == 16));
        assert_eq!(got[7], ExtendedData::Key(1010));
        assert_eq!(got[8], ExtendedData::TraceLoggingSchema(&[9; 5]));
        assert_eq!(got[9], ExtendedData::Key(1313));
        assert_eq!(got[10], ExtendedData::Guid(guid));
        assert_eq!(got[11], ExtendedData::StackKey { match_id: 4, key: 0x1234 });
        assert_eq!(got[12], ExtendedData::StackKey { match_id: 3, key: 0xABCD });
        assert_eq!(got[13], ExtendedData::Other(&[1, 2]));
        assert_eq!(parsed.related_activity_id(), Some(guid));
        assert_eq!(parsed.iter().map(|i| i.ext_type.name()).nth(4), Some("stack_trace32"));
    }

    #[test]
    fn lying_item_sizes_are_errors() {
        let mut body = item(3, false, &7u32.to_le_bytes());
        body[0] = 0xF0; // item size beyond the record
        assert!(ExtendedItems::split(&body).is_err());
        let mut body = item(3, false, &7u32.to_le_bytes());
        body[6] = 0x40; // data size beyond the item
        assert!(ExtendedItems::split(&body).is_err());
        assert!(ExtendedItems::split(&[1, 2, 3]).is_err());
    }

    #[test]
    fn traits_name() {
        let mut t = vec![0, 0];
        t.extend_from_slice(b"MyProvider\0");
        t.extend_from_slice(&[0x13, 0, 1]);
        t.extend_from_slice(&[0xAB; 16]);
        let n = t.len() as u16;
        t[..2].copy_from_slice(&n.to_le_bytes());
        assert_eq!(provider_traits_name(&t), Some("MyProvider"));
    }
}
