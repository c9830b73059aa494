//! The packets of a trace: the frames that Microsoft-Windows-NDIS-PacketCapture
//! (`netsh trace start capture=yes`, `NetEventPacketCapture`) and
//! Microsoft-Windows-PktMon (`pktmon start --capture`) log as events, with
//! what the events say about them.
//!
//! Fields are decoded by name with [`Schemas`] (the trace's own metadata
//! first, the built-in layouts otherwise), so the code does not depend on
//! where a field sits in the payload.
//!
//! - **NDIS-PacketCapture** event 1001 (packet fragment) and 1003 (VM switch
//!   packet fragment): `MiniportIfIndex`, `LowerIfIndex`, `FragmentSize`,
//!   `Fragment`. The event's keywords give the medium (0x200 WirelessWAN: raw
//!   IP; 0x10000 native 802.11; Ethernet otherwise), the direction (0x1_0000_0000
//!   send, 0x2_0000_0000 receive) and the packet's bounds (0x4000_0000 start,
//!   0x8000_0000 end: before Windows 8.1 a packet could span several events,
//!   whose fragments are joined here). No original length is logged: when the
//!   fragment was cut, the IPv4 total length or IPv6 payload length gives it.
//! - **PktMon** event 160 (packet) and 170 (dropped packet): `ComponentId`,
//!   `PacketType` (1 Ethernet, 2 Wi-Fi, 3 IP), `DirTag` (1 In, 3 Rx, 5 Ingress
//!   are inbound; 2 Out, 4 Tx, 6 Egress outbound), `OriginalPayloadSize`,
//!   `LoggedPayloadSize`, `Payload`, and the packet's identity across
//!   components (`PktGroupId`, `PktNumber`, `AppearanceCount`). Event 20 names
//!   the components (`Id`, `Name`, `Description`); pktmon logs it when the
//!   capture stops, after the packets.
//!
//! Process names come from the kernel's Process events and from
//! Microsoft-Windows-Kernel-Process (start and rundown). As component names,
//! they are gathered by a first pass ([`Context::scan`]) before the packets
//! are read ([`for_each_packet`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::io;
use std::sync::Arc;

use nettrail_decode::{EventSchema, LookupCache, Schemas, Undecoded, Value, payload};
use nettrail_etl::{Error, Event, Guid, Trace};

/// Microsoft-Windows-NDIS-PacketCapture.
pub const NDIS_PACKET_CAPTURE: Guid = Guid::parse_const("2ed6006e-4729-4609-b423-3ee7bcd678ef");
/// Microsoft-Windows-PktMon.
pub const PKTMON: Guid = Guid::parse_const("4d4f80d9-c8bd-4d73-bb5b-19c90402c5ac");
/// The NT kernel logger's Process event class.
const KERNEL_PROCESS_CLASS: Guid = Guid::parse_const("3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c");
/// Microsoft-Windows-Kernel-Process.
const KERNEL_PROCESS: Guid = Guid::parse_const("22fb2cd6-0e7b-422b-a0c7-2fad1fd0e716");

/// NDIS-PacketCapture's packet fragment event (the packet bytes of a NIC).
pub const NDIS_FRAGMENT: u16 = 1001;
/// NDIS-PacketCapture's VM switch packet fragment event.
pub const NDIS_VMSWITCH_FRAGMENT: u16 = 1003;
/// PktMon's packet event: a packet seen at one component.
pub const PKTMON_PACKET: u16 = 160;
/// PktMon's dropped-packet event.
pub const PKTMON_DROP: u16 = 170;
/// PktMon's component description event.
const PKTMON_COMPONENT: u16 = 20;

