// miRanda-exact alignment DP on the GPU (docs/miranda-model.md §5-§7.1), compiled at run time by CuPy.
//
// Rows are held "bottom aligned" in a register array of LM rows (LM a multiple of 8 >= L):
// array row r is query row i = r - P + 1 with P = LM - L, rows r < P are unused. With this layout
// the seed rows (miRNA positions 2..8) are always r in [LM-8, LM-2] and row L is r = LM-1, so the
// row type is known at compile time.
//
// Pass 1 (scan_pass1): one thread per (pair, reference segment). Score-only DP that keeps, per
// row, D = max(A, B, C) of the current column and Bn = B of the next column; a thread starts
// `warm` columns before its segment from an all-zero column, emits candidates (best >= T, not
// ending in state B) for its own columns, writes the exact state every `cpint` columns
// (checkpoints) and the speculative state at its entry. The host checks every entry against the
// previous segment's checkpoint; scan_repair recomputes the segments that differ (exactness never
// rests on the warm-up).
//
// Pass 2 (scan_trace): one thread per surviving candidate. Full three-state DP with trace bytes
// (the SIMD engine's layout, gamut.scanning.engines.simd_traceback) over a window that starts at an exact checkpoint, then the traceback.
// A traceback that would leave the window is reported (n = -1) and redone on the CPU.

#ifndef SCAN_HOST_TEST
#define SCAN_GLOBAL __global__
#define SCAN_DEV __device__ __forceinline__
#define SCAN_LDG(p) __ldg(p)
#define SCAN_RARE __device__ __noinline__
#else
#define SCAN_GLOBAL
#define SCAN_DEV inline
#define SCAN_LDG(p) (*(p))
#define SCAN_RARE static
#endif

#define SCAN_NEG_INF (-2147483647 - 1)

// Candidate record: (task, i, j, score).
struct ScanCand {
    int task, i, j, score;
};

// Candidates emitted by a launch (stored while < cand_cap): 64-bit, so that the count stays exact
// however many cells pass the threshold (an int count could wrap and index cands out of bounds).
typedef unsigned long long ScanCount;

// Seed rows (miRNA positions 2..8) in the bottom-aligned layout; row LM-1 is row L (normal).
#define SCAN_SEED_ROW(r, LM) ((r) >= (LM) - 8 && (r) <= (LM) - 2)

// The score-only sweep's values: one int32 cell per register (ScanI32), or one cell of each of two
// queries in the 16-bit halves of a register (ScanP16, scan_pass1_grid2: Hopper's packed DPX
// instructions update both). `of(lo, hi)` makes a value from the two lanes' numbers (ScanI32 keeps lo).
typedef unsigned int ScanPair;

struct ScanI32 {
    typedef int V;
    typedef int4 V4;
    static constexpr int kMin = SCAN_NEG_INF;
    static constexpr int kMinusOne = -1;
    static SCAN_DEV int of(int lo, int) { return lo; }
    static SCAN_DEV int addmax(int a, int b, int c) { return __viaddmax_s32(a, b, c); }  // max(a + b, c)
    static SCAN_DEV int add(int a, int b) { return a + b; }
    static SCAN_DEV int max3(int a, int b, int c) { return __vimax3_s32(a, b, c); }
};

struct ScanP16 {
    typedef ScanPair V;
    typedef uint4 V4;
    static constexpr ScanPair kMin = 0x80008000u;      // -32768 in both lanes
    static constexpr ScanPair kMinusOne = 0xffffffffu;  // -1 in both lanes
    static SCAN_DEV ScanPair of(int lo, int hi) { return ((unsigned)lo & 0xffffu) | ((unsigned)hi << 16); }
    static SCAN_DEV ScanPair addmax(ScanPair a, ScanPair b, ScanPair c) { return __viaddmax_s16x2(a, b, c); }
    static SCAN_DEV ScanPair add(ScanPair a, ScanPair b) { return __viaddmax_s16x2(a, b, kMin); }  // never wraps
    static SCAN_DEV ScanPair max3(ScanPair a, ScanPair b, ScanPair c) { return __vimax3_s16x2(a, b, c); }
};

// Lane k (0: low half) of a packed value, sign-extended.
SCAN_DEV int scan_lane(ScanPair v, int k) { return k ? ((int)v >> 16) : (int)(short)(v & 0xffffu); }

// Gap costs: go/ge in normal rows, sgo/sge in seed rows, and GO/GE for rows 0..7, which are 0 in a
// lane's unused top rows (r < P of that lane).
template <class O>
struct ScanGaps {
    typename O::V GO[8], GE[8], go, ge, sgo, sge;
};

template <class O>
SCAN_DEV void scan_gaps(ScanGaps<O>& g, int P0, int P1, int go, int ge, int sgo, int sge) {
#pragma unroll
    for (int r = 0; r < 8; ++r) {
        g.GO[r] = O::of(r < P0 ? 0 : go, r < P1 ? 0 : go);
        g.GE[r] = O::of(r < P0 ? 0 : ge, r < P1 ? 0 : ge);
    }
    g.go = O::of(go, go);
    g.ge = O::of(ge, ge);
    g.sgo = O::of(sgo, sgo);
    g.sge = O::of(sge, sge);
}

// Row r's gap open (ext = false) or extend cost. Buckets of LM = 8 skip their unused rows instead.
template <int LM, class O>
SCAN_DEV typename O::V scan_row_gap(const ScanGaps<O>& g, int r, bool ext) {
    if (SCAN_SEED_ROW(r, LM)) return ext ? g.sge : g.sgo;
    if (r < 8 && LM > 8) return ext ? g.GE[r & 7] : g.GO[r & 7];
    return ext ? g.ge : g.go;
}

// Set the state to that of an all-zero column: D = 0, Bn = B of the next column (lanes padded P0, P1).
template <int LM, class O>
SCAN_DEV void scan_zero_state(typename O::V (&D)[LM], typename O::V (&Bn)[LM], int P0, int P1, int go, int ge,
                              int sgo, int sge) {
    const int bn = go > ge ? go : ge, sbn = sgo > sge ? sgo : sge;
#pragma unroll
    for (int r = 0; r < LM; ++r) {
        const int b = SCAN_SEED_ROW(r, LM) ? sbn : bn;
        D[r] = 0;
        Bn[r] = O::of(r >= P0 ? b : 0, r >= P1 ? b : 0);
    }
}

// Down a column, row by row: row r's A and C from the row above (its D in the previous column,
// dold, and its A and C in this one, aup and cup), as scan_column and the emits compute them.
template <class O>
struct ScanRowWalk {
    typename O::V dold = 0, aup = 0, cup = 0;  // row 0: all zero

