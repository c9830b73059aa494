//! The sources, pinned: which repository, commit and file each build's
//! facts come from.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, bail};

use super::model::{Declaration, Kind, Source};
use super::read;

/// jdu2600/Windows10EtwEvents: one commit per release (`version.txt` names
/// the build); `manifest/<Provider>.tsv` at each.
pub const JDU: &[(u32, &str, &str)] = &[
    (10586, "Windows 10 1511", "935ba8d085822ed6e584db7bb97a5ee54d36f83c"),
    (14393, "Windows 10 1607", "468d492434e63d08a9857bb65582fa71eb840e08"),
    (15063, "Windows 10 1703", "8fe2f8335708c7d3b416e942fe304f6ccac7711d"),
    (16299, "Windows 10 1709", "69379557b578c6a15e4d50004d1fbe01dd80e70a"),
    (17134, "Windows 10 1803", "43f4679337d8e891c5c90603017af4b32c8d8a25"),
    (17763, "Windows 10 1809", "086d88e58d6e063868ec62a10f9e1b33e8694735"),
    (18362, "Windows 10 1903", "793506709db4dc98f4d58d9ff88173aae1c82352"),
    (18363, "Windows 10 1909", "fc2231e586e806c26b58cb6fe0510c8090405e11"),
    (19041, "Windows 10 2004", "ec7135aa14228d5b71efdc8096b7b9910aa6de3e"),
    (19042, "Windows 10 20H2", "744bbe1a240efb9556e1965b6fb02f0b0bc589c5"),
    (19043, "Windows 10 21H1", "5444e040d65ed2807fcf9ac69ce32131338dc370"),
    (22000, "Windows 11 21H2", "8a8a66f7a4becc0cabaa1640d4e874f7a75af3da"),
    (22621, "Windows 11 22H2", "91cc4bf318c983ad9b784d00495caa932a06654a"),
    (22631, "Windows 11 23H2", "cf04fc7d512cbdf997477bf4eb0ea4d91eb6b6d0"),
    (26100, "Windows 11 24H2", "5f8daea1120c6a51c7deffcab53fd24f3a628767"),
    (26200, "Windows 11 25H2", "b200fb6413493e452ecbd55d1cc8a331462c3ef7"),
    (28000, "Windows 11 26H1", "84e7261126f26b538ee00bcf00938b7e3ff2647f"),
];

/// repnz/etw-providers-docs at this commit: `<dir>/<Provider>.xml`.
pub const REPNZ_COMMIT: &str = "d5f68e8acda5da154ab44e405b610dd8c2ba1164";
pub const REPNZ: &[(u32, &str, bool, &str)] = &[
    (7600, "Windows 7", false, "Manifests-Win7-7600"),
    (10240, "Windows 10 1507", false, "Manifests-Win10-10240"),
    (17134, "Windows 10 1803", false, "Manifests-Win10-17134"),
    (18990, "Windows 10 20H1 insider preview", true, "Manifests-Win10-18990"),
];

/// `../shared/reference/manifests`: complete manifests of Windows 7
/// (Tx's, from microsoft/Tx; `tcp.man` has five TCPIP events more than
/// Windows 7 RTM's, so it is taken as SP1) and WEPExplorer dumps of
/// Windows 11 (nasbench/EVTX-ETW-Resources).
pub const REFERENCE: &[(u32, &str, &str)] = &[
    (7601, "Windows 7 SP1", "manifests/tcp.man"),
    (7600, "Windows 7", "manifests/IE_Client.man"),
    (7600, "Windows 7", "manifests/HTTP_Server.man"),
    (7600, "Windows 7", "manifests/SystemEvents.man"),
    (22621, "Windows 11 22H2", "manifests/windows11/Microsoft-Windows-HttpLog.xml"),
    (22621, "Windows 11 22H2", "manifests/windows11/Microsoft-Windows-Runtime-Web-Http.xml"),
    (26100, "Windows 11 24H2", "manifests/windows11/Microsoft-Windows-DNS-Client.24H2.xml"),
    (22621, "Windows 11 22H2", "manifests/windows11/Microsoft-Quic.xml"),
];

/// microsoft/msquic at this commit: `src/manifest/MsQuicEtw.man`, the
/// manifest of the MsQuic library that apps ship (msquic.dll) and Windows
/// builds into msquic.sys. It is newer than any Windows build above, so it
/// stands as a build of its own after them, [`MSQUIC_BUILD`].
pub const MSQUIC_COMMIT: &str = "4984c210f6657f74a4220b642a46233bc2658da6";
pub const MSQUIC_PATH: &str = "src/manifest/MsQuicEtw.man";
/// Not a Windows build: where the MsQuic library's own manifest sorts (after
/// every Windows build listed, as the newest declaration of its events).
pub const MSQUIC_BUILD: u32 = 99_999;

