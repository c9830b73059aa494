//! What each Windows network layer logs for one action, in the order and on
//! the threads Windows logs it, with the header ids Windows gives: a TCP
//! connect through Winsock, a UDP exchange, a DNS lookup, a WinHTTP (WebIO)
//! or WinINet request, an Http.sys request, an LDAP search, the classic
//! kernel and Kernel-Network events. Scenario scripts ([`crate::scenarios`])
//! are made of these.
//!
//! Where headers "lie", the emitters lie the same way: TCPIP completions and
//! data events are logged in DPC context (header ids 0) or on whatever thread
//! the interrupt found, AFD completions on the thread that completed the I/O,
//! TCPIP rundown with the recorder's ids. Kernel providers log 64-bit records
//! whatever the bitness of the process they serve.
//!
//! [`Machine`] wraps a [`Synth`] and hands out what Windows would: kernel
//! pool pointers, user heap pointers, handles, ephemeral ports. Times are
//! milliseconds from the trace start; emitters return when they are done.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use nettrail_etl::Guid;

use crate::{EventSpec, Fields, Process, Synth, SynthConfig, SynthError};

mod afd;
mod chromium;
mod dns;
mod httpsys;
mod kernel;
mod ldap;
mod office;
mod quic;
mod tcpip;
mod threadpool;
mod webio;
mod wininet;
mod winsock;

pub use afd::Socket;
pub use chromium::{Arg, Browser, CHROME, EDGE, EDGE_WEBVIEW2, NetPhase, NetSource, category};
pub use dns::{Answer, Lookup, results_text};
pub use httpsys::ServerRequest;
pub use kernel::{Flow, KernelOp};
pub use ldap::scope as ldap_scope;
pub use office::QueueKind;
pub use quic::{H3_NO_ERROR, Http3Connection, QuicConn};
pub use tcpip::Tcb;
pub use threadpool::{PoolTimer, PoolWork};
pub use webio::{Exchange, WebConnection, WebRequest, WebSession, WebThreads};
pub use wininet::InetRequest;
pub use winsock::{Dial, Failure, TcpConn, UdpReceive, UdpSock};

/// A logging thread: (process id, thread id).
pub type Tid = (u32, u32);

/// DPC context: what interrupts (packet arrival, timers) log on the idle
/// thread of a processor carries process and thread id 0.
pub const DPC: Tid = (0, 0);

/// NTSTATUS values the network layers report.
pub mod status {
    pub const CONNECTION_REFUSED: u32 = 0xC000_0236;
    pub const NETWORK_UNREACHABLE: u32 = 0xC000_023C;
    pub const IO_TIMEOUT: u32 = 0xC000_00B5;
}

/// WinHTTP errors as WebIO reports them.
pub mod winhttp_error {
    pub const CANNOT_CONNECT: u32 = 12029;
}

/// A machine on a home/office network, with a trace being recorded.
#[derive(Debug)]
pub struct Machine {
    synth: Synth,
    /// The machine's addresses: IPv4 on the LAN, a global IPv6.
    pub ipv4: Ipv4Addr,
    pub ipv6: Ipv6Addr,
    /// The LAN's DNS server (the router).
    pub dns_server: Ipv4Addr,
    /// WebIO counts the bytes of its sends (0 on builds before this was added).
    pub webio_send_sizes: bool,
    pointer_sizes: BTreeMap<u32, u8>,
    /// The process a DNS lookup in progress is for.
    dns_client: Option<u32>,
    next_port: u16,
    next_pool: u64,
    next_heap: u64,
    next_handle: u64,
}

impl Default for Machine {
    fn default() -> Self {
        Machine::new()
    }
}

impl Machine {
    /// A Windows 10 22H2 machine at 192.168.1.23.
    pub fn new() -> Machine {
        Machine::with_config(SynthConfig::default())
    }

    pub fn with_config(config: SynthConfig) -> Machine {
        Machine {
            synth: Synth::with_config(config),
            ipv4: Ipv4Addr::new(192, 168, 1, 23),
            ipv6: "2001:db8:4006:812::23".parse().expect("an IPv6 address"),
            dns_server: Ipv4Addr::new(192, 168, 1, 1),
            webio_send_sizes: true,
            pointer_sizes: BTreeMap::from([(4, 8)]),
            dns_client: None,
            next_port: 50_412,
            next_pool: 0,
            next_heap: 0,
            next_handle: 0,
        }
    }

    /// The synthesizer, for what the emitters do not cover (losses, threads).
    pub fn synth(&mut self) -> &mut Synth {
        &mut self.synth
    }

    pub fn finish(self) -> Result<Vec<u8>, SynthError> {
        self.synth.finish()
    }

    /// A process running when the trace starts.
    pub fn process(&mut self, process: Process) -> Result<u32, SynthError> {
        let pid = process.pid;
        self.pointer_sizes.insert(pid, process.pointer_size);
        self.synth.add_process(process)?;
        Ok(pid)
    }

