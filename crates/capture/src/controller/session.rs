//! Sessions: start, enable providers, query, stop, list.
#![allow(unsafe_code)]

use std::mem::offset_of;
use std::os::windows::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nettrail_etl::Guid;
use windows_sys::Win32::Foundation::{ERROR_MORE_DATA, ERROR_SUCCESS, ERROR_TIMEOUT};
use windows_sys::Win32::System::Diagnostics::Etw::{
    CLASSIC_EVENT_ID, CONTROLTRACE_HANDLE, ControlTraceW, ENABLE_TRACE_PARAMETERS, ENABLE_TRACE_PARAMETERS_VERSION_2,
    EVENT_CONTROL_CODE_CAPTURE_STATE, EVENT_CONTROL_CODE_ENABLE_PROVIDER, EVENT_ENABLE_PROPERTY_STACK_TRACE,
    EVENT_FILTER_DESCRIPTOR, EVENT_FILTER_EVENT_ID, EVENT_FILTER_TYPE_EVENT_ID, EVENT_FILTER_TYPE_STACKWALK,
    EVENT_TRACE_BUFFERING_MODE, EVENT_TRACE_CONTROL, EVENT_TRACE_CONTROL_QUERY, EVENT_TRACE_CONTROL_STOP,
    EVENT_TRACE_FILE_MODE_CIRCULAR, EVENT_TRACE_FILE_MODE_SEQUENTIAL, EVENT_TRACE_PROPERTIES,
    EVENT_TRACE_REAL_TIME_MODE, EVENT_TRACE_SYSTEM_LOGGER_MODE, EnableTraceEx2, MAX_EVENT_FILTER_EVENT_ID_COUNT,
    QueryAllTracesW, StartTraceW, TraceSetInformation, TraceStackTracingInfo, WNODE_FLAG_TRACED_GUID,
};

use super::layout::{self, SessionInfo, Sizing, StartRequest, Stats, props};
use super::providers::{bytes_of, resolve_provider};
use super::{ControllerError, process, to_windows_guid, wide_z};
use crate::provider::{Provider, Stacks, SystemProvider, Target, system_keyword_flags, system_stack_event};
use crate::scenario::Scenario;

// The layouts built as bytes are the `windows-sys` structs' layouts.
const _: () = {
    type P = EVENT_TRACE_PROPERTIES;
    assert!(size_of::<P>() == props::SIZE);
    assert!(offset_of!(P, Wnode.BufferSize) == props::WNODE_BUFFER_SIZE);
    assert!(offset_of!(P, Wnode.Guid) == props::WNODE_GUID);
    assert!(offset_of!(P, Wnode.ClientContext) == props::WNODE_CLIENT_CONTEXT);
    assert!(offset_of!(P, Wnode.Flags) == props::WNODE_FLAGS);
    assert!(offset_of!(P, BufferSize) == props::BUFFER_SIZE);
    assert!(offset_of!(P, MinimumBuffers) == props::MINIMUM_BUFFERS);
    assert!(offset_of!(P, MaximumBuffers) == props::MAXIMUM_BUFFERS);
    assert!(offset_of!(P, MaximumFileSize) == props::MAXIMUM_FILE_SIZE);
    assert!(offset_of!(P, LogFileMode) == props::LOG_FILE_MODE);
    assert!(offset_of!(P, FlushTimer) == props::FLUSH_TIMER);
    assert!(offset_of!(P, EnableFlags) == props::ENABLE_FLAGS);
    assert!(offset_of!(P, Anonymous) == props::AGE_LIMIT);
    assert!(offset_of!(P, NumberOfBuffers) == props::NUMBER_OF_BUFFERS);
    assert!(offset_of!(P, FreeBuffers) == props::FREE_BUFFERS);
    assert!(offset_of!(P, EventsLost) == props::EVENTS_LOST);
    assert!(offset_of!(P, BuffersWritten) == props::BUFFERS_WRITTEN);
    assert!(offset_of!(P, LogBuffersLost) == props::LOG_BUFFERS_LOST);
    assert!(offset_of!(P, RealTimeBuffersLost) == props::REAL_TIME_BUFFERS_LOST);
    assert!(offset_of!(P, LoggerThreadId) == props::LOGGER_THREAD_ID);
    assert!(offset_of!(P, LogFileNameOffset) == props::LOG_FILE_NAME_OFFSET);
    assert!(offset_of!(P, LoggerNameOffset) == props::LOGGER_NAME_OFFSET);
    assert!(WNODE_FLAG_TRACED_GUID == layout::WNODE_FLAG_TRACED_GUID);
    assert!(EVENT_TRACE_FILE_MODE_SEQUENTIAL == layout::mode::FILE_MODE_SEQUENTIAL);
    assert!(EVENT_TRACE_FILE_MODE_CIRCULAR == layout::mode::FILE_MODE_CIRCULAR);
    assert!(EVENT_TRACE_REAL_TIME_MODE == layout::mode::REAL_TIME);
    assert!(EVENT_TRACE_BUFFERING_MODE == layout::mode::BUFFERING);
    assert!(EVENT_TRACE_SYSTEM_LOGGER_MODE == layout::mode::SYSTEM_LOGGER);
    assert!(EVENT_FILTER_TYPE_EVENT_ID == layout::FILTER_EVENT_ID);
    assert!(EVENT_FILTER_TYPE_STACKWALK == layout::FILTER_STACKWALK);
    assert!(MAX_EVENT_FILTER_EVENT_ID_COUNT as usize == layout::MAX_FILTER_EVENT_IDS);
    // FilterIn, Reserved, Count, then the ids.
    assert!(offset_of!(EVENT_FILTER_EVENT_ID, Count) == 2 && offset_of!(EVENT_FILTER_EVENT_ID, Events) == 4);
};

