// Accessibility: RNAplfold's local partition function (Turner 2004, 37 C, dangles=2), in double
// precision, for many sequences at once (gamut.access.gpu drives it; docs/accessibility.md).
//
// The model. A sequence of n letters has windows [s, s + W - 1], s = 0 .. n - W (W = min(W, n)); in a
// window, pairs span at most L letters (L = min(L, W)) and every letter outside it is unpaired (so
// stems at the window's edge see the letters beyond it as dangles). The probability that a stretch
// [a, b] is unpaired is the mean, over the windows holding the stretch, of its probability in each.
//
// The algorithm (ours). Inside quantities do not depend on the window: Qb (pair (i, j) closed), Qm1
// (one multiloop stem starting at i), Qm (one or more stems), Qm2 (two or more) are filled by span
// d = j - i, one thread per i. Per window, the exterior loop's prefix F and suffix B partition
// functions are filled by one thread per window. Outside, by decreasing span, every pair's
// probability summed over the windows (P; Pt = P / Qb) comes from the exterior (windows holding it),
// interior loops and multiloops (through G0/G1/G2: the closing pairs' weights summed over their 3'
// ends). The unpaired stretch [a, b] lies in exactly one loop: exterior (per window), a hairpin, one
// side of an interior loop (IL/IR: interior loop probabilities by the gap's ends) or a multiloop;
// each part is a sum of positive terms.
//
// Launches per span. The interior-loop sums (about 500 terms) belong only to pairs whose letters
// pair, about a third of the cells; one thread per cell would leave two thirds of each warp idle
// through them. So each span lists its pairs first (a warp's in lane order, warps in any order), and
// one thread per listed pair sums its loops; each thread writes only its own cells (and IL/IR at its
// own positions), so the order of the list changes no value. A cell (or listed pair, or window) may
// have several threads, its lanes (see Lanes below), which split its long sums.
//
// Arrays over (span d, position i) are stored d-major: X[d * N + i] (adjacent threads, adjacent i).
// The host test builds (tests/host/plfold_host.cu, turner_pf_host.cu) compile this file with
// PLF_HOST: the kernels' bodies as plain functions over all threads in turn.
//
// The global partition function (gamut.folding.turner.gpu_pf, RNAfold -p) is the case of one window
// per sequence (W at least the longest, L its maximum base-pair span), with the options of
// gamut.folding.turner.options as compile-time switches: PLF_DANGLES (2: ViennaRNA's -d2, the
// default; 0: no dangles or mismatches on exterior and multiloop stems) and PLF_NOLP (1: RNAfold's
// --noLP partition function, whose pairs are those that could stack on a neighbouring pair, see
// live_type), and PLF_UNPAIRED=0 (no sums for unpaired stretches; lanes allowed). Its kernels
// plf_pair_probs and plf_partition give each sequence's pair probabilities and partition function.

#ifdef PLF_HOST
#define DEV static inline
#else
#define DEV __device__ __forceinline__
#endif

#ifndef PLF_DANGLES
#define PLF_DANGLES 2
#endif
#ifndef PLF_NOLP
#define PLF_NOLP 0
#endif
#ifndef PLF_UNPAIRED  // 1: keep the sums for unpaired stretches (accessibility); needs one lane a cell
#define PLF_UNPAIRED 1
#endif
#if PLF_DANGLES != 0 && PLF_DANGLES != 2
#error "PLF_DANGLES must be 0 or 2"
#endif

#define PLF_MAXLOOP 30
#define PLF_TURN 3
// A window's partition function must lie in [PLF_TINY, PLF_HUGE] (far from the ends of the double
// range, so that its products and ratios are exact to rounding); otherwise the batch is refused.
#define PLF_TINY 1e-280
#define PLF_HUGE 1e280
#define N_ARRAYS 15  // [L][N] arrays in the work area, before IL, IR, F and Bz

struct Plf {
    const double* T;        // Boltzmann factors (offsets T_*)
    const int* I;           // pair types and special hairpins (offsets I_*)
    const signed char* S;   // letter codes 0..4, all sequences end to end
    const int* SB;          // per position: its sequence's first position
    const int* SE;          // ... and one past its last
    long long N;            // positions
    int W, L;               // window and span asked for (per sequence at most its length)
    double* work;
    int* bad;               // set when a weight left the range of doubles (see checked)
    const double* SC;       // this batch's scaling: SC[k] = sc^k (k <= W + 2), then GS (see below)
    int lanes;              // threads sharing a cell's long sums (see Lanes below)
};

// Lanes. A cell's long sums (over a multiloop's or an exterior loop's letters, over an interior
// loop's 5' gap) may be split among p.lanes threads (1, 2, 4, .. 32, consecutive in a warp): lane x
// takes terms x, x + lanes, ...; the parts are added (group_sum on the GPU; the host build adds the
// lanes' parts in turn) and lane 0 writes the cell. One lane a cell suits batches of many short
// sequences, 32 a long sequence (a cell a warp, so that a span's few cells keep the GPU busy). With
// one lane the sums run in a plain loop's order. Sums of a cell's part: Sum3.
struct Sum3 {
    double a, b, c;
};
DEV Sum3 operator+(Sum3 x, Sum3 y) { return Sum3{x.a + y.a, x.b + y.b, x.c + y.c}; }

// x^k by repeated products (k <= 32: lane offsets and strides of ML-base weights).
DEV double power(double x, int k) {
    double r = 1.0;
    for (int e = 0; e < k; ++e) r *= x;
    return r;
}

