// A program that uses the image readers and the distributed package: linked through the
// package's components (wick::images, wick::distributed / wick-images.pc,
// wick-distributed.pc), which bring libpng, libjpeg and Gloo to a static libwick's link.
#include <wick/wick.h>

#include <iostream>

int main() {
  // One rank of Gloo over an in-process store: an all-reduce that must leave the sum.
  wick::distributed::InProcessStore store;
  wick::distributed::GlooCommunicator comm(store, 0, 1);
  wick::Tensor t = wick::ones({3});
  comm.all_reduce({t}, wick::ReduceOp::Sum)->wait();
  // The PNG reader's code is linked (a missing file is its error, not the linker's).
  try {
    wick::read_image("/nonexistent/wick-consumer.png");
    return 1;
  } catch (const wick::Error& e) {
    std::cout << "read_image: " << e.what() << "\n";
  }
  std::cout << "gloo all_reduce over 1 rank: " << t.sum().item<float>() << "\n";
  return t.sum().item<float>() == 3 ? 0 : 1;
}
