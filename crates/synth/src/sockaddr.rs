//! The address structures Windows logs as `win:SocketAddress` binary
//! (ws2def.h, ws2ipdef.h, hvsocket.h), and SIDs from their text form.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use nettrail_etl::Guid;

/// Address families, as ws2def.h and hvsocket.h number them.
pub mod family {
    pub const INET: u16 = 2;
    pub const INET6: u16 = 23;
    pub const HYPERV: u16 = 34;
    pub const VSOCK: u16 = 40;
}

/// SOCKADDR_IN (16 bytes): family (little-endian), port (big-endian), the
/// four address bytes, eight zero bytes.
pub fn sockaddr_in(address: Ipv4Addr, port: u16) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..2].copy_from_slice(&family::INET.to_le_bytes());
    b[2..4].copy_from_slice(&port.to_be_bytes());
    b[4..8].copy_from_slice(&address.octets());
    b
}

/// SOCKADDR_IN6 (28 bytes): family, port (big-endian), flow info (network
/// order, as the wire carries it), the 16 address bytes, scope id (host order).
pub fn sockaddr_in6(address: Ipv6Addr, port: u16, flow_info: u32, scope_id: u32) -> [u8; 28] {
    let mut b = [0u8; 28];
    b[0..2].copy_from_slice(&family::INET6.to_le_bytes());
    b[2..4].copy_from_slice(&port.to_be_bytes());
    b[4..8].copy_from_slice(&flow_info.to_be_bytes());
    b[8..24].copy_from_slice(&address.octets());
    b[24..28].copy_from_slice(&scope_id.to_le_bytes());
    b
}

/// SOCKADDR_IN or SOCKADDR_IN6 bytes for a socket address.
pub fn sockaddr(address: SocketAddr) -> Vec<u8> {
    match address {
        SocketAddr::V4(a) => sockaddr_in(*a.ip(), a.port()).to_vec(),
        SocketAddr::V6(a) => sockaddr_in6(*a.ip(), a.port(), a.flowinfo(), a.scope_id()).to_vec(),
    }
}

/// SOCKADDR_HV (36 bytes, Hyper-V sockets): family, a reserved u16, the VM id
/// and the service id (GUIDs in Windows byte order).
pub fn sockaddr_hv(vm_id: Guid, service_id: Guid) -> [u8; 36] {
    let mut b = [0u8; 36];
    b[0..2].copy_from_slice(&family::HYPERV.to_le_bytes());
    b[4..20].copy_from_slice(&vm_id.to_bytes_le());
    b[20..36].copy_from_slice(&service_id.to_bytes_le());
    b
}

/// SOCKADDR_VM (16 bytes, VSock): family, a reserved u16, port (u32), context
/// id (u32), four zero bytes.
pub fn sockaddr_vsock(cid: u32, port: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..2].copy_from_slice(&family::VSOCK.to_le_bytes());
    b[4..8].copy_from_slice(&port.to_le_bytes());
    b[8..12].copy_from_slice(&cid.to_le_bytes());
    b
}

/// The binary form of a SID written as `S-1-5-21-…`: revision, sub-authority
/// count, the 48-bit authority (big-endian), the sub-authorities (little-endian).
pub fn sid(text: &str) -> Option<Vec<u8>> {
    let mut parts = text.strip_prefix("S-")?.split('-');
    let revision: u8 = parts.next()?.parse().ok()?;
    let authority: u64 = parts.next()?.parse().ok()?;
    if authority >= 1 << 48 {
        return None;
    }
    let subs: Vec<u32> = parts.map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let count = u8::try_from(subs.len()).ok().filter(|&n| n <= 15)?;
    let mut b = vec![revision, count];
    b.extend_from_slice(&authority.to_be_bytes()[2..]);
    for s in subs {
        b.extend_from_slice(&s.to_le_bytes());
    }
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_windows_structures() {
        let v4 = sockaddr_in(Ipv4Addr::new(10, 0, 0, 1), 443);
        assert_eq!(v4, [2, 0, 0x01, 0xBB, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
        let v6 = sockaddr("[2001:db8::1%7]:80".parse().unwrap());
        assert_eq!(v6.len(), 28);
        assert_eq!(&v6[0..4], &[23, 0, 0, 80]);
        assert_eq!(&v6[8..10], &[0x20, 0x01]);
        assert_eq!(&v6[24..28], &7u32.to_le_bytes());
        let g = Guid::parse_const("00112233-4455-6677-8899-aabbccddeeff");
        let hv = sockaddr_hv(g, Guid::ZERO);
        assert_eq!(&hv[0..6], &[34, 0, 0, 0, 0x33, 0x22]);
        assert_eq!(sockaddr_vsock(3, 1024)[..12], [40, 0, 0, 0, 0, 4, 0, 0, 3, 0, 0, 0]);
    }

    #[test]
    fn sids_from_text() {
        assert_eq!(sid("S-1-5-18").unwrap(), [1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0]);
        let user = sid("S-1-5-21-1-2-3-1001").unwrap();
        assert_eq!((user.len(), user[1]), (28, 5));
        assert_eq!(sid("S-1-x"), None);
        assert_eq!(sid("1-5-18"), None);
    }
}
