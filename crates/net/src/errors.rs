//! Names of the error codes network events carry: NTSTATUS (TCPIP, AFD),
//! WinHTTP errors (WebIO), Win32/Winsock and DNS errors (name resolution).

/// An NTSTATUS as `0xC0000236 (STATUS_CONNECTION_REFUSED)`.
pub fn ntstatus(code: u32) -> String {
    let name = match code {
        0xC000_0022 => Some("STATUS_ACCESS_DENIED"),
        0xC000_00B5 => Some("STATUS_IO_TIMEOUT"),
        0xC000_0120 => Some("STATUS_CANCELLED"),
        0xC000_0207 => Some("STATUS_INVALID_ADDRESS_COMPONENT"),
        0xC000_020C => Some("STATUS_CONNECTION_DISCONNECTED"),
        0xC000_020D => Some("STATUS_CONNECTION_RESET"),
        0xC000_0236 => Some("STATUS_CONNECTION_REFUSED"),
        0xC000_0237 => Some("STATUS_GRACEFUL_DISCONNECT"),
        0xC000_023A => Some("STATUS_CONNECTION_INVALID"),
        0xC000_023B => Some("STATUS_CONNECTION_ACTIVE"),
        0xC000_023C => Some("STATUS_NETWORK_UNREACHABLE"),
        0xC000_023D => Some("STATUS_HOST_UNREACHABLE"),
        0xC000_023E => Some("STATUS_PROTOCOL_UNREACHABLE"),
        0xC000_023F => Some("STATUS_PORT_UNREACHABLE"),
        0xC000_0241 => Some("STATUS_CONNECTION_ABORTED"),
        0xC000_0242 => Some("STATUS_RETRY"),
        0xC000_0010 => Some("STATUS_INVALID_DEVICE_REQUEST"),
        0x0000_0103 => Some("STATUS_PENDING"),
        _ => None,
    };
    match name {
        Some(n) => format!("0x{code:08X} ({n})"),
        None => format!("0x{code:08X}"),
    }
}

/// A WinHTTP error as `12029 (ERROR_WINHTTP_CANNOT_CONNECT)`; other Win32 codes by number.
pub fn winhttp(code: u32) -> String {
    let name = match code {
        12002 => Some("ERROR_WINHTTP_TIMEOUT"),
        12004 => Some("ERROR_WINHTTP_INTERNAL_ERROR"),
        12005 => Some("ERROR_WINHTTP_INVALID_URL"),
        12007 => Some("ERROR_WINHTTP_NAME_NOT_RESOLVED"),
        12017 => Some("ERROR_WINHTTP_OPERATION_CANCELLED"),
        12029 => Some("ERROR_WINHTTP_CANNOT_CONNECT"),
        12030 => Some("ERROR_WINHTTP_CONNECTION_ERROR"),
        12032 => Some("ERROR_WINHTTP_RESEND_REQUEST"),
        12044 => Some("ERROR_WINHTTP_CLIENT_AUTH_CERT_NEEDED"),
        12152 => Some("ERROR_WINHTTP_INVALID_SERVER_RESPONSE"),
        12175 => Some("ERROR_WINHTTP_SECURE_FAILURE"),
        12180 => Some("ERROR_WINHTTP_AUTODETECTION_FAILED"),
        997 => Some("ERROR_IO_PENDING"),
        1225 => Some("ERROR_CONNECTION_REFUSED"),
        1460 => Some("ERROR_TIMEOUT"),
        _ => None,
    };
    match name {
        Some(n) => format!("{code} ({n})"),
        None if code > 0xFFFF => ntstatus(code),
        None => code.to_string(),
    }
}

/// A name-resolution status (DNS and Winsock codes).
pub fn dns(code: u32) -> String {
    let name = match code {
        0 => return "0".to_string(),
        9002 => Some("DNS_ERROR_RCODE_SERVER_FAILURE"),
        9003 => Some("DNS_ERROR_RCODE_NAME_ERROR"),
        9501 => Some("DNS_INFO_NO_RECORDS"),
        9560 => Some("DNS_ERROR_INVALID_NAME_CHAR"),
        9701 => Some("DNS_ERROR_RECORD_DOES_NOT_EXIST"),
        1460 => Some("ERROR_TIMEOUT"),
        1214 => Some("ERROR_INVALID_NETNAME"),
        11001 => Some("WSAHOST_NOT_FOUND"),
        11002 => Some("WSATRY_AGAIN"),
        11004 => Some("WSANO_DATA"),
        87 => Some("ERROR_INVALID_PARAMETER"),
        _ => None,
    };
    match name {
        Some(n) => format!("{code} ({n})"),
        None => code.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names() {
        assert_eq!(super::ntstatus(0xC0000236), "0xC0000236 (STATUS_CONNECTION_REFUSED)");
        assert_eq!(super::winhttp(12029), "12029 (ERROR_WINHTTP_CANNOT_CONNECT)");
        assert_eq!(super::dns(9003), "9003 (DNS_ERROR_RCODE_NAME_ERROR)");
        assert_eq!(super::ntstatus(0x1234), "0x00001234");
    }
}
