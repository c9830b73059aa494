//! Symbol-path strings as users copy them from WinDbg, WPA and `_NT_SYMBOL_PATH`.

use std::path::PathBuf;

use nettrail_symbols::{MICROSOFT_SYMBOL_SERVER, Store, SymbolPath, SymbolPathEntry};

fn folder(path: &str) -> SymbolPathEntry {
    SymbolPathEntry::Folder(PathBuf::from(path))
}

fn local(path: &str) -> Store {
    Store::Local(PathBuf::from(path))
}

#[test]
fn plain_folders_in_order_with_empty_elements_skipped() {
    let path = SymbolPath::parse(" /srv/pdbs ;;build/out; ");
    assert_eq!(path.entries(), [folder("/srv/pdbs"), folder("build/out")]);
    assert!(path.errors().is_empty());
}

#[test]
fn srv_with_cache_and_url() {
    let path = SymbolPath::parse(r"SRV*C:\Symbols*https://msdl.microsoft.com/download/symbols/");
    assert_eq!(
        path.entries(),
        [SymbolPathEntry::Server(vec![local(r"C:\Symbols"), Store::Http(MICROSOFT_SYMBOL_SERVER.to_owned())])]
    );
}

#[test]
fn keywords_ignore_case() {
    for text in ["srv*/c*http://sym.example", "Srv*/c*http://sym.example", "sRv*/c*HTTP://sym.example"] {
        let path = SymbolPath::parse(text);
        let [SymbolPathEntry::Server(stores)] = path.entries() else { panic!("{text}: {:?}", path.entries()) };
        assert_eq!(stores[0], local("/c"), "{text}");
        assert!(matches!(&stores[1], Store::Http(url) if url.eq_ignore_ascii_case("http://sym.example")), "{text}");
    }
    assert_eq!(SymbolPath::parse("CACHE*/c").entries(), [SymbolPathEntry::Cache(local("/c"))]);
}

#[test]
fn srv_with_url_only_and_with_empty_cache_element() {
    let url = "https://symbols.example.com/store";
    assert_eq!(
        SymbolPath::parse(&format!("srv*{url}")).entries(),
        [SymbolPathEntry::Server(vec![Store::Http(url.to_owned())])]
    );
    assert_eq!(
        SymbolPath::parse(&format!("srv**{url}")).entries(),
        [SymbolPathEntry::Server(vec![Store::DefaultCache, Store::Http(url.to_owned())])]
    );
}

#[test]
fn srv_with_local_store_only_is_a_cache_tree() {
    assert_eq!(SymbolPath::parse("srv*/var/symbols").entries(), [SymbolPathEntry::Server(vec![local("/var/symbols")])]);
}

#[test]
fn bare_srv_means_default_cache_and_microsoft() {
    // What `.symfix` writes.
    assert_eq!(
        SymbolPath::parse("srv*").entries(),
        [SymbolPathEntry::Server(vec![Store::DefaultCache, Store::Http(MICROSOFT_SYMBOL_SERVER.to_owned())])]
    );
}

#[test]
fn chains_of_several_stores() {
    let path = SymbolPath::parse(r"srv*/fast*\\share\symbols*https://a.example/sym");
    assert_eq!(
        path.entries(),
        [SymbolPathEntry::Server(vec![
            local("/fast"),
            local(r"\\share\symbols"),
            Store::Http("https://a.example/sym".to_owned())
        ])]
    );
}

#[test]
fn symsrv_dll_form() {
    let path = SymbolPath::parse("symsrv*symsrv.dll*/cache*https://msdl.microsoft.com/download/symbols");
    assert_eq!(
        path.entries(),
        [SymbolPathEntry::Server(vec![local("/cache"), Store::Http(MICROSOFT_SYMBOL_SERVER.to_owned())])]
    );
    let upper = SymbolPath::parse("SYMSRV*SYMSRV.DLL*/cache*https://msdl.microsoft.com/download/symbols");
    assert_eq!(upper.entries(), path.entries());
}

#[test]
fn cache_entries() {
    assert_eq!(SymbolPath::parse("cache*/tmp/c").entries(), [SymbolPathEntry::Cache(local("/tmp/c"))]);
    assert_eq!(SymbolPath::parse("cache*").entries(), [SymbolPathEntry::Cache(Store::DefaultCache)]);
}

#[test]
fn a_typical_nt_symbol_path() {
    let text = r"cache*/sym/cache;/build/pdbs;SRV*/sym/ms*https://msdl.microsoft.com/download/symbols;srv*https://symbols.nuget.org/download/symbols";
    let path = SymbolPath::parse(text);
    assert!(path.errors().is_empty(), "{:?}", path.errors());
    assert_eq!(
        path.entries(),
        [
            SymbolPathEntry::Cache(local("/sym/cache")),
            folder("/build/pdbs"),
            SymbolPathEntry::Server(vec![local("/sym/ms"), Store::Http(MICROSOFT_SYMBOL_SERVER.to_owned())]),
            SymbolPathEntry::Server(vec![Store::Http("https://symbols.nuget.org/download/symbols".to_owned())]),
        ]
    );
}

#[test]
fn unusable_entries_are_reported_and_the_rest_kept() {
    let text = "/good;foo*bar;symsrv*other.dll*/c*https://x.example;https://bare.example/sym;cache*/a*/b;symsrv*;srv**;/also/good";
    let path = SymbolPath::parse(text);
    assert_eq!(path.entries(), [folder("/good"), folder("/also/good")]);
    let bad: Vec<&str> = path.errors().iter().map(|e| e.entry.as_str()).collect();
    assert_eq!(
        bad,
        [
            "foo*bar",
            "symsrv*other.dll*/c*https://x.example",
            "https://bare.example/sym",
            "cache*/a*/b",
            "symsrv*",
            "srv**"
        ]
    );
    let first = path.errors()[0].to_string();
    assert!(first.contains("unknown keyword `foo`"), "{first}");
    assert!(path.errors()[1].reason.contains("other.dll"), "{}", path.errors()[1].reason);
}

#[test]
fn appending_keeps_order_across_sources() {
    // `--symbols` given twice, then the environment's path.
    let mut path = SymbolPath::parse("/first");
    path.append("/second;srv*/cache");
    path.extend(SymbolPath::parse("/from-env;bogus*x"));
    assert_eq!(
        path.entries(),
        [folder("/first"), folder("/second"), SymbolPathEntry::Server(vec![local("/cache")]), folder("/from-env"),]
    );
    assert_eq!(path.errors().len(), 1);
    assert!(!path.is_empty());
    assert!(SymbolPath::parse(" ; ").is_empty());
}