// Scaling. Every letter's weight is multiplied by sc (SC[1]; 1 unless a window's partition function
// would leave the range of doubles, see gamut.access.gpu): a hairpin by sc^(its letters), an
// interior loop by sc^(its closing pair and gaps), a multiloop's closing pair by sc^2, every
// unpaired multiloop or exterior letter by sc. Probabilities are ratios of weights of the same
// letters, so they do not change. GS = SC + W + 3: GEN[n1][n2] * sc^(n1 + n2 + 2).
DEV const double* scaled_gen(const Plf& p) { return p.SC + p.W + 3; }
DEV double ml_base(const Plf& p) { return p.T[T_SCALARS + 2] * p.SC[1]; }

DEV long long plf_work_doubles(long long N, int L, int W) {
    return N * ((long long)N_ARRAYS * L + 2LL * (PLF_MAXLOOP + 1) + 2LL * (W + 1));
}

// Work-area arrays. QbI/QbI1: Qb times the pair's mismatch seen from a generic or 1xn interior loop
// around it; PtO/PtO1: Pt times the pair's own mismatch towards a generic or 1xn loop inside it.
struct Arrays {
    double *Qb, *QbE, *QbI, *QbI1, *Qm1, *Qm, *Qm2, *Pt, *PtO, *PtO1, *Pml, *Hw, *G0, *G1, *G2, *IL, *IR, *F, *Bz;
};

DEV Arrays plf_arrays(const Plf& p) {
    const long long LN = (long long)p.L * p.N;
    double* w = p.work;
    Arrays a;
    double** named[N_ARRAYS] = {&a.Qb, &a.QbE, &a.QbI, &a.QbI1, &a.Qm1, &a.Qm, &a.Qm2, &a.Pt,
                                &a.PtO, &a.PtO1, &a.Pml, &a.Hw, &a.G0, &a.G1, &a.G2};
    for (int x = 0; x < N_ARRAYS; ++x) *named[x] = w + x * LN;
    a.IL = w + N_ARRAYS * LN;
    a.IR = a.IL + (PLF_MAXLOOP + 1) * p.N;
    a.F = a.IR + (PLF_MAXLOOP + 1) * p.N;
    a.Bz = a.F + (long long)(p.W + 1) * p.N;
    return a;
}

DEV long long at(const Plf& p, int d, long long i) { return (long long)d * p.N + i; }

// ---- loop weights (ViennaRNA's exp_E_* semantics, our code) -------------------------------------
DEV int pair_type(const Plf& p, int a, int b) { return p.I[I_PAIR + 5 * a + b]; }
DEV int rtype(const Plf& p, int t) { return p.I[I_RTYPE + t]; }

// A stem (type `type`) in the exterior loop or (multi) a multiloop, with its 5' and 3' neighbours s5
// and s3 (-1: none); with dangles=0 neighbours add nothing.
DEV double stem_weight(const Plf& p, int type, int s5, int s3, bool multi) {
    const double* T = p.T;
    double q;
#if PLF_DANGLES == 0
    s5 = s3 = -1;
#endif
    if (s5 >= 0 && s3 >= 0) q = T[(multi ? T_MMM : T_MMEXT) + 25 * type + 5 * s5 + s3];
    else if (s5 >= 0) q = T[T_D5 + 5 * type + s5];
    else if (s3 >= 0) q = T[T_D3 + 5 * type + s3];
    else q = 1.0;
    if (type > 2) q *= T[T_SCALARS + 0];
    if (multi) q *= T[T_MLINTERN + type];
    return q;
}

DEV int loop_key(const signed char* S, long long from, int width) {
    int key = 0;
    for (int x = 0; x < width; ++x) key = key * 5 + S[from + x];
    return key;
}

DEV int find_key(const int* keys, int count, int key) {
    for (int x = 0; x < count; ++x)
        if (keys[x] == key) return x;
    return -1;
}

// Hairpin closed by (i, j) of pair type `type`.
DEV double hairpin_weight_unscaled(const Plf& p, long long i, long long j, int type) {
    const double* T = p.T;
    const int u = (int)(j - i - 1);
    double q = u <= PLF_MAXLOOP ? T[T_HP + u]
                                : T[T_HP + PLF_MAXLOOP] * exp(-(T[T_SCALARS + 3] * log(u / 30.)) * 10. / T[T_SCALARS + 4]);
    if (u == 4) {
        const int x = find_key(p.I + I_TETRA, N_TETRA, loop_key(p.S, i, 6));
        if (x >= 0) return T[T_TETRA_E + x];
    } else if (u == 6) {
        const int x = find_key(p.I + I_HEX, N_HEX, loop_key(p.S, i, 8));
        if (x >= 0) return T[T_HEX_E + x];
    } else if (u == 3) {
        const int x = find_key(p.I + I_TRI, N_TRI, loop_key(p.S, i, 5));
        if (x >= 0) return T[T_TRI_E + x];
        return type > 2 ? q * T[T_SCALARS + 0] : q;
    }
    return q * T[T_MMH + 25 * type + 5 * p.S[i + 1] + p.S[j - 1]];
}

DEV double hairpin_weight(const Plf& p, long long i, long long j, int type) {
    return hairpin_weight_unscaled(p, i, j, type) * p.SC[j - i + 1];
}

