//! Processes, threads and modules of a scenario, and the classic kernel
//! payloads that describe them (Process v4, Thread v3, Image v3), encoded
//! from the kernel layouts. Addresses, keys and stamps that a scenario does
//! not care about are derived from ids and names, so a trace is the same
//! every time it is made.

use nettrail_etl::Guid;

use crate::encode::{EncodeError, encode};
use crate::fields;
use crate::value::Val;

/// A process of the scenario. Build with [`Process::new`] and the setters.
#[derive(Clone, Debug, PartialEq)]
pub struct Process {
    pub pid: u32,
    pub parent_pid: u32,
    /// The image file name as the kernel logs it (`chrome.exe`).
    pub image: String,
    pub command_line: String,
    /// 8 for a 64-bit process, 4 for a 32-bit (WOW64) one.
    pub pointer_size: u8,
    pub session_id: u32,
    /// The user, as `S-1-…`.
    pub user_sid: String,
    /// Where the executable lives (`C:\…`); derived from the command line
    /// or System32 when not given.
    pub image_path: Option<String>,
    /// Raw time when the process starts during the trace; `None` for one
    /// that exists when the trace starts.
    pub(crate) start: Option<u64>,
    pub(crate) end: Option<(u64, i32)>,
}

/// The user of processes a scenario does not give one: a local account.
pub const DEFAULT_USER_SID: &str = "S-1-5-21-2914367405-1734062119-3471869217-1001";
/// LocalSystem.
pub const SYSTEM_SID: &str = "S-1-5-18";

impl Process {
    /// A 64-bit process in session 1, run by a local user.
    pub fn new(pid: u32, parent_pid: u32, image: &str) -> Process {
        Process {
            pid,
            parent_pid,
            image: image.to_string(),
            command_line: image.to_string(),
            pointer_size: 8,
            session_id: 1,
            user_sid: DEFAULT_USER_SID.to_string(),
            image_path: None,
            start: None,
            end: None,
        }
    }

    pub fn command_line(mut self, command_line: &str) -> Process {
        self.command_line = command_line.to_string();
        self
    }

    /// A 32-bit process on 64-bit Windows: its events carry 32-bit headers and pointers.
    pub fn wow64(mut self) -> Process {
        self.pointer_size = 4;
        self
    }

    pub fn pointer_size(mut self, pointer_size: u8) -> Process {
        self.pointer_size = pointer_size;
        self
    }

    pub fn session(mut self, session_id: u32) -> Process {
        self.session_id = session_id;
        self
    }

    /// A service's process: session 0, LocalSystem unless `user_sid` says otherwise.
    pub fn service(mut self) -> Process {
        self.session_id = 0;
        self.user_sid = SYSTEM_SID.to_string();
        self
    }

    pub fn user_sid(mut self, sid: &str) -> Process {
        self.user_sid = sid.to_string();
        self
    }

    pub fn image_path(mut self, path: &str) -> Process {
        self.image_path = Some(path.to_string());
        self
    }

    /// The executable's path: given, else the command line's first word
    /// when it is absolute, else System32's (SysWOW64's for WOW64).
    pub fn executable(&self) -> String {
        if let Some(p) = &self.image_path {
            return p.clone();
        }
        let first = match self.command_line.strip_prefix('"') {
            Some(rest) => rest.split('"').next().unwrap_or_default(),
            None => self.command_line.split(' ').next().unwrap_or_default(),
        };
        if first.len() > 3 && first.as_bytes().get(1..3) == Some(b":\\") {
            return first.to_string();
        }
        let dir = if self.pointer_size == 4 { "SysWOW64" } else { "System32" };
        format!("C:\\Windows\\{dir}\\{}", self.image)
    }

    /// EPROCESS address: the kernel's key for the process.
    pub(crate) fn key(&self) -> u64 {
        0xffff_a804_0000_0080 | (stable_hash(&[u64::from(self.pid), 1]) & 0x0000_00ff_ffff_ff00)
    }
}

/// A module mapped in a process (or, with process id 0, in the kernel).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Module {
    /// `C:\…` (or already `\Device\…`, `\SystemRoot\…`).
    pub path: String,
    pub base: u64,
    pub size: u64,
    /// When it was loaded during the trace, and by which thread.
    pub(crate) load: Option<(u64, u32)>,
    /// The identity the merge records for it (ImageID and DbgID_RSDS).
    pub pdb: Option<PdbIdentity>,
}

/// What a PE's CodeView record says of its PDB, plus the PE's own
/// TimeDateStamp: the symbol-server key the merge logs for each image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PdbIdentity {
    pub time_date_stamp: u32,
    pub guid: Guid,
    pub age: u32,
    /// As the PE records it (often a full build path).
    pub pdb_name: String,
}

impl Module {
    pub fn new(path: &str, base: u64, size: u64) -> Module {
        Module { path: path.to_string(), base, size, load: None, pdb: None }
    }

    /// The module's PDB identity, logged with each of its image events.
    pub fn pdb(mut self, identity: PdbIdentity) -> Module {
        self.pdb = Some(identity);
        self
    }

