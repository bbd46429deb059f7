// Traceback of the spliced alignment on the GPU, one thread block per case, reading the forward
// pass's last/pred arrays where they are (splice.cu leaves them on the device). It gives exactly
// what gamut.splice.cpu.traceback gives, with the same tie rules:
//
// - the final exon is the argmax of last[k][n] (smallest sorted index on ties);
// - an exon left at target column j is recomputed over columns 0..j from its entry row
//   row[c] = c*gap if pred[k][c] < 0 else last[pred[k][c]][c]; each cell's move is MATCH if
//   d >= u and d >= h, else BASE_GAP if u >= h, else TARGET_GAP (d = diagonal + score, u = up +
//   gap, h = the final left cell + gap); column 0 is always BASE_GAP;
// - at the exon's entry row the walk goes to p = pred[k][j] (checked: p < k and end_p <=
//   start_k), or, for p = -1, ends with j target symbols against gaps.
//
// Rows are computed one at a time by the whole block: thread t owns a segment of columns (a
// multiple of 4, so that it writes whole bytes of 2-bit moves). Horizontal moves are a max-scan:
// H[c] = c*gap + max over c' <= c of (C[c'] - c'*gap) with C = max(diagonal, up), so each thread
// scans its segment (phase A), the block scans the segment maxima (warp shuffles, then warp
// totals), and each thread redoes its segment from its exclusive prefix, writing H and the
// moves (phase C). Then thread 0 walks the moves. The exon's symbols come from the exon stream
// of the forward pass (gamut/splice/stream.py).
//
// The per-block logic (tb_run) is written against an executor: on the GPU, phases are separated
// by __syncthreads; splice_host_harness.cu runs the same phases thread by thread on the CPU, so
// tests without a GPU check this very code against the CPU traceback.

#ifndef SPLICE_HOST_TEST
#define TB_DEV __device__ __forceinline__
#define TB_UNROLL4 _Pragma("unroll 4")
#else
#define TB_UNROLL4
#define TB_DEV inline
#include <algorithm>
using std::max;
using std::min;
#endif

#ifndef TB_THREADS
#define TB_THREADS 256
#endif
#if !defined(FINISH_BIT) || !defined(OP_MATCH) || !defined(OP_BASE_GAP) || !defined(OP_TARGET_GAP)
#error "compile with the options of gamut.splice.gpu.TRACEBACK_OPTIONS"
#endif

#define TB_NEG (-(1 << 29))
#define TB_WARPS ((TB_THREADS + 31) / 32)

// Status of a case (result[4 * case + 3]); gamut/splice/gpu.py names them.
#define TB_OK 0
#define TB_BAD_PRED 1    // the predecessor at an exon's entry cannot precede it
#define TB_PRED_RANGE 2  // a pred entry is neither -1 nor an exon of the case
#define TB_OPS_FULL 3    // more alignment operations than the case's capacity

// The kernel's arguments (all cases).
struct TbArgs {
    const int* last;
    const int* pred;
    const long long* out_off;  // last/pred of case c start at out_off[c] (K x (n + 1))
    const unsigned char* stream;
    const long long* stream_off;
    const int* seg_row;  // per exon: its entry row in its case's stream
    const int* starts;
    const int* ends;
    const long long* exon_off;
    const int* n_exons;
    const unsigned char* target;
    const long long* target_off;
    const int* target_len;
    const int* matrix;  // 5 x 5
    int gap;
    unsigned char* moves;  // scratch: 2-bit moves of one exon, rows of ceil((j + 1) / 4) bytes
    const long long* moves_off;
    int* rows;  // scratch: two DP rows of n + 1 values
    const long long* rows_off;
    unsigned char* ops;  // output: a case's ops end at ops_off[c + 1], in order
    const long long* ops_off;
    int* chain;   // output: a case's chain ends at exon_off[c] + K, in order
    int* result;  // output: per case score, ops, chain length, status
};

// One case's view of the arguments.
struct TbCase {
    const int* last;
    const int* pred;
    int K, n, width;
    const unsigned char* stream;
    const int* seg_row;
    const int* starts;
    const int* ends;
    const unsigned char* target;
    unsigned char* moves;
    int* rows;
    unsigned char* ops;
    long long ops_cap;
    int* chain;
    int* result;
};

