// Minimum free energy and one optimal structure (Zuker's recurrences with ViennaRNA's Turner 2004
// model, integer dcal/mol as ViennaRNA computes them), for many short sequences in one launch or one
// long sequence by diagonals; gamut.folding.turner.gpu_mfe drives it (docs/fold_turner_gpu.md).
//
// The model (ours, checked against RNA.fold). A pair (i, j) of letters that pair (PAIR table) closes
// a hairpin of at least 3 letters, an interior loop or bulge of at most 30 unpaired letters, or a
// multiloop of at least two more stems; pairs span at most `span` letters (j - i + 1 <= span when
// span > 0). Every exterior and multiloop stem carries a terminal AU/GU penalty and, with dangles 2,
// the mismatch (or dangle at a sequence end) of its two neighbouring letters whatever they pair with.
// With noLP every pair stacks on another one.
//
// Arrays (int32, per sequence of n letters, 0-based i < j): triangles stored by diagonal, cell
// (i, j) at off(j - i) + i with off(d) = d n - d (d - 1) / 2, so adjacent threads of a diagonal touch
// adjacent words in every read below.
//   C[i][j]   best energy of i..j with (i, j) paired, as the loops around it see it (with noLP:
//             (i, j) stacked on (i + 1, j - 1));
//   CX[i][j]  noLP only: (i, j) paired, stacked on from outside (so it may be lonely inside);
//   CI[i][j]  C[i][j] plus the mismatch of (j, i) towards a generic interior loop around it (so the
//             generic interior loops, most of the loop work, cost one read and one add each);
//   FML[i][j] i..j as part of a multiloop with at least one stem;
//   DML[i][j] min_k FML[i][k] + FML[k + 1][j]: at least two stems (a multiloop closed by
//             (i - 1, j + 1) is DML[i][j] plus its closing terms: the O(n^3) part is done once);
//   F5[l]     the exterior loop of the first l letters.
// A value >= INF / 2 is infinite (sums of a few INF stay inside int32 and never look finite).
//
// Schedules. Batch (tmfe_batch): one block per sequence, a block looping over sequences in turn with
// its own work area (so the work of a launch of 50-nt windows stays in the L2 cache); inside, the
// block fills a diagonal at a time, then F5 and the traceback. Long (tmfe_diagonal, tmfe_finish):
// one launch per diagonal, a thread per cell, then one block for F5 and the traceback. Both call the
// same cell function. The batch's measurement variants (tmfe_batch_shared: the work area in shared
// memory; tmfe_batch_warps: a warp per sequence) run the same batch code. The traceback is done by
// a group (a block, or a warp) together: at each node of the structure every thread tests its share
// of the candidate decompositions and the group takes the first that gives the node's energy.
//
// The host test build (tests/host/turner_mfe_host.cu) compiles this file with TMFE_HOST: the same
// functions, the kernels' bodies run for every block and cell in turn with groups of one thread.

#ifdef TMFE_HOST
#include <climits>
#define DEV static inline
#else
#define DEV __device__ __forceinline__
#endif
#ifndef INT_MAX
#define INT_MAX 2147483647
#endif

#define TMFE_MAXLOOP 30
#define TMFE_INF 100000000
#define TMFE_HALF_INF 50000000
#define TMFE_TURN 3

// Node kinds of the traceback.
#define NODE_F5 0
#define NODE_C 1
#define NODE_CX 2
#define NODE_FML 3

struct Model {
    const int* E;     // energies, offsets E_* (gamut.folding.turner.energy_tables)
    const int* HPX;   // hairpin energy by loop size, up to the longest sequence
    int dangles;      // 0 or 2
    int nolp;         // 1: no lonely pairs
    int span;         // longest pair span (j - i + 1), <= 0: no limit
};

struct Seq {
    const unsigned char* S;  // letter codes 0..4
    int n;
    int *C, *CX, *CI, *FML, *DML, *F5, *stack;
};

// Ints of a work area for sequences of at most nmax letters (noLP adds CX).
DEV long long tmfe_work_ints(long long nmax, int nolp) {
    const long long tri = nmax * (nmax + 1) / 2;
    return (4 + (nolp ? 1 : 0)) * tri + (nmax + 1) + 3 * (nmax + 2);
}

