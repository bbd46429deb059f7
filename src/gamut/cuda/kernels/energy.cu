// miRanda 3.3a duplex energies (old Vienna library: Turner 1999 at 30 C, dangles=1) on the GPU.
//
// The same recursions as the Numba engine (gamut.scanning.energy.cpu._mfe_one), one warp per fold string.
// Cells are filled by anti-diagonals (span d = j - i = 4, 5, ... n - 1); per diagonal:
// Two diagonals at a time for steps 1-3 (a pair cell of span D reads spans <= D - 2 only):
//   1. lanes over cells: pair types, the pair cells compacted to a list; per pair cell the
//      hairpin, stack, 1-nt bulge, 1x1/2x1/2x2 and multiloop-closing terms;
//   2. lanes over (pair cell, u1) tasks: bulges of 2..30 nt and the generic interior loops with
//      u1 unpaired on the 5' side, merged into the cell with a shared-memory atomicMin;
//   3. lanes over pair cells: c[i, j] stored as c + AU penalty and c + inner interior mismatch;
//   4. lanes over cells: multiloop segments fml[i, j] and their two-part minima dml[i, j] (the
//      splits of both spans in one pass, the stems of span d + 1 after those of span d).
// The exterior loop (f3, from the 3' end) is filled last, one position at a time.
//
// Cells are stored as int32 or, to fit twice the strings into shared memory, as int16 (Work<short>):
// E_INF and anything at or above E_INF / 2 (no structure) is stored as CELL16_INF; a finite value
// outside (-CELL16_INF, CELL16_INF) sets the work area's overflow flag and the string's energy comes
// back as ENERGY_OVERFLOW, for the host to fold again with int32 cells. All arithmetic is int32.
//
// Table layout (offsets T_* into the "small" and "big" int32 buffers, N_TL, HP_LEN) comes from
// gamut.scanning.energy.gpu through -D options. The host test build (tests/host/energy_host.cu) compiles
// this file with ENERGY_HOST: one lane per warp, the warp primitives become plain code.

#define E_INF 10000000
#define E_TURN 3
#define E_MAXLOOP 30
#define DML_RING 5  // dml is read at spans d - 2 .. d - 4 only
#define CELL16_INF 32767
#define ENERGY_OVERFLOW (-2147483647 - 1)  // energy of a string whose int16 cells overflowed

#ifdef ENERGY_HOST
#define DEV static inline
#define LANES 1
#else
#define DEV __device__ __forceinline__
#define LANES 32
#endif

// ---- warp primitives (one lane on the host) ---------------------------------------------------
DEV void warp_sync() {
#ifndef ENERGY_HOST
    __syncwarp();
#endif
}

DEV int warp_min(int v) {
#ifndef ENERGY_HOST
    for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
#endif
    return v;
}

DEV void cell_min(int* p, int v) {
#ifndef ENERGY_HOST
    atomicMin(p, v);
#else
    *p = min(*p, v);
#endif
}

// Append `value` to list[count..] where flag is set (lane order kept); returns the new count.
DEV int warp_append(bool flag, int value, unsigned short* list, int count, int lane) {
#ifndef ENERGY_HOST
    unsigned mask = __ballot_sync(0xffffffffu, flag);
    if (flag) list[count + __popc(mask & ((1u << lane) - 1u))] = (unsigned short)value;
    return count + __popc(mask);
#else
    (void)lane;
    if (flag) list[count] = (unsigned short)value;
    return count + (flag ? 1 : 0);
#endif
}

// ---- work area of one fold string, for strings of up to m - 2 letters -------------------------
// Matrices over cells (i, j), 0 <= i <= j < m, are stored by span: tri(m, s) + i.
DEV int tri(int m, int s) { return s * m - (s * (s - 1)) / 2; }

DEV long long round16(long long bytes) { return (bytes + 15) / 16 * 16; }

// Bytes of one work area with cells of cell_bytes (2 or 4) bytes: int lists, the pair-cell list,
// letters, cells.
DEV long long energy_work_bytes(int m, int cell_bytes) {
    const long long t = (long long)m * (m + 1) / 2;
    return round16(4LL * (3 * m + 1)) + round16(4LL * m) + round16(2LL * m) +
           round16((long long)cell_bytes * (3 * t + DML_RING * m));
}