/// The keywords of Microsoft-Windows-NDIS-PacketCapture that matter here.
pub mod ndis_keywords {
    /// Ethernet (802.3) frames.
    pub const ETHERNET_802_3: u64 = 0x1;
    /// Mobile broadband: frames are raw IP packets.
    pub const WIRELESS_WAN: u64 = 0x200;
    /// A tunnel interface.
    pub const TUNNEL: u64 = 0x8000;
    /// Native 802.11 frames.
    pub const NATIVE_802_11: u64 = 0x1_0000;
    /// Captured in the Hyper-V virtual switch.
    pub const VMSWITCH: u64 = 0x100_0000;
    /// The fragment was cut to the capture's size limit.
    pub const TRUNCATED: u64 = 0x200_0000;
    /// The first fragment of a packet.
    pub const PACKET_START: u64 = 0x4000_0000;
    /// The last fragment of a packet.
    pub const PACKET_END: u64 = 0x8000_0000;
    /// A packet being sent.
    pub const SEND: u64 = 0x1_0000_0000;
    /// A packet received.
    pub const RECEIVE: u64 = 0x2_0000_0000;
}

/// The link types packets are written with (tcpdump.org `LINKTYPE_` values).
pub use crate::pcapng::link_type;

/// Which provider logged a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Capture {
    /// Microsoft-Windows-NDIS-PacketCapture.
    NdisPacketCapture,
    /// Microsoft-Windows-PktMon.
    PktMon,
}

/// An interface of the capture: where the provider saw the packet, with the
/// link type of its frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InterfaceKey {
    pub capture: Capture,
    /// NDIS: `MiniportIfIndex << 32 | LowerIfIndex`; PktMon: `ComponentId`.
    pub id: u64,
    /// The `LINKTYPE_` of the interface's frames.
    pub link_type: u16,
}

/// Which way a packet went, when the event says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Received (`epb_flags` 1).
    Inbound,
    /// Sent (`epb_flags` 2).
    Outbound,
}

/// What PktMon says about a packet besides its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PktMonInfo {
    /// `PktGroupId`: the same for every component one packet passed.
    pub group_id: u64,
    /// `PktNumber`: the packet's number within its group.
    pub number: u64,
    /// `AppearanceCount`: how many components saw the packet so far.
    pub appearance: u64,
    /// `DirTag` as pktmon names it (`Rx`, `Tx`, …), or its number.
    pub dir_tag: String,
    /// `PacketType` as pktmon names it (`Ethernet`, …), or its number.
    pub packet_type: String,
    /// `ComponentId`: the driver or stack layer that saw the packet.
    pub component: u64,
    /// `EdgeId`: which side of the component.
    pub edge: u64,
    /// `FilterId`: the pktmon filter the packet matched.
    pub filter: u64,
    /// For a dropped packet (event 170): the reason's text (or number) and
    /// the drop location.
    pub drop: Option<(String, u64)>,
}

/// One packet, ready to write.
#[derive(Clone, Debug)]
pub struct Packet<'a> {
    pub interface: InterfaceKey,
    /// Raw session-clock timestamp of the (first) event.
    pub timestamp: u64,
    /// FILETIME (100 ns since 1601, UTC).
    pub filetime: i64,
    /// The bytes logged.
    pub data: Cow<'a, [u8]>,
    /// The packet's length on the wire, as logged or inferred; at least the
    /// captured length.
    pub original_len: u32,
    pub direction: Option<Direction>,
    /// The process and thread of the (first) event's header.
    pub process_id: Option<u32>,
    pub thread_id: Option<u32>,
    /// PktMon's facts (PktMon packets only).
    pub pktmon: Option<PktMonInfo>,
}

impl Packet<'_> {
    /// The packet with its bytes copied, to keep past the event.
    pub fn into_owned(self) -> Packet<'static> {
        Packet {
            interface: self.interface,
            timestamp: self.timestamp,
            filetime: self.filetime,
            data: Cow::Owned(self.data.into_owned()),
            original_len: self.original_len,
            direction: self.direction,
            process_id: self.process_id,
            thread_id: self.thread_id,
            pktmon: self.pktmon,
        }
    }
}

