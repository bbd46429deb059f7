// Host (CPU) build of energy.cu for tests without a GPU: g++ -x c++ -O2 -shared -fPIC with the
// table layout as -D options (gamut.scan.energy_gpu.build_host_library). fold_one runs as one
// lane of a warp, so the device code path itself is checked against the Numba engine.
#include <algorithm>
#include <vector>

#define ENERGY_HOST 1
using std::max;
using std::min;

#include "energy.cu"

extern "C" long long host_energy_work_ints(int m) { return energy_work_ints(m); }

// Energies of `count` strings raw[offsets[x]:offsets[x + 1]], each at most maxm - 2 letters.
extern "C" void host_energy_fold(const int* small, const int* big, const unsigned char* raw,
                                 const long long* offsets, int count, int maxm, int* out) {
    std::vector<int> work(energy_work_ints(maxm));
    const Tab t{small, big};
    for (int x = 0; x < count; ++x)
        out[x] = fold_one(t, raw + offsets[x], (int)(offsets[x + 1] - offsets[x]), work.data(), 0);
}
