//! `nettrail start | stop | status | cancel | profile`: recording with
//! Windows Performance Recorder and the profile nettrail writes. Messages go
//! to stderr; stdout carries only what a script wants (the trace's path,
//! the status, the profile).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use nettrail_capture::{CaptureError, Flag, Options, Recording, Scenario, StateDir, Wpr, wprp};

use crate::Outcome;

/// What to record (shared by `start` and `profile`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RecordArgs {
    /// .NET runtime events and rundown, so managed frames get names.
    #[arg(long)]
    clr: bool,
    /// JavaScript runtime events and rundown, so script frames get names.
    #[arg(long)]
    js: bool,
    /// The Chromium-based browsers (Chrome, Edge, WebView2): their NetLog, navigation,
    /// loading and timing events with stacks, for `nettrail browser` and URLs in
    /// `requests` (implies --js).
    #[arg(long)]
    browser: bool,
    /// No call stacks (smaller traces; `nettrail stack` has nothing to show).
    #[arg(long)]
    no_stacks: bool,
    /// Another provider: `NAME|GUID[:KEYWORDS[:LEVEL[:stack]]]`; `*Name` for a
    /// TraceLogging/EventSource provider such as an app using nettrail-tracelogging (repeatable).
    #[arg(long, value_name = "PROVIDER")]
    provider: Vec<String>,
}

impl RecordArgs {
    fn options(&self, circular: bool) -> anyhow::Result<Options> {
        let extra = self
            .provider
            .iter()
            .map(|p| nettrail_capture::parse_provider(p))
            .collect::<Result<Vec<_>, _>>()
            .context("--provider")?;
        Ok(Options { circular, clr: self.clr, js: self.js, browser: self.browser, no_stacks: self.no_stacks, extra })
    }
}

#[derive(clap::Args, Debug)]
pub struct StartArgs {
    /// Record into circular memory buffers: only the last few minutes are kept.
    #[arg(long = "loop")]
    circular: bool,
    #[command(flatten)]
    record: RecordArgs,
    /// A WPR profile to record as well, FILE.wprp!NAME (repeatable).
    #[arg(long, value_name = "FILE.wprp!NAME")]
    profile: Vec<String>,
}

#[derive(clap::Args, Debug)]
pub struct StopArgs {
    /// Where to write the trace [default: nettrail-YYYYMMDD-HHMMSS.etl here].
    #[arg(short, long, value_name = "TRACE.etl")]
    output: Option<PathBuf>,
    /// Write the trace's HTML report next to it (`nettrail view`) and open it.
    #[arg(long)]
    view: bool,
}

#[derive(clap::Args, Debug)]
pub struct ProfileArgs {
    /// Write the profile here instead of stdout.
    #[arg(short, long, value_name = "FILE.wprp")]
    output: Option<PathBuf>,
    #[command(flatten)]
    record: RecordArgs,
}

/// `nettrail profile`: the network scenario as a WPR profile.
pub fn profile(args: &ProfileArgs) -> anyhow::Result<Outcome> {
    let xml = wprp::write(&Scenario::network(&args.record.options(false)?));
    match &args.output {
        Some(path) => {
            std::fs::write(path, &xml).with_context(|| format!("{}: cannot write", path.display()))?;
            say!(
                "wrote {}; record with `wpr -start {}!{} -filemode`, stop with `wpr -stop trace.etl`",
                path.display(),
                path.display(),
                wprp::PROFILE_NAME
            );
        }
        None => std::io::stdout().lock().write_all(xml.as_bytes())?,
    }
    Ok(Outcome::Complete)
}

/// Sets up the recorder: refuses where capture cannot work, before anything runs.
fn recorder() -> anyhow::Result<(Wpr, StateDir, Flag)> {
    let wpr = Wpr::find()?;
    #[cfg(windows)]
    if !nettrail_capture::controller::is_elevated() {
        return Err(CaptureError::NotElevated.into());
    }
    let flag = Flag::default();
    let on_interrupt = flag.clone();
    // A second handler cannot be installed; the first one's flag is enough.
    let _ = ctrlc::set_handler(move || on_interrupt.set());
    Ok((wpr, StateDir::locate(), flag))
}

/// `nettrail start`.
pub fn start(args: &StartArgs) -> anyhow::Result<Outcome> {
    let options = args.record.options(args.circular)?;
    let (wpr, state, interrupted) = recorder()?;
    state.create()?;
    let profile = state.write_profile(&wprp::write(&Scenario::network(&options)))?;
    let extra: Vec<&str> = args.profile.iter().map(String::as_str).collect();
    wpr.start(&profile, &extra, options.circular, &state.temp(), &interrupted)?;
    let started = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    state.save(&Recording {
        started,
        circular: options.circular,
        clr: options.clr,
        js: options.js,
        browser: options.browser,
        no_stacks: options.no_stacks,
        providers: args.record.provider.clone(),
    })?;
    let mode = if options.circular {
        "in circular memory buffers (the last few minutes are kept)".to_string()
    } else {
        format!("to {}", state.temp().display())
    };
    say!("recording {mode}. Reproduce the problem, then `nettrail stop -o trace.etl`.");
    if options.browser {
        say!(
            "browsers already running log their events from now on; for names of script frames in stacks, start \
             them with --js-flags=--enable-etw-stack-walking"
        );
    }
    Ok(Outcome::Complete)
}

