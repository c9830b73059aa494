//! Network addresses as the providers log them: SOCKADDR structures (IPv4,
//! IPv6, Hyper-V, VSock, anything else), kernel fields in network byte
//! order, and text (`10.0.0.5:443`, `[2001:db8::1]:443`, `::ffff:10.0.0.5`).
//!
//! One [`Address`] type for every family, so joins across layers compare like
//! with like: IPv4-mapped IPv6 addresses become IPv4 and IPv6 zone ids are
//! dropped; families nettrail does not know are kept by number, never
//! dropped or fatal.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use nettrail_etl::Guid;

/// Address families (ws2def.h, hvsocket.h).
pub mod family {
    pub const INET: u16 = 2;
    pub const INET6: u16 = 23;
    pub const HYPERV: u16 = 34;
    pub const VSOCK: u16 = 40;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Address {
    V4([u8; 4]),
    V6([u8; 16]),
    /// A Hyper-V socket: the partition (VM) and the service.
    HyperV {
        vm: Guid,
        service: Guid,
    },
    /// A VM socket: the context id (the port is the endpoint's).
    VSock {
        cid: u32,
    },
    /// A family nettrail does not interpret.
    Other {
        family: u16,
    },
}

/// Whole words, not a byte at a time: addresses key the connection tables,
/// which every TCP/IP event looks up (the derived hash fed an IPv4 address
/// to the hasher as a length and four bytes).
impl std::hash::Hash for Address {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let halves = |b: &[u8; 16]| {
            let (high, low) = b.split_at(8);
            let word = |h: &[u8]| u64::from_le_bytes(h.try_into().unwrap_or_default());
            (word(high), word(low))
        };
        match self {
            Address::V4(a) => state.write_u64(u64::from(u32::from_le_bytes(*a))),
            Address::V6(a) => {
                let (high, low) = halves(a);
                state.write_u64(high);
                state.write_u64(low);
            }
            Address::HyperV { vm, service } => {
                vm.hash(state);
                service.hash(state);
            }
            Address::VSock { cid } => state.write_u64(1 << 40 | u64::from(*cid)),
            Address::Other { family } => state.write_u64(2 << 40 | u64::from(*family)),
        }
    }
}

impl Address {
    /// An IPv6 address, as IPv4 when it is IPv4-mapped (::ffff:a.b.c.d).
    pub fn from_v6(bytes: [u8; 16]) -> Address {
        match Ipv6Addr::from(bytes).to_ipv4_mapped() {
            Some(v4) => Address::V4(v4.octets()),
            None => Address::V6(bytes),
        }
    }

    pub fn family(&self) -> u16 {
        match self {
            Address::V4(_) => family::INET,
            Address::V6(_) => family::INET6,
            Address::HyperV { .. } => family::HYPERV,
            Address::VSock { .. } => family::VSOCK,
            Address::Other { family } => *family,
        }
    }

    /// 0.0.0.0, ::, or a family-only address: a socket not yet bound to one.
    pub fn is_unspecified(&self) -> bool {
        match self {
            Address::V4(a) => *a == [0; 4],
            Address::V6(a) => *a == [0; 16],
            _ => false,
        }
    }

    pub fn is_loopback(&self) -> bool {
        match self {
            Address::V4(a) => a[0] == 127,
            Address::V6(a) => Ipv6Addr::from(*a).is_loopback(),
            _ => false,
        }
    }

    /// Parses an address in text: IPv4, IPv6 (zone id dropped, mapped IPv4
    /// unmapped), optionally bracketed.
    pub fn parse(text: &str) -> Option<Address> {
        let text = text.trim();
        let text = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')).unwrap_or(text);
        if let Ok(v4) = text.parse::<Ipv4Addr>() {
            return Some(Address::V4(v4.octets()));
        }
        let without_zone = text.split_once('%').map_or(text, |(a, _)| a);
        without_zone.parse::<Ipv6Addr>().ok().map(|v6| Address::from_v6(v6.octets()))
    }

    /// A multicast or broadcast address: one that a datagram is sent *to*
    /// a group at, never a host's own source. (A subnet's broadcast is
    /// taken as any IPv4 address ending in .255: the mask is not logged.)
    pub fn is_group(&self) -> bool {
        match *self {
            Address::V4(a) => (224..=239).contains(&a[0]) || a[3] == 255,
            Address::V6(a) => a[0] == 0xff,
            _ => false,
        }
    }