// Interior loop (stack, bulge or interior) closed by (i, j) of type `type` around (k, l), whose
// type seen from the loop is `type2` (the type of (l, k)); unscaled.
DEV double interior_weight_unscaled(const Plf& p, long long i, long long j, long long k, long long l, int type,
                                    int type2) {
    const double* T = p.T;
    const signed char* S = p.S;
    const int n1 = (int)(k - i - 1), n2 = (int)(j - l - 1);
    const int nl = n1 > n2 ? n1 : n2, ns = n1 > n2 ? n2 : n1;
    if (nl == 0) return T[T_STACK + 8 * type + type2];
    if (ns == 0) {
        double z = T[T_BULGE + nl];
        if (nl == 1) return z * T[T_STACK + 8 * type + type2];
        if (type > 2) z *= T[T_SCALARS + 0];
        if (type2 > 2) z *= T[T_SCALARS + 0];
        return z;
    }
    const int si1 = S[i + 1], sj1 = S[j - 1], sp1 = S[k - 1], sq1 = S[l + 1];
    if (ns == 1) {
        if (nl == 1) return T[T_INT11 + 25 * (8 * type + type2) + 5 * si1 + sj1];
        if (nl == 2) {
            if (n1 == 1) return T[T_INT21 + 125 * (8 * type + type2) + 25 * si1 + 5 * sq1 + sj1];
            return T[T_INT21 + 125 * (8 * type2 + type) + 25 * sq1 + 5 * si1 + sp1];
        }
        return T[T_INT + nl + 1] * T[T_MM1N + 25 * type + 5 * si1 + sj1] * T[T_MM1N + 25 * type2 + 5 * sq1 + sp1] *
               T[T_NINIO + nl - 1];
    }
    if (ns == 2) {
        if (nl == 2) return T[T_INT22 + 625 * (8 * type + type2) + 125 * si1 + 25 * sp1 + 5 * sq1 + sj1];
        if (nl == 3)
            return T[T_INT + 5] * T[T_MM23 + 25 * type + 5 * si1 + sj1] * T[T_MM23 + 25 * type2 + 5 * sq1 + sp1] *
                   T[T_NINIO + 1];
    }
    return T[T_INT + nl + ns] * T[T_MMI + 25 * type + 5 * si1 + sj1] * T[T_MMI + 25 * type2 + 5 * sq1 + sp1] *
           T[T_NINIO + nl - ns];
}

DEV double interior_weight(const Plf& p, long long i, long long j, long long k, long long l, int type, int type2) {
    return interior_weight_unscaled(p, i, j, k, l, type, type2) * p.SC[(k - i) + (j - l)];
}

DEV int eff_window(const Plf& p, long long i) {
    const int n = p.SE[i] - p.SB[i];
    return p.W < n ? p.W : n;
}

DEV int eff_span(const Plf& p, int w) { return p.L < w ? p.L : w; }

// Interior loops by their gaps n1 (5') and n2 (3'), n1 + n2 <= 30: a generic loop weighs
// GEN[n1][n2] times the two mismatches (MMI), a 1xn loop likewise with MM1N; stacks, bulges and the
// tabulated small loops (1x1, 1x2, 2x2, 2x3) go through interior_weight.
DEV int loop_kind(int n1, int n2) {
    if (n1 >= 2 && n2 >= 2 && n1 + n2 >= 6) return 0;                  // generic
    if ((n1 == 1 && n2 >= 3) || (n2 == 1 && n1 >= 3)) return 1;         // 1xn
    return 2;                                                           // the rest
}

// Sum over interior loops closed by (i, j) (type `type`) of their weight times Qb of the inner pair:
// this lane's part (5' gaps n1 = lane, lane + lanes, ...).
DEV double inside_interior(const Plf& p, const Arrays& a, long long i, long long j, int type, int lane) {
    const double* T = p.T;
    const signed char* S = p.S;
    const int d = (int)(j - i), m = 5 * S[i + 1] + S[j - 1];
    const double o_gen = T[T_MMI + 25 * type + m], o_1n = T[T_MM1N + 25 * type + m];
    double gen = 0.0, one = 0.0, rest = 0.0;
    for (int n1 = lane; n1 <= PLF_MAXLOOP && n1 <= d - 6; n1 += p.lanes) {
        const long long k = i + 1 + n1;
        int n2max = PLF_MAXLOOP - n1;
        if (n2max > d - 6 - n1) n2max = d - 6 - n1;
        const double* g = scaled_gen(p) + (PLF_MAXLOOP + 1) * n1;
        for (int n2 = 0; n2 <= n2max; ++n2) {
            const long long cell = at(p, d - 2 - n1 - n2, k);
            const int kind = loop_kind(n1, n2);
            if (kind == 0) {
                gen += a.QbI[cell] * g[n2];
            } else if (kind == 1) {
                one += a.QbI1[cell] * g[n2];
            } else {
                const double q = a.Qb[cell];
                if (q != 0.0) {
                    const long long l = j - 1 - n2;
                    rest += q * interior_weight(p, i, j, k, l, type, rtype(p, pair_type(p, S[k], S[l])));
                }
            }
        }
    }
    return gen * o_gen + one * o_1n + rest;
}

// ---- inside: span d, position i ------------------------------------------------------------------
// The letters i and i + d could pair: past the hairpin minimum, within their sequence and its
// window's span, and of a pair type (returned; 0: not).
DEV int can_pair(const Plf& p, int d, long long i) {
    const long long j = i + d;
    if (d <= PLF_TURN || j >= p.SE[i] || d >= eff_span(p, eff_window(p, i))) return 0;
    return pair_type(p, p.S[i], p.S[j]);
}

// The pair (i, i + d) can close loops: it can pair, and with PLF_NOLP, so can (i + 1, j - 1) or
// (i - 1, j + 1) (ViennaRNA's noLP ensemble: pairs that could stack on a neighbour; a structure may
// still hold such a pair alone). Its type, or 0. Only such pairs have interior-loop sums; on the
// GPU they are listed first (append_live), so that a warp's threads all do that work.
DEV int live_type(const Plf& p, int d, long long i) {
    const int type = can_pair(p, d, i);
#if PLF_NOLP
    if (type && !can_pair(p, d - 2, i + 1) && !(i > p.SB[i] && can_pair(p, d + 2, i - 1))) return 0;
#endif
    return type;
}

