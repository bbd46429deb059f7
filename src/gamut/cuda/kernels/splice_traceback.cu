// Traceback of the spliced alignment on the GPU, one thread block per case, reading the forward
// pass's last/pred arrays where they are (splice.cu leaves them on the device). It gives exactly
// what gamut.splicing.cpu.traceback gives, with the same tie rules:
//
// - the final exon is the argmax of last[k][n] (smallest sorted index on ties);
// - an exon left at target column j is recomputed over columns 0..j from its entry row
//   row[c] = c*gap if pred[k][c] < 0 else last[pred[k][c]][c]; each cell's move is MATCH if
//   d >= u and d >= h, else BASE_GAP if u >= h, else TARGET_GAP (d = diagonal + score, u = up +
//   gap, h = the final left cell + gap); column 0 is always BASE_GAP;
// - at the exon's entry row the walk goes to p = pred[k][j] (checked: p < k and end_p <=
//   start_k), or, for p = -1, ends with j target symbols against gaps.
//
// Rows in shifted form. With P[c] = H[c] - c*gap (H: a DP row), a row is
//   v[c] = max(P'[c - 1] + score - gap, P'[c] + gap)   (P': the row above; C[c] - c*gap)
//   P[c] = max(P[c - 1], v[c])                          (a running maximum: the horizontal moves)
// and the move of cell c is TARGET_GAP when v[c] < P[c - 1], else MATCH when the diagonal term is
// >= the vertical one, else BASE_GAP: the tie rules above, exactly (all terms shifted alike).
// Column 0: P[0] = P'[0] + gap, BASE_GAP.
//
// Work of a block. The columns 0..j of an exon are cut into strips of at most `cap` columns (the
// kernel's dynamic shared memory holds one strip: one row of P, the target symbols, the moves of
// two rows); a case with j < cap has one strip. Thread t owns a segment of `seg` columns of the
// strip (a multiple of 4) and, in the steps, is the only thread that reads or writes the row
// values of its segment, so one row buffer serves (updated in place; the entry row, built by the
// whole block, is read across segments only behind the barrier before step 0). Step s of a strip
// computes, per thread and in one pass over its segment, row s (its values and moves; s >= 1) and
// the maximum of v over the segment for row s + 1 (s < len). The block then max-scans these maxima
// (warp shuffles, warp totals): the exclusive prefix of thread t is P[c0 - 1] of row s + 1 (c0:
// the segment's first column), which is what thread t needs in step s + 1 as the running maximum
// it starts from and, in step s + 2, as its diagonal. One barrier per row. The entry row is built
// from pred/last by the whole block (coalesced) before step 0. Strips after the first start from
// the previous strip's last column, kept per row in a global boundary array (`bnd`, two buffers of
// len + 1 values) and staged in shared memory with the exon's symbols every TB_CHUNK rows. Moves
// (2 bits per cell) are written to a shared staging row, then copied to the global moves matrix
// with 16-byte stores in the next step.
//
// The walk. Thread 0 follows the moves through a TB_WIN_ROWS x TB_WIN_BYTES window of the moves
// matrix that the whole block loads into shared memory (the rows above and the columns left of
// the walker); when the walker leaves it, the block loads the next window.
//
// The per-block logic (tb_run) is written against an executor: on the GPU, phases are separated
// by __syncthreads; splice_host_harness.cu runs the same phases thread by thread on the CPU, so
// tests without a GPU check this very code against the CPU traceback.

#ifndef SPLICE_HOST_TEST
#define TB_DEV __device__ __forceinline__
#define TB_NO_UNROLL _Pragma("unroll 1")
#else
#define TB_DEV inline
#define TB_NO_UNROLL
#include <algorithm>
#include <cstring>
using std::max;
using std::min;
#endif

#ifndef TB_THREADS
#define TB_THREADS 512
#endif
#ifndef TB_MIN_BLOCKS
#define TB_MIN_BLOCKS 1
#endif
#if !defined(FINISH_BIT) || !defined(OP_MATCH) || !defined(OP_BASE_GAP) || !defined(OP_TARGET_GAP)
#error "compile with the options of gamut.splicing.gpu_layout.TRACEBACK_OPTIONS"
#endif

