//! Work handed from thread to thread before it reaches the network, each
//! hand-off logged with the stack of the code that made it: a thread
//! created for a download, a thread-pool timer, Office's dispatch queues,
//! thread pool and idle manager, and a callback that re-posts itself.
//!
//! The apps' own code is the fixture DLL that nettrail-symbols' tests build
//! with clang and lld-link (`crates/symbols/tests/data`): the scenarios map
//! it with its real PE and PDB identity, so its return addresses resolve to
//! function names and lines with that PDB.

use nettrail_etl::Guid;

use crate::windows::{Answer, Dial, Lookup, Machine, QueueKind, Tid};
use crate::{Module, PdbIdentity, SynthError};

use super::{DNSCACHE, app, ip, machine, sa};

/// The fixture DLL's file name, size of image and identity (its PE header's
/// TimeDateStamp, its CodeView record's PDB GUID, age and name).
pub const FIXTURE_DLL: &str = "nettrail_fixture.dll";
pub const FIXTURE_SIZE: u64 = 0x5000;

pub fn fixture_identity() -> PdbIdentity {
    PdbIdentity {
        time_date_stamp: 0x8d32_3fee,
        guid: Guid::parse_const("c77d2d78-2fdd-0653-4c4c-44205044422e"),
        age: 1,
        pdb_name: "nettrail_fixture.pdb".to_string(),
    }
}

/// Return addresses in the fixture (RVAs), and what its PDB says of them:
/// `fixture_send+0x9` (fixture.c line 30), `build_request+0x19` (line 25),
/// `build_request+0xd` (line 23), and `checksum+0x67` where `mix` is
/// inlined (line 12, called from line 18).
pub const FIXTURE_SEND_RET: u64 = 0x1139;
pub const BUILD_REQUEST_RET: u64 = 0x1119;
pub const BUILD_REQUEST_FIRST_RET: u64 = 0x110d;
pub const CHECKSUM_INLINED_MIX: u64 = 0x1067;

/// Maps the fixture DLL into `pid` (at a base of its own, below 4 GB in a
/// 32-bit process) when the trace starts.
pub(super) fn map_fixture(m: &mut Machine, pid: u32) -> Result<(), SynthError> {
    let path = format!(r"C:\Program Files\Fixture\{FIXTURE_DLL}");
    let base = if m.pointer_size(pid) == 4 { 0x6a20_0000 } else { 0x7ffd_4a20_0000 };
    let module = Module::new(&path, base, FIXTURE_SIZE).pdb(fixture_identity());
    m.synth().add_module(pid, module)?;
    Ok(())
}

/// An address in the fixture DLL as `pid` maps it.
pub(super) fn fixture_address(m: &Machine, pid: u32, rva: u64) -> Result<u64, SynthError> {
    Ok(m.code_stack(pid, &[(FIXTURE_DLL, rva)])?[0])
}

/// An app's stack when it calls `api` (module, RVA): the API, then the
/// fixture's `frames`, then the executable's main loop.
pub(super) fn app_stack(m: &Machine, pid: u32, api: (&str, u64), frames: &[u64]) -> Result<Vec<u64>, SynthError> {
    let mut all = vec![api];
    all.extend(frames.iter().map(|&rva| (FIXTURE_DLL, rva)));
    all.push(("", 0x1d2e));
    m.code_stack(pid, &all)
}

/// ntdll's and kernel32's entry points that hand work over (RVAs).
pub(super) const TP_POST_WORK: (&str, u64) = ("ntdll.dll", 0x3_4c12);
const TP_SET_TIMER: (&str, u64) = ("ntdll.dll", 0x3_9a40);
const CREATE_THREAD: (&str, u64) = ("KernelBase.dll", 0x2_1b85);

/// 23: `downloader.exe`'s main thread creates a thread (its Thread Start
/// walks the creator's stack, in the fixture's `fixture_send`), and that
/// thread downloads from `downloads.example.com` with plain Winsock.
pub fn adhoc_thread() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 7700, "downloader.exe", r#""C:\Tools\downloader.exe" --fetch"#)?;
    map_fixture(&mut m, pid)?;
    let (main, thread) = ((pid, 7704), (pid, 7744));
    let stack = app_stack(&m, pid, CREATE_THREAD, &[BUILD_REQUEST_RET, FIXTURE_SEND_RET])?;
    m.synth().create_thread(50.0, main, thread.1, &stack)?;
    let addresses = [ip("151.101.2.132")];
    let lookup = Lookup::answered("downloads.example.com", Answer { cnames: &[], addresses: &addresses });
    let t = m.resolve(50.5, thread, Guid::ZERO, &lookup, DNSCACHE)?;
    let dial = Dial::new(sa("151.101.2.132:443")).blocking().rtt(14.0);
    download(&mut m, t + 0.2, thread, &dial, 9_000)?;
    m.finish()
}