// Qb of a pair (i, i + d) of type `type` = live_type(p, d, i) != 0 (the work area starts zeroed, so
// other pairs' Qb is 0), given the sum of its interior loops (inside_interior's parts). Reads spans
// below d only.
DEV void inside_pair(const Plf& p, const Arrays& a, int d, long long i, int type, double interior) {
    const long long j = i + d;
    const signed char* S = p.S;
    double qb = hairpin_weight(p, i, j, type);
    qb += interior;
    if (d >= 2)
        qb += a.Qm2[at(p, d - 2, i + 1)] * p.T[T_SCALARS + 1] * p.SC[2] *
              stem_weight(p, rtype(p, type), S[j - 1], S[i + 1], true);
    a.Qb[at(p, d, i)] = qb;
}

// Cell (d, i) lies in its sequence and its window's span.
DEV bool in_span(const Plf& p, int d, long long i) {
    return i + d < p.SE[i] && d < eff_span(p, eff_window(p, i));
}

// The rest of cell (d, i) (in_span), after inside_pair of every live pair of span d: QbE, QbI, QbI1
// and Qm1 written by lane 0 (write); returns Qm1.
DEV double inside_own(const Plf& p, const Arrays& a, int d, long long i, bool write) {
    const long long sb = p.SB[i], se = p.SE[i], j = i + d;
    const double* T = p.T;
    const signed char* S = p.S;
    const double mlb = ml_base(p);
    const int type = d > PLF_TURN ? pair_type(p, S[i], S[j]) : 0;
    const double qb = type ? a.Qb[at(p, d, i)] : 0.0;
    if (write) {
        a.QbE[at(p, d, i)] = qb == 0.0 ? 0.0 : qb * stem_weight(p, type, i > sb ? S[i - 1] : -1, j + 1 < se ? S[j + 1] : -1, false);
        if (qb != 0.0 && i > sb && j + 1 < se) {  // seen from an interior loop around it
            const int t2 = rtype(p, type), m = 5 * S[j + 1] + S[i - 1];
            a.QbI[at(p, d, i)] = qb * T[T_MMI + 25 * t2 + m];
            a.QbI1[at(p, d, i)] = qb * T[T_MM1N + 25 * t2 + m];
        }
    }
    // One stem starting at i, then unpaired letters to j.
    double m1 = d > 0 ? a.Qm1[at(p, d - 1, i)] * mlb : 0.0;
    if (qb != 0.0) m1 += qb * stem_weight(p, type, i > sb ? S[i - 1] : -1, j + 1 < se ? S[j + 1] : -1, true);
    if (write) a.Qm1[at(p, d, i)] = m1;
    return m1;
}

// One or more stems (Qm: .a), two or more (Qm2: .b) in cell (d, i) (in_span) whose Qm1 is m1, the
// last stem starting at u: this lane's part (u = i + lane, i + lane + lanes, ...; u = i is m1).
DEV Sum3 inside_multi(const Plf& p, const Arrays& a, int d, long long i, double m1, int lane) {
    const long long j = i + d;
    const double mlb = ml_base(p);
    double qm = lane == 0 ? m1 : 0.0, qm2 = 0.0;
    double lead = power(mlb, lane == 0 ? p.lanes : lane);  // mlb^(u - i)
    const double step = power(mlb, p.lanes);
    for (long long u = i + (lane == 0 ? p.lanes : lane); u <= j; u += p.lanes) {
        const double last = a.Qm1[at(p, (int)(j - u), u)];
        const double before = a.Qm[at(p, (int)(u - 1 - i), i)];
        qm += (lead + before) * last;
        qm2 += before * last;
        lead *= step;
    }
    return Sum3{qm, qm2, 0.0};
}

DEV void inside_multi_write(const Plf& p, const Arrays& a, int d, long long i, Sum3 sum) {
    a.Qm[at(p, d, i)] = sum.a;
    a.Qm2[at(p, d, i)] = sum.b;
}

// Cell (d, i) whole, every lane's part in turn (the host build's order: a pair's Qb, then the rest).
DEV void inside_cell(const Plf& p, const Arrays& a, int d, long long i) {
    const int type = live_type(p, d, i);
    if (type) {
        double interior = 0.0;
        for (int lane = 0; lane < p.lanes; ++lane) interior += inside_interior(p, a, i, i + d, type, lane);
        inside_pair(p, a, d, i, type, interior);
    }
    if (!in_span(p, d, i)) return;
    const double m1 = inside_own(p, a, d, i, true);
    Sum3 sum{0.0, 0.0, 0.0};
    for (int lane = 0; lane < p.lanes; ++lane) sum = sum + inside_multi(p, a, d, i, m1, lane);
    inside_multi_write(p, a, d, i, sum);
}

// ---- exterior loop of the window starting at s: F (prefixes), Bz (suffixes / Z) -----------------
// F[x]: letters s .. s + x - 1; B[x]: letters s + x .. the window's end (Bz: B / Z, once Z is known).
DEV double& F_at(const Plf& p, const Arrays& a, long long s, long long x) { return a.F[x * p.N + s]; }
DEV double& Bz_at(const Plf& p, const Arrays& a, long long s, long long x) { return a.Bz[x * p.N + s]; }

// A window starts at s.
DEV bool window_start(const Plf& p, long long s) { return s + eff_window(p, s) <= p.SE[s]; }

DEV void exterior_start(const Plf& p, const Arrays& a, long long s) {
    F_at(p, a, s, 0) = 1.0;
    Bz_at(p, a, s, eff_window(p, s)) = 1.0;
}

// F[x], x >= 1, this lane's part: the last stem starts at k (k = kmin + lane, ...); lane 0 adds the
// last letter unpaired first.
DEV double exterior_prefix(const Plf& p, const Arrays& a, long long s, int x, int lane) {
    const int Le = eff_span(p, eff_window(p, s));
    const long long j = s + x - 1;
    double f = lane == 0 ? F_at(p, a, s, x - 1) * p.SC[1] : 0.0;
    const long long kmin = j - Le + 1 > s ? j - Le + 1 : s;
    for (long long k = kmin + lane; k <= j - PLF_TURN - 1; k += p.lanes) f += F_at(p, a, s, k - s) * a.QbE[at(p, (int)(j - k), k)];
    return f;
}

