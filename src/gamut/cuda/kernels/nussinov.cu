// Nussinov folding on the GPU: the blocked algorithm of Li, Ranka & Sahni (2014) on
// triangle-only tiled storage (see gamut/folding/tiled.py for the layout and the recurrence).
//
// D(i, j) = max pairs in s[i:j] (half-open), 0 <= i <= j <= n. The upper triangle of the
// (n+1) x (n+1) matrix is stored as TILE x TILE tiles (I, J), I <= J, diagonal-major.
// Per tile diagonal d the host launches:
//   d == 0 : nussinov_diagonal  - one block per diagonal tile, cells by diagonals;
//   d >= 2 : nussinov_maxplus   - max-plus "matrix product" over the tiles K strictly between
//            I and J (a split-K grid when few tiles are left; partial maxima merged by atomicMax);
//   d >= 1 : nussinov_finish    - splits inside tiles I and J plus the pair term, swept by
//            anti-diagonals from the tile's lower-left corner.
// Scores are int32: max(a + b, c) is one DPX instruction (__viaddmax_s32) on sm_90; below
// n = 131,072 the max-plus product runs on packed 16-bit halves (__viaddmax_u16x2, two per instruction).
// Tile offsets are 64-bit: the triangle passes 2^31 ints at n ~ 65,500 (nussinov_host_harness.cu
// builds the index helpers with g++ so that CI checks them at large n).

#ifndef NUSSINOV_HOST_TEST
#define NUSS_DEV __device__ __forceinline__
#else
#define NUSS_DEV inline
inline int max(int a, int b) { return a > b ? a : b; }
#endif

#ifndef TILE
#define TILE 64
#endif
#define MAXPLUS_THREADS 256
#define PITCH (TILE + 2)  // odd strides for the anti-diagonal sweeps: no bank conflicts

// bit 5*a + b set when codes a, b (A=0 C=1 G=2 U=3, other=4) pair: AU UA CG GC GU UG
#define BOND_MASK ((1u << 3) | (1u << 15) | (1u << 7) | (1u << 11) | (1u << 13) | (1u << 17))

static_assert(TILE == 64, "the max-plus micro-kernel is written for 64 x 64 tiles");

NUSS_DEV long long tile_index(int I, int J, int nb) {
    const long long d = J - I;
    return d * nb - d * (d - 1) / 2 + I;
}

NUSS_DEV int* tile_ptr(int* tiles, int I, int J, int nb) {
    return tiles + tile_index(I, J, nb) * (TILE * TILE);
}

// s[i] and s[j-1] may close the half-open interval [i, j)
NUSS_DEV bool closes(const unsigned char* seq, int n, int min_loop, int i, int j) {
    if (j > n || j - i < min_loop + 2) return false;
    return (BOND_MASK >> (5 * seq[i] + seq[j - 1])) & 1u;
}

#ifndef NUSSINOV_HOST_TEST  // the kernels (the host harness takes the helpers above)
// max(a + b, c)
__device__ __forceinline__ int addmax(int a, int b, int c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    return __viaddmax_s32(a, b, c);
#else
    return max(a + b, c);
#endif
}

extern "C" __global__ void __launch_bounds__(TILE)
nussinov_diagonal(int* tiles, const unsigned char* seq, int n, int nb, int min_loop) {
    __shared__ int S[TILE][PITCH];
    const int I = blockIdx.x, t = threadIdx.x, base = I * TILE;
    for (int r = 0; r < TILE; ++r) S[r][t] = 0;
    __syncthreads();
    for (int delta = 1; delta < TILE; ++delta) {
        const int li = t, lj = t + delta;
        if (lj < TILE) {
            int v = 0;
            for (int k = li + 1; k < lj; ++k) v = addmax(S[li][k], S[k][lj], v);
            if (closes(seq, n, min_loop, base + li, base + lj)) v = max(v, S[li + 1][lj - 1] + 1);
            S[li][lj] = v;
        }
        __syncthreads();
    }
    int* out = tile_ptr(tiles, I, I, nb);
    for (int r = 0; r < TILE; ++r) out[r * TILE + t] = S[r][t];
}

// This thread's int4 share of tiles A = (I, K) and B = (K, J) (THREADS threads), into registers.
template <int THREADS>
__device__ __forceinline__ void fetch_tile_pair(int* tiles, int I, int K, int J, int nb, int tid,
                                                int4 (&pa)[TILE * TILE / 4 / THREADS],
                                                int4 (&pb)[TILE * TILE / 4 / THREADS]) {
    const int4* A = reinterpret_cast<const int4*>(tile_ptr(tiles, I, K, nb));
    const int4* B = reinterpret_cast<const int4*>(tile_ptr(tiles, K, J, nb));
#pragma unroll
    for (int q = 0; q < TILE * TILE / 4 / THREADS; ++q) {
        pa[q] = A[tid + q * THREADS];
        pb[q] = B[tid + q * THREADS];
    }
}