    // Row r (seed: a seed row, whose C is fixed at -1) with profile score sv, gap costs rgo/rge and D of
    // the previous column Dprev; A and C returned, and kept for the row below.
    SCAN_DEV void step(bool seed, typename O::V sv, typename O::V rgo, typename O::V rge, typename O::V Dprev,
                       typename O::V& A, typename O::V& C) {
        A = O::addmax(dold, sv, 0);
        C = seed ? O::kMinusOne : O::addmax(aup, rgo, O::add(cup, rge));
        dold = Dprev;
        aup = A;
        cup = C;
    }
};

template <int LM>
SCAN_DEV void scan_store_state(const int (&D)[LM], const int (&Bn)[LM], int* out) {
#pragma unroll
    for (int r = 0; r < LM; r += 4) {
        *reinterpret_cast<int4*>(out + r) = make_int4(D[r], D[r + 1], D[r + 2], D[r + 3]);
        *reinterpret_cast<int4*>(out + LM + r) = make_int4(Bn[r], Bn[r + 1], Bn[r + 2], Bn[r + 3]);
    }
}

template <int LM>
SCAN_DEV void scan_load_state(int (&D)[LM], int (&Bn)[LM], const int* in) {
#pragma unroll
    for (int r = 0; r < LM; r += 4) {
        int4 d = *reinterpret_cast<const int4*>(in + r);
        int4 b = *reinterpret_cast<const int4*>(in + LM + r);
        D[r] = d.x; D[r + 1] = d.y; D[r + 2] = d.z; D[r + 3] = d.w;
        Bn[r] = b.x; Bn[r + 1] = b.y; Bn[r + 2] = b.z; Bn[r + 3] = b.w;
    }
}

template <int LM>
SCAN_DEV bool scan_state_equal(const int (&D)[LM], const int (&Bn)[LM], const int* in) {
    bool eq = true;
#pragma unroll
    for (int r = 0; r < LM; ++r) eq = eq && (D[r] == in[r]) && (Bn[r] == in[LM + r]);
    return eq;
}

// One column j of the score-only DP, in values of O (one query, or two in 16-bit lanes): (Din, Bin)
// hold the state of column j-1 and stay intact, (Dout, Bout) receive that of column j. Returns the
// column's largest max(A, C) (of each lane): a cell can only be a candidate (best >= T, not ending
// in B) when that is >= T, and then scan_emit_column(2) recomputes the column from (Din, Bin) and
// emits its candidates (a rare path).
//
// Unused top rows (r < P <= 7 when LM >= 16) run branch-free as copies of row 0: their profile
// scores are hugely negative (A = 0) and their gap costs 0 (GO/GE; then B = C = D = 0), so the
// first real row sees exactly row 0. LM == 8 (queries of <= 8 letters) skips them with a branch.
template <int LM, class O>
SCAN_DEV typename O::V scan_column(const typename O::V (&Din)[LM], const typename O::V (&Bin)[LM],
                                   typename O::V (&Dout)[LM], typename O::V (&Bout)[LM],
                                   const typename O::V4* pc, int P, const ScanGaps<O>& g) {
    typedef typename O::V V;
    constexpr bool kBranchFree = LM > 8;
    ScanRowWalk<O> walk;
    V gm = O::kMin;
#pragma unroll
    for (int r4 = 0; r4 < LM / 4; ++r4) {
        const typename O::V4 s4 = SCAN_LDG(pc + r4);
        const V sv[4] = {s4.x, s4.y, s4.z, s4.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const int r = r4 * 4 + k;
            const bool seed = SCAN_SEED_ROW(r, LM);
            const V rgo = scan_row_gap<LM, O>(g, r, false);
            const V rge = scan_row_gap<LM, O>(g, r, true);
            if (kBranchFree || r >= P) {
                V A, C;
                walk.step(seed, sv[k], rgo, rge, Din[r], A, C);
                const V B = Bin[r];
                Dout[r] = O::max3(A, B, C);
                Bout[r] = O::addmax(A, rgo, O::add(B, rge));
                gm = O::max3(gm, A, C);
            } else {
                Dout[r] = Din[r];
                Bout[r] = Bin[r];
            }
        }
    }
    return gm;
}

// Emit the candidates of column j (state of column j-1 in Din/Bin): same arithmetic as scan_column.
template <int LM>
SCAN_DEV void scan_emit_column(const int (&Din)[LM], const int (&Bin)[LM], const int4* pc, int j, int P,
                               const ScanGaps<ScanI32>& g, int T, int task, ScanCount* cand_count, int cand_cap,
                               ScanCand* cands) {
    typedef ScanI32 O;
    const int* ps = reinterpret_cast<const int*>(pc);
    ScanRowWalk<O> walk;
#pragma unroll
    for (int r = 0; r < LM; ++r) {  // compile-time r keeps the state arrays in registers
        if (r < P) continue;
        int A, C;
        walk.step(SCAN_SEED_ROW(r, LM), ps[r], scan_row_gap<LM, O>(g, r, false), scan_row_gap<LM, O>(g, r, true),
                  Din[r], A, C);
        const int B = Bin[r];
        const int best = O::max3(A, B, C);
        if (best >= T && !(B > A && B >= C)) {
            const ScanCount slot = atomicAdd(cand_count, 1ull);
            if (slot < (ScanCount)cand_cap) {
                ScanCand cd;
                cd.task = task; cd.i = r - P + 1; cd.j = j; cd.score = best;
                cands[slot] = cd;
            }
        }
    }
}

