//! Driving Windows Performance Recorder (`wpr.exe`, in System32 since
//! Windows 10): the command line of each verb, the run, and advice for the
//! error codes WPR reports. Safety lives here too: a start or stop that
//! fails, panics or is interrupted by Ctrl-C cancels the session, so no
//! kernel logger is left running behind the user's back.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::scenario::SESSION_NAME;
use crate::wprp::PROFILE_NAME;

/// Environment variable naming the `wpr` program to run (a newer WPR from
/// the Windows ADK, or a stand-in that records its arguments in tests).
pub const WPR_VARIABLE: &str = "NETTRAIL_WPR";

/// Why a recording verb failed.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error(
        "capture needs Windows (ETW and wpr.exe); this machine can still read and analyze traces recorded elsewhere, e.g. `nettrail requests trace.etl`"
    )]
    NotWindows,
    #[error(
        "wpr.exe not found (looked in {looked}): it ships with Windows 10 and later in System32; on older Windows install the Windows Performance Toolkit from the Windows ADK, or point {WPR_VARIABLE} at a wpr.exe"
    )]
    WprMissing { looked: String },
    #[error(
        "recording needs administrator rights: open a terminal with \"Run as administrator\" and run the command again"
    )]
    NotElevated,
    #[error("cannot run {program}: {source}")]
    Spawn { program: String, source: std::io::Error },
    #[error("wpr {verb} failed{code}{advice}", code = code_text(*code), advice = advice_text(*code))]
    Wpr { verb: &'static str, code: Option<u32>, output: String },
    #[error("interrupted (Ctrl-C): {what}")]
    Interrupted { what: String },
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
}

fn code_text(code: Option<u32>) -> String {
    code.map(|c| format!(" with error {c:#010x}")).unwrap_or_default()
}

fn advice_text(code: Option<u32>) -> String {
    code.and_then(advice).map(|a| format!(": {a}")).unwrap_or_default()
}

/// What to do about an error code WPR reports (facts from MSO-Scripts'
/// handling of the same codes).
pub fn advice(code: u32) -> Option<&'static str> {
    Some(match code {
        0xc558_3001 => {
            "a nettrail recording is already running; stop it with `nettrail stop` or discard it with `nettrail cancel`"
        }
        0xc558_3000 => "no nettrail recording is running (start one with `nettrail start`)",
        0xc558_3014 => {
            "a collector is in use by another tool (another WPR/xperf session owns a logger); stop that session (see `nettrail status`) and try again"
        }
        0x8007_05aa => {
            "insufficient system resources: too many ETW sessions run, or the buffers do not fit; stop other sessions or use `--loop`"
        }
        0x8007_0008 => "out of memory for the trace buffers: close programs, or record without `--loop`",
        0xc558_0612 | 0xc558_300c => {
            "a provider or profile is incompatible with this WPR or Windows version; try `--no-stacks`, or drop the `--provider` that was added"
        }
        0x8007_00b7 => "the output file already exists or is in use; choose another path with `-o`",
        0x8007_1069 => "the trace was aborted by the system; its data is lost",
        0x8007_0005 => "access denied: run from an administrator terminal",
        _ => return None,
    })
}

/// The first `0x` followed by eight hex digits in WPR's output (its error
/// messages end with "Error code: 0x…").
pub fn error_code(output: &str) -> Option<u32> {
    let bytes = output.as_bytes();
    (0..bytes.len().saturating_sub(9)).find_map(|i| {
        let prefix = &bytes[i..i + 2];
        if prefix != b"0x" && prefix != b"0X" {
            return None;
        }
        let hex = output.get(i + 2..i + 10)?;
        let next_is_hex = bytes.get(i + 10).is_some_and(u8::is_ascii_hexdigit);
        (hex.bytes().all(|b| b.is_ascii_hexdigit()) && !next_is_hex).then(|| u32::from_str_radix(hex, 16).ok())?
    })
}

/// The arguments of each verb. `-instancename` keeps our session apart from
/// any other WPR recording on the machine.
pub mod args {
    use super::*;

    /// `wpr -start PROFILE!nettrail [-start EXTRA]… [-filemode -recordtempto DIR] -instancename nettrail`.
    /// Without `-filemode` WPR records into circular memory buffers.
    pub fn start(profile: &Path, extra: &[&str], circular: bool, temp_dir: &Path) -> Vec<OsString> {
        let mut profile_arg = profile.as_os_str().to_owned();
        profile_arg.push(format!("!{PROFILE_NAME}"));
        let mut a: Vec<OsString> = vec!["-start".into(), profile_arg];
        for e in extra {
            a.extend(["-start".into(), (*e).into()]);
        }
        if !circular {
            a.extend(["-filemode".into(), "-recordtempto".into(), temp_dir.as_os_str().to_owned()]);
        }
        a.extend(instance());
        a
    }

    /// `wpr -stop OUT [-skipPdbGen] -instancename nettrail`: merges the
    /// kernel rundown and the ImageId/metadata events into OUT. PDBs for
    /// managed code are generated only when .NET was traced.
    pub fn stop(out: &Path, managed_pdbs: bool) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec!["-stop".into(), out.as_os_str().to_owned()];
        if !managed_pdbs {
            a.push("-skipPdbGen".into());
        }
        a.extend(instance());
        a
    }

    pub fn status() -> Vec<OsString> {
        let mut a: Vec<OsString> = vec!["-status".into(), "profiles".into(), "collectors".into()];
        a.extend(instance());
        a
    }

    pub fn cancel() -> Vec<OsString> {
        let mut a: Vec<OsString> = vec!["-cancel".into()];
        a.extend(instance());
        a
    }

    fn instance() -> [OsString; 2] {
        ["-instancename".into(), SESSION_NAME.into()]
    }
}

