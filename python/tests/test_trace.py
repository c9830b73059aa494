"""nettrail.open(...) gives what the nettrail binary gives, on the sample and
on real traces: the same facts, the same rows with the same values, the same
events; the tables have the Parquet export's columns and types."""

import datetime
import json
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import nettrail
from conftest import SAMPLE, browser_trace, cli, cli_rows, corpus

TRACES = [
    SAMPLE,
    corpus("tx__KernelNetwork.etl"),
    corpus("tx__HTTP_Server.etl"),
    corpus("perfview__net.4.5.2.x86.etl"),
    browser_trace(),
]
TABLES = [
    ("requests", "requests"),
    ("connections", "connections"),
    ("dns", "dns"),
    ("http_server", "http-server"),
    ("browser", "browser"),
]


def cli_time(text):
    return datetime.datetime.strptime(text[:26], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
@pytest.mark.parametrize("table,command", TABLES)
def test_tables_equal_the_cli(path, table, command):
    ours = getattr(nettrail.open(path), table)().to_pylist()
    theirs = cli_rows(command, path)
    assert len(ours) == len(theirs)
    for mine, cli_row in zip(ours, theirs):
        assert mine.pop("trace") == path.stem
        assert set(mine) == set(cli_row)
        for key, value in cli_row.items():
            got = mine[key]
            if key == "start_utc":
                # Microseconds in Parquet and Arrow; 100 ns in the text.
                assert got == cli_time(value), key
            elif isinstance(value, float):
                assert got == pytest.approx(value, abs=1e-6), key
            else:
                assert got == value, (key, got, value)


def test_info_is_the_cli_json():
    for path in TRACES:
        ours = nettrail.open(path).info()
        theirs = json.loads(cli("info", "--format", "json", str(path)))
        assert ours == theirs


def test_events_are_the_dump_objects():
    trace = nettrail.open(SAMPLE)
    ours = list(trace.events())
    theirs = [json.loads(line) for line in cli("dump", str(SAMPLE)).splitlines()]
    assert ours == theirs
    tcp = list(trace.events(provider="Microsoft-Windows-TCPIP", ids=[1033]))
    assert [e["properties"]["RemoteAddress"] for e in tcp] == ["93.184.216.34:443", "52.109.8.19:443", "10.0.0.10:389"]
    later = list(trace.events(since="+3"))
    assert later and all(e["timestamp"] >= "2026-01-15T09:30:03" for e in later)
    # Stopping early stops the reading thread.
    first = next(iter(nettrail.open(corpus("perfview__net.4.5.x86.PerfViewData.etl")).events()))
    assert first["kind"] == "SYSTEM64"


def test_events_table_counts_every_event():
    trace = nettrail.open(corpus("tx__KernelNetwork.etl"))
    table = trace.events_table()
    assert table.num_rows == trace.info()["events"]
    assert table.schema.field("time_utc").type == pa.timestamp("us", tz="UTC")
    assert table.column_names[0] == "trace"


def test_types_are_the_parquet_exports(tmp_path):
    dataset = tmp_path / "dataset"
    cli("export", str(SAMPLE), "--format", "parquet", "-o", str(dataset))
    trace = nettrail.open(SAMPLE)
    for table, _ in TABLES:
        ours = getattr(trace, table)().schema
        parquet = pq.read_schema(dataset / f"table={table}" / "trace=sample" / "part-0.parquet")
        assert ours.names == parquet.names, table
        for name in ours.names:
            assert ours.field(name).type == parquet.field(name).type, (table, name)
    parquet = pq.read_schema(dataset / "table=events" / "trace=sample" / "part-0.parquet")
    assert trace.events_table().schema.names == parquet.names


def test_stacks_are_the_cli_stacks():
    trace = nettrail.open(SAMPLE)
    row = [r for r in cli_rows("requests", SAMPLE) if r["layer"] == "WinINet"][0]
    stacks = trace.stacks(row["request"])
    theirs = json.loads(cli("requests", str(SAMPLE), "--stacks", "first,last", "--format", "jsonl").splitlines()[row["request"] - 1])
    assert stacks["first"] == theirs["first_stack"]
    assert stacks["last"] == theirs["last_stack"]
    assert [step["thread"] for step in stacks["chain"]] == [5634, 5690]
    with pytest.raises(IndexError):
        trace.stacks(10_000)


def test_report_is_written(tmp_path):
    out = nettrail.open(SAMPLE).report(tmp_path / "sample.html")
    page = (tmp_path / "sample.html").read_text()
    assert out.endswith("sample.html")
    assert "templates.office.example" in page and "<script" in page


def test_errors_carry_file_offset_and_reason(tmp_path):
    text = tmp_path / "notes.etl"
    text.write_text("not a trace\n")
    with pytest.raises(nettrail.TraceError) as e:
        nettrail.open(text)
    assert e.value.path == str(text)
    assert e.value.offset is None
    assert e.value.reason == 'not an .etl trace: a text file; it begins "not a trace"'
    cut = tmp_path / "cut.etl"
    cut.write_bytes(corpus("tx__KernelNetwork.etl").read_bytes()[: 0x80100])
    trace = nettrail.open(cut)
    damage = trace.damage()
    assert len(damage) == 2 and "file ends inside a buffer" in damage[0]
    assert trace.connections().num_rows > 0, "what was read before the damage"


def test_the_gil_is_released_while_rust_works():
    trace = nettrail.open(corpus("perfview__net.4.5.x86.PerfViewData.etl"))
    started = threading.Event()

    def work():
        started.set()
        trace.info()

    worker = threading.Thread(target=work)
    worker.start()
    started.wait()
    ticks = 0
    while worker.is_alive():
        ticks += 1
    worker.join()
    # While Rust counted 186 000 events this thread ran on.
    assert ticks > 1000, ticks


def test_a_browsers_urls_and_quic():
    trace = nettrail.open(browser_trace())
    requests = [r for r in trace.requests().to_pylist() if r["layer"] == "Chromium"]
    assert [r["protocol"] for r in requests] == ["HTTP/2", "HTTP/2", "HTTPS", "HTTP/3"]
    quic = [c for c in trace.connections().to_pylist() if c["protocol"] == "QUIC"]
    assert [(c["server"], c["connection_id"], c["streams"]) for c in quic] == [("api.example.com", "8c1e5a2b7f903d46", 1)]
    browser = trace.browser().to_pylist()
    assert {r["kind"] for r in browser} == {"region", "event", "netlog"}
    assert [r["join"] for r in browser if r["name"] == "URL_REQUEST"] == ["endpoint"] * 3