DEV Seq make_seq(const unsigned char* S, int n, int* work, long long nmax, int nolp) {
    const long long tri = nmax * (nmax + 1) / 2;
    Seq s;
    s.S = S;
    s.n = n;
    s.C = work;
    s.CI = work + tri;
    s.FML = work + 2 * tri;
    s.DML = work + 3 * tri;
    s.CX = nolp ? work + 4 * tri : work;  // CX is only read with noLP
    s.F5 = work + (4 + (nolp ? 1 : 0)) * tri;
    s.stack = s.F5 + (nmax + 1);
    return s;
}

DEV long long cell(const Seq& s, int i, int j) {
    const long long d = j - i;
    return d * s.n - d * (d - 1) / 2 + i;
}

DEV int fin(int v) { return v >= TMFE_HALF_INF ? TMFE_INF : v; }
DEV int min2(int a, int b) { return a < b ? a : b; }

// ---- loop energies -------------------------------------------------------------------------------
DEV int pair_type(const Model& m, int a, int b) { return m.E[E_PAIR + 5 * a + b]; }
DEV int rtype(const Model& m, int t) { return m.E[E_RTYPE + t]; }
DEV int term_au(const Model& m, int t) { return t > 2 ? m.E[E_SCALARS + 0] : 0; }
DEV int ml_closing(const Model& m) { return m.E[E_SCALARS + 1]; }
DEV int ml_base(const Model& m) { return m.E[E_SCALARS + 2]; }

// The type of pair (i, j), 0 where the letters do not pair, the loop would be too short or the pair
// spans more than the model allows.
DEV int type_of(const Model& m, const Seq& s, int i, int j) {
    if (j - i - 1 < TMFE_TURN) return 0;
    if (m.span > 0 && j - i + 1 > m.span) return 0;
    return pair_type(m, s.S[i], s.S[j]);
}

// A stem of type t in the exterior loop (ml = 0) or a multiloop (ml = 1), with its neighbouring
// letters' codes a5 and a3 (-1: none, at a sequence end).
DEV int stem_energy(const Model& m, int t, int a5, int a3, int ml) {
    const int* E = m.E;
    int e = term_au(m, t);
    if (m.dangles == 2) {
        if (a5 >= 0 && a3 >= 0) e += E[(ml ? E_MMM : E_MMEXT) + 25 * t + 5 * a5 + a3];
        else if (a5 >= 0) e += E[E_D5 + 5 * t + a5];
        else if (a3 >= 0) e += E[E_D3 + 5 * t + a3];
    }
    if (ml) e += E[E_MLINTERN + t];
    return e;
}

DEV int exterior_stem(const Model& m, const Seq& s, int i, int j, int t) {
    return stem_energy(m, t, i > 0 ? s.S[i - 1] : -1, j + 1 < s.n ? s.S[j + 1] : -1, 0);
}

DEV int multi_stem(const Model& m, const Seq& s, int i, int j, int t) {
    return stem_energy(m, t, i > 0 ? s.S[i - 1] : -1, j + 1 < s.n ? s.S[j + 1] : -1, 1);
}

// The closing terms of a multiloop closed by (i, j) of type t (the stem seen from inside).
DEV int multi_closing(const Model& m, const Seq& s, int i, int j, int t) {
    return ml_closing(m) + stem_energy(m, rtype(m, t), s.S[j - 1], s.S[i + 1], 1);
}

DEV int loop_key(const unsigned char* S, int from, int width) {
    int key = 0;
    for (int x = 0; x < width; ++x) key = key * 5 + S[from + x];
    return key;
}

DEV int find_key(const int* keys, int count, int key) {
    for (int x = 0; x < count; ++x)
        if (keys[x] == key) return x;
    return -1;
}

DEV int hairpin_energy(const Model& m, const Seq& s, int i, int j, int t) {
    const int* E = m.E;
    const int u = j - i - 1;
    const int e = m.HPX[u];
    if (u == 4) {
        const int x = find_key(E + E_TETRA, N_TETRA, loop_key(s.S, i, 6));
        if (x >= 0) return E[E_TETRA_E + x];
    } else if (u == 6) {
        const int x = find_key(E + E_HEX, N_HEX, loop_key(s.S, i, 8));
        if (x >= 0) return E[E_HEX_E + x];
    } else if (u == 3) {
        const int x = find_key(E + E_TRI, N_TRI, loop_key(s.S, i, 5));
        if (x >= 0) return E[E_TRI_E + x];
        return e + term_au(m, t);
    }
    return e + E[E_MMH + 25 * t + 5 * s.S[i + 1] + s.S[j - 1]];
}

