//! The names an event is shown with — provider, event, task, opcode, level,
//! keywords, channel — from its schema when there is one, else from what the
//! record and the built-in tables say.

use std::borrow::Cow;
use std::sync::Arc;

use nettrail_etl::extended::{ExtType, provider_traits_name};
use nettrail_etl::{Record, kernel, well_known};

use crate::schema::{EventSchema, Source, standard_level, standard_opcode};

/// Display names of one event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventNames<'a> {
    pub provider: Option<Cow<'a, str>>,
    pub event: Option<Cow<'a, str>>,
    pub task: Option<Cow<'a, str>>,
    pub opcode: Option<Cow<'a, str>>,
    pub level: Option<Cow<'a, str>>,
    pub channel: Option<Cow<'a, str>>,
    pub keywords: Vec<&'a str>,
}

impl<'a> EventNames<'a> {
    pub fn of(record: &Record<'a>, schema: Option<&'a Arc<EventSchema>>) -> EventNames<'a> {
        let traits =
            || record.extended.find(ExtType::PROV_TRAITS).and_then(|t| provider_traits_name(t.data)).map(Cow::Borrowed);
        let Some(schema) = schema else {
            let kernel_group = record.hook.and_then(kernel::group_name).map(Cow::Borrowed);
            return EventNames {
                provider: traits().or_else(|| well_known::provider_name(&record.provider).map(Cow::Borrowed)),
                event: None,
                opcode: if record.kind.is_event_header() {
                    standard_opcode(record.opcode).map(Cow::Borrowed)
                } else {
                    None
                },
                task: kernel_group,
                level: if record.kind.is_event_header() {
                    standard_level(record.level).map(Cow::Borrowed)
                } else {
                    None
                },
                channel: None,
                keywords: Vec::new(),
            };
        };
        let p = &schema.provider;
        let classic = record.hook.is_some() || record.kind.is_classic();
        // A kernel layout names its event class (shown as the task); the
        // provider is shown as the kernel group ("Windows Kernel/TcpIp").
        let kernel_layout = classic && schema.source == Source::Kernel;
        let own_name = (!kernel_layout).then_some(p.name.as_str()).filter(|n| !n.is_empty());
        let provider = own_name
            .map(Cow::Borrowed)
            .or_else(traits)
            .or_else(|| well_known::provider_name(&record.provider).map(Cow::Borrowed))
            .or_else(|| Some(p.name.as_str()).filter(|n| !n.is_empty()).map(Cow::Borrowed));
        EventNames {
            provider,
            event: schema.name.as_deref().map(Cow::Borrowed),
            task: schema.task.as_deref().map(Cow::Borrowed),
            opcode: schema
                .opcode
                .as_deref()
                .map(Cow::Borrowed)
                .or_else(|| (!classic).then(|| standard_opcode(record.opcode).map(Cow::Borrowed)).flatten()),
            level: if classic { None } else { p.level_name(record.level).map(Cow::Borrowed) },
            channel: p.channel_name(record.channel).map(Cow::Borrowed),
            keywords: p.keyword_names(record.keywords).collect(),
        }
    }
}
