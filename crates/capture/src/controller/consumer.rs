//! A real-time consumer: `OpenTraceW` on a session's name, `ProcessTrace`
//! until the session stops (or [`ConsumerStop::stop`]), each
//! `EVENT_RECORD` copied into a [`LiveEvent`] for the caller's closure.
#![allow(unsafe_code)]

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use windows_sys::Win32::Foundation::{ERROR_CANCELLED, ERROR_SUCCESS};
use windows_sys::Win32::System::Diagnostics::Etw::{
    CloseTrace, EVENT_RECORD, EVENT_TRACE_LOGFILEW, OpenTraceW, PROCESS_TRACE_MODE_EVENT_RECORD,
    PROCESS_TRACE_MODE_REAL_TIME, PROCESSTRACE_HANDLE, ProcessTrace,
};

use super::{ControllerError, from_windows_guid, layout, wide_z};
use crate::live::LiveEvent;
use nettrail_etl::write::Descriptor;

/// What a [`consume`] read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConsumeStats {
    /// Events handed to the closure.
    pub events: u64,
    /// Buffers ETW delivered.
    pub buffers: u64,
}

/// Ends a [`consume_until`] from another thread (a Ctrl-C handler, a
/// timer): the trace is closed and `ProcessTrace` returns after the buffer
/// it is in. A stop requested before the consumer starts makes it return
/// at once; one `ConsumerStop` serves one consumer.
#[derive(Clone, Debug, Default)]
pub struct ConsumerStop {
    shared: Arc<StopShared>,
}

#[derive(Debug, Default)]
struct StopShared {
    requested: AtomicBool,
    /// The open trace, while `ProcessTrace` may run on it.
    handle: Mutex<Option<u64>>,
}

impl ConsumerStop {
    pub fn new() -> ConsumerStop {
        ConsumerStop::default()
    }

    pub fn stop(&self) {
        self.shared.requested.store(true, Ordering::SeqCst);
        if let Some(handle) = self.take_handle() {
            close(handle);
        }
    }

    pub fn is_stopped(&self) -> bool {
        self.shared.requested.load(Ordering::SeqCst)
    }

