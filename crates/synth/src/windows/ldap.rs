//! Microsoft-Windows-LDAP-Client: wldap32.dll logs a search (30) in the
//! caller's thread, then sends the request on its socket (AFD's send on the
//! same thread).

use crate::fields;

use super::{Machine, Tid, spec};

/// LDAP search scopes (winldap.h): base, one level, subtree.
pub mod scope {
    pub const BASE: u32 = 0;
    pub const ONE_LEVEL: u32 = 1;
    pub const SUBTREE: u32 = 2;
}

impl Machine {
    /// ldap_search_ext: the search's event (30). The attribute list is
    /// written comma-separated (a choice: its form is not documented).
    pub fn ldap_search(
        &mut self,
        at: f64,
        th: Tid,
        (base, scope, filter): (&str, u32, &str),
        attributes: &[&str],
    ) -> Result<(), crate::SynthError> {
        let f = fields![
            ("ScopeOfSearch", scope),
            ("SearchFilter", filter),
            ("DistinguishedName", base),
            ("AttributeList", attributes.join(",")),
            ("ProcessId", th.0),
        ];
        self.user(spec("Microsoft-Windows-LDAP-Client", 30, at, th, f))
    }
}
