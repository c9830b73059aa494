//! Traces with only the kernel's view of TCP and UDP: the classic TcpIp and
//! UdpIp events (what PerfView's kernel traces have) or Kernel-Network.

use crate::SynthError;
use crate::windows::{DPC, Flow, KernelOp, Machine, Tid};

use super::{DNSCACHE, app, machine, machine_with, sa};
use crate::SynthConfig;

/// How one of the kernel sources logs an event.
type Log = fn(&mut Machine, f64, Tid, &Flow, KernelOp, u32) -> Result<(), SynthError>;

/// What both traces show: `perfclient.exe`'s IPv4 connection (sends 1,200,
/// 400 and 90 bytes, one retransmission, receives 4,380 and 900, each copy
/// to the user logged again), `OneDrive.exe`'s IPv6 connection, the DNS
/// service's UDP query, and System accepting an SMB connection.
fn activity(m: &mut Machine, log: Log) -> Result<(), SynthError> {
    let perf = app(m, 30100, "perfclient.exe", r#""C:\Tools\perfclient.exe""#)?;
    let onedrive = app(m, 30200, "OneDrive.exe", r#""C:\Users\alice\AppData\Local\Microsoft\OneDrive\OneDrive.exe""#)?;
    let th = (perf, 30104);
    let flow = Flow { pid: perf, local: sa("192.168.1.23:50600"), remote: sa("52.96.165.18:443"), udp: false };
    for (at, context, op, size) in [
        (100.0, th, KernelOp::Connect, 0),
        (101.0, th, KernelOp::Send, 1_200),
        (115.0, DPC, KernelOp::Recv, 4_380),
        (115.1, th, KernelOp::Copy, 4_380),
        (120.0, th, KernelOp::Send, 400),
        (140.0, DPC, KernelOp::Recv, 900),
        (140.1, th, KernelOp::Copy, 900),
        (160.0, th, KernelOp::Send, 90),
        (400.0, DPC, KernelOp::Retransmit, 1_200),
        (500.0, th, KernelOp::Disconnect, 0),
    ] {
        log(m, at, context, &flow, op, size)?;
    }
    let th = (onedrive, 30204);
    let local = sa("[2001:db8:4006:812::23]:50610");
    let flow = Flow { pid: onedrive, local, remote: sa("[2603:1036:303:3050::2]:443"), udp: false };
    for (at, context, op, size) in [
        (200.0, th, KernelOp::Connect, 0),
        (201.0, th, KernelOp::Send, 517),
        (215.0, DPC, KernelOp::Recv, 5_000),
        (216.0, th, KernelOp::Send, 80),
        (230.0, DPC, KernelOp::Recv, 20_000),
        (230.1, th, KernelOp::Copy, 20_000),
        (900.0, th, KernelOp::Disconnect, 0),
    ] {
        log(m, at, context, &flow, op, size)?;
    }
    let flow = Flow { pid: DNSCACHE.0, local: sa("192.168.1.23:51000"), remote: sa("192.168.1.1:53"), udp: true };
    log(m, 300.0, DNSCACHE, &flow, KernelOp::Send, 40)?;
    log(m, 308.0, DPC, &flow, KernelOp::Recv, 120)?;
    let flow = Flow { pid: 4, local: sa("192.168.1.23:445"), remote: sa("192.168.1.60:60841"), udp: false };
    for (at, op, size) in [
        (600.0, KernelOp::Accept, 0),
        (600.1, KernelOp::Recv, 383),
        (607.0, KernelOp::Send, 221),
        (607.0, KernelOp::Send, 4_147),
        (608.2, KernelOp::Disconnect, 0),
    ] {
        log(m, at, DPC, &flow, op, size)?;
    }
    Ok(())
}

/// Classic kernel TcpIp/UdpIp events only, as PerfView traces have them.
pub fn kernel_classic() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    activity(&mut m, Machine::kernel_tcpip)?;
    m.finish()
}

/// Microsoft-Windows-Kernel-Network events only.
pub fn kernel_network() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    activity(&mut m, Machine::kernel_network)?;
    m.finish()
}

/// Microsoft-Windows-Kernel-Network with the kernel's image loads but no
/// process or thread events: each process is named by its program's image.
pub fn kernel_network_images() -> Result<Vec<u8>, SynthError> {
    let mut m = machine_with(SynthConfig { process_events: false, ..SynthConfig::default() })?;
    activity(&mut m, Machine::kernel_network)?;
    m.finish()
}
