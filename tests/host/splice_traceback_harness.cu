// Host (CPU) build of splice_traceback.cu for tests without a GPU, compiled with g++ by
// tests/host_build.py with the options of gamut.splicing.gpu_layout.TRACEBACK_OPTIONS (-D...). The kernel's
// per-block code (tb_run) runs here block by block, each phase for threads 0 .. threads-1 in
// turn, as the GPU runs them between barriers; the warp shuffles of the row scan are replaced
// by the same exclusive max-scan over the threads, computed serially. The block's dynamic shared
// memory is a host buffer of TB_DYN_BYTES(cap), filled with garbage before every case.
#define SPLICE_HOST_TEST 1
#ifndef TB_THREADS
#define TB_THREADS 1024  // the most threads a test may ask for
#endif

#include <vector>

#include "splice_traceback.cu"

struct TbHostExec {
    int T;
    int vals[TB_THREADS];
    int threads() const { return T; }
    template <class F>
    void par(F f) {
        for (int t = 0; t < T; ++t) f(t);
    }
    template <class F>
    void one(F f) {
        f();
    }
    // The exclusive prefix of the previous step (parity s & 1) is kept whole in S.wx (the GPU
    // keeps it per warp, plus the warp totals).
    template <class F>
    void step(TbShared& S, int s, F f) {
        const int p = s & 1;
        for (int t = 0; t < T; ++t) vals[t] = f(t, S.wx[p][t]);
        int run = TB_NEG;
        for (int t = 0; t < T; ++t) {
            S.wx[p ^ 1][t] = run;
            run = max(run, vals[t]);
        }
    }
};

// splice_traceback for every case (blocks 0 .. cases-1 in turn, each taking case_order[block])
// with `threads` threads per block and strips of `cap` columns (a multiple of 64).
extern "C" int host_splice_traceback(
    const int* last, const int* pred, const long long* out_off, const unsigned char* stream,
    const long long* stream_off, const int* seg_row, const int* starts, const int* ends, const long long* exon_off,
    const int* n_exons, const unsigned char* target, const long long* target_off, const int* target_len,
    const int* matrix, int gap, unsigned char* moves, const long long* moves_off, int* bnd,
    const long long* bnd_off, unsigned char* ops, const long long* ops_off, int* chain, int* result,
    const int* case_order, int cases, int threads, int cap)
{
    if (threads < 1 || threads > TB_THREADS) return -1;
    if (cap < 64 || cap % 64) return -2;
    static TbShared S;
    static TbHostExec x;
    x.T = threads;
    std::vector<unsigned char> dyn(TB_DYN_BYTES((long long)cap) + 16);
    unsigned char* base = dyn.data() + (16 - reinterpret_cast<unsigned long long>(dyn.data()) % 16) % 16;
    const TbArgs A = {last, pred, out_off, stream, stream_off, seg_row, starts, ends, exon_off, n_exons, target,
                      target_off, target_len, matrix, gap, moves, moves_off, bnd, bnd_off, ops, ops_off, chain,
                      result, cap};
    unsigned seed = 12345;
    for (int b = 0; b < cases; ++b) {
        for (long long q = 0; q < TB_DYN_BYTES((long long)cap); ++q) {  // garbage, as shared memory may hold
            seed = seed * 1103515245u + 12345u;
            base[q] = (unsigned char)(seed >> 16);
        }
        for (int t = 0; t < TB_THREADS; ++t) S.dg[t] = S.wx[0][t] = S.wx[1][t] = (int)(seed ^ (unsigned)t);
        const TbDyn D = tb_dyn(base, cap);
        tb_run(x, S, A, case_order[b], D);
    }
    return 0;
}
