/// \file tma_bulk_copy.cuh
/// \brief Lesson 10: Hopper bulk copies (TMA) with mbarrier transaction counts.
///
/// The API the driver (main.cu), the tests and lesson 11 call. The kernels live in
/// tma_bulk_copy.cu (the student's file: the starter in lessons/, the complete version in
/// solutions/); the launchers in tma_bulk_copy_launch.cu (read-only).
///
/// On sm_90 one thread can move a whole batch between global and shared memory with one
/// instruction: `cp.async.bulk`, executed by the tensor memory accelerator (TMA), outside
/// the SM's load/store path. A load signals its completion to an mbarrier by *bytes*
/// (complete_tx); the waiting threads were told how many bytes to expect (expect_tx). A
/// store (shared -> global) is tracked by bulk groups (commit_group / wait_group.read).
/// The kernels:
///  - `single_ptx`: one buffer, written with cuda::ptx (one call per PTX instruction); the
///    outputs are computed into a second shared buffer and leave with a bulk store, once the
///    threads' writes are visible to the TMA (the async proxy);
///  - `single_barrier`: the same with a `cuda::barrier` and libcu++'s transaction-count
///    operations;
///  - `pipeline`: `stages` buffers, a "full" and an "empty" mbarrier per buffer and one
///    producer warp (one elected lane issues the copies) beside the consumer threads.
///
/// Every wait in these kernels is bounded (course/mbarrier.cuh: 2 s): a wait that never completes
/// (a wrong byte count, a lost arrival) records an error and leaves the kernel instead of
/// hanging the GPU; take_wait_errors() reports it on the host.
///
/// Everything here needs compute capability 9.0. The code is built for sm_80 too (the
/// Hopper instructions sit behind a target check); there the kernels only record
/// kNotSm90, and the driver and the tests refuse to run (exit 77 / skip).
#pragma once

#include <cuda_runtime.h>
#include <cuda/std/span>

#include <cstddef>
#include <cstdint>
#include <string>

#include "course/batches.cuh"
#include "course/launch.h"
#include "course/mbarrier.cuh"
#include "register_staged.cuh"