template <class C>
struct Work {
    C* cau;              // c[i, j] + terminal AU/GU penalty of (i, j)      (INF: no pair)
    C* cint;             // c[i, j] + interior mismatch seen from the loop closed outside (i, j)
    C* fml;              // multiloop segment [i, j]: one or more stems
    C* dml;              // two-part minimum of fml over [i, j] (ring of DML_RING spans)
    unsigned char* S;    // letter codes, 0 at both ends
    unsigned char* S1;   // codes as loop terms see them
    int* ecell;          // energy of each listed pair cell of the current two diagonals (2 m)
    unsigned short* plist;  // those pair cells: i | (span - d) << 15 (2 m)
    int* f3;             // exterior loop from the 3' end
    int* overflow;       // set when a finite value does not fit C
};

template <class C>
DEV Work<C> work_at(void* base, int m) {
    const long long t = (long long)m * (m + 1) / 2;
    char* p = (char*)base;
    Work<C> w;
    w.ecell = (int*)p;
    w.f3 = w.ecell + 2 * m;
    w.overflow = w.f3 + m;
    p += round16(4LL * (3 * m + 1));
    w.plist = (unsigned short*)p;
    p += round16(4LL * m);
    w.S = (unsigned char*)p;
    w.S1 = w.S + m;
    p += round16(2LL * m);
    w.cau = (C*)p;
    w.cint = w.cau + t;
    w.fml = w.cint + t;
    w.dml = w.fml + t;
    return w;
}

// Cell loads and stores (int32 arithmetic whatever the storage).
DEV int ld(const int* p) { return *p; }
DEV int ld(const short* p) {
    const int v = *p;
    return v == CELL16_INF ? E_INF : v;
}
DEV void st(int* p, int v, int* overflow) {
    (void)overflow;
    *p = v;
}
DEV void st(short* p, int v, int* overflow) {
    if (v >= E_INF / 2) {
        v = CELL16_INF;
    } else if (v >= CELL16_INF || v <= -CELL16_INF) {
        *overflow = 1;
        v = CELL16_INF;
    }
    *p = (short)v;
}

// ---- tables ------------------------------------------------------------------------------------
struct Tab {
    const int* sm;   // small tables (a shared-memory copy on the GPU)
    const int* big;  // int11, int21, int22, hairpin by size, tetraloops (global memory)
};

template <class C>
DEV int pair_of(const Tab& t, const Work<C>& w, int p, int q) { return t.sm[T_PAIR + 7 * w.S[p] + w.S[q]]; }
DEV int au_of(const Tab& t, int tp) { return tp > 2 ? t.sm[T_SCALARS + 5] : 0; }

// c[p, q] (INF where (p, q) is no pair or spans fewer than TURN + 1 letters), with its rtype.
template <class C>
DEV int c_at(const Tab& t, const Work<C>& w, int m, int p, int q, int* rt) {
    int s = q - p;
    if (s <= E_TURN) {
        *rt = 0;
        return E_INF;
    }
    int tp = pair_of(t, w, p, q);
    *rt = t.sm[T_RTYPE + tp];
    return tp ? ld(&w.cau[tri(m, s) + p]) - au_of(t, tp) : E_INF;
}

template <class C>
DEV int dml_at(const Work<C>& w, int m, int p, int q) { return ld(&w.dml[((q - p) % DML_RING) * m + p]); }

