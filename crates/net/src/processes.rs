//! Which program a process id was at a given time, and which process a
//! thread belonged to: from the kernel's Process and Thread events (rundown at
//! the trace's start, starts and ends during it) and Microsoft-Windows-
//! Kernel-Process. Process and thread ids are reused, so every lookup is by
//! id *and* time.

use nettrail_decode::fasthash::FastMap;

use crate::event::Time;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    pub parent: Option<u32>,
    /// The image's file name (`chrome.exe`).
    pub image: String,
    pub command_line: Option<String>,
    /// `None` when it started before the trace (known from rundown).
    pub start: Option<Time>,
    pub end: Option<Time>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lifetime {
    /// Running when the trace began (rundown).
    Existing,
    Started,
    Ended,
}

/// A process or thread event, as the model needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    Process {
        lifetime: Lifetime,
        pid: u32,
        parent: Option<u32>,
        image: Option<String>,
        command_line: Option<String>,
    },
    Thread {
        lifetime: Lifetime,
        pid: u32,
        tid: u32,
    },
    /// An image loaded into a process (kernel Image group, Kernel-Process
    /// ImageLoad): its program's name where no process event gave one.
    Image {
        pid: u32,
        path: String,
    },
}

#[derive(Debug, Default)]
pub struct Processes {
    list: Vec<Process>,
    by_pid: FastMap<u32, Vec<usize>>,
    /// Thread id → (start, process id), oldest first.
    threads: FastMap<u32, Vec<(Option<Time>, u32)>>,
}

/// Two start events this close for one id describe one process.
const SAME_START: Time = 10_000_000;

/// Kernel names are cut at 15 characters; Kernel-Process names are whole.
fn same_image(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    long.to_ascii_lowercase().starts_with(&short.to_ascii_lowercase())
}

/// The file name of a path (`\Device\HarddiskVolume2\Windows\System32\svchost.exe` → `svchost.exe`).
fn file_name(path: &str) -> &str {
    path.rsplit(['\\', '/']).next().unwrap_or(path)
}

impl Processes {
    pub(crate) fn apply(&mut self, time: Time, event: Event) {
        match event {
            Event::Process { lifetime, pid, parent, image, command_line } => {
                let image = image.as_deref().map(file_name).map(str::to_string);
                match lifetime {
                    Lifetime::Existing | Lifetime::Started => {
                        let start = (lifetime == Lifetime::Started).then_some(time);
                        if let Some(i) = self.current(pid, time)
                            && self.list[i].end.is_none()
                        {
                            let p = &mut self.list[i];
                            let same = match (&image, lifetime) {
                                (Some(image), _) if !p.image.is_empty() => same_image(&p.image, image),
                                (_, Lifetime::Existing) => true,
                                _ => p.start.is_some_and(|s| time - s < SAME_START),
                            };
                            if same {
                                // Seen twice (kernel and Kernel-Process, or rundown
                                // repeated): complete it. The longer name wins, as the
                                // kernel cuts names at 15 characters.
                                if let Some(image) = image
                                    && image.len() > p.image.len()
                                {
                                    p.image = image;
                                }
                                p.parent = p.parent.or(parent);
                                p.command_line = p.command_line.take().or(command_line);
                                return;
                            }
                            // A new program under a live id: its end was lost.
                            p.end = Some(time);
                        }
                        self.list.push(Process {
                            pid,
                            parent,
                            image: image.unwrap_or_default(),
                            command_line,
                            start,
                            end: None,
                        });
                        self.by_pid.entry(pid).or_default().push(self.list.len() - 1);
                    }
                    Lifetime::Ended => match self.current(pid, time) {
                        Some(i) => {
                            let p = &mut self.list[i];
                            p.end.get_or_insert(time);
                            if p.image.is_empty()
                                && let Some(image) = image
                            {
                                p.image = image;
                            }
                        }
                        None => {
                            self.list.push(Process {
                                pid,
                                parent,
                                image: image.unwrap_or_default(),
                                command_line,
                                start: None,
                                end: Some(time),
                            });
                            self.by_pid.entry(pid).or_default().push(self.list.len() - 1);
                        }
                    },
                }
            }
            Event::Image { pid, path } => self.name_from_image(pid, time, &path),
            Event::Thread { lifetime, pid, tid } => {
                if lifetime == Lifetime::Ended {
                    return;
                }
                let start = (lifetime == Lifetime::Started).then_some(time);
                let entries = self.threads.entry(tid).or_default();
                if entries.last().is_none_or(|&(_, p)| p != pid) {
                    entries.push((start, pid));
                }
            }
        }
    }

