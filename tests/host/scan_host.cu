// Host (CPU) build of scan_dp.cu for tests without a GPU, compiled with g++ by tests/host_build.py
// (the kernel sources are on its include path).
// Each kernel becomes a C function that runs its threads in a loop, so the engine's whole
// pipeline (segments, checkpoints, repair, traceback windows) can be checked on any machine.
#include <algorithm>
#include <cstddef>

#define SCAN_HOST_TEST 1

struct int4 {
    int x, y, z, w;
};
static inline int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }
struct uint4 {
    unsigned int x, y, z, w;
};
static inline int __viaddmax_s32(int a, int b, int c) { return std::max(a + b, c); }
static inline int __vimax3_s32(int a, int b, int c) { return std::max(a, std::max(b, c)); }
// DPX's packed forms: each 16-bit half on its own (sums wrap to 16 bits, as the kernels never let them).
static inline int half_of(unsigned int v, int k) { return (short)(k ? v >> 16 : v & 0xffffu); }
static inline unsigned int halves(int lo, int hi) { return ((unsigned int)lo & 0xffffu) | ((unsigned int)hi << 16); }
static inline unsigned int __viaddmax_s16x2(unsigned int a, unsigned int b, unsigned int c) {
    int r[2];
    for (int k = 0; k < 2; ++k) r[k] = std::max((int)(short)(half_of(a, k) + half_of(b, k)), half_of(c, k));
    return halves(r[0], r[1]);
}
static inline unsigned int __vimax3_s16x2(unsigned int a, unsigned int b, unsigned int c) {
    int r[2];
    for (int k = 0; k < 2; ++k) r[k] = std::max(half_of(a, k), std::max(half_of(b, k), half_of(c, k)));
    return halves(r[0], r[1]);
}
template <typename T>
static inline T atomicAdd(T* p, T v) {
    T old = *p;
    *p += v;
    return old;
}
static inline int atomicSub(int* p, int v) {
    int old = *p;
    *p -= v;
    return old;
}
using std::max;
using std::min;

#include "scan_dp.cu"

#define SCAN_ARGS_PASS refs, ref_off, ref_len, pair_q, pair_r, pair_cp, prof, q_pad, seglen, cpint, warm, go, ge, sgo, sge, T

#define SCAN_HOST_KERNELS(LM)                                                                            \
    extern "C" void host_scan_pass1_##LM(int n_tasks, const int* task_pair, const int* task_seg,         \
                                         SCAN_ARGS_PARAMS, int* cp, int* entry, ScanCount* cand_count,   \
                                         int cand_cap, ScanCand* cands) {                                \
        SCAN_ARGS_MAKE(a);                                                                               \
        for (int t = 0; t < n_tasks; ++t)                                                                \
            scan_pass1_task<LM>(t, task_pair, task_seg, a, cp, entry, cand_count, cand_cap, cands);      \
    }                                                                                                    \
    extern "C" void host_scan_pass1_grid_##LM(long long n_tasks, int n_rt, const int* rt_ref,              \
                                              const int* rt_seg, const int* g_slot, const int* g_lo,         \
                                              const int* g_hi, const long long* ref_cp0, long long cp_per_q, \
                                              SCAN_ARGS_PARAMS, int* cp, int* entry, ScanCount* cand_count,  \
                                              int cand_cap, ScanCand* cands) {                               \
        SCAN_ARGS_MAKE(a);                                                                               \
        for (long long t = 0; t < n_tasks; ++t)                                                          \
            scan_pass1_grid_task<LM>(t, n_rt, rt_ref, rt_seg, g_slot, g_lo, g_hi, ref_cp0, cp_per_q, a, cp, \
                                     entry, cand_count, cand_cap, cands);                                \
    }                                                                                                    \
    extern "C" void host_scan_repair_##LM(int n, const int* rp_pair, const int* rp_seg,                  \
                                          const long long* pair_task0, const int* pair_tasks,            \
                                          SCAN_ARGS_PARAMS, int* cp, const int* entry,                   \
                                          unsigned char* recomputed, ScanCount* cand_count,              \
                                          int cand_cap, ScanCand* cands) {                               \
        SCAN_ARGS_MAKE(a);                                                                               \
        for (int x = 0; x < n; ++x)                                                                      \
            scan_repair_pair<LM>(x, rp_pair, rp_seg, pair_task0, pair_tasks, a, cp, entry, recomputed,   \
                                 cand_count, cand_cap, cands);                                           \
    }                                                                                                    \
    extern "C" void host_scan_trace_##LM(int n, const int* sv_pair, const int* sv_i, const int* sv_j,    \
                                         SCAN_ARGS_PARAMS, const int* cp, int K, unsigned int* scratch,  \
                                         long long nl, int* out_i0, int* out_j0, int* out_n,             \
                                         unsigned char* ops, long long opcap) {                          \
        SCAN_ARGS_MAKE(a);                                                                               \
        for (int x = 0; x < n; ++x)                                                                      \
            scan_trace_one<LM>(x, sv_pair, sv_i, sv_j, a, cp, K, scratch, n, out_i0, out_j0, out_n,     \
                               ops, opcap);                                                              \
    }

