//! `--format text`: one line per event, the chosen fields separated by
//! commas, the way TWAPI's `etw_dump` prints them (control characters in
//! the trace's strings shown as escapes):
//! `130410917801368380,KERNEL_NETWORK_TASK_TCPIP,Data sent.,PID 6780 size 187 …`

use std::borrow::Cow;
use std::fmt::Write as _;

use nettrail_decode::{Undecoded, format, safe_text};

use super::view::View;

/// The fields `--fields` can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TextField {
    /// FILETIME: 100 ns ticks since 1601 (UTC).
    Timecreated,
    /// ISO-8601 UTC.
    Timestamp,
    Providername,
    Providerguid,
    Eventname,
    Eventid,
    Version,
    Level,
    Levelname,
    Task,
    Taskname,
    Opcode,
    Opcodename,
    Keywords,
    Keywordnames,
    Pid,
    Tid,
    Cpu,
    Activityid,
    Message,
    /// `name value` pairs of every property, space-separated.
    Properties,
}

pub const DEFAULT_FIELDS: &[TextField] = &[
    TextField::Timestamp,
    TextField::Providername,
    TextField::Taskname,
    TextField::Opcodename,
    TextField::Pid,
    TextField::Tid,
    TextField::Properties,
];

/// A name, or nothing.
fn name<'n>(n: &'n Option<Cow<'_, str>>) -> &'n str {
    n.as_deref().unwrap_or("")
}

pub fn write(out: &mut String, v: &View<'_, '_>, fields: &[TextField]) {
    let start = out.len();
    let e = v.event;
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match field {
            TextField::Timecreated => {
                let _ = write!(out, "{}", v.filetime);
            }
            TextField::Timestamp => {
                let _ = write!(out, "{}", nettrail_etl::FileTime(v.filetime));
            }
            TextField::Providername => out.push_str(name(&v.names().provider)),
            TextField::Providerguid => {
                let _ = write!(out, "{}", e.provider);
            }
            TextField::Eventname => out.push_str(name(&v.names().event)),
            TextField::Eventid => {
                let _ = write!(out, "{}", e.id);
            }
            TextField::Version => {
                let _ = write!(out, "{}", e.version);
            }
            TextField::Level => {
                let _ = write!(out, "{}", e.level);
            }
            TextField::Levelname => out.push_str(name(&v.names().level)),
            TextField::Task => {
                let _ = write!(out, "{}", e.task);
            }
            TextField::Taskname => out.push_str(name(&v.names().task)),
            TextField::Opcode => {
                let _ = write!(out, "{}", e.opcode);
            }
            TextField::Opcodename => out.push_str(name(&v.names().opcode)),
            TextField::Keywords => {
                let _ = write!(out, "0x{:x}", e.keywords);
            }
            TextField::Keywordnames => out.push_str(&v.names().keywords.join(" ")),
            TextField::Pid => {
                if let Some(pid) = e.process_id {
                    let _ = write!(out, "{pid}");
                }
            }
            TextField::Tid => {
                if let Some(tid) = e.thread_id {
                    let _ = write!(out, "{tid}");
                }
            }
            TextField::Cpu => {
                let _ = write!(out, "{}", e.cpu);
            }
            TextField::Activityid if !e.activity_id.is_zero() => {
                let _ = write!(out, "{}", e.activity_id);
            }
            TextField::Activityid => {}
            TextField::Message => out.push_str(&v.message().unwrap_or_default()),
            TextField::Properties => {
                for (k, (f, value)) in v.properties().enumerate() {
                    if k > 0 {
                        out.push(' ');
                    }
                    out.push_str(&f.name);
                    out.push(' ');
                    format::text(f, value, e.pointer_size, out);
                }
                if let Err(why) = v.schema
                    && *why != Undecoded::NotDecoded
                {
                    let _ = write!(out, "undecoded: {why}");
                }
            }
        }
    }
    // One event, one line: what the trace put in its strings is shown, not acted on.
    if let Cow::Owned(line) = safe_text::visible(&out[start..]) {
        out.truncate(start);
        out.push_str(&line);
    }
    out.push('\n');
}
