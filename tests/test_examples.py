"""The examples run as a user runs them (quick modes), in a subprocess."""

import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _environment(optimization_level: int, fusion_emitters: bool = False) -> dict[str, str]:
    """The suite's environment (its XLA flags, tests/conftest.py) for an example's process, with
    LLVM's optimisation level `optimization_level` in place of the suite's 0 (and XLA's newer
    fusion emitters if `fusion_emitters`), for an example whose time goes into running its
    programs rather than compiling them. The tests read what the examples print, which the flags
    do not change."""
    flags = os.environ.get("XLA_FLAGS", "").split()
    replaced = ("--xla_backend_optimization_level=", "--xla_cpu_use_fusion_emitters=")
    flags = [f for f in flags if not f.startswith(replaced)]
    flags.append(f"--xla_backend_optimization_level={optimization_level}")
    flags.append(f"--xla_cpu_use_fusion_emitters={str(fusion_emitters).lower()}")
    return {**os.environ, "XLA_FLAGS": " ".join(flags)}


def test_surrogate_losses_quick():
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "surrogate_losses.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        # its training loops run longer than they compile: 47 s at the suite's flags, 31 s at
        # level 1 with the newer fusion emitters (32 s at 2, 41 s at 1 with the older ones)
        env=_environment(optimization_level=1, fusion_emitters=True),
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for part in (
        "well-specified, linear model",
        "well-specified, mlp model",
        "misspecified, mlp model",
        "learning to rank, linear scorer",
        "learning to rank, mlp scorer",
        "pairwise AUC",
        "compositional AUC",
        "Smooth-AP",
        "SOAP",
        "pAUC CVaR",
        "pAUC KL",
        "two-way pAUC",
        "TPAUC",
        "ΔTPAUC [95%]",
        "ApproxNDCG",
        "ListNet",
        "NDCG@10",
        "ΔpAUC [95%]",
        "BCE's rates, seeds at 0.01/0.03/0.1",
        "total time",
    ):
        assert part in out, part
    # the summary sorts every targeted comparison (10 surrogates x 3 configurations, 3 ranking
    # losses x 2 scorers) into better, no clear difference and worse
    summary = out[out.index("Summary:") :]
    verdicts = re.findall(r"^  (better|no clear difference|worse) \((\d+) of 36\):$", summary, re.M)
    assert [v for v, _ in verdicts] == ["better", "no clear difference", "worse"], summary
    assert sum(int(n) for _, n in verdicts) == 36
    assert re.search(r"^    TPAUC +two-way pAUC CVaR ", summary, re.M), summary
    assert "non-finite" not in out


def test_training_loop_on_four_emulated_devices():
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "training_loop.py")],
        capture_output=True,
        text=True,
        timeout=600,
        # level 1: it compiled 3 s and ran 10 s at level 0, compiles 6 s and runs 3 s at 1
        env=_environment(optimization_level=1),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("4 devices")
    assert "test AUC" in result.stdout and "over 4 devices" in result.stdout


ROOT = Path(__file__).resolve().parents[1]
# the pages whose ```python blocks must run as pasted, in this order
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "CONTRIBUTING.md"]


def _fenced_blocks(path: Path) -> list[tuple[str, int, str]]:
    """(language, line of the opening fence, text) of every fenced block of a Markdown page."""
    blocks, open_at, language, body = [], None, "", []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if open_at is None and line.startswith("```"):
            open_at, language, body = number, line[3:].strip(), []
        elif open_at is not None and line.rstrip() == "```":
            blocks.append((language, open_at, "\n".join(body) + "\n"))
            open_at = None
        elif open_at is not None:
            body.append(line)
    assert open_at is None, f"{path.name}:{open_at}: a fence that is never closed"
    return blocks


def test_every_readme_snippet_runs_as_pasted():
    """Each ```python block of the README, the docs/ pages and CONTRIBUTING.md, in a fresh
    namespace of its own, in file order (issue 25: the paired-bootstrap snippet used names it
    never defined; issue 26: the manual moved to docs/). Every fence names its language, so a
    shell or output block is never mistaken for one that runs."""
    ran = {}
    for path in DOCUMENTS:
        for language, line, block in _fenced_blocks(path):
            where = f"{path.relative_to(ROOT)}:{line}"
            assert language in ("python", "bash", "text"), f"{where}: fence {language!r}"
            if language != "python":
                continue
            namespace = {"__name__": "readme"}
            # line numbers of the page in tracebacks: the block starts after its fence
            code = compile("\n" * line + block, str(path.relative_to(ROOT)), "exec")
            exec(code, namespace)  # noqa: S102
            ran[where] = namespace
    files = {where.split(":")[0] for where in ran}
    assert {"README.md", "CONTRIBUTING.md"} <= files and len(files) >= 6, sorted(files)
    (ks_statistic,) = [n["ks_statistic"] for n in ran.values() if "ks_statistic" in n]
    assert float(ks_statistic([0.9, 0.1, 0.8, 0.2], [1, 0, 0, 1])) == 0.5