// Four adjacent results of a max-plus thread into tile C at dst: stored when one block covers the
// whole K range, else merged with the other split-K blocks' partial maxima by atomicMax.
__device__ __forceinline__ void store_product4(int* dst, int v0, int v1, int v2, int v3) {
    if (gridDim.y == 1) {
        *reinterpret_cast<int4*>(dst) = make_int4(v0, v1, v2, v3);
    } else {
        atomicMax(dst, v0);
        atomicMax(dst + 1, v1);
        atomicMax(dst + 2, v2);
        atomicMax(dst + 3, v3);
    }
}

// acc[x][y] = max(acc[x][y], max_k A[4ty+x][k] + B[k][4tx+y]) over the tiles K in [k0, k1)
extern "C" __global__ void __launch_bounds__(MAXPLUS_THREADS)
nussinov_maxplus(int* tiles, int nb, int d, int kchunk) {
    __shared__ __align__(16) int As[TILE][TILE + 4];
    __shared__ __align__(16) int Bs[TILE][TILE];
    const int I = blockIdx.x, J = I + d;
    const int k0 = I + 1 + blockIdx.y * kchunk;
    const int k1 = min(k0 + kchunk, J);
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    constexpr int LOADS = TILE * TILE / 4 / MAXPLUS_THREADS;  // int4 per thread per tile

    int acc[4][4];
#pragma unroll
    for (int x = 0; x < 4; ++x)
#pragma unroll
        for (int y = 0; y < 4; ++y) acc[x][y] = 0;

    int4 pa[LOADS], pb[LOADS];
    if (k0 < k1) fetch_tile_pair<MAXPLUS_THREADS>(tiles, I, k0, J, nb, tid, pa, pb);
    for (int K = k0; K < k1; ++K) {
#pragma unroll
        for (int q = 0; q < LOADS; ++q) {
            const int e = tid + q * MAXPLUS_THREADS, r = e / (TILE / 4), c = (e % (TILE / 4)) * 4;
            *reinterpret_cast<int4*>(&As[r][c]) = pa[q];
            *reinterpret_cast<int4*>(&Bs[r][c]) = pb[q];
        }
        __syncthreads();
        if (K + 1 < k1) fetch_tile_pair<MAXPLUS_THREADS>(tiles, I, K + 1, J, nb, tid, pa, pb);  // overlaps this product
#pragma unroll 2
        for (int k = 0; k < TILE; k += 4) {
            int a[4][4], b[4][4];
#pragma unroll
            for (int x = 0; x < 4; ++x) {
                const int4 v = *reinterpret_cast<const int4*>(&As[ty * 4 + x][k]);
                a[x][0] = v.x; a[x][1] = v.y; a[x][2] = v.z; a[x][3] = v.w;
            }
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                const int4 v = *reinterpret_cast<const int4*>(&Bs[k + kk][tx * 4]);
                b[kk][0] = v.x; b[kk][1] = v.y; b[kk][2] = v.z; b[kk][3] = v.w;
            }
#pragma unroll
            for (int kk = 0; kk < 4; ++kk)
#pragma unroll
                for (int x = 0; x < 4; ++x)
#pragma unroll
                    for (int y = 0; y < 4; ++y) acc[x][y] = addmax(a[x][kk], b[kk][y], acc[x][y]);
        }
        __syncthreads();
    }

    int* C = tile_ptr(tiles, I, J, nb);
#pragma unroll
    for (int x = 0; x < 4; ++x)
        store_product4(C + (ty * 4 + x) * TILE + tx * 4, acc[x][0], acc[x][1], acc[x][2], acc[x][3]);
}

// max(a + b, c) on each 16-bit half (unsigned). Exact here: every D value and every sum a + b is
// a pair count of an interval, at most n / 2 <= 65,535 for the lengths this path is used for.
__device__ __forceinline__ unsigned addmax_u16x2(unsigned a, unsigned b, unsigned c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    return __viaddmax_u16x2(a, b, c);
#else
    return __vmaxu2(__vadd2(a, b), c);
#endif
}

