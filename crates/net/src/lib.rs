//! Network activity from ETW events: which process and thread talked to
//! which server, for which URL, with which method, how many bytes, when and
//! for how long.
//!
//! [`analyze`] makes one pass over a trace and builds a [`Network`]: every
//! layer's records (TCP and UDP in [`transport`], sockets in [`winsock`],
//! names in [`dns`], WinINet, WinHTTP/WebIO, URLMon, Http.sys and LDAP requests in
//! their provider modules), each built from its providers' events as they
//! come, in time order. [`Network::report`] joins the layers into tables:
//! requests (one row per request or connection at its highest layer),
//! connections, DNS lookups and server requests.
//!
//! ```no_run
//! let file = nettrail_etl::TraceFile::open("trace.etl")?;
//! let trace = nettrail_etl::Trace::open(&file)?;
//! let mut schemas = nettrail_decode::Schemas::new();
//! schemas.learn(&trace);
//! let analysis = nettrail_net::analyze(&trace, &schemas, &mut |_| {});
//! let report = analysis.network.report();
//! for row in &report.requests {
//!     println!("{:?} {} {:?} {:?}", row.process, row.layer.name(), row.url, row.bytes_received);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod address;
mod analyze;
pub mod dns;
pub mod errors;
pub mod event;
pub mod http;
mod live;
mod model;
pub mod pools;
pub mod processes;
mod protocols;
mod providers;
pub mod report;
pub mod services;
pub mod stitch;
pub mod transport;
pub mod winsock;

pub use analyze::{Analysis, analyze};
pub use live::Live;
pub use model::{Activities, Activity, Network};
pub use providers::chromium::{BROWSERS, BrowserRow, Chromium, NETLOG_KEYWORD};
pub use providers::httpsys::{HttpServer, ServerRequest};
pub use providers::ldap::{Ldap, Operation};
pub use providers::netlog::{NETLOG_EVENTS, net_error as chromium_net_error};
pub use providers::quic::{Quic, QuicConnection, QuicFacts};
pub use providers::urlmon::{UrlMon, UrlRequest};
pub use providers::webio::WebIo;
pub use providers::wininet::WinInet;
pub use providers::{names_processes, reads};
pub use report::{ConnectionRow, DnsRow, Layer, Report, RequestRow, ServerRow};
pub use stitch::{ChainStack, Stitched};
pub use transport::Direction;
