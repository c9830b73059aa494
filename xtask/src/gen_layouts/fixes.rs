//! What the corpus' real traces (`../shared/corpus`) prove about layouts:
//! a fact either agrees with the manifests (noted as confirmed) or corrects
//! them (noted with the manifests' word beside it). Embedded metadata is the
//! TRACE_EVENT_INFO a trace carries (KernelTraceControl MetaData events),
//! written by Windows itself.

use anyhow::bail;

use super::model::{Field, Len};
use super::union::Union;

/// What a trace shows about one field.
pub enum Fact {
    /// Stored as this in-type.
    InType(&'static str),
    /// Shown with this out-type.
    OutType(&'static str),
    /// This many bytes.
    Length(u32),
    /// Its length is this earlier field's value.
    LengthFrom(&'static str),
    /// Nothing to change; a remark for readers.
    Remark,
}

/// A fact of the corpus, with the evidence for it.
pub struct TraceFix {
    pub provider: &'static str,
    /// Event ids it applies to (every version); empty: every event with the field.
    pub events: &'static [u16],
    pub field: &'static str,
    pub fact: Fact,
    pub evidence: &'static str,
}

pub const TRACE_FIXES: &[TraceFix] = &[
    TraceFix {
        provider: "Microsoft-Windows-Kernel-Network",
        events: &[],
        field: "connid",
        fact: Fact::InType("Pointer"),
        evidence: "in tx__KernelNetwork.etl (Windows 7 SP1, 64-bit) connid takes 8 bytes (receive IPv4 32 = 20 + \
                   seqnum 4 + connid 8, send IPv4 40, receive IPv6 56, send IPv6 64, UDP IPv4 32, UDP IPv6 56); \
                   a Pointer is still 4 bytes, as UInt32, in 32-bit records",
    },
    TraceFix {
        provider: "Microsoft-Windows-HttpService",
        events: &[2],
        field: "Url",
        fact: Fact::Remark,
        evidence: "in tx__HTTP_Server.etl the Url has no NUL terminator: it runs to the end of the payload",
    },
    TraceFix {
        provider: "Microsoft-Windows-DNS-Client",
        events: &[1001],
        field: "DynamicAddress",
        fact: Fact::InType("UInt8"),
        evidence: "1 byte (not a Boolean) in the embedded metadata of perfview__net.4.5.x86.PerfViewData.etl",
    },
    TraceFix {
        provider: "Microsoft-Windows-DNS-Client",
        events: &[1001],
        field: "Address",
        fact: Fact::OutType("SocketAddress"),
        evidence: "a SOCKADDR (16 bytes IPv4, 28 bytes IPv6) in the embedded metadata of perfview__net.4.5.x86.PerfViewData.etl",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[70],
        field: "Value",
        fact: Fact::LengthFrom("Size"),
        evidence: "Binary of Size bytes in the embedded metadata of demikernel__PktMon.etl",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[100],
        field: "MacAddress1",
        fact: Fact::Length(6),
        evidence: "6 bytes in the embedded metadata of demikernel__PktMon.etl (its payload is 12 bytes longer than without both MACs)",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[100],
        field: "MacAddress2",
        fact: Fact::Length(6),
        evidence: "6 bytes in the embedded metadata of demikernel__PktMon.etl",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[100],
        field: "IpAddress1",
        fact: Fact::OutType("IPv4"),
        evidence: "out-type IPv4 in the embedded metadata of demikernel__PktMon.etl",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[100],
        field: "IpAddress2",
        fact: Fact::OutType("IPv4"),
        evidence: "out-type IPv4 in the embedded metadata of demikernel__PktMon.etl",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[100],
        field: "Protocol",
        fact: Fact::InType("UInt8"),
        evidence: "1 byte in the embedded metadata of demikernel__PktMon.etl",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[100],
        field: "TCPFlags",
        fact: Fact::InType("UInt8"),
        evidence: "1 byte in the embedded metadata of demikernel__PktMon.etl",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[160],
        field: "DropLocation",
        fact: Fact::OutType("HexInt32"),
        evidence: "out-type HexInt32 in the embedded metadata of demikernel__PktMon.etl (114 events)",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[65],
        field: "IpAddress",
        fact: Fact::OutType("IPv4"),
        evidence: "out-type IPv4 in the embedded metadata of demikernel__PktMon.etl (5 events of 8 bytes)",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[66],
        field: "IpAddress",
        fact: Fact::Length(16),
        evidence: "16 bytes in the embedded metadata of demikernel__PktMon.etl (5 events of 20 bytes)",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[66],
        field: "IpAddress",
        fact: Fact::OutType("IPv6"),
        evidence: "out-type IPv6 in the embedded metadata of demikernel__PktMon.etl",
    },
];

/// Applies the facts of one provider; a fact that matches no field is an error.
pub fn apply(u: &mut Union) -> anyhow::Result<()> {
    for fix in TRACE_FIXES.iter().filter(|f| f.provider == u.name) {
        let mut matched = 0;
        for e in &mut u.events {
            if !fix.events.is_empty() && !fix.events.contains(&e.id) {
                continue;
            }
            for v in &mut e.variants {
                let Some(at) = v.fields.iter().position(|f| f.name == fix.field) else { continue };
                let names: Vec<String> = v.fields[..at].iter().map(|f| f.name.clone()).collect();
                matched += 1;
                let f = &mut v.fields[at];
                let note = settle(f, &fix.fact, &names)?;
                f.notes.push(format!("{note}: {}", fix.evidence));
                f.corpus = true;
            }
        }
        if matched == 0 {
            bail!("trace fix for {} events {:?} field {} matches nothing", fix.provider, fix.events, fix.field);
        }
    }
    Ok(())
}

/// Makes the field what the trace shows; says whether that changed it.
fn settle(f: &mut Field, fact: &Fact, earlier: &[String]) -> anyhow::Result<String> {
    let said = |what: &str| format!("the corpus corrects the manifests' {what}");
    Ok(match fact {
        Fact::Remark => "from the corpus".to_string(),
        Fact::InType(t) if f.in_type == *t => format!("confirmed {t} by the corpus"),
        Fact::InType(t) => {
            let note = said(&f.in_type);
            f.in_type = (*t).to_string();
            note
        }
        Fact::OutType(t) if f.out_type.as_deref() == Some(*t) => format!("confirmed out-type {t} by the corpus"),
        Fact::OutType(t) => {
            let note = said(&format!("out-type {}", f.out_type.as_deref().unwrap_or("(none)")));
            f.out_type = Some((*t).to_string());
            note
        }
        Fact::Length(_) | Fact::LengthFrom(_) => {
            let len = match fact {
                Fact::Length(n) => Len::Fixed(*n),
                Fact::LengthFrom(r) if earlier.iter().any(|e| e == r) => Len::Field((*r).to_string()),
                _ => bail!("{}: the length field is not an earlier field", f.name),
            };
            if f.length.as_ref() == Some(&len) {
                "confirmed its length by the corpus".to_string()
            } else {
                let note = match &f.length {
                    None => "the corpus states the length the manifest sources lack".to_string(),
                    Some(old) => said(&format!("length {old:?}")),
                };
                f.length = Some(len);
                // A length from the trace replaces one the generator carried.
                f.notes.retain(|n| !n.starts_with("length "));
                note
            }
        }
    })
}