namespace tma_bulk_copy {

/// Grid and block size of a launch (lesson 01's type). For the `pipeline` variant,
/// `threads_per_block` counts the consumer threads; the kernel adds one producer warp
/// (block_threads()).
using register_staged::LaunchShape;

/// Which kernel runs the copy-and-compute workload.
enum class Variant {
  /// `stages` buffers with a full and an empty mbarrier each, one producer warp whose
  /// elected lane issues cp.async.bulk, consumers that compute and store straight to
  /// global memory. The fastest; the default.
  pipeline,
  /// One input buffer, one output buffer, cuda::ptx: bulk load counted in bytes on an
  /// mbarrier, outputs computed into shared memory, bulk store.
  single_ptx,
  /// single_ptx written with a cuda::barrier and libcu++'s transaction-count operations.
  single_barrier,
  /// DELIBERATELY BROKEN, never run by default: single_ptx announcing 16 bytes more than
  /// the copy delivers. The phase can never complete; the bounded wait reports
  /// kDataNeverArrived (after course::mbarrier::kWaitLimitNs) instead of hanging.
  broken_wrong_expect_tx,
  /// DELIBERATELY BROKEN, never run by default: single_ptx waiting for parity 0 every
  /// round. It does NOT hang: from the second round on, the wait asks about a phase that
  /// completed long ago and returns at once, so the threads read the buffer while the next
  /// batch is still landing (wrong outputs), and the next arrival may land on a phase that
  /// already had its one arrival (undefined). Caught by the value check or by the bound.
  broken_parity_not_flipped,
  /// DELIBERATELY BROKEN, never run by default: single_ptx without the fence.proxy.async
  /// between the threads' writes of the outputs to shared memory and the bulk store that
  /// reads them. Often right by luck: no test can make it fail on demand (README).
  broken_missing_proxy_fence,
};

/// "pipeline", "single-ptx", "single-barrier", "broken-wrong-expect-tx",
/// "broken-parity-not-flipped" or "broken-missing-proxy-fence".
inline const char* name(Variant variant) {
  switch (variant) {
    case Variant::pipeline:
      return "pipeline";
    case Variant::single_ptx:
      return "single-ptx";
    case Variant::single_barrier:
      return "single-barrier";
    case Variant::broken_wrong_expect_tx:
      return "broken-wrong-expect-tx";
    case Variant::broken_parity_not_flipped:
      return "broken-parity-not-flipped";
    case Variant::broken_missing_proxy_fence:
      return "broken-missing-proxy-fence";
  }
  return "?";
}

/// Whether a variant is one of the deliberately broken ones.
constexpr bool is_broken(Variant variant) {
  return variant == Variant::broken_wrong_expect_tx ||
         variant == Variant::broken_parity_not_flipped ||
         variant == Variant::broken_missing_proxy_fence;
}

/// Stage counts the pipeline kernel is compiled for (a template parameter).
inline constexpr int kMinStages = 2;
inline constexpr int kMaxStages = 8;

/// What one launch does. Default-constructed: the best TMA pipeline (4 stages of 16 KB
/// batches for 256 consumer threads).
struct Config {
  Variant variant = Variant::pipeline;
  /// Buffers of the pipeline variant, kMinStages..kMaxStages (the single variants ignore it).
  int stages = 4;
  /// Batch granularity, as in lessons 01-09: a batch is threads_per_block x vectors x 16 B.
  /// 1, 2, 4 or 8.
  int vectors_per_thread = 4;
};

/// Whether `vectors_per_thread` is one the launcher accepts: 1, 2, 4 or 8.
using course::batches::valid_vectors_per_thread;

/// Batches as in lessons 01-09 (course/batches.cuh): batch_elements(threads, vectors) is
/// threads x vectors x 4 uint32, batch_count(n, batch) counts them (the last may be
/// partial), batches_of_block(batches, block, grid) is how many a block owns.
using course::batches::batch_count;
using course::batches::batch_elements;
using course::batches::batches_of_block;

/// Threads of one launched block: the consumers plus, for the pipeline, one producer warp.
__host__ __device__ constexpr int block_threads(const Config& config, int threads_per_block) {
  return config.variant == Variant::pipeline ? threads_per_block + 32 : threads_per_block;
}

/// Dynamic shared memory of one block: `stages` batches for the pipeline, two batches (the
/// input and the output buffer) for the single variants. The mbarriers are static shared
/// memory.
__host__ __device__ constexpr std::size_t shared_bytes(const Config& config,
                                                       int threads_per_block) {
  const std::size_t buffers =
      config.variant == Variant::pipeline ? static_cast<std::size_t>(config.stages) : 2;
  return buffers * batch_elements(threads_per_block, config.vectors_per_thread) *
         sizeof(std::uint32_t);
}

static_assert(batch_elements(32, 1) * sizeof(std::uint32_t) % 16 == 0,
              "a batch is whole 16-byte vectors, so every buffer after the first (stage s at s x "
              "the batch) starts 16-byte aligned, as a bulk copy's destination must");

/// The bytes of a batch of `count` uint32 elements that one bulk copy moves: the largest
/// multiple of 16 (a bulk copy's size must be one). The 0-3 elements left over, only in the
/// input's last batch, are copied by the issuing thread with plain loads and stores.
__host__ __device__ constexpr std::uint32_t bulk_bytes(std::size_t count) {
  return static_cast<std::uint32_t>((count * sizeof(std::uint32_t)) / 16 * 16);
}

/// The mbarrier phase parity a waiter passes for its `round`-th use of one barrier
/// (round 0 is the first): the parity flips every time the barrier completes a phase
/// (course/mbarrier.cuh).
using course::mbarrier::phase_parity;

/// Bits of the error word the kernels set (take_wait_errors()).
enum WaitError : unsigned {
  kNoWaitError = 0,
  /// A consumer waited kWaitLimitNs (2 s) for a batch that never arrived (its full barrier's
  /// phase never completed: the expected byte count was never reached, or no arrival).
  kDataNeverArrived = 1u << 0,
  /// The producer waited kWaitLimitNs for a buffer the consumers never released.
  kBufferNeverFreed = 1u << 1,
  /// The kernel ran on a GPU below compute capability 9.0 and did nothing.
  kNotSm90 = 1u << 2,
};

/// Reads and clears the error word of this lesson's kernels (synchronises the device):
/// 0 when every wait since the last call completed.
unsigned take_wait_errors();

/// "no wait error" or the errors in words, e.g. "a batch never arrived (bounded wait timed
/// out after 2000 ms: was the expected byte count right?)".
std::string describe_wait_errors(unsigned errors);

/// Tests only: what a launch does to make a race of the kernel's own synchronisation show in
/// its values. The default, every field 0 or false, does nothing (a normal run pays one test
/// of a kernel argument). The single kernels and the plain bulk copy honour both; the
/// pipeline kernel ignores them.
struct TestHooks {
  /// Right after each wait_stores_read() (TODO 4; also the last one, before the block exits)
  /// the issuing thread overwrites the buffer the bulk stores read with poison, its last
  /// 16-byte chunk first (device::poison_store_source explains why). After a wait that let a
  /// store still read the buffer, that store reads the poison and the output shows it.
  bool poison_after_store_wait = false;
  /// Before the threads compute a batch into the output buffer, every warp but one waits this
  /// long (course::batches::hold_back): a bulk store issued before every warp has written its
  /// part of the buffer stores what was there before (TODO 5).
  course::batches::HoldBack hold_back;
};

/// Validates the arguments, sets the kernel's shared-memory attribute and picks the kernel
/// instantiation, then returns the launch: calling it with a stream runs the
/// copy-and-compute workload (course/workload.h) on that stream,
/// out[i] = combine(in[i], in[partner_index(i, n)]) for every i. Any n works: a batch's
/// whole 16-byte chunks travel by bulk copy, its last 0-3 elements by plain copies.
///
/// Preconditions, checked before any CUDA call (std::invalid_argument otherwise):
/// `in` and `out` have the same size; 32 <= threads_per_block <= 1024 - 32 and a multiple
/// of 32; blocks >= 1; kMinStages <= stages <= kMaxStages; vectors_per_thread is 1, 2, 4
/// or 8; both pointers are 16-byte aligned (a bulk copy needs 16-byte aligned addresses).
/// The device must have compute capability 9.0 (std::runtime_error otherwise). For an
/// empty input the launch does nothing.
course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, const Config& config,
                                        LaunchShape shape, TestHooks hooks = {});

