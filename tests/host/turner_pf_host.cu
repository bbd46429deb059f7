// Host (CPU) build of plfold.cu's global partition function for tests without a GPU, compiled with
// g++ by tests/host_build.py with the table layout and the options as -D options
// (gamut.folding.turner.gpu_pf.kernel_defines). The launches of gamut.folding.turner.gpu_pf's
// CupyPfRunner, in the same order, as loops over every thread.
#include <cmath>

#define PLF_HOST 1
#include "plfold.cu"
#include "plfold_passes.h"

extern "C" long long host_turner_pf_work_doubles(long long N, int L, int W) { return plf_work_doubles(N, L, W); }

// The sequences laid end to end in S (SB/SE: each position's sequence), one window each (W: the
// longest, L: the span): the partition function of the windows starting at starts[0..count) into
// out[0..count), and, with RO (where (i, i) lies in out, per position; may be null), the pair
// probabilities into out (zeroed); *bad set where a weight left the range of doubles or a
// probability [0, 1]. work: zeroed, of host_turner_pf_work_doubles doubles; SC: the batch's scaling;
// lanes: threads a cell on the GPU (their parts are added in turn here).
extern "C" void host_turner_pf(const double* T, const int* I, const signed char* S, const int* SB, const int* SE,
                               long long N, int W, int L, double* work, int* bad, const double* SC, int lanes,
                               const long long* starts, long long count, const long long* RO, double* out) {
    const Plf p{T, I, S, SB, SE, N, W, L, work, bad, SC, lanes};
    const Arrays a = plf_arrays(p);
    host_fold_passes(p, a);
    for (long long x = 0; x < count; ++x) out[x] = window_partition(p, a, starts[x]);
    if (RO)
        for (int d = 0; d < L; ++d)
            for (long long i = 0; i < N; ++i) pair_probability(p, a, d, i, RO, out);
}