    /// The file name (`ws2_32.dll`).
    pub fn file_name(&self) -> &str {
        self.path.rsplit(['\\', '/']).next().unwrap_or(&self.path)
    }

    /// The path as the kernel logs it: drive C: is `\Device\HarddiskVolume3`.
    pub fn kernel_path(&self) -> String {
        match self.path.get(..3) {
            Some(drive) if drive.eq_ignore_ascii_case("C:\\") => format!("{VOLUME}{}", &self.path[3..]),
            _ => self.path.clone(),
        }
    }

    /// The PE header's TimeDateStamp: the identity's, else one made up from the path.
    pub fn time_date_stamp(&self) -> u32 {
        match &self.pdb {
            Some(p) => p.time_date_stamp,
            None => 0x5000_0000 + ((self.name_hash() >> 24) & 0x0fff_ffff) as u32,
        }
    }

    fn name_hash(&self) -> u64 {
        stable_hash(&[self.path.bytes().fold(0u64, |h, b| h.wrapping_mul(131).wrapping_add(u64::from(b)))])
    }
}

/// The NT device of drive C: in the synthesized machine.
pub const VOLUME: &str = "\\Device\\HarddiskVolume3\\";

/// A thread of the scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Thread {
    pub pid: u32,
    pub tid: u32,
    /// Raw start time and the creating (process, thread); `None` for a thread
    /// that exists when the trace starts.
    pub start: Option<(u64, u32, u32)>,
    pub end: Option<u64>,
    pub name: String,
}

/// A small deterministic mix (splitmix64) for addresses and stamps.
pub(crate) fn stable_hash(parts: &[u64]) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for &p in parts {
        x ^= p;
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
    }
    x
}

/// STILL_ACTIVE: the exit status of a running process.
pub const STILL_ACTIVE: i32 = 259;
/// Process flags (v4): the process is WOW64, protected.
const FLAG_WOW64: u32 = 0x2;
const FLAG_PROTECTED: u32 = 0x4;

/// Process Start/End/DCStart/DCEnd payload (v4 layout).
pub(crate) fn process_payload(
    layout: &[nettrail_decode::Field],
    p: &Process,
    exit_status: i32,
) -> Result<Vec<u8>, EncodeError> {
    let kernel = p.pid == 0 || p.pid == 4;
    let flags = if p.pointer_size == 4 { FLAG_WOW64 } else { 0 } | if p.pid == 4 { FLAG_PROTECTED } else { 0 };
    let session = if kernel { u32::MAX } else { p.session_id };
    let dtb = 0x1aa000 + (stable_hash(&[u64::from(p.pid), 2]) & 0x3_ffff) * 0x1000;
    let values = fields![
        ("UniqueProcessKey", Val::Ptr(p.key())),
        ("ProcessId", p.pid),
        ("ParentId", p.parent_pid),
        ("SessionId", session),
        ("ExitStatus", exit_status),
        ("DirectoryTableBase", Val::Ptr(dtb)),
        ("Flags", flags),
        ("UserSID", p.user_sid.as_str()),
        ("ImageFileName", p.image.as_str()),
        ("CommandLine", if kernel { "" } else { p.command_line.as_str() }),
        ("PackageFullName", ""),
        ("ApplicationId", ""),
    ];
    encode(layout, &values, 8)
}

/// Thread Start/End/DCStart/DCEnd payload (v3 layout; `with_name` for
/// builds that log the thread's name).
pub(crate) fn thread_payload(
    layout: &[nettrail_decode::Field],
    t: &Thread,
    process_pointer_size: u8,
    with_name: bool,
) -> Result<Vec<u8>, EncodeError> {
    let h = stable_hash(&[u64::from(t.pid), u64::from(t.tid), 3]);
    let stack_base = 0xffff_f08a_0000_0000 | (h & 0x0000_0fff_ffff_0000);
    let (user_base, teb, start) = if t.pid == 0 || t.pid == 4 {
        (0, 0, 0xffff_f801_6b40_0000 + (h & 0xf_fff0))
    } else if process_pointer_size == 4 {
        (0x0100_0000 + (h & 0x00ff_0000), 0x0030_0000 + (h & 0xf_f000), 0x7700_0000 + (h & 0x00ff_fff0))
    } else {
        (
            0x0000_00a0_0000_0000 + (h & 0x0f_ffff_0000),
            0x0000_00b0_0000_0000 + (h & 0xf_f000),
            0x7ffc_0000_0000 + (h & 0xff_ffff_fff0),
        )
    };
    let layout = match layout.iter().position(|f| f.name == "ThreadName") {
        Some(i) if !with_name => &layout[..i],
        _ => layout,
    };
    let mut values = fields![
        ("ProcessId", t.pid),
        ("TThreadId", t.tid),
        ("StackBase", Val::Ptr(stack_base)),
        ("StackLimit", Val::Ptr(stack_base - 0x6000)),
        ("UserStackBase", Val::Ptr(user_base)),
        ("UserStackLimit", Val::Ptr(user_base.saturating_sub(if user_base == 0 { 0 } else { 0x8000 }))),
        ("Affinity", Val::Ptr(0xf)),
        ("Win32StartAddr", Val::Ptr(start)),
        ("TebBase", Val::Ptr(teb)),
        ("SubProcessTag", 0u32),
        ("BasePriority", 8u8),
        ("PagePriority", 5u8),
        ("IoPriority", 2u8),
        ("ThreadFlags", 0u8),
    ];
    if with_name {
        values = values.with("ThreadName", t.name.as_str());
    }
    encode(layout, &values, 8)
}

