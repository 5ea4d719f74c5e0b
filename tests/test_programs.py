"""Compiled programs kept on disk and found again without tracing (`programs`, the command
line's warm start): what identifies a program, that a second process runs the saved ones to the
same numbers, and that damaged or foreign entries are compiled again."""

import functools
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import sklearn.metrics as skm

import jaxmetrics as jm
from jaxmetrics._src import bootstrap, kernels, programs


@pytest.fixture
def program_directory(tmp_path):
    programs.use(tmp_path / "programs")
    try:
        yield tmp_path / "programs"
    finally:
        programs.use(None)


def _mine(scores, labels, *, sample_weight=None):  # a user's metric: never saved
    return jm.roc_auc(scores, labels, sample_weight=sample_weight)


def test_descriptions_identify_values_and_refuse_what_they_cannot():
    describe = programs.describe
    assert len({describe(1), describe(1.0), describe(True), describe("1"), describe((1,))}) == 5
    assert describe((0.1, "macro", None)) == describe((0.1, "macro", None))
    assert describe(jm.roc_auc).startswith("fn:jaxmetrics.")
    # a decorator's wrapper carries the wrapped function's name (`functools.wraps`), not its code
    wrapped = kernels.with_xla_kernels(jm.roc_auc)
    assert wrapped.__qualname__ == jm.roc_auc.__qualname__
    assert describe(wrapped) != describe(jm.roc_auc)
    assert describe(functools.partial(jm.roc_auc, max_fpr=0.1)) != describe(
        functools.partial(jm.roc_auc, max_fpr=0.2)
    )
    itself = [1]
    itself.append(itself)
    for unstable in (_mine, lambda x: x, functools.partial(_mine), object(), np.ones(3), itself):
        with pytest.raises(programs._Unstable):
            describe(unstable)
    # so a bootstrap of a user's metric is never saved: its key cannot be made
    assert isinstance(bootstrap._resampled_values, programs.Persistent)
    with pytest.raises(programs._Unstable):
        bootstrap._resampled_values._key((_mine, ()), {})


def _files(directory):
    return sorted(p.name for p in directory.iterdir() if p.suffix == ".program")


def test_the_key_tells_shapes_and_kernel_choices_apart(rng, program_directory):
    scores, labels = rng.normal(size=110), rng.random(110) < 0.4
    expected = skm.roc_auc_score(labels, scores)
    assert float(jm.roc_auc(scores, labels)) == pytest.approx(expected, rel=1e-6)
    first = _files(program_directory)
    assert first  # the eager call's program was saved
    assert float(jm.roc_auc(scores[:100], labels[:100])) == pytest.approx(
        skm.roc_auc_score(labels[:100], scores[:100]), rel=1e-6
    )
    assert _files(program_directory) == first  # 100 and 110 samples share a padded length
    assert float(jm.roc_auc(scores[:40], labels[:40])) == pytest.approx(
        skm.roc_auc_score(labels[:40], scores[:40]), rel=1e-6
    )
    second = _files(program_directory)
    assert len(second) > len(first)  # another length, another program
    with jm.xla_kernels():
        assert float(jm.roc_auc(scores, labels)) == pytest.approx(expected, rel=1e-6)
    assert len(_files(program_directory)) > len(second)  # XLA's kernels: another program


def test_a_damaged_program_is_compiled_again(rng, program_directory):
    scores, labels = rng.normal(size=60), rng.random(60) < 0.5
    expected = skm.average_precision_score(labels, scores)
    assert float(jm.average_precision(scores, labels)) == pytest.approx(expected, rel=1e-6)
    saved = _files(program_directory)
    for name in saved:
        (program_directory / name).write_bytes(b"not a program")
    programs.use(program_directory)  # forget what this process loaded
    assert float(jm.average_precision(scores, labels)) == pytest.approx(expected, rel=1e-6)
    assert _files(program_directory) == saved
    assert all((program_directory / name).stat().st_size > 100 for name in saved)  # rewritten
    assert not [p for p in program_directory.iterdir() if p.suffix == ".partial"]


_RUN = """
import collections, json, sys
import jax, jax.monitoring, numpy as np
import jaxmetrics as jm
from jaxmetrics._src import programs
programs.use(sys.argv[1])
traced = collections.Counter()
def listen(event, duration, **kw):
    if event.endswith("jaxpr_trace_duration"):
        traced[kw.get("fun_name", "?")] += 1
jax.monitoring.register_event_duration_secs_listener(listen)
rng = np.random.default_rng(0)
scores, labels = np.round(rng.normal(size=(2, 300)), 1), rng.random(300) < 0.3
values = [float(jm.roc_auc(scores[0], labels)), float(jm.average_precision(scores[0], labels))]
values += np.asarray(jm.roc_curve(scores[0], labels).tpr).tolist()
values += np.asarray(jm.delong(scores, labels).variance).ravel().tolist()
boot = jm.bootstrap(jm.roc_auc, scores[0], labels, key=jax.random.key(1), num_resamples=50)
values += np.asarray(boot.samples).tolist() + [float(boot.low), float(boot.high)]
print(json.dumps({"values": values, "traced": dict(traced)}))
"""


