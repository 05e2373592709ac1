"""Logging through Fusilli's environment variables and the standard "fusilli" logger."""

from __future__ import annotations

import logging

from conftest import run_python

import fusilli as fs

CHILD = """
import fusilli as fs
g = fs.Graph(name="logged_graph")
x = g.tensor(name="x", dim=[1, 4, 6, 6])
w = g.tensor(name="w", dim=[8, 4, 3, 3])
y = g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv")
g.relu(y, name="relu").set_output(True)
g.compile(fs.Handle(fs.Backend.CPU))
print("DONE")
"""


def test_log_to_file_from_environment(tmp_path):
    log = tmp_path / "fusilli.log"
    proc = run_python(
        CHILD,
        {
            "FUSILLI_LOG_INFO": "1",
            "FUSILLI_LOG_FILE": str(log),
            "FUSILLI_CACHE_DIR": str(tmp_path / "cache"),
            "FUSILLI_DISABLE_CACHE": None,
        },
    )
    assert "DONE" in proc.stdout
    assert "[FUSILLI]" not in proc.stdout + proc.stderr  # it went to the file only
    text = log.read_text()
    assert "[FUSILLI] INFO:" in text
    assert "logged_graph" in text
    assert "torch.aten.convolution" in text and "func.func @main" in text  # the emitted MLIR
    assert "--iree-hal-target-device=local" in text and "--iree-llvmcpu-target-cpu=host" in text  # flags
    assert "cache miss" in text
    assert " ms" in text and "IREE compile took" in text  # timings


def test_log_to_stdout_from_environment(tmp_path):
    proc = run_python(
        CHILD, {"FUSILLI_LOG_INFO": "1", "FUSILLI_LOG_FILE": "stdout", "FUSILLI_CACHE_DIR": str(tmp_path)}
    )
    assert "[FUSILLI] INFO:" in proc.stdout and "cache miss" in proc.stdout
    assert "[FUSILLI]" not in proc.stderr


def test_logging_off(tmp_path):
    log = tmp_path / "off.log"
    for env in (
        {"FUSILLI_LOG_INFO": "0", "FUSILLI_LOG_FILE": str(log)},
        {"FUSILLI_LOG_INFO": "1", "FUSILLI_LOG_FILE": None},
    ):
        proc = run_python(CHILD, {**env, "FUSILLI_CACHE_DIR": str(tmp_path)})
        assert "[FUSILLI]" not in proc.stdout + proc.stderr
        assert not log.exists() or log.read_text() == ""


def test_standard_logger(caplog, cpu):
    caplog.set_level(logging.INFO, logger="fusilli")
    g = fs.Graph(name="std_logger")
    x = g.tensor(name="x", dim=[4])
    g.relu(x, name="r").set_output(True)
    g.compile(cpu)
    records = [r for r in caplog.records if r.name == "fusilli"]
    assert records and any("std_logger" in r.getMessage() for r in records)
    assert any("took" in r.getMessage() for r in records)


def test_errors_are_logged_at_debug(caplog):
    caplog.set_level(logging.DEBUG, logger="fusilli")
    try:
        fs.strides([1, 2], "XYZ")
    except fs.FusilliError:
        pass
    assert any("INVALID_ARGUMENT" in r.getMessage() for r in caplog.records if r.name == "fusilli")


def test_unusable_log_file_warns_and_logs_to_stderr(tmp_path):
    """A log file in a missing directory, or a directory, must not break ``import fusilli``."""
    for target in (tmp_path / "missing" / "f.log", tmp_path):
        proc = run_python(
            CHILD, {"FUSILLI_LOG_INFO": "1", "FUSILLI_LOG_FILE": str(target), "FUSILLI_CACHE_DIR": str(tmp_path / "c")}
        )
        assert "DONE" in proc.stdout
        assert f"WARNING: FUSILLI_LOG_FILE={str(target)!r} cannot be opened" in proc.stderr
        assert "[FUSILLI] INFO:" in proc.stderr and "logged_graph" in proc.stderr