#define TB_NEG (-(1 << 30))  // below every shifted value (|P| < 2^29: SCORE_LIMIT 2^28 and |c*gap| < 2^28)
#define TB_WARPS ((TB_THREADS + 31) / 32)
// Rows of exon symbols and boundary values staged at a time.
#ifndef TB_CHUNK
#define TB_CHUNK 128
#endif
// The walk's window of the moves matrix: rows x bytes (4 columns per byte); bytes a multiple of 16.
#ifndef TB_WIN_ROWS
#define TB_WIN_ROWS 128
#endif
#ifndef TB_WIN_BYTES
#define TB_WIN_BYTES 64
#endif
// Dynamic shared memory of a strip of `cap` columns (cap a multiple of 64): the row (4 bytes a
// column), the target symbols (1), two staged rows of moves (2 x 1/4) and the walk's window.
#define TB_DYN_BYTES(cap) ((cap) * 4 + (cap) + (cap) / 2 + TB_WIN_ROWS * TB_WIN_BYTES)

// Status of a case (result[4 * case + 3]); gamut/splicing/gpu.py names them.
#define TB_OK 0
#define TB_BAD_PRED 1    // the predecessor at an exon's entry cannot precede it
#define TB_PRED_RANGE 2  // a pred entry is neither -1 nor an exon of the case
#define TB_OPS_FULL 3    // more alignment operations than the case's capacity

