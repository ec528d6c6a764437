/// \file warp_entanglement.cuh
/// \brief Lesson 08: warp entanglement of commit, wait and arrive-on.
///
/// The API the driver (main.cu) and the tests call. The model of the warp-shared batch
/// sequence is in model.h / model.cpp; its two rules and the kernel live in
/// warp_entanglement.cu (the student's file: the starter in lessons/, the complete version in
/// solutions/); what the kernel measures in evidence.cuh; the launchers and the driver's
/// report in warp_entanglement_launch.cu (read-only).
///
/// The kernel is a copy-and-compute pipeline (lesson 06's primitives, 3 buffers) whose
/// commits and arrive-ons run converged or from a data-dependent branch, instrumented to
/// measure what the GPU really does next to what the model predicts.
#pragma once

#include <cuda_runtime.h>
#include <cuda/std/span>

#include <array>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "course/batches.cuh"
#include "course/launch.h"
#include "model.h"

namespace warp_entanglement {

// ---- The schedule of the kernel -----------------------------------------------------------

/// Shared-memory buffers of a block. Each step k starts batch k + 1, waits for batch k and
/// computes it: batch k + 1 lands while batch k is computed. With 3 buffers the one that
/// batch k + 1 refills held batch k - 2, which every thread finished before the previous
/// step's block barrier, so one barrier per batch is enough.
inline constexpr int kStages = 3;
/// 16-byte vectors each thread copies per batch (256 threads: 16 KB batches, as in lesson 06).
inline constexpr int kVectorsPerThread = 4;
/// Each warp arrives on its counting barrier in at most this many rounds: the barrier's
/// expected count, 32 x rounds + 1, must stay below an mbarrier's limit of 2^20 - 1.
inline constexpr int kMaxCountedRounds = 4096;
static_assert(kStages >= kBatchesAhead + 2,
              "the buffer batch k + kBatchesAhead refills must have held a batch that every "
              "thread finished before the previous step's barrier: one barrier per batch needs "
              "kBatchesAhead + 2 buffers, or a refill overwrites a batch still being read");
static_assert(course::batches::valid_vectors_per_thread(kVectorsPerThread),
              "1, 2, 4 or 8 vectors per thread: a batch of whole 32-element groups");
static_assert(kAllowedPending <= kWaitPriorClamp,
              "__pipeline_wait_prior clamps its argument at 8: a larger one waits for less");
static_assert(static_cast<long long>(kWarpSize) * kMaxCountedRounds + 1 < (1 << 20) - 1,
              "a warp's counting barrier expects 32 x rounds + 1 arrivals, which must stay "
              "below an mbarrier's limit of 2^20 - 1, or its init is undefined");

/// Grid and block size of a launch.
struct LaunchShape {
  int blocks = 0;
  int threads_per_block = 0;
};

/// Elements of one batch: threads x kVectorsPerThread vectors x 4 uint32 (a multiple of 128,
/// so a batch holds whole 32-element groups).
__host__ __device__ constexpr std::size_t batch_elements(int threads_per_block) {
  return course::batches::batch_elements(threads_per_block, kVectorsPerThread);
}

/// Dynamic shared memory of one block: kStages batches of uint32 (256 threads: 48 KB).
__host__ __device__ constexpr std::size_t shared_bytes(int threads_per_block) {
  return kStages * batch_elements(threads_per_block) * sizeof(std::uint32_t);
}
static_assert(shared_bytes(512) <= 163 * 1024,
              "kStages batches of a 512-thread block must fit the 163 KB a block may opt in to "
              "on sm_80 (the launcher checks larger blocks against the device)");

// The block's batches, and the zero-filled tail (course/batches.cuh), under the names the
// tests use.
using course::batches::batch_count;
using course::batches::batches_of_block;
using course::batches::zero_fill_bytes;

/// Commit (and arrive-on) rounds of a block that owns `mine` batches: the prologue starts
/// kBatchesAhead batches, then every step starts one more, each with one commit, empty or not.
/// (The rounds past the block's last batch commit empty batches.)
__host__ __device__ constexpr std::size_t commit_rounds(std::size_t mine) {
  return mine + kBatchesAhead;
}

// ---- What the GPU measured -----------------------------------------------------------------

/// Counters one instrumented launch adds up (all threads, all batches), per lane.
struct LaneEvidence {
  unsigned long long wait_cycles = 0;    ///< clock64() cycles spent in wait_prior
  unsigned long long waits = 0;          ///< wait_prior calls measured (one per owned batch)
  unsigned long long own_checked = 0;    ///< waits after which the thread's own batch k was read
  unsigned long long own_landed = 0;     ///< ... and had landed (must equal own_checked)
  unsigned long long newer_checked = 0;  ///< waits after which its own batch k + 1 was read
  unsigned long long newer_landed = 0;   ///< ... and had already landed, though allowed pending
};

/// Everything one instrumented launch measured.
struct Evidence {
  LaneEvidence lanes[kWarpSize] = {};  // a plain array: kernels index it too
  unsigned long long warps = 0;
  unsigned long long commit_rounds = 0;      ///< (warp, round) pairs that committed
  unsigned long long commit_executions = 0;  ///< executions of the commit instruction
  unsigned long long arrive_rounds = 0;      ///< (warp, round) pairs that arrived on
  unsigned long long arrive_executions = 0;  ///< executions of the arrive-on instruction
  unsigned long long arrivals_expected = 0;  ///< 32 per arrive round: one per thread
  unsigned long long arrivals_measured = 0;  ///< arrivals the counting barriers received
};

/// The evidence as rates.
struct Summary {
  double commit_executions_per_round = 0;
  double arrive_executions_per_round = 0;
  double arrivals_per_round = 0;
  double mean_wait_cycles = 0;
  /// Of the waits where batch k + 1 was checked, the fraction after which it had landed.
  double newer_landed_fraction = 0;
  std::array<double, kWarpSize> lane_newer_landed_fraction{};
  /// Every wait returned after the thread's own batch had landed (the cp.async contract).
  bool own_batches_landed = false;
};
Summary summarise(const Evidence& evidence);

/// A lane-by-lane picture of fractions: one digit per lane, floor(10 x fraction) capped at 9.
std::string lane_digits(const std::array<double, kWarpSize>& fractions);

/// Whether a variant over-waited: its newer-batch-landed fraction is at least 0.25 above that
/// of its control (the same copies with a converged commit) measured in the same run.
bool over_waiting_observed(double newer_landed_fraction, double control_fraction);

// ---- Launching -----------------------------------------------------------------------------

/// Prepares the copy-and-compute workload (course/workload.h):
/// out[i] = combine(in[i], in[partner_index(i, n)]) for every i, with the primitives and a
/// schedule of 3 buffers (batch k + 1 started before the wait for batch k), committing and
/// arriving on as `mode` says, branching on `paths`. The returned launch only enqueues the
/// kernel on the stream it is given (nothing for an empty input).
/// The result does not depend on `mode` or `paths`: only the waiting does.
///
/// Preconditions, checked here before any CUDA call (std::invalid_argument otherwise):
/// `in` and `out` have the same size; 32 <= threads_per_block <= 1024 and a multiple of 32;
/// blocks >= 1; both pointers 16-byte aligned; a known `mode`; valid(paths).
course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, CommitMode mode,
                                        const LanePaths& paths, LaunchShape shape);