/// How long a stop rundown may take (WPR's capture-state timeout).
const RUNDOWN_TIMEOUT_MS: u32 = 30_000;

/// What a session is started with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionConfig {
    /// The `.etl` to write; `None` for a real-time session (read it with
    /// [`consume`](super::consume)).
    pub log_file: Option<PathBuf>,
    /// Size of each buffer, KB.
    pub buffer_kb: u32,
    pub min_buffers: u32,
    /// 0 lets ETW choose.
    pub max_buffers: u32,
    /// Keep only the latest events: with a log file, a circular file of
    /// this many MB (`EVENT_TRACE_FILE_MODE_CIRCULAR`); without one, an
    /// in-memory ring of this many MB (`EVENT_TRACE_BUFFERING_MODE`, which
    /// neither delivers in real time nor is saved by [`Session::stop`]).
    pub circular_mb: Option<u32>,
    /// The kernel's process, thread and image events, and stacks on the
    /// system events it names (the session becomes a system logger).
    pub system: Option<SystemProvider>,
}

impl SessionConfig {
    /// One session for everything a scenario enables: its system
    /// provider, and the buffers of WPR's two collectors in one pool. With
    /// a log file and a circular scenario (`--loop`), a circular file as
    /// large as that pool; without a log file, real time.
    pub fn for_scenario(scenario: &Scenario, log_file: Option<PathBuf>) -> SessionConfig {
        let (s, e) = (scenario.system_buffers, scenario.event_buffers);
        let buffers = s.count + e.count;
        let buffer_kb = s.size_kb.max(e.size_kb);
        let circular_mb = (scenario.circular && log_file.is_some()).then(|| (buffers * buffer_kb).div_ceil(1024));
        SessionConfig {
            log_file,
            buffer_kb,
            min_buffers: buffers,
            max_buffers: buffers,
            circular_mb,
            system: Some(scenario.system.clone()),
        }
    }

    /// A real-time session for a scenario (see [`SessionConfig::for_scenario`]).
    pub fn real_time(scenario: &Scenario) -> SessionConfig {
        SessionConfig::for_scenario(scenario, None)
    }
}

/// A running ETW session this process started. Dropping it stops it.
#[derive(Debug)]
pub struct Session {
    name: String,
    handle: u64,
    log_file: Option<PathBuf>,
    stop_rundowns: Vec<Rundown>,
    stopped: bool,
}

/// A provider's capture-state request at stop.
#[derive(Clone, Debug)]
struct Rundown {
    subject: String,
    guid: Guid,
    level: u8,
    keywords: u64,
}

