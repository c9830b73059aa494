//! `nettrail providers [NAME|GUID]`: what nettrail decodes without the
//! trace's help (`nettrail_export::providers` lists and renders them).

use std::io::Write as _;

use clap::ValueEnum;
use nettrail_decode::builtin::BuiltIn;
use nettrail_export::providers::{Provider, matches, providers, write_json, write_list, write_text};

use crate::Outcome;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A provider by name (`Microsoft-Windows-TCPIP`, or `TCPIP`, any case) or GUID: list its events.
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
    let chosen: Vec<&Provider<'_>> = match &args.provider {
        Some(wanted) => {
            let found: Vec<&Provider<'_>> = all.iter().filter(|p| matches(p.info, wanted)).collect();
            if found.is_empty() {
                anyhow::bail!(
                    "no built-in provider {wanted:?}: `nettrail providers` lists them (a trace's own metadata and \
                     --manifest files decode others)"
                );
            }
            found
        }
        None => all.iter().collect(),
    };
    let mut out = std::io::stdout().lock();
    match args.format {
        Format::Json => {
            let mut buf = Vec::new();
            write_json(&mut buf, &chosen);
            out.write_all(&buf)?;
        }
        Format::Text if args.provider.is_none() => write_list(&mut out, &chosen)?,
        Format::Text => {
            for p in &chosen {
                write_text(&mut out, p)?;
            }
        }
    }
    out.flush()?;
    Ok(Outcome::Complete)
}