// The interior loop (or stack, or bulge) closed by (i, j) of type t around (p, q) of type tq,
// without the inner pair's own energy.
DEV int interior_energy(const Model& m, const Seq& s, int i, int j, int t, int p, int q, int tq) {
    const int* E = m.E;
    const unsigned char* S = s.S;
    const int u1 = p - i - 1, u2 = j - q - 1;
    const int t2 = rtype(m, tq);
    const int nl = u1 > u2 ? u1 : u2, ns = u1 > u2 ? u2 : u1;
    if (nl == 0) return E[E_STACK + 8 * t + t2];
    if (ns == 0) {
        const int e = E[E_BULGE + nl];
        return nl == 1 ? e + E[E_STACK + 8 * t + t2] : e + term_au(m, t) + term_au(m, t2);
    }
    const int si = S[i + 1], sj = S[j - 1], sp = S[p - 1], sq = S[q + 1];
    if (ns == 1) {
        if (nl == 1) return E[E_INT11 + 25 * (8 * t + t2) + 5 * si + sj];
        if (nl == 2) {
            if (u1 == 1) return E[E_INT21 + 125 * (8 * t + t2) + 25 * si + 5 * sq + sj];
            return E[E_INT21 + 125 * (8 * t2 + t) + 25 * sq + 5 * si + sp];
        }
        return E[E_GEN + 31 * u1 + u2] + E[E_MM1N + 25 * t + 5 * si + sj] + E[E_MM1N + 25 * t2 + 5 * sq + sp];
    }
    if (ns == 2) {
        if (nl == 2) return E[E_INT22 + 625 * (8 * t + t2) + 125 * si + 25 * sp + 5 * sq + sj];
        if (nl == 3)
            return E[E_GEN + 31 * u1 + u2] + E[E_MM23 + 25 * t + 5 * si + sj] + E[E_MM23 + 25 * t2 + 5 * sq + sp];
    }
    return E[E_GEN + 31 * u1 + u2] + E[E_MMI + 25 * t + 5 * si + sj] + E[E_MMI + 25 * t2 + 5 * sq + sp];
}

// Generic interior loops take CI: both gaps >= 2 and not 2x2, 2x3 or 3x2.
DEV bool generic_gaps(int u1, int u2) {
    return u1 >= 2 && u2 >= 2 && !(u1 + u2 <= 5);
}

// Candidate x (0 .. 495) of the interior loops of a pair: its gaps (u1, u2) with u1 + u2 <= 30.
DEV void gaps_of(int x, int* u1, int* u2) {
    // s = u1 + u2: the largest with s (s + 1) / 2 <= x (a float root, then exact integer steps).
    int s = (int)((sqrtf(8.0f * (float)x + 1.0f) - 1.0f) * 0.5f);
    while ((s + 1) * (s + 2) / 2 <= x) ++s;
    while (s > 0 && s * (s + 1) / 2 > x) --s;
    x -= s * (s + 1) / 2;
    *u1 = x;
    *u2 = s - x;
}
#define TMFE_GAP_PAIRS 496  // (u1, u2) with u1 + u2 <= 30