    /// The address class shown where a row has no better description, as
    /// network engineers name them.
    pub fn class(&self) -> Option<&'static str> {
        match *self {
            Address::V4(a) => Some(match a {
                [10, ..] => "Private Network (A)",
                [127, ..] => "Loopback",
                [169, 254, ..] => "Link-Local",
                [172, b, ..] if (16..32).contains(&b) => "Private Network (B)",
                [192, 168, ..] => "Private Network (C)",
                [100, b, ..] if (64..128).contains(&b) => "Shared (CGNAT)",
                [255, 255, 255, 255] => "Broadcast",
                [224..=239, ..] => "Multicast",
                [0, 0, 0, 0] => "Unspecified",
                _ => return None,
            }),
            Address::V6(a) => {
                let ip = Ipv6Addr::from(a);
                Some(if ip.is_loopback() {
                    "Loopback"
                } else if ip.is_unspecified() {
                    "Unspecified"
                } else if ip.is_multicast() {
                    "Multicast"
                } else if a[0] == 0xfe && a[1] & 0xc0 == 0x80 {
                    "Link-Local"
                } else if a[0] == 0xfe && a[1] & 0xc0 == 0xc0 {
                    "Site-Local"
                } else if a[0] & 0xfe == 0xfc {
                    "Unique-Local"
                } else {
                    return None;
                })
            }
            Address::HyperV { .. } => Some("Hyper-V"),
            Address::VSock { .. } => Some("VSock"),
            Address::Other { .. } => None,
        }
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::V4(a) => Ipv4Addr::from(*a).fmt(f),
            Address::V6(a) => Ipv6Addr::from(*a).fmt(f),
            Address::HyperV { vm, service } => write!(f, "hv:{vm}/{service}"),
            Address::VSock { cid } => write!(f, "vsock:{cid}"),
            Address::Other { family } => write!(f, "af{family}"),
        }
    }
}

/// An address and a port (0 where the family has none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoint {
    pub address: Address,
    pub port: u16,
}

impl Endpoint {
    pub fn new(address: Address, port: u16) -> Endpoint {
        Endpoint { address, port }
    }

    /// Reads a SOCKADDR (SOCKADDR_IN, SOCKADDR_IN6, SOCKADDR_HV, a VSock
    /// address, or any other family by number). `None` when the bytes are too
    /// short for the family or hold no address at all (family 0).
    pub fn from_sockaddr(bytes: &[u8]) -> Option<Endpoint> {
        let family = u16::from_le_bytes(bytes.get(..2)?.try_into().ok()?);
        let port_be = || bytes.get(2..4).map(|p| u16::from_be_bytes([p[0], p[1]]));
        match family {
            0 => None,
            family::INET => {
                let a: [u8; 4] = bytes.get(4..8)?.try_into().ok()?;
                Some(Endpoint::new(Address::V4(a), port_be()?))
            }
            family::INET6 => {
                let a: [u8; 16] = bytes.get(8..24)?.try_into().ok()?;
                Some(Endpoint::new(Address::from_v6(a), port_be()?))
            }
            family::HYPERV => {
                // SOCKADDR_HV: family, reserved, VmId, ServiceId.
                let vm = Guid::from_bytes_le(bytes.get(4..20)?.try_into().ok()?);
                let service = Guid::from_bytes_le(bytes.get(20..36)?.try_into().ok()?);
                Some(Endpoint::new(Address::HyperV { vm, service }, 0))
            }
            family::VSOCK => {
                // family, reserved, port (u32), cid (u32).
                let port = u32::from_le_bytes(bytes.get(4..8)?.try_into().ok()?);
                let cid = u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?);
                Some(Endpoint::new(Address::VSock { cid }, u16::try_from(port).unwrap_or(u16::MAX)))
            }
            family => Some(Endpoint::new(Address::Other { family }, 0)),
        }
    }

    /// Reads `a.b.c.d:port`, `[v6]:port`, `a.b.c.d` or `v6` (port 0 then).
    pub fn parse(text: &str) -> Option<Endpoint> {
        let text = text.trim();
        if let Some(rest) = text.strip_prefix('[') {
            let (addr, after) = rest.split_once(']')?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().ok()?,
                None if after.is_empty() => 0,
                None => return None,
            };
            return Some(Endpoint::new(Address::parse(addr)?, port));
        }
        if let Some(address) = Address::parse(text) {
            return Some(Endpoint::new(address, 0));
        }
        let (addr, port) = text.rsplit_once(':')?;
        // An IPv6 address without brackets has more colons: not a port.
        if addr.contains(':') {
            return None;
        }
        Some(Endpoint::new(Address::parse(addr)?, port.parse().ok()?))
    }

    /// An endpoint of the classic kernel events: IPv4 as a 32-bit field whose
    /// bytes are in network order, the port as a 16-bit field likewise.
    pub fn from_kernel_v4(address: u64, port: u64) -> Endpoint {
        let a = (address as u32).to_le_bytes();
        Endpoint::new(Address::V4(a), (port as u16).swap_bytes())
    }

    /// Unbound: no address and no port.
    pub fn is_empty(&self) -> bool {
        self.address.is_unspecified() && self.port == 0
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.address {
            Address::V6(_) => write!(f, "[{}]:{}", self.address, self.port),
            Address::HyperV { .. } | Address::Other { .. } => write!(f, "{}", self.address),
            _ => write!(f, "{}:{}", self.address, self.port),
        }
    }
}