#ifdef SPLICE_HOST_TEST
struct TbInt4 {
    int x, y, z, w;
};
TB_DEV TbInt4 tb_ld4(const int* p) {
    TbInt4 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
TB_DEV void tb_st4(int* p, TbInt4 v) { std::memcpy(p, &v, sizeof v); }
TB_DEV unsigned tb_ld32(const unsigned char* p) {
    unsigned v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
TB_DEV void tb_copy16(unsigned char* d, const unsigned char* s) { std::memcpy(d, s, 16); }
#else
typedef int4 TbInt4;
TB_DEV TbInt4 tb_ld4(const int* p) { return *reinterpret_cast<const int4*>(p); }
TB_DEV void tb_st4(int* p, TbInt4 v) { *reinterpret_cast<int4*>(p) = v; }
TB_DEV unsigned tb_ld32(const unsigned char* p) { return *reinterpret_cast<const unsigned*>(p); }
TB_DEV void tb_copy16(unsigned char* d, const unsigned char* s) {
    *reinterpret_cast<uint4*>(d) = *reinterpret_cast<const uint4*>(s);
}
#endif

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
    unsigned char* moves;  // scratch: 2-bit moves of one exon, rows of `pitch` bytes (16-byte aligned)
    const long long* moves_off;
    int* bnd;  // scratch: two buffers of strip boundary values (cases wider than a strip)
    const long long* bnd_off;
    unsigned char* ops;  // output: a case's ops end at ops_off[c + 1], in order
    const long long* ops_off;
    int* chain;   // output: a case's chain ends at exon_off[c] + K, in order
    int* result;  // output: per case score, ops, chain length, status
    int cap;      // columns of a strip (a multiple of 64)
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
    int* bnd;
    long long bnd_half;  // values per boundary buffer
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
    C.bnd = A.bnd + A.bnd_off[cs];
    C.bnd_half = (A.bnd_off[cs + 1] - A.bnd_off[cs]) / 2;
    C.ops = A.ops + A.ops_off[cs];
    C.ops_cap = A.ops_off[cs + 1] - A.ops_off[cs];
    C.chain = A.chain + A.exon_off[cs];
    C.result = A.result + 4 * (long long)cs;
    return C;
}

// The block's dynamic shared memory, carved for strips of `cap` columns (TB_DYN_BYTES).
struct TbDyn {
    int* row;            // cap: P of the current row, by strip-local column
    unsigned char* tq;   // cap: tq[l] = target[s0 + l - 1], the target symbol of column s0 + l
    unsigned char* stg;  // 2 x cap / 4: moves of the last two rows, by strip-local byte
    unsigned char* win;  // TB_WIN_ROWS x TB_WIN_BYTES: the walk's window
};

TB_DEV TbDyn tb_dyn(unsigned char* base, int cap) {
    TbDyn D;
    D.row = reinterpret_cast<int*>(base);
    D.tq = base + 4 * (long long)cap;
    D.stg = D.tq + cap;
    D.win = D.stg + cap / 2;
    return D;
}

// Block state in shared memory.
struct TbShared {
    TbCase C;     // the case (in shared memory: its fields are loaded where used, not kept in registers)
    int scs[40];  // scs[8 a + b] = matrix[a][b] - gap (the diagonal term's shift)
    int gap;
    int cap;
    int k;            // current exon (sorted index within the case)
    int j;            // column at which the walk leaves (enters, for the lead gaps) it
    int len;          // its length
    long long pitch;  // bytes per row of moves (a multiple of 16)
    int nstrip;       // strips of columns 0..j
    int s0, s1;       // the current strip's columns [s0, s1)
    int seg;          // columns per thread (a multiple of 4)
    int wi, wj;       // the walker: row (1..len; 0 when out of the exon) and column
    int r_lo, b0;     // the window: moves rows r_lo..wi-1, bytes b0..b0+TB_WIN_BYTES-1
    long long n_ops;  // written so far, backwards from the end of the case's ops
    int n_chain;
    int score;
    int status;
    int done;
    int carry[TB_CHUNK + 2];            // rows base..: P[s0 - 1] (previous strip), TB_NEG for strip 0
    unsigned char sym[TB_CHUNK + 2];    // rows base..: the exon's symbol (row 0: none)
    int wx[2][TB_THREADS];  // per parity: exclusive max-scan within each warp (best_v/best_k at the start)
    int wtot[2][TB_WARPS];  // per parity: each warp's maximum
    int dg[TB_THREADS];     // per thread, at step s: P[c0 - 1] of row s - 1 (its first diagonal)
};

TB_DEV void tb_load(TbShared& S, const TbArgs& A, int t, int T) {
    for (int q = t; q < 25; q += T) S.scs[8 * (q / 5) + q % 5] = A.matrix[q] - A.gap;
    if (t == 0) {
        S.gap = A.gap;
        S.cap = A.cap;
    }
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
    S.wx[0][t] = bv;
    S.wx[1][t] = bk;
}

// Exon k, left at column j, becomes the current exon (thread 0).
TB_DEV void tb_enter(TbShared& S, const TbCase& C, int k, int j) {
    S.k = k;
    S.j = j;
    S.len = C.ends[k] - C.starts[k];
    S.pitch = (((long long)j + 1 + 3) / 4 + 15) & ~15LL;
    S.nstrip = (j + S.cap) / S.cap;  // ceil((j + 1) / cap)
    C.chain[C.K - 1 - S.n_chain] = k;
    ++S.n_chain;
}

// Best final exon, part 2 (thread 0): combine the threads' bests, smallest index on ties.
TB_DEV void tb_start(TbShared& S, const TbCase& C, int T) {
    int bv = 0, bk = -1;
    for (int t = 0; t < T; ++t) {
        const int k = S.wx[1][t], v = S.wx[0][t];
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
    tb_enter(S, C, bk, C.n);
}

// Strip q of the current exon (thread 0).
TB_DEV void tb_strip(TbShared& S, int q, int T) {
    S.s0 = q * S.cap;
    S.s1 = min(S.s0 + S.cap, S.j + 1);
    const int w = S.s1 - S.s0;
    S.seg = (((w + T - 1) / T) + 3) & ~3;
}

// Boundary buffer that strip q reads (strip q - 1 wrote it) or writes.
TB_DEV const int* tb_bnd_in(const TbCase& C, int q) { return C.bnd + ((q + 1) & 1) * C.bnd_half; }
TB_DEV int* tb_bnd_out(const TbCase& C, int q) { return C.bnd + (q & 1) * C.bnd_half; }

// Staging of rows base .. base + TB_CHUNK + 1 (those up to len): symbols and left carries.
TB_DEV void tb_stage(TbShared& S, const TbCase& C, int q, int base, int t, int T) {
    const unsigned char* sym = C.stream + C.seg_row[S.k];
    const int* in = tb_bnd_in(C, q);
    for (int r = t; r < TB_CHUNK + 2; r += T) {
        const int i = base + r;
        if (i > S.len) break;
        S.sym[r] = i >= 1 ? (unsigned char)(sym[i] & ~FINISH_BIT) : (unsigned char)0;
        S.carry[r] = (S.s0 > 0 && i >= 1) ? in[i] : TB_NEG;
    }
}

// The target symbols of the strip (tq[l]: the symbol of column s0 + l, that is target[s0 + l - 1]).
TB_DEV void tb_target(const TbShared& S, const TbCase& C, const TbDyn& D, int t, int T) {
    const int w = S.s1 - S.s0;
    for (int l = t; l < w; l += T) {
        const int c = S.s0 + l;
        D.tq[l] = c >= 1 ? C.target[c - 1] : (unsigned char)0;
    }
}

// Entry row value of column c, shifted (c*gap for the chain start, else last[p][c]; minus c*gap).
TB_DEV int tb_entry_value(TbShared& S, const TbCase& C, const int* pr, int c) {
    const int p = pr[c];
    if (p < -1 || p >= C.K) {
        S.status = TB_PRED_RANGE;  // every writer stores the same value
        return 0;
    }
    return p < 0 ? 0 : C.last[(long long)p * C.width + c] - c * S.gap;
}

// The entry row of the strip (coalesced: column s0 + t, s0 + t + T, ...), and the entry value
// left of the strip, thread 0's first diagonal.
TB_DEV void tb_entry_row(TbShared& S, const TbCase& C, const TbDyn& D, int t, int T) {
    const int s0 = S.s0, w = S.s1 - s0;
    const int* pr = C.pred + (long long)S.k * C.width;
    for (int l = t; l < w; l += T) D.row[l] = tb_entry_value(S, C, pr, s0 + l);
    if (t == 0 && s0 > 0) S.dg[0] = tb_entry_value(S, C, pr, s0 - 1);
}

// Step 0 of a strip (thread t), after tb_entry_row: the diagonal carry of the segment and its
// maximum of v for row 1.
TB_DEV int tb_entry(TbShared& S, const TbCase& C, const TbDyn& D, int t) {
    const int s0 = S.s0;
    const int c0 = s0 + t * S.seg, c1 = min(c0 + S.seg, S.s1);
    if (c0 >= c1) return TB_NEG;
    const int* row = D.row - s0;  // by column
    const unsigned char* tq = D.tq - s0;
    const int gap = S.gap;
    const int* scA = S.scs + 8 * S.sym[1];
    int amax = t == 0 ? S.carry[1] : TB_NEG;
    int c = c0, diag;
    if (c == 0) {
        amax = max(amax, row[0] + gap);
        diag = row[0];
        c = 1;
    } else {
        diag = c0 > s0 ? row[c0 - 1] : S.dg[0];  // P[c0 - 1] of row 0
        S.dg[t] = diag;
    }
    for (; c < c1; ++c) {
        const int up = row[c];
        amax = max(amax, max(diag + scA[tq[c]], up + gap));
        diag = up;
    }
    return amax;
}

// One cell of step s: row s at column c (up: P of row s - 1 at c; tc: the target symbol), then
// row s + 1's v at c when A. run: P[c - 1] of row s on entry, P[c] on exit; diag likewise for row s - 1.
#define TB_CELL(A, up, tc, mv)                                                             \
    {                                                                                      \
        const int d_ = diag + scC[tc];                                                     \
        const int u_ = (up) + gap;                                                         \
        const int v_ = max(d_, u_);                                                        \
        mv = v_ >= run ? (d_ >= u_ ? OP_MATCH : OP_BASE_GAP) : OP_TARGET_GAP;              \
        const int next_ = max(run, v_);                                                    \
        if (A) amax = max(amax, max(run + scA[tc], next_ + gap));                          \
        run = next_;                                                                       \
        diag = (up);                                                                       \
    }

// Step s >= 1 of a strip (thread t): the staged moves of row s - 1 to global memory, then row s
// over the segment and, when A (s < len), the segment's maximum of v for row s + 1. e: the
// exclusive prefix of the segment maxima of row s (P[c0 - 1] of row s for t > 0).
template <bool A>
TB_DEV int tb_step(TbShared& S, const TbCase& C, const TbDyn& D, int q, int s, int base, int t, int T, int e) {
    const int s0 = S.s0, s1 = S.s1;
    const int units = (((s1 - s0 + 3) >> 2) + 15) >> 4;  // 16-byte units of a staged row
    if (s >= 2) {
        const unsigned char* from = D.stg + ((s - 1) & 1) * (S.cap >> 2);
        unsigned char* to = C.moves + (long long)(s - 2) * S.pitch + (s0 >> 2);
        for (int u = t; u < units; u += T) tb_copy16(to + 16 * u, from + 16 * u);
    }
    const int c0 = s0 + t * S.seg, c1 = min(c0 + S.seg, s1);
    if (c0 >= c1) return TB_NEG;
    const int r = s - base;
    const int gap = S.gap;
    const int* scC = S.scs + 8 * S.sym[r];
    const int* scA = S.scs + 8 * S.sym[A ? r + 1 : r];
    int run = t == 0 ? S.carry[r] : e;  // P[c0 - 1] of row s (unused at column 0)
    int diag = S.dg[t];                 // P[c0 - 1] of row s - 1
    S.dg[t] = run;
    int amax = (A && t == 0) ? S.carry[r + 1] : TB_NEG;
    int* row = D.row - s0;  // by column
    const unsigned char* tq = D.tq - s0;
    unsigned char* stg = D.stg + (s & 1) * (S.cap >> 2) - (s0 >> 2);  // by byte of the moves row
    int c = c0;
    unsigned bits = 0;
    if (c == 0) {  // column 0 (thread 0 of strip 0): a vertical move; then columns 1..3
        const int up = row[0];
        run = up + gap;
        row[0] = run;
        diag = up;
        if (A) amax = max(amax, run + gap);
        bits = OP_BASE_GAP;
        for (c = 1; c < 4 && c < c1; ++c) {
            const int u = row[c];
            const int tc = tq[c];
            int m;
            TB_CELL(A, u, tc, m);
            row[c] = run;
            bits |= (unsigned)m << (2 * c);
        }
        stg[0] = (unsigned char)bits;
        bits = 0;
    }
    const int c4 = c0 + ((c1 - c0) & ~3);  // end of the whole groups of 4 columns
    TB_NO_UNROLL
    for (; c < c4; c += 4) {
        const TbInt4 up = tb_ld4(row + c);
        const unsigned w = tb_ld32(tq + c);
        int m0, m1, m2, m3;
        TbInt4 out;
        TB_CELL(A, up.x, w & 0xff, m0);
        out.x = run;
        TB_CELL(A, up.y, (w >> 8) & 0xff, m1);
        out.y = run;
        TB_CELL(A, up.z, (w >> 16) & 0xff, m2);
        out.z = run;
        TB_CELL(A, up.w, w >> 24, m3);
        out.w = run;
        tb_st4(row + c, out);
        stg[c >> 2] = (unsigned char)(m0 | (m1 << 2) | (m2 << 4) | (m3 << 6));
    }
    if (c < c1) {  // the strip's last, partial group
        for (; c < c1; ++c) {
            const int u = row[c];
            const int tc = tq[c];
            int m;
            TB_CELL(A, u, tc, m);
            row[c] = run;
            bits |= (unsigned)m << (2 * (c & 3));
        }
        stg[(c1 - 1) >> 2] = (unsigned char)bits;
    }
    if (c1 == s1 && s1 <= S.j) tb_bnd_out(C, q)[s] = run;  // P[s1 - 1] for the next strip
    return amax;
}

// The staged moves of the strip's last row to global memory.
TB_DEV void tb_flush(const TbShared& S, const TbCase& C, const TbDyn& D, int t, int T) {
    const int s0 = S.s0, len = S.len;
    const int units = (((S.s1 - s0 + 3) >> 2) + 15) >> 4;
    const unsigned char* from = D.stg + (len & 1) * (S.cap >> 2);
    unsigned char* to = C.moves + (long long)(len - 1) * S.pitch + (s0 >> 2);
    for (int u = t; u < units; u += T) tb_copy16(to + 16 * u, from + 16 * u);
}

// The window for the walker at (wi, wj): rows wi - TB_WIN_ROWS .. wi - 1 of the moves, the 16-byte
// aligned bytes up to the walker's (thread 0).
TB_DEV void tb_aim(TbShared& S) {
    S.r_lo = max(0, S.wi - TB_WIN_ROWS);
    S.b0 = max(0, ((S.wj >> 2) & ~15) - (TB_WIN_BYTES - 16));
}

TB_DEV void tb_window(const TbShared& S, const TbCase& C, const TbDyn& D, int t, int T) {
    const int per_row = TB_WIN_BYTES / 16;
    const int units = (S.wi - S.r_lo) * per_row;
    for (int u = t; u < units; u += T) {
        const int r = u / per_row, b = S.b0 + 16 * (u % per_row);
        if (b < S.pitch) tb_copy16(D.win + r * TB_WIN_BYTES + (b - S.b0), C.moves + (S.r_lo + r) * S.pitch + b);
    }
}

// The walk inside the window (thread 0), until it leaves the window or the exon (wi = 0).
TB_DEV void tb_walk(TbShared& S, const TbCase& C, const TbDyn& D) {
    int i = S.wi, j = S.wj;
    const int r_lo = S.r_lo, b0 = S.b0;
    long long n_ops = S.n_ops;
    while (i > 0 && i - 1 >= r_lo && (j >> 2) >= b0) {
        const int m = (D.win[(i - 1 - r_lo) * TB_WIN_BYTES + (j >> 2) - b0] >> (2 * (j & 3))) & 3;
        if (n_ops >= C.ops_cap) {
            S.status = TB_OPS_FULL;
            S.done = 1;
            break;
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
    S.wi = i;
    S.wj = j;
    if (i > 0) tb_aim(S);
}

// The walk left the exon at column wj (thread 0): to its predecessor, or the chain starts.
TB_DEV void tb_leave(TbShared& S, const TbCase& C) {
    const int k = S.k, j = S.wj;
    const int p = C.pred[(long long)k * C.width + j];
    if (p < -1 || p >= C.K) {
        S.status = TB_PRED_RANGE;
        S.done = 1;
    } else if (p >= 0 && (p >= k || C.ends[p] > C.starts[k])) {
        S.status = TB_BAD_PRED;
        S.done = 1;
    } else if (p >= 0) {
        tb_enter(S, C, p, j);
    } else if (S.n_ops + j > C.ops_cap) {
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

// One case, start to end, on executor x:
// - par(f): f(t) for every thread t, then a barrier;
// - one(f): f() on thread 0, then a barrier;
// - step(S, s, f): f(t, e) for every thread t, e being the exclusive max-prefix over threads of
//   the values returned in the previous step (parity s & 1), leaves the scan of f's values
//   under parity (s + 1) & 1, then a barrier.
// Control values in S are written by thread 0 in one() and read by all threads after its barrier.
// In a step, thread t writes only its own segment of the row, of the staged moves of row s and
// S.dg[t]; it reads other threads' data only as left by earlier phases (the entry row in step 0,
// the staged moves of row s - 1, the target symbols, S.sym/S.carry, the previous step's scan).
template <class X>
TB_DEV void tb_run(X& x, TbShared& S, const TbArgs& A, int cs, const TbDyn& D) {
    const int T = x.threads();
    x.par([&](int t) {
        tb_load(S, A, t, T);
        if (t == 0) S.C = tb_case(A, cs);
    });
    const TbCase& C = S.C;
    x.par([&](int t) { tb_best(S, C, t, T); });
    x.one([&]() { tb_start(S, C, T); });
    while (!S.done) {
        const int len = S.len, nstrip = S.nstrip;
        for (int q = 0; q < nstrip; ++q) {
            x.one([&]() { tb_strip(S, q, T); });
            x.par([&](int t) {
                tb_stage(S, C, q, 0, t, T);
                tb_target(S, C, D, t, T);
                tb_entry_row(S, C, D, t, T);
            });
            x.step(S, 0, [&](int t, int) { return tb_entry(S, C, D, t); });
            int base = 0;
            for (int s = 1; s < len; ++s) {
                if (s - base > TB_CHUNK) {  // the step reads rows s - base and s - base + 1
                    base = s;
                    x.par([&](int t) { tb_stage(S, C, q, base, t, T); });
                }
                x.step(S, s, [&](int t, int e) { return tb_step<true>(S, C, D, q, s, base, t, T, e); });
            }
            if (len - base > TB_CHUNK + 1) {
                base = len;
                x.par([&](int t) { tb_stage(S, C, q, base, t, T); });
            }
            x.step(S, len, [&](int t, int e) { return tb_step<false>(S, C, D, q, len, base, t, T, e); });
            x.par([&](int t) { tb_flush(S, C, D, t, T); });
        }
        x.one([&]() {
            S.wi = S.len;
            S.wj = S.j;
            tb_aim(S);
        });
        while (S.wi > 0 && !S.done) {
            x.par([&](int t) { tb_window(S, C, D, t, T); });
            x.one([&]() { tb_walk(S, C, D); });
        }
        if (!S.done) x.one([&]() { tb_leave(S, C); });
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
    __device__ void step(TbShared& S, int s, F f) {
        const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
        const int p = s & 1;
        // The exclusive prefix of the previous step: the warps before (lane w holds warp w's
        // total, reduced over the warp) and the threads before within the warp.
        int e = lane < warp ? S.wtot[p][lane] : TB_NEG;
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) e = max(e, __shfl_xor_sync(TB_FULL_MASK, e, d));
        e = max(e, S.wx[p][t]);
        int v = f(t, e);
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const int o = __shfl_up_sync(TB_FULL_MASK, v, d);
            if (lane >= d) v = max(v, o);
        }
        const int before = __shfl_up_sync(TB_FULL_MASK, v, 1);
        S.wx[p ^ 1][t] = lane == 0 ? TB_NEG : before;
        if (lane == 31) S.wtot[p ^ 1][warp] = v;
        __syncthreads();
    }
};

extern "C" __global__ void __launch_bounds__(TB_THREADS, TB_MIN_BLOCKS) splice_traceback(
    const int* __restrict__ last, const int* __restrict__ pred, const long long* __restrict__ out_off,
    const unsigned char* __restrict__ stream, const long long* __restrict__ stream_off,
    const int* __restrict__ seg_row, const int* __restrict__ starts, const int* __restrict__ ends,
    const long long* __restrict__ exon_off, const int* __restrict__ n_exons,
    const unsigned char* __restrict__ target, const long long* __restrict__ target_off,
    const int* __restrict__ target_len, const int* __restrict__ matrix, const int gap,
    unsigned char* moves, const long long* __restrict__ moves_off, int* bnd, const long long* __restrict__ bnd_off,
    unsigned char* ops, const long long* __restrict__ ops_off, int* chain, int* result,
    const int* __restrict__ case_order, int* next_case, const int cap)
{
    __shared__ TbShared S;
    extern __shared__ __align__(16) unsigned char tb_dyn_base[];
    __shared__ int slot;
    // Cases are taken in case_order (largest first) as blocks start, whatever order the
    // hardware starts blocks in.
    if (threadIdx.x == 0) slot = atomicAdd(next_case, 1);
    __syncthreads();
    const TbArgs A = {last, pred, out_off, stream, stream_off, seg_row, starts, ends, exon_off, n_exons, target,
                      target_off, target_len, matrix, gap, moves, moves_off, bnd, bnd_off, ops, ops_off, chain,
                      result, cap};
    const TbDyn D = tb_dyn(tb_dyn_base, cap);
    TbDeviceExec x;
    tb_run(x, S, A, case_order[slot], D);
}
#endif  // SPLICE_HOST_TEST