// B[x], x < the window, this lane's part: the first stem ends at l (l = i + PLF_TURN + 1 + lane, ...).
DEV double exterior_suffix(const Plf& p, const Arrays& a, long long s, int x, int lane) {
    const int We = eff_window(p, s), Le = eff_span(p, We);
    const long long i = s + x, e = s + We - 1;
    double b = lane == 0 ? Bz_at(p, a, s, x + 1) * p.SC[1] : 0.0;
    const long long lmax = i + Le - 1 < e ? i + Le - 1 : e;
    for (long long l = i + PLF_TURN + 1 + lane; l <= lmax; l += p.lanes) b += a.QbE[at(p, (int)(l - i), i)] * Bz_at(p, a, s, l + 1 - s);
    return b;
}

// After F and B: Z checked (lane 0), B divided by Z (this lane's x).
DEV void exterior_finish(const Plf& p, const Arrays& a, long long s, int lane) {
    const int We = eff_window(p, s);
    const double z = F_at(p, a, s, We);
    if (lane == 0 && !(z >= PLF_TINY && z <= PLF_HUGE)) *p.bad = 1;  // the window's weights left the range of doubles
    for (int x = lane; x <= We; x += p.lanes) Bz_at(p, a, s, x) /= z;
}

// The window at s whole, every lane's part in turn (the host build's order).
DEV void exterior_window(const Plf& p, const Arrays& a, long long s) {
    if (!window_start(p, s)) return;
    const int We = eff_window(p, s);
    exterior_start(p, a, s);
    for (int x = 1; x <= We; ++x) {
        double f = 0.0;
        for (int lane = 0; lane < p.lanes; ++lane) f += exterior_prefix(p, a, s, x, lane);
        F_at(p, a, s, x) = f;
    }
    for (int x = We - 1; x >= 0; --x) {
        double b = 0.0;
        for (int lane = 0; lane < p.lanes; ++lane) b += exterior_suffix(p, a, s, x, lane);
        Bz_at(p, a, s, x) = b;
    }
    for (int lane = 0; lane < p.lanes; ++lane) exterior_finish(p, a, s, lane);
}

// ---- outside: span d, position k (pair (k, l)); G0/G1/G2 of (k, k + d) first --------------------
// A thread's scratch of PLF_MAXLOOP + 1 doubles: at[g * stride]. On the GPU, in shared memory with
// the block's threads interleaved (a local array would live in slow local memory).
struct Scratch {
    double* at;
    int stride;
};

// G0/G1/G2 (.a/.b/.c) of cell (d, k) (in_span): multiloops closed by (k, j), j > l = k + d, summed
// with what lies between l and j; this lane's part (j = l + 1 + lane, ...). Reads spans above d only.
DEV Sum3 outside_g(const Plf& p, const Arrays& a, int d, long long k, int lane) {
    const long long se = p.SE[k], l = k + d;
    const int Le = eff_span(p, eff_window(p, k));
    const double mlb = ml_base(p);
    double g0 = 0.0, g1 = 0.0, g2 = 0.0, run = power(mlb, lane);  // mlb^(j - l - 1)
    const double step = power(mlb, p.lanes);
    const long long jmax = k + Le - 1 < se - 1 ? k + Le - 1 : se - 1;
    for (long long j = l + 1 + lane; j <= jmax; j += p.lanes) {
        const double w = a.Pml[at(p, (int)(j - k), k)];
        if (w != 0.0) {
            g0 += w * run;
            if (j - 1 >= l + 1) {
                g1 += w * a.Qm[at(p, (int)(j - 2 - l), l + 1)];
                g2 += w * a.Qm2[at(p, (int)(j - 2 - l), l + 1)];
            }
        }
        run *= step;
    }
    return Sum3{g0, g1, g2};
}

DEV void outside_g_write(const Plf& p, const Arrays& a, int d, long long k, Sum3 g) {
    a.G0[at(p, d, k)] = g.a;
    a.G1[at(p, d, k)] = g.b;
    a.G2[at(p, d, k)] = g.c;
}

// The pair (k, k + d) has outside sums: live, and Qb != 0. Its type, or 0.
DEV int outside_type(const Plf& p, const Arrays& a, int d, long long k) {
    const int type = live_type(p, d, k);
    return type && a.Qb[at(p, d, k)] != 0.0 ? type : 0;
}

