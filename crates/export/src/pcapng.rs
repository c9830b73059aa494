//! A pcapng block writer: the three blocks a capture file needs, written to
//! any [`Write`] as they come, so a file of any size streams.
//!
//! The layout follows the pcapng specification (IETF draft
//! `draft-ietf-opsawg-pcapng`), little-endian throughout:
//!
//! - every block is `type: u32, total length: u32, body, total length: u32`,
//!   the total counting all three parts, always a multiple of 4;
//! - options are `code: u16, length: u16, value` with the value padded with
//!   zeros to 4 bytes (the length does not count the padding), and a list of
//!   options ends with `opt_endofopt` (code 0, length 0);
//! - the [Section Header Block](write_section_header) starts the file and
//!   fixes the byte order, the [Interface Description
//!   Blocks](write_interface_description) number the interfaces of the
//!   section from 0 in the order they are written, and each [Enhanced Packet
//!   Block](write_enhanced_packet) names its interface by that number.
//!
//! Every function checks its bounds before writing a byte: an option value
//! longer than 65,535 bytes, or a block longer than `u32::MAX`, is an
//! [`io::ErrorKind::InvalidInput`] error and nothing of the block is written.

use std::io::{self, Write};

/// Block type of the Section Header Block.
pub const SECTION_HEADER: u32 = 0x0A0D_0D0A;
/// Block type of the Interface Description Block.
pub const INTERFACE_DESCRIPTION: u32 = 0x0000_0001;
/// Block type of the Enhanced Packet Block.
pub const ENHANCED_PACKET: u32 = 0x0000_0006;
/// The byte-order magic of a Section Header Block, written in the file's
/// (here: little-endian) byte order.
pub const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;

/// Link types (the `LINKTYPE_` values of tcpdump.org) the exporters use.
pub mod link_type {
    /// IEEE 802.3 Ethernet.
    pub const ETHERNET: u16 = 1;
    /// Raw IP: the packet starts with an IPv4 or IPv6 header.
    pub const RAW_IP: u16 = 101;
    /// IEEE 802.11 frames without a radio header.
    pub const IEEE802_11: u16 = 105;
    /// Reserved for private use: bytes no dissector is assumed to know.
    pub const USER0: u16 = 147;
}

/// Option codes.
pub mod option {
    /// `opt_endofopt`: ends an option list.
    pub const END_OF_OPTIONS: u16 = 0;
    /// `opt_comment`: UTF-8 text, allowed in every block.
    pub const COMMENT: u16 = 1;
    /// `shb_hardware`: UTF-8 description of the capturing hardware.
    pub const SHB_HARDWARE: u16 = 2;
    /// `shb_os`: UTF-8 name of the capturing operating system.
    pub const SHB_OS: u16 = 3;
    /// `shb_userappl`: UTF-8 name of the application that wrote the file.
    pub const SHB_USERAPPL: u16 = 4;
    /// `if_name`: UTF-8 name of the interface.
    pub const IF_NAME: u16 = 2;
    /// `if_description`: UTF-8 description of the interface.
    pub const IF_DESCRIPTION: u16 = 3;
    /// `if_tsresol`: one byte, the timestamp unit (high bit clear: 10^-n s).
    pub const IF_TSRESOL: u16 = 9;
    /// `epb_flags`: u32; bits 0-1 the direction (1 inbound, 2 outbound).
    pub const EPB_FLAGS: u16 = 2;
    /// `epb_packetid`: u64 shared by every copy of one packet.
    pub const EPB_PACKETID: u16 = 5;
}

/// `epb_flags` direction values (bits 0-1).
pub mod direction {
    /// The direction is not known.
    pub const UNKNOWN: u32 = 0;
    /// The packet was received.
    pub const INBOUND: u32 = 1;
    /// The packet was sent.
    pub const OUTBOUND: u32 = 2;
}

/// The largest value an option can carry (its length is a `u16`).
pub const MAX_OPTION_VALUE: usize = u16::MAX as usize;

/// One option of a block: its code and its value's bytes, unpadded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opt<'a> {
    pub code: u16,
    pub value: &'a [u8],
}

impl<'a> Opt<'a> {
    /// A text option (`opt_comment`, `if_name`, …): the UTF-8 bytes,
    /// without a terminator.
    pub fn text(code: u16, text: &'a str) -> Opt<'a> {
        Opt { code, value: text.as_bytes() }
    }

    /// An option of raw bytes (numbers must already be little-endian).
    pub fn bytes(code: u16, value: &'a [u8]) -> Opt<'a> {
        Opt { code, value }
    }
}

/// Cuts `text` to at most [`MAX_OPTION_VALUE`] bytes, at a character
/// boundary, so it fits a text option.
pub fn fit_text(text: &str) -> &str {
    &text[..text.floor_char_boundary(MAX_OPTION_VALUE)]
}

/// The number of zero bytes that pad `len` bytes to a multiple of 4.
pub const fn padding(len: usize) -> usize {
    (4 - len % 4) % 4
}

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what)
}

