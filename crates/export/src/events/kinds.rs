//! What the events of one kind share — names, header fields, the schema's
//! property keys — rendered once a chunk: a chunk holds few kinds of event,
//! and rendering them for every event was most of the text formats' time.

use std::sync::Arc;

use nettrail_decode::EventSchema;
use nettrail_decode::fasthash::FastMap;
use nettrail_etl::HeaderKind;
use nettrail_etl::extended::{ExtType, provider_traits_name};
use nettrail_etl::record::KernelHook;

use super::view::View;

/// Each kind's rendering, `T`, for one chunk.
pub struct Kinds<T> {
    kinds: FastMap<Key, Kind<T>>,
}

impl<T> Default for Kinds<T> {
    fn default() -> Self {
        Kinds { kinds: FastMap::default() }
    }
}

struct Kind<T> {
    /// Part of the key: the provider's name in the record's traits
    /// (TraceLogging), which the names may be made from.
    traits: Option<String>,
    /// Held, so that the key's address cannot be another schema's while the
    /// entry lives.
    _schema: Option<Arc<EventSchema>>,
    rendered: T,
}

/// The record's fields that [`EventNames::of`](nettrail_decode::EventNames::of)
/// reads or a header shows, and the schema (the provider's traits are the
/// rest of the key).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key {
    provider: nettrail_etl::Guid,
    keywords: u64,
    schema: *const EventSchema,
    hook: Option<KernelHook>,
    kind: HeaderKind,
    id: u16,
    task: u16,
    version: u8,
    opcode: u8,
    level: u8,
    channel: u8,
}

impl std::hash::Hash for Key {
    /// What tells a chunk's kinds apart, folded into one word (hashing
    /// every field, one at a time, was most of a lookup's cost).
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let guid = u128::from_le_bytes(self.provider.to_bytes_le());
        let small = u64::from(self.id) | u64::from(self.opcode) << 16 | u64::from(self.version) << 24;
        state.write_u64(guid as u64 ^ (guid >> 64) as u64 ^ self.keywords ^ self.schema as u64 ^ small << 32);
    }
}

impl<T> Kinds<T> {
    /// The rendering of the event's kind, made by `render` on its first event.
    pub fn of(&mut self, v: &View<'_, '_>, render: impl FnOnce(&View<'_, '_>) -> T) -> &T {
        let e = v.event;
        let schema = v.schema.ok();
        let key = Key {
            provider: e.provider,
            keywords: e.keywords,
            schema: schema.map_or(std::ptr::null(), Arc::as_ptr),
            hook: e.hook,
            kind: e.kind,
            id: e.id,
            task: e.task,
            version: e.version,
            opcode: e.opcode,
            level: e.level,
            channel: e.channel,
        };
        let traits = e.extended.find(ExtType::PROV_TRAITS).and_then(|t| provider_traits_name(t.data));
        match self.kinds.entry(key) {
            std::collections::hash_map::Entry::Occupied(mut found) => {
                if found.get().traits.as_deref() != traits {
                    *found.get_mut() =
                        Kind { traits: traits.map(str::to_owned), _schema: schema.cloned(), rendered: render(v) };
                }
                &found.into_mut().rendered
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                let kind = Kind { traits: traits.map(str::to_owned), _schema: schema.cloned(), rendered: render(v) };
                &slot.insert(kind).rendered
            }
        }
    }
}