// The pair (k, l = k + d) of type `type` = outside_type(...) != 0 inside loops closed by outer pairs,
// this lane's part: interior loops (.a; 5' gaps n1 = lane, lane + lanes, ...; with PLF_UNPAIRED their
// shares go to IL and IR, one lane a cell) and multiloops (.b, before the stem's own weight; outer
// pairs (i, j), i = k - 1 - lane, ...). Reads spans above d only (G0/G1/G2 included).
DEV Sum3 outside_loops(const Plf& p, const Arrays& a, int d, long long k, int type, int lane, Scratch scratch) {
    const long long sb = p.SB[k], se = p.SE[k], l = k + d;
    const int Le = eff_span(p, eff_window(p, k));
    const double* T = p.T;
    const signed char* S = p.S;
    const double mlb = ml_base(p);
    // Interior loops closed by (i, j) around (k, l); their probabilities also go to IL (by the
    // 5' gap's ends) and IR (by the 3' gap's ends) for the stretches inside the gaps.
    double pi = 0.0;
    const int type2 = rtype(p, type);
    if (k > sb && l + 1 < se) {
        const int m = 5 * S[l + 1] + S[k - 1];
        const double i_gen = T[T_MMI + 25 * type2 + m], i_1n = T[T_MM1N + 25 * type2 + m];
#if PLF_UNPAIRED
        const double qb = a.Qb[at(p, d, k)];
        double* ir = scratch.at;  // ir[g * scratch.stride]: this thread's IR sums by 3' gap
        for (int g = 0; g <= PLF_MAXLOOP; ++g) ir[g * scratch.stride] = 0.0;
#endif
        for (int n1 = lane; n1 <= PLF_MAXLOOP && k - 1 - n1 >= sb; n1 += p.lanes) {
            const long long i = k - 1 - n1;
            long long jmax = l + 1 + (PLF_MAXLOOP - n1);
            if (jmax > i + Le - 1) jmax = i + Le - 1;
            if (jmax > se - 1) jmax = se - 1;
            const double* g = scaled_gen(p) + (PLF_MAXLOOP + 1) * n1;
            double il = 0.0;
            for (int n2 = 0; n2 <= (int)(jmax - l - 1); ++n2) {
                const long long j = l + 1 + n2;
                const long long cell = at(p, d + 2 + n1 + n2, i);
                const int kind = loop_kind(n1, n2);
                double c;
                if (kind == 0) {
                    c = a.PtO[cell] * g[n2] * i_gen;
                } else if (kind == 1) {
                    c = a.PtO1[cell] * g[n2] * i_1n;
                } else {
                    const double pt = a.Pt[cell];
                    c = pt == 0.0 ? 0.0 : pt * interior_weight(p, i, j, k, l, pair_type(p, S[i], S[j]), type2);
                }
                il += c;
#if PLF_UNPAIRED
                ir[n2 * scratch.stride] += c;
#endif
            }
            pi += il;
#if PLF_UNPAIRED
            if (n1 > 0) a.IL[(long long)n1 * p.N + k] += il * qb;
#endif
        }
#if PLF_UNPAIRED
        for (int g = 1; g <= PLF_MAXLOOP; ++g) a.IR[(long long)g * p.N + l] += ir[g * scratch.stride] * qb;
#endif
    }
    // Multiloops closed by (i, j): (k, l) and at least one more stem inside.
    double pm = 0.0;
    if (k > sb) {
        const long long imin = l + 2 - Le > sb ? l + 2 - Le : sb;
        double lead = power(mlb, lane);  // mlb^(k - 1 - i)
        const double step = power(mlb, p.lanes);
        for (long long i = k - 1 - lane; i >= imin; i -= p.lanes) {
            const long long at_il = at(p, (int)(l - i), i);
            const double g0 = a.G0[at_il], g1 = a.G1[at_il];
            const double left = k - 1 >= i + 1 ? a.Qm[at(p, (int)(k - 2 - i), i + 1)] : 0.0;
            pm += left * (g0 + g1) + lead * g1;
            lead *= step;
        }
    }
    return Sum3{pi, pm, 0.0};
}

// Pt (and the weights derived from it) of the pair (k, l = k + d) of type `type` = outside_type(...)
// != 0, from the sums of outside_loops' parts and the windows holding it (the exterior loop).
DEV void outside_pair(const Plf& p, const Arrays& a, int d, long long k, int type, Sum3 loops) {
    const long long sb = p.SB[k], se = p.SE[k], l = k + d;
    const int We = eff_window(p, k);
    const double* T = p.T;
    const signed char* S = p.S;
    const double qb = a.Qb[at(p, d, k)];
    // Exterior: every window holding (k, l).
    double pe = 0.0;
    {
        long long s0 = l - We + 1 > sb ? l - We + 1 : sb;
        long long s1 = k < se - We ? k : se - We;
        for (long long s = s0; s <= s1; ++s) pe += F_at(p, a, s, k - s) * Bz_at(p, a, s, l + 1 - s);
        pe *= a.QbE[at(p, d, k)];
    }
    const double pi = loops.a;
    const double pm = k > sb ? loops.b * stem_weight(p, type, S[k - 1], S[l + 1], true) : 0.0;
    const int type2 = rtype(p, type);
    const double prob = pe + qb * (pi + pm);
    const double pt = prob / qb;
    a.Pt[at(p, d, k)] = pt;
    a.Pml[at(p, d, k)] = pt * T[T_SCALARS + 1] * p.SC[2] * stem_weight(p, type2, S[l - 1], S[k + 1], true);
#if PLF_UNPAIRED
    a.Hw[at(p, d, k)] = pt * hairpin_weight(p, k, l, type);
#endif
    const int m = 5 * S[k + 1] + S[l - 1];
    a.PtO[at(p, d, k)] = pt * T[T_MMI + 25 * type + m];
    a.PtO1[at(p, d, k)] = pt * T[T_MM1N + 25 * type + m];
}

// Cell (d, k) whole, every lane's part in turn (the host build's order).
DEV void outside_cell(const Plf& p, const Arrays& a, int d, long long k, Scratch scratch) {
    if (!in_span(p, d, k)) return;
    Sum3 g{0.0, 0.0, 0.0};
    for (int lane = 0; lane < p.lanes; ++lane) g = g + outside_g(p, a, d, k, lane);
    outside_g_write(p, a, d, k, g);
    const int type = outside_type(p, a, d, k);
    if (!type) return;
    Sum3 loops{0.0, 0.0, 0.0};
    for (int lane = 0; lane < p.lanes; ++lane) loops = loops + outside_loops(p, a, d, k, type, lane, scratch);
    outside_pair(p, a, d, k, type, loops);
}

