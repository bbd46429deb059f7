// Gelfand spliced alignment (Nolasco & Moreano, equations (1)-(2)) on the GPU, many cases per launch.
//
// Layout of the work. The sorted exons of a case form one "exon stream" (built on the host,
// gamut/splicing/stream.py): for each exon k an entry row (the best last row of its predecessors,
// or j*gap to start the chain), one DP row per exon symbol, then no-op rows up to a multiple of
// ROWS. One byte per row: the base symbol (with FINISH_BIT on the exon's last row), ENTRY_CODE or
// PAD_CODE. Target columns 0..n are cut into chunks of 32*COLS columns; one warp sweeps one chunk
// down the whole stream, lane t owning COLS adjacent columns and computing a tile of ROWS rows x
// COLS columns per step, one tile behind lane t-1: an anti-diagonal wavefront of tiles inside
// every exon and across exon boundaries (intra-exon parallelism without waiting for an exon to
// finish), with ROWS*COLS independent-enough cells per step to keep one warp busy. The column
// left of a lane arrives by warp shuffle (ROWS values per step); left of a chunk it arrives
// through global memory from the warp on the previous chunk, each value tagged with its row so
// that no fence or flag is needed (a 64-bit store is seen whole or not at all).
//
// Inter-exon dependencies are column-local, so each lane keeps, for its own columns, the running
// best of the predecessors' last rows (with the exon that gave it). The host plans the folds
// (stream.py): an exon is folded when its last row is done if its successor may already follow
// it, or parked in a shared-memory slot (or re-read from global memory) until the entry of the
// first exon that may follow it. Only each exon's last row (and the predecessor choice of its
// entry row) is written globally. Many cases: one block per case (the batch mode), its warps
// taking the chunks in turn. A few cases: one single-warp block per chunk (blocks_per_case), so
// that a big case spans many SMs; a few very wide cases: several multi-warp blocks per case, all
// resident at once, taking the chunks in passes.
//
// Tie rule, shared with the CPU engines: entry value = max(j*gap, best predecessor last row);
// ties go to the chain start (-1), then to the smallest sorted exon index.

#ifndef COLS
#define COLS 8
#endif
// The stream layout (ROWS, ENTRY_CODE, PAD_CODE, FINISH_BIT, FOLD_NOW) comes from the host
// (gamut/splicing/gpu.py STREAM_OPTIONS), which defines it once in gamut/splicing/stream.py.
#if !defined(ROWS) || !defined(ENTRY_CODE) || !defined(PAD_CODE) || !defined(FINISH_BIT) || !defined(FOLD_NOW)
#error "compile with the stream layout options of gamut.splicing.gpu_layout.STREAM_OPTIONS"
#endif

#define NEG_INF (-(1 << 29))
#define FULL_MASK 0xffffffffu
#define CODES (PAD_CODE + 1)  // profile rows: A C G T N, and two unused rows for ENTRY and PAD

#if ROWS == 4
typedef unsigned int LetterWord;
#elif ROWS == 2
typedef unsigned short LetterWord;
#elif ROWS == 1
typedef unsigned char LetterWord;
#else
#error "ROWS must be 1, 2 or 4"
#endif

struct __align__(16) ScoreVec {
    short v[COLS];
};

struct __align__(16) RowVec {  // a lane's COLS values of one row (a parked last row)
    int v[COLS];
};

__device__ __forceinline__ int add_max(int a, int b, int c) {
#if __CUDA_ARCH__ >= 900
    return __viaddmax_s32(a, b, c);  // max(a + b, c) in one DPX instruction
#else
    return max(a + b, c);
#endif
}

// A chunk-edge value tagged with its stream row: (row + 1) in the high word, so zeroed memory
// never matches.
__device__ __forceinline__ long long edge_pack(int row, int value) {
    return ((long long)(row + 1) << 32) | (long long)(unsigned int)value;
}

__device__ __forceinline__ long long load_volatile(const long long* p) {
    return *((const volatile long long*)p);
}

__device__ __forceinline__ void fold_into(int (&best)[COLS], int (&best_arg)[COLS], const int (&v)[COLS], int l) {
#pragma unroll
    for (int q = 0; q < COLS; ++q) {
        if (v[q] > best[q] || (v[q] == best[q] && l < best_arg[q])) {
            best[q] = v[q];
            best_arg[q] = l;
        }
    }
}