impl Session {
    /// Starts the session `name`.
    ///
    /// A session of that name that already runs is an error
    /// ([`ControllerError::already_exists`]): it may be another tool's, so
    /// it is not stopped; [`Session::stop_named`] stops it on purpose.
    pub fn start(name: &str, config: &SessionConfig) -> Result<Session, ControllerError> {
        let logger_name = layout::checked_name("session name", layout::wide(name)).map_err(ControllerError::Invalid)?;
        let log_file = config.log_file.as_deref().map(absolute).transpose()?;
        let log_file_wide = match &log_file {
            Some(path) => Some(
                layout::checked_name("log file name", path.as_os_str().encode_wide().collect())
                    .map_err(ControllerError::Invalid)?,
            ),
            None => None,
        };
        let (enable_flags, stacks) = match &config.system {
            Some(system) => system_request(system)?,
            None => (0, Vec::new()),
        };
        let sizing = Sizing {
            buffer_kb: config.buffer_kb,
            min_buffers: config.min_buffers,
            max_buffers: config.max_buffers,
            circular_mb: config.circular_mb,
        };
        let logging =
            layout::logging(log_file.is_some(), config.system.is_some(), sizing).map_err(ControllerError::Invalid)?;
        let mut properties = Properties::new(&layout::start_properties(&StartRequest {
            logger_name: &logger_name,
            log_file: log_file_wide.as_deref(),
            buffer_kb: config.buffer_kb,
            logging,
            enable_flags,
        }));
        let name_z = wide_z(name);
        let mut handle = CONTROLTRACE_HANDLE::default();
        // SAFETY: `name_z` is NUL-terminated; `properties` is an 8-aligned
        // EVENT_TRACE_PROPERTIES whose Wnode.BufferSize covers the names
        // at its offsets; both outlive the call.
        let code = unsafe { StartTraceW(&mut handle, name_z.as_ptr(), properties.as_mut_ptr()) };
        if code != ERROR_SUCCESS {
            let subject = match &log_file {
                Some(path) => format!("{} writing {}", session_subject(name), path.display()),
                None => session_subject(name),
            };
            return Err(ControllerError::win32("StartTraceW", subject, code));
        }
        // From here on, dropping `session` stops it.
        let session = Session {
            name: name.to_string(),
            handle: handle.Value,
            log_file,
            stop_rundowns: Vec::new(),
            stopped: false,
        };
        if !stacks.is_empty() {
            session.set_system_stacks(&stacks)?;
        }
        Ok(session)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The absolute path of the `.etl` the session writes.
    pub fn log_file(&self) -> Option<&Path> {
        self.log_file.as_deref()
    }

    /// Enables a provider: `EnableTraceEx2` with its level (every level
    /// when `None`), its match-any keywords (all when `None`), an event-id
    /// filter for [`Provider::events`], and stacks as [`Provider::stacks`]
    /// says (`EVENT_ENABLE_PROPERTY_STACK_TRACE`, with a stack-walk filter
    /// for `Stacks::Events`); then a capture-state request with the start
    /// rundown keywords. The stop rundown is requested by [`Session::stop`].
    ///
    /// `Target::Registered` names are looked up among the registered
    /// providers (TDH); an unknown name is [`ControllerError::UnknownProvider`].
    ///
    /// `Stacks::Pool` (the Windows thread pool's provider) is enabled with
    /// stacks on all its events. That is not what WPR does: WPR turns its
    /// stack names and custom stacks (`0x1C2A`, ThreadPoolSetTimer) into
    /// kernel stack-walk hooks of the thread-pool event group, so only
    /// the callback-enqueue and timer-set events carry a stack. This
    /// controller does not replicate those hooks; how the stack-trace
    /// property applies to this provider's classic events has not been
    /// checked on Windows, so expect either more stacks than WPR records
    /// (bigger traces) or none on those events.
    ///
    /// Non-paged buffers (`Provider::non_paged`) need nothing: sessions
    /// started here use non-paged memory.
    pub fn enable(&mut self, provider: &Provider) -> Result<(), ControllerError> {
        let guid = match &provider.target {
            Target::Guid(g) => *g,
            Target::Registered(name) => resolve_provider(name)?,
        };
        let subject = provider_subject(provider, &guid);
        let request = enable_request(provider).map_err(|e| ControllerError::Invalid(format!("{subject}: {e}")))?;
        let descriptors: Vec<EVENT_FILTER_DESCRIPTOR> = request
            .filters
            .iter()
            .map(|(kind, data)| EVENT_FILTER_DESCRIPTOR {
                Ptr: data.as_ptr() as u64,
                Size: data.len() as u32,
                Type: *kind,
            })
            .collect();
        let parameters = ENABLE_TRACE_PARAMETERS {
            Version: ENABLE_TRACE_PARAMETERS_VERSION_2,
            EnableProperty: request.property,
            ControlFlags: 0,
            SourceId: Default::default(),
            EnableFilterDesc: if descriptors.is_empty() {
                std::ptr::null_mut()
            } else {
                descriptors.as_ptr().cast_mut()
            },
            FilterDescCount: descriptors.len() as u32,
        };
        let windows_guid = to_windows_guid(&guid);
        // SAFETY: the handle is this running session's; the GUID, the
        // parameters, the descriptors and the filter bytes they point to
        // live until the call returns, and ETW only reads them.
        let code = unsafe {
            EnableTraceEx2(
                self.control_handle(),
                &windows_guid,
                EVENT_CONTROL_CODE_ENABLE_PROVIDER,
                request.level,
                request.keywords,
                0,
                0,
                &parameters,
            )
        };
        if code != ERROR_SUCCESS {
            return Err(ControllerError::win32("EnableTraceEx2", subject, code));
        }
        if let Some(keywords) = provider.rundown_on_start {
            // Not waited for: the rundown events arrive while recording.
            let code = self.capture_state(&guid, request.level, keywords, 0);
            if code != ERROR_SUCCESS {
                return Err(ControllerError::win32("EnableTraceEx2 (capture state)", subject, code));
            }
        }
        if let Some(keywords) = provider.rundown_on_stop {
            self.stop_rundowns.push(Rundown { subject, guid, level: request.level, keywords });
        }
        Ok(())
    }

    /// The session's current statistics.
    pub fn query(&self) -> Result<SessionInfo, ControllerError> {
        control(self.control_handle(), None, &self.name, EVENT_TRACE_CONTROL_QUERY, "ControlTraceW (query)")
            .map(|p| layout::read_session(p.bytes()))
    }

    /// Requests the stop rundowns (waiting up to 30 s for each provider),
    /// stops the session and returns its statistics. A rundown that fails
    /// does not keep the session running: it is reported in
    /// [`Stats::warnings`].
    pub fn stop(mut self) -> Result<Stats, ControllerError> {
        self.stopped = true;
        if let Some(mut stats) = process::take_stopped(&self.name) {
            if !self.stop_rundowns.is_empty() {
                stats.warnings.push("stopped by Ctrl-C: the stop rundowns were not requested".to_string());
            }
            return Ok(self.with_log_file(stats));
        }
        let mut warnings = Vec::new();
        for r in std::mem::take(&mut self.stop_rundowns) {
            match self.capture_state(&r.guid, r.level, r.keywords, RUNDOWN_TIMEOUT_MS) {
                ERROR_SUCCESS => {}
                ERROR_TIMEOUT => warnings.push(format!(
                    "{}: the stop rundown took over {} s; its last events may be missing",
                    r.subject,
                    RUNDOWN_TIMEOUT_MS / 1000
                )),
                code => {
                    warnings.push(ControllerError::win32("EnableTraceEx2 (capture state)", r.subject, code).to_string())
                }
            }
        }
        let mut stats = self.stop_now()?;
        warnings.append(&mut stats.warnings);
        stats.warnings = warnings;
        Ok(stats)
    }

    /// Stops the session `name`, whoever started it (`nettrail cancel`,
    /// or a session left behind by a crash).
    pub fn stop_named(name: &str) -> Result<Stats, ControllerError> {
        stop_by_name(name)
    }

    fn stop_now(&self) -> Result<Stats, ControllerError> {
        // Also unregisters the name from the Ctrl-C handler.
        if let Some(stats) = process::take_stopped(&self.name) {
            return Ok(self.with_log_file(stats));
        }
        match control(self.control_handle(), None, &self.name, EVENT_TRACE_CONTROL_STOP, "ControlTraceW (stop)") {
            Ok(p) => Ok(self.with_log_file(layout::read_stats(p.bytes()))),
            // The Ctrl-C handler stopped it meanwhile.
            Err(e) if e.not_running() => process::take_stopped(&self.name).map(|s| self.with_log_file(s)).ok_or(e),
            Err(e) => Err(e),
        }
    }

    fn with_log_file(&self, mut stats: Stats) -> Stats {
        if stats.log_file.is_none() {
            stats.log_file = self.log_file.clone();
        }
        stats
    }

    fn control_handle(&self) -> CONTROLTRACE_HANDLE {
        CONTROLTRACE_HANDLE { Value: self.handle }
    }

    /// `EnableTraceEx2(EVENT_CONTROL_CODE_CAPTURE_STATE)`: the provider
    /// logs its state for these keywords; waits `timeout_ms` (0: no wait).
    fn capture_state(&self, guid: &Guid, level: u8, keywords: u64, timeout_ms: u32) -> u32 {
        let windows_guid = to_windows_guid(guid);
        // SAFETY: the handle is this running session's; the GUID lives
        // until the call returns; no parameters are passed.
        unsafe {
            EnableTraceEx2(
                self.control_handle(),
                &windows_guid,
                EVENT_CONTROL_CODE_CAPTURE_STATE,
                level,
                keywords,
                0,
                timeout_ms,
                std::ptr::null(),
            )
        }
    }

    /// Stack walks on these system events (`TraceStackTracingInfo`).
    fn set_system_stacks(&self, events: &[CLASSIC_EVENT_ID]) -> Result<(), ControllerError> {
        // SAFETY: the handle is this running session's; `events` is an
        // array of CLASSIC_EVENT_ID of the byte length passed.
        let code = unsafe {
            TraceSetInformation(
                self.control_handle(),
                TraceStackTracingInfo,
                events.as_ptr().cast(),
                size_of_val(events) as u32,
            )
        };
        match code {
            ERROR_SUCCESS => Ok(()),
            _ => Err(ControllerError::win32("TraceSetInformation (stack tracing)", session_subject(&self.name), code)),
        }
    }
}

impl Drop for Session {
    /// Stops the session if [`Session::stop`] was not called (without the
    /// stop rundowns: this runs on error paths and while panicking).
    fn drop(&mut self) {
        if !self.stopped {
            self.stopped = true;
            let _ = self.stop_now();
        }
    }
}

/// Stops the session `name` (what the Ctrl-C handler calls).
pub(crate) fn stop_by_name(name: &str) -> Result<Stats, ControllerError> {
    control(CONTROLTRACE_HANDLE::default(), Some(name), name, EVENT_TRACE_CONTROL_STOP, "ControlTraceW (stop)")
        .map(|p| layout::read_stats(p.bytes()))
}

/// The statistics of the running session `name`, whoever started it.
pub fn query_named(name: &str) -> Result<SessionInfo, ControllerError> {
    control(CONTROLTRACE_HANDLE::default(), Some(name), name, EVENT_TRACE_CONTROL_QUERY, "ControlTraceW (query)")
        .map(|p| layout::read_session(p.bytes()))
}

/// Every session running on the machine (`QueryAllTracesW`), with its
/// file, mode and counters.
pub fn sessions() -> Result<Vec<SessionInfo>, ControllerError> {
    let mut room = 64u32;
    loop {
        let mut blocks: Vec<Properties> = (0..room).map(|_| Properties::new(&layout::control_properties())).collect();
        let mut pointers: Vec<*mut EVENT_TRACE_PROPERTIES> = blocks.iter_mut().map(Properties::as_mut_ptr).collect();
        let mut count = 0u32;
        // SAFETY: `pointers` holds `room` pointers to distinct, 8-aligned
        // properties blocks with room for both names; all outlive the call.
        let code = unsafe { QueryAllTracesW(pointers.as_mut_ptr(), room, &mut count) };
        match code {
            ERROR_SUCCESS => {
                return Ok(blocks
                    .iter()
                    .take(count.min(room) as usize)
                    .map(|b| layout::read_session(b.bytes()))
                    .collect());
            }
            // More sessions than the array holds: once more with room for all.
            ERROR_MORE_DATA if count > room && room == 64 => room = count,
            _ => return Err(ControllerError::win32("QueryAllTracesW", "the running sessions", code)),
        }
    }
}

/// `ControlTraceW` with a fresh properties block, by handle or by name.
fn control(
    handle: CONTROLTRACE_HANDLE,
    name: Option<&str>,
    subject: &str,
    code: EVENT_TRACE_CONTROL,
    operation: &'static str,
) -> Result<Properties, ControllerError> {
    let name_z = name.map(wide_z);
    if let Some(name) = name {
        layout::checked_name("session name", layout::wide(name)).map_err(ControllerError::Invalid)?;
    }
    let mut properties = Properties::new(&layout::control_properties());
    let name_ptr = name_z.as_ref().map_or(std::ptr::null(), |n| n.as_ptr());
    // SAFETY: the name, when given, is NUL-terminated; `properties` is an
    // 8-aligned block with room for the names ETW writes back; both
    // outlive the call.
    let result = unsafe { ControlTraceW(handle, name_ptr, properties.as_mut_ptr(), code) };
    match result {
        ERROR_SUCCESS => Ok(properties),
        _ => Err(ControllerError::win32(operation, session_subject(subject), result)),
    }
}

/// An EVENT_TRACE_PROPERTIES block in 8-aligned memory.
struct Properties(Vec<u64>);

impl Properties {
    fn new(bytes: &[u8]) -> Properties {
        Properties(
            bytes
                .chunks(8)
                .map(|c| {
                    let mut w = [0u8; 8];
                    w[..c.len()].copy_from_slice(c);
                    u64::from_le_bytes(w)
                })
                .collect(),
        )
    }