// Best interior loop (stack and bulges included, but not the stack with noLP: the caller adds it)
// closed by (i, j) of type t, with the inner pair's energy, over the loops whose 5' gap u1 is
// part, part + parts, ... (a cell's loops shared by parts threads).
DEV int interior_min(const Model& m, const Seq& s, int i, int j, int t, int part, int parts) {
    const int* E = m.E;
    const int d = j - i;
    const int most = min2(TMFE_MAXLOOP, d - 2 - TMFE_TURN - 1);  // u1 + u2: the inner pair spans >= 4
    int best = TMFE_INF;
    // Stacks, bulges, 1xn, 2x2, 2x3 and 3x2 loops: the full energy.
    for (int u1 = part; u1 <= most; u1 += parts) {
        const int p = i + 1 + u1;
        for (int u2 = 0; u2 <= most - u1; ++u2) {
            if (generic_gaps(u1, u2)) break;  // and every later u2: the generic ones follow
            if (u1 == 0 && u2 == 0 && m.nolp) continue;
            const int q = j - 1 - u2;
            const int tq = pair_type(m, s.S[p], s.S[q]);
            if (!tq) continue;
            const int c = s.C[cell(s, p, q)];
            if (c >= TMFE_HALF_INF) continue;
            best = min2(best, interior_energy(m, s, i, j, t, p, q, tq) + c);
        }
    }
    // Generic loops: GEN[u1][u2] + CI[p][q], plus this pair's mismatch.
    int gen = TMFE_INF;
    const int* GEN = E + E_GEN;
    const long long n = s.n;
    int u1 = part;
    while (u1 < 2) u1 += parts;
    for (; u1 <= most - 2; u1 += parts) {
        const int p = i + 1 + u1;
        int u2 = u1 <= 3 ? 6 - u1 : 2;
        long long e = d - 2 - u1 - u2;  // the inner pair's diagonal
        long long at = e * n - e * (e - 1) / 2 + p;
        for (; u2 <= most - u1; ++u2) {
            gen = min2(gen, GEN[31 * u1 + u2] + s.CI[at]);
            at -= n - e + 1;  // to diagonal e - 1
            --e;
        }
    }
    if (gen < TMFE_HALF_INF) best = min2(best, gen + E[E_MMI + 25 * t + 5 * s.S[i + 1] + s.S[j - 1]]);
    return best;
}

// ---- the fill ------------------------------------------------------------------------------------
// A cell's two long minimisations, shared by parts threads (thread part takes every parts-th term):
// DML's splits and the interior loops of the pair.
struct Partial {
    int dml, inner;
};

DEV Partial cell_partial(const Model& m, const Seq& s, int i, int j, int part, int parts) {
    Partial r{TMFE_INF, TMFE_INF};
    const int d = j - i;
    if (d <= TMFE_TURN) return r;
    // Split after k = i + a: FML[i][k] on diagonal a at i, FML[k + 1][j] on diagonal d - a - 1 at k + 1.
    const long long n = s.n;
    int dml = TMFE_INF;
    for (int a = TMFE_TURN + 1 + part; a <= d - TMFE_TURN - 2; a += parts) {
        const long long b = d - a - 1;
        const int v = s.FML[(long long)a * n - (long long)a * (a - 1) / 2 + i] +
                      s.FML[b * n - b * (b - 1) / 2 + i + a + 1];
        dml = min2(dml, v);
    }
    r.dml = dml;
    const int t = type_of(m, s, i, j);
    if (t) r.inner = interior_min(m, s, i, j, t, part, parts);
    return r;
}

// Every array's cell (i, j) from the minima of its partials (the diagonals before it are done).
DEV void cell_finish(const Model& m, const Seq& s, int i, int j, Partial r) {
    const long long at = cell(s, i, j);
    const int d = j - i;
    if (d <= TMFE_TURN) {
        s.C[at] = s.CI[at] = s.FML[at] = s.DML[at] = TMFE_INF;
        if (m.nolp) s.CX[at] = TMFE_INF;
        return;
    }
    const int dml = fin(r.dml);
    const int t = type_of(m, s, i, j);
    int cx = TMFE_INF, c = TMFE_INF;
    if (t) {
        cx = min2(hairpin_energy(m, s, i, j, t), r.inner);
        const int inner = s.DML[cell(s, i + 1, j - 1)];
        if (inner < TMFE_HALF_INF) cx = min2(cx, inner + multi_closing(m, s, i, j, t));
        if (m.nolp) {
            const int tq = type_of(m, s, i + 1, j - 1);
            if (tq) {
                const int x = s.CX[cell(s, i + 1, j - 1)];
                if (x < TMFE_HALF_INF) {
                    const int st = m.E[E_STACK + 8 * t + rtype(m, tq)];
                    cx = min2(cx, st + x);
                    c = st + x;
                }
            }
            cx = fin(cx);
            c = fin(c);
            s.CX[at] = cx;
        } else {
            c = fin(cx);
        }
    } else if (m.nolp) {
        s.CX[at] = TMFE_INF;
    }
    s.C[at] = c;
    s.CI[at] = (c < TMFE_HALF_INF && i > 0 && j + 1 < s.n)
                   ? c + m.E[E_MMI + 25 * rtype(m, t) + 5 * s.S[j + 1] + s.S[i - 1]]
                   : TMFE_INF;
    int fml = min2(s.FML[cell(s, i + 1, j)], s.FML[cell(s, i, j - 1)]) + ml_base(m);
    if (c < TMFE_HALF_INF) fml = min2(fml, c + multi_stem(m, s, i, j, t));
    fml = min2(fml, dml);
    s.FML[at] = fin(fml);
    s.DML[at] = dml;
}

