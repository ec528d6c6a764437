/// \file ptx_cp_async.cuh
/// \brief Lesson 09: cp.async written in inline PTX, without CCCL or the primitives.
///
/// The API the driver (main.cu), the tests and lesson 10 call. The kernels and the PTX
/// wrappers live in ptx_cp_async.cu (the student's file: the starter in lessons/, the
/// complete version in solutions/); the launchers in ptx_cp_async_launch.cu (read-only).
///
/// Three workloads:
///  - the copy-and-compute workload of lessons 01-08 (course/workload.h), as lesson 06's
///    multi-stage kernel, built on the student's own wrappers: cp.async .ca or .cg with a
///    cp-size of 4, 8 or 16 bytes, an optional L2 prefetch size, and completion through
///    cp.async groups (commit_group / wait_group N) or through an mbarrier
///    (cp.async.mbarrier.arrive, with or without .noinc);
///  - the tail workload: many short rows of an awkward length, each ending in a partial
///    16-byte chunk, copied with an `if` around every copy or branch-free with src-size;
///  - the cache workload: a reused lookup table beside a streamed input larger than L2,
///    copied plainly or with L2 cache policies (createpolicy + .L2::cache_hint).
#pragma once

#include <cuda_runtime.h>
#include <cuda/std/span>

#include <cstddef>
#include <cstdint>

#include "course/batches.cuh"
#include "course/launch.h"
#include "course/mbarrier.cuh"
#include "register_staged.cuh"

namespace ptx_cp_async {

/// Grid and block size of a launch (lesson 01's type).
using register_staged::LaunchShape;

// ---- The multi-stage copy-and-compute kernel ---------------------------------------------

/// How the multi-stage kernel copies and how it learns that a batch has landed. Each form
/// is one kernel family; the name in quotes is the variant's name in the driver's table.
enum class Form {
  ca4,          ///< "ca4": cp.async.ca, 4-byte copies (through L1), groups
  ca8,          ///< "ca8": cp.async.ca, 8-byte copies, groups
  ca16,         ///< "ca16": cp.async.ca, 16-byte copies (through L1), groups
  cg16,         ///< "cg16": cp.async.cg, 16-byte copies (L1 bypassed), groups
  cg16_l2_64,   ///< "cg16-L2-64B": cg16 with the .L2::64B prefetch size
  cg16_l2_128,  ///< "cg16-L2-128B": cg16 with .L2::128B
  cg16_l2_256,  ///< "cg16-L2-256B": cg16 with .L2::256B
  /// "cg16-mbarrier-noinc": cg16, completion through one mbarrier per stage instead of
  /// groups; the copies' completion is each thread's arrival (the .noinc form).
  cg16_mbarrier_noinc,
  /// "cg16-mbarrier": the same without .noinc, where the copies' completion is not an
  /// arrival of its own (what CCCL's cuda::pipeline does).
  cg16_mbarrier,
};

/// Every form, in the driver's order.
inline constexpr Form kForms[] = {
    Form::ca4,          Form::ca8,         Form::ca16,        Form::cg16,
    Form::cg16_l2_64,   Form::cg16_l2_128, Form::cg16_l2_256, Form::cg16_mbarrier_noinc,
    Form::cg16_mbarrier};

/// The variant name of a form ("ca4", "cg16", "cg16-L2-128B", "cg16-mbarrier-noinc", ...).
inline const char* name(Form form) {
  switch (form) {
    case Form::ca4:
      return "ca4";
    case Form::ca8:
      return "ca8";
    case Form::ca16:
      return "ca16";
    case Form::cg16:
      return "cg16";
    case Form::cg16_l2_64:
      return "cg16-L2-64B";
    case Form::cg16_l2_128:
      return "cg16-L2-128B";
    case Form::cg16_l2_256:
      return "cg16-L2-256B";
    case Form::cg16_mbarrier_noinc:
      return "cg16-mbarrier-noinc";
    case Form::cg16_mbarrier:
      return "cg16-mbarrier";
  }
  return "?";
}

/// The cp-size of a form's copies in bytes: 4, 8 or 16.
__host__ __device__ constexpr int copy_bytes(Form form) {
  return form == Form::ca4 ? 4 : form == Form::ca8 ? 8 : 16;
}

/// Whether a form completes its batches through mbarriers instead of cp.async groups.
__host__ __device__ constexpr bool uses_mbarrier(Form form) {
  return form == Form::cg16_mbarrier_noinc || form == Form::cg16_mbarrier;
}

/// Stage counts the kernels are compiled for (each its own kernel: the group wait's count is a
/// compile-time constant).
inline constexpr int kMinStages = 2;
inline constexpr int kMaxStages = 8;

/// What one launch of the multi-stage kernel does. Default-constructed: the driver's headline
/// variant (16-byte cp.async.cg, groups, 4 stages of 16 KB batches).
struct Config {
  Form form = Form::cg16;
  int stages = 4;
  /// Batch granularity in 16-byte vectors per thread: 1, 2, 4 or 8 (4 with 256 threads:
  /// 16 KB batches, lesson 06's default).
  int vectors_per_thread = 4;
};

/// The variant name of a config: name(config.form).
inline const char* name(const Config& config) { return name(config.form); }

/// Whether `vectors_per_thread` is one the launcher accepts: 1, 2, 4 or 8.
using course::batches::valid_vectors_per_thread;

/// Batches, as in lessons 01-08 (course/batches.cuh).
using course::batches::batch_count;
using course::batches::batch_elements;
using course::batches::batches_of_block;

/// Dynamic shared memory of one block of the multi-stage kernel: `stages` batches.
__host__ __device__ constexpr std::size_t shared_bytes(const Config& config,
                                                       int threads_per_block) {
  return static_cast<std::size_t>(config.stages) *
         batch_elements(threads_per_block, config.vectors_per_thread) * sizeof(std::uint32_t);
}

/// How many of this thread's groups may still be pending when it waits for batch k, in a
/// schedule that starts `ahead` batches before its loop and one more after each wait (one
/// group per batch, empty ones included): the groups of the batches after k.
__host__ __device__ constexpr int groups_allowed_pending(int ahead) { return ahead - 1; }

/// The parity of the mbarrier phase that batch k completes, with one mbarrier per stage:
/// stage k % stages is used by batches k % stages, + stages, + 2 stages, ..., one phase
/// each, and phases alternate parity 0, 1, 0, ...
__host__ __device__ constexpr unsigned batch_parity(std::size_t k, int stages) {
  return course::mbarrier::phase_parity(k / static_cast<std::size_t>(stages));
}

/// Tests only: every warp of a block but one waits before it starts a batch's copies and
/// before it reads a batch (course::batches::hold_back), so that a wait that covers only its
/// own warp (TODO 7) shows in the values. 0, the default, holds nobody back.
using course::batches::HoldBack;

/// Validates the arguments, sets the kernel's shared-memory attribute and picks the kernel,
/// then returns the launch: calling it with a stream runs the copy-and-compute workload
/// (course/workload.h), out[i] = combine(in[i], in[partner_index(i, n)]) for every i.
///
/// Preconditions, checked before any CUDA call (std::invalid_argument otherwise): `in` and
/// `out` have the same size; 32 <= threads_per_block <= 1024, a multiple of 32; blocks >= 1;
/// kMinStages <= stages <= kMaxStages; vectors_per_thread 1, 2, 4 or 8; a known form; both
/// pointers 16-byte aligned. The shared memory must fit the device (course::CudaError
/// otherwise). For an empty input the launch does nothing.
course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, const Config& config,
                                        LaunchShape shape, HoldBack hold = {});

