//! Event messages: a format string whose `%1`, `%2`… are replaced by the
//! event's properties as TDH formats them (FormatMessage conventions:
//! `%%` is a percent sign, `%n` a line break, `%t` a tab, `%r` a carriage
//! return, `%b` a space, `%.` and `%!` the character itself).

use crate::format;
use crate::schema::Field;
use crate::value::Value;

/// Appends `template` with its inserts filled from `fields`/`values` (the
/// top-level properties, 1-based). An insert with no property stays as written.
pub fn render(template: &str, fields: &[Field], values: &[Value<'_>], pointer_size: u8, out: &mut String) {
    let mut chars = template.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.peek().copied() {
            Some((_, d)) if d.is_ascii_digit() && d != '0' => {
                let mut n = 0usize;
                while let Some((_, d)) = chars.peek().copied().filter(|(_, d)| d.is_ascii_digit()) {
                    n = n.saturating_mul(10).saturating_add(d as usize - '0' as usize);
                    chars.next();
                }
                // FormatMessage allows a printf-style spec after an insert: %1!s!.
                if chars.peek().is_some_and(|(_, c)| *c == '!') {
                    chars.next();
                    for (_, c) in chars.by_ref() {
                        if c == '!' {
                            break;
                        }
                    }
                }
                match (n.checked_sub(1).and_then(|i| fields.get(i)), n.checked_sub(1).and_then(|i| values.get(i))) {
                    (Some(field), Some(value)) => format::text(field, value, pointer_size, out),
                    _ => {
                        out.push('%');
                        out.push_str(&n.to_string());
                    }
                }
            }
            Some((_, 'n')) => {
                chars.next();
                out.push('\n');
            }
            Some((_, 't')) => {
                chars.next();
                out.push('\t');
            }
            Some((_, 'r')) => {
                chars.next();
                out.push('\r');
            }
            Some((_, 'b')) => {
                chars.next();
                out.push(' ');
            }
            Some((_, c @ ('%' | '.' | '!'))) => {
                chars.next();
                out.push(c);
            }
            _ => out.push('%'),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intype::{InType, OutType};

    #[test]
    fn inserts_and_escapes() {
        let mut ip = Field::new("daddr", InType::UInt32);
        ip.out_type = OutType::Ipv4;
        let fields = [Field::new("size", InType::UInt32), ip];
        let values = [Value::Unsigned(187), Value::Unsigned(u64::from(u32::from_le_bytes([74, 125, 236, 80])))];
        let mut out = String::new();
        render("TCPv4: %1 bytes to %2.%n100%% sure %3 %1!u!", &fields, &values, 8, &mut out);
        assert_eq!(out, "TCPv4: 187 bytes to 74.125.236.80.\n100% sure %3 187");
    }
}