/// prepare_copy_and_compute(in, out, config, shape), launched at once on `stream`.
void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      const Config& config, LaunchShape shape, cudaStream_t stream);

/// The most blocks of block_threads(config, threads_per_block) threads one SM holds at once
/// for this kernel, given its shared memory; 0 when one block does not fit. Throws
/// std::invalid_argument for a config copy_and_compute rejects.
int max_blocks_per_sm(const Config& config, int threads_per_block);

/// Which barrier flavour the plain bulk copy uses.
enum class Barrier {
  ptx,           ///< cuda::ptx mbarrier calls
  cuda_barrier,  ///< cuda::barrier with cuda::device::memcpy_async_tx
};

/// "ptx" or "cuda-barrier".
inline const char* name(Barrier barrier) {
  return barrier == Barrier::ptx ? "ptx" : "cuda-barrier";
}

/// A plain copy of `bytes` bytes from `src` to `dst` (device memory) through shared memory,
/// by the single kernels without their compute step: each block loads chunks of
/// threads_per_block x vectors_per_thread x 16 bytes with cp.async.bulk (completion on an
/// mbarrier of the chosen flavour) and writes them back with the bulk store. Both copies are
/// done by the async proxy, so no proxy fence is needed between them.
///
/// Preconditions, checked before any CUDA call (std::invalid_argument, with the reason):
/// `bytes` is a multiple of 16; `src` and `dst` are 16-byte aligned (a bulk copy moves whole
/// 16-byte chunks between 16-byte aligned addresses); 32 <= threads_per_block <= 1024, a
/// multiple of 32; blocks >= 1; vectors_per_thread is 1, 2, 4 or 8. The device must have
/// compute capability 9.0 (std::runtime_error). For 0 bytes the launch does nothing.
course::Launch prepare_bulk_copy(const void* src, void* dst, std::size_t bytes, Barrier barrier,
                                 LaunchShape shape, int vectors_per_thread = 4,
                                 TestHooks hooks = {});

}  // namespace tma_bulk_copy