/// A PktMon component, from event 20.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Component {
    pub name: String,
    pub description: String,
}

/// A process name known from some time on.
#[derive(Clone, Debug)]
struct ProcessName {
    timestamp: u64,
    /// A start event: the process did not exist before it.
    started: bool,
    name: String,
}

/// What the first pass learns: component and process names.
#[derive(Clone, Debug, Default)]
pub struct Context {
    components: HashMap<u64, Component>,
    processes: HashMap<u32, Vec<ProcessName>>,
}

/// Decoded fields of one event, looked up by name.
struct Fields<'s, 'v, 'a> {
    schema: &'s EventSchema,
    values: &'v [Value<'a>],
}

impl<'a> Fields<'_, '_, 'a> {
    fn index(&self, name: &str) -> Option<usize> {
        self.schema.fields.iter().position(|f| f.name == name)
    }

    fn value(&self, name: &str) -> Option<&Value<'a>> {
        self.values.get(self.index(name)?)
    }

    fn u64(&self, name: &str) -> Option<u64> {
        self.value(name)?.as_u64()
    }

    fn text(&self, name: &str) -> Option<String> {
        Some(self.value(name)?.as_str()?.into_owned())
    }

    /// A number as the field's value map names it, else the number.
    fn named(&self, name: &str) -> String {
        let Some(v) = self.u64(name) else { return String::from("?") };
        let map = self.index(name).and_then(|i| self.schema.fields.get(i)).and_then(|f| f.map.as_ref());
        map.and_then(|m| m.lookup(v)).unwrap_or_else(|| v.to_string())
    }
}

/// The file name of a path (`\Device\…\chrome.exe` → `chrome.exe`).
fn file_name(path: &str) -> &str {
    path.rsplit(['\\', '/']).next().unwrap_or(path)
}

impl Context {
    /// The first pass: PktMon component names and process names.
    /// Damage is not reported here (the packet pass meets it again).
    pub fn scan(trace: &Trace<'_>, schemas: &Schemas) -> Context {
        let mut context = Context::default();
        let mut cache = LookupCache::default();
        let mut stream = trace.events();
        while let Some(item) = stream.next() {
            let Ok(event) = item else { continue };
            let provider = event.provider;
            let wanted = (provider == PKTMON && event.id == PKTMON_COMPONENT)
                || provider == KERNEL_PROCESS_CLASS
                || provider == KERNEL_PROCESS;
            if !wanted {
                continue;
            }
            // Values borrow the event: a vector per decoded event (few are).
            let mut values = Vec::new();
            let Ok(schema) = schemas.decode_cached(&mut cache, &event.record, &mut values) else { continue };
            let fields = Fields { schema, values: &values };
            if provider == PKTMON {
                let Some(id) = fields.u64("Id") else { continue };
                let component = Component {
                    name: fields.text("Name").unwrap_or_default(),
                    description: fields.text("Description").unwrap_or_default(),
                };
                context.components.insert(id, component);
                continue;
            }
            // Kernel Process events (ProcessId, ImageFileName) and
            // Kernel-Process ones (ProcessID, ImageName: a path).
            let pid = fields.u64("ProcessId").or_else(|| fields.u64("ProcessID"));
            let name = fields.text("ImageFileName").or_else(|| fields.text("ImageName"));
            let (Some(pid), Some(name)) = (pid, name) else { continue };
            let name = file_name(&name).to_string();
            if name.is_empty() {
                continue;
            }
            let opcode = event.hook.map_or(event.opcode, |h| h.opcode);
            let started = if provider == KERNEL_PROCESS { event.id == 1 } else { opcode == 1 };
            let names = context.processes.entry(pid as u32).or_default();
            names.push(ProcessName { timestamp: event.timestamp, started, name });
        }
        for names in context.processes.values_mut() {
            names.sort_by_key(|n| n.timestamp);
        }
        context
    }

