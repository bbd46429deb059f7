// Host (CPU) build of splice_traceback.cu for tests without a GPU: g++ -x c++ -std=c++17 -O2
// -shared -fPIC with the options of gamut.splice.gpu.TRACEBACK_OPTIONS (-D...). The kernel's
// per-block code (tb_run) runs here block by block, each phase for threads 0 .. threads-1 in
// turn, as the GPU runs them between barriers; the warp shuffles of the row scan are replaced
// by the same exclusive max-scan within groups of 32 threads, computed serially.
#define SPLICE_HOST_TEST 1
#ifndef TB_THREADS
#define TB_THREADS 1024  // the most threads a test may ask for
#endif

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
    template <class F>
    void scan(TbShared& S, F f) {
        for (int t = 0; t < T; ++t) vals[t] = f(t);
        for (int w = 0; 32 * w < T; ++w) {
            int run = TB_NEG;
            for (int t = 32 * w; t < T && t < 32 * w + 32; ++t) {
                S.wexcl[t] = run;
                run = max(run, vals[t]);
            }
            S.wtot[w] = run;
        }
    }
};

// splice_traceback for every case (blocks 0 .. cases-1 in turn) with `threads` threads per block.
extern "C" int host_splice_traceback(
    const int* last, const int* pred, const long long* out_off, const unsigned char* stream,
    const long long* stream_off, const int* seg_row, const int* starts, const int* ends, const long long* exon_off,
    const int* n_exons, const unsigned char* target, const long long* target_off, const int* target_len,
    const int* matrix, int gap, unsigned char* moves, const long long* moves_off, int* rows,
    const long long* rows_off, unsigned char* ops, const long long* ops_off, int* chain, int* result,
    const int* case_order, int cases, int threads)
{
    if (threads < 1 || threads > TB_THREADS) return -1;
    static TbShared S;
    static TbHostExec x;
    x.T = threads;
    const TbArgs A = {last, pred, out_off, stream, stream_off, seg_row, starts, ends, exon_off, n_exons, target,
                      target_off, target_len, matrix, gap, moves, moves_off, rows, rows_off, ops, ops_off, chain,
                      result};
    for (int b = 0; b < cases; ++b) {
        const TbCase C = tb_case(A, case_order[b]);
        tb_run(x, S, A, C);
    }
    return 0;
}