SCAN_HOST_KERNELS(8)
SCAN_HOST_KERNELS(16)
SCAN_HOST_KERNELS(24)
SCAN_HOST_KERNELS(32)
SCAN_HOST_KERNELS(40)
SCAN_HOST_KERNELS(48)
SCAN_HOST_KERNELS(56)
SCAN_HOST_KERNELS(64)

extern "C" void host_scan_group_count_0(long long n, const ScanCand* cands, long long n_rt, long long n_r,
                                        const int* map, int* count) {
    for (long long x = 0; x < n; ++x) scan_group_count_one(x, cands, n_rt, n_r, map, count);
}

extern "C" void host_scan_group_scatter_0(long long n, const ScanCand* cands, long long n_rt, long long n_r,
                                          const int* map, const long long* start, int* count, int* gi, int* gj,
                                          int* gs) {
    for (long long x = 0; x < n; ++x) scan_group_scatter_one(x, cands, n_rt, n_r, map, start, count, gi, gj, gs);
}

extern "C" void host_scan_grid_trace_args_0(long long n, const int* sv_pair, int n_r, int a, long long cp_per_q,
                                            const long long* ref_cp0, int* pair_q, int* pair_r, long long* pair_cp) {
    for (long long x = 0; x < n; ++x) scan_grid_trace_args_one(x, sv_pair, n_r, a, cp_per_q, ref_cp0, pair_q, pair_r,
                                                               pair_cp);
}

extern "C" void host_scan_sort_suppress_0(long long n_pairs, const long long* start, int* gi, int* gj, int* gs,
                                          int window, int limit, unsigned char* keep, int* diag, long long* n_keep,
                                          unsigned int* n_big) {
    for (long long p = 0; p < n_pairs; ++p)
        scan_sort_suppress_pair(p, start, gi, gj, gs, window, limit, keep, diag, n_keep, n_big);
}

extern "C" void host_scan_compact_0(long long n_pairs, const long long* start, const long long* sv_end,
                                    const long long* n_keep, const int* gi, const int* gj, const int* gs,
                                    const unsigned char* keep, long long total, int* out) {
    for (long long p = 0; p < n_pairs; ++p) scan_compact_pair(p, start, sv_end, n_keep, gi, gj, gs, keep, total, out);
}

extern "C" void host_scan_verify_grid_0(long long n, int n_later, const int* later_rt, int n_rt, const int* rt_ref,
                                        const int* rt_seg, const int* g_lo, const int* g_hi, const long long* ref_cp0,
                                        long long cp_per_q, int seglen, int cpint, int width, const int* cp,
                                        const int* entry, unsigned char* bad) {
    for (long long x = 0; x < n; ++x)
        scan_verify_grid_one(x, n_later, later_rt, n_rt, rt_ref, rt_seg, g_lo, g_hi, ref_cp0, cp_per_q, seglen, cpint,
                             width, cp, entry, bad);
}

// The packed pass 1, for the buckets that take it (gpu_plan.PACKED_ROWS).
#define SCAN_HOST_PACKED(LM)                                                                             \
    extern "C" void host_scan_pass1_grid2_##LM(long long n_threads, int nq, int n_rt, const int* rt_ref,         \
                                               const int* rt_seg, const int* g_lo, const int* g_hi,              \
                                               const long long* ref_cp0, long long cp_per_q,                     \
                                               const ScanPair* prof2, const int* pad2, SCAN_ARGS_PARAMS, int* cp, \
                                               int* entry, ScanCount* cand_count, int cand_cap, ScanCand* cands) { \
        SCAN_ARGS_MAKE(a);                                                                               \
        for (long long u = 0; u < n_threads; ++u)                                                        \
            scan_pass1_grid2_task<LM>(u, nq, n_rt, rt_ref, rt_seg, g_lo, g_hi, ref_cp0, cp_per_q, prof2, pad2, a, \
                                      cp, entry, cand_count, cand_cap, cands);                           \
    }

SCAN_HOST_PACKED(16)
SCAN_HOST_PACKED(24)
SCAN_HOST_PACKED(32)