TB_DEV TbCase tb_case(const TbArgs& A, int cs) {
    TbCase C;
    C.last = A.last + A.out_off[cs];
    C.pred = A.pred + A.out_off[cs];
    C.K = A.n_exons[cs];
    C.n = A.target_len[cs];
    C.width = C.n + 1;
    C.stream = A.stream + A.stream_off[cs];
    C.seg_row = A.seg_row + A.exon_off[cs];
    C.starts = A.starts + A.exon_off[cs];
    C.ends = A.ends + A.exon_off[cs];
    C.target = A.target + A.target_off[cs];
    C.moves = A.moves + A.moves_off[cs];
    C.rows = A.rows + A.rows_off[cs];
    C.ops = A.ops + A.ops_off[cs];
    C.ops_cap = A.ops_off[cs + 1] - A.ops_off[cs];
    C.chain = A.chain + A.exon_off[cs];
    C.result = A.result + 4 * (long long)cs;
    return C;
}

// Block state in shared memory.
struct TbShared {
    int mat[25];
    int gap;
    int k;        // current exon (sorted index within the case)
    int j;        // column at which the walk leaves (enters, for the lead gaps) it
    int len;      // its length
    int seg;      // columns per thread (multiple of 4) over columns 0..j
    long long pitch;  // bytes per row of moves
    long long n_ops;  // written so far, backwards from the end of the case's ops
    int n_chain;
    int score;
    int status;
    int done;
    int best_v[TB_THREADS];
    int best_k[TB_THREADS];
    int wexcl[TB_THREADS];  // exclusive max-scan of the segment maxima within each warp
    int wtot[TB_WARPS];     // each warp's maximum
};

TB_DEV void tb_load(TbShared& S, const TbArgs& A, int t, int T) {
    for (int q = t; q < 25; q += T) S.mat[q] = A.matrix[q];
    if (t == 0) S.gap = A.gap;
}

// Best final exon, part 1: each thread's best over k = t, t + T, ... (ascending, so strict >).
TB_DEV void tb_best(TbShared& S, const TbCase& C, int t, int T) {
    int bv = 0, bk = -1;
    for (int k = t; k < C.K; k += T) {
        const int v = C.last[(long long)k * C.width + C.n];
        if (bk < 0 || v > bv) {
            bv = v;
            bk = k;
        }
    }
    S.best_v[t] = bv;
    S.best_k[t] = bk;
}

// Exon k, left at column j, becomes the current exon (thread 0).
TB_DEV void tb_enter(TbShared& S, const TbCase& C, int k, int j, int T) {
    S.k = k;
    S.j = j;
    S.len = C.ends[k] - C.starts[k];
    const int width = j + 1;
    S.seg = (((width + T - 1) / T) + 3) & ~3;
    S.pitch = (width + 3) / 4;
    C.chain[C.K - 1 - S.n_chain] = k;
    ++S.n_chain;
}

// Best final exon, part 2 (thread 0): combine the threads' bests, smallest index on ties.
TB_DEV void tb_start(TbShared& S, const TbCase& C, int T) {
    int bv = 0, bk = -1;
    for (int t = 0; t < T; ++t) {
        const int k = S.best_k[t], v = S.best_v[t];
        if (k >= 0 && (bk < 0 || v > bv || (v == bv && k < bk))) {
            bv = v;
            bk = k;
        }
    }
    S.score = bv;
    S.n_ops = 0;
    S.n_chain = 0;
    S.status = TB_OK;
    S.done = 0;
    tb_enter(S, C, bk, C.n, T);
}

// Entry row of the current exon over columns 0..j into row buffer 0.
TB_DEV void tb_entry_row(TbShared& S, const TbCase& C, int t) {
    const int c0 = t * S.seg, c1 = min(c0 + S.seg, S.j + 1);
    const int* pr = C.pred + (long long)S.k * C.width;
    for (int c = c0; c < c1; ++c) {
        const int p = pr[c];
        if (p < -1 || p >= C.K) S.status = TB_PRED_RANGE;  // every writer stores the same value
        C.rows[c] = (p < 0 || p >= C.K) ? c * S.gap : C.last[(long long)p * C.width + c];
    }
}

