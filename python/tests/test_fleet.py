"""A fleet of traces on a real distributed engine: a Dask `distributed`
cluster of worker processes maps `nettrail.open(path).requests()` over a
folder of traces and answers "bytes per process and server across all
traces" — the same answer DuckDB gives over the Parquet dataset that
`nettrail export FOLDER --format parquet` writes."""

import shutil

import duckdb
import pandas as pd
from dask.distributed import Client, LocalCluster

import nettrail
from conftest import SAMPLE, cli, corpus

FLEET = ["tx__KernelNetwork.etl", "tx__HTTP_Server.etl", "perfview__net.4.5.2.x86.etl", "perfview__net.4.5.x86.PerfViewData.etl"]


def bytes_per_process_and_server(path: str) -> pd.DataFrame:
    """One trace's part of the answer (runs on a worker)."""
    requests = nettrail.open(path).requests().to_pandas()
    requests["bytes"] = requests["bytes_sent"].fillna(0) + requests["bytes_received"].fillna(0)
    keys = ["process", "server"]
    return requests.groupby(keys, dropna=False)["bytes"].sum().reset_index()


def test_dask_over_the_traces_equals_duckdb_over_the_dataset(tmp_path):
    folder = tmp_path / "fleet"
    folder.mkdir()
    for name in FLEET:
        shutil.copy(corpus(name), folder / name)
    shutil.copy(SAMPLE, folder / "desktop.etl")
    paths = sorted(str(p) for p in folder.glob("*.etl"))

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            parts = client.gather(client.map(bytes_per_process_and_server, paths))
            workers = len(client.scheduler_info()["workers"])
    assert workers == 2
    dask_answer = (
        pd.concat(parts).groupby(["process", "server"], dropna=False)["bytes"].sum().reset_index()
    )

    dataset = tmp_path / "dataset"
    cli("export", str(folder), "--format", "parquet", "-o", str(dataset))
    duck_answer = duckdb.sql(
        f"""select process, server, sum(coalesce(bytes_sent, 0) + coalesce(bytes_received, 0)) as bytes
            from read_parquet('{dataset}/table=requests/*/*.parquet', hive_partitioning = true)
            group by process, server"""
    ).df()

    def as_dict(frame):
        return {(r.process if isinstance(r.process, str) else None, r.server if isinstance(r.server, str) else None): int(r.bytes) for r in frame.itertuples()}

    ours, theirs = as_dict(dask_answer), as_dict(duck_answer)
    assert ours == theirs
    assert len(ours) >= 8, ours
    assert ours[("WINWORD.EXE", "templates.office.example")] == 512 + 19695
