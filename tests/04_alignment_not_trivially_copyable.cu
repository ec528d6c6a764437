// Lesson 04: memcpy_async and types that are not trivially copyable.
//
// This file is compiled, never linked or run, by two ctest entries (see
// lessons/04_alignment/CMakeLists.txt):
//
//   L04.compile.not_trivially_copyable_is_rejected
//       as it is: the build must fail, and its one error must be CCCL's static_assert
//       "memcpy_async requires a trivially copyable type", raised by the cuda::memcpy_async
//       call on `Point` below. The cooperative_groups::memcpy_async call on the very same
//       type compiles without a word: cooperative groups copy the bytes and never ask.
//   L04.compile.trivially_copyable_fix_compiles
//       with -DCOURSE_SHOW_THE_FIX: the same file, with Point's copy constructor defaulted,
//       must compile cleanly. So the first build fails for that one reason only.
//
// Both builds also compile the second fix: copy the trivially copyable representation of a
// type whose copy really does something, then construct the objects in shared memory.
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>

#include <cstdint>
#include <new>
#include <type_traits>

namespace cg = cooperative_groups;

// A point whose author wrote the copy constructor out by hand. It copies exactly what the
// compiler-generated one would, but any user-provided copy constructor makes a type not
// trivially copyable, and memcpy_async may only copy trivially copyable types: it copies
// bytes and runs no constructor.
struct Point {
  float x, y, z;
  Point() = default;
#ifdef COURSE_SHOW_THE_FIX
  Point(const Point&) = default;  // fix 1: let the compiler write it; the type is trivial again
#else
  __host__ __device__ Point(const Point& other) : x(other.x), y(other.y), z(other.z) {}
#endif
  Point& operator=(const Point&) = default;
};
#ifdef COURSE_SHOW_THE_FIX
static_assert(std::is_trivially_copyable_v<Point>);
#else
static_assert(!std::is_trivially_copyable_v<Point>);
#endif

// A type whose copy constructor does real work: it counts the copies made of a value.
// Its bytes alone are not a valid copy, so it must not be staged with memcpy_async.
struct Counted {
  std::uint32_t value;
  std::uint32_t copies;
  __host__ __device__ explicit Counted(std::uint32_t v) : value(v), copies(0) {}
  __host__ __device__ Counted(const Counted& other)
      : value(other.value), copies(other.copies + 1) {}
};
static_assert(!std::is_trivially_copyable_v<Counted>);

// Fix 2: stage what IS trivially copyable (the representation: here the value alone),
// and construct the real objects from it, in place, once the copy has landed.
struct CountedBits {
  std::uint32_t value;
};
static_assert(std::is_trivially_copyable_v<CountedBits>);

#pragma nv_diag_suppress static_var_with_dynamic_init

__global__ void stage_points(const Point* in, Point* out) {
  __shared__ Point staged[128];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  const auto block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  // Rejected at compile time unless Point is trivially copyable:
  (void)cuda::memcpy_async(block, staged, in, sizeof(staged), bar);
  bar.arrive_and_wait();
  out[block.thread_rank()] = staged[block.thread_rank()];
}

__global__ void stage_points_with_cg(const Point* in, Point* out) {
  __shared__ Point staged[128];
  const auto block = cg::this_thread_block();
  // Accepted whatever Point is: cooperative groups copy its bytes without asking.
  cg::memcpy_async(block, staged, in, sizeof(staged));
  cg::wait(block);
  out[block.thread_rank()] = staged[block.thread_rank()];
}

__global__ void stage_counted(const CountedBits* in, std::uint32_t* copies_out) {
  __shared__ CountedBits bits[128];
  __shared__ alignas(Counted) unsigned char storage[128 * sizeof(Counted)];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  const auto block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  (void)cuda::memcpy_async(block, bits, in, sizeof(bits), bar);
  bar.arrive_and_wait();
  // One real construction per object, from its staged representation.
  Counted* objects = reinterpret_cast<Counted*>(storage);
  Counted* mine = new (&objects[block.thread_rank()]) Counted(bits[block.thread_rank()].value);
  copies_out[block.thread_rank()] = mine->copies;
}