/// Builds the SOCKADDR bytes of an endpoint, as Windows lays them out (for
/// tests and the synthesizer's callers).
pub fn sockaddr(endpoint: &Endpoint) -> Vec<u8> {
    let mut out = Vec::with_capacity(28);
    out.extend_from_slice(&endpoint.address.family().to_le_bytes());
    match endpoint.address {
        Address::V4(a) => {
            out.extend_from_slice(&endpoint.port.to_be_bytes());
            out.extend_from_slice(&a);
            out.extend_from_slice(&[0; 8]);
        }
        Address::V6(a) => {
            out.extend_from_slice(&endpoint.port.to_be_bytes());
            out.extend_from_slice(&[0; 4]);
            out.extend_from_slice(&a);
            out.extend_from_slice(&[0; 4]);
        }
        Address::HyperV { vm, service } => {
            out.extend_from_slice(&[0; 2]);
            out.extend_from_slice(&vm.to_bytes_le());
            out.extend_from_slice(&service.to_bytes_le());
        }
        Address::VSock { cid } => {
            out.extend_from_slice(&[0; 2]);
            out.extend_from_slice(&u32::from(endpoint.port).to_le_bytes());
            out.extend_from_slice(&cid.to_le_bytes());
            out.extend_from_slice(&[0; 4]);
        }
        Address::Other { .. } => out.extend_from_slice(&[0; 14]),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockaddrs_of_every_family() {
        let v4 = Endpoint::new(Address::V4([93, 184, 216, 34]), 443);
        assert_eq!(Endpoint::from_sockaddr(&sockaddr(&v4)), Some(v4));
        assert_eq!(v4.to_string(), "93.184.216.34:443");
        let v6 = Endpoint::new(Address::parse("2606:2800:220:1::1").unwrap(), 443);
        assert_eq!(Endpoint::from_sockaddr(&sockaddr(&v6)), Some(v6));
        assert_eq!(v6.to_string(), "[2606:2800:220:1::1]:443");
        let hv = Endpoint::new(
            Address::HyperV { vm: Guid::parse_const("11111111-2222-3333-4444-555555555555"), service: Guid::ZERO },
            0,
        );
        assert_eq!(Endpoint::from_sockaddr(&sockaddr(&hv)), Some(hv));
        let vs = Endpoint::new(Address::VSock { cid: 3 }, 50000);
        assert_eq!(Endpoint::from_sockaddr(&sockaddr(&vs)), Some(vs));
        assert_eq!(Endpoint::from_sockaddr(&[99, 0, 1, 2]), Some(Endpoint::new(Address::Other { family: 99 }, 0)));
        assert_eq!(Endpoint::from_sockaddr(&[2, 0, 1]), None);
        assert_eq!(Endpoint::from_sockaddr(&[0; 16]), None);
    }

    #[test]
    fn mapped_v4_is_v4_and_zones_are_dropped() {
        let mut mapped = [0u8; 16];
        mapped[10] = 0xff;
        mapped[11] = 0xff;
        mapped[12..].copy_from_slice(&[10, 1, 2, 3]);
        let e = Endpoint::from_sockaddr(&sockaddr(&Endpoint::new(Address::V6(mapped), 80))).unwrap();
        assert_eq!(e.address, Address::V4([10, 1, 2, 3]));
        assert_eq!(Address::parse("::ffff:10.1.2.3"), Some(Address::V4([10, 1, 2, 3])));
        assert_eq!(Address::parse("fe80::1%12"), Address::parse("fe80::1"));
    }

    #[test]
    fn text_endpoints() {
        assert_eq!(Endpoint::parse("10.0.0.5:443"), Some(Endpoint::new(Address::V4([10, 0, 0, 5]), 443)));
        assert_eq!(Endpoint::parse("[::1]:8080"), Some(Endpoint::new(Address::parse("::1").unwrap(), 8080)));
        assert_eq!(Endpoint::parse("2001:db8::5"), Some(Endpoint::new(Address::parse("2001:db8::5").unwrap(), 0)));
        assert_eq!(Endpoint::parse("example.com:443"), None);
    }

    #[test]
    fn kernel_fields_are_network_order() {
        // 192.168.1.10:443 as a little-endian read of network-order bytes.
        let e = Endpoint::from_kernel_v4(u32::from_le_bytes([192, 168, 1, 10]) as u64, 0xbb01);
        assert_eq!(e.to_string(), "192.168.1.10:443");
        assert_eq!(e.address.class(), Some("Private Network (C)"));
    }
}