// Score-only sweep over columns jfrom..jto (1-based) from the state in D/Bn (that of column
// jfrom-1), left in D/Bn at the end. Emits candidates for columns >= emit_from, stores the state
// after column `save_col` into save_out, and the state after every column that is a multiple of
// cpint and >= cp_from into cp_base + (j / cpint - 1) * 2 * LM. Columns go two at a time with
// the state alternating between two register arrays (no copies between columns).
template <int LM>
SCAN_DEV void scan_sweep(int (&D)[LM], int (&Bn)[LM], const signed char* ref, int jfrom, int jto,
                         int emit_from, int save_col, int* save_out, int cp_from, int cpint,
                         int* cp_base, const int* prof, int P, int go, int ge, int sgo, int sge,
                         int T, int task, ScanCount* cand_count, int cand_cap, ScanCand* cands) {
    int next_cp = ((jfrom - 1) / cpint + 1) * cpint;  // next column that is a multiple of cpint
    ScanGaps<ScanI32> g;
    scan_gaps<ScanI32>(g, P, P, go, ge, sgo, sge);
    int D2[LM], B2[LM];
    for (int j = jfrom; j <= jto; j += 2) {
        const int4* pc = reinterpret_cast<const int4*>(prof + ref[j - 1] * LM);
        int gm = scan_column<LM, ScanI32>(D, Bn, D2, B2, pc, P, g);
        if (gm >= T && j >= emit_from)
            scan_emit_column<LM>(D, Bn, pc, j, P, g, T, task, cand_count, cand_cap, cands);
        if (j == save_col) scan_store_state<LM>(D2, B2, save_out);
        if (j == next_cp) {
            if (j >= cp_from) scan_store_state<LM>(D2, B2, cp_base + (long long)(j / cpint - 1) * 2 * LM);
            next_cp += cpint;
        }
        if (j == jto) {
#pragma unroll
            for (int r = 0; r < LM; ++r) { D[r] = D2[r]; Bn[r] = B2[r]; }
            break;
        }
        const int4* pc2 = reinterpret_cast<const int4*>(prof + ref[j] * LM);
        gm = scan_column<LM, ScanI32>(D2, B2, D, Bn, pc2, P, g);
        if (gm >= T && j + 1 >= emit_from)
            scan_emit_column<LM>(D2, B2, pc2, j + 1, P, g, T, task, cand_count, cand_cap, cands);
        if (j + 1 == save_col) scan_store_state<LM>(D, Bn, save_out);
        if (j + 1 == next_cp) {
            if (j + 1 >= cp_from) scan_store_state<LM>(D, Bn, cp_base + (long long)(j / cpint) * 2 * LM);
            next_cp += cpint;
        }
    }
}

struct ScanTaskArgs {
    const signed char* refs;
    const long long* ref_off;
    const int* ref_len;
    const int* pair_q;
    const int* pair_r;
    const long long* pair_cp;  // index of the pair's first checkpoint (column cpint)
    const int* prof;           // per query slot: 5 * LM ints
    const int* q_pad;          // per query slot: P = LM - L
    int seglen, cpint, warm;
    int go, ge, sgo, sge, T;
};

// Segment k of reference rr for query slot q: score-only sweep from `warm` columns before it;
// checkpoints at cp + cp_index * 2 * LM on, the speculative entry state (k > 0) at entry_out.
template <int LM>
SCAN_DEV void scan_pass1_segment(int q, int rr, int k, long long cp_index, int* entry_out, int task,
                                 const ScanTaskArgs& a, int* cp, ScanCount* cand_count, int cand_cap,
                                 ScanCand* cands) {
    const int R = a.ref_len[rr];
    const signed char* ref = a.refs + a.ref_off[rr];
    const int P = a.q_pad[q];
    const int s = k * a.seglen + 1;
    const int e = min(s - 1 + a.seglen, R);
    const int w = max(0, s - 1 - a.warm);
    int D[LM], Bn[LM];
    scan_zero_state<LM, ScanI32>(D, Bn, P, P, a.go, a.ge, a.sgo, a.sge);
    scan_sweep<LM>(D, Bn, ref, w + 1, e, s, k > 0 ? s - 1 : -1, entry_out, s, a.cpint, cp + cp_index * 2 * LM,
                   a.prof + (long long)q * 5 * LM, P, a.go, a.ge, a.sgo, a.sge, a.T, task, cand_count, cand_cap,
                   cands);
}

template <int LM>
SCAN_DEV void scan_pass1_task(int t, const int* task_pair, const int* task_seg, const ScanTaskArgs& a,
                              int* cp, int* entry, ScanCount* cand_count, int cand_cap, ScanCand* cands) {
    const int p = task_pair[t];
    scan_pass1_segment<LM>(a.pair_q[p], a.pair_r[p], task_seg[t], a.pair_cp[p], entry + (long long)t * 2 * LM, t, a,
                           cp, cand_count, cand_cap, cands);
}

// Pass 1 over a grid: the queries qi = 0..nq-1 of a batch x the reference tasks rt = 0..n_rt-1 of a
// chunk (reference rt_ref[rt], segment rt_seg[rt]); task t = qi * n_rt + rt. Query qi (profile slot
// g_slot[qi]) aligns references g_lo[qi] <= r < g_hi[qi] only (a chunk's first and last query rows
// may be partial). The checkpoints of (qi, r) start at qi * cp_per_q + ref_cp0[r], the entry state
// of task t at entry + t * 2 * LM. Every task is derived here: the host lists no pairs.
template <int LM>
SCAN_DEV void scan_pass1_grid_task(long long t, int n_rt, const int* rt_ref, const int* rt_seg, const int* g_slot,
                                   const int* g_lo, const int* g_hi, const long long* ref_cp0, long long cp_per_q,
                                   const ScanTaskArgs& a, int* cp, int* entry, ScanCount* cand_count, int cand_cap,
                                   ScanCand* cands) {
    const long long qi = t / n_rt;
    const int rt = (int)(t - qi * n_rt);
    const int rr = rt_ref[rt];
    if (rr < g_lo[qi] || rr >= g_hi[qi]) return;
    scan_pass1_segment<LM>(g_slot[qi], rr, rt_seg[rt], qi * cp_per_q + ref_cp0[rr], entry + t * 2 * LM, (int)t, a,
                           cp, cand_count, cand_cap, cands);
}

// Pass 1 over a grid, two queries per thread (queries of at least 9 letters, LM >= 16). Lane 0 (the low
// half of every register) and lane 1 (the high half) hold the same row of queries 2m and 2m + 1 of a batch
// against the same reference segment, so that Hopper's DPX instructions (__viaddmax_s16x2,
// __vimax3_s16x2) update both in one. The host uses it only where every value of the DP stays within
// +-2^14 (gpu_plan.fits_16_bits: scores, gap sums, and the padding score -2^14 of pair_profiles), so each
// lane computes exactly what scan_pass1_grid computes for its query; the states it stores (checkpoints,
// entries) and its candidates are that kernel's, lane by lane, so the checks, repairs and tracebacks
// that follow are the same.
//
// The packed sweep's rare steps (a column with a cell >= T, a state to store) run in functions of their
// own, called with the state copied to the stack (`st`: D then Bn), so that their registers never add to
// the sweep's: the sweep itself holds two states of LM pairs and the gap costs, and nothing else.

// What the packed sweep's rare steps need: both lanes' padding and task (-1: the lane is off), where
// lane k's state goes (entry: its speculative entry state, null when none; cp: its first checkpoint).
struct ScanPairTask {
    int P[2], task[2];
    int* entry[2];
    int* cp[2];
    int go, ge, sgo, sge, T, cpint;
    ScanCount* cand_count;
    int cand_cap;
    ScanCand* cands;
};

