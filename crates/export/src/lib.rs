//! Write the data of ETW `.etl` traces in the formats other tools open.
//!
//! [`write_pcapng`] turns the packets that Microsoft-Windows-NDIS-PacketCapture
//! and Microsoft-Windows-PktMon log as events into a pcapng file that
//! Wireshark and tshark read — what `etl2pcapng` and `pktmon etl2pcap` do on
//! Windows, here on any OS:
//!
//! - one Section Header Block (`shb_userappl`, `shb_os` from the trace header);
//! - one Interface Description Block per (interface, link type) seen, written
//!   before its first packet, with `if_name`, `if_description` and
//!   `if_tsresol` = 7 (timestamps in 100 ns units since 1970);
//! - one Enhanced Packet Block per packet, in time order, stamped with the
//!   event's time, with the logged length as the captured length and the
//!   original length as logged (PktMon) or inferred from the IP header
//!   (NDIS, when the frame was cut); `epb_flags` carry the direction where
//!   the event gives it, `epb_packetid` PktMon's `PktGroupId` (the same for
//!   every component a packet passed), and `opt_comment` the process
//!   (`PID=… TID=…` and its name when the trace has process events) and, for
//!   PktMon, the packet's identity, component, edge, filter and drop reason.
//!
//! [`pcapng`] is the block writer; [`packets`] finds the packet events.
//!
//! From the network model: [`har`] writes the HTTP requests as HAR 1.2 (for
//! DevTools and Fiddler), [`perfetto`] the requests, hand-offs, bytes and
//! DNS answers as Chrome Trace Event JSON (for ui.perfetto.dev); with the
//! `parquet` feature, `parquet` writes any table as a Parquet file.

#[cfg(feature = "parquet")]
pub mod dataset;
pub mod events;
pub mod facts;
pub mod har;
pub mod json;
pub mod packets;
#[cfg(feature = "parquet")]
pub mod parquet;
pub mod pcapng;
pub mod perfetto;
pub mod providers;
pub mod report;

pub use har::write_har;
pub use perfetto::write_perfetto;

use std::collections::HashMap;
use std::io::{self, Write};

use nettrail_decode::Schemas;
use nettrail_etl::clock::FILETIME_UNIX_EPOCH;
use nettrail_etl::{Error, Trace};

use self::packets::{Context, Direction, InterfaceKey, Packet};
use self::pcapng::{Opt, option};

/// One interface written, with its packets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterfaceSummary {
    pub key: InterfaceKey,
    /// Its number in the file (the order of the IDBs).
    pub number: u32,
    pub name: String,
    pub description: String,
    pub packets: u64,
}

/// What an export wrote and met.
#[derive(Debug, Default)]
pub struct Summary {
    /// Enhanced Packet Blocks written.
    pub packets: u64,
    /// The interfaces, in file order.
    pub interfaces: Vec<InterfaceSummary>,
    /// Packet events skipped because their fields could not be decoded:
    /// (provider name, event id, reason, count).
    pub undecoded: Vec<(String, u16, String, u64)>,
    /// Damage met in the trace, in order; every packet readable around it
    /// was written.
    pub damage: Vec<Error>,
}

/// Time in pcapng units (`if_tsresol` 7: 100 ns since 1970) of a FILETIME;
/// times before 1970 become 0.
pub fn pcapng_time(filetime: i64) -> u64 {
    u64::try_from(filetime.saturating_sub(FILETIME_UNIX_EPOCH)).unwrap_or(0)
}

/// The `opt_comment` of a packet: `PID=… TID=…`, the process name when
/// known, then PktMon's description of the packet.
pub fn packet_comment(packet: &Packet<'_>, context: &Context) -> String {
    let mut parts = Vec::new();
    if let Some(pid) = packet.process_id {
        let mut who = format!("PID={pid}");
        if let Some(tid) = packet.thread_id {
            who.push_str(&format!(" TID={tid}"));
        }
        if let Some(name) = context.process_name(pid, packet.timestamp) {
            who.push_str(&format!(" Process={name}"));
        }
        parts.push(who);
    }
    if let Some(p) = &packet.pktmon {
        let component = match context.component(p.component) {
            Some(c) if !c.name.is_empty() => format!("{} ({})", p.component, c.name),
            _ => p.component.to_string(),
        };
        parts.push(format!(
            "PktGroupId {}, PktNumber {}, Appearance {}, Direction {}, Type {}, Component {component}, Edge {}, Filter {}, OriginalSize {}, LoggedSize {}",
            p.group_id,
            p.number,
            p.appearance,
            p.dir_tag,
            p.packet_type,
            p.edge,
            p.filter,
            packet.original_len,
            packet.data.len()
        ));
        if let Some((reason, location)) = &p.drop {
            parts.push(format!("Dropped: {reason}, DropLocation {location:#x}"));
        }
    }
    parts.join("; ")
}