// nussinov_maxplus with packed 16-bit arithmetic (two columns per instruction), for n <= 131,071
// (gamut.folding.gpu.PACKED_MAX_LENGTH). Tiles stay int32 in global memory; in shared memory A holds
// each value in both halves and B two adjacent columns per word. Each thread owns 4 rows x CW
// columns (CW = 4: 256 threads; CW = 8: 128 threads, half the shared-memory reads per update).
// Same grid, split-K and output as nussinov_maxplus.
template <int CW>
__device__ __forceinline__ void maxplus16_body(int* tiles, int nb, int d, int kchunk) {
    constexpr int THREADS = TILE * TILE / (4 * CW), GX = TILE / CW, WW = CW / 2;
    constexpr int LOADS = TILE * TILE / 4 / THREADS;  // int4 per thread per tile
    __shared__ __align__(16) unsigned As[TILE][TILE + 4];  // A[r][k] * 0x10001
    __shared__ __align__(16) unsigned Bs[TILE][TILE / 2];  // B[k][2c] | B[k][2c + 1] << 16
    const int I = blockIdx.x, J = I + d;
    const int k0 = I + 1 + blockIdx.y * kchunk;
    const int k1 = min(k0 + kchunk, J);
    const int tid = threadIdx.x, tx = tid % GX, ty = tid / GX;

    unsigned acc[4][WW];  // rows 4ty + x; word w: columns CW tx + 2w, CW tx + 2w + 1
#pragma unroll
    for (int x = 0; x < 4; ++x)
#pragma unroll
        for (int w = 0; w < WW; ++w) acc[x][w] = 0u;

    int4 pa[LOADS], pb[LOADS];
    if (k0 < k1) fetch_tile_pair<THREADS>(tiles, I, k0, J, nb, tid, pa, pb);
    for (int K = k0; K < k1; ++K) {
#pragma unroll
        for (int q = 0; q < LOADS; ++q) {
            const int e = tid + q * THREADS, r = e / (TILE / 4), c = (e % (TILE / 4)) * 4;
            *reinterpret_cast<uint4*>(&As[r][c]) =
                make_uint4(pa[q].x * 0x10001u, pa[q].y * 0x10001u, pa[q].z * 0x10001u, pa[q].w * 0x10001u);
            *reinterpret_cast<uint2*>(&Bs[r][c / 2]) =
                make_uint2((unsigned)pb[q].x | (unsigned)pb[q].y << 16, (unsigned)pb[q].z | (unsigned)pb[q].w << 16);
        }
        __syncthreads();
        if (K + 1 < k1) fetch_tile_pair<THREADS>(tiles, I, K + 1, J, nb, tid, pa, pb);  // overlaps this product
#pragma unroll 4
        for (int k = 0; k < TILE; k += 4) {
            unsigned a[4][4], b[4][WW];
#pragma unroll
            for (int x = 0; x < 4; ++x) {
                const uint4 v = *reinterpret_cast<const uint4*>(&As[ty * 4 + x][k]);
                a[x][0] = v.x; a[x][1] = v.y; a[x][2] = v.z; a[x][3] = v.w;
            }
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                if constexpr (WW == 2) {
                    const uint2 v = *reinterpret_cast<const uint2*>(&Bs[k + kk][tx * 2]);
                    b[kk][0] = v.x; b[kk][1] = v.y;
                } else {
                    const uint4 v = *reinterpret_cast<const uint4*>(&Bs[k + kk][tx * 4]);
                    b[kk][0] = v.x; b[kk][1] = v.y; b[kk][2] = v.z; b[kk][3] = v.w;
                }
            }
#pragma unroll
            for (int kk = 0; kk < 4; ++kk)
#pragma unroll
                for (int x = 0; x < 4; ++x)
#pragma unroll
                    for (int w = 0; w < WW; ++w) acc[x][w] = addmax_u16x2(a[x][kk], b[kk][w], acc[x][w]);
        }
        __syncthreads();
    }

    int* C = tile_ptr(tiles, I, J, nb);
#pragma unroll
    for (int x = 0; x < 4; ++x) {
#pragma unroll
        for (int h = 0; h < WW / 2; ++h) {  // 4 columns (two words) per int4
            const unsigned lo = acc[x][2 * h], hi = acc[x][2 * h + 1];
            store_product4(C + (ty * 4 + x) * TILE + tx * CW + 4 * h, (int)(lo & 0xffffu), (int)(lo >> 16),
                           (int)(hi & 0xffffu), (int)(hi >> 16));
        }
    }
}

extern "C" __global__ void __launch_bounds__(TILE * TILE / 16)
nussinov_maxplus16(int* tiles, int nb, int d, int kchunk) {
    maxplus16_body<4>(tiles, nb, d, kchunk);
}

extern "C" __global__ void __launch_bounds__(TILE * TILE / 32)
nussinov_maxplus16w(int* tiles, int nb, int d, int kchunk) {
    maxplus16_body<8>(tiles, nb, d, kchunk);
}