    fn as_mut_ptr(&mut self) -> *mut EVENT_TRACE_PROPERTIES {
        self.0.as_mut_ptr().cast()
    }

    fn bytes(&self) -> &[u8] {
        bytes_of(&self.0)
    }
}

/// The `EnableTraceEx2` arguments for a provider.
#[derive(Debug, PartialEq, Eq)]
struct EnableRequest {
    level: u8,
    keywords: u64,
    property: u32,
    /// (EVENT_FILTER_TYPE_*, filter bytes).
    filters: Vec<(u32, Vec<u8>)>,
}

fn enable_request(p: &Provider) -> Result<EnableRequest, String> {
    let (property, stack_ids) = match &p.stacks {
        Stacks::None => (0, None),
        Stacks::Events(ids) if ids.is_empty() => (0, None),
        Stacks::Events(ids) => (EVENT_ENABLE_PROPERTY_STACK_TRACE, Some(ids.as_slice())),
        Stacks::All | Stacks::Pool { .. } => (EVENT_ENABLE_PROPERTY_STACK_TRACE, None),
    };
    Ok(EnableRequest {
        level: p.level.unwrap_or(0xFF),
        keywords: p.keywords.unwrap_or(u64::MAX),
        property,
        filters: layout::enable_filters(&p.events, stack_ids)?,
    })
}

/// The system provider's `EnableFlags` and the classic events that get a
/// stack. Names this controller does not know are refused rather than
/// silently dropped.
fn system_request(system: &SystemProvider) -> Result<(u32, Vec<CLASSIC_EVENT_ID>), ControllerError> {
    if let Some(k) = system.keywords.iter().find(|k| system_keyword_flags(k) == 0) {
        return Err(ControllerError::Invalid(format!("system keyword {k:?} has no kernel flags known to nettrail")));
    }
    let stacks = system
        .stacks
        .iter()
        .map(|name| {
            let (class, opcode) = system_stack_event(name).ok_or_else(|| {
                ControllerError::Invalid(format!("system stack {name:?} names no event known to nettrail"))
            })?;
            Ok(CLASSIC_EVENT_ID { EventGuid: to_windows_guid(&class), Type: opcode, Reserved: [0; 7] })
        })
        .collect::<Result<Vec<_>, ControllerError>>()?;
    Ok((system.enable_flags(), stacks))
}

fn absolute(path: &Path) -> Result<PathBuf, ControllerError> {
    std::path::absolute(path).map_err(|e| ControllerError::Invalid(format!("log file {}: {e}", path.display())))
}

fn session_subject(name: &str) -> String {
    format!("session {name:?}")
}

fn provider_subject(p: &Provider, guid: &Guid) -> String {
    format!("provider {} {{{guid}}}", p.label)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Options, network_providers};

