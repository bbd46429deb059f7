// The launches of gamut.access.gpu.CupyRunner's fold of a batch, in the same order, as loops over
// every thread (after `#define PLF_HOST 1` and `#include "plfold.cu"`): inside by span, the exterior
// loops, outside by decreasing span, the stretches' suffix sums (with PLF_UNPAIRED); a cell's lanes
// (p.lanes) one after another. Shared by the host builds of
// plfold.cu (plfold_host.cu: accessibility; turner_pf_host.cu: the global partition function).
#pragma once

static void host_fold_passes(const Plf& p, const Arrays& a) {
    for (int d = 0; d < p.L; ++d)
        for (long long i = 0; i < p.N; ++i) inside_cell(p, a, d, i);
    for (long long s = 0; s < p.N; ++s) exterior_window(p, a, s);
    double scratch[PLF_MAXLOOP + 1];
    for (int d = p.L - 1; d >= 0; --d)
        for (long long k = 0; k < p.N; ++k) outside_cell(p, a, d, k, Scratch{scratch, 1});
#if PLF_UNPAIRED
    for (long long i = 0; i < p.N; ++i) suffix_position(p, a, i);
#endif
}
