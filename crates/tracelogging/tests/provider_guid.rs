//! Provider GUIDs of names, against GUIDs that public sources give for
//! EventSource providers named without a GUID of their own.

use nettrail_tracelogging::provider_guid;

#[test]
fn eventsource_names_hash_to_their_published_guids() {
    // .NET's own tests assert these with EventSource.GetGuid.
    for (name, guid) in [
        ("Microsoft-System-Net-Sockets", "e03c0352-f9c9-56ff-0ea7-b94ba8cabc6b"),
        ("Microsoft-System-Net-Http", "bdd9a83e-1929-5482-0d73-2fe5e1c0e16d"),
        ("Microsoft-AspNetCore-Hosting", "9e620d2a-55d4-5ade-deb7-c26046d245a8"),
        // PerfView enables DiagnosticSource by this GUID; the corpus has its events.
        ("Microsoft-Diagnostics-DiagnosticSource", "adb401e1-5296-51f8-c125-5fda75826144"),
    ] {
        assert_eq!(provider_guid(name).to_string(), guid, "{name}");
        assert_eq!(provider_guid(&name.to_lowercase()).to_string(), guid, "{name} in lower case");
    }
}

#[test]
fn a_provider_that_declares_its_own_guid_is_not_its_name_hash() {
    // TplEventSource's attribute gives 2e5dba47-a3d2-4d16-8ee0-6671ffdcd7b5
    // (version nibble 4): enabling it by name would miss it.
    let declared = "2e5dba47-a3d2-4d16-8ee0-6671ffdcd7b5";
    assert_ne!(provider_guid("System.Threading.Tasks.TplEventSource").to_string(), declared);
}
