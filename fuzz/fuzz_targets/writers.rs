//! The writers of text a trace controls (`nettrail_decode::safe_text`, the
//! JSON string writer): whatever bytes a trace's strings hold, the terminal
//! forms carry no control character but line feeds, a CSV field is never a
//! formula nor breaks its line and reads back to the visible text, and JSON
//! reads back to the same string.
//! Seed with any text; `cargo xtask hostile` writes hostile traces whose
//! strings are good seeds too.
#![no_main]
use std::io::Write;

use libfuzzer_sys::fuzz_target;
use nettrail_decode::safe_text::{Visible, json_safe, needs_escape, push_csv_field, visible};

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    assert!(!visible(&s).chars().any(needs_escape));

    let mut field = String::new();
    push_csv_field(&mut field, &s);
    assert!(!field.chars().any(needs_escape));
    let unquoted = field.strip_prefix('"').map_or(field.as_str(), |f| f.strip_suffix('"').unwrap_or(f));
    assert!(!nettrail_decode::safe_text::is_formula(unquoted), "{field:?}");
    // Read back as a CSV reader does, the field is the guarded, visible text.
    let read_back = if field.starts_with('"') { unquoted.replace("\"\"", "\"") } else { field.clone() };
    let guard = if nettrail_decode::safe_text::is_formula(&s) { "'" } else { "" };
    assert_eq!(read_back, format!("{guard}{}", visible(&s)), "{s:?}");

    let mut json = Vec::new();
    nettrail_decode::format::json_string(&mut json, &s);
    let text = std::str::from_utf8(&json).unwrap();
    assert!(!text.chars().any(needs_escape));
    assert_eq!(serde_json::from_str::<String>(text).unwrap(), s);
    let document = serde_json::to_string(&serde_json::json!({ "s": s })).unwrap();
    let safe = json_safe(&document);
    assert!(!safe.chars().any(needs_escape));
    assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap()["s"], serde_json::json!(s));

    let mut out = Vec::new();
    {
        let mut v = Visible::new(&mut out);
        let _ = v.write_all(data);
    }
    let shown = String::from_utf8(out).unwrap();
    assert!(!shown.chars().any(|c| c != '\n' && needs_escape(c)));
});