/// Chromium's manifest-based trace-event provider, as
/// `base/trace_event/etw_manifest/chrome_events_win.man` declares it
/// (chromium/chromium; read as mirrored in flutter/flutter @ ad9b135): the
/// provider `Chrome`, one event (1 v0, opcode Info, level Informational,
/// the System channel) whose template is eight ANSI strings. Chrome.dll
/// registers it on any Windows build; written here in manifest form (the
/// facts, not the file) and read like the other manifests.
const CHROME_MANIFEST: &str = r#"<instrumentationManifest xmlns="http://schemas.microsoft.com/win/2004/08/events"
  xmlns:win="http://manifests.microsoft.com/win/2004/08/windows/events">
 <instrumentation><events>
  <provider name="Chrome" guid="{D2D578D9-2936-45B6-A09F-30E32715F42D}" symbol="CHROME"
    resourceFileName="chrome.dll" messageFileName="chrome.dll">
   <channels><importChannel chid="SYSTEM" name="System"/></channels>
   <templates>
    <template tid="tid_chrome_event">
     <data name="Name" inType="win:AnsiString"/>
     <data name="Phase" inType="win:AnsiString"/>
     <data name="Arg Name 1" inType="win:AnsiString"/>
     <data name="Arg Value 1" inType="win:AnsiString"/>
     <data name="Arg Name 2" inType="win:AnsiString"/>
     <data name="Arg Value 2" inType="win:AnsiString"/>
     <data name="Arg Name 3" inType="win:AnsiString"/>
     <data name="Arg Value 3" inType="win:AnsiString"/>
    </template>
   </templates>
   <events>
    <event value="1" symbol="ChromeEvent" template="tid_chrome_event" level="win:Informational"
      opcode="win:Info" channel="SYSTEM" message="$(string.ChromeEvent.EventMessage)"/>
   </events>
  </provider>
 </events></instrumentation>
 <localization><resources culture="en-US"><stringTable>
  <string id="ChromeEvent.EventMessage" value="Chrome Event: %1 (%2)"/>
 </stringTable></resources></localization>
</instrumentationManifest>
"#;

/// The build Chrome's manifest is listed under: the oldest Windows build
/// nettrail has sources of (the provider is the same on every build).
pub const CHROME_BUILD: u32 = 7600;