// Step 1: every term of pair (i, j) except bulges >= 2 nt and generic interior loops.
template <class C>
DEV int pair_base_energy(const Tab& t, const Work<C>& w, const unsigned char* raw, int m, int i, int j, int tp) {
    const int* sm = t.sm;
    const unsigned char* S1 = w.S1;
    const int au = sm[T_SCALARS + 5], ml_base = sm[T_SCALARS + 2];
    const int ml_closing = sm[T_SCALARS + 3], ml_intern = sm[T_SCALARS + 4];
    const int si = S1[i + 1], sj = S1[j - 1];
    const int au_o = tp > 2 ? au : 0;
    // hairpin
    const int size = j - i - 1;
    int e = t.big[T_HP + size];
    int tetra = E_INF;
    if (size == 4) {
        unsigned lo = 0, hi = 0;
        for (int k = 0; k < 4; ++k) lo |= (unsigned)raw[i - 1 + k] << (8 * k);
        for (int k = 0; k < 2; ++k) hi |= (unsigned)raw[i + 3 + k] << (8 * k);
        for (int x = 0; x < N_TL; ++x)
            if ((unsigned)t.big[T_TLKEY + 2 * x] == lo && (unsigned)t.big[T_TLKEY + 2 * x + 1] == hi)
                tetra = t.big[T_TLE + x];
    }
    if (tetra < E_INF)
        e = tetra;
    else if (size == 3)
        e += au_o;
    else
        e += sm[T_MMH + 25 * tp + 5 * si + sj];
    // stack, 1-nt bulges, 1x1, 2x1, 1x2, 2x2 loops (INF where the inner pair does not exist)
    int rt;
    const int b1 = sm[T_BULGE + 1];
    int c = c_at(t, w, m, i + 1, j - 1, &rt);
    e = min(e, sm[T_STACK + 8 * tp + rt] + c);
    c = c_at(t, w, m, i + 1, j - 2, &rt);
    e = min(e, b1 + sm[T_STACK + 8 * tp + rt] + c);
    c = c_at(t, w, m, i + 2, j - 1, &rt);
    e = min(e, b1 + sm[T_STACK + 8 * tp + rt] + c);
    c = c_at(t, w, m, i + 2, j - 2, &rt);
    e = min(e, t.big[T_INT11 + ((8 * tp + rt) * 5 + si) * 5 + sj] + c);
    c = c_at(t, w, m, i + 2, j - 3, &rt);
    e = min(e, t.big[T_INT21 + (((8 * tp + rt) * 5 + si) * 5 + S1[j - 2]) * 5 + sj] + c);
    c = c_at(t, w, m, i + 3, j - 2, &rt);
    e = min(e, t.big[T_INT21 + (((8 * rt + tp) * 5 + sj) * 5 + si) * 5 + S1[i + 2]] + c);
    c = c_at(t, w, m, i + 3, j - 3, &rt);
    e = min(e, t.big[T_INT22 + ((((8 * tp + rt) * 5 + si) * 5 + S1[i + 2]) * 5 + S1[j - 2]) * 5 + sj] + c);
    // multiloop closed by (i, j); the inner neighbours may dangle
    const int tt = sm[T_RTYPE + tp];
    const int e3 = sm[T_D3 + 5 * tt + si], e5 = sm[T_D5 + 5 * tt + sj];
    int dec = dml_at(w, m, i + 1, j - 1);
    dec = min(dec, dml_at(w, m, i + 2, j - 1) + e3 + ml_base);
    dec = min(dec, dml_at(w, m, i + 1, j - 2) + e5 + ml_base);
    dec = min(dec, dml_at(w, m, i + 2, j - 2) + e5 + e3 + 2 * ml_base);
    return min(e, dec + ml_closing + ml_intern + au_o);
}

