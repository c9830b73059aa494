//! `nettrail view` in a real browser: each report is loaded from its file in
//! headless Chromium, driven by Playwright (`tests/view/check.cjs`), and
//! checked against what the table commands print. Chromium and Node.js come
//! from Debian's `chromium`, `nodejs` and `npm` packages (installed with
//! apt-get when missing; the tests fail, never skip, when that cannot work);
//! `playwright-core` is installed once into `target/view-node`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use nettrail_testkit::{corpus_file, debian_tool, target_dir};
use serde_json::{Value, json};

const CHECK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/view/check.cjs");
/// The fixture DLL and its PDB, which the sample's stacks run through.
const SYMBOLS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../symbols/tests/data");

/// Chromium, Node.js, and `node_modules` with playwright-core; panics with
/// what to install when one cannot be had.
struct Browser {
    chromium: PathBuf,
    node: PathBuf,
    modules: PathBuf,
}

fn browser() -> &'static Browser {
    static READY: OnceLock<Browser> = OnceLock::new();
    READY.get_or_init(|| {
        let chromium = debian_tool("chromium", "chromium");
        let node = debian_tool("node", "nodejs");
        let npm = debian_tool("npm", "npm");
        let modules = playwright(&npm).unwrap_or_else(|e| panic!("the browser tests cannot run: {e}"));
        Browser { chromium, node, modules }
    })
}

