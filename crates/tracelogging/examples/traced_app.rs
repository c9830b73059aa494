//! A program that traces itself into ETW: its `tracing` spans become
//! Start/Stop events of the provider "Nettrail-TracedApp", beside the
//! kernel's network events of the same session.
//!
//! ```text
//! nettrail start --provider "*Nettrail-TracedApp"
//! cargo run -p nettrail-tracelogging --example traced_app -- http://example.com/
//! nettrail stop
//! ```
//!
//! Without a URL it makes no request and only simulates the steps. The
//! request is plain HTTP/1.1 over `std::net::TcpStream` (no TLS).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use tracing::{debug, error, info, info_span, warn};
use tracing_subscriber::layer::SubscriberExt;

const PROVIDER: &str = "Nettrail-TracedApp";

/// `http://host[:port][/path]` as (host, port, path).
fn parse_url(url: &str) -> Option<(String, u16, String)> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().ok()?),
        None => (authority, 80),
    };
    (!host.is_empty()).then(|| (host.to_string(), port, path.to_string()))
}

fn fetch(url: &str) -> std::io::Result<u64> {
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidInput, "expected http://host[:port]/path");
    let (host, port, path) = parse_url(url).ok_or_else(bad)?;
    let span = info_span!("fetch", url, status = tracing::field::Empty, bytes = tracing::field::Empty);
    let _fetch = span.enter();
    let addrs: Vec<_> =
        info_span!("resolve", host = host.as_str()).in_scope(|| (host.as_str(), port).to_socket_addrs())?.collect();
    debug!(addresses = addrs.len() as u64, first = ?addrs.first(), "resolved");
    let mut stream = info_span!("connect", port = u64::from(port))
        .in_scope(|| TcpStream::connect_timeout(addrs.first().ok_or_else(bad)?, Duration::from_secs(10)))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nUser-Agent: traced_app\r\n\r\n");
    info_span!("send", bytes = request.len() as u64).in_scope(|| stream.write_all(request.as_bytes()))?;
    let mut response = Vec::new();
    info_span!("receive").in_scope(|| stream.read_to_end(&mut response))?;
    let status_line =
        String::from_utf8_lossy(response.split(|&b| b == b'\n').next().unwrap_or_default()).trim().to_string();
    let status = status_line.split(' ').nth(1).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    span.record("status", status);
    span.record("bytes", response.len() as u64);
    if status >= 400 {
        warn!(status, line = status_line.as_str(), "server said no");
    }
    Ok(response.len() as u64)
}

fn main() {
    let etw = nettrail_tracelogging::layer(PROVIDER);
    println!("ETW provider {} {{{}}}", etw.provider().name(), etw.provider().guid());
    if !etw.sink().is_registered() {
        println!(
            "(no ETW here: the spans go nowhere; on Windows, record them with `nettrail start --provider *{PROVIDER}`)"
        );
    }
    if tracing::subscriber::set_global_default(tracing_subscriber::registry().with(etw)).is_err() {
        eprintln!("a tracing subscriber was already set");
    }

    let url = std::env::args().nth(1);
    let feed = info_span!("sync_feed", feed = "example", url = url.as_deref().unwrap_or("(none)"));
    let _feed = feed.enter();
    match &url {
        Some(url) => match fetch(url) {
            Ok(bytes) => {
                info!(bytes, "fetched");
                println!("fetched {bytes} bytes from {url}");
            }
            Err(e) => {
                error!(error = &e as &dyn std::error::Error, "fetch failed");
                eprintln!("fetch failed: {e}");
            }
        },
        None => {
            for step in ["parse", "store"] {
                info_span!("step", name = step).in_scope(|| std::thread::sleep(Duration::from_millis(20)));
            }
            info!(items = 0u64, "nothing to fetch: give a URL such as http://example.com/");
        }
    }
}
