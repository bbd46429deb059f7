// Gelfand spliced alignment (Nolasco & Moreano, equations (1)-(2)) on the GPU, many cases per launch.
//
// Layout of the work. The sorted exons of a case form one "exon stream": for each exon k, an
// entry row (row 0: the best last row of its predecessors, or j*gap to start the chain) followed
// by one DP row per exon symbol. Target columns 0..n are cut into chunks of 32*COLS columns; one
// warp sweeps one chunk down the whole stream, lane t owning COLS adjacent columns and lagging
// lane t-1 by one row (an anti-diagonal wavefront inside every exon, and across exon boundaries:
// intra-exon parallelism without waiting for an exon to finish). The value of the column left of
// a lane arrives by warp shuffle; left of a chunk it arrives through global memory from the warp
// on the previous chunk (a per-chunk progress counter orders it). Inter-exon dependencies are
// column-local, so each lane keeps a running best of the predecessors' last rows (with the exon
// that gave it) for its own columns, folding exons in end order as they become predecessors.
// Only each exon's last row (and the predecessor choice of its entry row) is written globally.
// Many cases: one block per case (the batch mode), its warps taking the chunks in turn. A few
// cases: one single-warp block per chunk (blocks_per_case), so that a big case spans many SMs.
//
// Tie rule, shared with the CPU engines: entry value = max(j*gap, best predecessor last row);
// ties go to the chain start (-1), then to the smallest sorted exon index.

#ifndef COLS
#define COLS 8
#endif

#define NEG_INF (-(1 << 29))
#define FULL_MASK 0xffffffffu
// The previous chunk's right edge is handed over in batches of 32 rows (one value per lane, loaded
// one batch ahead so that the L2 latency is hidden) and published every PUBLISH_EVERY rows.
#define PUBLISH_EVERY 32

struct __align__(16) ScoreVec {
    short v[COLS];
};

__device__ __forceinline__ int add_max(int a, int b, int c) {
#if __CUDA_ARCH__ >= 900
    return __viaddmax_s32(a, b, c);  // max(a + b, c) in one DPX instruction
#else
    return max(a + b, c);
#endif
}

