//! What a running recording needs to remember between `nettrail start` and
//! `nettrail stop`: the profile WPR was given, where WPR keeps its temporary
//! files, and the options (`stop` skips managed PDBs unless `--clr`).

use std::path::{Path, PathBuf};

use crate::wpr::CaptureError;

/// Environment variable naming nettrail's state folder.
pub const HOME_VARIABLE: &str = "NETTRAIL_HOME";

/// The state folder: `NETTRAIL_HOME`, else `%LOCALAPPDATA%\nettrail`, else
/// `$XDG_STATE_HOME/nettrail` or `~/.local/state/nettrail`.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
}

/// A recording that was started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recording {
    /// Seconds since 1970 when it started.
    pub started: u64,
    pub circular: bool,
    pub clr: bool,
    pub js: bool,
    pub browser: bool,
    pub no_stacks: bool,
    /// The `--provider` values, as given.
    pub providers: Vec<String>,
}

impl StateDir {
    pub fn new(dir: impl Into<PathBuf>) -> StateDir {
        StateDir { dir: dir.into() }
    }

    pub fn locate() -> StateDir {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let dir = var(HOME_VARIABLE)
            .or_else(|| var("LOCALAPPDATA").map(|d| d.join("nettrail")))
            .or_else(|| var("XDG_STATE_HOME").map(|d| d.join("nettrail")))
            .or_else(|| var("HOME").map(|d| d.join(".local").join("state").join("nettrail")))
            .unwrap_or_else(|| std::env::temp_dir().join("nettrail"));
        StateDir { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The profile written at start (kept: WPR reads it again at stop).
    pub fn profile(&self) -> PathBuf {
        self.dir.join("nettrail.wprp")
    }

    /// Where WPR writes the session's files before merging them.
    pub fn temp(&self) -> PathBuf {
        self.dir.join("recording")
    }

    fn recording_file(&self) -> PathBuf {
        self.dir.join("recording.txt")
    }

    pub fn create(&self) -> Result<(), CaptureError> {
        std::fs::create_dir_all(self.temp()).map_err(|source| io(&self.temp(), source))
    }

    pub fn write_profile(&self, xml: &str) -> Result<PathBuf, CaptureError> {
        let path = self.profile();
        std::fs::write(&path, xml).map_err(|source| io(&path, source))?;
        Ok(path)
    }

    pub fn save(&self, r: &Recording) -> Result<(), CaptureError> {
        let mut text = format!(
            "started={}\ncircular={}\nclr={}\njs={}\nbrowser={}\nno_stacks={}\n",
            r.started, r.circular, r.clr, r.js, r.browser, r.no_stacks
        );
        for p in &r.providers {
            text.push_str(&format!("provider={p}\n"));
        }
        let path = self.recording_file();
        std::fs::write(&path, text).map_err(|source| io(&path, source))
    }

    /// The recording `start` saved, if any (a missing or unreadable file is
    /// no recording: `stop` then uses defaults).
    pub fn load(&self) -> Option<Recording> {
        let text = std::fs::read_to_string(self.recording_file()).ok()?;
        let mut r = Recording::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once('=') else { continue };
            match key {
                "started" => r.started = value.parse().unwrap_or(0),
                "circular" => r.circular = value == "true",
                "clr" => r.clr = value == "true",
                "js" => r.js = value == "true",
                "browser" => r.browser = value == "true",
                "no_stacks" => r.no_stacks = value == "true",
                "provider" => r.providers.push(value.to_string()),
                _ => {}
            }
        }
        Some(r)
    }

    pub fn forget(&self) {
        let _ = std::fs::remove_file(self.recording_file());
    }
}

fn io(path: &Path, source: std::io::Error) -> CaptureError {
    CaptureError::Io { path: path.display().to_string(), source }
}