// Threads per cell of a diagonal of `cells` cells filled by `threads` threads: a power of two up
// to a warp, as many as leave no thread idle (the last diagonals have few cells and the most work).
DEV int diagonal_parts(int cells, int threads) {
    int parts = 1;
    while (parts < 32 && 2 * parts * cells <= threads) parts *= 2;
    return parts;
}

// Share x of diagonal d: part x % parts of cell x / parts. Every thread of a warp calls it (with
// x beyond the diagonal's cells too): the parts of a cell, adjacent lanes, meet by shuffles.
#ifdef TMFE_HOST
DEV void fill_share(const Model& m, const Seq& s, int d, long long x, int parts) {
    // The host runs share x for x % parts == 0 only, doing every part of the cell in turn.
    const int i = (int)(x / parts);
    if (x % parts || i >= s.n - d) return;
    Partial r{TMFE_INF, TMFE_INF};
    for (int part = 0; part < parts; ++part) {
        const Partial q = cell_partial(m, s, i, i + d, part, parts);
        r.dml = min2(r.dml, q.dml);
        r.inner = min2(r.inner, q.inner);
    }
    cell_finish(m, s, i, i + d, r);
}
#else
__device__ void fill_share(const Model& m, const Seq& s, int d, long long x, int parts) {
    const int i = (int)(x / parts), part = (int)(x % parts);
    const bool valid = i < s.n - d;
    Partial r{TMFE_INF, TMFE_INF};
    if (valid) r = cell_partial(m, s, i, i + d, part, parts);
    for (int o = parts / 2; o > 0; o /= 2) {
        r.dml = min2(r.dml, __shfl_xor_sync(0xffffffffu, r.dml, o, parts));
        r.inner = min2(r.inner, __shfl_xor_sync(0xffffffffu, r.inner, o, parts));
    }
    if (valid && part == 0) cell_finish(m, s, i, i + d, r);
}
#endif

// ---- groups of threads (a block or a warp; one thread on the host) -----------------------------
// A group folds one sequence at a time. Group: the whole block (tmfe_batch, tmfe_finish, and
// tmfe_batch_shared); WarpGroup: one warp of a block whose warps fold sequences of their own
// (tmfe_batch_warps: no block-wide barrier, minima by one warp reduction). The functions below
// that take a group are templates over the two.
struct Group {
    int tid, size;
    int* slot;  // one shared int
};

struct WarpGroup {
    int tid, size;  // lane, 32 (on the host: 0, 1)
};

#ifdef TMFE_HOST
DEV void group_sync(const Group&) {}
DEV int group_min(const Group&, int v) { return v; }
DEV void group_sync(const WarpGroup&) {}
DEV int group_min(const WarpGroup&, int v) { return v; }
#else
__device__ __forceinline__ void group_sync(const Group&) { __syncthreads(); }
// The minimum of v over the group (every thread calls it; blocks of whole warps).
__device__ int group_min(const Group& g, int v) {
    v = __reduce_min_sync(0xffffffffu, v);
    if (g.tid == 0) *g.slot = INT_MAX;
    __syncthreads();
    if ((g.tid & 31) == 0) atomicMin(g.slot, v);
    __syncthreads();
    const int r = *g.slot;
    __syncthreads();
    return r;
}
// __syncwarp orders the lanes' memory accesses (global and shared) as __syncthreads does a block's.
__device__ __forceinline__ void group_sync(const WarpGroup&) { __syncwarp(); }
__device__ __forceinline__ int group_min(const WarpGroup&, int v) { return __reduce_min_sync(0xffffffffu, v); }
#endif

// The first candidate x in 0 .. count - 1 with ok(x), or INT_MAX (every thread calls it).
template <class G, class F>
DEV int first_match(const G& g, int count, F ok) {
    int found = INT_MAX;
    for (int x = g.tid; x < count; x += g.size)
        if (ok(x)) {
            found = x;
            break;
        }
    return group_min(g, found);
}