// Step 2: the loops of pair (i, j) whose inner pair starts at p = i + 1 + u1: for u1 = 0 the 3'
// bulges of 2..30 nt; for u1 >= 1 the 5' bulge of u1 nt (u1 >= 2) and the generic interior
// loops u1 x u2 (u2 >= 1; lc is INF for the tabulated small loops and beyond MAXLOOP).
template <class C>
DEV int loop_task(const Tab& t, const Work<C>& w, int m, int i, int j, int tp, int u1) {
    const int* sm = t.sm;
    const int d = j - i;
    const int au_o = tp > 2 ? sm[T_SCALARS + 5] : 0;
    int best = 2 * E_INF;
    if (u1 == 0) {
        const int umax = min(E_MAXLOOP, d - 6);
        for (int u = 2; u <= umax; ++u)  // inner pair (i + 1, j - 1 - u)
            best = min(best, sm[T_BULGE + u] + ld(&w.cau[tri(m, d - 2 - u) + i + 1]));
        return best + au_o;
    }
    const int p = i + 1 + u1;
    if (u1 >= 2) best = sm[T_BULGE + u1] + ld(&w.cau[tri(m, d - 2 - u1) + p]) + au_o;
    const int u2end = min(E_MAXLOOP - u1, d - 6 - u1);
    if (u2end >= 1) {
        const int* lc = sm + T_LC + (E_MAXLOOP + 1) * u1;
        int s = d - 3 - u1;  // span of (p, j - 1 - u2) at u2 = 1
        int idx = tri(m, s) + p;
        int g = 2 * E_INF;
        for (int u2 = 1; u2 <= u2end; ++u2) {
            g = min(g, lc[u2] + ld(&w.cint[idx]));
            idx -= m - s + 1;  // tri(m, s - 1) = tri(m, s) - (m - s + 1)
            --s;
        }
        best = min(best, g + sm[T_MMI + 25 * tp + 5 * w.S1[i + 1] + w.S1[j - 1]]);
    }
    return best;
}

// Step 4, multiloop segment [i, j]: a stem seeded from the pairs (i|i+1, j|j-1) with unpaired
// ends, or [i+1, j] / [i, j-1] plus an unpaired letter (reads span j - i - 1) ...
template <class C>
DEV int segment_stems(const Tab& t, const Work<C>& w, int m, int i, int j) {
    const int* sm = t.sm;
    const int ml_base = sm[T_SCALARS + 2], ml_intern = sm[T_SCALARS + 4];
    const int d = j - i;
    int f = E_INF;
    for (int a = 0; a < 2; ++a) {      // p = i + a (a = 1: i dangles 5')
        for (int b = 0; b < 2; ++b) {  // q = j - b (b = 1: j dangles 3')
            const int p = i + a, q = j - b;
            if (q - p <= E_TURN) continue;
            const int tp = pair_of(t, w, p, q);
            if (!tp) continue;
            int v = ld(&w.cau[tri(m, q - p) + p]) + ml_intern;
            if (a) v += sm[T_D5 + 5 * tp + w.S1[i]] + ml_base;
            if (b) v += sm[T_D3 + 5 * tp + w.S1[j]] + ml_base;
            f = min(f, v);
        }
    }
    f = min(f, ld(&w.fml[tri(m, d - 1) + i + 1]) + ml_base);
    return min(f, ld(&w.fml[tri(m, d - 1) + i]) + ml_base);
}

// ... or two parts [i, k] + [k + 1, j] (reads spans <= j - i - 5 only): their minimum.
template <class C>
DEV int segment_splits(const Work<C>& w, int m, int i, int j) {
    int dm = 2 * E_INF;
    for (int k = i + 1 + E_TURN; k < j - 1 - E_TURN; ++k)
        dm = min(dm, ld(&w.fml[tri(m, k - i) + i]) + ld(&w.fml[tri(m, j - k - 1) + k + 1]));
    return min(dm, E_INF);
}

