//! Why a controller call failed: the Windows function, what it acted on,
//! the Win32 code, and what to do about the codes users meet.

use windows_sys::Win32::Foundation::{
    ERROR_ACCESS_DENIED, ERROR_ALREADY_EXISTS, ERROR_BAD_LENGTH, ERROR_INVALID_PARAMETER, ERROR_NO_SYSTEM_RESOURCES,
    ERROR_NOT_SUPPORTED, ERROR_WMI_INSTANCE_NOT_FOUND,
};

/// A failed controller or consumer call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControllerError {
    /// A Windows function returned an error.
    #[error("{operation} for {subject}: {} (Win32 error {code})", explain(*code, subject))]
    Win32 {
        /// The function, e.g. `StartTraceW`.
        operation: &'static str,
        /// What it acted on: `session "nettrail"`, `provider {GUID}`.
        subject: String,
        code: u32,
    },
    /// `Target::Registered` named no provider that is registered here.
    #[error(
        "no ETW provider named {name:?} is registered on this machine (`logman query providers` lists them); pass its GUID, or `*{name}` for a TraceLogging/EventSource provider"
    )]
    UnknownProvider { name: String },
    /// The request cannot be expressed to ETW (a name too long, too many
    /// event ids, an unknown system keyword); nothing was started.
    #[error("{0}")]
    Invalid(String),
}

impl ControllerError {
    pub(crate) fn win32(operation: &'static str, subject: impl Into<String>, code: u32) -> ControllerError {
        ControllerError::Win32 { operation, subject: subject.into(), code }
    }

    /// The Win32 error code, when a Windows call failed.
    pub fn code(&self) -> Option<u32> {
        match self {
            ControllerError::Win32 { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Access denied: the process is not elevated.
    pub fn needs_administrator(&self) -> bool {
        self.code() == Some(ERROR_ACCESS_DENIED)
    }

    /// A session of that name already runs.
    pub fn already_exists(&self) -> bool {
        self.code() == Some(ERROR_ALREADY_EXISTS)
    }

    /// No session of that name runs.
    pub fn not_running(&self) -> bool {
        self.code() == Some(ERROR_WMI_INSTANCE_NOT_FOUND)
    }
}

/// What a code means for the user.
fn explain(code: u32, subject: &str) -> String {
    match code {
        ERROR_ACCESS_DENIED => {
            "access denied: controlling ETW sessions needs administrator rights (run from a terminal opened with \"Run as administrator\", or be a member of Performance Log Users)".to_string()
        }
        ERROR_ALREADY_EXISTS => format!(
            "{subject} already exists: another recording (or one left behind by a crash) uses that name; stop it if it is yours (`nettrail stop`, `Session::stop_named`) or choose another name"
        ),
        ERROR_NO_SYSTEM_RESOURCES => {
            "insufficient system resources: too many ETW sessions run (Windows allows 64, and 8 system loggers), or the buffers do not fit in memory; stop sessions you do not need (`nettrail status` lists them) or ask for fewer buffers".to_string()
        }
        ERROR_WMI_INSTANCE_NOT_FOUND => format!("{subject} is not running"),
        ERROR_INVALID_PARAMETER => {
            "invalid parameter (sessions with the system provider need Windows 8 or later; buffer sizes above 16 MB and zero-size files are refused)".to_string()
        }
        ERROR_BAD_LENGTH => "a size ETW received is wrong (a bug in nettrail: please report it)".to_string(),
        ERROR_NOT_SUPPORTED => "not supported by this version of Windows".to_string(),
        _ => std::io::Error::from_raw_os_error(code as i32).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_call_the_subject_the_code_and_the_remedy() {
        let e = ControllerError::win32("StartTraceW", "session \"nettrail\"", ERROR_ALREADY_EXISTS);
        let text = e.to_string();
        assert!(
            text.starts_with("StartTraceW for session \"nettrail\": session \"nettrail\" already exists"),
            "{text}"
        );
        assert!(text.ends_with("(Win32 error 183)"), "{text}");
        assert!(e.already_exists() && !e.needs_administrator() && !e.not_running());

        let e = ControllerError::win32("EnableTraceEx2", "session \"x\"", ERROR_ACCESS_DENIED);
        assert!(e.to_string().contains("administrator"));
        assert!(e.needs_administrator());

        let e = ControllerError::win32("ControlTraceW (stop)", "session \"gone\"", ERROR_WMI_INSTANCE_NOT_FOUND);
        assert!(e.to_string().contains("session \"gone\" is not running (Win32 error 4201)"), "{e}");
        assert!(e.not_running());

        let e = ControllerError::win32("StartTraceW", "session \"x\"", ERROR_NO_SYSTEM_RESOURCES);
        assert!(e.to_string().contains("too many ETW sessions"));
        assert_eq!(e.code(), Some(1450));

        assert_eq!(ControllerError::Invalid("too long".into()).code(), None);
        let e = ControllerError::UnknownProvider { name: "Contoso-Net".into() };
        assert!(e.to_string().contains("\"Contoso-Net\"") && e.to_string().contains("*Contoso-Net"));
    }
}
