//! TraceLogging events of the corpus decode from the metadata they carry,
//! with names and values.

use nettrail_decode::{Schemas, Source, format};
use nettrail_etl::extended::ExtType;
use nettrail_etl::{Trace, TraceFile};
use nettrail_testkit::corpus_file;

/// Every TraceLogging event of a trace: (event name, [(field, text)]).
fn decode_all(name: &str) -> Vec<(String, Vec<(String, String)>)> {
    let file = TraceFile::open(corpus_file(name)).unwrap();
    let trace = Trace::parse(file.bytes()).unwrap();
    let schemas = Schemas::new();
    let mut stream = trace.events();
    let mut out = Vec::new();
    while let Some(e) = stream.next() {
        let e = e.unwrap();
        let mut values = Vec::new();
        if e.extended.find(ExtType::EVENT_SCHEMA_TL).is_none() {
            continue;
        }
        let schema = schemas.decode(&e.record, &mut values).unwrap_or_else(|why| panic!("{name}: {why}"));
        assert_eq!(schema.source, Source::TraceLogging);
        let fields = schema
            .fields
            .iter()
            .zip(&values)
            .map(|(f, v)| {
                let mut s = String::new();
                format::text(f, v, e.pointer_size, &mut s);
                (f.name.clone(), s)
            })
            .collect();
        out.push((schema.name.clone().unwrap_or_default(), fields));
    }
    out
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> &'a str {
    fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str()).unwrap_or_else(|| panic!("no field {name}"))
}

#[test]
fn primitive_types_match_perfview_except_where_perfview_errs() {
    let events = decode_all("perfview__primitive-types.etl");
    assert_eq!(events.len(), 5);
    // PerfView's baseline values; int64 as logged; GUID, FILETIME, SYSTEMTIME prefixes.
    let planets = [
        (
            "Mercury",
            "false",
            "M",
            "-51",
            "-102",
            "51",
            "102",
            -204i64,
            "204",
            "{0AD614C4-0EF4-4225-8",
            "2021-09-09T14:59:35.79",
            "2021-09-09T14:59:35.799",
        ),
        (
            "Venus",
            "true",
            "V",
            "-95",
            "-190",
            "95",
            "190",
            -380,
            "380",
            "{E04FF801-9EA3-494F-A",
            "2021-09-09T14:59:36.23",
            "2021-09-09T14:59:36.239",
        ),
        (
            "Earth",
            "false",
            "E",
            "-65",
            "-130",
            "65",
            "130",
            -260,
            "260",
            "{C7A6C80E-F2A6-4220-A",
            "2021-09-09T14:59:36.67",
            "2021-09-09T14:59:36.671",
        ),
        (
            "Mars",
            "false",
            "M",
            "-29",
            "-58",
            "29",
            "58",
            -116,
            "116",
            "{0A922CEE-67C1-4108-B",
            "2021-09-09T14:59:37.04",
            "2021-09-09T14:59:37.048",
        ),
        (
            "Jupiter",
            "true",
            "J",
            "-69",
            "-138",
            "69",
            "138",
            -276,
            "276",
            "{BB11B97B-1110-4EB6-B",
            "2021-09-09T14:59:37.48",
            "2021-09-09T14:59:37.484",
        ),
    ];
    for ((event, fields), p) in events.iter().zip(planets) {
        assert_eq!(event, "PrimitiveTypesTest");
        let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "string_type",
                "boolean_type",
                "char_type",
                "int16_type",
                "int32_type",
                "uint16_type",
                "uint32_type",
                "int64_type",
                "uint64_type",
                "guid_type",
                "file_time_type",
                "system_time_type"
            ]
        );
        let v: Vec<&str> = fields.iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!((v[0], v[1], v[3], v[4], v[5], v[6]), (p.0, p.1, p.3, p.4, p.5, p.6));
        // char_type is a u8 shown as a character (PerfView prints its number: 77 for 'M').
        assert_eq!(v[2], p.2);
        // The metadata types int64_type as UInt64 (in-type 10): TDH shows the
        // unsigned value; PerfView shows it signed.
        assert_eq!(v[7], (p.7 as u64).to_string());
        assert_eq!(v[8], p.8);
        assert!(v[9].starts_with(p.9), "{}", v[9]);
        assert!(v[10].starts_with(p.10), "{}", v[10]);
        // The SYSTEMTIME's milliseconds say .799 (etc.); PerfView shows .03.
        assert!(v[11].starts_with(p.11), "{}", v[11]);
    }
}

#[test]
fn every_tracelogging_event_of_the_corpus_decodes() {
    let amsi = decode_all("etlparser__AMSITrace.etl");
    assert_eq!(amsi.len(), 19);
    let (event, fields) = &amsi[0];
    assert_eq!(event, "AmsiScript");
    assert_eq!(field(fields, "Engine"), "VBScript");
    let script = "IWshShell3.Run(\"powershell.exe -nop -w 1 -enc RwBlAHQALQBBAGwAaQBhAHMA\", \"0\", \"true\");\r\n";
    assert_eq!(field(fields, "Script"), script);
    // A variable-count array of UTF-16 units typed as text is a string.
    assert_eq!(field(fields, "Raw Script"), script);

    let lx = decode_all("etlparser__lxcore_kernel.etl");
    assert_eq!(lx.len(), 2);
    assert_eq!(lx[0].0, "BreakPoint");
    assert_eq!(field(&lx[0].1, "Function"), "LxpDrvFsTypeMount");
    assert_eq!(field(&lx[0].1, "Line"), "10528");
    assert_eq!(field(&lx[0].1, "LxPid"), "-1");
    assert_eq!(field(&lx[1].1, "Function"), "LxpInstanceStart");

    let hw3d = decode_all("hw3d__trace.etl");
    assert_eq!(hw3d.len(), 1);
    assert_eq!((hw3d[0].0.as_str(), field(&hw3d[0].1, "nCmdShow")), ("WinMain", "10"));

    // EventSource self-describing event with a nested struct.
    let single = decode_all("perfview__SelfDescribingSingleEvent.etl");
    assert_eq!(single.len(), 1);
    assert_eq!((single[0].0.as_str(), field(&single[0].1, "a")), ("TestEvent", "{b: Hello, c: World!}"));

    let diag = decode_all("perfview__diaghub.user_paged.1.etl");
    assert_eq!(diag.len(), 256);
    assert_eq!(
        field(&diag[0].1, "Message"),
        "DiagnosticSource: Enabling 'SqlClientDiagnosticListener/Microsoft.Data.SqlClient.WriteCommandError'"
    );
}