// Lane k's state from st into out (scan_store_state's layout: D then Bn).
template <int LM>
SCAN_DEV void scan_store_lane(const ScanPair* st, int k, int* out) {
#pragma unroll
    for (int r = 0; r < 2 * LM; r += 4)
        *reinterpret_cast<int4*>(out + r) =
            make_int4(scan_lane(st[r], k), scan_lane(st[r + 1], k), scan_lane(st[r + 2], k), scan_lane(st[r + 3], k));
}

// Store both lanes' states: at their entries (cp_at < 0) or at their checkpoint cp_at.
template <int LM>
SCAN_RARE void scan_store_pair(const ScanPair* st, const ScanPairTask& pt, long long cp_at) {
    for (int k = 0; k < 2; ++k) {
        if (pt.task[k] < 0) continue;
        int* out = cp_at < 0 ? pt.entry[k] : pt.cp[k] + cp_at * 2 * LM;
        if (out) scan_store_lane<LM>(st, k, out);
    }
}

// scan_emit_column for both lanes (state of column j-1 in st): lane k emits for its task from rows r >= P[k].
template <int LM>
SCAN_RARE void scan_emit_column2(const ScanPair* st, const uint4* pc, int j, const ScanPairTask& pt) {
    typedef ScanP16 O;
    ScanGaps<O> g;
    scan_gaps<O>(g, pt.P[0], pt.P[1], pt.go, pt.ge, pt.sgo, pt.sge);
    const ScanPair* ps = reinterpret_cast<const ScanPair*>(pc);
    ScanRowWalk<O> walk;
    for (int r = 0; r < LM; ++r) {
        ScanPair A, C;
        walk.step(SCAN_SEED_ROW(r, LM), SCAN_LDG(ps + r), scan_row_gap<LM, O>(g, r, false),
                  scan_row_gap<LM, O>(g, r, true), st[r], A, C);
        const ScanPair B = st[LM + r];
        const ScanPair best = O::max3(A, B, C);
        for (int k = 0; k < 2; ++k) {
            const int bk = scan_lane(best, k), ak = scan_lane(A, k), Bk = scan_lane(B, k), ck = scan_lane(C, k);
            if (pt.task[k] >= 0 && r >= pt.P[k] && bk >= pt.T && !(Bk > ak && Bk >= ck)) {
                const ScanCount slot = atomicAdd(pt.cand_count, 1ull);
                if (slot < (ScanCount)pt.cand_cap) {
                    ScanCand cd;
                    cd.task = pt.task[k]; cd.i = r - pt.P[k] + 1; cd.j = j; cd.score = bk;
                    pt.cands[slot] = cd;
                }
            }
        }
    }
}

// The state (D, Bn) copied to the stack for a rare step.
template <int LM>
SCAN_DEV void scan_spill_state(const ScanPair (&D)[LM], const ScanPair (&Bn)[LM], ScanPair* st) {
#pragma unroll
    for (int r = 0; r < LM; ++r) {
        st[r] = D[r];
        st[LM + r] = Bn[r];
    }
}

SCAN_DEV int scan_pair_max(ScanPair v) { return max(scan_lane(v, 0), scan_lane(v, 1)); }

// The rare steps after column j (state of column j-1 in (Dp, Bp), of column j in (D, Bn)) of a segment
// that starts at column s: its candidates, its entry state (column s - 1), its checkpoints.
template <int LM>
SCAN_DEV void scan_after_column2(const ScanPair (&Dp)[LM], const ScanPair (&Bp)[LM], const ScanPair (&D)[LM],
                                 const ScanPair (&Bn)[LM], ScanPair gm, const uint4* pc, int j, int s, int& next_cp,
                                 const ScanPairTask& pt) {
    if (j >= s && scan_pair_max(gm) >= pt.T) {
        ScanPair st[2 * LM];
        scan_spill_state<LM>(Dp, Bp, st);
        scan_emit_column2<LM>(st, pc, j, pt);
    }
    if (j == s - 1 || j == next_cp) {
        ScanPair st[2 * LM];
        scan_spill_state<LM>(D, Bn, st);
        if (j == s - 1) scan_store_pair<LM>(st, pt, -1);
        if (j == next_cp) {
            if (j >= s) scan_store_pair<LM>(st, pt, j / pt.cpint - 1);
            next_cp += pt.cpint;
        }
    }
}

// scan_sweep for both lanes over segment s..e from the all-zero column at w (w < s): candidates and
// checkpoints from column s on, the state after column s - 1 at the lanes' entries.
template <int LM>
SCAN_DEV void scan_sweep2(const signed char* ref, int w, int s, int e, const ScanPair* prof, const ScanPairTask& pt) {
    static_assert(LM >= 16, "rows r < 8 of a packed bucket are never seed rows, and run as copies of row 0");
    ScanGaps<ScanP16> g;
    scan_gaps<ScanP16>(g, pt.P[0], pt.P[1], pt.go, pt.ge, pt.sgo, pt.sge);
    ScanPair D[LM], Bn[LM], D2[LM], B2[LM];
    scan_zero_state<LM, ScanP16>(D, Bn, pt.P[0], pt.P[1], pt.go, pt.ge, pt.sgo, pt.sge);
    int next_cp = (w / pt.cpint + 1) * pt.cpint;
    for (int j = w + 1; j <= e; j += 2) {
        const uint4* pc = reinterpret_cast<const uint4*>(prof + ref[j - 1] * LM);
        ScanPair gm = scan_column<LM, ScanP16>(D, Bn, D2, B2, pc, 0, g);
        scan_after_column2<LM>(D, Bn, D2, B2, gm, pc, j, s, next_cp, pt);
        if (j == e) break;
        const uint4* pc2 = reinterpret_cast<const uint4*>(prof + ref[j] * LM);
        gm = scan_column<LM, ScanP16>(D2, B2, D, Bn, pc2, 0, g);
        scan_after_column2<LM>(D2, B2, D, Bn, gm, pc2, j + 1, s, next_cp, pt);
    }
}