// ---- the exterior loop ---------------------------------------------------------------------------
DEV int exterior_candidate(const Model& m, const Seq& s, int k, int l) {
    const int c = s.C[cell(s, k, l - 1)];
    if (c >= TMFE_HALF_INF) return TMFE_INF;
    return s.F5[k] + c + exterior_stem(m, s, k, l - 1, type_of(m, s, k, l - 1));
}

template <class G>
DEV void fill_exterior(const Model& m, const Seq& s, const G& g) {
    if (g.tid == 0) s.F5[0] = 0;
    group_sync(g);
    for (int l = 1; l <= s.n; ++l) {
        int best = TMFE_INF;
        for (int k = g.tid; k <= l - TMFE_TURN - 2; k += g.size) best = min2(best, exterior_candidate(m, s, k, l));
        best = group_min(g, best);
        if (g.tid == 0) s.F5[l] = min2(s.F5[l - 1], best);
        group_sync(g);
    }
}

// ---- the traceback -------------------------------------------------------------------------------
template <class G>
struct Trace {
    const Model& m;
    const Seq& s;
    const G& g;
    char* out;
    int sp;
    bool ok;
};

template <class G>
DEV void push(Trace<G>& tr, int kind, int i, int j) {
    if (tr.g.tid == 0) {
        tr.s.stack[3 * tr.sp] = kind;
        tr.s.stack[3 * tr.sp + 1] = i;
        tr.s.stack[3 * tr.sp + 2] = j;
    }
    ++tr.sp;
}

template <class G>
DEV void mark_pair(Trace<G>& tr, int i, int j) {
    if (tr.g.tid == 0) {
        tr.out[i] = '(';
        tr.out[j] = ')';
    }
}

// FML[a][k] + FML[k + 1][b] = DML[a][b]: push both.
template <class G>
DEV void split_dml(Trace<G>& tr, int a, int b) {
    const Seq& s = tr.s;
    const int target = s.DML[cell(s, a, b)];
    const int first = a + TMFE_TURN + 1;
    const int x = first_match(tr.g, b - TMFE_TURN - 1 - first, [&](int x) {
        const int k = first + x;
        return s.FML[cell(s, a, k)] + s.FML[cell(s, k + 1, b)] == target;
    });
    if (x == INT_MAX) {
        tr.ok = false;
        return;
    }
    push(tr, NODE_FML, a, first + x);
    push(tr, NODE_FML, first + x + 1, b);
}

// The loop closed by (i, j) whose energy is target: a hairpin, an interior loop (the stack onto CX
// with noLP), or a multiloop.
template <class G>
DEV void trace_loop(Trace<G>& tr, int i, int j, int target) {
    const Model& m = tr.m;
    const Seq& s = tr.s;
    const int t = type_of(m, s, i, j);
    if (hairpin_energy(m, s, i, j, t) == target) return;
    if (m.nolp) {
        const int tq = type_of(m, s, i + 1, j - 1);
        if (tq && m.E[E_STACK + 8 * t + rtype(m, tq)] + s.CX[cell(s, i + 1, j - 1)] == target) {
            push(tr, NODE_CX, i + 1, j - 1);
            return;
        }
    }
    const int d = j - i;
    const int x = first_match(tr.g, TMFE_GAP_PAIRS, [&](int x) {
        int u1, u2;
        gaps_of(x, &u1, &u2);
        if (u1 + u2 > d - 6 || (m.nolp && u1 + u2 == 0)) return false;
        const int p = i + 1 + u1, q = j - 1 - u2;
        const int tq = pair_type(m, s.S[p], s.S[q]);
        if (!tq) return false;
        const int c = s.C[cell(s, p, q)];
        return c < TMFE_HALF_INF && interior_energy(m, s, i, j, t, p, q, tq) + c == target;
    });
    if (x != INT_MAX) {
        int u1, u2;
        gaps_of(x, &u1, &u2);
        push(tr, NODE_C, i + 1 + u1, j - 1 - u2);
        return;
    }
    if (d >= 2 && s.DML[cell(s, i + 1, j - 1)] + multi_closing(m, s, i, j, t) == target) {
        split_dml(tr, i + 1, j - 1);
        return;
    }
    tr.ok = false;
}

