//! Providers registered on the machine (manifests and MOF classes), as TDH
//! lists them: how `Target::Registered(name)` becomes a GUID.
#![allow(unsafe_code)]

use nettrail_etl::Guid;
use windows_sys::Win32::Foundation::{ERROR_INSUFFICIENT_BUFFER, ERROR_SUCCESS};
use windows_sys::Win32::System::Diagnostics::Etw::TdhEnumerateProviders;

use super::{ControllerError, layout};

/// Every registered provider: (GUID, name). TraceLogging and EventSource
/// providers register nothing and are not listed (their GUID is the hash
/// of their name: `*Name` on the command line).
pub fn registered_providers() -> Result<Vec<(Guid, String)>, ControllerError> {
    let mut size = 0u32;
    let mut words: Vec<u64> = Vec::new();
    // The list can grow between the two calls: try again with the new size.
    for _ in 0..4 {
        let buffer = if words.is_empty() { std::ptr::null_mut() } else { words.as_mut_ptr().cast() };
        // SAFETY: `buffer` holds `size` bytes (null with size 0 on the first
        // call); TDH writes at most `size` bytes and stores the size it
        // needs in `size`.
        let code = unsafe { TdhEnumerateProviders(buffer, &mut size) };
        match code {
            ERROR_SUCCESS => return Ok(layout::provider_list(bytes_of(&words))),
            ERROR_INSUFFICIENT_BUFFER => words = vec![0u64; (size as usize).div_ceil(8)],
            _ => return Err(ControllerError::win32("TdhEnumerateProviders", "the registered providers", code)),
        }
    }
    Err(ControllerError::win32("TdhEnumerateProviders", "the registered providers", ERROR_INSUFFICIENT_BUFFER))
}

/// The GUID of the registered provider `name` (case-insensitive).
pub fn resolve_provider(name: &str) -> Result<Guid, ControllerError> {
    let list = registered_providers()?;
    layout::find_provider(&list, name).ok_or_else(|| ControllerError::UnknownProvider { name: name.to_string() })
}

/// The bytes of an 8-aligned buffer (ETW structures need the alignment).
pub(super) fn bytes_of(words: &[u64]) -> &[u8] {
    // SAFETY: the bytes lie inside `words`' allocation and live as long as
    // the borrow; u8 has no alignment and every bit pattern is valid.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), size_of_val(words)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buffers_read_as_their_little_endian_bytes() {
        let words = [0x0807_0605_0403_0201u64, 0x0a09];
        assert_eq!(bytes_of(&words)[..10], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert_eq!(bytes_of(&words).len(), 16);
        assert!(bytes_of(&[]).is_empty());
    }
}