/// The providers nettrail ships layouts for: name, GUID, role.
pub const PROVIDERS: &[(&str, &str, &str)] = &[
    ("Microsoft-Windows-Base-Filtering-Engine-Connections", "121d3da8-baf1-4dcb-929f-2d4c9a47f7ab", "filtering"),
    ("Microsoft-Windows-Base-Filtering-Engine-Resource-Flows", "92765247-03a9-4ae3-a575-b42264616e78", "filtering"),
    ("Microsoft-Windows-DHCPv6-Client", "6a1f2b00-6a90-4c38-95a5-5cab3b056778", "address configuration"),
    ("Microsoft-Windows-DNS-Client", "1c95126e-7eea-49a9-a3fe-a378b03ddb4d", "name resolution"),
    ("Microsoft-Windows-Dhcp-Client", "15a7a4f8-0072-4eab-abad-f98a4d666aed", "address configuration"),
    ("Microsoft-Windows-HttpEvent", "7b6bc78c-898b-4170-bbf8-1a469ea43fc5", "http server"),
    ("Microsoft-Windows-HttpLog", "c42a2738-2333-40a5-a32f-6acc36449dcc", "http server"),
    ("Microsoft-Windows-HttpService", "dd5ef90a-6398-47a4-ad34-4dcecdef795f", "http server"),
    ("Microsoft-Windows-Kernel-Network", "7dd42a49-5329-4832-8dfd-43d979153a88", "transport"),
    ("Microsoft-Windows-Kernel-Process", "22fb2cd6-0e7b-422b-a0c7-2fad1fd0e716", "supporting: process attribution"),
    ("Microsoft-Windows-LDAP-Client", "099614a5-5dd7-4788-8bc9-e29f43db28fc", "directory client"),
    ("Microsoft-Windows-NCSI", "314de49f-ce63-4779-ba2b-d616f6963a88", "connectivity"),
    ("Microsoft-Windows-NDIS-PacketCapture", "2ed6006e-4729-4609-b423-3ee7bcd678ef", "packet capture"),
    ("Microsoft-Windows-NDIS", "cdead503-17f5-4a3e-b7ae-df8cc2902eb9", "link layer"),
    ("Microsoft-Windows-NlaSvc", "63b530f8-29c9-4880-a5b4-b8179096e7b8", "connectivity"),
    ("Microsoft-Windows-PktMon", "4d4f80d9-c8bd-4d73-bb5b-19c90402c5ac", "packet capture"),
    (
        "Microsoft-Windows-RTWorkQueue-Threading",
        "e18d0fc9-9515-4232-98e4-89e456d8551b",
        "supporting: work-queue thread pool",
    ),
    ("Microsoft-Windows-Ras-NdisWanPacketCapture", "d84521f7-2235-4237-a7c0-14e3a9676286", "packet capture"),
    ("Microsoft-Windows-Runtime-Networking", "6eb875eb-8f4a-4800-a00b-e484c97d7561", "sockets"),
    ("Microsoft-Windows-Runtime-Web-Http", "41877cb4-11fc-4188-b590-712c143c881d", "http client"),
    ("Microsoft-Windows-SMBClient", "988c59c5-0a1c-45b6-a555-0c62276e327d", "file sharing client"),
    ("Microsoft-Windows-Schannel-Events", "91cc1150-71aa-47e2-ae18-c96e61736b6f", "tls"),
    ("Microsoft-Windows-TCPIP", "2f07e2ee-15db-40f1-90ef-9d7ba282188a", "transport"),
    ("Microsoft-Windows-URLMon", "245f975d-909d-49ed-b8f9-9a75691d6b6b", "http client"),
    ("Microsoft-Windows-WFP", "0c478c5b-0351-41b1-8c58-4a6737da32e3", "filtering"),
    ("Microsoft-Windows-WebIO", "50b3e73c-9370-461d-bb9f-26f32d68887d", "http client"),
    ("Microsoft-Windows-Websocket-Protocol-Component", "cba5f63c-e2cf-4b36-8305-bde1311924fc", "http client"),
    ("Microsoft-Windows-WinHttp", "7d44233d-3055-4b9c-ba64-0d47ca40a232", "http client"),
    ("Microsoft-Windows-WinINet-Capture", "a70ff94f-570b-4979-ba5c-e59c9feab61b", "http client"),
    ("Microsoft-Windows-WinINet-Config", "5402e5ea-1bdd-4390-82be-e108f1e634f5", "http client"),
    ("Microsoft-Windows-WinINet", "43d1a55c-76d6-4f7e-995c-64c711e5cafe", "http client"),
    ("Microsoft-Windows-WinQuic", "2bcfefe5-5026-536b-1686-b249cb49cae3", "transport"),
    ("Microsoft-Quic", "ff15e657-4f26-570e-88ab-0796b258d11c", "transport"),
    ("Chrome", "d2d578d9-2936-45b6-a09f-30e32715f42d", "browser"),
    ("Microsoft-Windows-Winsock-AFD", "e53c6823-7bb8-44bb-90dc-3f86090d48a6", "sockets"),
    ("Microsoft-Windows-Winsock-NameResolution", "55404e71-4db9-4deb-a5f5-8f86e46dde56", "name resolution"),
    ("Microsoft-Windows-Winsock-SQM", "093da50c-0bb9-4d7d-b95c-3bb9fcda5ee8", "sockets"),
    ("Microsoft-Windows-Winsock-WS2HELP", "d5c25f9a-4d47-493e-9184-40dd397a004d", "sockets"),
    ("Schannel", "1f678132-5938-4686-9fdc-c8ff68f15c85", "tls"),
];

/// Where the sources are on this machine.
#[derive(Clone, Debug)]
pub struct Inputs {
    /// A clone (or bare mirror) of github.com/jdu2600/Windows10EtwEvents.
    pub jdu: PathBuf,
    /// A clone (or bare mirror) of github.com/repnz/etw-providers-docs.
    pub repnz: PathBuf,
    /// A clone (or bare mirror) of github.com/microsoft/msquic.
    pub msquic: PathBuf,
    /// `../shared/reference`.
    pub reference: PathBuf,
}

/// Every source and what each declares, by provider name.
#[derive(Debug, Default)]
pub struct Loaded {
    pub sources: Vec<Source>,
    pub providers: BTreeMap<String, Vec<(usize, Declaration)>>,
}

impl Loaded {
    fn add(&mut self, source: Source, decls: Vec<Declaration>) {
        let index = self.sources.len();
        let mut used = false;
        for d in decls {
            if PROVIDERS.iter().any(|(name, _, _)| *name == d.provider) {
                self.providers.entry(d.provider.clone()).or_default().push((index, d));
                used = true;
            }
        }
        if used {
            self.sources.push(source);
        }
    }
}

