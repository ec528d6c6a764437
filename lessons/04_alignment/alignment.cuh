/// \file alignment.cuh
/// \brief Lesson 04: alignment and trivially copyable types.
///
/// The API the driver (main.cu) and the tests call. The kernel body and the functions it
/// calls live in alignment.cu (the student's file: the starter in lessons/, the complete
/// version in solutions/); the kernels, one per method, and the launchers in
/// alignment_launch.cu (read-only).
///
/// Every kernel of this lesson does the same simple job: it copies a byte array
/// global -> shared -> global in 16 KB batches (out[i] = in[i]). Only the line that issues
/// the global -> shared copy changes from kernel to kernel, so the table shows what that
/// one line costs: which instruction the compiler could use (4/8/16-byte `cp.async`, a
/// Hopper bulk copy, or a plain byte loop), which `cuda::async_contract_fulfillment` the
/// call returned, and how fast it ran.
#pragma once

#include <cuda_runtime.h>
#include <cuda/std/span>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "course/batches.cuh"
#include "course/launch.h"

namespace alignment {

/// Which library issues the staging copy.
enum class Api {
  cuda_barrier,        ///< `cuda::memcpy_async` completing on a block-scope `cuda::barrier`
  cooperative_groups,  ///< `cooperative_groups::memcpy_async`, completed by
                       ///< `cooperative_groups::wait`
  peeled,  ///< this lesson's copy for any address and size: byte head and tail, aligned body
};

/// One way of issuing the copy; each has its own kernel, so its PTX can be read on its own.
enum class Method {
  cuda_char_size_t,     ///< `char*` pointers, a plain `size_t` byte count
  cuda_short_size_t,    ///< `short*` (2-byte) pointers, `size_t`
  cuda_int_size_t,      ///< `int*` (4-byte) pointers, `size_t`
  cuda_int2_size_t,     ///< `int2*` (8-byte) pointers, `size_t`
  cuda_int4_size_t,     ///< `int4*` (16-byte) pointers, `size_t`
  cuda_char_aligned2,   ///< `char*` pointers, `cuda::aligned_size_t<2>`
  cuda_char_aligned4,   ///< `char*` pointers, `cuda::aligned_size_t<4>`
  cuda_char_aligned8,   ///< `char*` pointers, `cuda::aligned_size_t<8>`
  cuda_char_aligned16,  ///< `char*` pointers, `cuda::aligned_size_t<16>`
  cg_char_size_t,       ///< the same nine with `cooperative_groups::memcpy_async`
  cg_short_size_t,
  cg_int_size_t,
  cg_int2_size_t,
  cg_int4_size_t,
  cg_char_aligned2,
  cg_char_aligned4,
  cg_char_aligned8,
  cg_char_aligned16,
  peeled,  ///< any address, any size: the lesson's recommended copy
};

/// What a Method is, in one row.
struct MethodInfo {
  Method method;
  const char* name;         ///< short name for tables and test names, e.g. "cuda/char/aligned16"
  const char* kernel_name;  ///< the kernel's own name, part of its mangled name in PTX and SASS
  Api api;
  int element_bytes;       ///< size (and alignment) of the element type the pointers have
  int promised_alignment;  ///< N of `cuda::aligned_size_t<N>`, or 0 for a plain `size_t`
};

/// Every method, in the order of the Method enumeration.
inline constexpr MethodInfo kMethods[] = {
    {Method::cuda_char_size_t, "cuda/char/size_t", "stage_cuda_char_size_t", Api::cuda_barrier, 1,
     0},
    {Method::cuda_short_size_t, "cuda/short/size_t", "stage_cuda_short_size_t", Api::cuda_barrier,
     2, 0},
    {Method::cuda_int_size_t, "cuda/int/size_t", "stage_cuda_int_size_t", Api::cuda_barrier, 4, 0},
    {Method::cuda_int2_size_t, "cuda/int2/size_t", "stage_cuda_int2_size_t", Api::cuda_barrier, 8,
     0},
    {Method::cuda_int4_size_t, "cuda/int4/size_t", "stage_cuda_int4_size_t", Api::cuda_barrier, 16,
     0},
    {Method::cuda_char_aligned2, "cuda/char/aligned2", "stage_cuda_char_aligned2",
     Api::cuda_barrier, 1, 2},
    {Method::cuda_char_aligned4, "cuda/char/aligned4", "stage_cuda_char_aligned4",
     Api::cuda_barrier, 1, 4},
    {Method::cuda_char_aligned8, "cuda/char/aligned8", "stage_cuda_char_aligned8",
     Api::cuda_barrier, 1, 8},
    {Method::cuda_char_aligned16, "cuda/char/aligned16", "stage_cuda_char_aligned16",
     Api::cuda_barrier, 1, 16},
    {Method::cg_char_size_t, "cg/char/size_t", "stage_cg_char_size_t", Api::cooperative_groups, 1,
     0},
    {Method::cg_short_size_t, "cg/short/size_t", "stage_cg_short_size_t", Api::cooperative_groups,
     2, 0},
    {Method::cg_int_size_t, "cg/int/size_t", "stage_cg_int_size_t", Api::cooperative_groups, 4, 0},
    {Method::cg_int2_size_t, "cg/int2/size_t", "stage_cg_int2_size_t", Api::cooperative_groups, 8,
     0},
    {Method::cg_int4_size_t, "cg/int4/size_t", "stage_cg_int4_size_t", Api::cooperative_groups, 16,
     0},
    {Method::cg_char_aligned2, "cg/char/aligned2", "stage_cg_char_aligned2",
     Api::cooperative_groups, 1, 2},
    {Method::cg_char_aligned4, "cg/char/aligned4", "stage_cg_char_aligned4",
     Api::cooperative_groups, 1, 4},
    {Method::cg_char_aligned8, "cg/char/aligned8", "stage_cg_char_aligned8",
     Api::cooperative_groups, 1, 8},
    {Method::cg_char_aligned16, "cg/char/aligned16", "stage_cg_char_aligned16",
     Api::cooperative_groups, 1, 16},
    {Method::peeled, "peeled", "stage_peeled", Api::peeled, 1, 0},
};

/// The row of `method`.
constexpr const MethodInfo& info(Method method) { return kMethods[static_cast<int>(method)]; }

/// The alignment a method's launch requires of the source, the staging buffer and the
/// byte count: max(element size, promised alignment). Type and promise together are all
/// the compiler knows; `cuda::memcpy_async` picks its instruction from this number alone.
constexpr std::size_t required_alignment(Method method) {
  const MethodInfo& m = info(method);
  return static_cast<std::size_t>(m.element_bytes > m.promised_alignment ? m.element_bytes
                                                                         : m.promised_alignment);
}

/// Bytes one block stages per batch. A multiple of 128, so every batch of an array starts
/// with the same misalignment as the array itself.
inline constexpr std::size_t kBatchBytes = 16384;

/// The staging buffer starts `stage_offset` bytes past a boundary of this many bytes.
inline constexpr std::size_t kStageBoundary = 128;

/// Pass as `stage_offset` to place the staging buffer with the same misalignment (modulo
/// 16) as the source, which is what lets a misaligned source use 16-byte copies.
inline constexpr std::size_t kMatchSource = ~std::size_t{0};

/// Dynamic shared memory of one block, the one place its layout is computed (the kernel
/// and the launcher both call it):
///   [0, pad)                 up to kStageBoundary - 1 bytes to the first boundary
///   [pad, pad + offset)      the stage offset, below kStageBoundary
///   [.., .. + kBatchBytes)   the staging buffer: one batch
__host__ __device__ constexpr std::size_t shared_bytes() {
  return kBatchBytes + 2 * kStageBoundary;
}

static_assert(kStageBoundary % 16 == 0 && (kStageBoundary & (kStageBoundary - 1)) == 0,
              "the stage boundary must be a power of two of at least 16 bytes, or an offset "
              "of 0 no longer means a 16-byte aligned buffer");
static_assert(kBatchBytes % kStageBoundary == 0,
              "a batch must be whole stage boundaries, or batch k of an array starts with a "
              "different misalignment than the array itself");
static_assert(shared_bytes() <= 48 * 1024,
              "the launcher does not opt in to more than the 48 KB of dynamic shared memory "
              "every block may use: a larger batch fails to launch");

/// Grid and block size of a launch.
struct LaunchShape {
  int blocks = 0;
  int threads_per_block = 0;
};

/// A byte range cut at an alignment boundary: `head` bytes up to the first boundary, a
/// `body` that is a whole number of aligned chunks, and the `tail` after the last one.
struct Split {
  std::size_t head = 0;
  std::size_t body = 0;
  std::size_t tail = 0;
};

/// Splits the `count` bytes that start at address `first` at multiples of `alignment`
/// (a power of two): head + body + tail == count, the body starts at a multiple of
/// `alignment` and is a multiple of it, and head and tail are shorter than `alignment`.
/// When the range ends before the first boundary, it is all head.
Split split_at_alignment(std::uintptr_t first, std::size_t count, std::size_t alignment);

/// Where the staging buffer starts, in bytes past a kStageBoundary boundary of shared
/// memory: `requested` itself, or for kMatchSource the offset at which the source and the
/// stage reach a 16-byte boundary after the same head.
std::size_t stage_offset_for(const void* source, std::size_t requested);

/// What the memcpy_async calls of a launch returned, as bit flags OR-ed over all of them.
enum Returned : unsigned {
  kReturnedNone = 1u,   ///< `async_contract_fulfillment::none`: the copy was done synchronously
  kReturnedAsync = 2u,  ///< `async_contract_fulfillment::async`: cp.async or a bulk copy
  kReturnedVoid = 4u,   ///< `cooperative_groups::memcpy_async` returns nothing
};

/// "async", "none", "none + async", "void (cg)", or "no call" for flags == 0.
inline std::string describe_returned(unsigned flags) {
  if (flags == 0) return "no call";
  std::string text;
  const auto add = [&text](const char* part) {
    text += (text.empty() ? "" : " + ") + std::string(part);
  };
  if (flags & kReturnedNone) add("none");
  if (flags & kReturnedAsync) add("async");
  if (flags & kReturnedVoid) add("void (cg)");
  return text;
}

/// Tests only: every warp of a block but one waits before it issues a batch's copy and
/// before it writes the batch back (course::batches::hold_back), so that a wait that covers
/// only its own warp (TODO 3) shows in the values. 0, the default, holds nobody back.
using course::batches::HoldBack;

/// Validates the arguments, then returns the launch: calling it with a stream copies `in`
/// to `out` (out[i] = in[i]) through shared memory, issuing each batch's global -> shared
/// copy with `method`. The staging buffer starts stage_offset_for(in.data(), stage_offset)
/// bytes past a 128-byte boundary. When `returned` is a device pointer, the Returned flags
/// of every memcpy_async call are OR-ed into it (atomicOr; clear it first).
///
/// Preconditions, checked before any CUDA call (std::invalid_argument otherwise):
/// `in` and `out` have the same size; 32 <= threads_per_block <= 1024 and a multiple of
/// 32; blocks >= 1; `stage_offset` < 128 or kMatchSource; the source address, the stage
/// offset and the size are multiples of required_alignment(method) (an `aligned_size_t<N>`
/// is a promise: broken, it is undefined behaviour, so the launcher checks it); for
/// Method::cg_char_size_t, source and stage must not differ by 2 modulo 4 (CCCL 3.0.1's
/// cooperative groups copy such char data as 2-byte words without first aligning them:
/// the README shows why). `out` may have any alignment. For an empty input the launch
/// does nothing.
course::Launch prepare_staged_copy(Method method, cuda::std::span<const std::uint8_t> in,
                                   cuda::std::span<std::uint8_t> out, std::size_t stage_offset,
                                   LaunchShape shape, unsigned* returned = nullptr,
                                   HoldBack hold = {});

/// prepare_staged_copy(method, in, out, stage_offset, shape, returned), launched at once on
/// `stream`.
void staged_copy(Method method, cuda::std::span<const std::uint8_t> in,
                 cuda::std::span<std::uint8_t> out, std::size_t stage_offset, LaunchShape shape,
                 cudaStream_t stream, unsigned* returned = nullptr);

/// The most blocks of `threads_per_block` threads one SM holds at once for `method`'s
/// kernel (cudaOccupancyMaxActiveBlocksPerMultiprocessor), given its shared memory.
int max_blocks_per_sm(Method method, int threads_per_block);

namespace detail {

/// The copy size of `cp.async.{ca,cg}.shared.global [dst], [src], N, ...;`: its 3rd operand,
/// the first number after the second ']' (none when the line has no such number).
inline std::optional<int> cp_async_size(const std::string& line) {
  const std::size_t second = line.find(']', line.find(']') + 1);
  if (second == std::string::npos) return std::nullopt;
  const std::size_t digits = line.find_first_of("0123456789", second);
  if (digits == std::string::npos) return std::nullopt;
  return std::stoi(line.substr(digits));
}

/// The bytes one `ld.global[.nc][.v2|.v4].u8|u16|u32|u64|...` reads: the vector length x the
/// element size (0 when the opcode names no element type of 8-64 bits).
inline int load_width(const std::string& op) {
  int vector = 1;
  int element = 0;
  std::istringstream parts(op);
  std::string part;
  while (std::getline(parts, part, '.')) {
    if (part == "v2") vector = 2;
    if (part == "v4") vector = 4;
    if (part.size() >= 2 &&
        (part[0] == 'u' || part[0] == 's' || part[0] == 'b' || part[0] == 'f')) {
      const std::string bits = part.substr(1);
      if (bits == "8" || bits == "16" || bits == "32" || bits == "64") {
        element = std::stoi(bits) / 8;
      }
    }
  }
  return vector * element;
}

}  // namespace detail

/// How the PTX body of a kernel reads global memory, widest first, e.g. "bulk (TMA)",
/// "cp.async 16 B", "cp.async 4 B + byte loop" or "2-byte loop". In this lesson's kernels
/// only the staging copy reads global memory, so this names what the compiler emitted
/// for it: `cp.async.bulk.shared...` is a bulk (TMA) copy, `cp.async.{ca,cg}.shared.global
/// [..], [..], N` a cp.async of N bytes, and an `ld.global` of N bytes (vectors included)
/// an N-byte loop of plain loads. Several entries mean that the kernel holds several
/// paths: a run-time choice, or a peeled head and tail.
inline std::string describe_global_reads(const std::string& ptx_body) {
  bool bulk = false;
  std::set<int, std::greater<int>> cp_async_sizes;
  std::set<int, std::greater<int>> load_widths;
  std::istringstream lines(ptx_body);
  std::string line;
  while (std::getline(lines, line)) {
    line = line.substr(0, line.find("//"));
    std::istringstream words(line);
    std::string op;
    words >> op;
    if (!op.empty() && op[0] == '@') words >> op;  // a predicate guards the instruction
    const auto starts_with = [&op](const char* prefix) { return op.rfind(prefix, 0) == 0; };
    if (starts_with("cp.async.bulk.shared")) {
      bulk = true;
    } else if (starts_with("cp.async.ca.shared.global") ||
               starts_with("cp.async.cg.shared.global")) {
      if (const std::optional<int> size = detail::cp_async_size(line)) cp_async_sizes.insert(*size);
    } else if (starts_with("ld.global.")) {
      if (const int width = detail::load_width(op); width > 0) load_widths.insert(width);
    }
  }
  std::string text;
  const auto add = [&text](const std::string& part) { text += (text.empty() ? "" : " + ") + part; };
  if (bulk) add("bulk (TMA)");
  for (int size : cp_async_sizes) add("cp.async " + std::to_string(size) + " B");
  for (int width : load_widths)
    add(width == 1 ? "byte loop" : std::to_string(width) + "-byte loop");
  return text.empty() ? "no global reads" : text;
}

namespace {

/// What every kernel receives (by value): alignment_launch.cu fills it, staged_copy_body
/// (alignment.cu) reads it.
struct StageArgs {
  const std::uint8_t* in;
  std::uint8_t* out;
  std::size_t n;
  unsigned stage_offset;  // where the staging buffer starts, past a 128-byte boundary
  unsigned* returned;     // Returned flags of every memcpy_async call, or nullptr
  unsigned hold_ns;       // tests only, 0 otherwise: course::batches::hold_back
};

// ---- Defined in alignment.cu (your file) ---------------------------------------------------
// Declared here for alignment_launch.cu, so that it compiles on its own (tools/compile_alone.py
// checks that it does); the build compiles your file and alignment_launch.cu as one unit, where the
// definitions are.

/// Cuts a byte range at `alignment` boundaries (the public split_at_alignment calls it).
__host__ __device__ constexpr Split split_range(std::uintptr_t first, std::size_t count,
                                                std::size_t alignment);

/// The kernel body: each kernel of alignment_launch.cu is one method's instantiation.
template <Api A, class T, std::size_t Promise>
__device__ void staged_copy_body(const StageArgs& args);

}  // namespace

}  // namespace alignment
