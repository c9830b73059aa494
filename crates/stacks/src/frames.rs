//! Addresses as frames people read: `tcpip.sys!TcpSendData+0x1a2` where a
//! symbol is known (with the functions inlined there before it, and the
//! source line when the PDB has one), `ws2_32.dll+0x4f21` where only the
//! module is, `managed!Namespace.Type.Method+0x12` for JIT-compiled code, and
//! the bare address where nothing is known.

use nettrail_decode::format::push_hex;

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
        // Built by hand: frames are rendered by the million, and the
        // formatting machinery was most of their time.
        self.texts(pid, address, at, |parts, offset| {
            let mut s = String::with_capacity(parts.iter().map(|p| p.len()).sum::<usize>() + 19);
            parts.iter().for_each(|p| s.push_str(p));
            if let Some(offset) = offset {
                push_hex(&mut s, offset);
            }
            out.push(s);
        });
    }

    /// The text of each frame [`Frames::frame`] makes of an address, given
    /// to `text` in parts: the strings to join, then a number to append in
    /// hex (`0x1a2`) if any. A writer of stacks by the thousand (`dump`)
    /// writes them out so, without making each frame's string.
    pub fn texts(&self, pid: u32, address: u64, at: u64, mut text: impl FnMut(&[&str], Option<u64>)) {
        if let Some(m) = self.modules.module(pid, address, at) {
            let rva = address - m.base;
            let named = self.symbols.functions(m, rva);
            if named.is_empty() {
                text(&[&m.name, "+"], Some(rva));
            } else {
                for f in named {
                    text(&[&m.name, "!", &f], None);
                }
            }
            return;
        }
        if let Some(method) = self.modules.method(pid, address, at) {
            text(&["managed!", &method.name, "+"], Some(address - method.start));
            return;
        }
        text(&[], Some(address));
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