/// Reads every source of every provider.
pub fn load(inputs: &Inputs) -> anyhow::Result<Loaded> {
    let mut loaded = Loaded::default();
    let wanted = |name: &str| PROVIDERS.iter().any(|(p, _, _)| *p == name);
    for &(build, release, insider, dir) in REPNZ {
        for &(provider, _, _) in PROVIDERS {
            let path = format!("{dir}/{provider}.xml");
            let Some(xml) = read::git_file(&inputs.repnz, REPNZ_COMMIT, &path)? else { continue };
            let decls = read::manifest(&xml, &wanted).with_context(|| format!("repnz {path}"))?;
            let source = Source {
                build,
                release,
                insider,
                kind: Kind::Dump,
                states_maps: true,
                file: format!("repnz/etw-providers-docs@{} {path}", &REPNZ_COMMIT[..7]),
            };
            loaded.add(source, decls);
        }
    }
    for &(build, release, commit) in JDU {
        for &(provider, _, _) in PROVIDERS {
            let path = format!("manifest/{provider}.tsv");
            let Some(text) = read::git_file(&inputs.jdu, commit, &path)? else { continue };
            let decl = read::tsv(&text).with_context(|| format!("jdu {commit} {path}"))?;
            if decl.provider != provider {
                bail!("jdu {commit} {path} declares {}", decl.provider);
            }
            let file = format!("jdu2600/Windows10EtwEvents@{} {path}", &commit[..7]);
            let source = Source { build, release, insider: false, kind: Kind::Tsv, states_maps: false, file };
            loaded.add(source, vec![decl]);
        }
    }
    for &(build, release, path) in REFERENCE {
        let full = inputs.reference.join(path);
        let text = std::fs::read_to_string(&full).with_context(|| full.display().to_string())?;
        let decls = if path.ends_with(".man") { read::manifest(&text, &wanted) } else { read::wepexplorer(&text) }
            .with_context(|| full.display().to_string())?;
        let file = format!("../shared/reference/{path}");
        // WEPExplorer's dumps leave maps out.
        let states_maps = path.ends_with(".man");
        loaded.add(Source { build, release, insider: false, kind: Kind::Full, states_maps, file }, decls);
    }
    let msquic = read::git_file(&inputs.msquic, MSQUIC_COMMIT, MSQUIC_PATH)?
        .with_context(|| format!("microsoft/msquic has no {MSQUIC_PATH} at {MSQUIC_COMMIT}"))?;
    let decls = read::manifest(&msquic, &wanted).context("msquic MsQuicEtw.man")?;
    let file = format!("microsoft/msquic@{} {MSQUIC_PATH}", &MSQUIC_COMMIT[..7]);
    let release = "MsQuic, the library (newer than any Windows build above)";
    let source = Source { build: MSQUIC_BUILD, release, insider: false, kind: Kind::Full, states_maps: true, file };
    loaded.add(source, decls);
    let decls = read::manifest(CHROME_MANIFEST, &wanted).context("Chrome's manifest")?;
    let file = "chromium/chromium base/trace_event/etw_manifest/chrome_events_win.man".to_string();
    let release = "any Windows build (Chromium's chrome.dll)";
    let source = Source { build: CHROME_BUILD, release, insider: false, kind: Kind::Full, states_maps: true, file };
    loaded.add(source, decls);
    for (name, guid, _) in PROVIDERS {
        let decls = loaded.providers.get(*name).with_context(|| format!("no source declares {name}"))?;
        for (s, d) in decls {
            if let Some(g) = &d.guid
                && g != guid
            {
                bail!("{} gives {name} the GUID {g}, not {guid}", loaded.sources[*s].file);
            }
        }
    }
    Ok(loaded)
}

/// The clones this machine has, if any (for the regeneration test).
#[cfg(test)]
pub fn default_inputs(reference: &std::path::Path) -> Inputs {
    let env = |k: &str, default: &str| std::env::var_os(k).map_or_else(|| PathBuf::from(default), PathBuf::from);
    Inputs {
        jdu: env("NETTRAIL_JDU_ETW_EVENTS", "../sources/Windows10EtwEvents"),
        repnz: env("NETTRAIL_REPNZ_ETW_DOCS", "../sources/etw-providers-docs"),
        msquic: env("NETTRAIL_MSQUIC", "../sources/msquic"),
        reference: reference.to_path_buf(),
    }
}