    fn take_handle(&self) -> Option<u64> {
        self.shared.handle.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// Reads the real-time session `session_name` until it stops, calling
/// `on_event` for each event (on this thread). See [`consume_until`].
pub fn consume(session_name: &str, on_event: &mut dyn FnMut(&LiveEvent<'_>)) -> Result<ConsumeStats, ControllerError> {
    consume_until(session_name, &ConsumerStop::new(), on_event)
}

/// Reads the real-time session `session_name` until it stops or `stop` is
/// called, calling `on_event` for each event.
///
/// Time stamps are FILETIMEs (100 ns since 1601, UTC): ETW converts them
/// from the session's clock. The event borrows ETW's buffer and is valid
/// during the call only.
///
/// A panic in `on_event` is caught before it reaches Windows; the trace is
/// closed and the panic resumes here, in the caller.
pub fn consume_until(
    session_name: &str,
    stop: &ConsumerStop,
    on_event: &mut dyn FnMut(&LiveEvent<'_>),
) -> Result<ConsumeStats, ControllerError> {
    let subject = format!("session {session_name:?}");
    layout::checked_name("session name", layout::wide(session_name)).map_err(ControllerError::Invalid)?;
    let mut name = wide_z(session_name);
    let mut consumer = Consumer::new(on_event, stop.clone());
    let context: *mut Consumer<'_> = &mut consumer;

    let mut logfile = EVENT_TRACE_LOGFILEW {
        LoggerName: name.as_mut_ptr(),
        BufferCallback: Some(on_buffer),
        Context: context.cast(),
        ..Default::default()
    };
    logfile.Anonymous1.ProcessTraceMode = PROCESS_TRACE_MODE_REAL_TIME | PROCESS_TRACE_MODE_EVENT_RECORD;
    logfile.Anonymous2.EventRecordCallback = Some(on_record);

    // SAFETY: `logfile` is initialized for a real-time session with
    // event-record callbacks; the name it points to lives until the call
    // returns (OpenTraceW copies what it keeps).
    let handle = unsafe { OpenTraceW(&mut logfile) }.Value;
    if is_invalid(handle) {
        let code = std::io::Error::last_os_error().raw_os_error().unwrap_or(0) as u32;
        return Err(ControllerError::win32("OpenTraceW", subject, code));
    }
    {
        let mut slot = stop.shared.handle.lock().unwrap_or_else(PoisonError::into_inner);
        if stop.is_stopped() {
            drop(slot);
            close(handle);
            return Ok(ConsumeStats::default());
        }
        *slot = Some(handle);
    }

    let handles = [PROCESSTRACE_HANDLE { Value: handle }];
    // SAFETY: the handle is open; the callbacks receive `context`, which
    // points to `consumer`, untouched here until ProcessTrace returns
    // (it calls the callbacks on this thread only).
    let code = unsafe { ProcessTrace(handles.as_ptr(), 1, std::ptr::null(), std::ptr::null()) };
    if let Some(handle) = stop.take_handle() {
        close(handle);
    }

    let Consumer { events, buffers, panic, .. } = consumer;
    if let Some(payload) = panic {
        resume_unwind(payload);
    }
    match code {
        // Stopped by the session's end, `ConsumerStop` or the buffer callback.
        ERROR_SUCCESS | ERROR_CANCELLED => Ok(ConsumeStats { events, buffers }),
        _ => Err(ControllerError::win32("ProcessTrace", subject, code)),
    }
}

/// `INVALID_PROCESSTRACE_HANDLE`: all ones (on 32-bit Windows, the
/// 32-bit invalid handle zero-extended, as some versions return it).
fn is_invalid(handle: u64) -> bool {
    handle == u64::MAX || (cfg!(target_pointer_width = "32") && handle == u64::from(u32::MAX))
}

fn close(handle: u64) {
    // SAFETY: `handle` came from OpenTraceW and is closed once (whoever
    // takes it from the shared slot closes it). While ProcessTrace runs the
    // answer is ERROR_CTX_CLOSE_PENDING, and ProcessTrace returns after its
    // buffer; there is nothing to do about any other answer.
    let _ = unsafe { CloseTrace(PROCESSTRACE_HANDLE { Value: handle }) };
}

/// What the callbacks reach through `UserContext`/`Context`.
struct Consumer<'f> {
    on_event: &'f mut dyn FnMut(&LiveEvent<'_>),
    /// Kept empty between events: only its allocation is reused.
    spare: Vec<(u16, &'static [u8])>,
    events: u64,
    buffers: u64,
    panic: Option<Box<dyn Any + Send>>,
    stop: ConsumerStop,
}

impl<'f> Consumer<'f> {
    fn new(on_event: &'f mut dyn FnMut(&LiveEvent<'_>), stop: ConsumerStop) -> Consumer<'f> {
        Consumer { on_event, spare: Vec::new(), events: 0, buffers: 0, panic: None, stop }
    }

    /// Hands one record to the closure, unless the consumer is stopping.
    ///
    /// # Safety
    /// The record's `ExtendedData` and `UserData` pointers must be valid
    /// for their counts and lengths (as ETW's are during the callback).
    unsafe fn deliver(&mut self, record: &EVENT_RECORD) {
        if self.panic.is_some() || self.stop.is_stopped() {
            return;
        }
        let mut extended = recycle(std::mem::take(&mut self.spare));
        // SAFETY: the caller vouches for the record's pointers.
        let payload = unsafe { record_parts(record, &mut extended) };
        let event = live_event(record, &extended, payload);
        let on_event = &mut *self.on_event;
        match catch_unwind(AssertUnwindSafe(|| on_event(&event))) {
            Ok(()) => self.events += 1,
            Err(payload) => {
                // Never unwind into ETW: keep the panic for `consume`, and
                // end ProcessTrace at the end of this buffer.
                self.panic = Some(payload);
                self.stop.shared.requested.store(true, Ordering::SeqCst);
            }
        }
        self.spare = recycle(extended);
    }
}

/// An empty vector of borrowed items that keeps its allocation across
/// lifetimes (the in-place collect reuses the buffer: same size and alignment).
fn recycle<'b>(mut v: Vec<(u16, &[u8])>) -> Vec<(u16, &'b [u8])> {
    v.clear();
    v.into_iter().map(|(kind, _)| (kind, &[][..])).collect()
}

