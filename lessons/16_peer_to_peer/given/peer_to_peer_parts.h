/// \file peer_to_peer_parts.h
/// \brief Lesson 16: what main.cu shares with the parts that live beside it (read-only):
/// the two GPUs' buffers and the size sweep of the copy engine, part 3 of the output
/// (parts_copies.cu); the halo exchange around a ring of GPUs, part 4 (parts_halo.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/device.h"
#include "course/harness.h"
#include "course/launch.h"
#include "halo_model.h"

namespace peer_to_peer::parts {

/// The two GPUs' buffers: a source and a destination on each, as large as the sweep's largest
/// copy, the sources hash-filled from the host copies the checks compare with.
struct PeerBuffers {
  PeerBuffers(int gpu_a, int gpu_b, std::uint64_t table_bytes, std::uint64_t sweep_largest);

  /// The copy engine's copy of `n` bytes, b's source to a's destination: the reference.
  void engine_b_to_a(cudaStream_t st, std::uint64_t n) const;
  /// A row of the table that copies b -> a: a's destination poisoned, then checked.
  course::Variant into_a(const std::string& name, course::Launch run);
  /// A row of the table that copies a -> b: b's destination poisoned by b, then checked.
  course::Variant into_b(const std::string& name, course::Launch run);

  const int a, b;
  const std::uint64_t bytes;    ///< bytes per copy of the table
  const std::uint64_t largest;  ///< the sweep's largest copy
  const std::size_t words;
  course::DeviceBuffer<std::uint32_t> src_a, dst_a, src_b, dst_b;
  std::vector<std::uint32_t> expected_a, expected_b;
};

/// The first `bytes` bytes of `device_data` (device memory) against `expected`, word by word.
course::Comparison compare_prefix(const std::vector<std::uint32_t>& expected,
                                  const std::uint32_t* device_data, std::size_t bytes);

/// Poisons `bytes` bytes of `device`'s memory by that device itself, before a checked run.
void poison_on(int device, void* data, std::size_t bytes);

/// 3. The size sweep of the copy engine, b -> a, from 4 KiB up to p.largest (each size checked,
/// `warmup` untimed and `iters` timed copies each, recorded as sweep "size"), then the
/// overhead + bandwidth fit over the sizes up to 16 MiB.
void run_size_sweep(course::Harness& harness, PeerBuffers& p, int warmup, int iters);

/// 4. The halo ring `layout` over `devices` (layout.gpus of them, peer access enabled here):
/// two steps checked against the CPU, then the step timed overlapped, the exchange alone and
/// the compute alone (host time of a step, median of `iters` samples after `warmup` steps),
/// recorded as rows with the target that the overlapped step costs little more than the
/// longer of the other two.
void run_halo_ring(course::Harness& harness, const std::vector<course::DeviceSummary>& devices,
                   const halo::RingLayout& layout, int warmup, int iters);

}  // namespace peer_to_peer::parts
