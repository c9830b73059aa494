//! Hostile traces: real traces with one lie each, built byte by byte (without
//! the reader, so a reader bug cannot shape its own test input). Each builder
//! names the defect class of issue 12 it reproduces.

/// Size of a buffer header; records start after it.
pub const BUFFER_HEADER: usize = 0x48;

/// Offsets in a buffer header.
pub mod buffer {
    pub const SIZE: usize = 0x00;
    pub const SEQUENCE: usize = 0x18;
    pub const FILLED: usize = 0x30;
    pub const FLAGS: usize = 0x34;
    pub const COMPRESSED: u16 = 0x40;
}

/// Offsets in TRACE_LOGFILE_HEADER (64-bit form), from the header event's payload.
pub mod logfile {
    pub const BUFFER_SIZE: usize = 0x00;
    pub const NUMBER_OF_PROCESSORS: usize = 0x0C;
    pub const END_TIME: usize = 0x10;
    pub const BUFFERS_WRITTEN: usize = 0x24;
    pub const POINTER_SIZE: usize = 0x2C;
    pub const EVENTS_LOST: usize = 0x30;
    /// BuffersLost, after the time zone (64-bit form).
    pub const BUFFERS_LOST: usize = 0x114;
    pub const LOGGER_NAME: usize = 0x118;
}

/// (file offset, size) of every buffer, by following the size fields from
/// the start until a zero size or the end of the file.
pub fn buffers(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + BUFFER_HEADER <= bytes.len() {
        let size = u32_at(bytes, at) as usize;
        if size < BUFFER_HEADER || at + size > bytes.len() {
            break;
        }
        out.push((at, size));
        at += size;
    }
    out
}

pub fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

