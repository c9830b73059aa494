//! What a file that is not a trace looks like, so the error can say what it
//! is instead of describing its first bytes as a damaged buffer header.

use crate::buffer::BUFFER_HEADER_SIZE;

/// Signatures of files people mistake for traces or pass by accident.
const SIGNATURES: &[(&[u8], &str)] = &[
    (b"PK\x03\x04", "a ZIP archive: traces are often shared zipped; extract the .etl first"),
    (b"MSCF", "a Microsoft Cabinet archive: extract the .etl first"),
    (b"\x1f\x8b", "a gzip-compressed file: decompress it first"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive: extract the .etl first"),
    (b"\xfd7zXZ\x00", "an xz-compressed file: decompress it first"),
    (b"\x28\xb5\x2f\xfd", "a zstd-compressed file: decompress it first"),
    (b"BZh", "a bzip2-compressed file: decompress it first"),
    (b"\x0a\x0d\x0d\x0a", "a pcapng packet capture (nettrail writes these; it reads .etl traces)"),
    (b"\xd4\xc3\xb2\xa1", "a pcap packet capture"),
    (b"\xa1\xb2\xc3\xd4", "a pcap packet capture"),
    (b"ElfFile\x00", "a Windows event log (.evtx), not an ETW trace"),
    (b"MZ", "a Windows executable or DLL"),
    (b"\x7fELF", "an ELF executable"),
    (b"%PDF", "a PDF document"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"PAR1", "a Parquet file"),
    (b"\xef\xbb\xbf", "a text file (UTF-8 with a byte-order mark)"),
    (b"\xff\xfe", "a text file (UTF-16 with a byte-order mark)"),
];

/// A short description of what `data` is when it is recognisably not an
/// `.etl` trace; `None` when it may be a damaged one (or is empty).
pub(crate) fn looks_like(data: &[u8]) -> Option<String> {
    if data.is_empty() {
        return None;
    }
    if let Some((_, what)) = SIGNATURES.iter().find(|(magic, _)| data.starts_with(magic)) {
        return Some((*what).to_string());
    }
    let head = &data[..data.len().min(64 << 10)];
    if head.iter().all(|&b| b == 0) {
        let whole = if head.len() == data.len() { "the file holds" } else { "its first 64 KiB hold" };
        return Some(format!("{whole} only zero bytes (a preallocated trace file nothing was written to?)"));
    }
    if zeros_became_spaces(data) {
        return Some(
            "it looks like an .etl whose zero bytes were all replaced by spaces (0x20), as a text-mode copy does; \
             the original bytes cannot be recovered from it"
                .to_string(),
        );
    }
    if is_text(head) {
        let first_line: String = head
            .split(|&b| b == b'\n')
            .next()
            .map(|l| String::from_utf8_lossy(&l[..l.len().min(40)]).into_owned())
            .unwrap_or_default();
        let kind = match first_line.trim_start().as_bytes().first() {
            Some(b'<') => "an XML or HTML file (a WPR profile or a manifest? `--manifest` takes manifests)",
            Some(b'{') | Some(b'[') => "a JSON file",
            _ => "a text file",
        };
        return Some(format!("{kind}; it begins {first_line:?}"));
    }
    None
}

/// Whether `head` (at least the first buffer header and 8 bytes) may begin
/// a trace: a plausible buffer size and a trace header record's marker.
pub(crate) fn may_begin_a_trace(head: &[u8]) -> bool {
    let size = head.first_chunk::<4>().map(|b| u32::from_le_bytes(*b)).unwrap_or(0);
    let marker = head.get(BUFFER_HEADER_SIZE + 3).copied();
    (BUFFER_HEADER_SIZE as u32..=crate::buffer::MAX_BUFFER_SIZE).contains(&size) && marker.is_none_or(|m| m == 0xC0)
}

/// Whether the file looks like a trace whose zero bytes all became spaces:
/// no zero byte, many spaces, and a trace header record's marker and type
/// where the first record begins.
fn zeros_became_spaces(data: &[u8]) -> bool {
    let Some(head) = data.get(..BUFFER_HEADER_SIZE + 0x40) else { return false };
    let spaces = head.iter().filter(|&&b| b == 0x20).count();
    !head.contains(&0)
        && spaces >= head.len() / 4
        && head[BUFFER_HEADER_SIZE + 3] == 0xC0
        && matches!(head[BUFFER_HEADER_SIZE + 2], 0x01 | 0x02 | 0x0A | 0x14)
}

/// Mostly printable text: tabs, line ends, printable ASCII and UTF-8.
fn is_text(head: &[u8]) -> bool {
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        // A cut in the middle of a UTF-8 sequence at the end of the sample.
        Err(e) if e.valid_up_to() + 4 > head.len() => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or(""),
        Err(_) => return false,
    };
    !text.is_empty() && text.chars().all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r'))
}

#[cfg(test)]
mod tests {
    use super::looks_like;

    #[test]
    fn names_common_files() {
        assert!(looks_like(b"PK\x03\x04rest").unwrap().contains("ZIP"));
        assert!(
            looks_like(b"hello, world\nsecond line\n").unwrap().starts_with("a text file; it begins \"hello, world\"")
        );
        assert!(looks_like(&[0; 4096]).unwrap().contains("only zero bytes"));
        assert!(looks_like(b"<?xml version=\"1.0\"?>").unwrap().contains("XML"));
        assert_eq!(looks_like(&[0x00, 0x20, 0x00, 0x00, 0x01, 0x02]), None);
        assert_eq!(looks_like(b""), None);
    }
}
