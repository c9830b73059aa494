//! WinINet as Microsoft-Windows-WinINet logs a request: HttpOpenRequest
//! (104, with the caller's stack, then 108 with the server), HttpSendRequest
//! (200, 1007 with the URL and stack), the lookup (304, 305 or 307 from its
//! own cache, with DNS-Client's events in between sharing the activity), the
//! connect (1045, AFD and TCPIP, 1046 with the addresses, 301), the request
//! sent (1031 head, 1033 body), the status (1008), reads (1037; 1064 for
//! HTTP/2 streams, whose 1037 carries Request 0), redirects (1049), cache
//! hits (1017) and the handle's close (105).
//!
//! Handles are the small values of WinINet's handle table (0x00cc0004, …).
//! Every event of a request carries its activity id: the first 8 bytes are
//! derived from the request handle and a per-process counter (a choice of
//! derivation; that they key the request is the fact), the rest is per process.

use std::net::SocketAddr;

use nettrail_etl::Guid;

use crate::fields;
use crate::value::Val;

use super::{Dial, Lookup, Machine, TcpConn, Tid, activity, spec};

const PROVIDER: &str = "Microsoft-Windows-WinINet";

/// A WinINet request handle and what its events carry.
#[derive(Clone, Debug)]
pub struct InetRequest {
    pub handle: u64,
    /// The InternetConnect handle it was opened under.
    pub connect_handle: u64,
    pub server: String,
    pub port: u16,
    pub activity: Guid,
    context: u64,
}

impl Machine {
    fn inet(&mut self, id: u16, at: f64, th: Tid, r: &InetRequest, f: crate::Fields) -> Result<(), crate::SynthError> {
        self.user(spec(PROVIDER, id, at, th, f).activity(r.activity))
    }

    /// A WinINet handle value of the handle table.
    pub fn wininet_handle(&mut self) -> u64 {
        0x00cc_0000 + (self.handle() & 0xfffc)
    }

    /// HttpOpenRequest: 104 (with the stack) and 108 (server details).
    pub fn wininet_open_request(
        &mut self,
        at: f64,
        th: Tid,
        connect_handle: u64,
        (verb, path): (&str, &str),
        (server, port): (&str, u16),
    ) -> Result<InetRequest, crate::SynthError> {
        let handle = self.wininet_handle();
        let counter = self.handle();
        let r = InetRequest {
            handle,
            connect_handle,
            server: server.to_string(),
            port,
            activity: activity((counter << 32) | handle, 0x6a1d_0000_0000_0000 | u64::from(th.0)),
            // The app's context value: a pointer of the app's width.
            context: if self.pointer_size(th.0) == 4 { 0x2000_0000 | handle } else { 0x0000_7ff6_2000_0000 | handle },
        };
        let secure = if port == 443 { 0x0080_0000u32 } else { 0 };
        let f = fields![
            ("ConnectionHandle", Val::Ptr(handle)),
            ("ParentHandle", Val::Ptr(connect_handle)),
            ("Verb", verb),
            ("ObjectName", path),
            ("Version", "HTTP/1.1"),
            ("Referrer", ""),
            ("AcceptTypes", "*/*"),
            ("Flags", 0x8440_0000u32 | secure),
        ];
        let stack = self.user_stack(th.0, "wininet.dll", 0x3_1e70)?;
        self.user(spec(PROVIDER, 104, at, th, f).activity(r.activity).stack(&stack))?;
        let f = fields![
            ("ConnectionHandle", Val::Ptr(handle)),
            ("ServerName", server),
            ("ServerPort", u32::from(port)),
            ("Service", "HTTP"),
        ];
        self.inet(108, at + 0.01, th, &r, f)?;
        Ok(r)
    }

