//! Classic kernel event groups: the hook's group byte → event-class GUID.
//! Kernel records carry no GUID; consumers report the group's.

use crate::guid::Guid;
use crate::record::KernelHook;

/// (group, provider name as TraceEvent shows it, event-class GUID), from
/// NTWMI's `EVENT_TRACE_GROUP_*` and the kernel MOF classes.
pub const GROUPS: [(u8, &str, Guid); 31] = [
    (0x00, "Windows Kernel/EventTrace", Guid::parse_const("68fdd900-4a3e-11d1-84f4-0000f80464e3")),
    (0x01, "Windows Kernel/DiskIo", Guid::parse_const("3d6fa8d4-fe05-11d0-9dda-00c04fd7ba7c")),
    (0x02, "Windows Kernel/PageFault", Guid::parse_const("3d6fa8d3-fe05-11d0-9dda-00c04fd7ba7c")),
    (0x03, "Windows Kernel/Process", Guid::parse_const("3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c")),
    (0x04, "Windows Kernel/FileIo", Guid::parse_const("90cbdc39-4a3e-11d1-84f4-0000f80464e3")),
    (0x05, "Windows Kernel/Thread", Guid::parse_const("3d6fa8d1-fe05-11d0-9dda-00c04fd7ba7c")),
    (0x06, "Windows Kernel/TcpIp", Guid::parse_const("9a280ac0-c8e0-11d1-84e2-00c04fb998a2")),
    (0x07, "Windows Kernel/Job", Guid::parse_const("3282fc76-feed-498e-8aa7-e70f459d430e")),
    (0x08, "Windows Kernel/UdpIp", Guid::parse_const("bf3a50c5-a9c9-4988-a005-2df0b7c80f80")),
    (0x09, "Windows Kernel/Registry", Guid::parse_const("ae53722e-c863-11d2-8659-00c04fa321a1")),
    (0x0A, "Windows Kernel/DbgPrint", Guid::parse_const("13976d09-a327-438c-950b-7f03192815c7")),
    (0x0B, "Windows Kernel/SystemConfig", Guid::parse_const("01853a65-418f-4f36-aefc-dc0f1d2fd235")),
    (0x0C, "Windows Kernel/Spare1", Guid::parse_const("99134383-5248-43fc-834b-529454e75df3")),
    (0x0D, "Windows Kernel/Wnf", Guid::parse_const("42695762-ea50-497a-9068-5cbbb35e0b95")),
    (0x0E, "Windows Kernel/Pool", Guid::parse_const("0268a8b6-74fd-4302-9dd0-6e8f1795c0cf")),
    (0x0F, "Windows Kernel/PerfInfo", Guid::parse_const("ce1dbfb4-137e-4da6-87b0-3f59aa102cbc")),
    (0x10, "Windows Kernel/Heap", Guid::parse_const("222962ab-6180-4b88-a825-346b75f2a24a")),
    (0x11, "Windows Kernel/Object", Guid::parse_const("89497f50-effe-4440-8cf2-ce6b1cdcaca7")),
    (0x12, "Windows Kernel/Power", Guid::parse_const("e43445e0-0903-48c3-b878-ff0fccebdd04")),
    (0x13, "Windows Kernel/ModBound", Guid::parse_const("a9152f00-3f58-4bee-92a1-70c7d079d5dd")),
    (0x14, "Windows Kernel/Image", Guid::parse_const("2cb15d1d-5fc1-11d2-abe1-00a0c911f518")),
    (0x15, "Windows Kernel/Dpc", Guid::parse_const("b2d14872-7c5b-463d-8419-ee9bf7d23e04")),
    (0x16, "Windows Kernel/Cc", Guid::parse_const("7687a439-f752-45b8-b741-321aec0f8df9")),
    (0x17, "Windows Kernel/CritSec", Guid::parse_const("3ac66736-cc59-4cff-8115-8df50e39816b")),
    (0x18, "Windows Kernel/StackWalk", Guid::parse_const("def2fe46-7bd6-4b80-bd94-f57fe20d0ce3")),
    (0x19, "Windows Kernel/Ums", Guid::parse_const("9aec974b-5b8e-4118-9b92-3186d8002ce5")),
    (0x1A, "Windows Kernel/Alpc", Guid::parse_const("45d8cccd-539f-4b72-a8b7-5c683142609a")),
    (0x1B, "Windows Kernel/SplitIo", Guid::parse_const("d837ca92-12b9-44a5-ad6a-3a65b3578aa8")),
    (0x1C, "Windows Kernel/ThreadPool", Guid::parse_const("c861d0e2-a2c1-4d36-9f9c-970bab943a12")),
    (0x1D, "Windows Kernel/Hypervisor", Guid::parse_const("7f2a405c-69b5-4bf9-a1f5-30e8f1afab5e")),
    (0x1E, "Windows Kernel/HypervisorX", Guid::parse_const("2ce9a149-effe-42f0-a635-a1d39e26c8f2")),
];

/// Process group, type 10: the legacy image-load hook. Its payload is an Image
/// Load event, which Windows' consumer reports under the Image GUID; the file
/// itself says group 3 (Process), and that is what the reader reports (and
/// what independent readers count). Decoders reinterpret it.
pub const LEGACY_IMAGE_LOAD: KernelHook = KernelHook { group: 0x03, opcode: 0x0A };

fn group_entry(group: u8) -> Option<&'static (u8, &'static str, Guid)> {
    GROUPS.get(usize::from(group)).filter(|entry| entry.0 == group)
}

/// The event-class GUID of a kernel hook's group, as the file encodes it.
pub fn provider_of(hook: KernelHook) -> Option<Guid> {
    group_entry(hook.group).map(|entry| entry.2)
}

const NAME_PREFIX: &str = "Windows Kernel/";

/// The group's name ("Process", "TcpIp", …), or `None` for unknown groups.
pub fn group_name(hook: KernelHook) -> Option<&'static str> {
    group_entry(hook.group).map(|entry| entry.1.strip_prefix(NAME_PREFIX).unwrap_or(entry.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_indexed_by_their_number() {
        for (i, entry) in GROUPS.iter().enumerate() {
            assert_eq!(usize::from(entry.0), i);
        }
        let tcp = KernelHook { group: 6, opcode: 10 };
        assert_eq!(group_name(tcp), Some("TcpIp"));
        assert_eq!(
            provider_of(LEGACY_IMAGE_LOAD).map(|g| g.to_string()).as_deref(),
            Some("3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c")
        );
        assert_eq!(provider_of(KernelHook { group: 0x40, opcode: 0 }), None);
    }
}