extern "C" __global__ void splice_forward(
    const unsigned char* __restrict__ base, const long long* __restrict__ base_off,
    const int* __restrict__ starts, const int* __restrict__ ends, const int* __restrict__ by_end,
    const long long* __restrict__ exon_off, const int* __restrict__ n_exons,
    const unsigned char* __restrict__ target, const long long* __restrict__ target_off,
    const int* __restrict__ target_len, const long long* __restrict__ out_off,
    int* last, int* pred,
    int* bound, const long long* __restrict__ bound_off, const long long* __restrict__ stream_rows,
    int* progress, const long long* __restrict__ progress_off,
    const int* __restrict__ case_order, const int* __restrict__ matrix, const int gap,
    const int blocks_per_case)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const int warps = blockDim.x >> 5;
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    ScoreVec* profile = reinterpret_cast<ScoreVec*>(smem) + (size_t)warp * 5 * 32;  // [5][32] per warp

    // blocks_per_case > 1 (a few big cases): the chunks of a case are spread over several
    // blocks, hence SMs; chunk c goes to warp (c % (warps * blocks_per_case)) of the case's
    // blocks. Only used when every block is resident at once (the host makes sure).
    const int cs = case_order[blockIdx.x / blocks_per_case];
    const int sub = blockIdx.x % blocks_per_case;
    const unsigned char* b = base + base_off[cs];
    const int* st = starts + exon_off[cs];
    const int* en = ends + exon_off[cs];
    const int* be = by_end + exon_off[cs];
    const int K = n_exons[cs];
    const unsigned char* t = target + target_off[cs];
    const int n = target_len[cs];
    const int width = n + 1;
    int* lst = last + out_off[cs];
    int* prd = pred + out_off[cs];
    const int rows = (int)stream_rows[cs];  // < 2^31 (checked on the host)
    int* prog = progress + progress_off[cs];
    const int chunk_cols = 32 * COLS;
    const int chunks = (width + chunk_cols - 1) / chunk_cols;

    for (int c = sub * warps + warp; c < chunks; c += warps * blocks_per_case) {
        const int col0 = c * chunk_cols + lane * COLS;  // this lane's first column
        // Score profile of this chunk: profile[a][lane].v[q] = matrix[a][target[col0 + q - 1]].
        __syncwarp();
        for (int a = 0; a < 5; ++a) {
            ScoreVec sv;
#pragma unroll
            for (int q = 0; q < COLS; ++q) {
                const int j = col0 + q;
                sv.v[q] = (j >= 1 && j <= n) ? (short)matrix[a * 5 + t[j - 1]] : (short)0;
            }
            profile[a * 32 + lane] = sv;
        }
        __syncwarp();

        int* my_bound = bound + bound_off[cs] + (long long)c * rows;          // written (right edge)
        const int* in_bound = bound + bound_off[cs] + (long long)(c - 1) * rows;  // read (left edge)
        const bool has_right = (c + 1 < chunks);
        int avail = 0;  // rows of the previous chunk known to be published

        int h[COLS];
        int best[COLS];
        int best_arg[COLS];
#pragma unroll
        for (int q = 0; q < COLS; ++q) {
            h[q] = NEG_INF;
            best[q] = NEG_INF;
            best_arg[q] = -1;
        }
        int folded = 0;
        int k = 0;        // exon of this lane's current row
        int i = 0;        // row inside exon k (0 = entry row)
        int sk = (K > 0) ? st[0] : 0;
        int len = (K > 0) ? en[0] - sk : 0;
        // Prefetched one step ahead: the base letter of the next DP row, and the next exon.
        int next_letter = (K > 0) ? (int)b[sk] : 0;
        int next_sk = (K > 1) ? st[1] : 0;
        int next_len = (K > 1) ? en[1] - next_sk : 0;
        int left_in = NEG_INF;  // H at (row, col0 - 1)
        int diag_in = NEG_INF;  // H at (row - 1, col0 - 1)
        int out = NEG_INF;      // H at (row, col0 + COLS - 1), for the next lane
        ScoreVec sv;            // scores of the next DP row (loaded when the lane advances)
        // Left edge of the chunk (c > 0): rows [32m, 32m+32) of the previous chunk's right edge,
        // one per lane, in edge_cur; the next batch is loaded into edge_next one batch ahead.
        int edge_cur = NEG_INF, edge_next = NEG_INF;
        auto load_edge = [&](int first) -> int {  // all lanes; waits until published
            if (first >= rows) return NEG_INF;
            const int need = min(first + 32, rows);
            if (lane == 0 && avail < need) {
                volatile int* flag = prog + (c - 1);
                while ((avail = *flag) < need) __nanosleep(32);
                __threadfence();
            }
            __syncwarp();
            return (first + lane < rows) ? __ldcg(in_bound + first + lane) : NEG_INF;
        };
        if (c > 0) {
            edge_cur = load_edge(0);
            edge_next = load_edge(32);
        }

        const int steps = rows + 31;
        int publish_in = PUBLISH_EVERY;  // rows until lane 31 publishes its progress
        for (int step = 0; step < steps; ++step) {
            const int row = step - lane;
            const bool active = (row >= 0) && (row < rows);
            // Left edge of this row: from the previous lane, or from the previous chunk for lane 0.
            int recv = __shfl_up_sync(FULL_MASK, out, 1);
            if (c > 0) {
                if (step > 0 && (step & 31) == 0) {
                    edge_cur = edge_next;
                    edge_next = load_edge(step + 32);
                }
                const int from_prev = __shfl_sync(FULL_MASK, edge_cur, step & 31);
                if (lane == 0) recv = from_prev;
            }
            if (active) {
                diag_in = left_in;
                if (lane > 0 || c > 0) {
                    left_in = recv;
                } else {
                    left_in = NEG_INF;
                }
                if (i == 0) {
                    // Entry row of exon k: fold the exons that now precede k, then take the best.
                    while (folded < K && en[be[folded]] <= sk) {
                        const int l = be[folded];
                        const int* src = lst + (long long)l * width + col0;
#pragma unroll
                        for (int q = 0; q < COLS; ++q) {
                            if (col0 + q < width) {
                                const int v = src[q];
                                if (v > best[q] || (v == best[q] && l < best_arg[q])) {
                                    best[q] = v;
                                    best_arg[q] = l;
                                }
                            }
                        }
                        ++folded;
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
                } else {
                    int cand[COLS];
#pragma unroll
                    for (int q = 0; q < COLS; ++q) {
                        const int up = h[q];
                        const int dg = (q == 0) ? diag_in : h[q - 1];
                        cand[q] = add_max(up, gap, dg + (int)sv.v[q]);
                    }
                    int left = left_in;
#pragma unroll
                    for (int q = 0; q < COLS; ++q) {
                        left = add_max(left, gap, cand[q]);
                        h[q] = left;
                    }
                    if (i == len) {
                        int* dst = lst + (long long)k * width + col0;
#pragma unroll
                        for (int q = 0; q < COLS; ++q) {
                            if (col0 + q < width) dst[q] = h[q];
                        }
                    }
                }
                out = h[COLS - 1];
                if (lane == 31 && has_right) {
                    __stcg(my_bound + row, out);
                    if (--publish_in == 0 || row + 1 == rows) {
                        __threadfence();
                        *((volatile int*)(prog + c)) = row + 1;
                        publish_in = PUBLISH_EVERY;
                    }
                }
                // Advance along the exon stream. The next row's scores come from shared memory
                // (its letter was loaded a step earlier); the global loads issued here (the
                // letter after, the exon after next) are only used a step or more later.
                if (i == len) {
                    ++k;
                    i = 0;
                    if (k < K) {
                        sk = next_sk;
                        len = next_len;
                        next_letter = (int)b[sk];
                        if (k + 1 < K) {
                            next_sk = st[k + 1];
                            next_len = en[k + 1] - next_sk;
                        }
                    }
                } else {
                    ++i;
                    sv = profile[next_letter * 32 + lane];
                    if (i < len) next_letter = (int)b[sk + i];
                }
            }
        }
    }
}