/// Connects, sends a 310-byte request and receives `bytes` on `th`.
fn download(m: &mut Machine, at: f64, th: Tid, dial: &Dial, bytes: u32) -> Result<f64, SynthError> {
    let mut c = m.tcp_connect(at, th, dial)?;
    let t = m.tcp_send(at + dial.rtt + 0.5, th, &mut c, 310)?;
    let t = m.tcp_receive(t + dial.rtt, &mut c, bytes, th)?;
    m.tcp_close(t + 1.0, th, &c)
}

/// 24: `updater.exe`'s main thread sets a periodic thread-pool timer (every
/// second) from the fixture's `build_request`; each expiration, on a pool
/// thread, connects to `updates.example.com` and checks for an update.
pub fn timer_request() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 8100, "updater.exe", r#""C:\Program Files\Updater\updater.exe" /background"#)?;
    map_fixture(&mut m, pid)?;
    let (main, pool) = ((pid, 8104), (pid, 8140));
    let timer = m.tp_timer(pid, 1_000);
    let stack = app_stack(&m, pid, TP_SET_TIMER, &[BUILD_REQUEST_FIRST_RET, FIXTURE_SEND_RET])?;
    m.tp_set_timer(20.0, main, &timer, &stack)?;
    let dial = Dial::new(sa("13.107.4.50:443")).blocking().rtt(22.0);
    for fire in [1_020.0, 2_020.0] {
        let t = m.tp_timer_fires(fire, pool, &timer)?;
        let t = download(&mut m, t + 0.1, pool, &dial, 1_200)?;
        m.tp_timers_done(t + 0.1, pool, &timer)?;
    }
    m.finish()
}