    /// A PktMon component's names.
    pub fn component(&self, id: u64) -> Option<&Component> {
        self.components.get(&id)
    }

    /// The name of process `pid` at a raw time: the last name given at or
    /// before it; else the first one after, unless that one started a
    /// (new) process.
    pub fn process_name(&self, pid: u32, timestamp: u64) -> Option<&str> {
        let names = self.processes.get(&pid)?;
        let before = names.iter().rev().find(|n| n.timestamp <= timestamp);
        let chosen = before.or_else(|| names.first().filter(|n| !n.started))?;
        Some(&chosen.name)
    }

    /// `if_name` and `if_description` for an interface.
    pub fn interface_names(&self, key: &InterfaceKey) -> (String, String) {
        match key.capture {
            Capture::NdisPacketCapture => {
                let (miniport, lower) = (key.id >> 32, key.id & 0xFFFF_FFFF);
                (
                    format!("ndis:{miniport}:{lower}"),
                    format!("NDIS-PacketCapture MiniportIfIndex {miniport}, LowerIfIndex {lower}"),
                )
            }
            Capture::PktMon => match self.components.get(&key.id) {
                Some(c) => (
                    format!("{} (component {})", c.name, key.id),
                    format!("PktMon component {}: {}", key.id, c.description),
                ),
                None => (format!("component {}", key.id), format!("PktMon component {}", key.id)),
            },
        }
    }
}

/// The original length of a cut frame, from its IPv4 total length or IPv6
/// payload length (`None` when the header does not say, or says less than
/// was captured: then the captured length stands). A zero IP length (large
/// send offload) says nothing.
pub fn inferred_original_len(link_type: u16, data: &[u8]) -> Option<u32> {
    let be16 = |at: usize| data.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]) as usize);
    let ip_at = match link_type {
        link_type::ETHERNET => match be16(12)? {
            0x8100 => (18, be16(16)?),
            t => (14, t),
        },
        link_type::RAW_IP => match data.first()? >> 4 {
            4 => (0, 0x0800),
            6 => (0, 0x86DD),
            _ => return None,
        },
        _ => return None,
    };
    let (at, ether_type) = ip_at;
    let ip_len = match ether_type {
        0x0800 => be16(at + 2)?,
        0x86DD => match be16(at + 4)? {
            0 => 0,
            n => 40 + n,
        },
        _ => return None,
    };
    let total = at + ip_len;
    (ip_len != 0 && total > data.len()).then(|| u32::try_from(total).ok()).flatten()
}

/// The link type of an NDIS-PacketCapture event, from its keywords (as
/// etl2pcapng chooses it).
pub fn ndis_link_type(keywords: u64) -> u16 {
    if keywords & ndis_keywords::NATIVE_802_11 != 0 {
        link_type::IEEE802_11
    } else if keywords & ndis_keywords::WIRELESS_WAN != 0 {
        link_type::RAW_IP
    } else {
        link_type::ETHERNET
    }
}

/// The link type of a PktMon `PacketType`.
pub fn pktmon_link_type(packet_type: u64) -> u16 {
    match packet_type {
        1 => link_type::ETHERNET,
        2 => link_type::IEEE802_11,
        3 => link_type::RAW_IP,
        // Unknown (0), HTTP (4) and later types: bytes without a known framing.
        _ => link_type::USER0,
    }
}

/// The direction of a PktMon `DirTag`.
pub fn pktmon_direction(dir_tag: u64) -> Option<Direction> {
    match dir_tag {
        1 | 3 | 5 => Some(Direction::Inbound),
        2 | 4 | 6 => Some(Direction::Outbound),
        _ => None,
    }
}

