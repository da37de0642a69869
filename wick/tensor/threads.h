#pragma once
// How many threads the CPU kernels use, as torch.set_num_threads / torch.get_num_threads.

namespace wick {

// From now on the CPU kernels of every thread of the process use at most n threads (n >= 1;
// wick::Error otherwise). The default is OMP_NUM_THREADS, else the number of CPUs. Results
// do not depend on it: kernels that split a sum over threads split it into pieces of a
// fixed size and combine them in a fixed order.
void set_num_threads(int n);
int get_num_threads();

}  // namespace wick
