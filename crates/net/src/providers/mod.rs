//! One module per provider: what its events mean for the network model
//! (`extract`, run in parallel on decoded events) and how each changes the
//! model (`Network::on_…`, applied in time order).

pub(crate) mod afd;
pub(crate) mod app;
pub(crate) mod chromium;
pub(crate) mod dns_client;
pub(crate) mod httpsys;
pub(crate) mod kernel_tcpip;
pub(crate) mod ldap;
pub(crate) mod nameres;
pub(crate) mod netlog;
pub(crate) mod office;
pub(crate) mod process;
pub(crate) mod quic;
pub(crate) mod tcpip;
pub(crate) mod threadpool;
pub(crate) mod urlmon;
pub(crate) mod webio;
pub(crate) mod winhttp;
pub(crate) mod wininet;

use nettrail_etl::{Guid, Record};

use crate::event::{Head, Props};
use crate::transport::Transport;

/// The providers the model reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    KernelProcess,
    KernelThread,
    KernelImage,
    KernelProcessProvider,
    KernelTcpIp,
    KernelUdpIp,
    KernelNetwork,
    Tcpip,
    Afd,
    DnsClient,
    NameRes,
    WinInet,
    WebIo,
    HttpService,
    Ldap,
    UrlMon,
    ThreadPool,
    WinHttp,
    OfficeThreadPool,
    OfficeDispatchQueue,
    OfficeEvents,
    /// Microsoft-Quic and Microsoft-Windows-WinQuic.
    Quic,
    /// A Chromium-based browser's trace events (which browser).
    Chromium(chromium::Browser),
}

const SOURCES: [(Guid, Source); 23] = [
    (Guid::parse_const("3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c"), Source::KernelProcess),
    (Guid::parse_const("3d6fa8d1-fe05-11d0-9dda-00c04fd7ba7c"), Source::KernelThread),
    (Guid::parse_const("2cb15d1d-5fc1-11d2-abe1-00a0c911f518"), Source::KernelImage),
    (Guid::parse_const("22fb2cd6-0e7b-422b-a0c7-2fad1fd0e716"), Source::KernelProcessProvider),
    (Guid::parse_const("9a280ac0-c8e0-11d1-84e2-00c04fb998a2"), Source::KernelTcpIp),
    (Guid::parse_const("bf3a50c5-a9c9-4988-a005-2df0b7c80f80"), Source::KernelUdpIp),
    (Guid::parse_const("7dd42a49-5329-4832-8dfd-43d979153a88"), Source::KernelNetwork),
    (Guid::parse_const("2f07e2ee-15db-40f1-90ef-9d7ba282188a"), Source::Tcpip),
    (Guid::parse_const("e53c6823-7bb8-44bb-90dc-3f86090d48a6"), Source::Afd),
    (Guid::parse_const("1c95126e-7eea-49a9-a3fe-a378b03ddb4d"), Source::DnsClient),
    (Guid::parse_const("55404e71-4db9-4deb-a5f5-8f86e46dde56"), Source::NameRes),
    (Guid::parse_const("43d1a55c-76d6-4f7e-995c-64c711e5cafe"), Source::WinInet),
    (Guid::parse_const("50b3e73c-9370-461d-bb9f-26f32d68887d"), Source::WebIo),
    (Guid::parse_const("dd5ef90a-6398-47a4-ad34-4dcecdef795f"), Source::HttpService),
    (Guid::parse_const("099614a5-5dd7-4788-8bc9-e29f43db28fc"), Source::Ldap),
    (Guid::parse_const("245f975d-909d-49ed-b8f9-9a75691d6b6b"), Source::UrlMon),
    (Guid::parse_const("c861d0e2-a2c1-4d36-9f9c-970bab943a12"), Source::ThreadPool),
    (Guid::parse_const("7d44233d-3055-4b9c-ba64-0d47ca40a232"), Source::WinHttp),
    (Guid::parse_const("a019725f-cff1-47e8-8c9e-8fe2635b6388"), Source::OfficeThreadPool),
    (Guid::parse_const("559a5658-8100-4d84-b756-0a47a476280c"), Source::OfficeDispatchQueue),
    (Guid::parse_const("8736922d-e8b2-47eb-8564-23e77e728cf3"), Source::OfficeEvents),
    (Guid::parse_const("ff15e657-4f26-570e-88ab-0796b258d11c"), Source::Quic),
    (Guid::parse_const("2bcfefe5-5026-536b-1686-b249cb49cae3"), Source::Quic),
];

/// Whether the model reads events of this provider (or kernel class).
pub fn reads(provider: &Guid) -> bool {
    source_of(provider).is_some()
}

/// Whether this provider's events name processes (process events, image loads).
pub fn names_processes(provider: &Guid) -> bool {
    matches!(source_of(provider), Some(Source::KernelProcess | Source::KernelProcessProvider | Source::KernelImage))
}

/// The model's reading of a record's provider (kernel records by event class).
pub(crate) fn source_of(provider: &Guid) -> Option<Source> {
    SOURCES
        .iter()
        .find(|(g, _)| g == provider)
        .map(|&(_, s)| s)
        .or_else(|| chromium::browser_of(provider).map(Source::Chromium))
}

