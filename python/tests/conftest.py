"""What the tests share: the nettrail binary (the reference every result is
compared with), the repository's sample and the shared corpus of real traces.
The Rust test `crates/cli/tests/python.rs` sets NETTRAIL_BIN."""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "sample.etl"
CORPUS = ROOT.parent / "shared" / "corpus"


def browser_trace() -> pathlib.Path:
    """A synthesized browser's trace (Chrome: HTTP/2, HTTP/3, its NetLog),
    written by the Rust test that runs this suite."""
    path = pathlib.Path(os.environ.get("NETTRAIL_BROWSER_TRACE", ROOT / "target" / "python-tests" / "browser-navigation.etl"))
    assert path.is_file(), f"the browser scenario's trace is missing: {path}"
    return path


def corpus(name: str) -> pathlib.Path:
    path = CORPUS / name
    assert path.is_file(), f"the shared corpus is missing: {path}"
    return path


def cli(*args: str) -> str:
    """Runs the nettrail binary; its stdout (exit code 0 or 2, a damaged trace)."""
    binary = os.environ.get("NETTRAIL_BIN") or str(ROOT / "target" / "debug" / "nettrail")
    done = subprocess.run([binary, *args], capture_output=True, text=True)
    assert done.returncode in (0, 2), done.stderr
    return done.stdout


def cli_rows(command: str, trace: pathlib.Path) -> list:
    return [json.loads(line) for line in cli(command, str(trace), "--format", "jsonl").splitlines()]


@pytest.fixture(scope="session")
def sample() -> pathlib.Path:
    return SAMPLE