    /// Names a process by the program (`.exe`) loaded into it, when no
    /// process event named it: traces without the Process group (a kernel
    /// logger with image loads only) still say which program each id was.
    fn name_from_image(&mut self, pid: u32, time: Time, path: &str) {
        let image = file_name(path);
        let is_program = image.len() > 4
            && image.is_char_boundary(image.len() - 4)
            && image[image.len() - 4..].eq_ignore_ascii_case(".exe");
        // Idle and System load the kernel and drivers, not programs of their own.
        if !is_program || pid <= 4 {
            return;
        }
        match self.current(pid, time) {
            Some(i) if self.list[i].end.is_none_or(|end| end >= time) => {
                let p = &mut self.list[i];
                if p.image.is_empty() {
                    p.image = image.to_string();
                }
            }
            _ => {
                self.list.push(Process {
                    pid,
                    parent: None,
                    image: image.to_string(),
                    command_line: None,
                    start: None,
                    end: None,
                });
                self.by_pid.entry(pid).or_default().push(self.list.len() - 1);
            }
        }
    }

    /// The process instance with this id at `time`: the latest one that
    /// started at or before it (rundown ones started before everything).
    fn current(&self, pid: u32, time: Time) -> Option<usize> {
        let candidates = self.by_pid.get(&pid)?;
        candidates
            .iter()
            .rev()
            .copied()
            .find(|&i| self.list[i].start.is_none_or(|s| s <= time))
            .or_else(|| candidates.first().copied())
    }

    /// The process that had this id at `time`.
    pub fn at(&self, pid: u32, time: Time) -> Option<&Process> {
        self.current(pid, time).map(|i| &self.list[i])
    }

    /// The image name of the process that had this id at `time`, if known.
    pub fn name(&self, pid: u32, time: Time) -> Option<&str> {
        if pid == 4 && self.at(pid, time).is_none_or(|p| p.image.is_empty()) {
            return Some("System");
        }
        if pid == 0 {
            return Some("Idle");
        }
        self.at(pid, time).map(|p| p.image.as_str()).filter(|s| !s.is_empty())
    }

    /// The process a thread belonged to at `time`.
    pub fn thread_owner(&self, tid: u32, time: Time) -> Option<u32> {
        let entries = self.threads.get(&tid)?;
        entries.iter().rev().find(|(start, _)| start.is_none_or(|s| s <= time)).or(entries.first()).map(|&(_, p)| p)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Process> {
        self.list.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reused_ids_resolve_by_time() {
        let mut p = Processes::default();
        let ev = |lifetime, image: &str| Event::Process {
            lifetime,
            pid: 100,
            parent: None,
            image: Some(image.to_string()),
            command_line: None,
        };
        p.apply(0, ev(Lifetime::Existing, "first.exe"));
        p.apply(50, ev(Lifetime::Ended, "first.exe"));
        p.apply(60, ev(Lifetime::Started, r"\Device\HarddiskVolume2\Windows\second.exe"));
        assert_eq!(p.name(100, 10), Some("first.exe"));
        assert_eq!(p.name(100, 70), Some("second.exe"));
        assert_eq!(p.name(4, 70), Some("System"));
        assert_eq!(p.name(7, 70), None);
        p.apply(0, Event::Thread { lifetime: Lifetime::Existing, pid: 100, tid: 8 });
        p.apply(65, Event::Thread { lifetime: Lifetime::Started, pid: 200, tid: 8 });
        assert_eq!(p.thread_owner(8, 10), Some(100));
        assert_eq!(p.thread_owner(8, 70), Some(200));
    }
}
