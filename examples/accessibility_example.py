"""Opening energy along the Drosophila hid 3'UTR with bantam's miRanda sites marked (docs/accessibility.md).

    python examples/accessibility_example.py [plot.png]

Prints each bantam site's PITA-style opening energy (the site plus 3 nt upstream and 15 nt
downstream) and ddG = duplex energy - opening energy, and draws the opening energy of every
8-nt stretch along the UTR.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import gamut
from gamut.io import read_fasta

HERE = Path(__file__).resolve().parent
UPSTREAM, DOWNSTREAM = 3, 15


def main(plot: str = "hid_accessibility.png") -> None:
    utr = next(r for r in read_fasta(HERE / "targets.fa") if r.name == "dme_hid_3UTR")
    hits = gamut.scan(HERE / "mirnas.fa", HERE / "targets.fa")
    hits = hits[(hits.reference_id == utr.name) & hits.query_id.str.contains("bantam")]
    acc = gamut.accessibility(utr.sequence, window=80, span=40, max_unpaired=60, name=utr.name)
    n = len(acc)
    rows = []
    for hit in hits.itertuples():
        opening = acc.site_opening_energy(hit.ref_start, hit.ref_end, UPSTREAM, DOWNSTREAM)
        rows.append((hit.ref_start, hit.ref_end, hit.score, hit.energy, opening, hit.energy + opening))
        print(f"{hit.query_id} {hit.ref_start}-{hit.ref_end}: score {hit.score}, duplex {hit.energy:.2f}, "
              f"dG_open {opening:.2f}, ddG {hit.energy + opening:.2f} kcal/mol")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 3.2))
    ax.plot(np.arange(1, n + 1), acc.opening_energy[:, 7], lw=0.8, color="#33658a", label="8-nt stretch ending here")
    for start, end, *_ in rows:
        ax.axvspan(start, end, color="#f26419", alpha=0.35, lw=0)
    ax.set_xlabel(f"{utr.name} position (nt)")
    ax.set_ylabel("opening energy (kcal/mol)")
    ax.set_title(f"Accessibility of the hid 3'UTR (W=80, L=40); orange: bantam sites ({len(rows)})")
    ax.set_xlim(1, n)
    ax.legend(loc="upper right", frameon=False)
    fig.tight_layout()
    fig.savefig(plot, dpi=120)
    print(f"wrote {plot}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
