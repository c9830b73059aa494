//! `nettrail start | stop | status | cancel | profile` against a stand-in
//! `wpr` that records its arguments (real capture needs Windows): the
//! command line of each verb and option, the cleanup after failures, the
//! advice for WPR's error codes, and the profile on disk.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A folder of its own for each test: the state folder and the stand-in.
struct Bench {
    dir: PathBuf,
}

/// The stand-in: appends its arguments (one line per run, tab-separated)
/// to `calls`; `-stop OUT` copies the sample trace to OUT; a verb named in
/// the file `fail-VERB` fails with the code that file holds, as WPR does.
const STANDIN: &str = r#"#!/bin/sh
dir="$(dirname "$0")"
line=""
for a in "$@"; do line="$line$a	"; done
printf '%s\n' "$line" >> "$dir/calls"
verb="$1"
if [ -f "$dir/fail$verb" ]; then
  echo "An error occurred."
  echo "Error code: $(cat "$dir/fail$verb")"
  exit 1
fi
case "$verb" in
  -stop) cp "$SAMPLE" "$2" ;;
  -status) echo "WPR is recording" ;;
esac
echo "The operation completed successfully."
"#;

impl Bench {
    fn new(name: &str) -> Bench {
        let dir = nettrail_testkit::target_dir().join("capture-tests").join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let dir = dir.canonicalize().unwrap();
        let wpr = dir.join("wpr");
        std::fs::write(&wpr, STANDIN).unwrap();
        std::fs::set_permissions(&wpr, std::fs::Permissions::from_mode(0o755)).unwrap();
        // The desktop's opener, standing in too: it records what it was asked to open.
        let opener = dir.join("xdg-open");
        std::fs::write(&opener, "#!/bin/sh\nprintf '%s\\n' \"$1\" >> \"$(dirname \"$0\")/opened\"\n").unwrap();
        std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
        Bench { dir }
    }

    fn home(&self) -> PathBuf {
        self.dir.join("home")
    }

    fn fail(&self, verb: &str, code: &str) {
        std::fs::write(self.dir.join(format!("fail{verb}")), code).unwrap();
    }

