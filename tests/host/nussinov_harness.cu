// Host (CPU) build of the index helpers of nussinov.cu for tests without a GPU, compiled with
// g++ by tests/host_build.py (the kernel sources are on its include path). The kernels
// themselves are left out (NUSSINOV_HOST_TEST).
#define NUSSINOV_HOST_TEST 1

#include <vector>

#include "nussinov.cu"

// Position of tile (I, J) in the diagonal-major triangle.
extern "C" long long host_tile_index(int I, int J, int nb) { return tile_index(I, J, nb); }

// Element offset of tile (I, J)'s first cell as the kernels compute it: tile_ptr from the start
// (the pointer is only compared, never read; the triangle itself would take gigabytes).
static int triangle_start[1];

extern "C" long long host_tile_offset(int I, int J, int nb) {
    return tile_ptr(triangle_start, I, J, nb) - triangle_start;
}

extern "C" int host_closes(const unsigned char* seq, int n, int min_loop, int i, int j) {
    return closes(seq, n, min_loop, i, j) ? 1 : 0;
}

// The device traceback (traceback_block) run block-serially by one worker: each parallel phase
// for threads 0 .. threads-1 in turn, then the serial phase, as the kernel alternates them between
// barriers, on a zeroed work area sized as gamut.folding.gpu sizes the kernel's (capacity n + 2).
template <typename T>
static int traceback_serial(const T* tiles, const unsigned char* seq, int n, int nb, int min_loop, int threads,
                            int* partner) {
    static TracebackState S;  // about 4 KB, like the kernel's shared memory
    std::vector<int> area(TB_SLOTS + 2 * (n + 2), 0);
    int* work = area.data();
    tb_begin(S, seq, n, min_loop, work, partner, threads);
    while (S.cmd < TB_DONE) {
        for (int t = 0; t < threads; ++t) {
            if (S.cmd == TB_LOAD) tb_load(S, tiles, nb, t, threads);
            else tb_search(S, tiles, nb, t, threads);
        }
        tb_control(S, seq, n, min_loop, work, partner, threads);
    }
    return work[TB_STATUS];
}

extern "C" int host_traceback(const int* tiles, const unsigned char* seq, int n, int nb, int min_loop, int threads,
                              int* partner) {
    return traceback_serial(tiles, seq, n, nb, min_loop, threads, partner);
}

// The batch kernel (nussinov_batch) for one sequence: the fill by diagonals, then the traceback
// of warp 0 (every lane takes the same steps; lane 0 writes). out[0..n) gets the dot-bracket.
extern "C" int host_batch_fold(const unsigned char* codes, int n, int min_loop, unsigned char* out) {
    static unsigned char M[BATCH_MAX_LENGTH * BATCH_MAX_LENGTH];
    static short stack[2 * (BATCH_MAX_LENGTH + 2)];
    if (n > BATCH_MAX_LENGTH) return -2;
    for (int x = 0; x < n * n; ++x) M[x] = 0;
    for (int x = 0; x < n; ++x) out[x] = '.';
    for (int d = 1; d < n; ++d)
        for (int row = 0; row < n - d; ++row) batch_cell(M, codes, n, min_loop, row, d);
    if (batch_traceback(M, codes, n, min_loop, stack, out, 0)) return -1;
    return batch_c(M, n, 0, n - 1);
}