fn playwright(npm: &Path) -> Result<PathBuf, String> {
    let dir = target_dir().join("view-node");
    let modules = dir.join("node_modules");
    if modules.join("playwright-core").join("package.json").exists() {
        return Ok(modules);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let out = Command::new(npm)
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(&dir)
        .arg("playwright-core")
        .output()
        .map_err(|e| format!("{} cannot run: {e}", npm.display()))?;
    if !out.status.success() {
        return Err(format!("npm install playwright-core failed:\n{}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(modules)
}

fn out_dir() -> PathBuf {
    let dir = target_dir().join("view-tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs nettrail; its stdout.
fn nettrail(args: &[&str], trace: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_nettrail"))
        .args(args)
        .arg(trace)
        .env_remove("_NT_SYMBOL_PATH")
        .env_remove("_NT_ALT_SYMBOL_PATH")
        .output()
        .expect("run nettrail");
    assert!(out.status.success(), "{args:?} {}: {}", trace.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn jsonl(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Writes the report of `trace` to `name`.html under target/view-tests.
fn view(trace: &Path, name: &str, more: &[&str]) -> PathBuf {
    let html = out_dir().join(format!("{name}.html"));
    let _ = std::fs::remove_file(&html);
    let mut args = vec!["--quiet", "view", "-o", html.to_str().unwrap()];
    args.extend(more);
    let printed = nettrail(&args, trace);
    assert_eq!(printed.trim(), html.display().to_string(), "the report's path on stdout");
    html
}

/// Runs the browser check; its results.
fn check(mode: &str, html: &Path, mut expect: Value) -> Value {
    let browser = browser();
    expect["chromium"] = json!(browser.chromium);
    let expect_file = html.with_extension("expect.json");
    std::fs::write(&expect_file, expect.to_string()).unwrap();
    let started = std::time::Instant::now();
    let out = Command::new(&browser.node)
        .arg(CHECK)
        .args([mode, html.to_str().unwrap(), expect_file.to_str().unwrap()])
        .env("NODE_PATH", &browser.modules)
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "{mode} check of {} failed:\n{}{}",
        html.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let results: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    eprintln!("{mode}: {results} in {:.1} s", started.elapsed().as_secs_f64());
    results
}

/// Rows of a table command.
fn rows(command: &str, trace: &Path) -> Vec<Value> {
    jsonl(&nettrail(&[command, "--format", "jsonl"], trace))
}

fn providers(trace: &Path) -> usize {
    let info: Value = serde_json::from_str(&nettrail(&["info", "--format", "json"], trace)).unwrap();
    info["providers"].as_array().unwrap().len()
}

/// The frames under `first:` of `nettrail stack --request N` (with `more` flags).
fn first_frames(trace: &Path, request: u64, more: &[&str]) -> Vec<String> {
    let n = request.to_string();
    let mut args = vec!["stack", "--request", &n];
    args.extend(more);
    let text = nettrail(&args, trace);
    let mut lines = text.lines().skip_while(|l| !l.trim_start().starts_with("first:")).skip(1);
    let frames: Vec<String> =
        lines.by_ref().take_while(|l| l.starts_with("      ")).map(|l| l.trim().to_string()).collect();
    assert!(!frames.is_empty(), "request {request} has a first stack:\n{text}");
    frames
}

#[test]
fn the_sample_report_shows_every_request_its_stacks_and_events() {
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/sample.etl");
    // With the fixture DLL's PDB, as the README's `nettrail stack` example.
    let symbols = ["--symbols", SYMBOLS];
    let html = view(&trace, "sample", &symbols);
    let requests = rows("requests", &trace);
    let columns: Vec<&str> = requests[0].as_object().unwrap().keys().map(String::as_str).collect();
    let urls: Vec<&str> = requests.iter().filter_map(|r| r["url"].as_str()).take(2).collect();
    assert_eq!(urls.len(), 2);
    let word = requests.iter().find(|r| r["process"] == "WINWORD.EXE").expect("a WINWORD.EXE request");
    let word_first = first_frames(&trace, word["request"].as_u64().unwrap(), &symbols);
    // The style.css request's events: what `dump --activity` lists.
    let style = requests.iter().find(|r| r["url"].as_str().is_some_and(|u| u.ends_with("style.css"))).unwrap();
    let activity = style["activity"].as_str().expect("style.css has an activity");
    let style_events = nettrail(&["dump", "--format", "text", "--activity", activity], &trace).lines().count();
    assert!(style_events > 0);
    let example_rows = requests.iter().filter(|r| r.to_string().contains("93.184.216.34")).count();
    let screenshot = out_dir().join("report.png");
    let results = check(
        "sample",
        &html,
        json!({
            "rows": requests.len(),
            "columns": columns,
            "urls": urls,
            "word_url": word["url"],
            "word_request": word["request"],
            "word_lane": format!("{}/{}", word["pid"], word["threads"][0]),
            "word_start": word["start_s"],
            "word_end": word["start_s"].as_f64().unwrap() + word["duration_s"].as_f64().unwrap(),
            "word_first": word_first,
            "style_events": style_events.min(200),
            "example_rows": example_rows,
            "tabs": {
                "connections": rows("connections", &trace).len(),
                "dns": rows("dns", &trace).len(),
                "http_server": rows("http-server", &trace).len(),
            },
            "providers": providers(&trace),
            "screenshot": screenshot,
        }),
    );
    assert_eq!(results["page_loads"], 1, "only the page itself was loaded");
    // The README shows it.
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/report.png");
    std::fs::copy(&screenshot, docs).unwrap();
}

/// A WinHTTP GET whose URL is markup meant to run script.
fn hostile_trace(url: &str) -> Vec<u8> {
    use nettrail_synth::Process;
    use nettrail_synth::windows::{Answer, Dial, Exchange, Lookup, Machine, WebThreads};
    let dnscache = (1372, 1388);
    let mut m = Machine::new();
    m.process(
        Process::new(dnscache.0, 780, "svchost.exe")
            .command_line(r"C:\WINDOWS\system32\svchost.exe -k NetworkService -p -s Dnscache")
            .service()
            .user_sid("S-1-5-20"),
    )
    .unwrap();
    let pid = m.process(Process::new(5120, 6412, "client.exe").command_line(r#""C:\Tools\client.exe""#)).unwrap();
    let th = WebThreads { app: (pid, 5124), worker: (pid, 5168), io: (pid, 5172) };
    let s = m.winhttp_open(100.0, th.app).unwrap();
    let addresses = ["93.184.216.34".parse().unwrap()];
    let lookup = Lookup::answered("www.example.com", Answer { cnames: &[], addresses: &addresses }).cached();
    let dial = Dial::new("93.184.216.34:443".parse().unwrap()).rtt(24.0);
    let path = url.strip_prefix("https://www.example.com").unwrap();
    let x = Exchange::new("GET", "www.example.com", path, "HTTP/1.1 200 OK", 512);
    let (r, c, t) =
        m.winhttp_fetch(100.5, th, &s, ("GET", url, "www.example.com"), (&[lookup], dnscache), &dial, &x).unwrap();
    let t = m.winhttp_close_socket(t + 20.0, th.app, &r, &c).unwrap();
    m.winhttp_close_session(t + 0.1, th.app, &s).unwrap();
    m.finish().unwrap()
}

#[test]
fn a_hostile_url_is_shown_as_text_never_run() {
    let url = r#"https://www.example.com/"><script>window.pwned=1</script><img src=x onerror="window.pwned=2">"#;
    let trace = out_dir().join("hostile.etl");
    std::fs::write(&trace, hostile_trace(url)).unwrap();
    let requests = rows("requests", &trace);
    assert!(requests.iter().any(|r| r["url"] == url), "the model keeps the URL: {requests:?}");
    let html = view(&trace, "hostile", &[]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(!page.contains("<script>window.pwned"), "the URL is escaped in the page's data");
    assert!(!page.contains("<img"), "no markup of the trace in the page");
    let results = check("hostile", &html, json!({ "rows": requests.len(), "url": url }));
    assert_eq!(results["pwned"], "undefined");
}

#[test]
fn corpus_reports_load_with_every_row() {
    for name in ["tx__KernelNetwork.etl", "tx__HTTP_Server.etl"] {
        let trace = corpus_file(name);
        let html = view(&trace, name.trim_end_matches(".etl"), &[]);
        let tabs = json!({
            "requests": rows("requests", &trace).len(),
            "connections": rows("connections", &trace).len(),
            "dns": rows("dns", &trace).len(),
            "http_server": rows("http-server", &trace).len(),
        });
        let results = check("tables", &html, json!({ "tabs": tabs, "providers": providers(&trace) }));
        assert_eq!(results["requests"], tabs["requests"], "{name}");
        assert!(tabs["requests"].as_u64().unwrap() > 0 || tabs["http_server"].as_u64().unwrap() > 0, "{name}");
    }
}

#[test]
fn a_hundred_thousand_requests_stay_usable() {
    const REQUESTS: u32 = 100_000;
    let trace = out_dir().join("load.etl");
    std::fs::write(&trace, nettrail_synth::scenarios::handoff_load(REQUESTS).unwrap()).unwrap();
    let html = view(&trace, "load", &[]);
    let requests = nettrail(&["requests", "--format", "jsonl"], &trace);
    assert_eq!(requests.lines().count(), REQUESTS as usize);
    // The filter matches any column: count the rows it keeps from the JSON lines.
    let filter = "10.1.2.3";
    let filter_rows = requests.lines().filter(|l| l.contains(filter)).count();
    assert!(filter_rows > 0);
    let results = check(
        "load",
        &html,
        json!({
            "rows": REQUESTS,
            "filter": filter,
            "filter_rows": filter_rows,
            "screenshot": out_dir().join("load.png"),
        }),
    );
    eprintln!("100k: load {} ms, scroll to the end {} ms", results["load_ms"], results["scroll_end_ms"]);
}

#[test]
fn a_browser_report_shows_its_urls_quic_and_regions() {
    let trace = out_dir().join("browser-navigation.etl");
    std::fs::write(&trace, nettrail_synth::scenarios::browser_navigation().unwrap()).unwrap();
    let html = view(&trace, "browser", &[]);
    let requests = rows("requests", &trace);
    let chromium: Vec<&Value> = requests.iter().filter(|r| r["layer"] == "Chromium").collect();
    assert_eq!(chromium.len(), 4);
    let quic = rows("connections", &trace).into_iter().find(|c| c["protocol"] == "QUIC").expect("a QUIC connection");
    let tabs = json!({
        "requests": requests.len(),
        "connections": rows("connections", &trace).len(),
        "dns": rows("dns", &trace).len(),
        "http_server": rows("http-server", &trace).len(),
        "browser": rows("browser", &trace).len(),
    });
    let results = check(
        "browser",
        &html,
        json!({
            "tabs": tabs,
            "providers": providers(&trace),
            "urls": ["https://www.example.com/", "https://api.example.com/v1/data"],
            "chromium_rows": chromium.len(),
            "connection_id": quic["connection_id"],
            "names": ["Navigation StartToCommit", "URL_REQUEST", "QUIC_SESSION"],
        }),
    );
    assert_eq!(results["browser"], tabs["browser"]);
}
