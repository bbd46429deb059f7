// Host (CPU) build of the index helpers of nussinov.cu for tests without a GPU:
// g++ -x c++ -O2 -shared -fPIC. The kernels themselves are left out (NUSSINOV_HOST_TEST).
#define NUSSINOV_HOST_TEST 1

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