template <class G>
DEV void trace_node(Trace<G>& tr, int kind, int i, int j) {
    const Model& m = tr.m;
    const Seq& s = tr.s;
    if (kind == NODE_F5) {
        const int l = i;
        if (l <= TMFE_TURN + 1) return;
        const int target = s.F5[l];
        if (target == s.F5[l - 1]) {
            push(tr, NODE_F5, l - 1, 0);
            return;
        }
        const int k = first_match(tr.g, l - TMFE_TURN - 1,
                                  [&](int k) { return exterior_candidate(m, s, k, l) == target; });
        if (k == INT_MAX) {
            tr.ok = false;
            return;
        }
        if (k > 0) push(tr, NODE_F5, k, 0);
        push(tr, NODE_C, k, l - 1);
    } else if (kind == NODE_C) {
        mark_pair(tr, i, j);
        if (m.nolp) {
            push(tr, NODE_CX, i + 1, j - 1);
            return;
        }
        trace_loop(tr, i, j, s.C[cell(s, i, j)]);
    } else if (kind == NODE_CX) {
        mark_pair(tr, i, j);
        trace_loop(tr, i, j, s.CX[cell(s, i, j)]);
    } else {  // NODE_FML
        const int target = s.FML[cell(s, i, j)];
        const int base = ml_base(m);
        if (s.FML[cell(s, i + 1, j)] + base == target) {
            push(tr, NODE_FML, i + 1, j);
            return;
        }
        if (s.FML[cell(s, i, j - 1)] + base == target) {
            push(tr, NODE_FML, i, j - 1);
            return;
        }
        const int c = s.C[cell(s, i, j)];
        if (c < TMFE_HALF_INF && c + multi_stem(m, s, i, j, type_of(m, s, i, j)) == target) {
            push(tr, NODE_C, i, j);
            return;
        }
        if (s.DML[cell(s, i, j)] == target) {
            split_dml(tr, i, j);
            return;
        }
        tr.ok = false;
    }
}

// One optimal structure into out (n letters); false where no decomposition gave a node's energy.
template <class G>
DEV bool traceback(const Model& m, const Seq& s, const G& g, char* out) {
    for (int x = g.tid; x < s.n; x += g.size) out[x] = '.';
    Trace<G> tr{m, s, g, out, 0, true};
    push(tr, NODE_F5, s.n, 0);
    group_sync(g);
    while (tr.sp > 0 && tr.ok) {
        --tr.sp;
        const int kind = s.stack[3 * tr.sp], i = s.stack[3 * tr.sp + 1], j = s.stack[3 * tr.sp + 2];
        group_sync(g);  // every thread has read the node before it is overwritten
        trace_node(tr, kind, i, j);
        group_sync(g);  // the pushes are seen by every thread
    }
    return tr.ok;
}

// F5 and the traceback of a filled sequence: its energy, structure and error flag.
template <class G>
DEV void finish_sequence(const Model& m, const Seq& s, const G& g, char* out, int* energy, int* err) {
    fill_exterior(m, s, g);
    const bool ok = traceback(m, s, g, out);
    if (g.tid == 0) {
        *energy = s.F5[s.n];
        *err = ok ? 0 : 1;
    }
}

// A block's share of a batch: sequences block, block + blocks, ... (sequence x: lengths[x] <= nmax
// letters at S + starts[x], its structure to out + starts[x]) each filled by diagonals, then
// finished; work: this block's area (tmfe_work_ints(nmax, nolp) ints); threads: the block's
// (diagonal_parts; g.size but on the host, whose groups have one thread).
template <class G>
DEV void batch_block(const Model& m, const unsigned char* S, const long long* starts, const int* lengths, int count,
                     int nmax, int* work, char* out, int* energy, int* err, int block, int blocks, const G& g,
                     int threads) {
    for (int x = block; x < count; x += blocks) {
        const long long from = starts[x];
        const int n = lengths[x];
        const Seq s = make_seq(S + from, n, work, nmax, m.nolp);
        for (int d = 0; d < n; ++d) {
            const int parts = diagonal_parts(n - d, threads);
            const long long shares = (long long)(n - d) * parts;
            for (long long base = 0; base < shares; base += g.size) fill_share(m, s, d, base + g.tid, parts);
            group_sync(g);
        }
        finish_sequence(m, s, g, out + from, energy + x, err + x);
        group_sync(g);
    }
}

// Group x of groups of a tmfe_batch_warps block's: its work area, the x-th of the block's in shared
// memory (in_shared) or the (block * groups + x)-th of the launch's in global memory.
DEV int* warp_area(int* base, long long work_ints, int block, int groups, int x, int in_shared) {
    return base + (in_shared ? (long long)x : (long long)block * groups + x) * work_ints;
}

