//! HTTP header blocks as WebIO logs them (events 100 and 101): the start
//! line, then `Name: value` lines, CRLF-separated, ending in an empty line.

/// The header fields of a block (its start line left out), in order, names
/// as written; lines without a colon are skipped.
pub fn fields(block: &str) -> impl Iterator<Item = (&str, &str)> {
    block
        .split('\n')
        .skip(1)
        .map(|line| line.trim_end_matches(['\r', '\0']))
        .take_while(|line| !line.is_empty())
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim(), value.trim()))
}

/// The value of the first field named `name` (case-insensitive).
pub fn field<'a>(block: &'a str, name: &str) -> Option<&'a str> {
    fields(block).find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v)
}

/// The status code of a response block (`HTTP/1.1 302 Found` → 302).
pub fn status(block: &str) -> Option<u16> {
    let line = block.split('\n').next()?;
    let mut parts = line.split_whitespace();
    parts.next().filter(|v| v.starts_with("HTTP/"))?;
    parts.next()?.parse().ok()
}

/// The block's size on the wire up to and including its final empty line:
/// what HAR calls `headersSize`.
pub fn wire_size(block: &str) -> usize {
    let body = block.trim_end_matches('\0');
    if body.ends_with("\r\n\r\n") { body.len() } else { body.trim_end_matches(['\r', '\n']).len() + 4 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_block() {
        let block =
            "HTTP/1.1 302 Found\r\nLocation: https://x/\r\nContent-Type: text/html; charset=utf-8\r\nX-Empty:\r\n\r\n";
        assert_eq!(fields(block).count(), 3);
        assert_eq!(field(block, "content-type"), Some("text/html; charset=utf-8"));
        assert_eq!(field(block, "location"), Some("https://x/"));
        assert_eq!(field(block, "X-Empty"), Some(""));
        assert_eq!(status(block), Some(302));
        assert_eq!(wire_size(block), block.len());
        assert_eq!(wire_size("GET / HTTP/1.1\r\nHost: x"), "GET / HTTP/1.1\r\nHost: x\r\n\r\n".len());
        assert_eq!(status("GET / HTTP/1.1\r\n"), None);
    }
}