/// The extended data items (into `extended`) and the payload of a record.
///
/// # Safety
/// As [`Consumer::deliver`].
unsafe fn record_parts<'r>(record: &'r EVENT_RECORD, extended: &mut Vec<(u16, &'r [u8])>) -> &'r [u8] {
    if !record.ExtendedData.is_null() {
        // SAFETY: ETW's ExtendedData points to ExtendedDataCount items.
        let items = unsafe { std::slice::from_raw_parts(record.ExtendedData, usize::from(record.ExtendedDataCount)) };
        for item in items {
            let data = match item.DataPtr {
                0 => &[][..],
                // SAFETY: each item's DataPtr points to DataSize bytes.
                ptr => unsafe { std::slice::from_raw_parts(ptr as usize as *const u8, usize::from(item.DataSize)) },
            };
            extended.push((item.ExtType, data));
        }
    }
    match record.UserData.is_null() {
        true => &[],
        // SAFETY: UserData points to UserDataLength bytes.
        false => unsafe {
            std::slice::from_raw_parts(record.UserData.cast::<u8>(), usize::from(record.UserDataLength))
        },
    }
}

/// The plain-data copy of a record's header around its extended items and payload.
fn live_event<'a>(record: &'a EVENT_RECORD, extended: &'a [(u16, &'a [u8])], payload: &'a [u8]) -> LiveEvent<'a> {
    let h = &record.EventHeader;
    let d = &h.EventDescriptor;
    // SAFETY: both members of the union are plain integers of the same
    // two bytes; any bit pattern is valid.
    let processor = unsafe { record.BufferContext.Anonymous.ProcessorIndex };
    LiveEvent {
        provider: from_windows_guid(&h.ProviderId),
        descriptor: Descriptor {
            id: d.Id,
            version: d.Version,
            channel: d.Channel,
            level: d.Level,
            opcode: d.Opcode,
            task: d.Task,
            keywords: d.Keyword,
        },
        timestamp: h.TimeStamp,
        process_id: h.ProcessId,
        thread_id: h.ThreadId,
        flags: h.Flags,
        event_property: h.EventProperty,
        activity_id: from_windows_guid(&h.ActivityId),
        processor,
        extended,
        payload,
    }
}

/// `EventRecordCallback`.
unsafe extern "system" fn on_record(record: *mut EVENT_RECORD) {
    // SAFETY: ETW passes a valid record for the duration of the callback.
    let Some(record) = (unsafe { record.as_ref() }) else { return };
    let consumer = record.UserContext.cast::<Consumer<'_>>();
    // SAFETY: UserContext is the `Consumer` `consume_until` passed to
    // OpenTraceW, alive and otherwise untouched while ProcessTrace runs.
    let Some(consumer) = (unsafe { consumer.as_mut() }) else { return };
    // SAFETY: ETW's record pointers are valid during the callback.
    unsafe { consumer.deliver(record) };
}

