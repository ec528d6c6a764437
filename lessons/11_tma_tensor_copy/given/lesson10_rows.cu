// Lesson 10's rows in lesson 11's table (lesson10_rows.h): the bytes of the fp32 matrix read
// as uint32, through lesson 10's 1-D bulk copy (16 KB chunks, the padding copied too) and its
// default copy-and-compute pipeline.
#include "lesson10_rows.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "course/workload.h"
#include "register_staged.cuh"
#include "tma_bulk_copy.cuh"

namespace lesson10_rows {
namespace {

constexpr const char* kBulkCopy = "10-bulk-copy";
constexpr const char* kPipeline = "10-tma-pipeline";
constexpr int kThreads = 256;

}  // namespace

std::vector<std::string> names() { return {kBulkCopy, kPipeline}; }

Row prepare(const std::string& name, const float* in, float* out,
            const std::vector<float>& host_in, const course::DeviceSummary& gpu) {
  const bool bulk_copy = name == kBulkCopy;
  if (!bulk_copy && name != kPipeline) throw std::invalid_argument("no lesson 10 row " + name);
  const std::size_t elements = host_in.size();
  const cuda::std::span<const std::uint32_t> in32(reinterpret_cast<const std::uint32_t*>(in),
                                                  elements);
  const cuda::std::span<std::uint32_t> out32(reinterpret_cast<std::uint32_t*>(out), elements);
  std::vector<std::uint32_t> host32(elements);
  std::memcpy(host32.data(), host_in.data(), host32.size() * sizeof(std::uint32_t));
  std::vector<std::uint32_t> expected32 = host32;

  tma_bulk_copy::Config config{};
  if (bulk_copy) config.variant = tma_bulk_copy::Variant::single_ptx;
  const int resident = std::max(tma_bulk_copy::max_blocks_per_sm(config, kThreads), 1);
  const register_staged::LaunchShape launch_shape{gpu.sm_count * resident, kThreads};
  Row row;
  if (bulk_copy) {
    row.run = tma_bulk_copy::prepare_bulk_copy(in, out, in32.size_bytes(),
                                               tma_bulk_copy::Barrier::ptx, launch_shape);
    row.what = "lesson 10's 1-D bulk copy of the whole allocation";
  } else {
    row.run = tma_bulk_copy::prepare_copy_and_compute(in32, out32, config, launch_shape);
    course::workload::reference(host32, expected32);
    row.what = "lesson 10's default pipeline (copy and compute on the same bytes)";
  }
  row.bytes = 2.0 * static_cast<double>(in32.size_bytes());
  row.expected.resize(expected32.size());  // compared as bits, like every row
  std::memcpy(row.expected.data(), expected32.data(), expected32.size() * sizeof(float));
  row.what += ", " + std::to_string(launch_shape.blocks) + " blocks";
  return row;
}

void require_no_wait_errors(const std::string& name) {
  if (const unsigned e = tma_bulk_copy::take_wait_errors()) {
    throw std::runtime_error(name + ": " + tma_bulk_copy::describe_wait_errors(e));
  }
}

}  // namespace lesson10_rows
