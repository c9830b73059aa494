//! What the process may do and how it ends: whether it is elevated, and a
//! console handler that stops the registered sessions on Ctrl-C, Ctrl-Break
//! or when the console closes, so a recording never outlives nettrail.
#![allow(unsafe_code)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use windows_sys::Win32::Foundation::{CloseHandle, HANDLE};
use windows_sys::Win32::Security::{GetTokenInformation, TOKEN_ELEVATION, TOKEN_QUERY, TokenElevation};
use windows_sys::Win32::System::Console::{CTRL_BREAK_EVENT, CTRL_C_EVENT, SetConsoleCtrlHandler};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};
use windows_sys::core::BOOL;

use super::ControllerError;
use super::layout::Stats;

/// Whether the process runs elevated (as administrator), which starting
/// and stopping sessions needs. False when the token cannot be read.
pub fn is_elevated() -> bool {
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: GetCurrentProcess returns a pseudo-handle that needs no
    // closing; `token` is a valid place for the opened token handle.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
        return false;
    }
    let mut elevation = TOKEN_ELEVATION { TokenIsElevated: 0 };
    let mut returned = 0u32;
    // SAFETY: `token` was opened with TOKEN_QUERY; the output buffer is a
    // TOKEN_ELEVATION of the size passed.
    let ok = unsafe {
        GetTokenInformation(
            token,
            TokenElevation,
            (&raw mut elevation).cast(),
            size_of::<TOKEN_ELEVATION>() as u32,
            &mut returned,
        )
    };
    // SAFETY: `token` is an open handle this function owns.
    unsafe { CloseHandle(token) };
    ok != 0 && elevation.TokenIsElevated != 0
}

/// Sessions the console handler stops, and what it got back from them.
#[derive(Debug)]
struct Registry {
    installed: bool,
    names: Vec<String>,
    /// Stopped by the handler, waiting for their owner's `Session::stop`.
    stopped: Vec<(String, Stats)>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry { installed: false, names: Vec::new(), stopped: Vec::new() });
static CTRL_C: AtomicBool = AtomicBool::new(false);

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Stops the session `name` when the user presses Ctrl-C or Ctrl-Break or
/// closes the console (the handler is installed on the first call).
///
/// On Ctrl-C and Ctrl-Break the handler stops every registered session
/// and, if there was one, tells Windows the event was handled: the program
/// goes on, and a [`consume`](super::consume) of a stopped session returns,
/// so a `live` view can print its summary and exit normally. With no
/// session registered (a second Ctrl-C, say) the default handling, exit,
/// applies. On close,
/// logoff and shutdown the sessions are stopped and Windows ends the
/// process.
///
/// [`Session::stop`](super::Session::stop) of a session the handler
/// stopped returns the statistics the handler received, and unregisters
/// the name; [`cancel_stop_on_ctrl_c`] unregisters it without stopping.
///
/// Windows calls console handlers last-registered first, and one that
/// reports the event handled hides it from the others: install this after
/// any other handler (e.g. the `ctrlc` crate's) so that it runs.
pub fn stop_on_ctrl_c(name: &str) -> Result<(), ControllerError> {
    let mut r = registry();
    if !r.installed {
        // SAFETY: `on_console_event` is an `extern "system"` function with
        // the HandlerRoutine signature that never unwinds.
        if unsafe { SetConsoleCtrlHandler(Some(on_console_event), 1) } == 0 {
            let code = std::io::Error::last_os_error().raw_os_error().unwrap_or(0) as u32;
            return Err(ControllerError::win32("SetConsoleCtrlHandler", "the console", code));
        }
        r.installed = true;
    }
    if !r.names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
        r.names.push(name.to_string());
    }
    Ok(())
}

/// The handler no longer stops `name`.
pub fn cancel_stop_on_ctrl_c(name: &str) {
    registry().names.retain(|n| !n.eq_ignore_ascii_case(name));
}

/// Whether Ctrl-C, Ctrl-Break or a console close reached the handler.
pub fn ctrl_c_received() -> bool {
    CTRL_C.load(Ordering::SeqCst)
}

/// Unregisters `name` and returns the statistics of its stop by the
/// handler, if the handler stopped it.
pub(crate) fn take_stopped(name: &str) -> Option<Stats> {
    let mut r = registry();
    r.names.retain(|n| !n.eq_ignore_ascii_case(name));
    let at = r.stopped.iter().position(|(n, _)| n.eq_ignore_ascii_case(name))?;
    Some(r.stopped.swap_remove(at).1)
}

/// Stops every registered session; true if there was one.
fn stop_registered(stop: &mut dyn FnMut(&str) -> Result<Stats, ControllerError>) -> bool {
    let mut r = registry();
    let names = std::mem::take(&mut r.names);
    for name in &names {
        // A session already gone needs nothing more.
        if let Ok(stats) = stop(name) {
            r.stopped.push((name.clone(), stats));
        }
    }
    !names.is_empty()
}

/// The console control handler; runs on a thread Windows creates.
unsafe extern "system" fn on_console_event(kind: u32) -> BOOL {
    CTRL_C.store(true, Ordering::SeqCst);
    let stopped =
        catch_unwind(AssertUnwindSafe(|| stop_registered(&mut super::session::stop_by_name))).unwrap_or(false);
    BOOL::from(stopped && (kind == CTRL_C_EVENT || kind == CTRL_BREAK_EVENT))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(buffers_written: u32) -> Stats {
        Stats { buffers_written, ..Stats::default() }
    }

    // One test: the registry is process-wide.
    #[test]
    fn the_handler_stops_registered_sessions_and_hands_their_stats_to_their_owner() {
        registry().names.extend(["nettrail-a".to_string(), "nettrail-b".to_string(), "nettrail-gone".to_string()]);
        cancel_stop_on_ctrl_c("NETTRAIL-B");
        let mut asked = Vec::new();
        let any = stop_registered(&mut |name| {
            asked.push(name.to_string());
            match name {
                "nettrail-a" => Ok(stats(12)),
                _ => Err(ControllerError::win32("ControlTraceW (stop)", name, 4201)),
            }
        });
        assert!(any);
        assert_eq!(asked, ["nettrail-a", "nettrail-gone"]);
        assert!(registry().names.is_empty());
        assert_eq!(take_stopped("nettrail-a"), Some(stats(12)));
        assert_eq!(take_stopped("nettrail-a"), None);
        assert_eq!(take_stopped("nettrail-gone"), None);
        // Nothing registered: nothing stopped, Windows' default applies.
        assert!(!stop_registered(&mut |_| panic!("no session to stop")));
    }
}
