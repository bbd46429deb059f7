// Host (CPU) build of turner_mfe.cu for tests without a GPU, compiled with g++ by tests/host_build.py
// with the table layout as -D options (gamut.folding.turner.energy_tables). The kernels' bodies run
// as loops: every block of tmfe_batch (and of its variants) in turn (groups of one thread, the
// diagonals shared out as a block or warp of `threads` threads would share them), and every thread
// of a tmfe_diagonal launch in turn.
#include <algorithm>
#include <cmath>
#include <vector>

#define TMFE_HOST 1
#include "turner_mfe.cu"

extern "C" long long host_tmfe_work_ints(long long nmax, int nolp) { return tmfe_work_ints(nmax, nolp); }

extern "C" int host_tmfe_gaps(int x) {
    int u1, u2;
    gaps_of(x, &u1, &u2);
    return 100 * u1 + u2;
}

extern "C" long long host_tmfe_warp_area(long long work_ints, int block, int groups, int x, int in_shared) {
    return warp_area(nullptr, work_ints, block, groups, x, in_shared) - (int*)nullptr;
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

// tmfe_batch_shared on `blocks` blocks of `threads` threads: each block's work area a fresh buffer
// of garbage (the block's dynamic shared memory on the device; the host has none, so this checks
// everything but the memory space).
extern "C" void host_tmfe_batch_shared(const int* E, const int* HPX, int dangles, int nolp, int span,
                                       const unsigned char* S, const long long* starts, const int* lengths, int count,
                                       int nmax, long long work_ints, char* out, int* energy, int* err, int blocks,
                                       int threads) {
    const Model m{E, HPX, dangles, nolp, span};
    int slot = 0;
    const Group g{0, 1, &slot};
    std::vector<int> area(work_ints);
    for (int b = 0; b < blocks; ++b) {
        std::fill(area.begin(), area.end(), -12345);
        batch_block(m, S, starts, lengths, count, nmax, area.data(), out, energy, err, b, blocks, g, threads);
    }
}

// tmfe_batch_warps on `blocks` blocks of `threads` threads (threads / 32 warps): every warp of every
// block in turn, as a group of one thread sharing out the diagonals as a warp would; the areas in
// work, or (in_shared) in a fresh buffer of garbage per block.
extern "C" void host_tmfe_batch_warps(const int* E, const int* HPX, int dangles, int nolp, int span,
                                      const unsigned char* S, const long long* starts, const int* lengths, int count,
                                      int nmax, int* work, long long work_ints, char* out, int* energy, int* err,
                                      int in_shared, int blocks, int threads) {
    const Model m{E, HPX, dangles, nolp, span};
    const WarpGroup g{0, 1};
    const int warps = threads / 32;
    std::vector<int> shared(in_shared ? warps * work_ints : 0);
    for (int b = 0; b < blocks; ++b) {
        std::fill(shared.begin(), shared.end(), -12345);
        for (int w = 0; w < warps; ++w) {
            int* area = warp_area(in_shared ? shared.data() : work, work_ints, b, warps, w, in_shared);
            batch_block(m, S, starts, lengths, count, nmax, area, out, energy, err, b * warps + w, blocks * warps, g,
                        32);
        }
    }
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
