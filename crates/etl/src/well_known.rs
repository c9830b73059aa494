//! Names of providers a trace may not name itself: manifest providers (whose
//! names live in manifests on Windows machines), merge-time metadata classes
//! and the kernel groups.

use std::sync::OnceLock;

use crate::guid::Guid;
use crate::kernel;

const fn g(s: &str) -> Guid {
    Guid::parse_const(s)
}

/// (GUID, name). Network providers first, then what rides along in the
/// traces nettrail reads (CLR, merge metadata, Office and browser pools).
pub const PROVIDERS: &[(Guid, &str)] = &[
    (g("2f07e2ee-15db-40f1-90ef-9d7ba282188a"), "Microsoft-Windows-TCPIP"),
    (g("7dd42a49-5329-4832-8dfd-43d979153a88"), "Microsoft-Windows-Kernel-Network"),
    (g("e53c6823-7bb8-44bb-90dc-3f86090d48a6"), "Microsoft-Windows-Winsock-AFD"),
    (g("55404e71-4db9-4deb-a5f5-8f86e46dde56"), "Microsoft-Windows-Winsock-NameResolution"),
    (g("d5c25f9a-4d47-493e-9184-40dd397a004d"), "Microsoft-Windows-Winsock-WS2HELP"),
    (g("093da50c-0bb9-4d7d-b95c-3bb9fcda5ee8"), "Microsoft-Windows-Winsock-SQM"),
    (g("1c95126e-7eea-49a9-a3fe-a378b03ddb4d"), "Microsoft-Windows-DNS-Client"),
    (g("7d44233d-3055-4b9c-ba64-0d47ca40a232"), "Microsoft-Windows-WinHttp"),
    (g("50b3e73c-9370-461d-bb9f-26f32d68887d"), "Microsoft-Windows-WebIO"),
    (g("43d1a55c-76d6-4f7e-995c-64c711e5cafe"), "Microsoft-Windows-WinINet"),
    (g("a70ff94f-570b-4979-ba5c-e59c9feab61b"), "Microsoft-Windows-WinINet-Capture"),
    (g("5402e5ea-1bdd-4390-82be-e108f1e634f5"), "Microsoft-Windows-WinINet-Config"),
    (g("245f975d-909d-49ed-b8f9-9a75691d6b6b"), "Microsoft-Windows-URLMon"),
    (g("dd5ef90a-6398-47a4-ad34-4dcecdef795f"), "Microsoft-Windows-HttpService"),
    (g("7b6bc78c-898b-4170-bbf8-1a469ea43fc5"), "Microsoft-Windows-HttpEvent"),
    (g("c42a2738-2333-40a5-a32f-6acc36449dcc"), "Microsoft-Windows-HttpLog"),
    (g("099614a5-5dd7-4788-8bc9-e29f43db28fc"), "Microsoft-Windows-LDAP-Client"),
    (g("2ed6006e-4729-4609-b423-3ee7bcd678ef"), "Microsoft-Windows-NDIS-PacketCapture"),
    (g("cdead503-17f5-4a3e-b7ae-df8cc2902eb9"), "Microsoft-Windows-NDIS"),
    (g("4d4f80d9-c8bd-4d73-bb5b-19c90402c5ac"), "Microsoft-Windows-PktMon"),
    (g("2bcfefe5-5026-536b-1686-b249cb49cae3"), "Microsoft-Windows-WinQuic"),
    (g("6eb875eb-8f4a-4800-a00b-e484c97d7561"), "Microsoft-Windows-Runtime-Networking"),
    (g("41877cb4-11fc-4188-b590-712c143c881d"), "Microsoft-Windows-Runtime-Web-Http"),
    (g("cba5f63c-e2cf-4b36-8305-bde1311924fc"), "Microsoft-Windows-Websocket-Protocol-Component"),
    (g("91cc1150-71aa-47e2-ae18-c96e61736b6f"), "Microsoft-Windows-Schannel-Events"),
    (g("1f678132-5938-4686-9fdc-c8ff68f15c85"), "Schannel"),
    (g("988c59c5-0a1c-45b6-a555-0c62276e327d"), "Microsoft-Windows-SMBClient"),
    (g("0c478c5b-0351-41b1-8c58-4a6737da32e3"), "Microsoft-Windows-WFP"),
    (g("121d3da8-baf1-4dcb-929f-2d4c9a47f7ab"), "Microsoft-Windows-Base-Filtering-Engine-Connections"),
    (g("92765247-03a9-4ae3-a575-b42264616e78"), "Microsoft-Windows-Base-Filtering-Engine-Resource-Flows"),
    (g("15a7a4f8-0072-4eab-abad-f98a4d666aed"), "Microsoft-Windows-Dhcp-Client"),
    (g("6a1f2b00-6a90-4c38-95a5-5cab3b056778"), "Microsoft-Windows-DHCPv6-Client"),
    (g("314de49f-ce63-4779-ba2b-d616f6963a88"), "Microsoft-Windows-NCSI"),
    (g("63b530f8-29c9-4880-a5b4-b8179096e7b8"), "Microsoft-Windows-NlaSvc"),
    (g("d84521f7-2235-4237-a7c0-14e3a9676286"), "Microsoft-Windows-Ras-NdisWanPacketCapture"),
    (g("e18d0fc9-9515-4232-98e4-89e456d8551b"), "Microsoft-Windows-RTWorkQueue-Threading"),
    (g("22fb2cd6-0e7b-422b-a0c7-2fad1fd0e716"), "Microsoft-Windows-Kernel-Process"),
    (g("edd08927-9cc4-4e65-b970-c2560fb5c289"), "Microsoft-Windows-Kernel-File"),
    (g("b675ec37-bdb6-4648-bc92-f3fdc74d3ca2"), "Microsoft-Windows-Kernel-EventTracing"),
    (g("e13c0d23-ccbc-4e12-931b-d9cc2eee27e4"), "Microsoft-Windows-DotNETRuntime"),
    (g("a669021c-c450-4609-a035-5af59af4df18"), "Microsoft-Windows-DotNETRuntimeRundown"),
    (g("763fd754-7086-4dfe-95eb-c01a46faf4ca"), "Microsoft-Windows-DotNETRuntimeStress"),
    (g("2e5dba47-a3d2-4d16-8ee0-6671ffdcd7b5"), "System.Threading.Tasks.TplEventSource"),
    (g("a0c1853b-5c40-4b15-8766-3cf1c58f985a"), "Microsoft-Windows-PowerShell"),
    (g("a7975c8f-ac13-49f1-87da-5a984a4ab417"), "Microsoft-Windows-WinRM"),
    (g("315a8872-923e-4ea2-9889-33cd4754bf64"), "Microsoft-Windows-Immersive-Shell"),
    (g("57277741-3638-4a4b-bdba-0ac6e45da56c"), "Microsoft-JScript"),
    (g("a019725f-cff1-47e8-8c9e-8fe2635b6388"), "Microsoft-Office-ThreadPool"),
    (g("559a5658-8100-4d84-b756-0a47a476280c"), "OfficeDispatchQueue"),
    (g("8736922d-e8b2-47eb-8564-23e77e728cf3"), "Microsoft-Office-Events"),
    (g("3a5f2396-5c8f-4f1f-9b67-6cca6c990e61"), "Microsoft.MSEdgeStable"),
    (g("bd089baa-4e52-4794-a887-9e96868570d2"), "Microsoft.MSEdgeBeta"),
    (g("d30b5c9f-b58f-4dc9-afaf-134405d72107"), "Microsoft.MSEdgeDev"),
    (g("c56b8664-45c5-4e65-b3c7-a8d6bd3f2e67"), "Microsoft.MSEdgeCanary"),
    (g("e16ec3d2-bb0f-4e8f-bdb8-de0bea82dc3d"), "Microsoft.WebView2"),
    (g("d2d578d9-2936-45b6-a09f-30e32715f42d"), "Chrome"),
    // Classic event classes that xperf, WPR and PerfView add when merging.
    (g("28ad2447-105b-4fe2-9599-e59b2aa9a634"), "KernelTraceControl"),
    (g("b3e675d7-2554-4f18-830b-2762732560de"), "KernelTraceControl/ImageID"),
    (g("bbccf6c1-6cd1-48c4-80ff-839482e37671"), "KernelTraceControl/MetaData"),
    (g("9b79ee91-b5fd-41c0-a243-4248e266e9d0"), "KernelTraceControl/SysConfigEx"),
    (g("ed54dff8-c409-4cf6-bf83-05e1e61a09c4"), "KernelTraceControl/WinSat"),
    (g("9e814aad-3204-11d2-9a82-006008a86939"), "MSNT_SystemTrace"),
    (g("6a399ae0-4bc6-4de9-870b-3657f8947e7e"), "Lost_Event"),
];

