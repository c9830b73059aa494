//! The values a scenario gives an event's fields, by name. Conversions from
//! ordinary Rust values keep scenario scripts short: `("Port", 443u16)`,
//! `("URI", "https://…")`, `("RemoteAddress", socket_addr)`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use nettrail_etl::Guid;

/// One field's value. How it is written depends on the field's in-type (and,
/// for ports and IPv4 addresses, its out-type): see [`crate::encode`].
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// An unsigned integer (also booleans, pointers and sizes).
    U64(u64),
    /// A signed integer.
    I64(i64),
    Float(f64),
    Bool(bool),
    /// A pointer-sized value (written 4 or 8 bytes wide, as the event's pointer size).
    Ptr(u64),
    /// Text, written in the field's encoding (UTF-16LE or 8-bit).
    Str(String),
    /// Raw bytes: binary fields, socket addresses, SIDs.
    Bytes(Vec<u8>),
    Guid(Guid),
    /// Written in network byte order: into a 32-bit IPv4 field or a 4-byte binary.
    Ipv4(Ipv4Addr),
    /// Written as its 16 bytes.
    Ipv6(Ipv6Addr),
    /// 100 ns ticks since 1601 (UTC).
    FileTime(i64),
    /// year, month, day of week, day, hour, minute, second, milliseconds.
    SystemTime([u16; 8]),
    /// The elements of an array field.
    Array(Vec<Val>),
    /// A value for a field that only some versions (or builds) of the event
    /// have: written where the layout has the field, dropped where it does not.
    IfPresent(Box<Val>),
}

impl Val {
    /// What kind of value this is, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Val::U64(_) => "an unsigned integer",
            Val::I64(_) => "a signed integer",
            Val::Float(_) => "a float",
            Val::Bool(_) => "a boolean",
            Val::Ptr(_) => "a pointer",
            Val::Str(_) => "a string",
            Val::Bytes(_) => "bytes",
            Val::Guid(_) => "a GUID",
            Val::Ipv4(_) => "an IPv4 address",
            Val::Ipv6(_) => "an IPv6 address",
            Val::FileTime(_) => "a FILETIME",
            Val::SystemTime(_) => "a SYSTEMTIME",
            Val::Array(_) => "an array",
            Val::IfPresent(v) => v.kind(),
        }
    }
}

macro_rules! from_unsigned {
    ($($t:ty),*) => {$(
        impl From<$t> for Val {
            fn from(v: $t) -> Val {
                Val::U64(u64::from(v))
            }
        }
    )*};
}
from_unsigned!(u8, u16, u32, u64);

macro_rules! from_signed {
    ($($t:ty),*) => {$(
        impl From<$t> for Val {
            fn from(v: $t) -> Val {
                Val::I64(i64::from(v))
            }
        }
    )*};
}
from_signed!(i8, i16, i32, i64);

impl From<usize> for Val {
    fn from(v: usize) -> Val {
        Val::U64(v as u64)
    }
}

impl From<f64> for Val {
    fn from(v: f64) -> Val {
        Val::Float(v)
    }
}

impl From<bool> for Val {
    fn from(v: bool) -> Val {
        Val::Bool(v)
    }
}

impl From<&str> for Val {
    fn from(v: &str) -> Val {
        Val::Str(v.to_string())
    }
}

impl From<String> for Val {
    fn from(v: String) -> Val {
        Val::Str(v)
    }
}

impl From<Vec<u8>> for Val {
    fn from(v: Vec<u8>) -> Val {
        Val::Bytes(v)
    }
}

impl From<&[u8]> for Val {
    fn from(v: &[u8]) -> Val {
        Val::Bytes(v.to_vec())
    }
}

impl<const N: usize> From<[u8; N]> for Val {
    fn from(v: [u8; N]) -> Val {
        Val::Bytes(v.to_vec())
    }
}

impl From<Guid> for Val {
    fn from(v: Guid) -> Val {
        Val::Guid(v)
    }
}

impl From<Ipv4Addr> for Val {
    fn from(v: Ipv4Addr) -> Val {
        Val::Ipv4(v)
    }
}

impl From<Ipv6Addr> for Val {
    fn from(v: Ipv6Addr) -> Val {
        Val::Ipv6(v)
    }
}

impl From<IpAddr> for Val {
    fn from(v: IpAddr) -> Val {
        match v {
            IpAddr::V4(a) => Val::Ipv4(a),
            IpAddr::V6(a) => Val::Ipv6(a),
        }
    }
}

/// A socket address becomes its SOCKADDR_IN / SOCKADDR_IN6 bytes.
impl From<SocketAddr> for Val {
    fn from(v: SocketAddr) -> Val {
        Val::Bytes(crate::sockaddr::sockaddr(v))
    }
}

/// Named field values, in any order; the event's layout decides the order
/// on the wire. Build with [`fields!`](crate::fields) or [`Fields::with`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fields(pub Vec<(String, Val)>);

impl Fields {
    pub fn new() -> Fields {
        Fields::default()
    }

    /// Adds one value.
    pub fn with(mut self, name: impl Into<String>, value: impl Into<Val>) -> Fields {
        self.0.push((name.into(), value.into()));
        self
    }

    /// Adds a value for a field that only some versions of the event have
    /// (see [`Val::IfPresent`]).
    pub fn maybe(mut self, name: impl Into<String>, value: impl Into<Val>) -> Fields {
        self.0.push((name.into(), Val::IfPresent(Box::new(value.into()))));
        self
    }

    pub fn get(&self, name: &str) -> Option<&Val> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

/// Named field values: `fields![("Tcb", Val::Ptr(0xffff_a104_0000_1000)), ("Port", 443u16)]`.
/// Each value goes through `Val::from`.
#[macro_export]
macro_rules! fields {
    () => { $crate::Fields::new() };
    ($(($name:expr, $value:expr)),+ $(,)?) => {
        $crate::Fields(vec![$((::std::string::String::from($name), $crate::Val::from($value))),+])
    };
}
