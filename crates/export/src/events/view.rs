//! One event as the formats see it: the record, its schema (or why there is
//! none), its decoded values and its names.

use std::cell::OnceCell;
use std::sync::Arc;

use nettrail_decode::{EventNames, EventSchema, Undecoded, Value, message};
use nettrail_etl::Event;

#[derive(Debug)]
pub struct View<'v, 'a> {
    pub event: &'v Event<'a>,
    pub schema: Result<&'v Arc<EventSchema>, &'v Undecoded>,
    pub values: &'v [Value<'a>],
    /// Made when first asked for: JSON lines ask only for an event kind's
    /// first event.
    pub names: &'v OnceCell<EventNames<'v>>,
    /// The event's time as FILETIME (UTC).
    pub filetime: i64,
    /// The event's call stack, innermost frame first, as a JSON array.
    pub stack: Option<std::borrow::Cow<'v, str>>,
}

impl<'v> View<'v, '_> {
    /// The event's display names.
    pub fn names(&self) -> &EventNames<'v> {
        self.names.get_or_init(|| EventNames::of(&self.event.record, self.schema.ok()))
    }

    /// The rendered message, if the schema has one.
    pub fn message(&self) -> Option<String> {
        let schema = self.schema.ok()?;
        let template = schema.message.as_deref()?;
        let mut out = String::with_capacity(template.len() + 32);
        message::render(template, &schema.fields, self.values, self.event.pointer_size, &mut out);
        Some(out)
    }

    /// (field, value) pairs of the decoded properties.
    pub fn properties(&self) -> impl Iterator<Item = (&nettrail_decode::Field, &Value<'_>)> {
        let fields = self.schema.map(|s| s.fields.as_slice()).unwrap_or_default();
        fields.iter().zip(self.values)
    }
}