/// One event's meaning for the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Body {
    Process(crate::processes::Event),
    KernelNet(kernel_tcpip::Event),
    Tcpip(tcpip::Event),
    Afd(afd::Event),
    DnsClient(dns_client::Event),
    NameRes(nameres::Event),
    WinInet(wininet::Event),
    WebIo(webio::Event),
    HttpSys(httpsys::Event),
    Ldap(ldap::Event),
    UrlMon(urlmon::Event),
    ThreadPool(threadpool::Event),
    Action(winhttp::Event),
    Office(office::Event),
    App(app::Event),
    Quic(quic::Event),
    /// Boxed: twice the size of the others, and every event is moved a few
    /// times on its way to the model.
    Chromium(Box<chromium::Event>),
    /// An event the model does not read, in an activity: counted as one of
    /// the activity's events, as `dump --activity` and the report list them.
    InActivity,
}

/// An event for the model: when, who, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NetEvent {
    pub head: Head,
    pub body: Body,
}

/// Events that start something a request can be traced back to (their
/// stack is kept): object creations, work queued, threads created.
pub(crate) fn starts_something(body: &Body) -> bool {
    use crate::processes::{Event as P, Lifetime};
    match body {
        Body::Afd(e) => e.is_create(),
        Body::WinInet(e) => matches!(e, wininet::Event::Created { .. } | wininet::Event::SendStart { .. }),
        Body::WebIo(e) => matches!(e, webio::Event::SessionCreate { .. } | webio::Event::RequestCreate { .. }),
        Body::Tcpip(e) => e.is_connect_request(),
        Body::Ldap(_) => true,
        Body::ThreadPool(e) => matches!(e, threadpool::Event::Queued(_) | threadpool::Event::TimerSet { .. }),
        Body::Action(e) => e.is_queue(),
        Body::Office(e) => e.queues_work(),
        Body::Quic(e) => e.is_create(),
        Body::Chromium(e) => e.starts_something(),
        Body::Process(P::Thread { lifetime: Lifetime::Started, .. }) => true,
        _ => false,
    }
}

/// For the kernel's transfer events: the transport the group says (none
/// for Kernel-Network, whose ids say it) and the code that says what
/// happened (a classic opcode, a Kernel-Network id).
pub(crate) fn kernel_transfer(source: Source, record: &Record<'_>) -> Option<(Option<Transport>, u16)> {
    match source {
        Source::KernelTcpIp => Some((Some(Transport::Tcp), u16::from(record.opcode))),
        Source::KernelUdpIp => Some((Some(Transport::Udp), u16::from(record.opcode))),
        Source::KernelNetwork => Some((None, record.id)),
        _ => None,
    }
}

/// What a decoded record means for the model, if anything. Classic records
/// are told apart by opcode, manifest ones by id.
pub(crate) fn extract(source: Source, record: &Record<'_>, props: &Props<'_, '_>) -> Option<Body> {
    let op = record.opcode;
    let id = record.id;
    Some(match source {
        Source::KernelProcess => Body::Process(process::extract_kernel_process(op, props)?),
        Source::KernelThread => Body::Process(process::extract_kernel_thread(op, props)?),
        Source::KernelImage => Body::Process(process::extract_kernel_image(op, props)?),
        Source::KernelProcessProvider => Body::Process(process::extract_kernel_process_provider(id, props)?),
        Source::KernelTcpIp | Source::KernelUdpIp | Source::KernelNetwork => {
            let (transport, code) = kernel_transfer(source, record)?;
            Body::KernelNet(kernel_tcpip::extract(transport, code, props)?)
        }
        Source::Tcpip => Body::Tcpip(tcpip::extract(id, props)?),
        Source::Afd => Body::Afd(afd::extract(id, props)?),
        Source::DnsClient => Body::DnsClient(dns_client::extract(id, props)?),
        Source::NameRes => Body::NameRes(nameres::extract(id, props)?),
        Source::WinInet => Body::WinInet(wininet::extract(id, props)?),
        Source::WebIo if id >= 59995 => Body::Action(winhttp::extract(id, props, true)?),
        Source::WebIo => Body::WebIo(webio::extract(id, props)?),
        Source::HttpService => Body::HttpSys(httpsys::extract(id, props)?),
        Source::Ldap => Body::Ldap(ldap::extract(id, props)?),
        Source::UrlMon => Body::UrlMon(urlmon::extract(id, props)?),
        Source::ThreadPool => Body::ThreadPool(threadpool::extract(op, props)?),
        Source::WinHttp => Body::Action(winhttp::extract(id, props, false)?),
        Source::OfficeThreadPool => Body::Office(office::extract_thread_pool(id, props)?),
        Source::OfficeDispatchQueue => Body::Office(office::extract_dispatch_queue(id, props)?),
        Source::OfficeEvents => Body::Office(office::extract_idle_manager(id, props)?),
        Source::Quic => Body::Quic(quic::extract(id, props)?),
        // Read with their TraceLogging names by `analyze`.
        Source::Chromium(_) => return None,
    })
}