// Thread u of scan_pass1_grid2: queries qi = 2m, 2m + 1 (m = u / n_rt; the second absent when qi = nq)
// against reference task rt = u % n_rt, each as task qi * n_rt + rt of scan_pass1_grid (same
// checkpoints, entry states and candidates). prof2: query pair m's packed profile at m * 5 * LM;
// pad2[qi]: query qi's padding.
template <int LM>
SCAN_DEV void scan_pass1_grid2_task(long long u, int nq, int n_rt, const int* rt_ref, const int* rt_seg,
                                    const int* g_lo, const int* g_hi, const long long* ref_cp0, long long cp_per_q,
                                    const ScanPair* prof2, const int* pad2, const ScanTaskArgs& a, int* cp,
                                    int* entry, ScanCount* cand_count, int cand_cap, ScanCand* cands) {
    const long long m = u / n_rt;
    const int rt = (int)(u - m * n_rt);
    const int rr = rt_ref[rt];
    const int k = rt_seg[rt];
    ScanPairTask pt;
    bool any = false;
#pragma unroll
    for (int l = 0; l < 2; ++l) {
        const long long qi = 2 * m + l;
        const bool on = qi < nq && rr >= g_lo[qi] && rr < g_hi[qi];
        any = any || on;
        const long long t = qi * n_rt + rt;
        pt.P[l] = pad2[qi < nq ? qi : 2 * m];
        pt.task[l] = on ? (int)t : -1;
        pt.entry[l] = on && k > 0 ? entry + t * 2 * LM : nullptr;
        pt.cp[l] = on ? cp + (qi * cp_per_q + ref_cp0[rr]) * 2 * LM : nullptr;
    }
    if (!any) return;
    pt.go = a.go; pt.ge = a.ge; pt.sgo = a.sgo; pt.sge = a.sge; pt.T = a.T; pt.cpint = a.cpint;
    pt.cand_count = cand_count; pt.cand_cap = cand_cap; pt.cands = cands;
    const int R = a.ref_len[rr];
    const int s = k * a.seglen + 1;
    const int e = min(s - 1 + a.seglen, R);
    const int w = max(0, s - 1 - a.warm);
    scan_sweep2<LM>(a.refs + a.ref_off[rr], w, s, e, prof2 + m * 5 * LM, pt);
}

// The grid's exactness check: flag x = qi * n_later + l (l-th reference task of a segment > 0) when
// the speculative entry state of its task differs from the exact checkpoint before its segment.
// `width` = 2 * LM ints per state.
SCAN_DEV void scan_verify_grid_one(long long x, int n_later, const int* later_rt, int n_rt, const int* rt_ref,
                                   const int* rt_seg, const int* g_lo, const int* g_hi, const long long* ref_cp0,
                                   long long cp_per_q, int seglen, int cpint, int width, const int* cp,
                                   const int* entry, unsigned char* bad) {
    const long long qi = x / n_later;
    const int rt = later_rt[x - qi * n_later];
    const int rr = rt_ref[rt];
    unsigned char differ = 0;
    if (rr >= g_lo[qi] && rr < g_hi[qi]) {
        const int* e = entry + (qi * n_rt + rt) * width;
        const int* c = cp + (qi * cp_per_q + ref_cp0[rr] + (long long)rt_seg[rt] * seglen / cpint - 1) * width;
        for (int k = 0; k < width; ++k) differ |= (unsigned char)(e[k] != c[k]);
    }
    bad[x] = differ;
}

// Repair: the segments of pair rp_pair[x] from rp_seg[x] on, starting from the exact checkpoint
// before that segment; a segment is recomputed when the exact state at its start differs from its
// speculative entry. Marks recomputed tasks; their candidates go to the repair buffer.
template <int LM>
SCAN_DEV void scan_repair_pair(int x, const int* rp_pair, const int* rp_seg, const long long* pair_task0,
                               const int* pair_tasks, const ScanTaskArgs& a, int* cp, const int* entry,
                               unsigned char* recomputed, ScanCount* cand_count, int cand_cap, ScanCand* cands) {
    const int p = rp_pair[x];
    const int k1 = rp_seg[x];
    const int q = a.pair_q[p];
    const int rr = a.pair_r[p];
    const int R = a.ref_len[rr];
    const signed char* ref = a.refs + a.ref_off[rr];
    const int P = a.q_pad[q];
    const int nseg = (R + a.seglen - 1) / a.seglen;
    int* cpb = cp + a.pair_cp[p] * 2 * LM;
    const int* prof = a.prof + (long long)q * 5 * LM;
    int D[LM], Bn[LM];
    scan_load_state<LM>(D, Bn, cpb + ((long long)k1 * a.seglen / a.cpint - 1) * 2 * LM);
    for (int k = k1; k < nseg; ++k) {
        const int t = pair_tasks[pair_task0[p] + k];
        const int s = k * a.seglen + 1;
        const int e = min(s - 1 + a.seglen, R);
        const bool need = (k == k1) || !scan_state_equal<LM>(D, Bn, entry + (long long)t * 2 * LM);
        if (need) {
            recomputed[t] = 1;
            scan_sweep<LM>(D, Bn, ref, s, e, s, -1, nullptr, s, a.cpint, cpb, prof, P, a.go, a.ge, a.sgo,
                           a.sge, a.T, t, cand_count, cand_cap, cands);
        } else if (k + 1 < nseg) {
            scan_load_state<LM>(D, Bn, cpb + (long long)(e / a.cpint - 1) * 2 * LM);
        }
    }
}

