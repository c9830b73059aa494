//! Module identities: the GUID and age that tie an image to exactly one PDB.

use std::fmt::{self, Write as _};
use std::hash::{Hash, Hasher};
use std::str::FromStr;

/// A GUID kept in the byte order Windows writes it: `Data1`, `Data2` and
/// `Data3` little-endian, then the 8 bytes of `Data4`. RSDS debug entries,
/// the PDB info stream and ETW's `DbgID_RSDS` events all use this order, so
/// their bytes can be passed through unchanged.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Guid([u8; 16]);

impl Guid {
    /// Takes the 16 bytes as they lie in a file or event payload.
    pub const fn from_le_bytes(bytes: [u8; 16]) -> Self {
        Guid(bytes)
    }

    /// Builds a GUID from its four textual groups, as `{data1-data2-data3-data4}`.
    pub const fn from_fields(data1: u32, data2: u16, data3: u16, data4: [u8; 8]) -> Self {
        let d1 = data1.to_le_bytes();
        let d2 = data2.to_le_bytes();
        let d3 = data3.to_le_bytes();
        Guid([
            d1[0], d1[1], d1[2], d1[3], d2[0], d2[1], d3[0], d3[1], data4[0], data4[1], data4[2], data4[3], data4[4],
            data4[5], data4[6], data4[7],
        ])
    }

    /// The bytes in Windows' on-disk order (see the type's documentation).
    pub const fn to_le_bytes(self) -> [u8; 16] {
        self.0
    }

    /// The 16 bytes in the order the text form shows them (big-endian groups).
    fn text_order(self) -> [u8; 16] {
        let b = self.0;
        [b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]
    }
}

/// Prints the registry form without braces, upper case: `C77D2D78-2FDD-0653-4C4C-44205044422E`.
impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, byte) in self.text_order().iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{byte:02X}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{self}}}")
    }
}

/// Why a text was not a GUID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a GUID (expected 32 hex digits, optionally as {{8-4-4-4-12}})")]
pub struct ParseGuidError(String);

/// Accepts `8-4-4-4-12` with or without braces, and the 32 bare hex digits a
/// symbol store uses.
impl FromStr for Guid {
    type Err = ParseGuidError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || ParseGuidError(text.to_owned());
        let inner = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')).unwrap_or(text);
        let digits: Vec<u8> = if inner.len() == 36 {
            let groups: Vec<&str> = inner.split('-').collect();
            let lengths: Vec<usize> = groups.iter().map(|g| g.len()).collect();
            if lengths != [8, 4, 4, 4, 12] {
                return Err(error());
            }
            groups.concat().into_bytes()
        } else {
            inner.as_bytes().to_vec()
        };
        if digits.len() != 32 {
            return Err(error());
        }
        let mut text_order = [0u8; 16];
        for (slot, pair) in text_order.iter_mut().zip(digits.chunks_exact(2)) {
            let pair = std::str::from_utf8(pair).map_err(|_| error())?;
            *slot = u8::from_str_radix(pair, 16).map_err(|_| error())?;
        }
        let t = text_order;
        Ok(Guid([t[3], t[2], t[1], t[0], t[5], t[4], t[7], t[6], t[8], t[9], t[10], t[11], t[12], t[13], t[14], t[15]]))
    }
}

/// Which PDB a module needs: its file name, GUID and age, as the image's
/// RSDS debug entry (or the trace's `DbgID_RSDS` event) records them.
///
/// Names compare without regard to ASCII case, as on Windows: one trace may
/// spell the same PDB `NTDLL.pdb` and `ntdll.pdb`.
#[derive(Clone)]
pub struct PdbId {
    name: String,
    guid: Guid,
    age: u32,
}

impl PdbId {
    /// `pdb_path` is what the image records: a bare name or the full build
    /// path (`d:\build\x\ntdll.pdb`); only the file name is kept, because
    /// that is what symbol stores and folders are searched for.
    pub fn new(pdb_path: &str, guid: Guid, age: u32) -> Self {
        let name = pdb_path.rsplit(['\\', '/']).next().unwrap_or(pdb_path);
        PdbId { name: name.to_owned(), guid, age }
    }

    /// The PDB's file name, e.g. `ntdll.pdb`.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn guid(&self) -> Guid {
        self.guid
    }

    pub fn age(&self) -> u32 {
        self.age
    }

    /// The folder name a symbol store files this PDB under: the GUID as 32
    /// upper-case hex digits in text order, then the age in upper-case hex
    /// without leading zeros.
    pub fn store_key(&self) -> String {
        let mut key = String::with_capacity(40);
        for byte in self.guid.text_order() {
            let _ = write!(key, "{byte:02X}");
        }
        let _ = write!(key, "{:X}", self.age);
        key
    }
}

impl PartialEq for PdbId {
    fn eq(&self, other: &Self) -> bool {
        self.guid == other.guid && self.age == other.age && self.name.eq_ignore_ascii_case(&other.name)
    }
}

impl Eq for PdbId {}

impl Hash for PdbId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.guid.hash(state);
        self.age.hash(state);
        for byte in self.name.bytes() {
            state.write_u8(byte.to_ascii_lowercase());
        }
    }
}

impl fmt::Debug for PdbId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {{{}}} age {}", self.name, self.guid, self.age)
    }
}

/// `ntdll.pdb/<GUIDAGE>`, the form symbol tools print.
impl fmt::Display for PdbId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.name, self.store_key())
    }
}