def test_a_second_process_runs_the_saved_programs_without_tracing(tmp_path):
    runs = []
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "-c", _RUN, str(tmp_path / "programs")],
            capture_output=True, text=True, timeout=300, env={**os.environ},
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        runs.append(json.loads(result.stdout.strip().splitlines()[-1]))
    first, second = runs
    kept = ("run", "_resampled_body", "_delong_fields", "_summary")
    assert all(first["traced"].get(name, 0) > 0 for name in kept), first["traced"]
    assert not any(second["traced"].get(name, 0) for name in kept), second["traced"]
    assert second["values"] == first["values"]
    rng = np.random.default_rng(0)
    scores, labels = np.round(rng.normal(size=(2, 300)), 1), rng.random(300) < 0.3
    np.testing.assert_allclose(first["values"][0], skm.roc_auc_score(labels, scores[0]), rtol=1e-6)
    np.testing.assert_allclose(
        first["values"][1], skm.average_precision_score(labels, scores[0]), rtol=1e-6
    )


_BOTH_CACHES = """
import sys
import jax, numpy as np
import jaxmetrics as jm
from jaxmetrics._src import programs
jax.config.update("jax_compilation_cache_dir", sys.argv[1])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
if sys.argv[2] == "unguarded":  # what an older version did: save them anyway
    programs._listen_for_jax_cache_hits = lambda: None
if sys.argv[2] in ("both", "unguarded"):
    programs.use(sys.argv[3])
rng = np.random.default_rng(0)
scores, labels = rng.random(500), rng.random(500) < 0.3
counts = jm.confusion_counts(scores, labels, 0.5)
print(float(jm.accuracy(counts)), float(jm.precision(counts)), float(jm.roc_auc(scores, labels)))
"""


def test_programs_from_jax_cache_are_not_saved_again(tmp_path):
    """An executable JAX loaded from its own persistent cache and that was serialized again
    failed on its next load ("Function ... not found", JAX 0.10.2, CPU): such programs are
    never saved, and a run with both caches gives the same numbers as one with JAX's alone."""
    jax_cache, kept = tmp_path / "jax", tmp_path / "programs"

    def run(mode):
        result = subprocess.run(
            [sys.executable, "-c", _BOTH_CACHES, str(jax_cache), mode, str(kept)],
            capture_output=True, text=True, timeout=300, env={**os.environ},
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return result.stdout.strip().splitlines()[-1]

    expected = run("jax")  # fills JAX's cache only
    assert run("both") == expected  # every program comes from JAX's cache: none is kept
    assert not kept.exists() or not _files(kept)
    assert run("both") == expected
    # saved anyway, they load but fail to run: each is compiled again on its first call
    assert run("unguarded") == expected
    assert _files(kept)
    assert run("both") == expected


def test_the_directory_keeps_under_its_size_by_removing_the_least_recently_used(
    rng, program_directory, monkeypatch
):
    program_directory.mkdir()
    for age in range(8):  # 8 programs of 100 bytes, used at times 1..8
        path = program_directory / f"{age}.program"
        path.write_bytes(bytes(100))
        os.utime(path, (age + 1, age + 1))
    (program_directory / "other.txt").write_bytes(bytes(10_000))  # not a program: left alone
    monkeypatch.setattr(programs, "MAX_BYTES", 800)
    programs._trim()
    assert len(_files(program_directory)) == 8  # at the limit: nothing removed
    monkeypatch.setattr(programs, "MAX_BYTES", 700)
    programs._trim()  # past it: the least recently used go, down to 3/4 of it (525 bytes)
    assert _files(program_directory) == [f"{age}.program" for age in range(3, 8)]
    assert (program_directory / "other.txt").exists()
    monkeypatch.undo()  # the real limit again
    # loading a program marks it used
    scores, labels = rng.normal(size=50), rng.random(50) < 0.4
    expected = float(jm.roc_auc(scores, labels))  # compiled and saved now
    saved = next(p for p in program_directory.glob("*.program") if len(p.stem) == 64)
    os.utime(saved, (1, 1))
    programs.use(program_directory)  # forget what this process loaded
    assert float(jm.roc_auc(scores, labels)) == expected
    assert saved.stat().st_mtime > 1
