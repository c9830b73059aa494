//! Addresses as frames people read: `tcpip.sys!TcpSendData+0x1a2` where a
//! symbol is known, `ws2_32.dll+0x4f21` where only the module is,
//! `managed!Namespace.Type.Method+0x12` for JIT-compiled code, and the bare
//! address where nothing is known.

use crate::modules::{Module, Modules};

/// Names a module-relative address (a PDB lookup, say); `None` when it cannot.
pub trait Symbols {
    fn function(&self, module: &Module, rva: u64) -> Option<String>;
}

/// No symbols: frames are `module+offset`.
#[derive(Debug, Default)]
pub struct NoSymbols;

impl Symbols for NoSymbols {
    fn function(&self, _: &Module, _: u64) -> Option<String> {
        None
    }
}

/// Renders the frames of one process's stacks.
#[derive(Debug)]
pub struct Frames<'a, S: Symbols> {
    pub modules: &'a Modules,
    pub symbols: &'a S,
}

impl<S: Symbols> Frames<'_, S> {
    /// One address of process `pid` at raw time `at`.
    pub fn frame(&self, pid: u32, address: u64, at: u64) -> String {
        if let Some(m) = self.modules.module(pid, address, at) {
            let rva = address - m.base;
            return match self.symbols.function(m, rva) {
                Some(f) => format!("{}!{f}", m.name),
                None => format!("{}+{rva:#x}", m.name),
            };
        }
        if let Some(method) = self.modules.method(pid, address, at) {
            return format!("managed!{}+{:#x}", method.name, address - method.start);
        }
        format!("{address:#x}")
    }

    /// A whole stack, innermost first.
    pub fn stack(&self, pid: u32, frames: &[u64], at: u64) -> Vec<String> {
        frames.iter().map(|&a| self.frame(pid, a, at)).collect()
    }
}
