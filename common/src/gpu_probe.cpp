// course_gpu_probe: says whether this machine has a CUDA device the course can use.
// Prints "GPU 0: <name> (compute capability X.Y, N SMs)" and "GPUs visible: N" (lessons
// 16-17 need two) and exits 0, or prints why not and exits 77 (the "cannot run here" code
// every course executable uses).
#include <iostream>

#include "course/device.h"
#include "course/multi_gpu.h"

int main() {
  try {
    std::cout << course::open_device(0).describe() << "\n";
    std::cout << "GPUs visible: " << course::visible_device_count() << "\n";
    return 0;
  } catch (const std::exception& e) {  // course::NoDevice, or a driver error
    std::cout << e.what() << "\n";
    return 77;
  }
}
