// Host (CPU) build of turner_mfe.cu for tests without a GPU, compiled with g++ by tests/host_build.py
// with the table layout as -D options (gamut.folding.turner.energy_tables). The kernels' bodies run
// as loops: every block of tmfe_batch in turn, and every cell of every diagonal launch of
// tmfe_diagonal in turn before tmfe_finish, each with a group of one thread.
#include <cmath>

#define TMFE_HOST 1
#include "turner_mfe.cu"

extern "C" long long host_tmfe_work_ints(long long nmax, int nolp) { return tmfe_work_ints(nmax, nolp); }

// tmfe_batch on `blocks` blocks, their work areas of work_ints ints one after the other in work.
extern "C" void host_tmfe_batch(const int* E, const int* HPX, int dangles, int nolp, int span, const unsigned char* S,
                                const long long* starts, const int* lengths, int count, int nmax, int* work, long long work_ints,
                                char* out, int* energy, int* err, int blocks) {
    const Model m{E, HPX, dangles, nolp, span};
    int slot = 0;
    const Group g{0, 1, &slot};
    for (int b = 0; b < blocks; ++b)
        batch_block(m, S, starts, lengths, count, nmax, work + (long long)b * work_ints, out, energy, err, b, blocks, g);
}

// tmfe_diagonal for d = 0 .. n - 1 (each over every cell), then tmfe_finish.
extern "C" void host_tmfe_long(const int* E, const int* HPX, int dangles, int nolp, int span, const unsigned char* S,
                               int n, int* work, char* out, int* energy, int* err) {
    const Model m{E, HPX, dangles, nolp, span};
    const Seq s = make_seq(S, n, work, n, nolp);
    for (int d = 0; d < n; ++d)
        for (int i = 0; i < n - d; ++i) fill_cell(m, s, i, i + d);
    int slot = 0;
    const Group g{0, 1, &slot};
    finish_sequence(m, s, g, out, energy, err);
}
