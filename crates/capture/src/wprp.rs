//! Writes a scenario as a Windows Performance Recorder profile (`.wprp`):
//! one system collector and one event collector, each provider declared
//! once, and the profile in both logging modes (`File` for a sequential
//! trace, `Memory` for the circular buffer WPR uses without `-filemode`).
//! The element names and attributes are WPR's (15002 and later: event-ID
//! and stack filters, per-provider stack keywords, capture state).

use std::fmt::Write as _;

use crate::provider::{Provider, Stacks};
use crate::scenario::Scenario;

/// The profile's name: `wpr -start FILE.wprp!nettrail`.
pub const PROFILE_NAME: &str = "nettrail";

const SYSTEM_COLLECTOR: &str = "SC_nettrail";
const EVENT_COLLECTOR: &str = "EC_nettrail";
const SYSTEM_PROVIDER: &str = "SP_nettrail";

/// The profile as XML text.
pub fn write(scenario: &Scenario) -> String {
    let mut x = String::new();
    x.push_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    x.push_str("<!-- Written by nettrail: the network scenario (`nettrail profile`). Record with\n");
    x.push_str("     wpr -start nettrail.wprp!nettrail -filemode   (sequential file)\n");
    x.push_str("     wpr -start nettrail.wprp!nettrail             (circular, in memory)\n");
    x.push_str("     wpr -stop trace.etl -->\n");
    x.push_str("<WindowsPerformanceRecorder Version=\"1.0\" Author=\"nettrail\">\n  <Profiles>\n");
    collector(&mut x, "SystemCollector", SYSTEM_COLLECTOR, "nettrail System Collector", scenario.system_buffers);
    collector(&mut x, "EventCollector", EVENT_COLLECTOR, "nettrail Event Collector", scenario.event_buffers);

    let system = &scenario.system;
    let _ = writeln!(x, "    <SystemProvider Id=\"{SYSTEM_PROVIDER}\">");
    x.push_str("      <Keywords>\n");
    for k in &system.keywords {
        let _ = writeln!(x, "        <Keyword Value=\"{}\" />", escape(k));
    }
    x.push_str("      </Keywords>\n");
    if !system.stacks.is_empty() {
        x.push_str("      <Stacks>\n");
        for s in &system.stacks {
            let _ = writeln!(x, "        <Stack Value=\"{}\" />", escape(s));
        }
        x.push_str("      </Stacks>\n");
    }
    x.push_str("    </SystemProvider>\n");

    for p in &scenario.providers {
        provider(&mut x, p);
    }

    let description = "Network requests with the stacks that started them (nettrail)";
    let file_id = format!("{PROFILE_NAME}.Verbose.File");
    let _ = writeln!(
        x,
        "    <Profile Id=\"{file_id}\" Name=\"{PROFILE_NAME}\" Description=\"{description}\" LoggingMode=\"File\" DetailLevel=\"Verbose\">"
    );
    x.push_str("      <Collectors>\n");
    let _ = writeln!(x, "        <SystemCollectorId Value=\"{SYSTEM_COLLECTOR}\">");
    let _ = writeln!(x, "          <SystemProviderId Value=\"{SYSTEM_PROVIDER}\" />");
    x.push_str("        </SystemCollectorId>\n");
    let _ = writeln!(x, "        <EventCollectorId Value=\"{EVENT_COLLECTOR}\">");
    x.push_str("          <EventProviders>\n");
    for p in &scenario.providers {
        let _ = writeln!(x, "            <EventProviderId Value=\"{}\" />", provider_id(p));
    }
    x.push_str("          </EventProviders>\n        </EventCollectorId>\n      </Collectors>\n");
    x.push_str("    </Profile>\n");
    let _ = writeln!(
        x,
        "    <Profile Id=\"{PROFILE_NAME}.Verbose.Memory\" Name=\"{PROFILE_NAME}\" Description=\"{description}\" LoggingMode=\"Memory\" DetailLevel=\"Verbose\" Base=\"{file_id}\" />"
    );
    x.push_str("  </Profiles>\n");
    x.push_str("  <TraceMergeProperties>\n");
    x.push_str("    <TraceMergeProperty Id=\"TraceMerge_Default\" Name=\"TraceMerge_Default\">\n");
    x.push_str("      <DeletePreMergedTraceFiles Value=\"true\" />\n");
    x.push_str("      <FileCompression Value=\"true\" />\n");
    x.push_str("      <CustomEvents>\n");
    // Module identities (PDB GUID and age) for symbols, the OS build, volume
    // names for paths, and the metadata that decodes events on other machines.
    for event in
        ["ImageId", "BuildInfo", "VolumeMapping", "EventMetadata", "PerfTrackMetadata", "WinSAT", "NetworkInterface"]
    {
        let _ = writeln!(x, "        <CustomEvent Value=\"{event}\" />");
    }
    x.push_str("      </CustomEvents>\n    </TraceMergeProperty>\n  </TraceMergeProperties>\n");
    x.push_str("</WindowsPerformanceRecorder>\n");
    x
}

