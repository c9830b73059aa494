//! Process and thread lifetimes: the kernel's Process and Thread groups
//! (rundown at the trace's start, starts and ends during it) and
//! Microsoft-Windows-Kernel-Process (whole image names where the kernel's are
//! cut at 15 characters); image loads name processes no other event names.

use crate::event::Props;
use crate::processes::{Event, Lifetime};

fn lifetime(opcode: u8) -> Option<Lifetime> {
    Some(match opcode {
        1 => Lifetime::Started,
        2 => Lifetime::Ended,
        3 => Lifetime::Existing,
        // DCEnd: the rundown at the trace's end says it still runs.
        4 => Lifetime::Existing,
        _ => return None,
    })
}

/// A kernel Process group event.
pub(crate) fn extract_kernel_process(opcode: u8, props: &Props<'_, '_>) -> Option<Event> {
    Some(Event::Process {
        lifetime: lifetime(opcode)?,
        pid: props.u32("ProcessId")?,
        parent: props.u32("ParentId"),
        image: props.text("ImageFileName"),
        command_line: props.text("CommandLine"),
    })
}

/// A kernel Image group event: a load (10), or the rundown's (3, 4).
pub(crate) fn extract_kernel_image(opcode: u8, props: &Props<'_, '_>) -> Option<Event> {
    matches!(opcode, 3 | 4 | 10)
        .then(|| Some(Event::Image { pid: props.u32("ProcessId")?, path: props.text("FileName")? }))
        .flatten()
}

/// A kernel Thread group event.
pub(crate) fn extract_kernel_thread(opcode: u8, props: &Props<'_, '_>) -> Option<Event> {
    Some(Event::Thread {
        lifetime: lifetime(opcode)?,
        pid: props.u32("ProcessId")?,
        tid: props.any(&["TThreadId", "ThreadId"])?.as_u64()? as u32,
    })
}

/// A Microsoft-Windows-Kernel-Process event.
pub(crate) fn extract_kernel_process_provider(id: u16, props: &Props<'_, '_>) -> Option<Event> {
    match id {
        1 | 2 => Some(Event::Process {
            lifetime: if id == 1 { Lifetime::Started } else { Lifetime::Ended },
            pid: props.u32("ProcessID")?,
            parent: props.u32("ParentProcessID"),
            image: props.text("ImageName"),
            command_line: None,
        }),
        5 => Some(Event::Image { pid: props.u32("ProcessID")?, path: props.text("ImageName")? }),
        3 | 4 => Some(Event::Thread {
            lifetime: if id == 3 { Lifetime::Started } else { Lifetime::Ended },
            pid: props.u32("ProcessID")?,
            tid: props.u32("ThreadID")?,
        }),
        _ => None,
    }
}
