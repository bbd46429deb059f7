// Host (CPU) build of turner_mfe.cu for tests without a GPU, compiled with g++ by tests/host_build.py
// with the table layout as -D options (gamut.folding.turner.energy_tables). The kernels' bodies run
// as loops: every block of tmfe_batch in turn (groups of one thread, the diagonals shared out as a
// block of `threads` threads would share them), and every thread of a tmfe_diagonal launch in turn.
#include <cmath>

#define TMFE_HOST 1
#include "turner_mfe.cu"

extern "C" long long host_tmfe_work_ints(long long nmax, int nolp) { return tmfe_work_ints(nmax, nolp); }

extern "C" int host_tmfe_gaps(int x) {
    int u1, u2;
    gaps_of(x, &u1, &u2);
    return 100 * u1 + u2;
}

extern "C" int host_tmfe_diagonal_parts(int cells, int threads) { return diagonal_parts(cells, threads); }

// tmfe_batch on `blocks` blocks of `threads` threads, their work areas of work_ints ints one after
// the other in work.
extern "C" void host_tmfe_batch(const int* E, const int* HPX, int dangles, int nolp, int span, const unsigned char* S,
                                const long long* starts, const int* lengths, int count, int nmax, int* work,
                                long long work_ints, char* out, int* energy, int* err, int blocks, int threads) {
    const Model m{E, HPX, dangles, nolp, span};
    int slot = 0;
    const Group g{0, 1, &slot};
    for (int b = 0; b < blocks; ++b)
        batch_block(m, S, starts, lengths, count, nmax, work + (long long)b * work_ints, out, energy, err, b, blocks,
                    g, threads);
}

// tmfe_diagonal: every thread x of (n - d) * parts.
extern "C" void host_tmfe_diagonal(const int* E, const int* HPX, int dangles, int nolp, int span,
                                   const unsigned char* S, int n, int* work, int d, int parts) {
    const Model m{E, HPX, dangles, nolp, span};
    const Seq s = make_seq(S, n, work, n, nolp);
    const long long shares = (long long)(n - d) * parts;
    for (long long x = 0; x < shares; ++x) fill_share(m, s, d, x, parts);
}

// tmfe_finish.
extern "C" void host_tmfe_finish(const int* E, const int* HPX, int dangles, int nolp, int span, const unsigned char* S,
                                 int n, int* work, char* out, int* energy, int* err) {
    const Model m{E, HPX, dangles, nolp, span};
    const Seq s = make_seq(S, n, work, n, nolp);
    int slot = 0;
    const Group g{0, 1, &slot};
    finish_sequence(m, s, g, out, energy, err);
}