/// 22: Word (`WINWORD.EXE`, started before the trace) hands work around
/// with Office's own machinery before its requests go out:
/// - an idle task added on the UI thread, registered (cookie 1: the
///   process's first), run when the app is idle; it posts a callback to a
///   concurrent dispatch queue; the callback, on a queue thread, creates an
///   Office thread-pool worker; the worker, on a pool thread, opens and
///   sends a WinINet GET of `https://config.office.example/config`;
/// - a callback posted to a sequential queue re-posts itself three times
///   (same stack each time) before its fourth run connects with Winsock to
///   `telemetry.office.example`.
pub fn office_pools() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 9200, "WINWORD.EXE", r#""C:\Program Files\Microsoft Office\root\Office16\WINWORD.EXE""#)?;
    map_fixture(&mut m, pid)?;
    let (ui, queue_thread, pool, inet) = ((pid, 9204), (pid, 9240), (pid, 9250), (pid, 9256));
    let mso = |m: &Machine, api: u64, frames: &[u64]| app_stack(m, pid, ("", api), frames);

    // The idle task.
    m.office_idle_task_added(30.0, ui, &mso(&m, 0x4_1a10, &[CHECKSUM_INLINED_MIX, FIXTURE_SEND_RET])?)?;
    m.office_idle_registered(30.2, ui, 7, 1, &mso(&m, 0x4_2200, &[])?)?;
    let t = m.office_idle_executes(80.0, ui, 7, 1)?;
    let (queue, callback) = (m.heap(pid), 0x7ff6_7a10_4c30);
    let post = mso(&m, 0x5_3c40, &[BUILD_REQUEST_RET])?;
    m.office_post(t + 0.1, ui, QueueKind::Concurrent, (queue, callback), &post)?;
    m.office_idle_deregistered(t + 0.2, ui, 7, 1)?;
    m.office_idle_ends(t + 0.3, ui)?;

    // The queue's callback creates a pool worker.
    m.office_invoke_start(t + 1.0, queue_thread, QueueKind::Concurrent, queue)?;
    m.office_callback(t + 1.01, queue_thread, queue, callback)?;
    let worker = m.heap(pid);
    let create = mso(&m, 0x6_0e80, &[BUILD_REQUEST_FIRST_RET])?;
    m.office_worker_created(t + 1.1, queue_thread, worker, 0x7ff6_7a11_0990, &create)?;
    m.office_invoke_end(t + 1.2, queue_thread, QueueKind::Concurrent, queue)?;

    // The worker's request, sent by WinINet.
    m.office_worker_runs(t + 2.0, pool, worker)?;
    let connect = m.wininet_handle();
    let server = ("config.office.example", 443);
    let r = m.wininet_open_request(t + 2.1, pool, connect, ("GET", "/config"), server)?;
    m.wininet_send_request(t + 2.2, pool, &r, "https://config.office.example/config")?;
    m.office_worker_ends(t + 2.3, pool, worker)?;
    let addresses = [ip("52.109.12.6")];
    let lookup = Lookup::answered("config.office.example", Answer { cnames: &[], addresses: &addresses });
    let t = m.wininet_resolve(t + 2.5, inet, &r, &[lookup], None)?;
    let (mut c, t) = m.wininet_connect(t + 0.1, inet, &r, &Dial::new(sa("52.109.12.6:443")).rtt(20.0))?;
    let t = m.wininet_send(t + 0.1, inet, &r, &mut c, (460, 0))?;
    let t = m.wininet_send_done(t + 20.0, inet, &r, Some(&mut c), ("HTTP/1.1 200 OK", 410))?;
    let t = m.wininet_read(t + 1.0, pool, &r, Some(&mut c), 2_048)?;
    m.wininet_close(t + 1.0, pool, &r)?;

    // The self-reposting callback.
    let (sequential, repost_thread) = (m.heap(pid), (pid, 9270));
    let tick = 0x7ff6_7a10_8d00;
    let first = mso(&m, 0x5_3c40, &[FIXTURE_SEND_RET])?;
    let again = mso(&m, 0x5_3c40, &[CHECKSUM_INLINED_MIX])?;
    m.office_post(400.0, ui, QueueKind::Sequential, (sequential, tick), &first)?;
    m.office_invoke_start(401.0, repost_thread, QueueKind::Sequential, sequential)?;
    let mut t = 401.0;
    for _ in 0..3 {
        m.office_callback(t + 0.01, repost_thread, sequential, tick)?;
        m.office_post(t + 0.5, repost_thread, QueueKind::Sequential, (sequential, tick), &again)?;
        t += 10.0;
    }
    m.office_callback(t + 0.01, repost_thread, sequential, tick)?;
    let dial = Dial::new(sa("52.113.194.132:443")).blocking().rtt(30.0);
    let t = download(&mut m, t + 0.5, repost_thread, &dial, 600)?;
    m.office_invoke_end(t + 0.5, repost_thread, QueueKind::Sequential, sequential)?;
    m.finish()
}

/// A benchmark load: `requests` connections by `loadgen.exe`, each from a
/// thread-pool work item that the main thread posted with its stack (four
/// pool threads take turns), so every request has a two-stack chain.
pub fn handoff_load(requests: u32) -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 6600, "loadgen.exe", r#""C:\Tools\loadgen.exe" --connections"#)?;
    map_fixture(&mut m, pid)?;
    let main = (pid, 6604);
    let stack = app_stack(&m, pid, TP_POST_WORK, &[BUILD_REQUEST_RET, FIXTURE_SEND_RET])?;
    let mut t = 10.0;
    for i in 0..requests {
        let pool = (pid, 6640 + 4 * (i % 4));
        let work = m.tp_work(pid, 0x7ffd_4a20_1130);
        m.tp_post(t, main, &work, &stack)?;
        let run = m.tp_run(t + 0.05, pool, &work)?;
        // A new server for each, so ports wrapping around never meet the same peer.
        let remote = format!("10.{}.{}.{}:443", 1 + i / 65_536 % 200, i / 256 % 256, i % 256);
        let dial = Dial::new(sa(&remote)).blocking().rtt(2.0);
        let done = download(&mut m, run + 0.05, pool, &dial, 4_096)?;
        m.tp_done(done + 0.05, pool, &work)?;
        // Each pool thread's item is done before its next one comes.
        t += 2.0;
    }
    m.finish()
}
