//! Microsoft-Windows-Winsock-AFD: what afd.sys logs for a socket. Every
//! event names the socket by its `Endpoint` and the owner by `Process` (the
//! EPROCESS address: reliable where header ids are not); `EnterExit` says
//! whether the call starts (0) or completes (1); `Location` is the code path.
//! Calls log on the calling thread; completions of overlapped I/O log on the
//! thread that completed them, often of another process or DPC context.
//!
//! Location values follow the code paths NetBlame lists as reliable for
//! create, bind, connect, send, receive and close; the ones it does not list
//! (connect completion, accept) are choices, marked where used.

use crate::fields;

use super::{Machine, Tid, spec};

const PROVIDER: &str = "Microsoft-Windows-Winsock-AFD";

const ENTER: u32 = 0;
const EXIT: u32 = 1;

/// A socket as AFD knows it.
#[derive(Clone, Debug)]
pub struct Socket {
    pub pid: u32,
    /// The owner's EPROCESS.
    pub process: u64,
    pub endpoint: u64,
}

impl Socket {
    fn base(&self, enter_exit: u32, location: u32) -> crate::Fields {
        fields![
            ("EnterExit", enter_exit),
            ("Location", location),
            ("Process", self.process),
            ("Endpoint", self.endpoint),
        ]
    }

    /// A user buffer of the owner.
    fn buffer(&self) -> u64 {
        0x0000_00e5_3a2f_0000 | (self.endpoint & 0xffff)
    }
}

impl Machine {
    fn afd(&mut self, id: u16, at: f64, th: Tid, fields: crate::Fields) -> Result<(), crate::SynthError> {
        self.kernel_mode(spec(PROVIDER, id, at, th, fields))
    }

    /// AfdCreate (1000, enter) on the creating thread, with its stack (the
    /// capture profile asks for stacks on this event only); `endpoint` is a
    /// fresh pool address unless the scenario reuses one.
    pub fn afd_create(
        &mut self,
        at: f64,
        th: Tid,
        (family, socket_type, protocol): (u16, u32, u32),
        endpoint: Option<u64>,
    ) -> Result<Socket, crate::SynthError> {
        let endpoint = match endpoint {
            Some(e) => e,
            None => self.pool(),
        };
        let socket = Socket { pid: th.0, process: self.eprocess(th.0), endpoint };
        let f = socket
            .base(ENTER, 1002)
            .with("AddressFamily", u32::from(family))
            .with("SocketType", socket_type)
            .with("Protocol", protocol);
        let f = f.with("ProcessId", u64::from(th.0)).with("Status", 0u32);
        // afd.sys+0x14b70 (its create dispatch), ntoskrnl.exe+0x421a2e (the
        // system-call path), as the kernel images are mapped (system.rs).
        let mut stack = vec![0xffff_f801_6c21_4b70, 0xffff_f801_6ae2_1a2e];
        stack.extend(self.user_stack(th.0, "mswsock.dll", 0x2d40)?);
        self.kernel_mode(spec(PROVIDER, 1000, at, th, f).stack(&stack))?;
        Ok(socket)
    }

    /// AfdBindWithAddress (1030, exit): the address bound, port assigned.
    pub fn afd_bind(&mut self, at: f64, th: Tid, s: &Socket, address: &[u8]) -> Result<(), crate::SynthError> {
        let f = s.base(EXIT, 7022).with("Status", 0u32).with("Address", address.to_vec());
        self.afd(1030, at, th, f)
    }

    /// AfdConnectWithAddress (1018) for connect(), AfdConnectExWithAddress
    /// (1021) for ConnectEx: the call, on the caller's thread.
    pub fn afd_connect(
        &mut self,
        at: f64,
        th: Tid,
        s: &Socket,
        remote: &[u8],
        connect_ex: bool,
    ) -> Result<(), crate::SynthError> {
        let (id, location) = if connect_ex { (1021, 5031) } else { (1018, 5023) };
        let f = s.base(ENTER, location).with("Buffer", 0u64).with("BufferLength", 0u32).with("Status", 0u32);
        self.afd(id, at, th, f.with("Address", remote.to_vec()))
    }

