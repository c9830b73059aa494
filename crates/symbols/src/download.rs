//! Fetching a PDB from an HTTP symbol server into a local store.

use std::fs;
use std::io;
use std::path::Path;
use std::time::Duration;

use crate::Error;

/// No real PDB comes near this; a larger answer is not a PDB.
const MAX_PDB_BYTES: u64 = 4 << 30;

/// Downloads `url` to `into`, through a temporary name in the same folder so
/// an interrupted transfer never leaves a half file where a PDB is expected.
pub(crate) fn fetch(url: &str, into: &Path) -> Result<(), Error> {
    let failed = |reason: String| Error::Download { url: url.to_owned(), reason };
    let dir = into.parent().ok_or_else(|| failed("the cache path has no folder".to_owned()))?;
    fs::create_dir_all(dir).map_err(|e| Error::Io { path: dir.to_owned(), source: e })?;

    let config = ureq::Agent::config_builder();
    #[cfg(windows)]
    let config = config.tls_config(
        ureq::tls::TlsConfig::builder()
            .provider(ureq::tls::TlsProvider::NativeTls)
            .root_certs(ureq::tls::RootCerts::PlatformVerifier)
            .build(),
    );
    let agent: ureq::Agent = config
        .timeout_connect(Some(Duration::from_secs(20)))
        .timeout_global(Some(Duration::from_secs(30 * 60)))
        .http_status_as_error(false)
        .build()
        .into();
    let response = agent.get(url).call().map_err(|e| failed(e.to_string()))?;
    let status = response.status();
    if !status.is_success() {
        return Err(failed(format!("server answered {status}")));
    }
    let partial = into.with_extension("pdb-download");
    let mut reader = response.into_body().into_with_config().limit(MAX_PDB_BYTES).reader();
    let result = fs::File::create(&partial)
        .and_then(|mut file| io::copy(&mut reader, &mut file))
        .and_then(|_| fs::rename(&partial, into));
    result.map_err(|e| {
        // The partial file is useless; a failure to remove it changes nothing.
        let _ = fs::remove_file(&partial);
        failed(e.to_string())
    })
}