// Pass 2 for survivor x: trace bytes over columns c+1..j* (c = a checkpoint column at least K
// before j*, or 0), then the traceback. Writes i0, j0 and the ops in traceback order (end first);
// n = -1 when the traceback needs columns before the window.
template <int LM>
SCAN_DEV void scan_trace_one(int x, const int* sv_pair, const int* sv_i, const int* sv_j, const ScanTaskArgs& a,
                             const int* cp, int K, unsigned int* scratch, long long nl, int* out_i0,
                             int* out_j0, int* out_n, unsigned char* ops, long long opcap) {
    const int p = sv_pair[x];
    const int iend = sv_i[x];
    const int jend = sv_j[x];
    const int q = a.pair_q[p];
    const int rr = a.pair_r[p];
    const signed char* ref = a.refs + a.ref_off[rr];
    const int P = a.q_pad[q];
    const int* prof = a.prof + (long long)q * 5 * LM;
    int c = jend - K;
    c = c > 0 ? (c / a.cpint) * a.cpint : 0;
    // Trace window: word q (rows 4q..4q+3) of window column w (= j - c - 1) of survivor x is
    // scratch[(w * LM/4 + q) * nl + x], so that the threads of a warp store side by side.
    auto word_at = [&](int w, int q) -> unsigned int& { return scratch[((long long)w * (LM / 4) + q) * nl + x]; };
    auto byte_at = [&](int j, int r) -> int { return (word_at(j - c - 1, r >> 2) >> (8 * (r & 3))) & 0xff; };
    int A[LM], B[LM], C[LM];
    int jstart;
    if (c == 0) {
#pragma unroll
        for (int r = 0; r < LM; ++r) { A[r] = 0; B[r] = 0; C[r] = 0; }
        jstart = 1;
    } else {
        // Column c+1 from the exact (D, Bn) at column c: values exact, trace bits except tBest unknown.
        const int* st = cp + (a.pair_cp[p] + c / a.cpint - 1) * 2 * LM;
        const int cls = ref[c];
        int dold = 0, aup = 0, cup = 0;
        unsigned int word = 0;
#pragma unroll
        for (int r = 0; r < LM; ++r) {
            const bool seed = SCAN_SEED_ROW(r, LM);
            unsigned int byte = 0;
            if (r >= P) {
                const int Av = max(dold + prof[cls * LM + r], 0);
                const int Cv = seed ? -1 : max(aup + a.go, cup + a.ge);
                const int Bv = st[LM + r];
                dold = st[r];
                const bool cwb = Cv > Bv;
                const int mbc = cwb ? Cv : Bv;
                const bool aw = Av >= mbc;
                const int best = aw ? Av : mbc;
                const int tb = best <= 0 ? 0 : (aw ? 1 : (cwb ? 3 : 2));
                byte = (unsigned int)(tb << 4);
                A[r] = Av; B[r] = Bv; C[r] = Cv;
                aup = Av;
                cup = Cv;
            } else {
                A[r] = 0; B[r] = 0; C[r] = 0;
            }
            word |= byte << (8 * (r & 3));
            if ((r & 3) == 3) {
                word_at(0, r >> 2) = word;
                word = 0;
            }
        }
        jstart = c + 2;
    }
    for (int j = jstart; j <= jend; ++j) {
        const int cls = ref[j - 1];
        const int4* pc = reinterpret_cast<const int4*>(prof + cls * LM);
        int pA = 0, pB = 0, pC = 0;    // row above, previous column
        int aup = 0, cup = 0;          // row above, this column
#pragma unroll
        for (int r4 = 0; r4 < LM / 4; ++r4) {
            const int4 s4 = SCAN_LDG(pc + r4);
            const int sv[4] = {s4.x, s4.y, s4.z, s4.w};
            unsigned int word = 0;
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const int r = r4 * 4 + k;
                const bool seed = SCAN_SEED_ROW(r, LM);
                const int go = seed ? a.sgo : a.go;
                const int ge = seed ? a.sge : a.ge;
                if (r >= P) {
                    // A from the diagonal, preferring A, then B, then C.
                    const bool bgec = pB >= pC;
                    const int mbc0 = bgec ? pB : pC;
                    const bool awin = pA >= mbc0;
                    const int m = awin ? pA : mbc0;
                    int tA = awin ? 1 : (bgec ? 2 : 3);
                    int Av = m + sv[k];
                    if (Av <= 0) { Av = 0; tA = 0; }
                    // C (gap in the reference), fixed at -1 in seed rows.
                    int Cv;
                    unsigned int extC = 0;
                    if (seed) {
                        Cv = -1;
                    } else {
                        const int o = aup + go;
                        const int e = cup + ge;
                        extC = e > o ? 8u : 0u;
                        Cv = e > o ? e : o;
                    }
                    // B (gap in the query).
                    const int ob = A[r] + go;
                    const int eb = B[r] + ge;
                    const unsigned int extB = eb > ob ? 4u : 0u;
                    const int Bv = eb > ob ? eb : ob;
                    const bool cwb = Cv > Bv;
                    const int mbc = cwb ? Cv : Bv;
                    const bool aw = Av >= mbc;
                    const int best = aw ? Av : mbc;
                    const int tb = best <= 0 ? 0 : (aw ? 1 : (cwb ? 3 : 2));
                    pA = A[r]; pB = B[r]; pC = C[r];
                    A[r] = Av; B[r] = Bv; C[r] = Cv;
                    aup = Av;
                    cup = Cv;
                    word |= ((unsigned int)tA | extB | extC | (unsigned int)(tb << 4)) << (8 * k);
                }
            }
            word_at(j - c - 1, r4) = word;
        }
    }
    // Traceback (cpu.trace_back).
    int i = iend, j = jend;
    long long n = 0;
    unsigned char* out = ops + (long long)x * opcap;
    int state = (byte_at(j, i + P - 1) >> 4) & 3;
    bool fail = false;
    while (i > 0 && j > 0) {
        if (j <= c) { fail = true; break; }
        const int t = byte_at(j, i + P - 1);
        if (((t >> 4) & 3) == 0 || state == 0) break;
        if (c > 0 && j == c + 1) { fail = true; break; }
        if (n >= opcap) { fail = true; break; }
        if (state == 1) {
            out[n] = 1;
            state = t & 3;
            --i;
            --j;
        } else if (state == 2) {
            out[n] = 2;
            state = (t & 4) ? 2 : 1;
            --j;
        } else {
            out[n] = 3;
            state = (t & 8) ? 3 : 1;
            --i;
        }
        ++n;
    }
    out_i0[x] = i;
    out_j0[x] = j;
    out_n[x] = fail ? -1 : (int)n;
}

// Sorting and suppression of a batch's candidates, grouped by pair on the device (no host step per candidate):
// scan_group_count counts each pair's candidates, the host's prefix sum gives each pair its rows start[p]..start[p+1]-1,
// scan_group_scatter puts every candidate in its pair's rows (in whatever order the atomics give), scan_sort_suppress
// orders each pair's rows and suppresses them, and scan_compact writes the survivors of every pair in order.

// Candidate a comes before b: score descending, then j ascending, then i ascending (a total order: a pair's
// candidates are distinct cells), so the order of the rows before sorting never shows.
SCAN_DEV bool scan_before(int sa, int ja, int ia, int sb, int jb, int ib) {
    return sa != sb ? sa > sb : (ja != jb ? ja < jb : ia < ib);
}

SCAN_DEV void scan_swap_rows(long long x, long long y, int* gi, int* gj, int* gs) {
    const int i = gi[x], j = gj[x], s = gs[x];
    gi[x] = gi[y]; gj[x] = gj[y]; gs[x] = gs[y];
    gi[y] = i; gj[y] = j; gs[y] = s;
}

