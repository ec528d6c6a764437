// Lesson 15's driver, the sweep over square sizes (capstone_driver.h): at every size of the
// plan, cuBLAS and each rung this GPU runs, each size its own problem, in the sweep "square"
// (FILE_sweep.csv with --csv). Its x cuBLAS column divides by the main table's cuBLAS:
// compare a rung with the cuBLAS row of its own size. Read-only.
#include <cstdint>
#include <string>
#include <vector>

#include "capstone_driver.h"

namespace capstone::driver {

void run_square_sweep(course::Harness& harness, const Plan& plan, const std::vector<Rung>& rungs) {
  for (int s : plan.sweep_sizes) {
    Problem p({s, s, s}, 150 + static_cast<std::uint32_t>(s), harness.stream());
    const course::SweepParams params{{"size", std::to_string(s)}};
    course::DeviceBuffer<float> out(p.c.size());
    const std::string at = ", " + std::to_string(s);  // the size in every row's name
    harness.sweep("square", params,
                  course::Variant{kReference + at,
                                  flops(p.shape),
                                  prepare_cublas_sgemm(p.shape, kAlpha, p.a.data(), p.b.data(),
                                                       kBeta, out.data()),
                                  {},
                                  {}});
    for (Rung r : rungs) {
      harness.sweep("square", params, p.variant(name(r) + at, p.rung(r, plan.stages)));
    }
  }
}

}  // namespace capstone::driver
