// Host (CPU) build of plfold.cu for tests without a GPU, compiled with g++ by tests/host_build.py with
// the table layout as -D options (gamut.access.boltzmann.plfold_tables). The launches of
// gamut.access.gpu, in the same order, as loops over every thread.
#include <cmath>

#define PLF_HOST 1
#include "plfold.cu"
#include "plfold_passes.h"

extern "C" long long host_plfold_work_doubles(long long N, int L, int W) { return plf_work_doubles(N, L, W); }

// Unpaired probabilities of the sequences laid end to end in S (SB/SE: each position's sequence),
// into out[b * U + u - 1] (stretches that do not fit are left as they are; *bad set where a weight
// left the range of doubles); work: zeroed, of host_plfold_work_doubles doubles; SC: the batch's
// scaling (gamut.access.gpu.scale_table).
extern "C" void host_plfold(const double* T, const int* I, const signed char* S, const int* SB, const int* SE,
                            long long N, int W, int L, int U, double* work, double* out, int* bad, const double* SC) {
    const Plf p{T, I, S, SB, SE, N, W, L, work, bad, SC, 1};
    const Arrays a = plf_arrays(p);
    host_fold_passes(p, a);
    for (long long b = 0; b < N; ++b)
        for (int u = 1; u <= U; ++u)
            if (stretch_fits(p, b, u)) out[b * U + u - 1] = checked(p, unpaired_stretch(p, a, b, u));
}