    fn run(&self, args: &[&str]) -> Output {
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/sample.etl");
        Command::new(env!("CARGO_BIN_EXE_nettrail"))
            .args(args)
            .current_dir(&self.dir)
            .env("NETTRAIL_WPR", self.dir.join("wpr"))
            .env("NETTRAIL_HOME", self.home())
            .env("SAMPLE", sample)
            .env(
                "PATH",
                std::env::join_paths(
                    std::iter::once(self.dir.clone()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
                )
                .unwrap(),
            )
            .output()
            .unwrap()
    }

    /// Each run of the stand-in: its arguments.
    fn calls(&self) -> Vec<Vec<String>> {
        let text = std::fs::read_to_string(self.dir.join("calls")).unwrap_or_default();
        text.lines().map(|l| l.split('\t').filter(|a| !a.is_empty()).map(str::to_string).collect()).collect()
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn start_records_to_a_file_with_the_generated_profile() {
    let b = Bench::new("start-file");
    let out = b.run(&["start", "--provider", "*MyApp:0x1:5"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "stdout stays clean");
    let profile = b.home().join("nettrail.wprp");
    assert_eq!(
        b.calls(),
        [vec![
            "-start".to_string(),
            format!("{}!nettrail", s(&profile)),
            "-filemode".into(),
            "-recordtempto".into(),
            s(&b.home().join("recording")),
            "-instancename".into(),
            "nettrail".into(),
        ]]
    );
    // The profile WPR was given is the one `nettrail profile` writes for the same options.
    let written = std::fs::read_to_string(&profile).unwrap();
    let printed = b.run(&["profile", "--provider", "*MyApp:0x1:5"]);
    assert_eq!(written, String::from_utf8(printed.stdout).unwrap());
    assert!(written.contains(&nettrail_tracelogging::provider_guid("MyApp").to_string()));
    assert!(stderr(&out).contains("nettrail stop"), "{}", stderr(&out));
}

#[test]
fn loop_records_in_memory_and_adds_profiles() {
    let b = Bench::new("start-loop");
    let out = b.run(&["start", "--loop", "--profile", "C:\\wprp\\Extra.wprp!Edge"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let profile = b.home().join("nettrail.wprp");
    assert_eq!(
        b.calls(),
        [vec![
            "-start".to_string(),
            format!("{}!nettrail", s(&profile)),
            "-start".into(),
            "C:\\wprp\\Extra.wprp!Edge".into(),
            "-instancename".into(),
            "nettrail".into(),
        ]]
    );
    let status = b.run(&["status"]);
    let text = String::from_utf8(status.stdout).unwrap();
    assert!(text.starts_with("nettrail: recording for 0 min: circular (--loop)\nWPR is recording"), "{text}");
    assert_eq!(b.calls()[1], ["-status", "profiles", "collectors", "-instancename", "nettrail"]);
}

#[test]
fn stop_writes_the_trace_and_skips_managed_pdbs_unless_clr() {
    let b = Bench::new("stop");
    assert!(b.run(&["start"]).status.success());
    let out = b.run(&["stop", "-o", "trace.etl"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let trace = b.dir.join("trace.etl");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("{}\n", s(&trace)));
    assert_eq!(b.calls()[1], ["-stop", &s(&trace), "-skipPdbGen", "-instancename", "nettrail"]);

    // With --clr, WPR generates the PDBs of managed code at stop.
    assert!(b.run(&["start", "--clr"]).status.success());
    assert!(b.run(&["stop", "-o", "clr.etl"]).status.success());
    assert_eq!(b.calls()[3], ["-stop", &s(&b.dir.join("clr.etl")), "-instancename", "nettrail"]);

    // Without -o: a timestamped name in the current folder.
    assert!(b.run(&["start"]).status.success());
    let out = b.run(&["stop"]);
    let path = String::from_utf8(out.stdout).unwrap();
    let name = Path::new(path.trim()).file_name().unwrap().to_str().unwrap().to_string();
    assert!(name.starts_with("nettrail-20") && name.ends_with(".etl") && name.len() == 28, "{name}");
}

#[test]
fn stop_view_writes_the_report_of_the_new_trace() {
    let b = Bench::new("stop-view");
    assert!(b.run(&["start"]).status.success());
    let out = b.run(&["stop", "-o", "trace.etl", "--view"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = b.dir.join("trace.html");
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text, format!("{}\n{}\n", s(&b.dir.join("trace.etl")), s(&report)));
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("WINWORD.EXE") && html.contains("templates.office.example"));
    assert_eq!(std::fs::read_to_string(b.dir.join("opened")).unwrap(), format!("{}\n", s(&report)));
    // The report `nettrail view` writes: the sample's 11 requests.
    assert!(html.contains("\"requests\":11,"), "no request count in the report");
}

#[test]
fn a_failed_start_cancels_what_it_started_with_advice() {
    let b = Bench::new("start-fails");
    b.fail("-start", "0xc5583014");
    let out = b.run(&["start"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("wpr -start failed with error 0xc5583014: a collector is in use by another tool"), "{err}");
    assert_eq!(b.calls().len(), 2);
    assert_eq!(b.calls()[1], ["-cancel", "-instancename", "nettrail"]);
}

#[test]
fn an_already_running_recording_is_left_alone() {
    let b = Bench::new("start-running");
    b.fail("-start", "0xc5583001");
    let out = b.run(&["start"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("already running; stop it with `nettrail stop`"), "{}", stderr(&out));
    assert_eq!(b.calls().len(), 1, "no cancel of the recording that runs");
}

#[test]
fn a_failed_stop_cancels_the_session() {
    let b = Bench::new("stop-fails");
    assert!(b.run(&["start"]).status.success());
    b.fail("-stop", "0x800705aa");
    let out = b.run(&["stop", "-o", "t.etl"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("error 0x800705aa: insufficient system resources"), "{}", stderr(&out));
    assert_eq!(b.calls()[2], ["-cancel", "-instancename", "nettrail"]);

    // Stopping when nothing runs: advice, and nothing to cancel.
    let b = Bench::new("stop-nothing");
    b.fail("-stop", "0xc5583000");
    let out = b.run(&["stop", "-o", "t.etl"]);
    assert!(stderr(&out).contains("no nettrail recording is running"), "{}", stderr(&out));
    assert_eq!(b.calls().len(), 1);
}

#[test]
fn cancel_and_status_when_nothing_runs() {
    let b = Bench::new("cancel");
    let out = b.run(&["cancel"]);
    assert!(out.status.success());
    assert!(stderr(&out).contains("recording cancelled"));
    assert_eq!(b.calls(), [["-cancel", "-instancename", "nettrail"]]);

    b.fail("-status", "0xc5583000");
    let out = b.run(&["status"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("nettrail: no recording is running\n"), "{text}");
}

#[test]
fn profile_writes_a_file() {
    let b = Bench::new("profile");
    let out = b.run(&["profile", "-o", "network.wprp", "--clr", "--no-stacks"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let xml = std::fs::read_to_string(b.dir.join("network.wprp")).unwrap();
    roxmltree::Document::parse(&xml).unwrap();
    assert!(xml.contains("e13c0d23-ccbc-4e12-931b-d9cc2eee27e4") && !xml.contains("Stack"));
    assert!(stderr(&out).contains("wpr -start network.wprp!nettrail -filemode"), "{}", stderr(&out));
    assert!(b.calls().is_empty(), "profile runs no wpr");
}

#[test]
fn capture_needs_windows_here() {
    let out = Command::new(env!("CARGO_BIN_EXE_nettrail")).arg("start").env_remove("NETTRAIL_WPR").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("capture needs Windows") && err.contains("nettrail requests trace.etl"), "{err}");
}

#[test]
fn browser_adds_the_browsers_and_javascript() {
    let b = Bench::new("start-browser");
    let out = b.run(&["start", "--browser"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let profile = std::fs::read_to_string(b.home().join("nettrail.wprp")).unwrap();
    for guid in ["d2d578d9-2936-45b6-a09f-30e32715f42d", "e16ec3d2-bb0f-4e8f-bdb8-de0bea82dc3d"] {
        assert!(profile.contains(guid), "{guid} not in the profile");
    }
    // JavaScript's rundown, as --js adds it, so script frames get names.
    assert!(profile.contains("57277741-3638-4a4b-bdba-0ac6e45da56c"));
    assert!(stderr(&out).contains("--js-flags=--enable-etw-stack-walking"), "{}", stderr(&out));
    let status = String::from_utf8(b.run(&["status"]).stdout).unwrap();
    assert!(status.starts_with("nettrail: recording for 0 min: sequential file, --browser\n"), "{status}");
    // Without --browser: QUIC is recorded, the browsers are not.
    let plain = String::from_utf8(b.run(&["profile"]).stdout).unwrap();
    assert!(plain.contains("ff15e657-4f26-570e-88ab-0796b258d11c") && !plain.contains("d2d578d9"));
}