    fn provider(label: &str) -> Provider {
        network_providers().into_iter().find(|p| p.label == label).unwrap()
    }

    #[test]
    fn the_properties_block_reads_back_through_the_windows_struct() {
        let name = layout::wide("nettrail");
        let file = layout::wide(r"C:\t\net.etl");
        let logging = layout::logging(
            true,
            true,
            Sizing { buffer_kb: 1024, min_buffers: 96, max_buffers: 96, circular_mb: Some(96) },
        )
        .unwrap();
        let mut block = Properties::new(&layout::start_properties(&StartRequest {
            logger_name: &name,
            log_file: Some(&file),
            buffer_kb: 1024,
            logging,
            enable_flags: 0x7,
        }));
        let len = block.bytes().len();
        // SAFETY: the block is 8-aligned and larger than the struct.
        let p = unsafe { &*block.as_mut_ptr() };
        assert_eq!(p.Wnode.BufferSize as usize, len);
        assert_eq!((p.Wnode.Flags, p.Wnode.ClientContext), (WNODE_FLAG_TRACED_GUID, 1));
        assert_eq!((p.BufferSize, p.MinimumBuffers, p.MaximumBuffers, p.MaximumFileSize), (1024, 96, 96, 96));
        assert_eq!(p.LogFileMode, EVENT_TRACE_FILE_MODE_CIRCULAR | EVENT_TRACE_SYSTEM_LOGGER_MODE);
        assert_eq!(p.EnableFlags, 0x7);
        let units = |at: u32| -> Vec<u16> {
            let b = &block.bytes()[at as usize..];
            b.chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).take_while(|&u| u != 0).collect()
        };
        assert_eq!(units(p.LoggerNameOffset), name);
        assert_eq!(units(p.LogFileNameOffset), file);
    }

    #[test]
    fn providers_are_enabled_with_their_level_keywords_and_filters() {
        // WebIO: level 5, every keyword, 33 events, stacks on 3 of them.
        let r = enable_request(&provider("WebIO")).unwrap();
        assert_eq!((r.level, r.keywords, r.property), (5, u64::MAX, EVENT_ENABLE_PROPERTY_STACK_TRACE));
        assert_eq!(r.filters.len(), 2);
        let (kind, data) = &r.filters[0];
        assert_eq!((*kind, data.len()), (EVENT_FILTER_TYPE_EVENT_ID, 4 + 2 * 33));
        // SAFETY: `data` holds a whole EVENT_FILTER_EVENT_ID header and its
        // ids; read_unaligned needs no alignment.
        let header = unsafe { data.as_ptr().cast::<EVENT_FILTER_EVENT_ID>().read_unaligned() };
        assert!(header.FilterIn);
        assert_eq!((header.Count, header.Events[0]), (33, 5));
        assert_eq!(r.filters[1], (EVENT_FILTER_TYPE_STACKWALK, vec![1, 0, 3, 0, 5, 0, 17, 0, 0x5C, 0xEA]));

        // Winsock-AFD: keyword 0x4, level 4.
        let r = enable_request(&provider("Winsock-AFD")).unwrap();
        assert_eq!((r.level, r.keywords), (4, 0x4));

        // Kernel-Network: no filter, no stacks.
        let r = enable_request(&provider("Kernel-Network")).unwrap();
        assert_eq!((r.property, r.filters.len()), (0, 0));

        // The thread pool: stacks on every event, no filter.
        let r = enable_request(&provider("ThreadPool")).unwrap();
        assert_eq!((r.level, r.property, r.filters.len()), (0xFF, EVENT_ENABLE_PROPERTY_STACK_TRACE, 0));

        // `--no-stacks`: the property and the stack filter go away.
        let r = enable_request(&provider("WebIO").without_stacks()).unwrap();
        assert_eq!((r.property, r.filters.len()), (0, 1));

        // More than ETW's 64 ids: refused with the reason.
        let many: Vec<u16> = (1..=80).collect();
        let e = enable_request(&Provider::guid("x", "00000000-0000-0000-0000-000000000001").events(&many)).unwrap_err();
        assert!(e.contains("80 event ids"), "{e}");
    }

    #[test]
    fn every_network_provider_fits_etw_filters() {
        let scenario = Scenario::network(&Options { clr: true, js: true, ..Options::default() });
        for p in &scenario.providers {
            enable_request(p).unwrap_or_else(|e| panic!("{}: {e}", p.label));
        }
    }

    #[test]
    fn the_system_provider_becomes_flags_and_a_thread_start_stack() {
        let scenario = Scenario::network(&Options::default());
        let (flags, stacks) = system_request(&scenario.system).unwrap();
        // EVENT_TRACE_FLAG_PROCESS | THREAD | IMAGE_LOAD.
        assert_eq!(flags, 0x7);
        assert_eq!(stacks.len(), 1);
        let thread = windows_sys::core::GUID::from_u128(0x3d6fa8d1_fe05_11d0_9dda_00c04fd7ba7c);
        assert_eq!(
            (stacks[0].EventGuid.data1, stacks[0].EventGuid.data4, stacks[0].Type),
            (thread.data1, thread.data4, 1)
        );
        assert_eq!(size_of_val(stacks.as_slice()), 24);

        let unknown = SystemProvider { keywords: vec!["ProcessThread", "DiskIO"], stacks: vec![] };
        assert!(system_request(&unknown).err().unwrap().to_string().contains("\"DiskIO\""));
        let unknown = SystemProvider { keywords: vec![], stacks: vec!["CSwitch"] };
        assert!(system_request(&unknown).err().unwrap().to_string().contains("\"CSwitch\""));
    }

    #[test]
    fn a_scenario_becomes_one_session_with_both_collectors_buffers() {
        let scenario = Scenario::network(&Options::default());
        let live = SessionConfig::real_time(&scenario);
        assert_eq!((live.buffer_kb, live.min_buffers, live.max_buffers, live.circular_mb), (1024, 96, 96, None));
        assert_eq!(live.system.as_ref(), Some(&scenario.system));
        let looping = Scenario::network(&Options { circular: true, ..Options::default() });
        let file = SessionConfig::for_scenario(&looping, Some("net.etl".into()));
        assert_eq!(file.circular_mb, Some(96));
        // A loop without a file would be an in-memory ring nobody saves: real time instead.
        assert_eq!(SessionConfig::real_time(&looping).circular_mb, None);
    }

    #[test]
    fn bad_requests_fail_before_windows_is_called() {
        let config = SessionConfig::real_time(&Scenario::network(&Options::default()));
        let long = "n".repeat(1024);
        let e = Session::start(&long, &config).unwrap_err();
        assert!(matches!(e, ControllerError::Invalid(_)) && e.to_string().contains("session name"), "{e}");
        let e = Session::start("a\0b", &config).unwrap_err();
        assert!(e.to_string().contains("NUL"), "{e}");
        let zero = SessionConfig { buffer_kb: 0, ..config.clone() };
        assert!(Session::start("nettrail-test", &zero).unwrap_err().to_string().contains("0 KB"));
        let odd =
            SessionConfig { system: Some(SystemProvider { keywords: vec!["Registry"], stacks: vec![] }), ..config };
        assert!(Session::start("nettrail-test", &odd).unwrap_err().to_string().contains("Registry"));
    }

    #[test]
    fn subjects_name_the_session_and_the_provider() {
        assert_eq!(session_subject("nettrail"), "session \"nettrail\"");
        let p = provider("TCPIP");
        let Target::Guid(g) = p.target else { unreachable!() };
        assert_eq!(provider_subject(&p, &g), "provider TCPIP {2f07e2ee-15db-40f1-90ef-9d7ba282188a}");
    }
}