// ---- suffix sums for the stretches: Hw over spans, IL and IR over gaps ----------------------------
DEV void suffix_position(const Plf& p, const Arrays& a, long long i) {
    double run = 0.0;
    for (int d = p.L - 1; d >= 0; --d) {  // Hw(i, d) := sum of the hairpins (i, i + d'), d' > d
        const double h = a.Hw[at(p, d, i)];
        a.Hw[at(p, d, i)] = run;
        run += h;
    }
    double il = 0.0, ir = 0.0;
    for (int g = PLF_MAXLOOP; g >= 1; --g) {  // gaps of g or more letters
        il += a.IL[(long long)g * p.N + i];
        a.IL[(long long)g * p.N + i] = il;
        ir += a.IR[(long long)g * p.N + i];
        a.IR[(long long)g * p.N + i] = ir;
    }
}

// ---- probability that the u letters ending at b are unpaired -------------------------------------
DEV double unpaired_stretch(const Plf& p, const Arrays& a, long long b, int u) {
    const long long sb = p.SB[b], se = p.SE[b], aa = b - u + 1;
    const int We = eff_window(p, b), Le = eff_span(p, We);
    const long long N = p.N;
    const double mlb = ml_base(p);
    long long s0 = b - We + 1 > sb ? b - We + 1 : sb;
    long long s1 = aa < se - We ? aa : se - We;
    double pe = 0.0;
    for (long long s = s0; s <= s1; ++s) pe += a.F[(aa - s) * N + s] * a.Bz[(b + 1 - s) * N + s];
    pe *= p.SC[u];  // the stretch's own letters, unpaired in the exterior loop
    // Hairpins and multiloops closed by (i, j), i < aa, j > b.
    double ph = 0.0, pm = 0.0, lead = 1.0;  // lead: mlb^(aa - 1 - i)
    long long imin = b + 2 - Le > sb ? b + 2 - Le : sb;
    for (long long i = aa - 1; i >= imin; --i) {
        const long long ib = at(p, (int)(b - i), i);
        ph += a.Hw[ib];
        double left = 0.0, left2 = 0.0;
        if (aa - 1 >= i + 1) {
            left = a.Qm[at(p, (int)(aa - 2 - i), i + 1)];
            left2 = a.Qm2[at(p, (int)(aa - 2 - i), i + 1)];
        }
        pm += left * a.G1[ib] + left2 * a.G0[ib] + lead * a.G2[ib];
        lead *= mlb;
    }
    double run = 1.0;
    for (int x = 0; x < u; ++x) run *= mlb;
    pm *= run;
    // Interior loops with the stretch in their 5' gap (i, k) or 3' gap (l, j).
    double pi = 0.0;
    for (long long k = b + 1; k < se && k - aa <= PLF_MAXLOOP; ++k) pi += a.IL[(k - aa) * N + k];
    for (long long l = aa - 1; l >= sb && b - l <= PLF_MAXLOOP; --l) pi += a.IR[(b - l) * N + l];
    const double windows = (double)(s1 - s0 + 1);
    return (pe + ph + pm + pi) / windows;
}

// A stretch of u letters ending at b lies in its sequence and in one window.
DEV bool stretch_fits(const Plf& p, long long b, int u) { return u >= 1 && b - u + 1 >= p.SB[b] && u <= eff_window(p, b); }

// A probability as the host gets it: one that is not in [0, 1] (to rounding) or not a number sets
// *bad for the host to refuse the batch (as a window whose partition function left the range does).
DEV double checked(const Plf& p, double v) {
    if (!(v >= 0.0 && v <= 1.0 + 1e-9)) *p.bad = 1;
    return v;
}

// ---- the global partition function (one window per sequence) ----------------------------------
// The probability of the pair (i, i + d), Pt * Qb (left 0 for a pair that closes no loop), into
// out[RO[i] + d]: RO[i] is where (i, i) lies in its sequence's row-major (n x n) matrix.
DEV void pair_probability(const Plf& p, const Arrays& a, int d, long long i, const long long* RO, double* out) {
    if (outside_type(p, a, d, i)) out[RO[i] + d] = checked(p, a.Pt[at(p, d, i)] * a.Qb[at(p, d, i)]);
}

// The partition function of the window starting at s (scaled: see SC), after exterior_window.
DEV double window_partition(const Plf& p, const Arrays& a, long long s) {
    return a.F[(long long)eff_window(p, s) * p.N + s];
}

#ifndef PLF_HOST
#define PLF_ARGS                                                                                    \
    const double *T, const int *I, const signed char *S, const int *SB, const int *SE, long long N, \
        int W, int L, double *work, int *bad, const double *SC, int lanes
#define PLF_MAKE Plf p{T, I, S, SB, SE, N, W, L, work, bad, SC, lanes}; const Arrays a = plf_arrays(p)

// Appends, in lane order, the positions of a warp's threads with `live` to list (count: its length).
// Every thread of the warp calls it.
__device__ void append_live(bool live, long long position, int* list, int* count) {
    const unsigned ballot = __ballot_sync(0xffffffffu, live);
    if (!ballot) return;
    const int lane = threadIdx.x & 31;
    int base = 0;
    if (lane == 0) base = atomicAdd(count, __popc(ballot));
    base = __shfl_sync(0xffffffffu, base, 0);
    if (live) list[base + __popc(ballot & ((1u << lane) - 1u))] = (int)position;
}

// This thread's item (a cell, a listed pair, a window) and lane: thread t of a launch of
// items * p.lanes threads (blocks of whole warps) takes item t / lanes, lane t % lanes.
struct Slot {
    long long item;
    int lane;
};
__device__ Slot slot(const Plf& p) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    return Slot{t / p.lanes, (int)(t % p.lanes)};
}

// The lanes of this thread's item as a warp mask (an item's lanes lie in one warp).
__device__ unsigned group_mask(const Plf& p) {
    if (p.lanes == 32) return 0xffffffffu;
    return ((1u << p.lanes) - 1u) << ((threadIdx.x & 31) & ~(p.lanes - 1));
}

