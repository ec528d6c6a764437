// course_gpu_probe: says whether this machine has a CUDA device the course can use.
// Prints "GPU 0: <name> (compute capability X.Y, N SMs)" and exits 0, or prints why
// not and exits 77 (the "cannot run here" code every course executable uses).
#include <iostream>

#include "course/device.h"

int main() {
  try {
    std::cout << course::open_device(0).describe() << "\n";
    return 0;
  } catch (const course::NoDevice& e) {
    std::cout << "no GPU: " << e.what() << "\n";
    return 77;
  } catch (const std::exception& e) {
    std::cout << "no GPU: " << e.what() << "\n";
    return 77;
  }
}
