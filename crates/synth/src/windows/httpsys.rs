//! Http.sys (Microsoft-Windows-HttpService) serving a request, in the order
//! and on the threads of the corpus' real server trace (`tx__HTTP_Server.etl`):
//! the connection is created in DPC context (21); System's thread assigns the
//! connection id (22), receives (1), parses (2) and delivers (3) the request
//! to the queue; the worker process's thread passes the response (4), marks
//! it the last (5) and Http.sys readies it for sending (10).
//!
//! Activity ids as in that trace: the connection's events share one; a
//! request's carry its id (low 32 bits, then bits 32–47 and 48–63) followed
//! by 8 bytes fixed for the boot; event 5 has those 8 bytes zero.

use std::net::SocketAddr;

use nettrail_etl::Guid;

use crate::fields;
use crate::value::Val;

use super::{DPC, Machine, Tid, guid, spec};

const PROVIDER: &str = "Microsoft-Windows-HttpService";

/// The boot's constant in request activity ids.
const BOOT_TAG: [u8; 8] = [0xb6, 0x3f, 0x84, 0x71, 0x0c, 0x79, 0x67, 0xbb];
/// HTTP_VERB values (http.h).
const VERBS: [(&str, u32); 4] = [("GET", 4), ("HEAD", 5), ("POST", 6), ("PUT", 7)];

/// A request Http.sys serves and the answer the application gives it.
#[derive(Clone, Debug)]
pub struct ServerRequest<'a> {
    pub verb: &'a str,
    pub url: &'a str,
    pub status: u16,
    /// The request queue (the application pool) and the site.
    pub queue: &'a str,
    pub site: u32,
}

fn request_activity(request_id: u64, tag: [u8; 8]) -> Guid {
    let mut b = [0u8; 16];
    b[..4].copy_from_slice(&(request_id as u32).to_le_bytes());
    b[4..6].copy_from_slice(&((request_id >> 32) as u16).to_le_bytes());
    b[6..8].copy_from_slice(&((request_id >> 48) as u16).to_le_bytes());
    b[8..].copy_from_slice(&tag);
    guid(b)
}

impl Machine {
    /// A client's connection reaches Http.sys (21, DPC); returns the
    /// connection object and the activity of its events.
    pub fn httpsys_connection(
        &mut self,
        at: f64,
        local: SocketAddr,
        remote: SocketAddr,
    ) -> Result<(u64, Guid), crate::SynthError> {
        let object = self.pool();
        let mut b = [0u8; 16];
        b[..4].copy_from_slice(&0x100u32.to_le_bytes());
        b[6..8].copy_from_slice(&((object >> 4) as u16 & 0x7).to_le_bytes());
        b[8..].copy_from_slice(&(object.rotate_left(17) ^ 0x01cb_bb30_fb42_3d19).to_be_bytes());
        let id_of = guid(b);
        let f = fields![
            ("ConnectionObj", Val::Ptr(object)),
            ("LocalAddr", super::sockaddr(local)),
            ("RemoteAddr", super::sockaddr(remote)),
        ];
        self.kernel_mode(spec(PROVIDER, 21, at, DPC, f).activity(id_of))?;
        Ok((object, id_of))
    }

    /// One request on a connection: System's thread receives and delivers
    /// it, the worker's thread answers. Returns when the response is ready.
    #[allow(clippy::too_many_arguments)]
    pub fn httpsys_request(
        &mut self,
        at: f64,
        (system, worker): (Tid, Tid),
        (connection, connection_activity): (u64, Guid),
        (request_id, connection_id): (u64, u64),
        client: SocketAddr,
        r: &ServerRequest<'_>,
        think: f64,
    ) -> Result<f64, crate::SynthError> {
        let activity = request_activity(request_id, BOOT_TAG);
        let ids = fields![("RequestId", request_id), ("ConnectionId", connection_id)];
        self.kernel_mode(
            spec(PROVIDER, 22, at, system, ids.clone().with("ConnectionObj", Val::Ptr(connection)))
                .activity(connection_activity),
        )?;
        let f = ids.clone().with("RemoteAddr", super::sockaddr(client));
        self.kernel_mode(spec(PROVIDER, 1, at + 0.001, system, f).activity(connection_activity))?;
        let object = self.pool();
        let verb = VERBS.iter().find(|(v, _)| *v == r.verb).map_or(1, |(_, n)| *n);
        let f = fields![("RequestObj", Val::Ptr(object)), ("HttpVerb", verb), ("Url", r.url)];
        self.kernel_mode(spec(PROVIDER, 2, at + 0.02, system, f).activity(activity))?;
        let f = fields![
            ("RequestObj", Val::Ptr(object)),
            ("RequestId", request_id),
            ("SiteId", r.site),
            ("RequestQueueName", r.queue),
            ("Url", r.url),
            ("Status", 0u32),
        ];
        self.kernel_mode(spec(PROVIDER, 3, at + 0.05, system, f).activity(activity))?;
        let t = at + 0.05 + think;
        let last = fields![("RequestId", request_id)];
        self.kernel_mode(spec(PROVIDER, 5, t, worker, last).activity(request_activity(request_id, [0; 8])))?;
        let f = ids
            .with("StatusCode", r.status)
            .with("Verb", r.verb)
            .with("HeaderLength", 165u32)
            .with("EntityChunkCount", 1u16);
        self.kernel_mode(spec(PROVIDER, 4, t + 0.025, worker, f.with("CachePolicy", 0u32)).activity(activity))?;
        let f = fields![("RequestId", request_id), ("HttpStatus", r.status)];
        self.kernel_mode(spec(PROVIDER, 10, t + 0.045, worker, f).activity(activity))?;
        Ok(t + 0.045)
    }
}