/// The bytes an option list takes: each option padded, then `opt_endofopt`;
/// nothing when the list is empty (the specification allows leaving the
/// list out). Checks each value's length.
fn options_len(options: &[Opt<'_>]) -> io::Result<usize> {
    if options.is_empty() {
        return Ok(0);
    }
    let mut len = 4; // opt_endofopt
    for o in options {
        if o.value.len() > MAX_OPTION_VALUE {
            return Err(invalid(format!(
                "pcapng option {}: {} bytes, at most {MAX_OPTION_VALUE}",
                o.code,
                o.value.len()
            )));
        }
        len += 4 + o.value.len() + padding(o.value.len());
    }
    Ok(len)
}

/// Appends an option list (checked by [`options_len`]) to `out`.
fn put_options(out: &mut Vec<u8>, options: &[Opt<'_>]) {
    if options.is_empty() {
        return;
    }
    for o in options {
        out.extend_from_slice(&o.code.to_le_bytes());
        // Checked by options_len: the value fits a u16.
        out.extend_from_slice(&(o.value.len() as u16).to_le_bytes());
        out.extend_from_slice(o.value);
        out.resize(out.len() + padding(o.value.len()), 0);
    }
    out.extend_from_slice(&option::END_OF_OPTIONS.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
}

/// The total length of a block whose fixed body is `fixed` bytes, followed
/// by `data` bytes (padded) and options of `options` bytes; an error when it
/// does not fit the `u32` length field.
fn block_len(fixed: usize, data: usize, options: usize) -> io::Result<u32> {
    let total = 12usize
        .checked_add(fixed)
        .and_then(|n| n.checked_add(data))
        .and_then(|n| n.checked_add(padding(data)))
        .and_then(|n| n.checked_add(options))
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| invalid(format!("pcapng block of {data} data bytes is too long")))?;
    Ok(total)
}

/// Writes one block: type, length, the body (fixed part, data padded to 4,
/// options), length again. The whole block is built first, then written
/// with one call.
fn write_block<W: Write + ?Sized>(
    w: &mut W,
    block_type: u32,
    fixed: &[u8],
    data: &[u8],
    options: &[Opt<'_>],
) -> io::Result<()> {
    let total = block_len(fixed.len(), data.len(), options_len(options)?)?;
    let mut block = Vec::with_capacity(total as usize);
    block.extend_from_slice(&block_type.to_le_bytes());
    block.extend_from_slice(&total.to_le_bytes());
    block.extend_from_slice(fixed);
    block.extend_from_slice(data);
    block.resize(block.len() + padding(data.len()), 0);
    put_options(&mut block, options);
    block.extend_from_slice(&total.to_le_bytes());
    debug_assert_eq!(block.len(), total as usize);
    w.write_all(&block)
}

/// Writes a Section Header Block: byte-order magic, version 1.0, section
/// length -1 (not stated: the file streams), then `options` (for example
/// `shb_userappl`, `shb_os`).
///
/// Body: `magic: u32, major: u16 = 1, minor: u16 = 0, section length: i64`.
pub fn write_section_header<W: Write + ?Sized>(w: &mut W, options: &[Opt<'_>]) -> io::Result<()> {
    let mut fixed = [0u8; 16];
    fixed[0..4].copy_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
    fixed[4..6].copy_from_slice(&1u16.to_le_bytes());
    fixed[6..8].copy_from_slice(&0u16.to_le_bytes());
    fixed[8..16].copy_from_slice(&(-1i64).to_le_bytes());
    write_block(w, SECTION_HEADER, &fixed, &[], options)
}

/// Writes an Interface Description Block: the interface's link type and
/// snapshot length (0: no limit), then `options` (`if_name`,
/// `if_description`, `if_tsresol`, …). The interface's number is the count
/// of IDBs written before it in the section.
///
/// Body: `link type: u16, reserved: u16 = 0, snap length: u32`.
pub fn write_interface_description<W: Write + ?Sized>(
    w: &mut W,
    link_type: u16,
    snap_len: u32,
    options: &[Opt<'_>],
) -> io::Result<()> {
    let mut fixed = [0u8; 8];
    fixed[0..2].copy_from_slice(&link_type.to_le_bytes());
    fixed[4..8].copy_from_slice(&snap_len.to_le_bytes());
    write_block(w, INTERFACE_DESCRIPTION, &fixed, &[], options)
}

/// Writes an Enhanced Packet Block: the packet's interface number, its
/// timestamp in the interface's units (`if_tsresol`; 10^-6 s when the IDB
/// does not say), the captured bytes and the length the packet had on the
/// wire (at least the captured length: a smaller value is raised to it),
/// then `options` (`opt_comment`, `epb_flags`, `epb_packetid`, …).
///
/// Body: `interface: u32, timestamp high: u32, timestamp low: u32,
/// captured length: u32, original length: u32, data (padded to 4)`.
pub fn write_enhanced_packet<W: Write + ?Sized>(
    w: &mut W,
    interface: u32,
    timestamp: u64,
    data: &[u8],
    original_len: u32,
    options: &[Opt<'_>],
) -> io::Result<()> {
    let captured =
        u32::try_from(data.len()).map_err(|_| invalid(format!("pcapng packet of {} bytes is too long", data.len())))?;
    let mut fixed = [0u8; 20];
    fixed[0..4].copy_from_slice(&interface.to_le_bytes());
    fixed[4..8].copy_from_slice(&((timestamp >> 32) as u32).to_le_bytes());
    fixed[8..12].copy_from_slice(&(timestamp as u32).to_le_bytes());
    fixed[12..16].copy_from_slice(&captured.to_le_bytes());
    fixed[16..20].copy_from_slice(&original_len.max(captured).to_le_bytes());
    write_block(w, ENHANCED_PACKET, &fixed, data, options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_rounds_to_four() {
        assert_eq!([0, 1, 2, 3, 4, 5].map(padding), [0, 3, 2, 1, 0, 3]);
    }

    #[test]
    fn a_tiny_section_is_byte_exact() {
        let mut out = Vec::new();
        write_section_header(&mut out, &[]).unwrap();
        write_interface_description(&mut out, link_type::ETHERNET, 0, &[Opt::bytes(option::IF_TSRESOL, &[7])]).unwrap();
        let flags = direction::INBOUND.to_le_bytes();
        let options = [Opt::text(option::COMMENT, "PID=4"), Opt::bytes(option::EPB_FLAGS, &flags)];
        write_enhanced_packet(&mut out, 0, 0x0000_0001_0000_0002, &[0xAA, 0xBB, 0xCC], 60, &options).unwrap();
        #[rustfmt::skip]
        let want: Vec<u8> = [
            // SHB: type, length 28, magic, version 1.0, section length -1, length.
            &[0x0A, 0x0D, 0x0D, 0x0A, 28, 0, 0, 0][..],
            &[0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0],
            &[0xFF; 8],
            &[28, 0, 0, 0],
            // IDB: type 1, length 32, Ethernet, reserved, snaplen 0,
            // if_tsresol = 7 (padded), end of options, length.
            &[1, 0, 0, 0, 32, 0, 0, 0],
            &[1, 0, 0, 0, 0, 0, 0, 0],
            &[9, 0, 1, 0, 7, 0, 0, 0],
            &[0, 0, 0, 0],
            &[32, 0, 0, 0],
            // EPB: type 6, length 60, interface 0, timestamp high 1, low 2,
            // captured 3, original 60, data padded to 4,
            // opt_comment "PID=4" (5 bytes, padded to 8), epb_flags 1,
            // end of options, length.
            &[6, 0, 0, 0, 60, 0, 0, 0],
            &[0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0],
            &[3, 0, 0, 0, 60, 0, 0, 0],
            &[0xAA, 0xBB, 0xCC, 0],
            &[1, 0, 5, 0, b'P', b'I', b'D', b'=', b'4', 0, 0, 0],
            &[2, 0, 4, 0, 1, 0, 0, 0],
            &[0, 0, 0, 0],
            &[60, 0, 0, 0],
        ]
        .concat();
        assert_eq!(out, want);
    }

    #[test]
    fn original_length_is_at_least_the_captured_length() {
        let mut out = Vec::new();
        write_enhanced_packet(&mut out, 3, 0, &[1, 2, 3, 4, 5], 0, &[]).unwrap();
        assert_eq!(out.len(), 12 + 20 + 8);
        assert_eq!(&out[20..28], &[5, 0, 0, 0, 5, 0, 0, 0]);
    }

    #[test]
    fn oversized_options_are_refused_before_writing() {
        let long = vec![0u8; MAX_OPTION_VALUE + 1];
        let mut out = Vec::new();
        let e = write_enhanced_packet(&mut out, 0, 0, &[], 0, &[Opt::bytes(option::COMMENT, &long)]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(out.is_empty());
        let fits = vec![0u8; MAX_OPTION_VALUE];
        write_enhanced_packet(&mut out, 0, 0, &[], 0, &[Opt::bytes(option::COMMENT, &fits)]).unwrap();
        assert_eq!(out.len() % 4, 0);
    }

    #[test]
    fn long_text_is_cut_at_a_character_boundary() {
        let text = "é".repeat(40_000); // 80,000 bytes
        let cut = fit_text(&text);
        assert!(cut.len() <= MAX_OPTION_VALUE && cut.len() >= MAX_OPTION_VALUE - 1);
        assert_eq!(fit_text("short"), "short");
    }
}
