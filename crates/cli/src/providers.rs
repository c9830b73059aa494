//! `nettrail providers [NAME|GUID]`: what nettrail decodes without the
//! trace's help (`nettrail_export::providers` lists and renders them).

use std::io::Write as _;

use clap::ValueEnum;
use nettrail_decode::builtin::BuiltIn;
use nettrail_export::providers::{
    Provider, SelfDescribed, described_matches, matches, providers, self_described, write_json_all, write_list,
    write_list_described, write_text, write_text_described,
};

use crate::Outcome;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A provider by name (`Microsoft-Windows-TCPIP`, or `TCPIP`, any case) or GUID: list its events.
    /// The browsers' TraceLogging providers (`Google.Chrome`, `Edge WebView2` …) list what nettrail reads of them.
    provider: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let all = providers(BuiltIn::get());
    let browsers = self_described();
    let (chosen, described): (Vec<&Provider<'_>>, Vec<&SelfDescribed>) = match &args.provider {
        Some(wanted) => {
            let found: Vec<&Provider<'_>> = all.iter().filter(|p| matches(p.info, wanted)).collect();
            let described: Vec<&SelfDescribed> = browsers.iter().filter(|p| described_matches(p, wanted)).collect();
            if found.is_empty() && described.is_empty() {
                anyhow::bail!(
                    "no built-in provider {wanted:?}: `nettrail providers` lists them (a trace's own metadata and \
                     --manifest files decode others)"
                );
            }
            (found, described)
        }
        None => (all.iter().collect(), browsers.iter().collect()),
    };
    let mut out = std::io::stdout().lock();
    match args.format {
        Format::Json => {
            let mut buf = Vec::new();
            write_json_all(&mut buf, &chosen, &described);
            out.write_all(&buf)?;
        }
        Format::Text if args.provider.is_none() => {
            write_list(&mut out, &chosen)?;
            write_list_described(&mut out, &described)?;
        }
        Format::Text => {
            for p in &chosen {
                write_text(&mut out, p)?;
            }
            for p in &described {
                write_text_described(&mut out, p)?;
            }
        }
    }
    out.flush()?;
    Ok(Outcome::Complete)
}