// Row i (1..len) of the current exon, phase A: the maximum over the thread's segment of
// C[c] - c*gap (TB_NEG for an empty segment), C[0] = prev[0] + gap.
TB_DEV int tb_row_a(TbShared& S, const TbCase& C, int i, int t) {
    const int* __restrict__ prev = C.rows + ((i - 1) & 1) * C.width;
    const int* sc = S.mat + 5 * (C.stream[C.seg_row[S.k] + i] & ~FINISH_BIT);
    const int gap = S.gap;
    int c = t * S.seg;
    const int c1 = min(c + S.seg, S.j + 1);
    int run = TB_NEG;
    if (c >= c1) return run;
    int diag = prev[c == 0 ? 0 : c - 1];  // prev[c - 1], carried along the segment
    if (c == 0) {
        run = prev[0] + gap;
        c = 1;
    }
    int ramp = c * gap;
    TB_UNROLL4
    for (; c < c1; ++c) {
        const int up = prev[c];
        run = max(run, max(diag + sc[C.target[c - 1]], up + gap) - ramp);
        diag = up;
        ramp += gap;
    }
    return run;
}

// Row i, phase C: H over the segment from the exclusive prefix, and the moves.
TB_DEV void tb_row_c(TbShared& S, const TbCase& C, int i, int t) {
    const int* __restrict__ prev = C.rows + ((i - 1) & 1) * C.width;  // the two row buffers do not overlap
    int* __restrict__ cur = C.rows + (i & 1) * C.width;
    const int* sc = S.mat + 5 * (C.stream[C.seg_row[S.k] + i] & ~FINISH_BIT);
    const int gap = S.gap;
    int c = t * S.seg;
    const int c1 = min(c + S.seg, S.j + 1);
    if (c >= c1) return;
    unsigned char* mv = C.moves + (long long)(i - 1) * S.pitch;
    unsigned int bits = 0;
    int run, left, diag;  // the shifted running maximum, H[c - 1], prev[c - 1]
    if (c == 0) {
        diag = prev[0];
        left = diag + gap;  // H[0]: column 0 is always a vertical move
        run = left;
        cur[0] = left;
        bits = OP_BASE_GAP;
        c = 1;
    } else {
        run = S.wexcl[t];
        for (int w = 0; w < t / 32; ++w) run = max(run, S.wtot[w]);
        left = run + (c - 1) * gap;
        diag = prev[c - 1];
    }
    int ramp = c * gap;
    TB_UNROLL4
    for (; c < c1; ++c) {
        const int d = diag + sc[C.target[c - 1]];
        const int up = prev[c];
        const int u = up + gap;
        run = max(run, max(d, u) - ramp);
        const int h = run + ramp;
        const int hl = left + gap;
        const int move = (d >= u && d >= hl) ? OP_MATCH : (u >= hl ? OP_BASE_GAP : OP_TARGET_GAP);
        cur[c] = h;
        left = h;
        diag = up;
        ramp += gap;
        bits |= (unsigned int)move << (2 * (c & 3));
        if ((c & 3) == 3) {
            mv[c >> 2] = (unsigned char)bits;
            bits = 0;
        }
    }
    if (c1 & 3) mv[(c1 - 1) >> 2] = (unsigned char)bits;  // a last, partial byte
}

// The walk through the current exon's moves, then to its predecessor (thread 0).
TB_DEV void tb_walk(TbShared& S, const TbCase& C, int T) {
    int i = S.len, j = S.j;
    const int k = S.k;
    long long n_ops = S.n_ops;
    while (i > 0) {
        const int m = (C.moves[(long long)(i - 1) * S.pitch + (j >> 2)] >> (2 * (j & 3))) & 3;
        if (n_ops >= C.ops_cap) {
            S.status = TB_OPS_FULL;
            S.done = 1;
            return;
        }
        C.ops[C.ops_cap - 1 - n_ops] = (unsigned char)m;
        ++n_ops;
        if (m == OP_MATCH) {
            --i;
            --j;
        } else if (m == OP_BASE_GAP) {
            --i;
        } else {
            --j;
        }
    }
    S.n_ops = n_ops;
    const int p = C.pred[(long long)k * C.width + j];
    if (p < -1 || p >= C.K) {
        S.status = TB_PRED_RANGE;
        S.done = 1;
    } else if (p >= 0 && (p >= k || C.ends[p] > C.starts[k])) {
        S.status = TB_BAD_PRED;
        S.done = 1;
    } else if (p >= 0) {
        tb_enter(S, C, p, j, T);
    } else if (n_ops + j > C.ops_cap) {
        S.status = TB_OPS_FULL;
        S.done = 1;
    } else {
        S.j = j;  // chain start: target[0:j] against gaps
        S.done = 1;
    }
}