/// `BufferCallback`: TRUE to go on, FALSE to end ProcessTrace.
unsafe extern "system" fn on_buffer(logfile: *mut EVENT_TRACE_LOGFILEW) -> u32 {
    // SAFETY: ETW passes its copy of the logfile structure, whose Context
    // is the `Consumer` given to OpenTraceW (see `on_record`).
    let consumer = unsafe { logfile.as_ref() }.map(|l| l.Context.cast::<Consumer<'_>>());
    // SAFETY: as in `on_record`.
    match consumer.and_then(|c| unsafe { c.as_mut() }) {
        Some(c) => {
            c.buffers += 1;
            u32::from(!c.stop.is_stopped())
        }
        None => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nettrail_etl::Guid;
    use windows_sys::Win32::System::Diagnostics::Etw::EVENT_HEADER_EXTENDED_DATA_ITEM;

    /// A record as ETW would hand it over, pointing into `stack` and `payload`.
    fn record(
        consumer: &mut Consumer<'_>,
        items: &mut [EVENT_HEADER_EXTENDED_DATA_ITEM],
        payload: &mut [u8],
    ) -> EVENT_RECORD {
        let mut r = EVENT_RECORD::default();
        let h = &mut r.EventHeader;
        h.ProviderId = windows_sys::core::GUID::from_u128(0x2f07e2ee_15db_40f1_90ef_9d7ba282188a);
        h.EventDescriptor.Id = 1033;
        h.EventDescriptor.Version = 1;
        h.EventDescriptor.Channel = 16;
        h.EventDescriptor.Level = 4;
        h.EventDescriptor.Opcode = 12;
        h.EventDescriptor.Task = 3;
        h.EventDescriptor.Keyword = 0x8000_0000_0000_0080;
        h.TimeStamp = 133_500_000_000_000_000;
        h.ProcessId = 4312;
        h.ThreadId = 7777;
        h.Flags = 0x0241;
        h.EventProperty = 2;
        h.ActivityId = windows_sys::core::GUID::from_u128(0x11111111_2222_3333_4444_555555555555);
        r.BufferContext.Anonymous.ProcessorIndex = 3;
        r.ExtendedDataCount = items.len() as u16;
        r.ExtendedData = items.as_mut_ptr();
        r.UserDataLength = payload.len() as u16;
        r.UserData = payload.as_mut_ptr().cast();
        r.UserContext = (consumer as *mut Consumer<'_>).cast();
        r
    }

    fn item(kind: u16, data: &[u8]) -> EVENT_HEADER_EXTENDED_DATA_ITEM {
        EVENT_HEADER_EXTENDED_DATA_ITEM {
            ExtType: kind,
            DataSize: data.len() as u16,
            DataPtr: data.as_ptr() as u64,
            ..Default::default()
        }
    }

    #[test]
    fn a_record_reaches_the_closure_as_a_live_event() {
        let stack = 0x7ff6_1234_5678u64.to_le_bytes();
        let key = [9u8; 8];
        let mut items = [item(6, &stack), item(10, &key)];
        let mut payload = *b"payload!";
        let mut seen = Vec::new();
        let mut on_event = |e: &LiveEvent<'_>| {
            let ext: Vec<(u16, Vec<u8>)> = e.extended.iter().map(|(k, d)| (*k, d.to_vec())).collect();
            seen.push(e.descriptor.id);
            assert_eq!(e.provider, Guid::parse_const("2f07e2ee-15db-40f1-90ef-9d7ba282188a"));
            let d = &e.descriptor;
            assert_eq!((d.version, d.channel, d.level, d.opcode, d.task), (1, 16, 4, 12, 3));
            assert_eq!(d.keywords, 0x8000_0000_0000_0080);
            assert_eq!((e.timestamp, e.process_id, e.thread_id), (133_500_000_000_000_000, 4312, 7777));
            assert_eq!((e.flags, e.event_property, e.processor), (0x0241, 2, 3));
            assert_eq!(e.activity_id, Guid::parse_const("11111111-2222-3333-4444-555555555555"));
            assert_eq!(ext, [(6, stack.to_vec()), (10, key.to_vec())]);
            assert_eq!(e.payload, b"payload!");
        };
        let mut consumer = Consumer::new(&mut on_event, ConsumerStop::new());
        let mut r = record(&mut consumer, &mut items, &mut payload);
        // SAFETY: the record points to live items and payload, and its
        // UserContext to `consumer`, as ETW's do.
        unsafe {
            on_record(&mut r);
            on_record(&mut r);
        }
        assert_eq!(consumer.events, 2);
        assert!(consumer.spare.capacity() >= 2, "the items' vector is reused");
        drop(consumer);
        assert_eq!(seen, [1033, 1033]);
    }

    #[test]
    fn a_record_without_extended_items_or_payload_has_empty_slices() {
        let mut lens = Vec::new();
        let mut on_event = |e: &LiveEvent<'_>| lens.push((e.extended.len(), e.payload.len()));
        let mut consumer = Consumer::new(&mut on_event, ConsumerStop::new());
        let mut r = record(&mut consumer, &mut [], &mut []);
        r.ExtendedData = std::ptr::null_mut();
        r.UserData = std::ptr::null_mut();
        // SAFETY: null pointers with zero counts, as ETW passes them.
        unsafe { on_record(&mut r) };
        // A record without a context (not ours) is ignored.
        r.UserContext = std::ptr::null_mut();
        // SAFETY: as above.
        unsafe { on_record(&mut r) };
        drop(consumer);
        assert_eq!(lens, [(0, 0)]);
    }

    #[test]
    fn a_panic_in_the_closure_stops_delivery_and_is_kept_for_the_caller() {
        let mut calls = 0;
        let mut on_event = |_: &LiveEvent<'_>| {
            calls += 1;
            panic!("bad event");
        };
        let stop = ConsumerStop::new();
        let mut consumer = Consumer::new(&mut on_event, stop.clone());
        let mut payload = [0u8; 4];
        let mut r = record(&mut consumer, &mut [], &mut payload);
        let mut logfile = EVENT_TRACE_LOGFILEW { Context: r.UserContext, ..Default::default() };
        // SAFETY: as in the first test; the logfile's Context is the consumer.
        unsafe {
            assert_eq!(on_buffer(&mut logfile), 1);
            on_record(&mut r);
            on_record(&mut r);
            // The buffer callback now ends ProcessTrace.
            assert_eq!(on_buffer(&mut logfile), 0);
        }
        assert!(stop.is_stopped());
        assert_eq!((consumer.events, consumer.buffers), (0, 2));
        let payload = consumer.panic.take().expect("the panic is kept");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"bad event"));
        drop(consumer);
        assert_eq!(calls, 1);
    }

    #[test]
    fn a_stopped_consumer_skips_the_rest_of_the_buffer() {
        let mut calls = 0;
        let mut on_event = |_: &LiveEvent<'_>| calls += 1;
        let stop = ConsumerStop::new();
        let mut consumer = Consumer::new(&mut on_event, stop.clone());
        let mut r = record(&mut consumer, &mut [], &mut []);
        // SAFETY: as in the first test.
        unsafe { on_record(&mut r) };
        stop.stop();
        // SAFETY: as in the first test.
        unsafe { on_record(&mut r) };
        drop(consumer);
        assert_eq!(calls, 1);
    }

    #[test]
    fn invalid_trace_handles_are_recognized() {
        assert!(is_invalid(u64::MAX));
        assert!(!is_invalid(0x1234));
        assert_eq!(is_invalid(u64::from(u32::MAX)), cfg!(target_pointer_width = "32"));
    }
}