// The sum of an item's parts over its lanes, for every lane (all of them call it).
__device__ double group_sum(const Plf& p, double v) {
    const unsigned mask = group_mask(p);
    for (int o = p.lanes >> 1; o > 0; o >>= 1) v += __shfl_xor_sync(mask, v, o, p.lanes);
    return v;
}
__device__ Sum3 group_sum(const Plf& p, Sum3 v) {
    return Sum3{group_sum(p, v.a), group_sum(p, v.b), group_sum(p, v.c)};
}

// Span d, inside: list the live pairs (count[0] zeroed before; one thread a cell), then their Qb
// (lanes a pair), then every cell (lanes a cell).
extern "C" __global__ void plf_inside_list(PLF_ARGS, int d, int* list, int* count) {
    PLF_MAKE;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    append_live(i < N && live_type(p, d, i) != 0, i, list, count);
}

extern "C" __global__ void plf_inside_pairs(PLF_ARGS, int d, const int* list, const int* count) {
    PLF_MAKE;
    const Slot c = slot(p);
    if (c.item >= *count) return;
    const long long i = list[c.item];
    const int type = live_type(p, d, i);
    const double interior = group_sum(p, inside_interior(p, a, i, i + d, type, c.lane));
    if (c.lane == 0) inside_pair(p, a, d, i, type, interior);
}

extern "C" __global__ void plf_inside_rest(PLF_ARGS, int d) {
    PLF_MAKE;
    const Slot c = slot(p);
    if (c.item >= N || !in_span(p, d, c.item)) return;
    const double m1 = inside_own(p, a, d, c.item, c.lane == 0);
    const Sum3 sum = group_sum(p, inside_multi(p, a, d, c.item, m1, c.lane));
    if (c.lane == 0) inside_multi_write(p, a, d, c.item, sum);
}

// The exterior loop of every window (lanes a window; lane 0 writes F and B, the others read them).
extern "C" __global__ void plf_exterior(PLF_ARGS) {
    PLF_MAKE;
    const Slot c = slot(p);
    const long long s = c.item;
    if (s >= N || !window_start(p, s)) return;
    const unsigned mask = group_mask(p);
    const int We = eff_window(p, s);
    if (c.lane == 0) exterior_start(p, a, s);
    __syncwarp(mask);
    for (int x = 1; x <= We; ++x) {
        const double f = group_sum(p, exterior_prefix(p, a, s, x, c.lane));
        if (c.lane == 0) F_at(p, a, s, x) = f;
        __syncwarp(mask);
    }
    for (int x = We - 1; x >= 0; --x) {
        const double b = group_sum(p, exterior_suffix(p, a, s, x, c.lane));
        if (c.lane == 0) Bz_at(p, a, s, x) = b;
        __syncwarp(mask);
    }
    exterior_finish(p, a, s, c.lane);
}

// Span d, outside: every cell's G0/G1/G2 (lanes a cell), listing the pairs with outside sums; then
// those sums (lanes a pair).
extern "C" __global__ void plf_outside_list(PLF_ARGS, int d, int* list, int* count) {
    PLF_MAKE;
    const Slot c = slot(p);
    const bool on = c.item < N && in_span(p, d, c.item);
    if (on) {
        const Sum3 g = group_sum(p, outside_g(p, a, d, c.item, c.lane));
        if (c.lane == 0) outside_g_write(p, a, d, c.item, g);
    }
    append_live(on && c.lane == 0 && outside_type(p, a, d, c.item) != 0, c.item, list, count);
}

// Dynamic shared memory with PLF_UNPAIRED: (PLF_MAXLOOP + 1) * blockDim.x doubles.
extern "C" __global__ void plf_outside_pairs(PLF_ARGS, int d, const int* list, const int* count) {
    PLF_MAKE;
    extern __shared__ double shared_scratch[];
    const Slot c = slot(p);
    if (c.item >= *count) return;
    const long long k = list[c.item];
    const int type = outside_type(p, a, d, k);
    const Scratch scratch{shared_scratch + threadIdx.x, (int)blockDim.x};
    const Sum3 loops = group_sum(p, outside_loops(p, a, d, k, type, c.lane, scratch));
    if (c.lane == 0) outside_pair(p, a, d, k, type, loops);
}

extern "C" __global__ void plf_suffix(PLF_ARGS) {
    PLF_MAKE;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) suffix_position(p, a, i);
}

// out[b * U + u - 1] for stretches that fit (u <= b - SB[b] + 1 and u <= the window); others untouched.
extern "C" __global__ void plf_unpaired(PLF_ARGS, int U, double* out) {
    PLF_MAKE;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // adjacent threads: adjacent b
    if (t >= N * U) return;
    const int u = (int)(t / N) + 1;
    const long long b = t - (long long)(u - 1) * N;
    if (stretch_fits(p, b, u)) out[b * U + u - 1] = checked(p, unpaired_stretch(p, a, b, u));
}

// Pair probabilities of spans d < L (one thread per cell, d-major; see pair_probability).
extern "C" __global__ void plf_pair_probs(PLF_ARGS, const long long* RO, double* out) {
    PLF_MAKE;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)L * N) return;
    const int d = (int)(t / N);
    pair_probability(p, a, d, t - (long long)d * N, RO, out);
}

// out[x]: the partition function of the window starting at starts[x], x < count.
extern "C" __global__ void plf_partition(PLF_ARGS, const long long* starts, long long count, double* out) {
    PLF_MAKE;
    const long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (x < count) out[x] = window_partition(p, a, starts[x]);
}

// out[t]: the stretch of len[t] letters ending at pos[t], for those that fit; others untouched.
extern "C" __global__ void plf_stretches(PLF_ARGS, const long long* pos, const int* len, long long count, double* out) {
    PLF_MAKE;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < count && stretch_fits(p, pos[t], len[t])) out[t] = checked(p, unpaired_stretch(p, a, pos[t], len[t]));
}
#endif