    /// The connect's completion with a failure status (the exit of 1018/1021),
    /// on the thread that completed it. Location 5034 is a choice.
    pub fn afd_connect_failed(
        &mut self,
        at: f64,
        th: Tid,
        s: &Socket,
        remote: &[u8],
        (connect_ex, status): (bool, u32),
    ) -> Result<(), crate::SynthError> {
        let id = if connect_ex { 1021 } else { 1018 };
        let f = s.base(EXIT, 5034).with("Buffer", 0u64).with("BufferLength", 0u32).with("Status", status);
        self.afd(id, at, th, f.with("Address", remote.to_vec()))
    }

    /// AfdAcceptExWithAddress (1027, exit): the listener hands its port to a
    /// new endpoint; on the thread that completed the accept. Location 6023
    /// is a choice.
    pub fn afd_accept(
        &mut self,
        at: f64,
        th: Tid,
        listener: &Socket,
        accepted: &Socket,
        remote: &[u8],
    ) -> Result<(), crate::SynthError> {
        let f = listener.base(EXIT, 6023).with("Buffer", listener.buffer()).with("BufferLength", 0u32);
        let f = f.with("Status", 0u32).with("Address", remote.to_vec());
        self.afd(1027, at, th, f.with("AcceptEndpoint", accepted.endpoint).with("CurrentBacklog", 0u32))
    }

    /// AfdSend (1003, exit): `bytes` left the socket's buffer. A send that
    /// AFD buffered is logged again at location 3073 (`buffered`), with the
    /// same bytes: NetBlame knows these as double counts.
    pub fn afd_send(
        &mut self,
        at: f64,
        th: Tid,
        s: &Socket,
        bytes: u32,
        buffered: bool,
    ) -> Result<(), crate::SynthError> {
        let f = |location: u32| {
            s.base(EXIT, location)
                .with("BufferCount", 1u32)
                .with("Buffer", s.buffer())
                .with("BufferLength", bytes)
                .with("Status", 0u32)
        };
        self.afd(1003, at, th, f(3003))?;
        if buffered {
            self.afd(1003, at + 0.01, th, f(3073))?;
        }
        Ok(())
    }

    /// AfdReceive (1004, exit): a receive completed with `bytes`.
    pub fn afd_receive(&mut self, at: f64, th: Tid, s: &Socket, bytes: u32) -> Result<(), crate::SynthError> {
        let f = s.base(EXIT, 4106).with("BufferCount", 1u32).with("Buffer", s.buffer() + 0x4000);
        self.afd(1004, at, th, f.with("BufferLength", bytes).with("Status", 0u32))
    }

    /// AfdSendMessageWithAddress (1013, enter): a datagram to `remote`.
    pub fn afd_send_to(
        &mut self,
        at: f64,
        th: Tid,
        s: &Socket,
        remote: &[u8],
        bytes: u32,
    ) -> Result<(), crate::SynthError> {
        let f = s.base(ENTER, 3201).with("BufferCount", 1u32).with("Buffer", s.buffer()).with("BufferLength", bytes);
        self.afd(1013, at, th, f.with("Status", 0u32).with("Address", remote.to_vec()))
    }

    /// AfdReceiveFromWithAddress (1009, recvfrom) or AfdReceiveMessageWithAddress
    /// (1015, WSARecvMsg), exit: a datagram from `remote`. Location 4052 is
    /// the asynchronous completion (logged where TCPIP delivered it), 4201 the
    /// synchronous one (the caller's thread).
    pub fn afd_receive_from(
        &mut self,
        at: f64,
        th: Tid,
        s: &Socket,
        remote: &[u8],
        (bytes, message, synchronous): (u32, bool, bool),
    ) -> Result<(), crate::SynthError> {
        let id = if message { 1015 } else { 1009 };
        let location = if synchronous { 4201 } else { 4052 };
        let f = s.base(EXIT, location).with("BufferCount", 1u32).with("Buffer", s.buffer() + 0x8000);
        let f = f.with("BufferLength", bytes).with("Status", 0u32).with("Address", remote.to_vec());
        self.afd(id, at, th, f)
    }

    /// AfdClose (1001, exit) on the closing thread.
    pub fn afd_close(&mut self, at: f64, th: Tid, s: &Socket) -> Result<(), crate::SynthError> {
        self.afd(1001, at, th, s.base(EXIT, 2001).with("Status", 0u32))
    }
}