    /// A process started during the trace.
    pub fn start_process(&mut self, at: f64, process: Process) -> Result<u32, SynthError> {
        let pid = process.pid;
        self.pointer_sizes.insert(pid, process.pointer_size);
        self.synth.start_process(at, process)?;
        Ok(pid)
    }

    /// The machine's address of the family of `remote` (loopback to loopback).
    pub fn local_ip(&self, remote: IpAddr) -> IpAddr {
        match remote {
            IpAddr::V4(a) if a.is_loopback() => IpAddr::V4(a),
            IpAddr::V6(a) if a.is_loopback() => IpAddr::V6(a),
            IpAddr::V4(_) => IpAddr::V4(self.ipv4),
            IpAddr::V6(_) => IpAddr::V6(self.ipv6),
        }
    }

    /// The next ephemeral port (49152–65535), as the port pool hands them out:
    /// increasing, with gaps left by other processes.
    pub fn port(&mut self) -> u16 {
        let port = self.next_port;
        self.next_port = self.next_port.checked_add(1 + (port % 3)).unwrap_or(49_152);
        port
    }

    /// A kernel non-paged pool address (TCBs, endpoints, Http.sys objects).
    pub fn pool(&mut self) -> u64 {
        self.next_pool += 1;
        0xffff_d20c_4e21_0000 + self.next_pool * 0x1_3a0
    }

    /// A user heap address in `pid` (WinHTTP objects), 32-bit in a WOW64 process.
    pub fn heap(&mut self, pid: u32) -> u64 {
        self.next_heap += 1;
        if self.pointer_size(pid) == 4 {
            0x0064_0000 + self.next_heap * 0x2a8
        } else {
            0x0000_01f4_2a37_0000 + self.next_heap * 0x4f0
        }
    }

    /// A kernel handle value (SOCKETs are handles): a multiple of 4.
    pub fn handle(&mut self) -> u64 {
        self.next_handle += 1;
        0x3a4 + self.next_handle * 0x1c
    }

    /// The pointer size of a process's own (user-mode) events.
    pub fn pointer_size(&self, pid: u32) -> u8 {
        self.pointer_sizes.get(&pid).copied().unwrap_or(8)
    }

    /// The EPROCESS address AFD logs as `Process` (derived as the rundown's).
    pub fn eprocess(&self, pid: u32) -> u64 {
        Process::new(pid, 0, "").key()
    }

    /// An event of a user-mode provider, logged by the process itself.
    pub(crate) fn user(&mut self, spec: EventSpec) -> Result<(), SynthError> {
        self.synth.emit(spec)?;
        Ok(())
    }

    /// An event of a kernel-mode provider (TCPIP, AFD, Http.sys): 64-bit
    /// whatever process it is logged in.
    pub(crate) fn kernel_mode(&mut self, spec: EventSpec) -> Result<(), SynthError> {
        self.synth.emit(spec.pointer_size(8))?;
        Ok(())
    }
}

/// Event `id` of `provider` at `at` on `th` with `fields`, in the newest
/// version the machine's Windows build declares (what that build logs).
pub(crate) fn spec(provider: &str, id: u16, at: f64, th: Tid, fields: Fields) -> EventSpec {
    EventSpec::latest(provider, id).at(at).thread(th.0, th.1).fields(fields)
}

/// A GUID from its Windows byte layout.
pub(crate) fn guid(bytes: [u8; 16]) -> Guid {
    Guid::from_bytes_le(bytes)
}

/// An activity id whose first 8 bytes are `first` and next 8 `second`.
pub(crate) fn activity(first: u64, second: u64) -> Guid {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&first.to_le_bytes());
    b[8..].copy_from_slice(&second.to_le_bytes());
    guid(b)
}

/// SOCKADDR bytes of an address.
pub(crate) fn sockaddr(address: SocketAddr) -> Vec<u8> {
    crate::sockaddr::sockaddr(address)
}

impl Machine {
    /// Return addresses given as (module file name, RVA), innermost first
    /// (the empty name is the executable).
    pub fn code_stack(&self, pid: u32, frames: &[(&str, u64)]) -> Result<Vec<u64>, SynthError> {
        frames
            .iter()
            .map(|&(name, rva)| {
                let base = self.synth.module_base(pid, name);
                base.map(|b| b + rva).ok_or_else(|| SynthError::UnknownModule { pid, name: name.to_string() })
            })
            .collect()
    }

    /// Return addresses of a user-mode call into a network API of `dll`,
    /// innermost first: ntdll's system-call stub, the API, the executable.
    pub(crate) fn user_stack(&self, pid: u32, dll: &str, api: u64) -> Result<Vec<u64>, SynthError> {
        self.code_stack(pid, &[("ntdll.dll", 0x9_d2a4), (dll, (api & 0xf_fff0) + 0x4), ("", 0x1d2e)])
    }
}
