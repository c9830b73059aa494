//! The ETW calls (Windows only): register, set traits, check enablement,
//! write, unregister. The only unsafe code of the crate.
#![allow(unsafe_code)]

use std::io;

use windows_sys::Win32::System::Diagnostics::Etw::{
    EVENT_DATA_DESCRIPTOR, EVENT_DATA_DESCRIPTOR_0, EVENT_DATA_DESCRIPTOR_0_0,
    EVENT_DATA_DESCRIPTOR_TYPE_EVENT_METADATA, EVENT_DATA_DESCRIPTOR_TYPE_NONE,
    EVENT_DATA_DESCRIPTOR_TYPE_PROVIDER_METADATA, EVENT_DESCRIPTOR, EventProviderEnabled, EventProviderSetTraits,
    EventRegister, EventSetInformation, EventUnregister, EventWriteTransfer, REGHANDLE,
};
use windows_sys::core::GUID;

use crate::event::{EncodedEvent, Provider};

fn sys_guid(g: nettrail_etl::Guid) -> GUID {
    GUID { data1: g.data1, data2: g.data2, data3: g.data3, data4: g.data4 }
}

fn data(bytes: &[u8], kind: u32) -> EVENT_DATA_DESCRIPTOR {
    EVENT_DATA_DESCRIPTOR {
        Ptr: bytes.as_ptr() as usize as u64,
        Size: bytes.len() as u32,
        Anonymous: EVENT_DATA_DESCRIPTOR_0 {
            Anonymous: EVENT_DATA_DESCRIPTOR_0_0 { Type: kind as u8, Reserved1: 0, Reserved2: 0 },
        },
    }
}

/// A registered provider handle; unregistered on drop.
#[derive(Debug)]
pub(crate) struct Registration {
    handle: REGHANDLE,
}

impl Registration {
    pub(crate) fn new(provider: &Provider) -> io::Result<Registration> {
        let guid = sys_guid(provider.guid());
        let mut handle: REGHANDLE = 0;
        // SAFETY: `guid` and `handle` are valid for the duration of the call;
        // no enable callback is given, so the null context is never used.
        let status = unsafe { EventRegister(&guid, None, std::ptr::null(), &mut handle) };
        if status != 0 {
            return Err(io::Error::from_raw_os_error(status as i32));
        }
        let traits = provider.traits();
        // SAFETY: `traits` is a live buffer of the given length, which ETW
        // copies; `handle` was just registered. A failure (Windows before
        // 10) is harmless: every event carries the traits too.
        let _ =
            unsafe { EventSetInformation(handle, EventProviderSetTraits, traits.as_ptr().cast(), traits.len() as u32) };
        Ok(Registration { handle })
    }

    pub(crate) fn enabled(&self, level: u8, keywords: u64) -> bool {
        // SAFETY: the handle is registered until `self` is dropped.
        unsafe { EventProviderEnabled(self.handle, level, keywords) }
    }

    pub(crate) fn write(&self, event: &EncodedEvent) {
        let d = &event.descriptor;
        let descriptor = EVENT_DESCRIPTOR {
            Id: d.id,
            Version: d.version,
            Channel: d.channel,
            Level: d.level,
            Opcode: d.opcode,
            Task: d.task,
            Keyword: d.keywords,
        };
        let blocks = [
            data(&event.provider_traits, EVENT_DATA_DESCRIPTOR_TYPE_PROVIDER_METADATA),
            data(&event.metadata, EVENT_DATA_DESCRIPTOR_TYPE_EVENT_METADATA),
            data(&event.payload, EVENT_DATA_DESCRIPTOR_TYPE_NONE),
        ];
        let count = if event.payload.is_empty() { 2 } else { 3 };
        let activity = event.activity_id.map(sys_guid);
        let related = event.related_activity_id.map(sys_guid);
        let activity_ptr = activity.as_ref().map_or(std::ptr::null(), |g| g as *const GUID);
        let related_ptr = related.as_ref().map_or(std::ptr::null(), |g| g as *const GUID);
        // SAFETY: the descriptor, the GUIDs (or null: ETW then uses the
        // thread's activity id and no related id) and the data blocks, which
        // point into `event`'s buffers, all outlive the call; `count` blocks
        // are initialized. ETW copies everything before returning.
        let _ =
            unsafe { EventWriteTransfer(self.handle, &descriptor, activity_ptr, related_ptr, count, blocks.as_ptr()) };
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: the handle was registered by `new` and is unregistered once.
        let _ = unsafe { EventUnregister(self.handle) };
    }
}