/// What a `wpr` run printed and returned.
#[derive(Debug, Clone)]
pub struct Run {
    pub success: bool,
    /// stdout and stderr, in that order.
    pub output: String,
    pub code: Option<u32>,
}

/// A `wpr` program to run.
#[derive(Debug, Clone)]
pub struct Wpr {
    program: PathBuf,
}

impl Wpr {
    pub fn new(program: impl Into<PathBuf>) -> Wpr {
        Wpr { program: program.into() }
    }

    /// `NETTRAIL_WPR`, else (on Windows) `wpr.exe` in System32, `WPT_PATH`
    /// or on `PATH`. Elsewhere capture is refused unless a program is named.
    pub fn find() -> Result<Wpr, CaptureError> {
        if let Some(p) = std::env::var_os(WPR_VARIABLE).filter(|p| !p.is_empty()) {
            return Ok(Wpr::new(p));
        }
        if !cfg!(windows) {
            return Err(CaptureError::NotWindows);
        }
        let mut candidates = Vec::new();
        if let Some(root) = std::env::var_os("SystemRoot") {
            candidates.push(Path::new(&root).join("System32").join("wpr.exe"));
        }
        if let Some(dir) = std::env::var_os("WPT_PATH") {
            candidates.push(Path::new(&dir).join("wpr.exe"));
        }
        if let Some(path) = std::env::var_os("PATH") {
            candidates.extend(std::env::split_paths(&path).map(|d| d.join("wpr.exe")));
        }
        match candidates.iter().find(|c| c.is_file()) {
            Some(found) => Ok(Wpr::new(found)),
            None => Err(CaptureError::WprMissing {
                looked: candidates.iter().take(2).map(|c| c.display().to_string()).collect::<Vec<_>>().join(", "),
            }),
        }
    }

    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Runs `wpr` with these arguments; its output is returned, not shown.
    pub fn run(&self, args: &[OsString]) -> Result<Run, CaptureError> {
        let out = Command::new(&self.program)
            .args(args)
            .output()
            .map_err(|source| CaptureError::Spawn { program: self.program.display().to_string(), source })?;
        let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
        output.push_str(&String::from_utf8_lossy(&out.stderr));
        // WPR's exit code is its HRESULT; the text says it too.
        let exit = out.status.code().map(|c| c as u32).filter(|&c| c >= 0x8000_0000);
        let code = if out.status.success() { None } else { error_code(&output).or(exit) };
        Ok(Run { success: out.status.success(), output, code })
    }

    /// Runs a verb; failure becomes [`CaptureError::Wpr`].
    fn verb(&self, verb: &'static str, args: &[OsString]) -> Result<Run, CaptureError> {
        let run = self.run(args)?;
        if run.success { Ok(run) } else { Err(CaptureError::Wpr { verb, code: run.code, output: run.output }) }
    }

    /// Starts the recording. Any failure but "already running", a panic, or
    /// a Ctrl-C while WPR starts, cancels what was started.
    pub fn start(
        &self,
        profile: &Path,
        extra: &[&str],
        circular: bool,
        temp_dir: &Path,
        interrupted: &Flag,
    ) -> Result<Run, CaptureError> {
        let guard = CancelOnDrop::new(self);
        let result = self.verb("-start", &args::start(profile, extra, circular, temp_dir));
        match &result {
            Err(CaptureError::Wpr { code: Some(0xc558_3001), .. }) => guard.disarm(),
            Err(_) => drop(guard),
            Ok(_) if interrupted.is_set() => {
                drop(guard);
                return Err(CaptureError::Interrupted { what: "the recording was cancelled".into() });
            }
            Ok(_) => guard.disarm(),
        }
        result
    }

    /// Stops the recording into `out`. If WPR fails (other than "nothing
    /// running") or is interrupted, the session is cancelled so that no
    /// logger keeps running.
    pub fn stop(&self, out: &Path, managed_pdbs: bool, interrupted: &Flag) -> Result<Run, CaptureError> {
        let guard = CancelOnDrop::new(self);
        let result = self.verb("-stop", &args::stop(out, managed_pdbs));
        match &result {
            Err(CaptureError::Wpr { code: Some(0xc558_3000), .. }) => guard.disarm(),
            Err(_) => drop(guard),
            Ok(_) if interrupted.is_set() => {
                guard.disarm();
                return Err(CaptureError::Interrupted {
                    what: format!("the trace may be incomplete: {}", out.display()),
                });
            }
            Ok(_) => guard.disarm(),
        }
        result
    }

    pub fn status(&self) -> Result<Run, CaptureError> {
        self.run(&args::status())
    }

    pub fn cancel(&self) -> Result<Run, CaptureError> {
        self.verb("-cancel", &args::cancel())
    }
}

/// Cancels the session when dropped armed: on an error path, a panic's
/// unwinding, or an early return.
struct CancelOnDrop<'a> {
    wpr: Option<&'a Wpr>,
}

impl<'a> CancelOnDrop<'a> {
    fn new(wpr: &'a Wpr) -> Self {
        CancelOnDrop { wpr: Some(wpr) }
    }

    fn disarm(mut self) {
        self.wpr = None;
    }
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(wpr) = self.wpr.take() {
            // Best effort: the error being reported matters more.
            let _ = wpr.run(&args::cancel());
        }
    }
}

/// Set once Ctrl-C was pressed. WPR sees the same Ctrl-C (it shares the
/// console) and we let it finish its step before cleaning up.
#[derive(Debug, Clone, Default)]
pub struct Flag(Arc<AtomicBool>);

impl Flag {
    pub fn set(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