/// prepare_copy_and_compute(in, out, config, shape), launched at once on `stream`.
void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      const Config& config, LaunchShape shape, cudaStream_t stream);

/// The number of the mbarrier forms' waits that gave up (after 2 s each: course/mbarrier.cuh)
/// since the last call, and resets it to 0 (synchronises the device first). A kernel whose
/// wait gave up still finishes, with wrong values; this says why they are wrong.
unsigned long long take_wait_timeouts();

/// The most blocks of `threads_per_block` threads one SM holds at once for this config's
/// kernel, given its shared memory; 0 when one block does not fit. Throws
/// std::invalid_argument for a config copy_and_compute rejects.
int max_blocks_per_sm(const Config& config, int threads_per_block);

// ---- The tail workload: rows of an awkward length ----------------------------------------

/// How the tail kernel copies the chunk a row ends in (and the rows past the last one).
enum class TailCopy {
  /// "tail-if": what one usually writes first: a 16-byte copy for a whole chunk, and for
  /// the partial one an `if` per word (a 4-byte copy inside the row, a zero store past it).
  if_wrapped,
  /// "tail-src-size": every chunk is one 16-byte copy; src-size says how many bytes are
  /// real (0 for a row past the last) and the copy zero-fills the rest.
  src_size,
};

/// "tail-if" or "tail-src-size".
inline const char* name(TailCopy copy) {
  return copy == TailCopy::if_wrapped ? "tail-if" : "tail-src-size";
}

/// A matrix of `rows` rows of `length` valid uint32 each, stored with a pitch of
/// `pitch(length)` elements so that every row starts 16-byte aligned. The padding words
/// of the input hold garbage: a copy must not bring it into shared memory.
struct Rows {
  std::size_t rows = 0;
  std::size_t length = 0;
};

/// The row pitch in elements: `length` rounded up to a whole 16-byte chunk (4 elements).
__host__ __device__ constexpr std::size_t pitch(std::size_t length) { return (length + 3) / 4 * 4; }

