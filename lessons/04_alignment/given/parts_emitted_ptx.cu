// Lesson 04, a part of the driver (read-only; alignment_parts.h says what it does): what each
// memcpy_async compiled to, read from this executable's own PTX.
#include <cstdlib>
#include <exception>
#include <iostream>

#include "alignment_parts.h"
#include "course/inspect.h"

namespace alignment::parts {

Emitted read_emitted(const course::DeviceSummary& gpu) {
  Emitted emitted;
  try {
    const auto modules = course::inspect::read_ptx_modules("/proc/self/exe");
    const auto number = [](const std::string& target) { return std::atoi(target.c_str() + 3); };
    std::string target = "sm_" + std::to_string(gpu.cc.major * 10 + gpu.cc.minor);
    bool found = false;
    std::string highest;
    for (const auto& m : modules) {
      found = found || m.target == target;
      if (highest.empty() || number(m.target) > number(highest)) highest = m.target;
    }
    emitted.target = found ? target : highest;
    for (const MethodInfo& info : kMethods) {
      for (const auto& module : modules) {
        if (module.target != emitted.target) continue;
        for (const auto& kernel : course::inspect::ptx_kernels(module)) {
          if (kernel.name.find(info.kernel_name) != std::string::npos) {
            emitted.by_method[info.method] = describe_global_reads(kernel.body);
          }
        }
      }
    }
  } catch (const std::exception& e) {
    std::cout << "(cannot read the PTX of this executable: " << e.what() << ")\n";
  }
  return emitted;
}

}  // namespace alignment::parts