// Heap rows a..a+end-1 (node k's children 2k+1, 2k+2): row a+node moves down until no child comes after it.
SCAN_DEV void scan_sift_down(long long a, long long node, long long end, int* gi, int* gj, int* gs) {
    while (true) {
        long long child = 2 * node + 1;
        if (child >= end) return;
        if (child + 1 < end && scan_before(gs[a + child], gj[a + child], gi[a + child],
                                           gs[a + child + 1], gj[a + child + 1], gi[a + child + 1])) ++child;
        if (!scan_before(gs[a + node], gj[a + node], gi[a + node], gs[a + child], gj[a + child], gi[a + child])) return;
        scan_swap_rows(a + node, a + child, gi, gj, gs);
        node = child;
    }
}

// Rows a..b-1 sorted by scan_before: insertion sort for a few rows, heapsort (in place, O(m log m)) for more.
SCAN_DEV void scan_sort_rows(long long a, long long b, int* gi, int* gj, int* gs) {
    const long long m = b - a;
    if (m <= 24) {
        for (long long k = a + 1; k < b; ++k) {
            const int i = gi[k], j = gj[k], s = gs[k];
            long long x = k;
            while (x > a && scan_before(s, j, i, gs[x - 1], gj[x - 1], gi[x - 1])) {
                gi[x] = gi[x - 1]; gj[x] = gj[x - 1]; gs[x] = gs[x - 1];
                --x;
            }
            gi[x] = i; gj[x] = j; gs[x] = s;
        }
        return;
    }
    // Heap with the last row (by scan_before) at the root, so that popping fills from the end.
    for (long long top = m / 2 - 1; top >= 0; --top) scan_sift_down(a, top, m, gi, gj, gs);
    for (long long end = m - 1; end > 0; --end) {
        scan_swap_rows(a, a + end, gi, gj, gs);
        scan_sift_down(a, 0, end, gi, gj, gs);
    }
}

// The batch pair of task t: (t / n_rt) * n_r + map[t % n_rt]. A grid batch (tasks query by query, n_rt reference
// segments each, map = each segment's reference) and a listed one (n_rt = its task count, n_r = 0, map = each task's
// pair) both say so.
SCAN_DEV long long scan_task_pair(long long t, long long n_rt, long long n_r, const int* map) {
    const long long q = t / n_rt;
    return q * n_r + map[t - q * n_rt];
}

SCAN_DEV void scan_group_count_one(long long x, const ScanCand* cands, long long n_rt, long long n_r, const int* map,
                                   int* count) {
    atomicAdd(&count[scan_task_pair(cands[x].task, n_rt, n_r, map)], 1);
}

SCAN_DEV void scan_group_scatter_one(long long x, const ScanCand* cands, long long n_rt, long long n_r, const int* map,
                                     const long long* start, int* count, int* gi, int* gj, int* gs) {
    const long long p = scan_task_pair(cands[x].task, n_rt, n_r, map);
    const long long at = start[p] + atomicSub(&count[p], 1) - 1;
    gi[at] = cands[x].i;
    gj[at] = cands[x].j;
    gs[at] = cands[x].score;
}

// Pair p's rows sorted, then diagonal-suppressed (miranda-model §6): a row survives unless an earlier survivor's
// diagonal j - i is within `window` of its own (the survivors' diagonals are kept in diag[start[p]..]). A pair of more
// than `limit` rows is sorted only, and left to the host (which finds it by its count; n_big counts them) to bound a
// thread's work. n_keep[p] is the pair's survivors (0 for those left to the host).
SCAN_DEV void scan_sort_suppress_pair(long long p, const long long* start, int* gi, int* gj, int* gs, int window,
                                      int limit, unsigned char* keep, int* diag, long long* n_keep,
                                      unsigned int* n_big) {
    const long long a = start[p], b = start[p + 1];
    n_keep[p] = 0;
    if (b == a) return;
    scan_sort_rows(a, b, gi, gj, gs);
    if (b - a > limit) {
        atomicAdd(n_big, 1u);
        return;
    }
    int kept = 0;
    for (long long k = a; k < b; ++k) {
        const int d = gj[k] - gi[k];
        bool ok = true;
        for (int x = 0; x < kept; ++x) {
            const int dd = diag[a + x] - d;
            if (dd <= window && dd >= -window) {
                ok = false;
                break;
            }
        }
        keep[k] = ok ? 1 : 0;
        if (ok) diag[a + kept++] = d;
    }
    n_keep[p] = kept;
}

SCAN_DEV void scan_grid_trace_args_one(long long x, const int* sv_pair, int n_r, int a, long long cp_per_q,
                                       const long long* ref_cp0, int* pair_q, int* pair_r, long long* pair_cp) {
    const int s = sv_pair[x] / n_r;
    const int r = sv_pair[x] - s * n_r;
    pair_q[x] = a + s;
    pair_r[x] = r;
    pair_cp[x] = (long long)s * cp_per_q + ref_cp0[r];
}

// Pair p's survivors, in order, as columns (pair, i, j, score) of `out` (4 rows of `total`) from sv_end[p] - n_keep[p].
SCAN_DEV void scan_compact_pair(long long p, const long long* start, const long long* sv_end, const long long* n_keep,
                                const int* gi, const int* gj, const int* gs, const unsigned char* keep,
                                long long total, int* out) {
    long long o = sv_end[p] - n_keep[p];
    for (long long k = start[p]; k < start[p + 1]; ++k) {
        if (!keep[k]) continue;
        out[o] = (int)p;
        out[total + o] = gi[k];
        out[2 * total + o] = gj[k];
        out[3 * total + o] = gs[k];
        ++o;
    }
}

// Kernel parameter lists (flat, so that CuPy and the host test build, tests/host/scan_host.cu, can pass them).
#define SCAN_ARGS_PARAMS                                                                                   \
    const signed char *refs, const long long *ref_off, const int *ref_len, const int *pair_q,             \
        const int *pair_r, const long long *pair_cp, const int *prof, const int *q_pad, int seglen,       \
        int cpint, int warm, int go, int ge, int sgo, int sge, int T
#define SCAN_ARGS_MAKE(a)                                                                                  \
    ScanTaskArgs a;                                                                                        \
    a.refs = refs; a.ref_off = ref_off; a.ref_len = ref_len; a.pair_q = pair_q; a.pair_r = pair_r;         \
    a.pair_cp = pair_cp; a.prof = prof; a.q_pad = q_pad; a.seglen = seglen; a.cpint = cpint;               \
    a.warm = warm; a.go = go; a.ge = ge; a.sgo = sgo; a.sge = sge; a.T = T

