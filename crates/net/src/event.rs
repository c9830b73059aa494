//! What the model keeps of one event: a small header ([`Head`]) and, per
//! provider, the few fields it joins on. Decoding and picking fields happens
//! in parallel; the model then applies events one at a time, in time order.

use std::borrow::Cow;

use nettrail_decode::{Field, Value};
use nettrail_etl::Guid;

use crate::address::Endpoint;

/// Time as FILETIME: 100 ns units since 1601-01-01 UTC.
pub type Time = i64;

/// Where and when an event happened, and the activity it belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    pub time: Time,
    /// The raw timestamp (what stack records name their event by).
    pub raw: u64,
    /// The event header's process and thread (`None` when absent, 0 or -1);
    /// for several providers the payload knows better.
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub activity: Guid,
    pub related: Guid,
    /// Where the event's stack is, for the events that start something
    /// (stack stitching needs them; others do not carry it).
    pub stack: Option<nettrail_stacks::StackRef>,
}

impl Head {
    /// A header id that says something: not absent, not 0, not -1.
    pub fn known(id: Option<u32>) -> Option<u32> {
        id.filter(|&v| v != 0 && v != u32::MAX)
    }

    /// The first 8 bytes of the activity id, which WinINet and WebIO derive
    /// from a request handle.
    pub fn activity_key(&self) -> u64 {
        u64::from_le_bytes(self.activity.to_bytes_le()[..8].try_into().unwrap_or_default())
    }
}

/// Whether two field names are equal. Names are short and an event's
/// handler asks for several, each compared with every field before it:
/// names of up to 8 bytes are compared as one word, not with `memcmp`.
fn same_name(a: &str, b: &str) -> bool {
    let word = |s: &[u8]| {
        let mut w = [0u8; 8];
        w[..s.len()].copy_from_slice(s);
        u64::from_le_bytes(w)
    };
    a.len() == b.len() && if a.len() <= 8 { word(a.as_bytes()) == word(b.as_bytes()) } else { a == b }
}

/// A decoded event's properties by name (a payload has a handful of fields,
/// so a scan beats a map).
#[derive(Clone, Copy, Debug)]
pub struct Props<'s, 'a> {
    fields: &'s [Field],
    values: &'s [Value<'a>],
}

impl<'s, 'a> Props<'s, 'a> {
    pub fn new(fields: &'s [Field], values: &'s [Value<'a>]) -> Self {
        Props { fields, values }
    }

    /// Every property, by name, in logged order.
    pub fn iter(&self) -> impl Iterator<Item = (&'s str, &'s Value<'a>)> {
        self.fields.iter().map(|f| f.name.as_str()).zip(self.values.iter())
    }

    pub fn get(&self, name: &str) -> Option<&'s Value<'a>> {
        let i = self.fields.iter().position(|f| same_name(&f.name, name))?;
        self.values.get(i)
    }

    /// The first of several names the field goes by in different versions.
    pub fn any(&self, names: &[&str]) -> Option<&'s Value<'a>> {
        names.iter().find_map(|n| self.get(n))
    }

    pub fn u64(&self, name: &str) -> Option<u64> {
        self.get(name)?.as_u64()
    }

    pub fn u32(&self, name: &str) -> Option<u32> {
        self.u64(name).map(|v| v as u32)
    }

    /// A string property without trailing NULs or spaces; `None` when empty.
    pub fn text(&self, name: &str) -> Option<String> {
        let value = self.get(name)?;
        let s = match value {
            Value::Binary(b) => Cow::Owned(nettrail_decode::value::ansi_lossy(b).into_owned()),
            other => other.as_str()?,
        };
        let s = s.trim_end_matches(['\0', ' ']);
        (!s.is_empty()).then(|| s.to_string())
    }

    pub fn bytes(&self, name: &str) -> Option<&'s [u8]> {
        self.get(name)?.as_bytes()
    }

    /// A SOCKADDR property.
    pub fn sockaddr(&self, name: &str) -> Option<Endpoint> {
        Endpoint::from_sockaddr(self.bytes(name)?)
    }
}