pub fn put_u32(bytes: &mut [u8], at: usize, v: u32) {
    bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

pub fn put_u64(bytes: &mut [u8], at: usize, v: u64) {
    bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// File offset of the trace header event's payload (TRACE_LOGFILE_HEADER):
/// the first record of the first buffer, a SYSTEM header (0x20 bytes) or a
/// FULL_HEADER (0x30 bytes).
pub fn logfile_payload(bytes: &[u8]) -> usize {
    let header_type = bytes[BUFFER_HEADER + 2];
    let header_len = match header_type {
        0x01 | 0x02 => 0x20,
        0x0A | 0x14 => 0x30,
        other => panic!("first record has header type {other:#x}; expected a trace header"),
    };
    assert_eq!(bytes[BUFFER_HEADER + 3], 0xC0, "first record has no trace header marker");
    BUFFER_HEADER + header_len
}

/// Sets a TRACE_LOGFILE_HEADER field.
pub fn set_logfile_u32(bytes: &mut [u8], field: usize, v: u32) {
    let at = logfile_payload(bytes) + field;
    put_u32(bytes, at, v);
}

/// An XPRESS stream of `literal` followed by one match that repeats it until
/// `total` bytes have been produced (`literal` must be at most 8 KiB).
pub fn xpress_repeat(literal: &[u8], total: usize) -> Vec<u8> {
    xpress_lead_then_repeat(&[], literal, total)
}

/// An XPRESS stream of `lead`, then `unit` repeated until `total` bytes.
pub fn xpress_lead_then_repeat(lead: &[u8], unit: &[u8], total: usize) -> Vec<u8> {
    let literal: Vec<u8> = [lead, unit].concat();
    let literal = &literal[..];
    assert!(!unit.is_empty() && unit.len() <= 8192 && total > literal.len() + 3);
    let mut out = Vec::new();
    let mut flag_at = 0;
    let mut used = 32;
    let mut flags: u32 = 0;
    let mut token = |out: &mut Vec<u8>, is_match: bool, bytes: &[u8]| {
        if used == 32 {
            if !out.is_empty() {
                out[flag_at..flag_at + 4].copy_from_slice(&flags.to_le_bytes());
            }
            flag_at = out.len();
            out.extend_from_slice(&[0; 4]);
            flags = 0;
            used = 0;
        }
        if is_match {
            flags |= 1 << (31 - used);
        }
        used += 1;
        out.extend_from_slice(bytes);
    };
    for &b in literal {
        token(&mut out, false, &[b]);
    }
    let length = total - literal.len();
    let mut m = Vec::new();
    m.extend_from_slice(&((((unit.len() - 1) as u16) << 3) | 7).to_le_bytes());
    m.push(0x0F); // half-byte 15: the length goes on in the next byte
    m.push(0xFF); // 255: then 16 bits, 0: then 32 bits
    m.extend_from_slice(&0u16.to_le_bytes());
    m.extend_from_slice(&((length - 3) as u32).to_le_bytes());
    token(&mut out, true, &m);
    // Unused flag bits are literals with no input: the stream's end.
    out[flag_at..flag_at + 4].copy_from_slice(&flags.to_le_bytes());
    out
}

/// A compressed buffer: `template`'s header with this stream and the size
/// it claims once expanded.
pub fn compressed_buffer(template: &[u8], stream: &[u8], expanded: usize, sequence: u64) -> Vec<u8> {
    let mut b = template[..BUFFER_HEADER].to_vec();
    b.extend_from_slice(stream);
    let size = b.len() as u32;
    put_u32(&mut b, buffer::SIZE, size);
    put_u32(&mut b, buffer::FILLED, (BUFFER_HEADER + expanded) as u32);
    let flags = u16::from_le_bytes([b[buffer::FLAGS], b[buffer::FLAGS + 1]]) | buffer::COMPRESSED;
    b[buffer::FLAGS..buffer::FLAGS + 2].copy_from_slice(&flags.to_le_bytes());
    put_u64(&mut b, buffer::SEQUENCE, sequence);
    b
}

/// Class 1, decompression bomb: `count` buffers of a few dozen bytes that
/// each expand to `claim` bytes of zeros, after a real compressed trace.
pub fn decompression_bomb(base: &[u8], count: usize, claim: usize) -> Vec<u8> {
    let list = buffers(base);
    let (template_at, _) =
        *list.iter().find(|&&(at, _)| base[at + buffer::FLAGS] & 0x40 != 0).expect("a compressed buffer");
    let template = base[template_at..template_at + BUFFER_HEADER].to_vec();
    let mut out = base.to_vec();
    let mut sequence = list.len() as u64;
    for _ in 0..count {
        out.extend(compressed_buffer(&template, &xpress_repeat(&[0], claim), claim, sequence));
        sequence += 1;
    }
    set_logfile_u32(&mut out, logfile::BUFFERS_WRITTEN, sequence as u32);
    out
}

/// Class 2, event amplification: the session's buffer size is raised to
/// 16 MiB and `count` compressed buffers each repeat `record` (one real
/// record, 8-aligned) until they are full — a few KiB of file, millions of events.
pub fn event_amplification(base: &[u8], record: &[u8], count: usize) -> Vec<u8> {
    const SIXTEEN_MIB: usize = 16 << 20;
    assert_eq!(record.len() % 8, 0);
    let list = buffers(base);
    let (template_at, _) =
        *list.iter().find(|&&(at, _)| base[at + buffer::FLAGS] & 0x40 != 0).expect("a compressed buffer");
    let template = base[template_at..template_at + BUFFER_HEADER].to_vec();
    let mut out = base.to_vec();
    set_logfile_u32(&mut out, logfile::BUFFER_SIZE, SIXTEEN_MIB as u32);
    let expanded = (SIXTEEN_MIB - BUFFER_HEADER) / record.len() * record.len();
    let mut sequence = list.len() as u64;
    for _ in 0..count {
        out.extend(compressed_buffer(&template, &xpress_repeat(record, expanded), expanded, sequence));
        sequence += 1;
    }
    set_logfile_u32(&mut out, logfile::BUFFERS_WRITTEN, sequence as u32);
    out
}

/// Class 2, the merge's side: `count` buffers of 16 MiB that each begin with
/// `first` and then repeat `rest`, so that every buffer's time range
/// overlaps every other's (records 8-aligned, `first` earlier than `rest`).
pub fn overlapping_buffers(base: &[u8], first: &[u8], rest: &[u8], count: usize) -> Vec<u8> {
    const SIXTEEN_MIB: usize = 16 << 20;
    let list = buffers(base);
    let (template_at, _) =
        *list.iter().find(|&&(at, _)| base[at + buffer::FLAGS] & 0x40 != 0).expect("a compressed buffer");
    let template = base[template_at..template_at + BUFFER_HEADER].to_vec();
    let mut out = base.to_vec();
    set_logfile_u32(&mut out, logfile::BUFFER_SIZE, SIXTEEN_MIB as u32);
    let expanded = first.len() + (SIXTEEN_MIB - BUFFER_HEADER - first.len()) / rest.len() * rest.len();
    let mut sequence = list.len() as u64;
    for _ in 0..count {
        let stream = xpress_lead_then_repeat(first, rest, expanded);
        out.extend(compressed_buffer(&template, &stream, expanded, sequence));
        sequence += 1;
    }
    set_logfile_u32(&mut out, logfile::BUFFERS_WRITTEN, sequence as u32);
    out
}

/// Class 3: buffer `index`'s size field set to 0 (the rest of the file intact).
pub fn zero_buffer_size(base: &[u8], index: usize) -> Vec<u8> {
    let (at, _) = buffers(base)[index];
    let mut out = base.to_vec();
    put_u32(&mut out, at + buffer::SIZE, 0);
    out
}

/// Class 4: a copy of buffer `index` inserted right after it.
pub fn duplicated_buffer(base: &[u8], index: usize) -> Vec<u8> {
    let (at, size) = buffers(base)[index];
    let mut out = base[..at + size].to_vec();
    out.extend_from_slice(&base[at..at + size]);
    out.extend_from_slice(&base[at + size..]);
    out
}

/// Class 5: the file cut right before buffer `index`.
pub fn cut_before_buffer(base: &[u8], index: usize) -> Vec<u8> {
    let (at, _) = buffers(base)[index];
    base[..at].to_vec()
}

/// Class 8: the trace header's sizes and counts set to all ones.
pub fn implausible_header(base: &[u8]) -> Vec<u8> {
    let mut out = base.to_vec();
    for field in [logfile::BUFFER_SIZE, logfile::NUMBER_OF_PROCESSORS, logfile::POINTER_SIZE, logfile::EVENTS_LOST] {
        set_logfile_u32(&mut out, field, u32::MAX);
    }
    let at = logfile_payload(&out) + logfile::BUFFERS_LOST;
    put_u32(&mut out, at, u32::MAX);
    out
}

/// Strings an attacker puts in a trace: terminal escapes (clear screen,
/// set the window title, colours), line breaks, bidirectional overrides,
/// C1 controls, and spreadsheet formulas.
pub const HOSTILE_STRINGS: &[&str] = &[
    "evil\u{1b}[2J\u{1b}[Hcleared",
    "\u{1b}]0;owned\u{7}title",
    "line1\r\nline2\nline3\rover",
    "tab\there\u{0}nul",
    "rtl\u{202e}gpj.exe",
    "c1\u{9b}31mred",
    "=cmd|' /C calc'!A0",
    "+SUM(1,1)",
    "-2+3",
    "@SUM(A1)",
    "\tleading tab",
    "\rleading cr",
];

/// Whether `bytes` holds a byte that a terminal acts on: C0 controls but
/// tab and line feed, DEL, and the UTF-8 forms of C1 controls and of the
/// bidirectional overrides.
pub fn terminal_controls(bytes: &[u8]) -> Vec<usize> {
    let text = String::from_utf8_lossy(bytes);
    let mut at = Vec::new();
    for (i, c) in text.char_indices() {
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if (c.is_control() && c != '\n' && c != '\t') || bidi {
            at.push(i);
        }
    }
    at
}

/// CSV cells (RFC 4180, as our writers quote them) that a spreadsheet reads
/// as a formula: beginning with `=`, `+`, `-`, `@`, tab or CR, not a number.
pub fn formula_cells(csv: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let mut cell = String::new();
    let mut quoted = false;
    let mut chars = csv.chars().peekable();
    let mut finish = |cell: &mut String| {
        let starts = cell.starts_with(['=', '+', '-', '@', '\t', '\r']);
        if starts && cell.parse::<f64>().is_err() {
            bad.push(cell.clone());
        }
        cell.clear();
    };
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => finish(&mut cell),
            '\n' if !quoted => finish(&mut cell),
            '\r' if !quoted && chars.peek() == Some(&'\n') => {}
            c => cell.push(c),
        }
    }
    finish(&mut cell);
    bad
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_cells_are_found_outside_quotes_and_numbers_pass() {
        let csv = "a,=1+1,\"x,=y\",-5,\"-x\"\r\n@b,'=safe\r\n";
        assert_eq!(formula_cells(csv), ["=1+1", "-x", "@b"]);
    }

    #[test]
    fn terminal_controls_spares_tab_and_line_feed() {
        assert_eq!(terminal_controls(b"a\tb\nc"), Vec::<usize>::new());
        assert_eq!(terminal_controls("x\u{1b}[2J".as_bytes()), [1]);
        assert_eq!(terminal_controls("\u{202e}".as_bytes()), [0]);
    }
}
