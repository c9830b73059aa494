//! Recording network traces on Windows.
//!
//! - [`scenario`]: the providers the analysis reads (levels, keywords,
//!   rundowns, event and stack filters) and the buffers, as data;
//! - [`wprp`]: that scenario as a WPR profile, and [`wpr`]: the `wpr.exe`
//!   command lines of start, stop, status and cancel, run with cleanup on
//!   failure and Ctrl-C;
//! - [`spec`]: `--provider NAME|GUID[:KEYWORDS[:LEVEL]]`;
//! - `controller` (Windows only): a native ETW session controller: start a
//!   named session to a file or in real time, enable providers, stop it
//!   with its statistics, list the sessions that run.
//!
//! Everything but the Windows calls is plain data and text, tested on any OS.

#[cfg(windows)]
pub mod controller;
pub mod live;
pub mod provider;
pub mod scenario;
pub mod spec;
pub mod state;
pub mod wpr;
pub mod wprp;

pub use live::LiveEvent;
pub use provider::{Provider, Stacks, SystemProvider, Target};
pub use scenario::{Options, SESSION_NAME, Scenario};
pub use spec::{SpecError, parse_provider};
pub use state::{Recording, StateDir};
pub use wpr::{CaptureError, Flag, Wpr};
