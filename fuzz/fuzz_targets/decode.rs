//! Schema sources and payload decoding: TraceLogging metadata, embedded
//! TRACE_EVENT_INFO and EVENT_MAP_INFO blobs, manifest XML and EventSource
//! chunks; whatever schema comes out decodes the rest of the input.
#![no_main]
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use nettrail_decode::sources::event_info::EmbeddedMetadata;
use nettrail_decode::sources::eventsource::EventSourceManifests;
use nettrail_decode::sources::{manifest, tracelogging};
use nettrail_decode::{ProviderInfo, Source, format, payload};
use nettrail_etl::Guid;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let (meta, body) = rest.split_at(rest.len() / 2);
    let mut schemas = Vec::new();
    match mode % 4 {
        0 => {
            if let Ok(s) = tracelogging::parse(Arc::new(ProviderInfo::default()), meta) {
                schemas.push(Arc::new(s));
            }
        }
        1 => {
            let mut m = EmbeddedMetadata::new();
            let _ = m.add_event_info(meta);
            let _ = m.add_event_map_info(body);
            schemas.extend(m.finish().events.into_values());
        }
        2 => {
            if let Ok(files) = manifest::parse(&String::from_utf8_lossy(meta), Source::Manifest) {
                schemas.extend(files.into_iter().flat_map(|f| f.events.into_iter().map(|(_, s)| s)));
            }
        }
        _ => {
            let mut m = EventSourceManifests::new();
            for chunk in meta.chunks(64) {
                let _ = m.add_chunk(Guid::ZERO, chunk);
            }
            schemas.extend(m.finish().0.events.into_values());
        }
    }
    for schema in schemas.iter().take(16) {
        for pointer_size in [4, 8] {
            let mut values = Vec::new();
            let decoded = payload::decode(&schema.fields, body, pointer_size, &mut values);
            if let Some(verdict) = payload::decodes(&schema.fields, body, pointer_size) {
                assert_eq!(verdict, decoded.is_ok(), "{decoded:?}");
            }
            if decoded.is_ok() {
                let mut text = String::new();
                let mut json = Vec::new();
                for (field, value) in schema.fields.iter().zip(&values) {
                    format::text(field, value, pointer_size, &mut text);
                    format::json(field, value, pointer_size, &mut json);
                }
            }
        }
    }
});