#ifndef TMFE_HOST
#define TMFE_MODEL_ARGS const int *E, const int *HPX, int dangles, int nolp, int span
#define TMFE_MODEL Model m{E, HPX, dangles, nolp, span}

// Batch: sequence x of lengths[x] <= nmax letters at S + starts[x], its structure to the same place
// of out, energies and error flags by x; work: gridDim.x areas of work_ints ints.
extern "C" __global__ void tmfe_batch(TMFE_MODEL_ARGS, const unsigned char* S, const long long* starts,
                                      const int* lengths, int count, int nmax, int* work, long long work_ints,
                                      char* out, int* energy, int* err) {
    TMFE_MODEL;
    __shared__ int slot;
    const Group g{(int)threadIdx.x, (int)blockDim.x, &slot};
    batch_block(m, S, starts, lengths, count, nmax, work + (long long)blockIdx.x * work_ints, out, energy, err,
                (int)blockIdx.x, (int)gridDim.x, g, (int)blockDim.x);
}

// The batch's measurement variants (gpu_mfe.BatchTuning, GAMUT_TMFE_* variables; tmfe_batch is the
// default): the same batch_block on the same arguments; only the work area's base pointer, the
// groups and the launch's shape differ. The host build has no shared memory: it runs these bodies
// on an ordinary buffer in place of the dynamic shared area, so what it checks is everything but
// the memory space (tests/host/turner_mfe_host.cu).

// tmfe_batch with the block's work area (work_ints ints) in dynamic shared memory.
extern "C" __global__ void tmfe_batch_shared(TMFE_MODEL_ARGS, const unsigned char* S, const long long* starts,
                                             const int* lengths, int count, int nmax, long long work_ints, char* out,
                                             int* energy, int* err) {
    TMFE_MODEL;
    extern __shared__ int tmfe_area[];
    __shared__ int slot;
    const Group g{(int)threadIdx.x, (int)blockDim.x, &slot};
    batch_block(m, S, starts, lengths, count, nmax, tmfe_area, out, energy, err, (int)blockIdx.x, (int)gridDim.x, g,
                (int)blockDim.x);
}

// Each warp of the block (blockDim.x / 32 warps) folds sequences of its own: group
// blockIdx.x * warps + warp of gridDim.x * warps, synchronised by warp; its work area (work_ints
// ints) in dynamic shared memory (in_shared: the block's warps' areas one after the other) or in
// work (one area per warp of the launch; work is not read with in_shared).
extern "C" __global__ void tmfe_batch_warps(TMFE_MODEL_ARGS, const unsigned char* S, const long long* starts,
                                            const int* lengths, int count, int nmax, int* work, long long work_ints,
                                            char* out, int* energy, int* err, int in_shared) {
    TMFE_MODEL;
    extern __shared__ int tmfe_area[];
    const int warps = (int)blockDim.x / 32, warp = (int)threadIdx.x / 32;
    const WarpGroup g{(int)threadIdx.x & 31, 32};
    int* area = warp_area(in_shared ? tmfe_area : work, work_ints, (int)blockIdx.x, warps, warp, in_shared);
    batch_block(m, S, starts, lengths, count, nmax, area, out, energy, err, (int)blockIdx.x * warps + warp,
                (int)gridDim.x * warps, g, 32);
}

// Long: diagonal d of one sequence of n letters, parts threads a cell (a power of two up to 32,
// dividing the block; work: tmfe_work_ints(n, nolp) ints).
extern "C" __global__ void tmfe_diagonal(TMFE_MODEL_ARGS, const unsigned char* S, int n, int* work, int d,
                                         int parts) {
    TMFE_MODEL;
    const long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const Seq s = make_seq(S, n, work, n, nolp);
    fill_share(m, s, d, x, parts);
}

// Long: F5 and the traceback (one block).
extern "C" __global__ void tmfe_finish(TMFE_MODEL_ARGS, const unsigned char* S, int n, int* work, char* out,
                                       int* energy, int* err) {
    TMFE_MODEL;
    __shared__ int slot;
    const Group g{(int)threadIdx.x, (int)blockDim.x, &slot};
    const Seq s = make_seq(S, n, work, n, nolp);
    finish_sequence(m, s, g, out, energy, err);
}
#endif
