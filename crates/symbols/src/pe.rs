//! The identity a PE image carries for its PDB, read from the image itself.
//!
//! Traces record the same facts (image load events and `DbgID_RSDS`); reading
//! them from a file lets tests and the trace synthesizer claim a real
//! module's identity.

use object::LittleEndian as LE;
use object::read::pe::{ImageNtHeaders, ImageOptionalHeader, PeFile, PeFile32, PeFile64};
use object::{FileKind, Object};

use crate::Error;
use crate::id::{Guid, PdbId};

/// What loaders and debuggers use to tell one build of an image from another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageIdentity {
    /// The COFF header's link time stamp (a content hash under `/Brepro`).
    pub time_date_stamp: u32,
    /// `SizeOfImage` from the optional header: the span the loader maps.
    pub size_of_image: u32,
    /// The preferred load address.
    pub image_base: u64,
    /// The CodeView RSDS record; `None` for images linked without debug info.
    pub debug: Option<DebugRecord>,
}

/// The CodeView RSDS record: which PDB the linker wrote for this image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebugRecord {
    /// The PDB path as the linker recorded it (often a full build path).
    pub pdb_path: String,
    pub guid: Guid,
    pub age: u32,
}

impl DebugRecord {
    /// The identity to look the PDB up by.
    pub fn pdb_id(&self) -> PdbId {
        PdbId::new(&self.pdb_path, self.guid, self.age)
    }
}

/// Reads the identity of a 32- or 64-bit PE image held in memory.
pub fn pe_identity(bytes: &[u8]) -> Result<ImageIdentity, Error> {
    match FileKind::parse(bytes) {
        Ok(FileKind::Pe32) => identity(&PeFile32::parse(bytes).map_err(bad_image)?),
        Ok(FileKind::Pe64) => identity(&PeFile64::parse(bytes).map_err(bad_image)?),
        Ok(other) => Err(Error::BadImage(format!("not a PE image but {other:?}"))),
        Err(error) => Err(bad_image(error)),
    }
}

fn identity<Pe: ImageNtHeaders>(file: &PeFile<'_, Pe>) -> Result<ImageIdentity, Error> {
    let headers = file.nt_headers();
    let optional = headers.optional_header();
    let debug = file.pdb_info().map_err(bad_image)?.map(|codeview| DebugRecord {
        pdb_path: String::from_utf8_lossy(codeview.path()).into_owned(),
        guid: Guid::from_le_bytes(codeview.guid()),
        age: codeview.age(),
    });
    Ok(ImageIdentity {
        time_date_stamp: headers.file_header().time_date_stamp.get(LE),
        size_of_image: optional.size_of_image(),
        image_base: optional.image_base(),
        debug,
    })
}

fn bad_image(error: object::Error) -> Error {
    Error::BadImage(error.to_string())
}
