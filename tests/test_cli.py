"""The `jaxmetrics` command as a user runs it, in a subprocess: every failure is one line on
stderr and an exit status (2 for the user's input, 1 for an internal error, 130 for Ctrl-C),
never a traceback.

The error cases stop before any computation, so they are cheap; they run a few at a time. More
cases of bad input, run in-process, are in test_report.py.
"""

import concurrent.futures
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

import jaxmetrics

ROOT = Path(__file__).resolve().parents[1]
COMMAND = [sys.executable, "-m", "jaxmetrics.report.cli"]


def environment(**changes):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAXMETRICS_", "XDG_"))}
    env.setdefault("JAXMETRICS_NO_CACHE", "1")  # never touch the real ~/.cache
    env.update(changes)
    return {k: v for k, v in env.items() if v is not None}


def run(*args, cwd=None, env=None, timeout=120):
    return subprocess.run(
        [*COMMAND, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env or environment(),
        timeout=timeout,
    )


def one_line(result):
    """The single stderr line of a failed run (asserting that there is exactly one)."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip("\n").split("\n")
    assert len(lines) == 1, result.stderr
    return lines[0]


# ------------------------------------------------------------------------- the error cases


def _npz_2d(folder):
    np.savez(folder / "data.npz", y=np.array([0, 1] * 5), s=np.zeros((10, 2)))


def _npz_lengths(folder):
    np.savez(folder / "data.npz", y=np.array([0, 1] * 5), s=np.zeros(9))


def _npy_renamed(folder):
    np.save(folder / "data.npy", np.zeros(10))
    (folder / "data.npy").rename(folder / "data.npz")


def _npz_truncated(folder):
    np.savez(folder / "whole.npz", y=np.array([0, 1] * 50), s=np.linspace(0, 1, 100))
    data = (folder / "whole.npz").read_bytes()
    (folder / "data.npz").write_bytes(data[: len(data) // 2])
    assert not zipfile.is_zipfile(folder / "data.npz")


CSV = "y,s\n1,0.9\n0,0.2\n1,0.7\n0,0.4\n"
LONG = "x" * 200_000  # longer than the csv module's default field limit (131,072)
SCORE = ["data.csv", "--label", "y", "--score", "s"]
NPZ = ["data.npz", "--label", "y", "--score", "s"]
# name: (file content, or a function making files in the folder; arguments; parts of the line)
ERRORS = {
    "score overflows float32": (
        "y,s\n1,0.9\n0,1e39\n",
        SCORE,
        ["data.csv: column 's', line 3: score '1e39' overflows float32"],
    ),
    "duplicated column": (
        "y,s,s\n1,0.9,0.1\n0,0.2,0.3\n",
        SCORE,
        ["data.csv: column 's' appears 2 times in the header (fields 2, 3)"],
    ),
    "npz 2-d array": (_npz_2d, NPZ, ["data.npz: array 's' has shape (10, 2)"]),
    "npz lengths differ": (_npz_lengths, NPZ, ["data.npz: columns have different lengths", "9"]),
    "npy renamed npz": (_npy_renamed, NPZ, ["data.npz: holds a single array (.npy)"]),
    "npz truncated": (_npz_truncated, NPZ, ["data.npz: not a readable .npz file"]),
    "threshold nan": (CSV, [*SCORE, "--threshold", "nan"], ["argument --threshold", "'nan'"]),
    "negative cost": (
        CSV,
        [*SCORE, "--cost-fp", "-1", "--cost-fn", "1"],
        ["argument --cost-fp: a cost must be >= 0"],
    ),
    "nan cost": (CSV, [*SCORE, "--cost-fp", "1", "--cost-fn", "nan"], ["argument --cost-fn"]),
    "seed beyond 64 bits": (CSV, [*SCORE, "--seed", str(2**64)], ["argument --seed", "2**64"]),
    "negative seed": (CSV, [*SCORE, "--seed", "-1"], ["argument --seed"]),
    "long text field": (
        f"y,s\n1,0.9\n0,{LONG}\n",
        SCORE,
        ["data.csv: column 's', line 3: score 'xxx", "(200000 characters) is not a number"],
    ),
    "blank label with --positive": (
        "y,s\nsick,0.9\nwell,0.2\n,0.5\n",
        [*SCORE, "--positive", "sick"],
        ["data.csv: column 'y', line 4: label is missing"],
    ),
    "json folder missing": (
        CSV,
        [*SCORE, "--json", "nowhere/out.json"],
        ["--json nowhere/out.json: nowhere does not exist"],
    ),
    "json folder is a file": (
        CSV,
        [*SCORE, "--json", "data.csv/out.json"],
        ["--json data.csv/out.json: data.csv is not a directory"],
    ),
    "blank cluster cell": (
        "id,y,s\na,1,0.9\nb,0,0.2\n,1,0.7\nd,0,0.4\n",
        [*SCORE, "--cluster", "id"],
        ["data.csv: column 'id' has a blank cell (data row 3)"],
    ),
    "cluster column missing": (CSV, [*SCORE, "--cluster", "id"], ["data.csv: no column 'id'"]),
    "cluster is the label": (
        CSV,
        [*SCORE, "--cluster", "y"],
        ["--cluster 'y' is the label column"],
    ),
    "plots folder is a file": (
        CSV,
        [*SCORE, "--plots", "data.csv"],
        ["--plots data.csv: data.csv is not a directory"],
    ),
}


@pytest.fixture(scope="module")
def error_runs(tmp_path_factory):
    """Every case of ERRORS, run in its own folder, a few processes at a time. The cache is
    switched off by --no-cache in half the cases and by JAXMETRICS_NO_CACHE=1 in the others."""

    # the folders are made here, one after the other: pytest's numbered temporary folders are
    # not safe to create from several threads at once (seen to fail with "not a normalized path")
    folders = [tmp_path_factory.mktemp("case") for _ in ERRORS]

    def one(index, name):
        folder = folders[index]
        content, args, _ = ERRORS[name]
        if callable(content):
            content(folder)
        elif content is not None:
            (folder / "data.csv").write_text(content)
        flag = ["--no-cache"] if index % 2 else []
        env = environment(
            XDG_CACHE_HOME=str(folder / "cache"), JAXMETRICS_NO_CACHE=None if flag else "1"
        )
        return name, (run("report", *args, *flag, cwd=folder, env=env), folder)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        return dict(pool.map(one, range(len(ERRORS)), ERRORS))


@pytest.mark.parametrize("case", list(ERRORS))
def test_user_errors_exit_2_with_one_line(error_runs, case):
    result, folder = error_runs[case]
    assert result.returncode == 2, result.stderr
    line = one_line(result)
    assert line.startswith("jaxmetrics report: error: "), line
    for part in ERRORS[case][2]:
        assert part in line
    assert len(line) < 300
    assert result.stdout == ""
    assert not (folder / "nowhere").exists()
    assert not (folder / "cache").exists()  # the cache was switched off


# ------------------------------------------------------------------------- whole runs


def test_tiny_data_gives_undefined_intervals_and_fills_the_cache(tmp_path):
    """3 rows, one positive: no interval means anything; the report says so and exits 0."""
    (tmp_path / "tiny.csv").write_text("y,s\n1,0.9\n0,0.2\n0,0.4\n")
    env = environment(XDG_CACHE_HOME=str(tmp_path / "cache"), JAXMETRICS_NO_CACHE=None)
    result = run(
        "report", "tiny.csv", "--label", "y", "--score", "s", "--resamples", 20,
        "--json", "out.json", cwd=tmp_path, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith("s "))
    assert row.split()[1:] == ["1.0000", "–", "–", "1.0000", "–"]
    assert "no intervals: they need at least two positives and two negatives" in result.stdout

    def refuse(constant):
        raise AssertionError(f"non-standard JSON constant {constant}")

    document = json.loads((tmp_path / "out.json").read_text(), parse_constant=refuse)
    auc = document["models"]["s"]["roc_auc"]
    assert auc["estimate"] == 1.0
    assert [auc[k] for k in ("low", "high", "delong_low", "delong_high")] == [None] * 4
    assert document["metadata"]["resamples"] == 20 and document["data"]["samples"] == 3
    folder = tmp_path / "cache" / "jaxmetrics" / "jax"
    kept = list(folder.glob("*-cache"))
    assert kept, "compiled programs should be kept in $XDG_CACHE_HOME/jaxmetrics/jax"
    assert folder.stat().st_mode & 0o777 == 0o700  # private: a cache is code that runs
    # by jax.export: the bootstrap's panel (plain and batched) and the order numbers
    exported = tmp_path / "cache" / "jaxmetrics" / "programs"
    assert exported.stat().st_mode & 0o777 == 0o700
    if importlib.util.find_spec("flatbuffers") is not None:  # what serializing them needs
        names = sorted(path.name.split("-")[0] for path in exported.glob("*.program"))
        assert names == ["order", "ranking", "ranking"]


def _jax_loaded(pid):
    """Whether process `pid` has mapped jaxlib: the report has begun (Ctrl-C is handled) and
    JAX is being imported."""
    try:
        return "jaxlib" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:  # the process has ended
        return False


# when Ctrl-C lands: JAX importing; both threads compiling (an interpreter exiting under the
# bootstrap thread's compilation aborted the process); the bootstrap running
MOMENTS = ("importing JAX", "compiling", "bootstrapping")


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/PID/maps")
@pytest.mark.parametrize("moment", MOMENTS)
def test_ctrl_c_exits_130_with_one_line_and_writes_nothing(tmp_path, moment):
    """Wherever Ctrl-C lands in a report, the command exits 130 with one line and writes
    nothing: no traceback, no abort, never ignored. (The resamples are far more than can run
    before the signal: the report cannot finish first.)"""
    # the context closes the pipes however the test ends (an open pipe left to the garbage
    # collector fails a later test with a ResourceWarning)
    with subprocess.Popen(
        [*COMMAND, "report", "--demo", "--resamples", "100000"]
        + ["--json", "out.json", "--plots", "plots"],
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        seen = b""
        if moment == "bootstrapping":
            while b"bootstrap ROC AUC" not in seen:  # the first progress line
                chunk = os.read(process.stderr.fileno(), 4096)
                if not chunk:
                    process.kill()
                assert chunk, "the process ended before showing progress"
                seen += chunk
        else:
            while not _jax_loaded(process.pid):
                assert process.poll() is None, "the process ended before importing JAX"
                time.sleep(0.01)
            if moment == "compiling":
                time.sleep(3.0)  # the compilations take most of the 10 s before the first line
        process.send_signal(signal.SIGINT)
        out, rest = process.communicate(timeout=60)
    stderr = (seen + rest).decode()
    assert process.returncode == 130, stderr
    for sign in ("Traceback", "Exception ignored", "FATAL", "Fatal"):
        assert sign not in stderr
    lines = stderr.rstrip("\n").split("\n")
    assert lines[-1] == "jaxmetrics report: interrupted"
    assert all(line.startswith("bootstrap ") for line in lines[:-1]), stderr
    assert out == b""
    assert list(tmp_path.iterdir()) == []  # no JSON, no plots, no temporary file


def test_internal_errors_exit_1_with_one_line(tmp_path):
    (tmp_path / "data.csv").write_text(CSV)
    script = (
        "import sys\n"
        "from jaxmetrics.report import cli\n"
        "import jaxmetrics.report.evaluate\n"
        "evaluate = sys.modules['jaxmetrics.report.evaluate']\n"
        "def broken(*args, **kwargs):\n"
        "    raise RuntimeError('engine failure\\nwith a second line')\n"
        "evaluate.evaluate = broken\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, "report", *SCORE, "--json", "out.json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environment(),
        timeout=120,
    )
    assert result.returncode == 1
    line = one_line(result)
    assert line.startswith("jaxmetrics report: internal error: RuntimeError: engine failure")
    assert not (tmp_path / "out.json").exists()


# ------------------------------------------------------------------------- the command itself


def test_version():
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"jaxmetrics {jaxmetrics.__version__}"


def test_bad_input_fails_before_jax_starts(tmp_path):
    """Options, output paths and the file are checked with numpy alone: JAX (0.7 s to import)
    is never loaded for a run that fails on them, nor for --version."""
    (tmp_path / "data.csv").write_text("y,s\n1,0.9\n0,1e39\n")
    script = (
        "import sys\n"
        "from jaxmetrics.report import cli\n"
        "status = cli.main(sys.argv[1:])\n"
        "assert 'jax' not in sys.modules, 'JAX was imported'\n"
        "sys.exit(status)\n"
    )
    for args in (["report", *SCORE], ["report", *SCORE, "--json", "no/such/dir/out.json"]):
        result = subprocess.run(
            [sys.executable, "-c", script, *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=environment(JAXMETRICS_NO_CACHE=None),
            timeout=120,
        )
        assert result.returncode == 2, result.stderr
        assert one_line(result).startswith("jaxmetrics report: error: ")


def test_coverage_benchmark_help():
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "coverage.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "50%" in result.stdout


def test_caches_past_their_budget_lose_their_least_recently_used_files(tmp_path):
    """Each new size of data adds about 1 MB of programs: past the budget the oldest go (by the
    later of access and modification), until three quarters of it are left; directories,
    links and what is under the budget stay."""
    from jaxmetrics.report.cli import prune_caches

    jax_dir, programs = tmp_path / "jax", tmp_path / "programs"
    jax_dir.mkdir()
    programs.mkdir()
    (jax_dir / "a-directory").mkdir()
    ages = {}
    for i, directory in enumerate([jax_dir, programs] * 5):
        path = directory / f"file-{i}"
        path.write_bytes(b"x" * 1000)
        os.utime(path, (1_000_000 + i, 1_000_000 + i))  # file-0 the oldest
        ages[path.name] = i
    (programs / "a-link").symlink_to(jax_dir / "file-0")
    prune_caches([jax_dir, programs], budget=10_000)  # 10 files of 1,000 bytes: at the budget
    assert len(list(jax_dir.iterdir())) + len(list(programs.iterdir())) == 12
    prune_caches([jax_dir, programs], budget=8_000)  # down to 6,000: the four oldest go
    left = sorted(p.name for d in (jax_dir, programs) for p in d.iterdir())
    assert left == ["a-directory", "a-link", *sorted(f"file-{i}" for i in range(4, 10))]
    # a file read since counts as recent: its access time
    os.utime(programs / "file-5", (2_000_000, 1_000_005))
    prune_caches([jax_dir, programs], budget=4_000)  # 6,000 -> at most 3,000: three go
    left = sorted(p.name for d in (jax_dir, programs) for p in d.iterdir() if p.is_file())
    assert left == ["file-5", "file-8", "file-9"]