/// What the packet pass met.
#[derive(Debug, Default)]
pub struct PacketScan {
    /// Packets handed to the callback.
    pub packets: u64,
    /// Packet events whose fields could not be decoded (skipped), by
    /// provider, event id and reason.
    pub undecoded: Vec<(Capture, u16, String)>,
    /// Damage met in the trace, in order (everything readable was read).
    pub damage: Vec<Error>,
}

/// Fragments of an NDIS packet that spans several events, joined until the
/// event with the end keyword.
struct Pending {
    first: Packet<'static>,
}

/// The second pass: every packet in time order, handed to `emit`; an error
/// from `emit` stops the pass. `progress` receives the raw timestamp of each
/// event read.
pub fn for_each_packet(
    trace: &Trace<'_>,
    schemas: &Schemas,
    emit: &mut dyn FnMut(&Packet<'_>) -> io::Result<()>,
    progress: &mut dyn FnMut(u64),
) -> io::Result<PacketScan> {
    let clock = *trace.clock();
    let mut scan = PacketScan::default();
    let mut cache = LookupCache::default();
    let mut pending: HashMap<(u64, u16), Pending> = HashMap::new();
    let mut stream = trace.events();
    let mut count = 0u64;
    while let Some(item) = stream.next() {
        let event = match item {
            Ok(e) => e,
            Err(e) => {
                scan.damage.push(e);
                continue;
            }
        };
        count += 1;
        if count.is_multiple_of(4096) {
            progress(event.timestamp);
        }
        let capture = match (event.provider, event.id) {
            (p, NDIS_FRAGMENT | NDIS_VMSWITCH_FRAGMENT) if p == NDIS_PACKET_CAPTURE => Capture::NdisPacketCapture,
            (p, PKTMON_PACKET | PKTMON_DROP) if p == PKTMON => Capture::PktMon,
            _ => continue,
        };
        // Values borrow the event: a vector per packet event.
        let mut values = Vec::new();
        let schema = match decode_packet_event(schemas, &mut cache, &event, &mut values) {
            Ok(schema) => schema,
            Err(why) => {
                scan.undecoded.push((capture, event.id, why.reason().to_string()));
                continue;
            }
        };
        let fields = Fields { schema: &schema, values: &values };
        let filetime = clock.to_filetime(event.timestamp);
        let built = match capture {
            Capture::NdisPacketCapture => ndis_packet(&event, &fields, filetime),
            Capture::PktMon => pktmon_packet(&event, &fields, filetime),
        };
        let Some(packet) = built else {
            scan.undecoded.push((capture, event.id, String::from("the packet fields are missing")));
            continue;
        };
        if capture == Capture::PktMon {
            emit(&packet)?;
            scan.packets += 1;
            continue;
        }
        // NDIS: join fragments between the start and end keywords.
        let key = (packet.interface.id, packet.interface.link_type);
        let start = event.keywords & ndis_keywords::PACKET_START != 0;
        let end = event.keywords & ndis_keywords::PACKET_END != 0;
        if !start && let Some(p) = pending.get_mut(&key) {
            p.first.data.to_mut().extend_from_slice(&packet.data);
            if end && let Some(done) = pending.remove(&key) {
                emit_ndis(done.first, emit, &mut scan)?;
            }
            continue;
        }
        if start && !end {
            // A packet left open by a missing end event is written as it is.
            if let Some(open) = pending.remove(&key) {
                emit_ndis(open.first, emit, &mut scan)?;
            }
            pending.insert(key, Pending { first: packet.into_owned() });
            continue;
        }
        emit_ndis(packet, emit, &mut scan)?;
    }
    // Packets whose end event never came.
    let mut open: Vec<Pending> = pending.into_values().collect();
    open.sort_by_key(|p| p.first.timestamp);
    for p in open {
        emit_ndis(p.first, emit, &mut scan)?;
    }
    Ok(scan)
}

/// Decodes a packet event. A payload that ends after the packet bytes
/// (older Windows builds log fewer trailing fields, such as NDIS's
/// `GftFlowEntryId`) is decoded up to the bytes field (`Fragment`, `Payload`).
fn decode_packet_event<'a>(
    schemas: &Schemas,
    cache: &mut LookupCache,
    event: &Event<'a>,
    values: &mut Vec<Value<'a>>,
) -> Result<Arc<EventSchema>, Undecoded> {
    let why = match schemas.decode_cached(cache, &event.record, values) {
        Ok(schema) => return Ok(Arc::clone(schema)),
        Err(why @ Undecoded::PayloadMismatch(_)) => why,
        Err(why) => return Err(why),
    };
    let schema = schemas.schema_of(&event.record)?;
    let Some(bytes) = schema.fields.iter().position(|f| f.name == "Fragment" || f.name == "Payload") else {
        return Err(why);
    };
    values.clear();
    match payload::decode(&schema.fields[..=bytes], event.payload, event.pointer_size, values) {
        Ok(_) => Ok(schema),
        Err(_) => Err(why),
    }
}

