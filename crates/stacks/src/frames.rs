//! Addresses as frames people read: `tcpip.sys!TcpSendData+0x1a2` where a
//! symbol is known (with the functions inlined there before it, and the
//! source line when the PDB has one), `ws2_32.dll+0x4f21` where only the
//! module is, `managed!Namespace.Type.Method+0x12` for JIT-compiled code, and
//! the bare address where nothing is known.

use crate::modules::{Module, Modules};

/// Names a module-relative address (a PDB lookup, say).
pub trait Symbols {
    /// The function at `rva` and those inlined into it at that address,
    /// innermost first, each rendered without the module name
    /// (`TcpSendData+0x1a2`); empty when the address cannot be named.
    fn functions(&self, module: &Module, rva: u64) -> Vec<String>;
}

/// No symbols: frames are `module+offset`.
#[derive(Debug, Default)]
pub struct NoSymbols;

impl Symbols for NoSymbols {
    fn functions(&self, _: &Module, _: u64) -> Vec<String> {
        Vec::new()
    }
}

/// Renders the frames of one process's stacks.
#[derive(Debug)]
pub struct Frames<'a, S: Symbols> {
    pub modules: &'a Modules,
    pub symbols: &'a S,
}

impl<S: Symbols> Frames<'_, S> {
    /// One address of process `pid` at raw time `at`: one frame, or several
    /// where the compiler inlined functions into the one at that address.
    pub fn frame(&self, pid: u32, address: u64, at: u64, out: &mut Vec<String>) {
        if let Some(m) = self.modules.module(pid, address, at) {
            let rva = address - m.base;
            let named = self.symbols.functions(m, rva);
            if named.is_empty() {
                out.push(format!("{}+{rva:#x}", m.name));
            } else {
                out.extend(named.into_iter().map(|f| format!("{}!{f}", m.name)));
            }
            return;
        }
        if let Some(method) = self.modules.method(pid, address, at) {
            out.push(format!("managed!{}+{:#x}", method.name, address - method.start));
            return;
        }
        out.push(format!("{address:#x}"));
    }

    /// A whole stack, innermost first.
    pub fn stack(&self, pid: u32, frames: &[u64], at: u64) -> Vec<String> {
        let mut out = Vec::with_capacity(frames.len());
        for &a in frames {
            self.frame(pid, a, at, &mut out);
        }
        out
    }
}