// Minimum free energy (dcal/mol) of raw[0:n], or ENERGY_OVERFLOW where a cell did not fit C;
// every lane of the warp calls it, all get the result.
template <class C>
DEV int fold_one(const Tab& t, const unsigned char* raw, int n, void* work, int lane) {
    if (n < E_TURN + 2) return 0;
    const int m = n + 2;
    const Work<C> w = work_at<C>(work, m);
    const int* sm = t.sm;
    // letters, the first spans (no pair) and the dml ring
    for (int k = lane; k < m; k += LANES) {
        const int code = (k == 0 || k == m - 1) ? 0 : sm[T_CODE + raw[k - 1]];
        w.S[k] = (unsigned char)code;
        w.S1[k] = (unsigned char)sm[T_ALIAS + code];
        w.f3[k] = 0;
    }
    if (lane == 0) *w.overflow = 0;
    for (int s = 0; s <= E_TURN; ++s)
        for (int k = lane; k < m - s; k += LANES) {
            const int x = tri(m, s) + k;
            st(&w.cau[x], E_INF, w.overflow);
            st(&w.cint[x], E_INF, w.overflow);
            st(&w.fml[x], E_INF, w.overflow);
        }
    for (int k = lane; k < DML_RING * m; k += LANES) st(&w.dml[k], E_INF, w.overflow);
    warp_sync();
    // Diagonals two at a time: a pair cell of span D reads spans <= D - 2 only, so steps 1-3 of
    // spans d and d + 1 run together (twice the pair cells per pass); step 4 of d + 1 reads the
    // segments of d, so step 4 runs span by span. plist entries: i | (span - d) << 15.
    for (int d = E_TURN + 1; d < n; d += 2) {
        const int spans = min(2, n - d);
        // 1. pair cells of these diagonals and their base energies
        int count = 0;
        for (int dd = 0; dd < spans; ++dd) {
            const int D = d + dd, cells = n - D, row = tri(m, D);
            for (int b = 1; b <= cells; b += LANES) {
                const int i = b + lane;
                const bool pairs = i <= cells && pair_of(t, w, i, i + D) != 0;
                if (i <= cells) {
                    st(&w.cau[row + i], E_INF, w.overflow);
                    st(&w.cint[row + i], E_INF, w.overflow);
                }
                count = warp_append(pairs, i | dd << 15, w.plist, count, lane);
            }
        }
        warp_sync();
        for (int k = lane; k < count; k += LANES) {
            const int i = w.plist[k] & 0x7fff, D = d + (w.plist[k] >> 15);
            w.ecell[k] = pair_base_energy(t, w, raw, m, i, i + D, pair_of(t, w, i, i + D));
        }
        warp_sync();
        // 2. bulges and generic interior loops: (pair cell, u1) tasks. Rows u1 = 0 .. last take
        //    about last - u1 steps each, so one task takes rows a and last - a (balanced lanes);
        //    tasks per cell as for the wider span (the narrower one has at most one fewer).
        const int last_hi = min(E_MAXLOOP, d + spans - 1 - 6);
        if (last_hi >= 0) {
            const int per = last_hi / 2 + 1;  // task slots per cell: a = 0 .. per - 1
            for (int x = lane; x < count * per; x += LANES) {
                const int k = x / per, a = x - k * per;
                const int i = w.plist[k] & 0x7fff, D = d + (w.plist[k] >> 15);
                const int last = min(E_MAXLOOP, D - 6);
                if (2 * a > last) continue;  // a = 0 .. last / 2 (none when last < 0)
                const int tp = pair_of(t, w, i, i + D);
                int v = loop_task(t, w, m, i, i + D, tp, a);
                if (last - a != a) v = min(v, loop_task(t, w, m, i, i + D, tp, last - a));
                cell_min(&w.ecell[k], v);
            }
            warp_sync();
        }
        // 3. store the pairs of these diagonals
        for (int k = lane; k < count; k += LANES) {
            const int i = w.plist[k] & 0x7fff, D = d + (w.plist[k] >> 15), j = i + D;
            const int tp = pair_of(t, w, i, j);
            const int e = w.ecell[k], row = tri(m, D);
            st(&w.cau[row + i], min(E_INF, e + au_of(t, tp)), w.overflow);
            const int tt = sm[T_RTYPE + tp];
            st(&w.cint[row + i], min(E_INF, e + sm[T_MMI + 25 * tt + 5 * w.S1[j + 1] + w.S1[i - 1]]), w.overflow);
        }
        warp_sync();
        // 4. multiloop segments. The splits of span d + 1 read spans <= d - 4 only, so they run
        //    with the whole segments of span d (lanes over the cells of both spans); the stems of
        //    span d + 1 (whose shifts read span d) follow.
        const int cells0 = n - d, cells1 = spans > 1 ? n - d - 1 : 0;
        for (int x = lane; x < cells0 + cells1; x += LANES) {
            const bool first = x < cells0;
            const int D = first ? d : d + 1, i = first ? x + 1 : x - cells0 + 1;
            const int dm = segment_splits(w, m, i, i + D);
            st(&w.dml[(D % DML_RING) * m + i], dm, w.overflow);
            if (first)
                st(&w.fml[tri(m, D) + i], min(segment_stems(t, w, m, i, i + D), dm), w.overflow);
            else
                w.ecell[i - 1] = dm;  // free after step 3
        }
        warp_sync();
        for (int i = 1 + lane; i <= cells1; i += LANES)
            st(&w.fml[tri(m, d + 1) + i], min(segment_stems(t, w, m, i, i + d + 1), w.ecell[i - 1]), w.overflow);
        warp_sync();
    }
    // exterior loop: f3[i] = best structure of [i, n], i = n - 4 .. 1
    int carry = E_INF;  // best start at i with a 5' dangle from i - 1 (pairs of row i + 1)
    for (int i = n - E_TURN - 1; i >= 1; --i) {
        int here = E_INF, below = E_INF;
        for (int j = i + E_TURN + 1 + lane; j <= n; j += LANES) {
            const int tp = pair_of(t, w, i, j);
            if (!tp) continue;
            int rest = w.f3[j + 1];
            if (j < n) rest = min(rest, sm[T_D3 + 5 * tp + w.S1[j + 1]] + w.f3[j + 2]);
            const int ext = ld(&w.cau[tri(m, j - i) + i]) + rest;
            here = min(here, ext);
            if (i > 1) below = min(below, sm[T_D5 + 5 * tp + w.S1[i - 1]] + ext);
        }
        here = warp_min(here);
        below = warp_min(below);
        const int f = min(min(w.f3[i + 1], here), carry);
        warp_sync();
        if (lane == 0) w.f3[i] = f;
        warp_sync();
        carry = below;
    }
    return *w.overflow ? ENERGY_OVERFLOW : w.f3[1];
}