extern "C" __global__ void splice_forward(
    const unsigned char* __restrict__ stream, const long long* __restrict__ stream_off,
    const int* __restrict__ stream_rows, const int* __restrict__ fin, const int* __restrict__ fold_ptr,
    const int2* __restrict__ fold, const long long* __restrict__ exon_off, const int* __restrict__ n_exons,
    const unsigned char* __restrict__ target, const long long* __restrict__ target_off,
    const int* __restrict__ target_len, const long long* __restrict__ out_off,
    int* last, int* pred, long long* bound, const long long* __restrict__ bound_off,
    const int* __restrict__ case_order, const int* __restrict__ matrix, const int gap,
    const int blocks_per_case, const int slots)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const int warps = blockDim.x >> 5;
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const size_t per_warp = CODES * 32 * sizeof(ScoreVec) + (size_t)slots * 32 * sizeof(RowVec);
    ScoreVec* profile = reinterpret_cast<ScoreVec*>(smem + warp * per_warp);              // [CODES][32]
    RowVec* park = reinterpret_cast<RowVec*>(smem + warp * per_warp + CODES * 32 * sizeof(ScoreVec));  // [slots][32]

    // blocks_per_case > 1 (a few big cases): the chunks of a case are spread over several
    // blocks, hence SMs, round robin (consecutive chunks, which run together in the pipeline, on
    // different blocks): chunk c goes to block c % blocks_per_case of the case, warp
    // (c / blocks_per_case) % warps. Each warp takes its chunks in increasing order, so the
    // lowest unfinished chunk can always proceed, provided every block is resident at once (the
    // host sizes the grid from the device's occupancy).
    const int cs = case_order[blockIdx.x / blocks_per_case];
    const int sub = blockIdx.x % blocks_per_case;
    const LetterWord* str = reinterpret_cast<const LetterWord*>(stream + stream_off[cs]);
    const int rows = stream_rows[cs];  // a multiple of ROWS, < 2^31 (checked on the host)
    const int tiles = rows / ROWS;
    const int* fn = fin + exon_off[cs];
    const int* fp = fold_ptr + exon_off[cs] + cs;  // K + 1 entries per case
    const int K = n_exons[cs];
    const unsigned char* t = target + target_off[cs];
    const int n = target_len[cs];
    const int width = n + 1;
    int* lst = last + out_off[cs];
    int* prd = pred + out_off[cs];
    const int chunk_cols = 32 * COLS;
    const int chunks = (width + chunk_cols - 1) / chunk_cols;

    for (int c = warp * blocks_per_case + sub; c < chunks; c += warps * blocks_per_case) {
        const int col0 = c * chunk_cols + lane * COLS;  // this lane's first column
        // Score profile of this chunk: profile[a][lane].v[q] = matrix[a][target[col0 + q - 1]].
        __syncwarp();
        for (int a = 0; a < CODES; ++a) {
            ScoreVec sv;
#pragma unroll
            for (int q = 0; q < COLS; ++q) {
                const int j = col0 + q;
                sv.v[q] = (a < ENTRY_CODE && j >= 1 && j <= n) ? (short)matrix[a * 5 + t[j - 1]] : (short)0;
            }
            profile[a * 32 + lane] = sv;
        }
        __syncwarp();

        long long* my_bound = bound + bound_off[cs] + (long long)c * rows;              // written (right edge)
        const long long* in_bound = bound + bound_off[cs] + (long long)(c - 1) * rows;  // read (left edge)
        const bool has_right = (c + 1 < chunks);

        int h[COLS];
        int best[COLS];
        int best_arg[COLS];
#pragma unroll
        for (int q = 0; q < COLS; ++q) {
            h[q] = NEG_INF;
            best[q] = NEG_INF;
            best_arg[q] = -1;
        }
        int k = -1;  // exon of this lane's current tile
        // Fold plan of the next exon (k + 1), prefetched at the previous entry; cur_fin of exon k.
        int next_fin = (K > 0) ? fn[0] : 0;
        int next_lo = (K > 0) ? fp[0] : 0;
        int next_hi = (K > 0) ? fp[1] : 0;
        int cur_fin = 0;
        LetterWord letters = (tiles > 0) ? str[0] : (LetterWord)0;  // codes of this lane's next tile
        int out[ROWS];     // H at (tile row r, col0 + COLS - 1), for the next lane
        int left_prev = NEG_INF;  // H at (previous tile's last row, col0 - 1)
#pragma unroll
        for (int r = 0; r < ROWS; ++r) out[r] = NEG_INF;

        // Left edge of the chunk (c > 0): batch b holds tiles [32b, 32b + 32), lane L the ROWS
        // values of tile 32b + L. The next batch is loaded one batch ahead; its tags are checked
        // (and the loads repeated until the producer got there) only when it is needed.
        long long edge_cur[ROWS], edge_next[ROWS];
        auto load_batch = [&](int b, long long (&dst)[ROWS]) {
            const int tile = 32 * b + lane;
#pragma unroll
            for (int r = 0; r < ROWS; ++r)
                dst[r] = (tile < tiles) ? load_volatile(in_bound + (long long)tile * ROWS + r) : 0;
        };
        auto wait_batch = [&](int b, long long (&dst)[ROWS]) {
            const int tile = 32 * b + lane;
            while (true) {
                bool ok = true;
#pragma unroll
                for (int r = 0; r < ROWS; ++r)
                    ok = ok && (tile >= tiles || (int)(dst[r] >> 32) == tile * ROWS + r + 1);
                if (__all_sync(FULL_MASK, ok)) break;
                __nanosleep(64);
                load_batch(b, dst);
            }
        };
        if (c > 0) {
            load_batch(0, edge_cur);
            wait_batch(0, edge_cur);
            load_batch(1, edge_next);
        }

        const int steps = tiles + 31;
        for (int step = 0; step < steps; ++step) {
            const int tile = step - lane;
            const bool active = (tile >= 0) && (tile < tiles);
            // Left column of this tile's rows: from the previous lane, or the previous chunk for lane 0.
            int left_in[ROWS];
#pragma unroll
            for (int r = 0; r < ROWS; ++r) left_in[r] = __shfl_up_sync(FULL_MASK, out[r], 1);
            if (c > 0) {
                if (step > 0 && (step & 31) == 0) {
#pragma unroll
                    for (int r = 0; r < ROWS; ++r) edge_cur[r] = edge_next[r];
                    wait_batch(step >> 5, edge_cur);
                    load_batch((step >> 5) + 1, edge_next);
                }
#pragma unroll
                for (int r = 0; r < ROWS; ++r) {
                    const int from_prev = __shfl_sync(FULL_MASK, (int)edge_cur[r], step & 31);
                    if (lane == 0) left_in[r] = from_prev;
                }
            } else if (lane == 0) {
#pragma unroll
                for (int r = 0; r < ROWS; ++r) left_in[r] = NEG_INF;
            }
            if (active) {
                const unsigned int codes = (unsigned int)letters;
                if (tile + 1 < tiles) letters = str[tile + 1];  // used at the next active step
                if ((codes & 0xff) == ENTRY_CODE) {
                    // Entry row of exon k: fold the parked exons that may now precede it.
                    ++k;
                    const int lo = next_lo, hi = next_hi;
                    cur_fin = next_fin;
                    if (k + 1 < K) {
                        next_fin = fn[k + 1];
                        next_lo = hi;
                        next_hi = fp[k + 2];
                    }
                    for (int e = lo; e < hi; ++e) {
                        const int2 f = fold[e];
                        int v[COLS];
                        if (f.y >= 0) {
                            const RowVec pv = park[f.y * 32 + lane];
#pragma unroll
                            for (int q = 0; q < COLS; ++q) v[q] = pv.v[q];
                        } else {
                            const int* src = lst + (long long)f.x * width + col0;
#pragma unroll
                            for (int q = 0; q < COLS; ++q) v[q] = (col0 + q < width) ? src[q] : NEG_INF;
                        }
                        fold_into(best, best_arg, v, f.x);
                    }
                    int* dst = prd + (long long)k * width + col0;
#pragma unroll
                    for (int q = 0; q < COLS; ++q) {
                        const int start_score = (col0 + q) * gap;
                        int arg = -1;
                        if (best[q] > start_score) {
                            h[q] = best[q];
                            arg = best_arg[q];
                        } else {
                            h[q] = start_score;
                        }
                        if (col0 + q < width) dst[q] = arg;
                    }
                }
                // The tile's rows: DP rows update h; the entry row (already set) and no-op rows keep it.
                int diag = left_prev;
#pragma unroll
                for (int r = 0; r < ROWS; ++r) {
                    const unsigned int code = ((codes >> (8 * r)) & 0xff) & ~(unsigned int)FINISH_BIT;
                    const ScoreVec sv = profile[code * 32 + lane];
                    const bool dp = code < ENTRY_CODE;
                    int cand[COLS];
#pragma unroll
                    for (int q = 0; q < COLS; ++q) {
                        const int dg = (q == 0) ? diag : h[q - 1];
                        cand[q] = add_max(h[q], gap, dg + (int)sv.v[q]);
                    }
                    int left = left_in[r];
#pragma unroll
                    for (int q = 0; q < COLS; ++q) {
                        left = add_max(left, gap, cand[q]);
                        h[q] = dp ? left : h[q];
                    }
                    diag = left_in[r];
                    out[r] = h[COLS - 1];
                }
                left_prev = left_in[ROWS - 1];
                if (codes & (FINISH_BIT * (0x01010101u & ((1ull << (8 * ROWS)) - 1)))) {
                    // Exon k's last row is in this tile (the rows after it are no-ops): store it,
                    // then fold it now or park it until the first exon that may follow it.
                    int* dst = lst + (long long)k * width + col0;
#pragma unroll
                    for (int q = 0; q < COLS; ++q) {
                        if (col0 + q < width) dst[q] = h[q];
                    }
                    if (cur_fin == FOLD_NOW) {
                        fold_into(best, best_arg, h, k);
                    } else if (cur_fin >= 0) {
                        RowVec pv;
#pragma unroll
                        for (int q = 0; q < COLS; ++q) pv.v[q] = h[q];
                        park[cur_fin * 32 + lane] = pv;
                    }
                }
                if (lane == 31 && has_right) {
#pragma unroll
                    for (int r = 0; r < ROWS; ++r)
                        __stcg(my_bound + (long long)tile * ROWS + r, edge_pack(tile * ROWS + r, out[r]));
                }
            }
        }
    }
}
