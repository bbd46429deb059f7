// Host (CPU) build of energy.cu for tests without a GPU, compiled with g++ by tests/host_build.py
// with the table layout as -D options (gamut.scanning.energy.gpu.table_buffers). fold_one runs as one
// lane of a warp, so the device code path itself is checked against the Numba engine.
#include <algorithm>
#include <vector>

#define ENERGY_HOST 1
using std::max;
using std::min;

#include "energy.cu"

extern "C" long long host_energy_work_bytes(int m, int cell_bytes) { return energy_work_bytes(m, cell_bytes); }

// Energies of `count` strings raw[offsets[x]:offsets[x + 1]], each at most maxm - 2 letters, with
// cells of cell_bytes (2: int16, ENERGY_OVERFLOW where they do not fit; 4: int32).
extern "C" void host_energy_fold(const int* small, const int* big, const unsigned char* raw,
                                 const long long* offsets, int count, int maxm, int cell_bytes, int* out) {
    std::vector<long long> work((energy_work_bytes(maxm, cell_bytes) + 7) / 8);
    const Tab t{small, big};
    for (int x = 0; x < count; ++x) {
        const int n = (int)(offsets[x + 1] - offsets[x]);
        out[x] = cell_bytes == 2 ? fold_one<short>(t, raw + offsets[x], n, work.data(), 0)
                                 : fold_one<int>(t, raw + offsets[x], n, work.data(), 0);
    }
}