    /// HttpSendRequest starts: 200 (handle, context) and 1007 (the URL, with the stack).
    pub fn wininet_send_request(
        &mut self,
        at: f64,
        th: Tid,
        r: &InetRequest,
        url: &str,
    ) -> Result<(), crate::SynthError> {
        let f = fields![("HINTERNET", Val::Ptr(r.handle)), ("Context", r.context)];
        self.inet(200, at, th, r, f)?;
        let f = fields![("Request", Val::Ptr(r.handle)), ("AddressName", url)];
        let stack = self.user_stack(th.0, "wininet.dll", 0x3_4410)?;
        self.user(spec(PROVIDER, 1007, at + 0.01, th, f).activity(r.activity).stack(&stack))
    }

    /// The lookup: 304, DNS-Client's events (sharing the activity) unless
    /// WinINet's own cache answers, then 305 (307 from its cache) with the
    /// addresses as `ip:port;` (a choice: the list's exact form is not documented).
    pub fn wininet_resolve(
        &mut self,
        at: f64,
        th: Tid,
        r: &InetRequest,
        lookups: &[Lookup<'_>],
        dnscache: Option<Tid>,
    ) -> Result<f64, crate::SynthError> {
        let f = fields![("HostName", r.server.as_str()), ("RequestHandle", Val::Ptr(r.handle))];
        self.inet(304, at, th, r, f)?;
        let mut t = at + 0.05;
        let mut list = String::new();
        for l in lookups {
            if let Some(dnscache) = dnscache {
                t = self.resolve(t, th, r.activity, l, dnscache)? + 0.05;
            }
            for a in l.answer.addresses {
                list.push_str(&format!("{};", SocketAddr::new(*a, r.port)));
            }
        }
        let f = fields![("HostName", r.server.as_str()), ("RequestHandle", Val::Ptr(r.handle)), ("AddressList", list)];
        self.inet(if dnscache.is_some() { 305 } else { 307 }, t, th, r, f)?;
        Ok(t)
    }

    /// The connect on `th`: 1045, a new TCP connection (TLS handshake for
    /// HTTPS), 1046 with its socket and addresses, 301.
    pub fn wininet_connect(
        &mut self,
        at: f64,
        th: Tid,
        r: &InetRequest,
        dial: &Dial,
    ) -> Result<(TcpConn, f64), crate::SynthError> {
        self.inet(1045, at, th, r, fields![("Request", Val::Ptr(r.handle))])?;
        let mut c = self.tcp_connect(at + 0.05, th, dial)?;
        let mut t = at + 0.05 + dial.rtt + 0.1;
        let socket = self.handle();
        let f = fields![
            ("Request", Val::Ptr(r.handle)),
            ("Socket", socket as u32),
            ("Protocol", 6u32),
            ("LocalAddress", super::sockaddr(c.tcb.local)),
            ("RemoteAddress", super::sockaddr(c.tcb.remote)),
        ];
        self.inet(1046, t, th, r, f)?;
        let f = fields![
            ("ServerName", r.server.as_str()),
            ("ConnectionHandle", Val::Ptr(r.connect_handle)),
            ("SocketHandle", Val::Ptr(socket)),
            ("LocalPort", u32::from(c.tcb.local.port())),
        ];
        self.inet(301, t + 0.01, th, r, f)?;
        if r.port == 443 {
            t = self.tls_handshake(t + 0.05, th, &mut c, th)?;
        }
        Ok((c, t))
    }

    /// The connect phase when a kept-alive connection is reused: 1045 and
    /// 1046 with socket 0 and no addresses.
    pub fn wininet_reuse_connection(&mut self, at: f64, th: Tid, r: &InetRequest) -> Result<(), crate::SynthError> {
        self.inet(1045, at, th, r, fields![("Request", Val::Ptr(r.handle))])?;
        self.inet(
            1046,
            at + 0.02,
            th,
            r,
            fields![("Request", Val::Ptr(r.handle)), ("Socket", 0u32), ("Protocol", 6u32)],
        )
    }

    /// The request goes out: 1031 (head) and 1033 (body, when there is one),
    /// and the socket's send of it all (`tls` adds a record's overhead).
    pub fn wininet_send(
        &mut self,
        at: f64,
        th: Tid,
        r: &InetRequest,
        c: &mut TcpConn,
        (head, body): (u32, u32),
    ) -> Result<f64, crate::SynthError> {
        self.inet(1031, at, th, r, fields![("Request", Val::Ptr(r.handle)), ("Size", head)])?;
        if body > 0 {
            self.inet(1033, at + 0.01, th, r, fields![("Request", Val::Ptr(r.handle)), ("Size", body)])?;
        }
        let overhead = if r.port == 443 { 22 } else { 0 };
        self.tcp_send(at + 0.02, th, c, head + body + overhead)
    }

    /// The response's head arrives and HttpSendRequest ends (1008, status line).
    pub fn wininet_send_done(
        &mut self,
        at: f64,
        th: Tid,
        r: &InetRequest,
        c: Option<&mut TcpConn>,
        (status_line, head): (&str, u32),
    ) -> Result<f64, crate::SynthError> {
        let mut t = at;
        if let Some(c) = c {
            let overhead = if r.port == 443 { 22 } else { 0 };
            t = self.tcp_receive(at, c, head + overhead, th)? + 0.05;
        }
        let f = fields![("Request", Val::Ptr(r.handle)), ("StatusLine", status_line)];
        self.inet(1008, t, th, r, f)?;
        Ok(t)
    }

    /// InternetReadFile: 1037 with the bytes read (the socket's receive
    /// first when they come from the network).
    pub fn wininet_read(
        &mut self,
        at: f64,
        th: Tid,
        r: &InetRequest,
        c: Option<&mut TcpConn>,
        bytes: u32,
    ) -> Result<f64, crate::SynthError> {
        let mut t = at;
        if let Some(c) = c {
            let overhead = if r.port == 443 { 22 } else { 0 };
            t = self.tcp_receive(at, c, bytes + overhead, th)? + 0.05;
        }
        self.inet(1037, t, th, r, fields![("Request", Val::Ptr(r.handle)), ("Size", bytes)])?;
        Ok(t)
    }

    /// HTTP/2 data on a stream: 1064 with the stream's bytes, then the read's
    /// 1037 with Request 0 (as WinINet logs HTTP/2 reads).
    pub fn wininet_stream_data(
        &mut self,
        at: f64,
        th: Tid,
        r: &InetRequest,
        c: &mut TcpConn,
        (stream, bytes): (u32, u32),
    ) -> Result<f64, crate::SynthError> {
        // HTTP/2 frame header (9) and a TLS record per frame.
        let t = self.tcp_receive(at, c, bytes + 9 + 22, th)? + 0.05;
        let f = fields![("RequestHandle", Val::Ptr(r.handle)), ("StreamId", stream), ("Size", bytes), ("Headers", 0u8)];
        self.inet(1064, t, th, r, f)?;
        self.inet(1037, t + 0.02, th, r, fields![("Request", Val::Ptr(0)), ("Size", bytes)])?;
        Ok(t + 0.02)
    }

    /// PreNet_CacheHit (1017): the response comes from the WinINet cache.
    pub fn wininet_cache_hit(&mut self, at: f64, th: Tid, r: &InetRequest) -> Result<(), crate::SynthError> {
        self.inet(1017, at, th, r, fields![("Request", Val::Ptr(r.handle))])
    }

    /// Wininet_Redirect (1049): WinINet follows the response's Location.
    pub fn wininet_redirect(&mut self, at: f64, th: Tid, r: &InetRequest, url: &str) -> Result<(), crate::SynthError> {
        self.inet(1049, at, th, r, fields![("Request", Val::Ptr(r.handle)), ("AddressName", url)])
    }

    /// InternetCloseHandle of the request (105).
    pub fn wininet_close(&mut self, at: f64, th: Tid, r: &InetRequest) -> Result<(), crate::SynthError> {
        self.inet(105, at, th, r, fields![("HINTERNET", Val::Ptr(r.handle))])
    }
}