/// Writes an NDIS packet with its inferred original length.
fn emit_ndis(
    mut packet: Packet<'_>,
    emit: &mut dyn FnMut(&Packet<'_>) -> io::Result<()>,
    scan: &mut PacketScan,
) -> io::Result<()> {
    let captured = u32::try_from(packet.data.len()).unwrap_or(u32::MAX);
    packet.original_len = inferred_original_len(packet.interface.link_type, &packet.data).unwrap_or(captured);
    emit(&packet)?;
    scan.packets += 1;
    Ok(())
}

fn ndis_packet<'a>(event: &Event<'a>, fields: &Fields<'_, '_, 'a>, filetime: i64) -> Option<Packet<'a>> {
    let miniport = fields.u64("MiniportIfIndex")?;
    let lower = fields.u64("LowerIfIndex")?;
    let data: &'a [u8] = match fields.value("Fragment")? {
        Value::Binary(b) => b,
        _ => return None,
    };
    let keywords = event.keywords;
    let direction = if keywords & ndis_keywords::SEND != 0 {
        Some(Direction::Outbound)
    } else if keywords & ndis_keywords::RECEIVE != 0 {
        Some(Direction::Inbound)
    } else {
        None
    };
    Some(Packet {
        interface: InterfaceKey {
            capture: Capture::NdisPacketCapture,
            id: (miniport & 0xFFFF_FFFF) << 32 | (lower & 0xFFFF_FFFF),
            link_type: ndis_link_type(keywords),
        },
        timestamp: event.timestamp,
        filetime,
        original_len: u32::try_from(data.len()).unwrap_or(u32::MAX),
        data: Cow::Borrowed(data),
        direction,
        process_id: event.process_id,
        thread_id: event.thread_id,
        pktmon: None,
    })
}