/// prepare_copy_and_compute() and the launch on `stream`.
void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      CommitMode mode, const LanePaths& paths, LaunchShape shape,
                      cudaStream_t stream);

/// The same launch, instrumented: clock64() around every wait, a look at the thread's own
/// batches k and k + 1 after it, the convergence of every commit and arrive-on
/// (`__activemask()`), and per-warp mbarriers that count the arrive-on arrivals. Synchronises
/// `stream` and returns what was measured (all zero for an empty input).
Evidence copy_and_compute_with_evidence(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, CommitMode mode,
                                        const LanePaths& paths, LaunchShape shape,
                                        cudaStream_t stream);

/// The most blocks of `threads_per_block` threads one SM holds at once for the `mode` kernel
/// (cudaOccupancyMaxActiveBlocksPerMultiprocessor after opting in to its shared memory).
int max_blocks_per_sm(CommitMode mode, int threads_per_block);

// ---- The driver's entanglement report ------------------------------------------------------

/// One variant of the driver.
struct VariantSpec {
  const char* name;
  CommitMode mode;
  int paths;            ///< 1, 4 or 32: lane l takes path l % paths
  const char* control;  ///< the variant with the same copies and a converged commit ("": none)
  const char* what;
};

/// The driver's variants, `converged` (the baseline) first. Each diverged variant has a
/// control that issues its copies from the same branch but commits after a __syncwarp().
const std::vector<VariantSpec>& variants();
/// The variant named `name` and, when it has one, its control and the converged baseline:
/// what `--variant name` runs in the entanglement report. Empty for an unknown name.
std::vector<std::string> with_controls(const std::string& name);
/// fully_diverged() for 32 paths, split_paths(paths) otherwise.
LanePaths lane_paths(int paths);

/// One row of the entanglement report: the model's prediction beside one instrumented launch.
struct EntanglementRow {
  VariantSpec spec;
  model::Prediction model;
  Summary measured;
  float kernel_ms = 0;            ///< the instrumented launch, timed with CUDA events
  bool control_measured = false;  ///< the control ran in the same report
  bool over_waiting = false;      ///< over_waiting_observed() against the control
  std::string failure;            ///< what went wrong ("" when values and invariants hold)
};

/// Runs `spec` once, instrumented, on `shape` into a poisoned `out`, compares every element
/// with `expected`, and checks what holds whatever the hardware entangles: every wait returned
/// after the thread's own batch had landed, and the arrive-ons delivered at least one arrival
/// per execution and at most one per thread.
EntanglementRow measure_entanglement(cuda::std::span<const std::uint32_t> in,
                                     cuda::std::span<std::uint32_t> out,
                                     const std::vector<std::uint32_t>& expected,
                                     const VariantSpec& spec, LaunchShape shape,
                                     cudaStream_t stream);
/// Sets control_measured and over_waiting of every row whose control is among `rows`.
void compare_with_controls(std::vector<EntanglementRow>& rows);
/// The report: the table of model against measurement, its legend, and the lanes' pictures.
void print_entanglement(const std::vector<EntanglementRow>& rows, const std::string& gpu,
                        std::ostream& out);
/// The row's columns for the harness's sweep CSV (course::SweepParams).
std::vector<std::pair<std::string, std::string>> entanglement_columns(const EntanglementRow& row);

// ---- Defined in warp_entanglement.cu (your file) -------------------------------------------
// Declared here for warp_entanglement_launch.cu, so that it compiles on its own
// (tools/compile_alone.py checks that it does); the build compiles your file and
// warp_entanglement_launch.cu as one unit, where the definitions are.

/// The copy-and-compute kernel whose warps take `lane_paths` through their copies, committing
/// as `Mode` says. `evidence` is a device pointer, or null for the uninstrumented kernel.
template <CommitMode Mode>
__global__ void entanglement_kernel(const std::uint32_t* __restrict__ in,
                                    std::uint32_t* __restrict__ out, std::size_t n,
                                    LanePaths lane_paths, int paths, Evidence* evidence);

}  // namespace warp_entanglement
