//! Where encoded events go: ETW on Windows, a list in tests.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::event::{EncodedEvent, Provider};

/// Receives the events of one provider.
pub trait Sink: Send + Sync + 'static {
    /// Whether an event of this level and these keywords would be kept.
    /// Checked before anything is encoded: when it is false, an event costs
    /// next to nothing.
    fn enabled(&self, level: u8, keywords: u64) -> bool;

    /// Writes an event. Failures (no session, a full buffer) are dropped,
    /// as ETW drops them.
    fn write(&self, event: EncodedEvent);
}

/// The ETW provider, registered while this lives.
///
/// On Windows, [`EtwSink::register`] calls `EventRegister` with the
/// provider's GUID and sets its traits (`EventSetInformation`); events are
/// written with `EventWriteTransfer` when a session has enabled the
/// provider at their level and keyword (`EventProviderEnabled`), and the
/// provider is unregistered on drop.
///
/// On other systems there is no ETW: the sink is never enabled and writes
/// nothing, so the same program runs everywhere.
#[derive(Debug)]
pub struct EtwSink {
    #[cfg(windows)]
    registration: Option<crate::sys::Registration>,
}

impl EtwSink {
    /// Registers the provider (on Windows; elsewhere this cannot fail and
    /// the sink does nothing).
    pub fn register(provider: &Provider) -> std::io::Result<EtwSink> {
        #[cfg(windows)]
        {
            crate::sys::Registration::new(provider).map(|r| EtwSink { registration: Some(r) })
        }
        #[cfg(not(windows))]
        {
            let _ = provider;
            Ok(EtwSink {})
        }
    }

    /// A sink that writes nothing (what [`crate::layer`] falls back to when
    /// registration fails).
    pub fn unregistered() -> EtwSink {
        EtwSink {
            #[cfg(windows)]
            registration: None,
        }
    }

    /// Whether the provider is registered with ETW (never, outside Windows).
    pub fn is_registered(&self) -> bool {
        #[cfg(windows)]
        {
            self.registration.is_some()
        }
        #[cfg(not(windows))]
        {
            false
        }
    }
}

impl Sink for EtwSink {
    fn enabled(&self, level: u8, keywords: u64) -> bool {
        #[cfg(windows)]
        {
            self.registration.as_ref().is_some_and(|r| r.enabled(level, keywords))
        }
        #[cfg(not(windows))]
        {
            let _ = (level, keywords);
            false
        }
    }

    fn write(&self, event: EncodedEvent) {
        #[cfg(windows)]
        if let Some(r) = &self.registration {
            r.write(&event);
        }
        #[cfg(not(windows))]
        let _ = event;
    }
}

/// Keeps every event, for tests (this crate's and others'): clones share
/// the list.
#[derive(Clone, Debug, Default)]
pub struct CollectingSink {
    events: Arc<Mutex<Vec<EncodedEvent>>>,
}

impl CollectingSink {
    pub fn new() -> CollectingSink {
        CollectingSink::default()
    }

    /// The events written so far, in order.
    pub fn events(&self) -> Vec<EncodedEvent> {
        self.events.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The events written so far, leaving the list empty.
    pub fn take(&self) -> Vec<EncodedEvent> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Sink for CollectingSink {
    fn enabled(&self, _level: u8, _keywords: u64) -> bool {
        true
    }

    fn write(&self, event: EncodedEvent) {
        self.events.lock().unwrap_or_else(PoisonError::into_inner).push(event);
    }
}

/// The calling thread's number: 1 for the first thread that asks, and so on.
pub(crate) fn thread_number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static NUMBER: Cell<u64> = const { Cell::new(0) };
    }
    NUMBER.with(|n| {
        if n.get() == 0 {
            n.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        n.get()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_get_distinct_numbers() {
        let here = thread_number();
        assert_eq!(thread_number(), here);
        let there = std::thread::spawn(thread_number).join().unwrap();
        assert_ne!(here, there);
    }

    #[cfg(windows)]
    #[test]
    fn on_windows_the_provider_registers_and_writes() {
        use crate::encode::FieldValue;
        let provider = Provider::new("Nettrail-Test-SinkRegistration");
        let sink = EtwSink::register(&provider).unwrap();
        assert!(sink.is_registered());
        let _ = sink.enabled(crate::level::VERBOSE, crate::KEYWORD);
        // Written whether or not a session listens: ETW drops it if none does.
        let mut event = EncodedEvent::new(&provider, "Probe", &[("n", FieldValue::U64(1))]).unwrap();
        event.activity_id = Some(nettrail_etl::Guid::parse_const("00000001-0000-0000-0000-000000000001"));
        sink.write(event.clone());
        event.payload.clear();
        event.activity_id = None;
        sink.write(event);
        drop(sink);
        assert!(!EtwSink::unregistered().enabled(1, u64::MAX));
    }

    #[cfg(not(windows))]
    #[test]
    fn outside_windows_the_etw_sink_is_never_enabled() {
        let sink = EtwSink::register(&Provider::new("Test")).unwrap();
        assert!(!sink.is_registered());
        assert!(!sink.enabled(1, u64::MAX));
    }
}