TB_DEV void tb_lead_gaps(TbShared& S, const TbCase& C, int t, int T) {
    for (int q = t; q < S.j; q += T) C.ops[C.ops_cap - 1 - S.n_ops - q] = OP_TARGET_GAP;
}

TB_DEV void tb_finish(TbShared& S, const TbCase& C) {
    if (S.status == TB_OK) S.n_ops += S.j;
    C.result[0] = S.score;
    C.result[1] = (int)S.n_ops;
    C.result[2] = S.n_chain;
    C.result[3] = S.status;
}

// One case, start to end, on executor x: par(f) runs f(t) for every thread t then a barrier,
// one(f) runs f on thread 0 then a barrier, scan(S, f) runs f(t) for every thread and leaves
// the warp-level exclusive max-scan of the results in S.wexcl/S.wtot, then a barrier. Control
// values are read from S only after a barrier and written (by thread 0) only in later phases.
template <class X>
TB_DEV void tb_run(X& x, TbShared& S, const TbArgs& A, const TbCase& C) {
    const int T = x.threads();
    x.par([&](int t) { tb_load(S, A, t, T); });
    x.par([&](int t) { tb_best(S, C, t, T); });
    x.one([&]() { tb_start(S, C, T); });
    while (!S.done) {
        x.par([&](int t) { tb_entry_row(S, C, t); });
        const int len = S.len;
        for (int i = 1; i <= len; ++i) {
            x.scan(S, [&](int t) { return tb_row_a(S, C, i, t); });
            x.par([&](int t) { tb_row_c(S, C, i, t); });
        }
        x.one([&]() { tb_walk(S, C, T); });
    }
    if (S.status == TB_OK) x.par([&](int t) { tb_lead_gaps(S, C, t, T); });
    x.one([&]() { tb_finish(S, C); });
}

#ifndef SPLICE_HOST_TEST
#define TB_FULL_MASK 0xffffffffu

struct TbDeviceExec {
    __device__ int threads() const { return TB_THREADS; }
    template <class F>
    __device__ void par(F f) {
        f((int)threadIdx.x);
        __syncthreads();
    }
    template <class F>
    __device__ void one(F f) {
        if (threadIdx.x == 0) f();
        __syncthreads();
    }
    template <class F>
    __device__ void scan(TbShared& S, F f) {
        const int t = threadIdx.x, lane = t & 31;
        int v = f(t);
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const int o = __shfl_up_sync(TB_FULL_MASK, v, d);
            if (lane >= d) v = max(v, o);
        }
        const int before = __shfl_up_sync(TB_FULL_MASK, v, 1);
        S.wexcl[t] = (lane == 0) ? TB_NEG : before;
        if (lane == 31) S.wtot[t >> 5] = v;
        __syncthreads();
    }
};

extern "C" __global__ void __launch_bounds__(TB_THREADS) splice_traceback(
    const int* __restrict__ last, const int* __restrict__ pred, const long long* __restrict__ out_off,
    const unsigned char* __restrict__ stream, const long long* __restrict__ stream_off,
    const int* __restrict__ seg_row, const int* __restrict__ starts, const int* __restrict__ ends,
    const long long* __restrict__ exon_off, const int* __restrict__ n_exons,
    const unsigned char* __restrict__ target, const long long* __restrict__ target_off,
    const int* __restrict__ target_len, const int* __restrict__ matrix, const int gap,
    unsigned char* moves, const long long* __restrict__ moves_off, int* rows, const long long* __restrict__ rows_off,
    unsigned char* ops, const long long* __restrict__ ops_off, int* chain, int* result,
    const int* __restrict__ case_order)
{
    __shared__ TbShared S;
    const TbArgs A = {last, pred, out_off, stream, stream_off, seg_row, starts, ends, exon_off, n_exons, target,
                      target_off, target_len, matrix, gap, moves, moves_off, rows, rows_off, ops, ops_off, chain,
                      result};
    const TbCase C = tb_case(A, case_order[blockIdx.x]);
    TbDeviceExec x;
    tb_run(x, S, A, C);
}
#endif  // SPLICE_HOST_TEST