/// Image Load/UnLoad/DCStart/DCEnd payload (v3 layout). Kernel images
/// (process 0) have no default base and signature level 0, as logged.
pub(crate) fn image_payload(layout: &[nettrail_decode::Field], m: &Module, pid: u32) -> Result<Vec<u8>, EncodeError> {
    let h = m.name_hash();
    let (default_base, level, kind) = if pid == 0 {
        (0, 0u8, 1u8)
    } else if m.path.to_ascii_lowercase().contains("\\windows\\") {
        (m.base, 12, 1)
    } else {
        (m.base, 0, 0)
    };
    let values = fields![
        ("ImageBase", Val::Ptr(m.base)),
        ("ImageSize", Val::Ptr(m.size)),
        ("ProcessId", pid),
        ("ImageChecksum", (h & 0x00ff_ffff) as u32),
        ("TimeDateStamp", m.time_date_stamp()),
        ("SignatureLevel", level),
        ("SignatureType", kind),
        ("DefaultBase", Val::Ptr(default_base)),
        ("FileName", m.kernel_path()),
    ];
    encode(layout, &values, 8)
}

/// The DLLs the network APIs live in, mapped in every user process (at
/// fixed bases, as system DLLs are until reboot).
pub const NETWORK_DLLS: [&str; 7] =
    ["ws2_32.dll", "mswsock.dll", "winhttp.dll", "webio.dll", "wininet.dll", "dnsapi.dll", "wldap32.dll"];

/// The modules every process has mapped: its executable, the loader's DLLs
/// and the network DLLs (WOW64 processes also map the 64-bit loader and the
/// WOW64 layer).
pub(crate) fn default_modules(p: &Process) -> Vec<Module> {
    let h = stable_hash(&[u64::from(p.pid), 4]);
    let mut modules = Vec::new();
    if p.pointer_size == 4 {
        modules.push(Module::new(&p.executable(), 0x0040_0000 + (h & 0x0ff0_0000), 0x0010_0000));
        for (i, dll) in ["ntdll.dll", "kernel32.dll", "KernelBase.dll"].iter().enumerate() {
            modules.push(Module::new(
                &format!("C:\\Windows\\SysWOW64\\{dll}"),
                0x7700_0000 - 0x0100_0000 * i as u64,
                0x001a_0000,
            ));
        }
        for (i, dll) in NETWORK_DLLS.iter().enumerate() {
            let base = 0x7300_0000 + 0x0020_0000 * i as u64;
            modules.push(Module::new(&format!("C:\\Windows\\SysWOW64\\{dll}"), base, 0x0018_0000));
        }
        for (i, dll) in ["ntdll.dll", "wow64.dll", "wow64win.dll", "wow64cpu.dll"].iter().enumerate() {
            modules.push(Module::new(
                &format!("C:\\Windows\\System32\\{dll}"),
                0x7ffc_8c00_0000 - 0x0100_0000 * i as u64,
                0x0020_0000,
            ));
        }
    } else {
        modules.push(Module::new(&p.executable(), 0x7ff6_0000_0000 + (h & 0x0fff_0000), 0x0020_0000));
        for (i, dll) in ["ntdll.dll", "kernel32.dll", "KernelBase.dll"].iter().enumerate() {
            modules.push(Module::new(
                &format!("C:\\Windows\\System32\\{dll}"),
                0x7ffc_8c00_0000 - 0x0100_0000 * i as u64,
                0x001f_0000,
            ));
        }
        for (i, dll) in NETWORK_DLLS.iter().enumerate() {
            let base = 0x7ffc_8800_0000 - 0x0100_0000 * i as u64;
            modules.push(Module::new(&format!("C:\\Windows\\System32\\{dll}"), base, 0x001f_0000));
        }
    }
    modules
}

/// The kernel's own images, mapped in process 0, named as the kernel names them.
pub(crate) fn kernel_modules() -> Vec<Module> {
    let images: [(&str, u64); 7] = [
        ("system32\\ntoskrnl.exe", 0x0104_6000),
        ("system32\\hal.dll", 0x0009_6000),
        ("System32\\drivers\\NETIO.SYS", 0x0008_4000),
        ("System32\\drivers\\ndis.sys", 0x0013_5000),
        ("System32\\drivers\\tcpip.sys", 0x002e_7000),
        ("System32\\drivers\\afd.sys", 0x000a_2000),
        ("System32\\drivers\\HTTP.sys", 0x0016_9000),
    ];
    let mut base = 0xffff_f801_6aa0_0000u64;
    images
        .iter()
        .map(|(name, size)| {
            let m = Module::new(&format!("\\SystemRoot\\{name}"), base, *size);
            base += (size + 0xf_ffff) & !0xf_ffff;
            m
        })
        .collect()
}