fn pktmon_packet<'a>(event: &Event<'a>, fields: &Fields<'_, '_, 'a>, filetime: i64) -> Option<Packet<'a>> {
    let component = fields.u64("ComponentId")?;
    let packet_type = fields.u64("PacketType")?;
    let data: &'a [u8] = match fields.value("Payload")? {
        Value::Binary(b) => b,
        _ => return None,
    };
    let captured = u32::try_from(data.len()).unwrap_or(u32::MAX);
    let original = fields.u64("OriginalPayloadSize").and_then(|n| u32::try_from(n).ok()).unwrap_or(captured);
    let info = PktMonInfo {
        group_id: fields.u64("PktGroupId").unwrap_or(0),
        number: fields.u64("PktNumber").unwrap_or(0),
        appearance: fields.u64("AppearanceCount").unwrap_or(0),
        dir_tag: fields.named("DirTag"),
        packet_type: fields.named("PacketType"),
        component,
        edge: fields.u64("EdgeId").unwrap_or(0),
        filter: fields.u64("FilterId").unwrap_or(0),
        drop: (event.id == PKTMON_DROP).then(|| (fields.named("DropReason"), fields.u64("DropLocation").unwrap_or(0))),
    };
    Some(Packet {
        interface: InterfaceKey { capture: Capture::PktMon, id: component, link_type: pktmon_link_type(packet_type) },
        timestamp: event.timestamp,
        filetime,
        original_len: original.max(captured),
        data: Cow::Borrowed(data),
        direction: fields.u64("DirTag").and_then(pktmon_direction),
        process_id: event.process_id,
        thread_id: event.thread_id,
        pktmon: Some(info),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4_frame(total_len: u16, captured_ip: usize) -> Vec<u8> {
        let mut f = vec![0u8; 14];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        let mut ip = vec![0u8; captured_ip];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&total_len.to_be_bytes());
        f.extend(ip);
        f
    }

    #[test]
    fn original_length_comes_from_the_ip_header_of_a_cut_frame() {
        assert_eq!(inferred_original_len(link_type::ETHERNET, &ipv4_frame(1500, 40)), Some(1514));
        // Complete (or padded) frames keep their captured length.
        assert_eq!(inferred_original_len(link_type::ETHERNET, &ipv4_frame(40, 46)), None);
        // Large send offload: a zero length says nothing.
        assert_eq!(inferred_original_len(link_type::ETHERNET, &ipv4_frame(0, 40)), None);
        let mut v6 = vec![0x60, 0, 0, 0, 0x05, 0xDC];
        v6.resize(60, 0);
        assert_eq!(inferred_original_len(link_type::RAW_IP, &v6), Some(1540));
        let mut vlan = vec![0u8; 18];
        vlan[12..14].copy_from_slice(&[0x81, 0x00]);
        vlan[16..18].copy_from_slice(&[0x86, 0xDD]);
        vlan.extend_from_slice(&[0x60, 0, 0, 0, 0, 100]);
        assert_eq!(inferred_original_len(link_type::ETHERNET, &vlan), Some(18 + 140));
        for short in 0..20 {
            let f = ipv4_frame(1500, 40);
            let _ = inferred_original_len(link_type::ETHERNET, &f[..short]);
            let _ = inferred_original_len(link_type::RAW_IP, &f[14..14 + short.min(40)]);
        }
    }

    #[test]
    fn link_types_and_directions() {
        assert_eq!(ndis_link_type(ndis_keywords::ETHERNET_802_3 | ndis_keywords::SEND), link_type::ETHERNET);
        assert_eq!(ndis_link_type(ndis_keywords::WIRELESS_WAN), link_type::RAW_IP);
        assert_eq!(ndis_link_type(ndis_keywords::NATIVE_802_11), link_type::IEEE802_11);
        assert_eq!(pktmon_link_type(1), link_type::ETHERNET);
        assert_eq!(pktmon_link_type(3), link_type::RAW_IP);
        assert_eq!(pktmon_direction(3), Some(Direction::Inbound));
        assert_eq!(pktmon_direction(4), Some(Direction::Outbound));
        assert_eq!(pktmon_direction(0), None);
    }

    #[test]
    fn process_names_by_time() {
        let mut context = Context::default();
        context.processes.insert(
            8,
            vec![
                ProcessName { timestamp: 100, started: true, name: "a.exe".into() },
                ProcessName { timestamp: 200, started: true, name: "b.exe".into() },
            ],
        );
        context.processes.insert(9, vec![ProcessName { timestamp: 500, started: false, name: "c.exe".into() }]);
        assert_eq!(context.process_name(8, 50), None);
        assert_eq!(context.process_name(8, 150), Some("a.exe"));
        assert_eq!(context.process_name(8, 250), Some("b.exe"));
        // A rundown at the end names the process before it.
        assert_eq!(context.process_name(9, 10), Some("c.exe"));
        assert_eq!(file_name(r"\Device\HarddiskVolume2\Windows\System32\svchost.exe"), "svchost.exe");
    }
}
