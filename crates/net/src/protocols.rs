//! The HTTP version of WinINet and WinHTTP rows, where an event says it:
//! the response's status line (`HTTP/1.1 200 OK`, `HTTP/2 200`, `HTTP/2.0
//! 200`, `HTTP/3 200`), or a WinHTTP request carried by a UDP flow (which can
//! only be HTTP/3 over QUIC; its service is then QUIC's). Rows whose events
//! say nothing keep the URL's scheme. Chromium rows name their version themselves (NetLog's
//! transaction events).

use crate::model::Network;
use crate::report::{Layer, RequestRow};
use crate::transport::Transport;

/// `HTTP/1.1`, `HTTP/2`, `HTTP/3` from a status line's first word.
pub(crate) fn version(status: &str) -> Option<&'static str> {
    let word = status.split_whitespace().next()?;
    Some(match word {
        "HTTP/1.0" => "HTTP/1.0",
        "HTTP/1.1" => "HTTP/1.1",
        "HTTP/2" | "HTTP/2.0" => "HTTP/2",
        "HTTP/3" | "HTTP/3.0" => "HTTP/3",
        _ => return None,
    })
}

pub(crate) fn label(net: &Network, rows: &mut [RequestRow]) {
    for r in rows.iter_mut().filter(|r| matches!(r.layer, Layer::WinInet | Layer::WinHttp)) {
        let over_udp = r.layer == Layer::WinHttp
            && r.connection.is_some_and(|c| net.connections.get(c).transport == Transport::Udp);
        let said = r.status.as_deref().and_then(version).or(over_udp.then_some("HTTP/3"));
        if let Some(v) = said {
            r.protocol = Some(v.to_string());
        }
        // Its port's service is UDP's (QUIC), as for any row over a UDP flow.
        if over_udp {
            r.service = r.port.and_then(crate::services::udp).map(str::to_string);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions_of_status_lines() {
        assert_eq!(super::version("HTTP/1.1 200 OK (from cache)"), Some("HTTP/1.1"));
        assert_eq!(super::version("HTTP/2.0 200"), Some("HTTP/2"));
        assert_eq!(super::version("HTTP/3 204"), Some("HTTP/3"));
        assert_eq!(super::version("redirected"), None);
        assert_eq!(super::version("from cache"), None);
    }
}