#ifndef ENERGY_HOST
#ifndef MAX_WARPS
#define MAX_WARPS 20  // gamut.scanning.energy.gpu passes its MAX_WARPS
#endif
// One warp per fold string (grid-stride over `order`; up to MAX_WARPS warps per block). SHARED:
// work areas in dynamic shared memory after the small tables; otherwise in `scratch` (one area of
// energy_work_bytes(maxm, sizeof(C)) per warp of the grid).
template <bool SHARED, class C>
__device__ void energy_fold_body(const int* __restrict__ small, const int* __restrict__ big,
                                 const unsigned char* __restrict__ raw, const long long* __restrict__ offsets,
                                 const int* __restrict__ order, int count, int maxm, char* scratch, int* out) {
    extern __shared__ int smem[];
    for (int k = threadIdx.x; k < T_SMALL; k += blockDim.x) smem[k] = small[k];
    __syncthreads();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const long long per = energy_work_bytes(maxm, (int)sizeof(C));
    char* work = SHARED ? (char*)smem + round16(4LL * T_SMALL) + warp * per
                        : scratch + ((long long)blockIdx.x * warps + warp) * per;
    const Tab t{smem, big};
    for (int x = blockIdx.x * warps + warp; x < count; x += gridDim.x * warps) {
        const int s = order[x];
        const long long start = offsets[s];
        const int e = fold_one<C>(t, raw + start, (int)(offsets[s + 1] - start), work, lane);
        if (lane == 0) out[s] = e;
        __syncwarp();
    }
}

#define ENERGY_KERNEL(NAME, SHARED, C)                                                                   \
    extern "C" __global__ void __launch_bounds__(32 * MAX_WARPS, 1)                                    \
    NAME(const int* small, const int* big, const unsigned char* raw, const long long* offsets,         \
         const int* order, int count, int maxm, char* scratch, int* out) {                              \
        energy_fold_body<SHARED, C>(small, big, raw, offsets, order, count, maxm, scratch, out);      \
    }

ENERGY_KERNEL(energy_fold_shared16, true, short)
ENERGY_KERNEL(energy_fold_shared, true, int)
ENERGY_KERNEL(energy_fold_global, false, int)
#endif