fn collector(x: &mut String, element: &str, id: &str, name: &str, buffers: crate::scenario::Buffers) {
    let _ = writeln!(x, "    <{element} Id=\"{id}\" Name=\"{name}\">");
    let _ = writeln!(x, "      <BufferSize Value=\"{}\" />", buffers.size_kb);
    let _ = writeln!(x, "      <Buffers Value=\"{}\" />", buffers.count);
    let _ = writeln!(x, "    </{element}>");
}

/// A provider's element Id: labels may hold any character a user typed.
fn provider_id(p: &Provider) -> String {
    let label: String = p.label.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    format!("EP_{label}")
}

fn provider(x: &mut String, p: &Provider) {
    let _ = write!(x, "    <EventProvider Id=\"{}\" Name=\"{}\"", provider_id(p), escape(&p.target.to_string()));
    if let Some(level) = p.level {
        let _ = write!(x, " Level=\"{level}\"");
    }
    if p.non_paged {
        x.push_str(" NonPagedMemory=\"true\"");
    }
    if p.stacks != Stacks::None {
        x.push_str(" Stack=\"true\"");
    }
    x.push_str(">\n");
    if let Some(k) = p.keywords {
        let _ = writeln!(x, "      <Keywords>\n        <Keyword Value=\"{k:#x}\" />\n      </Keywords>");
    }
    if let Some(k) = p.rundown_on_start {
        let _ = writeln!(
            x,
            "      <CaptureStateOnStart>\n        <Keyword Value=\"{k:#x}\" />\n      </CaptureStateOnStart>"
        );
    }
    if let Some(k) = p.rundown_on_stop {
        let _ = writeln!(
            x,
            "      <CaptureStateOnSave>\n        <Keyword Value=\"{k:#x}\" />\n      </CaptureStateOnSave>"
        );
    }
    if !p.events.is_empty() {
        x.push_str("      <EventFilters FilterIn=\"true\">\n");
        for id in &p.events {
            let _ = writeln!(x, "        <EventId Value=\"{id}\" />");
        }
        x.push_str("      </EventFilters>\n");
    }
    match &p.stacks {
        Stacks::None | Stacks::All => {}
        Stacks::Events(ids) => {
            x.push_str("      <StackFilters FilterIn=\"true\">\n");
            for id in ids {
                let _ = writeln!(x, "        <EventId Value=\"{id}\" />");
            }
            x.push_str("      </StackFilters>\n");
        }
        Stacks::Pool { keywords, hooks } => {
            x.push_str("      <Stacks>\n");
            for k in keywords {
                let _ = writeln!(x, "        <Stack Value=\"{}\" />", escape(k));
            }
            for h in hooks {
                let _ = writeln!(x, "        <CustomStack Value=\"{h:#06X}\" />");
            }
            x.push_str("      </Stacks>\n");
        }
    }
    x.push_str("    </EventProvider>\n");
}

/// XML attribute text.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}