#ifndef FINISH_SPLIT
#define FINISH_SPLIT 8  // threads per cell of the finishing sweep (gamut.folding.gpu passes its own)
#endif
#define FINISH_THREADS (FINISH_SPLIT * TILE)
static_assert(FINISH_SPLIT >= 1 && 32 % FINISH_SPLIT == 0, "a cell's threads must be lanes of one warp");
// Rows of the finishing sweep's shared arrays: 16-byte aligned for int4 loads, and adjacent rows
// 4 int4 slots apart, so that the int4 loads of two neighbouring rows hit different banks.
#define FPITCH (TILE + 16)
// Dynamic shared memory of nussinov_finish (gamut.folding.gpu.FINISH_SHARED_BYTES): S, ST, X, below,
// left and the bond table.
#define FINISH_SHARED_BYTES (3 * TILE * FPITCH * 4 + 2 * TILE * 4 + TILE * (TILE + 1))

// The pair term and the splits inside tiles I and J, swept by anti-diagonals from the tile's
// lower-left corner. Both split sums of cell (li, lj) read two shared-memory rows along k:
// inside tile J, S[li][k] + X[lj][k] for k < lj; inside tile I, X[li][k] + ST[lj][k] for k > li,
// where ST is S transposed (written together with S). The FINISH_SPLIT lanes of a cell take the
// 16-byte blocks of k in turn (two int4 loads and four DPX steps per block).
extern "C" __global__ void __launch_bounds__(FINISH_THREADS)
nussinov_finish(int* tiles, const unsigned char* seq, int n, int nb, int d, int min_loop) {
    extern __shared__ __align__(16) int finish_shared[];
    int (*S)[FPITCH] = reinterpret_cast<int (*)[FPITCH]>(finish_shared);                    // this tile
    int (*ST)[FPITCH] = reinterpret_cast<int (*)[FPITCH]>(finish_shared + TILE * FPITCH);   // S transposed
    // above the diagonal: tile (I, I); below: tile (J, J) transposed (X[c][r] = R[r][c], r < c)
    int (*X)[FPITCH] = reinterpret_cast<int (*)[FPITCH]>(finish_shared + 2 * TILE * FPITCH);
    int* below = finish_shared + 3 * TILE * FPITCH;  // below[c] = D((I+1)T, JT + c - 1), c >= 1
    int* left = below + TILE;  // left[r] = D(IT + r + 1, JT - 1); left[T-1] = D((I+1)T, JT - 1)
    // bond[r][c]: s[IT + r] and s[JT + c - 1] close (IT + r, JT + c)
    bool (*bond)[TILE + 1] = reinterpret_cast<bool (*)[TILE + 1]>(left + TILE);
    const int I = blockIdx.x, J = I + d, tid = threadIdx.x;
    int* C = tile_ptr(tiles, I, J, nb);
    const int* L = tile_ptr(tiles, I, I, nb);
    const int* R = tile_ptr(tiles, J, J, nb);
    for (int e = tid; e < TILE * TILE; e += FINISH_THREADS) {
        const int r = e / TILE, c = e % TILE;
        const int v = C[e];  // the product over the tiles between I and J
        S[r][c] = v;
        ST[c][r] = v;
        bond[r][c] = closes(seq, n, min_loop, I * TILE + r, J * TILE + c);
        if (c > r) {
            X[r][c] = L[e];
            X[c][r] = R[e];
        }
    }
    if (tid < TILE) {
        const int t = tid;
        if (t >= 1) below[t] = tile_ptr(tiles, I + 1, J, nb)[t - 1];
        if (t < TILE - 1) left[t] = tile_ptr(tiles, I, J - 1, nb)[(t + 1) * TILE + TILE - 1];
        else left[t] = (d >= 2) ? tile_ptr(tiles, I + 1, J - 1, nb)[TILE - 1] : 0;
    }
    __syncthreads();

    // Thread group t (FINISH_SPLIT consecutive lanes) owns row li; at step s it computes column
    // s - t (every D >= 0: 0 is a neutral start), the group's maximum found with shuffles.
    const int t = tid / FINISH_SPLIT, q = tid % FINISH_SPLIT;
    const int li = TILE - 1 - t;
    for (int s = 0; s < 2 * TILE - 1; ++s) {
        const int lj = s - t;
        const bool active = lj >= 0 && lj < TILE;
        int v = 0;
        if (active) {
            if (q == 0) v = S[li][lj];
            for (int g = q; 4 * g < lj; g += FINISH_SPLIT) {  // k in tile J: [0, lj)
                const int k = 4 * g;
                const int4 a = *reinterpret_cast<const int4*>(&S[li][k]);
                const int4 b = *reinterpret_cast<const int4*>(&X[lj][k]);
                v = addmax(a.x, b.x, v);
                if (k + 1 < lj) v = addmax(a.y, b.y, v);
                if (k + 2 < lj) v = addmax(a.z, b.z, v);
                if (k + 3 < lj) v = addmax(a.w, b.w, v);
            }
            for (int g = (li + 1) / 4 + q; g < TILE / 4; g += FINISH_SPLIT) {  // k in tile I: (li, TILE)
                const int k = 4 * g;
                const int4 a = *reinterpret_cast<const int4*>(&X[li][k]);
                const int4 b = *reinterpret_cast<const int4*>(&ST[lj][k]);
                if (k > li) v = addmax(a.x, b.x, v);
                if (k + 1 > li) v = addmax(a.y, b.y, v);
                if (k + 2 > li) v = addmax(a.z, b.z, v);
                v = addmax(a.w, b.w, v);
            }
        }
#pragma unroll
        for (int o = 1; o < FINISH_SPLIT; o <<= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
        if (active && q == 0) {
            if (bond[li][lj]) {
                int inner;
                if (li + 1 < TILE) inner = (lj > 0) ? S[li + 1][lj - 1] : left[li];
                else inner = (lj > 0) ? below[lj] : left[TILE - 1];
                v = max(v, inner + 1);
            }
            S[li][lj] = v;
            ST[lj][li] = v;
        }
        __syncthreads();
    }
    for (int e = tid; e < TILE * TILE; e += FINISH_THREADS) C[e] = S[e / TILE][e % TILE];
}
#endif  // NUSSINOV_HOST_TEST

// ---------------------------------------------------------------------------------------------
// Traceback on the device, following gamut/folding/traceback.py on the tiled triangle, so that only
// the partner table leaves the GPU. C(i, j) = D(i, j + 1) for the closed interval [i, j].
// At each interval it takes, in order: s[j] unpaired, s[i] unpaired, (i, j) paired, else the
// leftmost split k with C(i, k) + C(k + 1, j) = C(i, j): [i, k] is followed on and [k + 1, j]
// is queued in global memory. Queued intervals are independent (their pairs are disjoint), so
// several blocks (workers) take them at once; the structure is the same as the
// serial traceback's, whatever the order. Inside a block, thread 0 walks the steps inside a
// TB_WIN x TB_WIN window of the triangle that the whole block loads at once; at a split all
// threads test TB_PER_THREAD candidates k each per round. The sum C(i, k) + C(k + 1, j) changes
// by at most 1 per step of k, so a candidate that misses by `deficit` rules out the next
// deficit - 1 candidates too: a round that finds no split resumes at max(k + deficit) (the same
// leftmost k as a linear search). The block alternates a parallel phase (tb_load or tb_search)
// and a serial one (tb_control, thread 0) with __syncthreads in between; the host harness runs
// the same functions block-serially with one worker.
//
// The work area (int32, 4 + 2 capacity, capacity = n + workers + 1), zeroed by the host: [0] head
// (slots taken), [1] tail (slots filled by splits), [2] intervals outstanding minus one (queued or
// being followed; the whole interval [0, n - 1] counts from the start), [3] status (0 done, 1 the
// triangle is inconsistent: no optimal move at some interval), then the slots, 64 bits each.
// Slot 0 is [0, n - 1] itself (never written); the splits fill slots 1, 2, ...
// ---------------------------------------------------------------------------------------------
#define TB_MAX_THREADS 1024
#ifndef TB_WIN
#define TB_WIN 32
#endif
#ifndef TB_PER_THREAD
#define TB_PER_THREAD 2
#endif
#define TB_NONE 0x7fffffff
#define TB_HEAD 0
#define TB_TAIL 1
#define TB_OUTSTANDING 2
#define TB_STATUS 3
#define TB_SLOTS 4

enum { TB_LOAD = 0, TB_SPLIT = 1, TB_DONE = 2, TB_FAILED = 3 };

struct TracebackState {
    int cmd;               // what the block does next (TB_*)
    int i, j;              // current closed interval [i, j]
    int i0, e0;            // window origin: W[a][b] = D(i0 + a, e0 - b)
    int v, base;           // split search: C(i, j) and the first candidate k of this round
    int found, next;       // split search: leftmost split found, first candidate not ruled out
    int W[TB_WIN][TB_WIN + 1];
};

NUSS_DEV void shared_min(int* p, int v) {
#ifdef NUSSINOV_HOST_TEST
    if (v < *p) *p = v;
#else
    atomicMin(p, v);
#endif
}

NUSS_DEV void shared_max(int* p, int v) {
#ifdef NUSSINOV_HOST_TEST
    if (v > *p) *p = v;
#else
    atomicMax(p, v);
#endif
}

// The work queue shared by the workers (thread 0 of each block), without locks: a worker claims
// the next slot (head) and waits for its interval; a split claims the next free slot (tail) and
// writes its interval there as one 64-bit word, (j << 32) | (i + 1), so 0 means not written yet.
// Outstanding counts intervals queued or being followed: none (-1 stored) means done (it only
// falls that far when no worker holds an interval, and then no more can be queued). A split adds
// one to it before its slot is written (and fenced in between), so a worker that follows the new
// interval and finishes it can never take the count below what is really outstanding.
NUSS_DEV int tb_fetch_add(int* p, int v) {  // the old value
#ifdef NUSSINOV_HOST_TEST
    const int old = *p;
    *p += v;
    return old;
#else
    return atomicAdd(p, v);
#endif
}

NUSS_DEV void tb_fence() {
#ifndef NUSSINOV_HOST_TEST
    __threadfence();
#endif
}

NUSS_DEV void tb_set_failed(int* work) { reinterpret_cast<volatile int*>(work)[TB_STATUS] = 1; }

NUSS_DEV volatile long long* tb_slots(int* work) { return reinterpret_cast<volatile long long*>(work + TB_SLOTS); }

// Queue [a, b] (one more interval outstanding). Slots cannot run out: both halves of a split are
// at least 2 long, so there are at most n / 2 - 1 splits, and capacity is n + workers + 1.
NUSS_DEV void tb_push(int* work, int a, int b) {
    tb_fetch_add(work + TB_OUTSTANDING, 1);
    tb_fence();  // the count is up before any worker can see (and finish) the interval
    const int slot = tb_fetch_add(work + TB_TAIL, 1) + 1;  // slot 0 is the whole sequence
    tb_slots(work)[slot] = (long long)b << 32 | (unsigned)(a + 1);
}

// Take an interval into S (true), or false once none is outstanding or a worker has failed
NUSS_DEV bool tb_take(TracebackState& S, int* work, int n) {
    volatile int* w = work;
    // At most one slot per worker past the last interval: n / 2 + workers < capacity
    const int slot = tb_fetch_add(work + TB_HEAD, 1);
    S.i0 = S.e0 = -TB_WIN;  // no window loaded for it yet
    if (slot == 0) {
        S.i = 0;
        S.j = n - 1;  // empty when n < 2
        return true;
    }
    for (;;) {
        const long long v = tb_slots(work)[slot];
        if (v) {
            tb_fence();  // read what was queued before the interval only after the interval
            S.i = (int)(v & 0xffffffffLL) - 1;
            S.j = (int)(v >> 32);
            return true;
        }
        if (w[TB_STATUS] || w[TB_OUTSTANDING] < 0) return false;
#ifndef NUSSINOV_HOST_TEST
        __nanosleep(200);
#endif
    }
}

// The interval followed is done (one fewer outstanding)
NUSS_DEV void tb_finish(int* work) { tb_fetch_add(work + TB_OUTSTANDING, -1); }

NUSS_DEV void tb_fail(TracebackState& S, int* work) {
    tb_set_failed(work);
    S.cmd = TB_FAILED;
}

// D(i, e) from the tiled triangle; 0 when e <= i (an empty or reversed interval)
template <typename T>
NUSS_DEV int tb_value(const T* tiles, int nb, int i, int e) {
    if (e <= i) return 0;
    return (int)tiles[tile_index(i / TILE, e / TILE, nb) * (TILE * TILE) + (i % TILE) * TILE + e % TILE];
}

// Parallel phase of thread t: load the window (rows i0.., columns e0 downwards: coalesced rows)
template <typename T>
NUSS_DEV void tb_load(TracebackState& S, const T* tiles, int nb, int t, int threads) {
    for (int x = t; x < TB_WIN * TB_WIN; x += threads) {
        const int a = x / TB_WIN, b = x % TB_WIN;
        S.W[a][b] = tb_value(tiles, nb, S.i0 + a, S.e0 - b);
    }
}

// Parallel phase of thread t: test candidates k = base + t + r * threads of the split search
template <typename T>
NUSS_DEV void tb_search(TracebackState& S, const T* tiles, int nb, int t, int threads) {
    for (int r = 0; r < TB_PER_THREAD; ++r) {
        const int k = S.base + r * threads + t;
        if (k >= S.j - 1) break;
        const int deficit = S.v - tb_value(tiles, nb, S.i, k + 1) - tb_value(tiles, nb, k + 1, S.j + 1);
        if (deficit == 0) shared_min(&S.found, k);
        else shared_max(&S.next, k + max(deficit, 1));
    }
}

// Serial phase (thread 0): finish a split search round, then walk until the next parallel phase.
// Starts with S.cmd == TB_LOAD and an interval taken (tb_take).
NUSS_DEV void tb_control(TracebackState& S, const unsigned char* seq, int n, int min_loop, int* work,
                         int* partner, int threads) {
    if (S.cmd == TB_SPLIT) {
        if (S.found == TB_NONE) {
            const int next = max(S.next, S.base + TB_PER_THREAD * threads);
            if (next >= S.j - 1) {  // no split: cannot happen for a correctly filled triangle
                tb_fail(S, work);
                return;
            }
            S.base = next;
            return;  // another round
        }
        tb_push(work, S.found + 1, S.j);
        S.j = S.found;
    }
    for (;;) {
        if (S.i >= S.j) {  // interval done: take the next one
            tb_finish(work);
            if (!tb_take(S, work, n)) {
                S.cmd = TB_DONE;
                return;
            }
            continue;
        }
        const int a = S.i - S.i0, b = S.e0 - (S.j + 1);
        if (a < 0 || b < 0 || a + 1 >= TB_WIN || b + 1 >= TB_WIN) {  // C(i..i+1, j-1..j) not in the window
            S.i0 = S.i;
            S.e0 = S.j + 1;
            S.cmd = TB_LOAD;
            return;
        }
        const int v = S.W[a][b];                            // C(i, j)
        if (v == 0) {
            S.i = S.j;
        } else if (S.W[a][b + 1] == v) {                    // C(i, j - 1): s[j] unpaired
            --S.j;
        } else if (S.W[a + 1][b] == v) {                    // C(i + 1, j): s[i] unpaired
            ++S.i;
        } else if (closes(seq, n, min_loop, S.i, S.j + 1)
                   && S.W[a + 1][b + 1] + 1 == v) {         // C(i + 1, j - 1) + 1: (i, j) paired
            partner[S.i] = S.j;
            partner[S.j] = S.i;
            ++S.i;
            --S.j;
        } else {
            S.v = v;
            S.base = S.i + 1;
            S.found = TB_NONE;
            S.next = 0;
            S.cmd = TB_SPLIT;
            return;
        }
    }
}

// Thread 0's first serial phase: take an interval and walk to the first parallel phase
NUSS_DEV void tb_begin(TracebackState& S, const unsigned char* seq, int n, int min_loop, int* work,
                       int* partner, int threads) {
    if (!tb_take(S, work, n)) {
        S.cmd = TB_DONE;
        return;
    }
    S.cmd = TB_LOAD;
    tb_control(S, seq, n, min_loop, work, partner, threads);
}

#ifndef NUSSINOV_HOST_TEST
// Each block is a worker (blockDim.x threads, up to TB_MAX_THREADS); partner (n ints) starts at
// -1. A block waiting for work holds none, so blocks need not all be resident at once.
template <typename T>
__device__ void traceback_block(const T* tiles, const unsigned char* seq, int n, int nb, int min_loop, int* work,
                                int* partner) {
    __shared__ TracebackState S;
    const int t = threadIdx.x, threads = blockDim.x;
    if (t == 0) tb_begin(S, seq, n, min_loop, work, partner, threads);
    for (;;) {
        __syncthreads();
        const int cmd = S.cmd;
        if (cmd >= TB_DONE) break;
        if (cmd == TB_LOAD) tb_load(S, tiles, nb, t, threads);
        else tb_search(S, tiles, nb, t, threads);
        __syncthreads();
        if (t == 0) tb_control(S, seq, n, min_loop, work, partner, threads);
    }
}

extern "C" __global__ void __launch_bounds__(TB_MAX_THREADS)
nussinov_traceback(const int* tiles, const unsigned char* seq, int n, int nb, int min_loop, int* work,
                   int* partner) {
    traceback_block(tiles, seq, n, nb, min_loop, work, partner);
}
#endif  // NUSSINOV_HOST_TEST

// ---------------------------------------------------------------------------------------------
// Batch folding: one block per short sequence (n <= BATCH_MAX_LENGTH, so scores fit a byte), the
// whole matrix in dynamic shared memory as CPU2 keeps it: M[i][j] = C(i, j) for i < j and its
// copy M[j][i], so both operands of the split loop are read along rows. The block fills it by
// diagonals (one thread per cell), then warp 0 runs the traceback of gamut/folding/traceback.py, all
// its lanes taking the same steps and testing 32 split candidates at once (ballot: the lowest
// set lane is the leftmost split). The structure is written as dot-bracket bytes.
// Shared memory: n * n bytes of matrix, n bytes of sequence, 2 (n + 2) shorts of stack.
// ---------------------------------------------------------------------------------------------
#define BATCH_THREADS 256
#define BATCH_MAX_LENGTH 400

NUSS_DEV int batch_c(const unsigned char* M, int n, int i, int j) {  // C(i, j); 0 when j <= i
    return j > i ? M[i * n + j] : 0;
}

// cell (row, row + d) of diagonal d >= 1: reads only diagonals below d
NUSS_DEV void batch_cell(unsigned char* M, const unsigned char* s, int n, int min_loop, int row, int d) {
    const int col = row + d;
    int best = 0;
    if (d > min_loop && ((BOND_MASK >> (5 * s[row] + s[col])) & 1u)) best = (d >= 2 ? M[(row + 1) * n + col - 1] : 0) + 1;
    const unsigned char* a = M + row * n;       // a[k] = C(row, k)
    const unsigned char* b = M + col * n + 1;   // b[k] = M[col][k + 1] = C(k + 1, col)
    for (int k = row; k < col; ++k) best = max(best, a[k] + b[k]);
    M[row * n + col] = (unsigned char)best;
    M[col * n + row] = (unsigned char)best;
}

NUSS_DEV bool batch_split_at(const unsigned char* M, int n, int i, int j, int v, int k) {
    return k < j - 1 && batch_c(M, n, i, k) + batch_c(M, n, k + 1, j) == v;
}

// bit l: candidate base + l is a split (the host build tests the 32 lanes in turn)
NUSS_DEV unsigned batch_split_mask(const unsigned char* M, int n, int i, int j, int v, int base, int lane) {
#ifdef NUSSINOV_HOST_TEST
    unsigned mask = 0;
    for (int l = 0; l < 32; ++l) mask |= (unsigned)batch_split_at(M, n, i, j, v, base + l) << l;
    (void)lane;
    return mask;
#else
    return __ballot_sync(0xffffffffu, batch_split_at(M, n, i, j, v, base + lane));
#endif
}

NUSS_DEV void batch_syncwarp() {
#ifndef NUSSINOV_HOST_TEST
    __syncwarp();
#endif
}

NUSS_DEV int batch_first_lane(unsigned mask) {
#ifdef NUSSINOV_HOST_TEST
    return __builtin_ctz(mask);
#else
    return __ffs(mask) - 1;
#endif
}

// Traceback by one warp (every lane takes the same steps); out[0..n) holds '.' already.
// Returns 0, or 1 when no optimal move exists (an inconsistent matrix).
NUSS_DEV int batch_traceback(const unsigned char* M, const unsigned char* s, int n, int min_loop, short* stack,
                             unsigned char* out, int lane) {
    int top = 0;
    if (n > 1) {
        if (lane == 0) { stack[0] = 0; stack[1] = (short)(n - 1); }
        top = 2;
    }
    batch_syncwarp();
    while (top) {
        top -= 2;
        int i = stack[top], j = stack[top + 1];
        while (i < j) {
            const int v = batch_c(M, n, i, j);
            if (v == 0) break;
            if (batch_c(M, n, i, j - 1) == v) { --j; continue; }
            if (batch_c(M, n, i + 1, j) == v) { ++i; continue; }
            if (j - i - 1 >= min_loop && ((BOND_MASK >> (5 * s[i] + s[j])) & 1u) && batch_c(M, n, i + 1, j - 1) + 1 == v) {
                if (lane == 0) { out[i] = '('; out[j] = ')'; }
                ++i;
                --j;
                continue;
            }
            int found = -1;
            for (int base = i + 1; base < j - 1; base += 32) {
                const unsigned mask = batch_split_mask(M, n, i, j, v, base, lane);
                if (mask) { found = base + batch_first_lane(mask); break; }
            }
            if (found < 0) return 1;
            batch_syncwarp();
            if (lane == 0) { stack[top] = (short)(found + 1); stack[top + 1] = (short)j; }
            batch_syncwarp();
            top += 2;
            j = found;
        }
    }
    return 0;
}

#ifndef NUSSINOV_HOST_TEST
// Block b folds the sequence at codes[start[b] .. start[b] + length[b]) and writes its structure
// to out at the same offsets and its score to scores[b] (-1: inconsistent, never expected).
extern "C" __global__ void __launch_bounds__(BATCH_THREADS)
nussinov_batch(const unsigned char* codes, const long long* start, const int* length, int min_loop, int* scores,
               unsigned char* out) {
    extern __shared__ unsigned char smem[];
    const int n = length[blockIdx.x], t = threadIdx.x;
    const long long first = start[blockIdx.x];
    unsigned char* M = smem;
    unsigned char* s = smem + n * n;
    short* stack = reinterpret_cast<short*>(smem + ((n * n + n + 1) & ~1));
    for (int x = t; x < n * n; x += BATCH_THREADS) M[x] = 0;
    for (int x = t; x < n; x += BATCH_THREADS) {
        s[x] = codes[first + x];
        out[first + x] = '.';
    }
    __syncthreads();
    for (int d = 1; d < n; ++d) {
        for (int row = t; row < n - d; row += BATCH_THREADS) batch_cell(M, s, n, min_loop, row, d);
        __syncthreads();
    }
    if (t < 32) {
        const int failed = batch_traceback(M, s, n, min_loop, stack, out + first, t);
        if (t == 0) scores[blockIdx.x] = failed ? -1 : batch_c(M, n, 0, n - 1);
    }
}
#endif  // NUSSINOV_HOST_TEST
