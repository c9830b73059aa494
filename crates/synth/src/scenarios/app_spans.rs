//! An app that traces itself: its `tracing` spans, written by
//! nettrail-tracelogging as TraceLogging Start/Stop events of its own
//! provider, on the threads that make its requests.

use nettrail_etl::Guid;
use nettrail_tracelogging::{EncodedEvent, FieldValue, Provider, descriptor, level, opcode};

use crate::SynthError;
use crate::windows::{Answer, Dial, Exchange, Lookup, Machine, WebThreads};

use super::{DNSCACHE, app, ip, machine, sa};

/// The example app's provider (crates/tracelogging/examples/traced_app.rs).
pub const APP_PROVIDER: &str = "Nettrail-TracedApp";

/// A span's edge as the layer writes it: Start with the span's fields and
/// its parent's activity as related id, Stop with none.
fn edge(
    m: &mut Machine,
    at: f64,
    thread: (u32, u32),
    name: &str,
    (activity, parent): (u32, Option<u32>),
    fields: &[(&str, FieldValue)],
    start: bool,
) -> Result<(), SynthError> {
    let provider = Provider::new(APP_PROVIDER);
    let mut e = EncodedEvent::new(&provider, name, fields)?;
    e.descriptor = descriptor(level::INFORMATION, if start { opcode::START } else { opcode::STOP });
    let id = |n: u32| Guid { data1: n, data2: 0x5eed, data3: 0x4000, data4: [0x80, 0, 0, 0, 0, 0, 0, 1] };
    e.activity_id = Some(id(activity));
    e.related_activity_id = parent.filter(|_| start).map(id);
    m.synth().tracelogging(at, thread, &e)?;
    Ok(())
}

/// `feedsync.exe` runs `sync_feed{feed="news"}`, inside it
/// `fetch{url=…}`, which GETs `https://feeds.example.org/news.xml` with
/// WinHTTP on the same thread; after both spans end, the same thread GETs
/// `https://feeds.example.org/ping` outside any span.
pub fn app_spans() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 7300, "feedsync.exe", r#""C:\Tools\feedsync.exe" --feed news"#)?;
    let th = WebThreads { app: (pid, 7304), worker: (pid, 7348), io: (pid, 7352) };
    let s = m.winhttp_open(90.0, th.app)?;
    let url = "https://feeds.example.org/news.xml";
    edge(&mut m, 99.0, th.app, "sync_feed", (1, None), &[("feed", "news".into())], true)?;
    edge(&mut m, 100.0, th.app, "fetch", (2, Some(1)), &[("url", url.into())], true)?;
    let addresses = [ip("203.0.113.80")];
    let lookup = Lookup::answered("feeds.example.org", Answer { cnames: &[], addresses: &addresses }).cached();
    let dial = Dial::new(sa("203.0.113.80:443")).rtt(18.0);
    let x = Exchange::new("GET", "feeds.example.org", "/news.xml", "HTTP/1.1 200 OK", 48_210);
    let (r, mut c, t) =
        m.winhttp_fetch(100.5, th, &s, ("GET", url, "feeds.example.org"), (&[lookup], DNSCACHE), &dial, &x)?;
    edge(&mut m, t + 1.0, th.app, "fetch", (2, Some(1)), &[], false)?;
    edge(&mut m, t + 2.0, th.app, "sync_feed", (1, None), &[], false)?;
    let x = Exchange::new("GET", "feeds.example.org", "/ping", "HTTP/1.1 204 No Content", 0);
    let (_, t) = m.winhttp_fetch_on(t + 10.0, th, &s, ("GET", "https://feeds.example.org/ping"), &mut c, &x)?;
    let t = m.winhttp_close_socket(t + 5.0, th.app, &r, &c)?;
    m.winhttp_close_session(t + 0.1, th.app, &s)?;
    m.finish()
}
