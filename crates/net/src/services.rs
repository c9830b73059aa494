//! Service names for well-known ports, so a socket-level row still says what
//! it was for ("HTTPS", "DNS", "LDAP").

/// The service usually behind a remote TCP port.
pub fn tcp(port: u16) -> Option<&'static str> {
    Some(match port {
        20 | 21 => "FTP",
        22 => "SSH",
        23 => "Telnet",
        25 | 587 => "SMTP",
        53 => "DNS",
        80 | 8080 | 8081 => "HTTP",
        88 => "Kerberos",
        110 => "POP3",
        119 => "NNTP",
        135 => "RPC",
        139 => "NetBIOS",
        143 => "IMAP",
        389 => "LDAP",
        443 | 8443 => "HTTPS",
        445 => "SMB",
        465 => "SMTPS",
        554 => "RTSP",
        563 => "NNTPS",
        636 => "LDAPS",
        853 => "DNS over TLS",
        989 | 990 => "FTPS",
        993 => "IMAPS",
        995 => "POP3S",
        1433 => "MSSQL",
        1723 => "PPTP",
        2869 | 5000 => "UPnP",
        3268 => "LDAP GC",
        3269 => "LDAPS GC",
        3389 => "RDP",
        5985 => "WinRM",
        5986 => "WinRM HTTPS",
        7680 => "Delivery Optimization",
        8888 => "HTTP",
        _ => return None,
    })
}

/// The service usually behind a remote UDP port.
pub fn udp(port: u16) -> Option<&'static str> {
    Some(match port {
        53 => "DNS",
        67 | 68 => "DHCP",
        69 => "TFTP",
        88 => "Kerberos",
        123 => "NTP",
        137 => "NetBIOS",
        138 => "NetBIOS datagram",
        161 | 162 => "SNMP",
        389 => "CLDAP",
        443 => "QUIC",
        500 | 4500 => "IPsec",
        546 | 547 => "DHCPv6",
        1900 => "SSDP",
        3478 => "STUN",
        3702 => "WS-Discovery",
        5353 => "mDNS",
        5355 => "LLMNR",
        _ => return None,
    })
}

/// Ports whose traffic is LDAP (directory lookups), over either transport.
pub fn is_ldap(port: u16) -> bool {
    matches!(port, 389 | 636 | 3268 | 3269)
}

#[cfg(test)]
mod tests {
    #[test]
    fn names() {
        assert_eq!(super::tcp(443), Some("HTTPS"));
        assert_eq!(super::udp(443), Some("QUIC"));
        assert_eq!(super::udp(53), Some("DNS"));
        assert_eq!(super::tcp(50000), None);
        assert!(super::is_ldap(3268));
    }
}
