//! The pcapng export of real traces: the blocks are well formed (walked here
//! by an independent reader of the block structure), and truncated or
//! garbled traces never make the exporter panic or write a broken file.

use nettrail_decode::Schemas;
use nettrail_etl::Trace;
use nettrail_export::Summary;
use nettrail_testkit::{Rng, corpus_file};

const PKTMON_TRACE: &str = "demikernel__PktMon.etl";

/// Exports a trace from its bytes; `None` when the bytes are not a trace.
fn export(bytes: &[u8]) -> Option<(Vec<u8>, Summary)> {
    let trace = Trace::parse(bytes).ok()?;
    let mut schemas = Schemas::new();
    let _problems = schemas.learn(&trace);
    let mut out = Vec::new();
    let summary =
        nettrail_export::write_pcapng(&trace, &schemas, &mut out, &mut |_| {}).expect("writing to memory cannot fail");
    Some((out, summary))
}

/// What a walk over the blocks found.
#[derive(Debug, Default, PartialEq, Eq)]
struct Blocks {
    interfaces: Vec<u16>,
    packets: u64,
    /// (interface, captured, original) of the first packet.
    first: Option<(u32, u32, u32)>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Walks a little-endian pcapng file block by block, checking every length
/// and every option list; panics on the first fault.
fn walk(file: &[u8]) -> Blocks {
    let mut blocks = Blocks::default();
    let mut at = 0;
    let mut first_block = true;
    while at < file.len() {
        assert!(file.len() - at >= 12, "a block header is cut at {at}");
        let kind = u32_at(file, at);
        let len = u32_at(file, at + 4) as usize;
        assert!(len >= 12 && len.is_multiple_of(4), "block at {at}: length {len}");
        assert!(at + len <= file.len(), "block at {at} runs past the end");
        assert_eq!(u32_at(file, at + len - 4), len as u32, "block at {at}: trailing length");
        let body = &file[at + 8..at + len - 4];
        if first_block {
            assert_eq!(kind, 0x0A0D_0D0A, "the file starts with a section header");
            assert_eq!(u32_at(body, 0), 0x1A2B_3C4D);
            assert_eq!(&body[4..8], &[1, 0, 0, 0], "version 1.0");
            walk_options(&body[16..]);
            first_block = false;
        } else {
            match kind {
                1 => {
                    blocks.interfaces.push(u16::from_le_bytes([body[0], body[1]]));
                    walk_options(&body[8..]);
                }
                6 => {
                    let interface = u32_at(body, 0);
                    let captured = u32_at(body, 12);
                    let original = u32_at(body, 16);
                    assert!((interface as usize) < blocks.interfaces.len(), "packet on an undescribed interface");
                    assert!(original >= captured);
                    let padded = (captured as usize).div_ceil(4) * 4;
                    assert!(20 + padded <= body.len(), "packet data runs past its block");
                    walk_options(&body[20 + padded..]);
                    blocks.first.get_or_insert((interface, captured, original));
                    blocks.packets += 1;
                }
                other => panic!("unexpected block type {other:#x}"),
            }
        }
        at += len;
    }
    blocks
}

/// Checks an option list: each option inside the block, the list ended by
/// `opt_endofopt` (or absent).
fn walk_options(mut list: &[u8]) {
    while !list.is_empty() {
        assert!(list.len() >= 4, "an option header is cut");
        let code = u16::from_le_bytes([list[0], list[1]]);
        let len = u16::from_le_bytes([list[2], list[3]]) as usize;
        if code == 0 {
            assert_eq!(len, 0);
            assert_eq!(list.len(), 4, "bytes after opt_endofopt");
            return;
        }
        let padded = len.div_ceil(4) * 4;
        assert!(4 + padded <= list.len(), "option {code} runs past its block");
        list = &list[4 + padded..];
    }
}

#[test]
fn the_pktmon_capture_exports_every_packet_event() {
    let bytes = std::fs::read(corpus_file(PKTMON_TRACE)).unwrap();
    let (file, summary) = export(&bytes).expect("the corpus trace parses");
    assert!(summary.damage.is_empty(), "{:?}", summary.damage);
    assert!(summary.undecoded.is_empty(), "{:?}", summary.undecoded);
    // The catalog's count of PktMon event 160 (the trace has no event 170).
    let entry = nettrail_testkit::catalog_entry(PKTMON_TRACE);
    let pktmon =
        entry["providers"].as_array().unwrap().iter().find(|p| p["name"] == "Microsoft-Windows-PktMon").unwrap();
    let packets = pktmon["top_ids"].as_array().unwrap().iter().find(|t| t[0] == "id160").unwrap()[1].as_u64().unwrap();
    assert_eq!(packets, 114);
    assert_eq!(summary.packets, packets);
    let blocks = walk(&file);
    assert_eq!(blocks.packets, packets);
    // Four components saw the pings, all Ethernet; 98-byte frames, uncut.
    assert_eq!(blocks.interfaces, [1, 1, 1, 1]);
    assert_eq!(blocks.first, Some((0, 98, 98)));
    let per_interface: Vec<u64> = summary.interfaces.iter().map(|i| i.packets).collect();
    assert_eq!(per_interface.iter().sum::<u64>(), packets);
    assert!(summary.interfaces[0].name.contains("component 59"), "{:?}", summary.interfaces[0]);
    // The same trace exports to the same bytes.
    assert_eq!(export(&bytes).unwrap().0, file);
}

#[test]
fn truncated_traces_export_what_they_hold_and_never_panic() {
    let bytes = std::fs::read(corpus_file(PKTMON_TRACE)).unwrap();
    let full = export(&bytes).unwrap().1.packets;
    let mut exported = 0;
    for cut in (0..bytes.len()).step_by(61).chain([bytes.len() - 1]) {
        let Some((file, summary)) = export(&bytes[..cut]) else { continue };
        let blocks = walk(&file);
        assert_eq!(blocks.packets, summary.packets, "cut at {cut}");
        assert!(summary.packets <= full, "cut at {cut}");
        if summary.packets > 0 {
            exported += 1;
        }
        // A cut inside the data buffers is damage, reported.
        if cut > 0x2000 && cut < bytes.len() {
            assert!(!summary.damage.is_empty(), "cut at {cut}: no damage reported");
        }
    }
    assert!(exported > 0, "no truncated trace kept a packet");
}

#[test]
fn garbled_traces_never_panic() {
    let bytes = std::fs::read(corpus_file(PKTMON_TRACE)).unwrap();
    let mut rng = Rng(0x5EED_0F9C_4B01);
    for round in 0..300 {
        let mut garbled = bytes.clone();
        let flips = 1 + rng.below(16) as usize;
        for _ in 0..flips {
            let at = rng.below(garbled.len() as u64) as usize;
            garbled[at] = rng.next_u64() as u8;
        }
        if round % 3 == 0 {
            // Also overwrite a whole run, as a torn write would.
            let at = rng.below(garbled.len() as u64) as usize;
            let run = rng.bytes(64.min(garbled.len() - at));
            garbled[at..at + run.len()].copy_from_slice(&run);
        }
        if let Some((file, summary)) = export(&garbled) {
            let blocks = walk(&file);
            assert_eq!(blocks.packets, summary.packets, "round {round}");
        }
    }
}