/// Writes the trace's packets as pcapng to `out` (streamed: one block at a
/// time; wrap a file in a `BufWriter`). Reads the trace twice: once for
/// component and process names, once for the packets. `progress` receives
/// raw timestamps as the packet pass advances.
///
/// An I/O error stops the export; damage in the trace does not (it is
/// listed in the [`Summary`]).
pub fn write_pcapng<W: Write>(
    trace: &Trace<'_>,
    schemas: &Schemas,
    out: &mut W,
    progress: &mut dyn FnMut(u64),
) -> io::Result<Summary> {
    let context = Context::scan(trace, schemas);
    let header = trace.header();
    let application = format!("nettrail {}", env!("CARGO_PKG_VERSION"));
    let os = format!("Windows {}.{} build {}", header.os_version.0, header.os_version.1, header.build);
    let source = format!("Converted from the ETW trace {}", header.log_file_name);
    let mut shb_options = vec![Opt::text(option::SHB_USERAPPL, &application)];
    if header.build != 0 {
        shb_options.push(Opt::text(option::SHB_OS, &os));
    }
    if !header.log_file_name.is_empty() {
        shb_options.push(Opt::text(option::COMMENT, pcapng::fit_text(&source)));
    }
    pcapng::write_section_header(out, &shb_options)?;

    let mut numbers: HashMap<InterfaceKey, usize> = HashMap::new();
    let mut interfaces: Vec<InterfaceSummary> = Vec::new();
    let mut emit = |packet: &Packet<'_>| -> io::Result<()> {
        let index = match numbers.get(&packet.interface) {
            Some(&i) => i,
            None => {
                let (name, description) = context.interface_names(&packet.interface);
                let number = u32::try_from(interfaces.len())
                    .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "too many interfaces"))?;
                pcapng::write_interface_description(
                    out,
                    packet.interface.link_type,
                    0,
                    &[
                        Opt::text(option::IF_NAME, pcapng::fit_text(&name)),
                        Opt::text(option::IF_DESCRIPTION, pcapng::fit_text(&description)),
                        Opt::bytes(option::IF_TSRESOL, &[7]),
                    ],
                )?;
                interfaces.push(InterfaceSummary { key: packet.interface, number, name, description, packets: 0 });
                numbers.insert(packet.interface, interfaces.len() - 1);
                interfaces.len() - 1
            }
        };
        let interface = &mut interfaces[index];
        interface.packets += 1;
        let comment = packet_comment(packet, &context);
        let flags = match packet.direction {
            Some(Direction::Inbound) => pcapng::direction::INBOUND,
            Some(Direction::Outbound) => pcapng::direction::OUTBOUND,
            None => pcapng::direction::UNKNOWN,
        }
        .to_le_bytes();
        let packet_id = packet.pktmon.as_ref().map(|p| p.group_id.to_le_bytes());
        let mut options = Vec::with_capacity(3);
        if !comment.is_empty() {
            options.push(Opt::text(option::COMMENT, pcapng::fit_text(&comment)));
        }
        if packet.direction.is_some() {
            options.push(Opt::bytes(option::EPB_FLAGS, &flags));
        }
        if let Some(id) = &packet_id {
            options.push(Opt::bytes(option::EPB_PACKETID, id));
        }
        pcapng::write_enhanced_packet(
            out,
            interface.number,
            pcapng_time(packet.filetime),
            &packet.data,
            packet.original_len,
            &options,
        )
    };
    let scan = packets::for_each_packet(trace, schemas, &mut emit, progress)?;
    out.flush()?;

    let mut undecoded: Vec<(String, u16, String, u64)> = Vec::new();
    for (capture, id, why) in scan.undecoded {
        let provider = match capture {
            packets::Capture::NdisPacketCapture => "Microsoft-Windows-NDIS-PacketCapture",
            packets::Capture::PktMon => "Microsoft-Windows-PktMon",
        };
        match undecoded.iter_mut().find(|(p, i, w, _)| p == provider && *i == id && *w == why) {
            Some(entry) => entry.3 += 1,
            None => undecoded.push((provider.to_string(), id, why, 1)),
        }
    }
    Ok(Summary { packets: scan.packets, interfaces, undecoded, damage: scan.damage })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_count_from_1970_in_100_ns() {
        assert_eq!(pcapng_time(FILETIME_UNIX_EPOCH), 0);
        assert_eq!(pcapng_time(FILETIME_UNIX_EPOCH + 12_345), 12_345);
        assert_eq!(pcapng_time(0), 0);
        assert_eq!(pcapng_time(i64::MIN), 0);
    }
}