/// The name of a provider or kernel group GUID, if built in.
pub fn provider_name(guid: &Guid) -> Option<&'static str> {
    // By the GUID's bytes as one number: a search compares one word, not
    // four fields (`dump` looks up every event's provider).
    let key = |g: &Guid| u128::from_le_bytes(g.to_bytes_le());
    static INDEX: OnceLock<Vec<(u128, &'static str)>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let kernel = kernel::GROUPS.iter().map(|(_, name, guid)| (key(guid), *name));
        let mut all: Vec<(u128, &str)> = kernel.chain(PROVIDERS.iter().map(|(g, name)| (key(g), *name))).collect();
        all.sort();
        all
    });
    let i = index.binary_search_by_key(&key(guid), |(k, _)| *k).ok()?;
    index.get(i).map(|(_, name)| *name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_and_are_unique() {
        assert_eq!(provider_name(&g("1c95126e-7eea-49a9-a3fe-a378b03ddb4d")), Some("Microsoft-Windows-DNS-Client"));
        assert_eq!(provider_name(&g("9a280ac0-c8e0-11d1-84e2-00c04fb998a2")), Some("Windows Kernel/TcpIp"));
        for (i, (a, _)) in PROVIDERS.iter().enumerate() {
            assert!(PROVIDERS[i + 1..].iter().all(|(b, _)| a != b), "{a} listed twice");
        }
    }
}