/// Bytes of a chunk the copy must take from global memory: of the 16 bytes of the chunk
/// that starts at element `column` of a row of `length` valid elements, those inside the
/// row (16 for a whole chunk, 4, 8 or 12 for the last, partial one).
__host__ __device__ constexpr unsigned valid_chunk_bytes(std::size_t column, std::size_t length) {
  return column >= length       ? 0u
         : length - column >= 4 ? 16u
                                : static_cast<unsigned>((length - column) * sizeof(std::uint32_t));
}

/// Threads per block and 16-byte chunks per thread of the tail kernel: each block stages
/// a tile of kTailThreads x kTailChunksPerThread chunks (16 KB), holding as many whole rows
/// as fit (rows_per_tile()).
inline constexpr int kTailThreads = 256;
inline constexpr int kTailChunksPerThread = 4;
static_assert(kTailThreads * kTailChunksPerThread * 16 <= 48 * 1024,
              "the tail tile is static shared memory, which stops at 48 KB");

/// Whole rows of a tile: 16 KB / the pitch in bytes (at least 1; the launcher rejects rows
/// longer than a tile).
__host__ __device__ constexpr std::size_t rows_per_tile(std::size_t length) {
  return static_cast<std::size_t>(kTailThreads) * kTailChunksPerThread * 4 / pitch(length);
}

/// The tail workload's reference, also its definition: out has the input's shape, and for
/// every row r and column i < pitch, out[r][i] = combine(x[i], x[pitch - 1 - i]) where x
/// is row r with its padding read as zero (course::workload::combine). The padding columns
/// of out are outputs too: they come out right only if the padding was zero-filled.
void tail_reference(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                    Rows shape);

/// Prepares the tail kernel on `in` and `out`, both rows x pitch(length) elements.
/// Preconditions (std::invalid_argument): both spans hold exactly rows x pitch elements,
/// 16-byte aligned; 1 <= length <= kTailThreads x kTailChunksPerThread x 4.
course::Launch prepare_tail(cuda::std::span<const std::uint32_t> in,
                            cuda::std::span<std::uint32_t> out, Rows shape, TailCopy copy);

// ---- The cache workload: a reused table beside a streamed input --------------------------

/// How the cache kernel's copies treat L2.
enum class CachePolicy {
  /// "cache-plain": cp.async.cg with no hint; the stream competes with the table for L2.
  plain,
  /// "cache-hint": the stream's copies carry an L2::evict_first policy and the table's an
  /// L2::evict_last one (createpolicy.fractional + .L2::cache_hint): the table should stay.
  hinted,
};

/// "cache-plain" or "cache-hint".
inline const char* name(CachePolicy policy) {
  return policy == CachePolicy::plain ? "cache-plain" : "cache-hint";
}

/// Elements of one block's batch in the cache kernel (256 threads x 4 vectors: 16 KB).
inline constexpr int kCacheThreads = 256;
inline constexpr std::size_t kCacheBatch = batch_elements(kCacheThreads, 4);
static_assert(kCacheBatch % 4 == 0 && 2 * kCacheBatch * sizeof(std::uint32_t) <= 48 * 1024,
              "the cache kernel stages a batch of the stream and one of the table as uint4s in "
              "static shared memory, which stops at 48 KB");

/// The cache workload's reference, also its definition: for every i,
/// out[i] = combine(stream[i], table[i % table.size()]).
void cache_reference(cuda::std::span<const std::uint32_t> stream,
                     cuda::std::span<const std::uint32_t> table,
                     cuda::std::span<std::uint32_t> out);

/// Prepares the cache kernel. Preconditions (std::invalid_argument): out has stream's
/// size, a multiple of kCacheBatch; table's size a non-zero multiple of kCacheBatch; all
/// three 16-byte aligned.
course::Launch prepare_cache(cuda::std::span<const std::uint32_t> stream,
                             cuda::std::span<const std::uint32_t> table,
                             cuda::std::span<std::uint32_t> out, CachePolicy policy);

// ---- Tests only: one copy, seen from shared memory ---------------------------------------

/// Which wrapper probe_copy() calls.
enum class ProbeForm {
  ca4,
  ca8,
  ca16,
  cg16,  ///< the plain copy (src-size ignored)
  ca4_src_size,
  ca8_src_size,
  ca16_src_size,
  cg16_src_size,  ///< with src-size = `operand`
  ca4_ignore,
  ca8_ignore,
  ca16_ignore,
  cg16_ignore,  ///< with ignore-src = (operand != 0)
};

/// One thread fills 16 bytes of shared memory with 0xA5, then copies from `src` (device
/// memory, 16 valid bytes, 16-byte aligned) with `form` and `operand`, waits for it, and
/// writes those 16 bytes of shared memory to `dst` (device memory, 16 bytes). So dst shows
/// what the copy wrote: the copied bytes, the zero fill, and the untouched 0xA5 beyond the
/// cp-size. Preconditions (std::invalid_argument): operand <= the cp-size for the
/// src-size forms.
void probe_copy(const std::uint8_t* src, std::uint8_t* dst, ProbeForm form, unsigned operand,
                cudaStream_t stream);

}  // namespace ptx_cp_async