#ifndef SCAN_HOST_TEST
template <int LM>
SCAN_GLOBAL void __launch_bounds__(128, LM <= 24 ? 4 : (LM <= 32 ? 3 : 2)) scan_pass1(int n_tasks, const int* task_pair, const int* task_seg, SCAN_ARGS_PARAMS, int* cp,
                            int* entry, ScanCount* cand_count, int cand_cap, ScanCand* cands) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_tasks) return;
    SCAN_ARGS_MAKE(a);
    scan_pass1_task<LM>(t, task_pair, task_seg, a, cp, entry, cand_count, cand_cap, cands);
}

template <int LM>
SCAN_GLOBAL void __launch_bounds__(128, LM <= 24 ? 4 : (LM <= 32 ? 3 : 2))
scan_pass1_grid(long long n_tasks, int n_rt, const int* rt_ref, const int* rt_seg, const int* g_slot, const int* g_lo,
                const int* g_hi, const long long* ref_cp0, long long cp_per_q, SCAN_ARGS_PARAMS, int* cp, int* entry,
                ScanCount* cand_count, int cand_cap, ScanCand* cands) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_tasks) return;
    SCAN_ARGS_MAKE(a);
    scan_pass1_grid_task<LM>(t, n_rt, rt_ref, rt_seg, g_slot, g_lo, g_hi, ref_cp0, cp_per_q, a, cp, entry, cand_count,
                             cand_cap, cands);
}

// Blocks of 128 threads per multiprocessor the register budget is set for: 3 (168 registers) holds the
// sweep of LM <= 32 without spills; on an H200 (bench/pass1_kernel_ab.py, 2026-11-29) it ran LM = 24 at
// 2.66 T cells/s (4 blocks: 2.61; the int32 kernel: 1.54) and LM = 32 at 2.04 (4 blocks, spilling: 0.90;
// int32: 1.07). -DSCAN_PACKED_BLOCKS(LM)=n sets another.
#ifndef SCAN_PACKED_BLOCKS
#define SCAN_PACKED_BLOCKS(LM) ((LM) <= 32 ? 3 : 2)
#endif

template <int LM>
SCAN_GLOBAL void __launch_bounds__(128, SCAN_PACKED_BLOCKS(LM))
scan_pass1_grid2(long long n_threads, int nq, int n_rt, const int* rt_ref, const int* rt_seg, const int* g_lo,
                 const int* g_hi, const long long* ref_cp0, long long cp_per_q, const ScanPair* prof2, const int* pad2,
                 SCAN_ARGS_PARAMS, int* cp, int* entry, ScanCount* cand_count, int cand_cap, ScanCand* cands) {
    const long long u = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= n_threads) return;
    SCAN_ARGS_MAKE(a);
    scan_pass1_grid2_task<LM>(u, nq, n_rt, rt_ref, rt_seg, g_lo, g_hi, ref_cp0, cp_per_q, prof2, pad2, a, cp, entry,
                              cand_count, cand_cap, cands);
}

extern "C" SCAN_GLOBAL void scan_verify_grid(long long n, int n_later, const int* later_rt, int n_rt, const int* rt_ref,
                                             const int* rt_seg, const int* g_lo, const int* g_hi,
                                             const long long* ref_cp0, long long cp_per_q, int seglen, int cpint,
                                             int width, const int* cp, const int* entry, unsigned char* bad) {
    const long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= n) return;
    scan_verify_grid_one(x, n_later, later_rt, n_rt, rt_ref, rt_seg, g_lo, g_hi, ref_cp0, cp_per_q, seglen, cpint,
                         width, cp, entry, bad);
}

template <int LM>
SCAN_GLOBAL void scan_repair(int n, const int* rp_pair, const int* rp_seg, const long long* pair_task0,
                             const int* pair_tasks, SCAN_ARGS_PARAMS, int* cp, const int* entry,
                             unsigned char* recomputed, ScanCount* cand_count, int cand_cap, ScanCand* cands) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= n) return;
    SCAN_ARGS_MAKE(a);
    scan_repair_pair<LM>(x, rp_pair, rp_seg, pair_task0, pair_tasks, a, cp, entry, recomputed, cand_count,
                         cand_cap, cands);
}

extern "C" SCAN_GLOBAL void scan_group_count(long long n, const ScanCand* cands, long long n_rt, long long n_r,
                                             const int* map, int* count) {
    const long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= n) return;
    scan_group_count_one(x, cands, n_rt, n_r, map, count);
}

extern "C" SCAN_GLOBAL void scan_group_scatter(long long n, const ScanCand* cands, long long n_rt, long long n_r,
                                               const int* map, const long long* start, int* count, int* gi, int* gj,
                                               int* gs) {
    const long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= n) return;
    scan_group_scatter_one(x, cands, n_rt, n_r, map, start, count, gi, gj, gs);
}

// The trace kernel's pair arrays for survivors of a grid batch: survivor x is the batch's pair sv_pair[x] = s * n_r + r
// (query slot a + s against reference r), whose checkpoints start at s * cp_per_q + ref_cp0[r].
extern "C" SCAN_GLOBAL void scan_grid_trace_args(long long n, const int* sv_pair, int n_r, int a, long long cp_per_q,
                                                 const long long* ref_cp0, int* pair_q, int* pair_r,
                                                 long long* pair_cp) {
    const long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= n) return;
    scan_grid_trace_args_one(x, sv_pair, n_r, a, cp_per_q, ref_cp0, pair_q, pair_r, pair_cp);
}

extern "C" SCAN_GLOBAL void scan_sort_suppress(long long n_pairs, const long long* start, int* gi, int* gj, int* gs,
                                               int window, int limit, unsigned char* keep, int* diag,
                                               long long* n_keep, unsigned int* n_big) {
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n_pairs) return;
    scan_sort_suppress_pair(p, start, gi, gj, gs, window, limit, keep, diag, n_keep, n_big);
}

extern "C" SCAN_GLOBAL void scan_compact(long long n_pairs, const long long* start, const long long* sv_end,
                                         const long long* n_keep, const int* gi, const int* gj, const int* gs,
                                         const unsigned char* keep, long long total, int* out) {
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n_pairs) return;
    scan_compact_pair(p, start, sv_end, n_keep, gi, gj, gs, keep, total, out);
}

template <int LM>
SCAN_GLOBAL void scan_trace(int n, const int* sv_pair, const int* sv_i, const int* sv_j, SCAN_ARGS_PARAMS,
                            const int* cp, int K, unsigned int* scratch, long long nl, int* out_i0,
                            int* out_j0, int* out_n, unsigned char* ops, long long opcap) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= n) return;
    SCAN_ARGS_MAKE(a);
    scan_trace_one<LM>(x, sv_pair, sv_i, sv_j, a, cp, K, scratch, nl, out_i0, out_j0, out_n, ops, opcap);
}
#endif
