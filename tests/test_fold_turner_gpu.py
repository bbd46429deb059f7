"""``gamut fold --model turner`` end to end on a CUDA device (``gpu`` tests): the API and the command
line give on the GPU what they give on the CPU (ViennaRNA), MFE and partition function."""
from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gamut

pytestmark = pytest.mark.gpu
HAIRPINS = Path(__file__).parent / "data" / "fold" / "mirbase_hsa_hairpins.fa.gz"


def hairpins(count: int) -> list[tuple[str, str]]:
    records, name = [], None
    with gzip.open(HAIRPINS, "rt") as handle:
        for line in handle:
            if line.startswith(">"):
                name = line[1:].split()[0]
            elif name is not None:
                records.append((name, line.strip()))
                name = None
            if len(records) == count:
                break
    return records


def random_records(count: int, low: int, high: int, seed: int) -> list[tuple[str, str]]:
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"ACGUNacgut", np.uint8)
    return [(f"r{k}", letters[rng.integers(0, 10, int(n))].tobytes().decode())
            for k, n in enumerate(rng.integers(low, high + 1, count))]


@pytest.mark.parametrize("options", [{}, {"dangles": 0}, {"no_lp": True}, {"temperature": 25.0},
                                     {"max_bp_span": 30}])
def test_mfe_batch_gpu_equals_cpu(options):
    records = hairpins(300) + random_records(300, 1, 120, 7)
    gpu = gamut.fold(records, model="turner", device="cuda", **options)
    cpu = gamut.fold(records, model="turner", device="cpu", **options)
    assert gpu.energies_dcal.tolist() == cpu.energies_dcal.tolist()
    import RNA

    md = RNA.md()
    md.temperature = options.get("temperature", 37.0)
    md.dangles = options.get("dangles", 2)
    md.noLP = int(options.get("no_lp", False))
    md.max_bp_span = options.get("max_bp_span", -1)
    for (_, seq), structure, energy in zip(records, gpu.structures, gpu.energies_dcal.tolist()):
        fc = RNA.fold_compound(seq.upper().replace("T", "U"), md)
        assert round(fc.eval_structure(structure) * 100) == energy


def test_partition_gpu_equals_cpu():
    records = hairpins(40) + random_records(20, 5, 300, 11)
    gpu = gamut.fold(records, model="turner", device="cuda", partition=True)
    cpu = gamut.fold(records, model="turner", device="cpu", partition=True)
    assert gpu.energies_dcal.tolist() == cpu.energies_dcal.tolist()
    np.testing.assert_allclose(gpu.ensemble_energies, cpu.ensemble_energies, rtol=1e-6, atol=0)
    for k in range(len(records)):
        np.testing.assert_allclose(gpu[k].probabilities, cpu[k].probabilities, rtol=0, atol=1e-6)


def test_cli_gpu_equals_cpu(tmp_path):
    fasta = tmp_path / "in.fa"
    fasta.write_text("".join(f">{name}\n{seq}\n" for name, seq in hairpins(25)))
    outputs = {}
    for device in ("cuda", "cpu"):
        out = tmp_path / f"{device}.fold"
        subprocess.run([sys.executable, "-m", "gamut", "fold", str(fasta), "--model", "turner", "-p",
                        "--device", device, "-o", str(out)], check=True)
        outputs[device] = out.read_text()
    assert outputs["cuda"] == outputs["cpu"] and outputs["cpu"].count(">") == 25