/// `nettrail stop`.
pub fn stop(args: &StopArgs, quiet: bool) -> anyhow::Result<Outcome> {
    let (wpr, state, interrupted) = recorder()?;
    let recording = state.load().unwrap_or_default();
    let out = args.output.clone().unwrap_or_else(|| PathBuf::from(default_name(SystemTime::now())));
    let out = std::path::absolute(&out).unwrap_or(out);
    if !quiet {
        say!("stopping and merging into {} (this takes a while)…", out.display());
    }
    let result = wpr.stop(&out, recording.clr, &interrupted);
    state.forget();
    result?;
    let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    say!("trace written, {:.1} MB", size as f64 / 1e6);
    println!("{}", out.display());
    if args.view {
        return view(&out, quiet);
    }
    Ok(Outcome::Complete)
}

/// Shows a fresh trace: its report, in the browser.
fn view(trace: &Path, quiet: bool) -> anyhow::Result<Outcome> {
    crate::view::run(&crate::view::Args::for_trace(trace, true), quiet)
}

/// `nettrail status`: WPR's view of our session, and (on Windows) every
/// ETW session that runs, ours marked.
pub fn status() -> anyhow::Result<Outcome> {
    let wpr = Wpr::find()?;
    let state = StateDir::locate();
    let mut out = crate::visible::Visible::new(std::io::stdout().lock());
    let run = wpr.status()?;
    match state.load() {
        Some(r) if run.success => {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
            let minutes = now.saturating_sub(r.started) / 60;
            let mut what = vec![if r.circular { "circular (--loop)" } else { "sequential file" }.to_string()];
            what.extend(r.clr.then(|| "--clr".to_string()));
            what.extend(r.js.then(|| "--js".to_string()));
            what.extend(r.browser.then(|| "--browser".to_string()));
            what.extend(r.no_stacks.then(|| "--no-stacks".to_string()));
            what.extend(r.providers.iter().map(|p| format!("--provider {p}")));
            writeln!(out, "nettrail: recording for {minutes} min: {}", what.join(", "))?;
        }
        _ if !run.success => writeln!(out, "nettrail: no recording is running")?,
        _ => writeln!(out, "nettrail: a recording runs (started outside this state folder)")?,
    }
    writeln!(out, "{}", run.output.trim_end())?;
    #[cfg(windows)]
    sessions(&mut out)?;
    Ok(Outcome::Complete)
}

#[cfg(windows)]
fn sessions(out: &mut impl std::io::Write) -> anyhow::Result<()> {
    let sessions = nettrail_capture::controller::sessions()?;
    writeln!(out, "\nETW sessions running ({}):", sessions.len())?;
    for s in sessions {
        let mark = if s.name.starts_with(nettrail_capture::SESSION_NAME) { "*" } else { " " };
        let file = s.log_file.as_ref().map(|f| f.display().to_string()).unwrap_or_else(|| "(real time)".into());
        writeln!(out, "{mark} {:<40} {:>6} lost  {}", s.name, s.events_lost, file)?;
    }
    Ok(())
}

/// `nettrail cancel`: stop and discard our recording.
pub fn cancel() -> anyhow::Result<Outcome> {
    let (wpr, state, _) = recorder()?;
    let result = wpr.cancel();
    state.forget();
    match result {
        Ok(_) => say!("recording cancelled, nothing written"),
        Err(CaptureError::Wpr { code: Some(0xc558_3000), .. }) => say!("no recording was running"),
        Err(e) => return Err(e.into()),
    }
    Ok(Outcome::Complete)
}

/// `nettrail-20261121-093000.etl` (UTC).
fn default_name(now: SystemTime) -> String {
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let utc = nettrail_etl::FileTime(nettrail_etl::clock::FILETIME_UNIX_EPOCH + secs as i64 * 10_000_000).to_string();
    // `2026-11-21T09:30:00.0000000Z`: the date's and the time's digits.
    let digits = |part: &str| part.chars().filter(char::is_ascii_digit).collect::<String>();
    let (date, time) = utc.split_once('T').unwrap_or((&utc, ""));
    format!("nettrail-{}-{}.etl", digits(date), digits(&time[..time.len().min(8)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_names_are_utc_timestamps() {
        let t = UNIX_EPOCH + std::time::Duration::from_secs(1_795_253_400);
        assert_eq!(default_name(t), "nettrail-20261121-093000.etl");
        assert_eq!(default_name(UNIX_EPOCH), "nettrail-19700101-000000.etl");
        // 2000-02-29, a leap day.
        assert_eq!(
            default_name(UNIX_EPOCH + std::time::Duration::from_secs(951_782_400)),
            "nettrail-20000229-000000.etl"
        );
    }
}
