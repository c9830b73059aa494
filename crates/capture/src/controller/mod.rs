//! A native ETW controller and real-time consumer: what `wpr.exe` does for
//! a profile, done with the ETW API directly (Windows only).
//!
//! - [`Session::start`] starts a named session to a file or in real time,
//!   with the kernel's system provider if asked (a *system logger*, so it
//!   does not take the single "NT Kernel Logger");
//! - [`Session::enable`] enables a [`Provider`](crate::Provider) with its
//!   level, keywords, event-id and stack filters and its start rundown;
//! - [`Session::stop`] requests the stop rundowns, stops the session and
//!   returns its statistics; dropping a [`Session`] stops it too, so an
//!   error, a panic or an early return never leaves a session running;
//! - [`stop_on_ctrl_c`] stops named sessions on Ctrl-C or when the
//!   console closes;
//! - [`sessions`] lists the sessions that run (`nettrail status`);
//! - [`consume`] reads a real-time session, event by event, as
//!   [`LiveEvent`](crate::LiveEvent)s.
//!
//! ```no_run
//! use nettrail_capture::controller::{Session, SessionConfig, consume};
//! use nettrail_capture::{Options, Scenario};
//!
//! let scenario = Scenario::network(&Options::default());
//! let mut session = Session::start("nettrail-live", &SessionConfig::real_time(&scenario))?;
//! for provider in &scenario.providers {
//!     session.enable(provider)?;
//! }
//! nettrail_capture::controller::stop_on_ctrl_c(session.name())?;
//! let read = consume(session.name(), &mut |event| println!("{} {}", event.provider, event.descriptor.id))?;
//! let stats = session.stop()?;
//! eprintln!("{} events read, {} lost", read.events, stats.events_lost);
//! # Ok::<(), nettrail_capture::controller::ControllerError>(())
//! ```
//!
//! # What the native path does not replicate from WPR
//!
//! - WPR records the system provider and the other providers in two
//!   collectors and merges them at `-stop`, adding image identities, PDB
//!   records and event metadata (`ImageId`, `DbgID`, `EventMetadata`…) to
//!   the `.etl`. This controller writes one session's file as ETW writes
//!   it: nettrail reads it, but symbol resolution lacks the merged image
//!   identities (`DbgID` records), and manifest-based events come without
//!   embedded schemas (TraceLogging events carry their own).
//! - The thread pool's custom stacks (`Stacks::Pool`): see [`Session::enable`].
//! - An in-memory ring (no log file, with `circular_mb`) keeps the last
//!   events in memory only: WPR saves such a ring to a file at `-stop`;
//!   this controller does not, so use a circular *file* here.
//! - A session stopped by the Ctrl-C handler is stopped as is: the stop
//!   rundowns are not requested.

mod consumer;
mod error;
mod layout;
mod process;
mod providers;
mod session;

pub use consumer::{ConsumeStats, ConsumerStop, consume, consume_until};
pub use error::ControllerError;
pub use layout::{SessionInfo, Stats};
pub use process::{cancel_stop_on_ctrl_c, ctrl_c_received, is_elevated, stop_on_ctrl_c};
pub use providers::{registered_providers, resolve_provider};
pub use session::{Session, SessionConfig, query_named, sessions};

use nettrail_etl::Guid;
use windows_sys::core::GUID;

fn to_windows_guid(g: &Guid) -> GUID {
    GUID { data1: g.data1, data2: g.data2, data3: g.data3, data4: g.data4 }
}

fn from_windows_guid(g: &GUID) -> Guid {
    Guid { data1: g.data1, data2: g.data2, data3: g.data3, data4: g.data4 }
}

/// `s` as a NUL-terminated UTF-16 string.
fn wide_z(s: &str) -> Vec<u16> {
    s.encode_utf16().chain([0]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids_cross_to_windows_unchanged() {
        let tcpip = Guid::parse_const("2f07e2ee-15db-40f1-90ef-9d7ba282188a");
        let w = to_windows_guid(&tcpip);
        let expected = GUID::from_u128(0x2f07e2ee_15db_40f1_90ef_9d7ba282188a);
        assert_eq!(
            (w.data1, w.data2, w.data3, w.data4),
            (expected.data1, expected.data2, expected.data3, expected.data4)
        );
        assert_eq!(from_windows_guid(&w), tcpip);
    }

    #[test]
    fn names_end_with_a_nul() {
        assert_eq!(wide_z("nt"), [b'n' as u16, b't' as u16, 0]);
    }
}
