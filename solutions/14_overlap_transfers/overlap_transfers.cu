// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 14: overlapping host<->device transfers with kernels.
//
// The experiment of Mark Harris's "How to Overlap Data Transfers in CUDA C/C++": an array
// of floats goes host -> device, through a kernel, and back. Sequentially, that is three
// operations of the whole array on one stream, and nothing overlaps. Cut into chunks, one
// stream per chunk, the copy of one chunk can run while another chunk is computed.
//
// A stream only says what must wait for what. What actually overlaps is decided by the
// GPU's engines and the hardware queues in front of them, so the order in which the host
// issues the very same operations can matter: the blog post issues them in two orders
// (async V1 and V2, the README's concept) and finds that which one wins depends on the GPU
// generation. Every operation of every order goes through the same given building block as
// the worked example below; the README and given/engine_model.cpp explain why the orders
// differ, and the model lets you predict it before you measure.
#include "overlap_transfers.cuh"

#include <cstddef>

namespace overlap_transfers {
namespace {

// ---- The kernel (given) -------------------------------------------------------------------

/// The blog post's kernel body, `rounds` times: value += sqrt(sin^2 x + cos^2 x). The
/// identity makes every round add 1 (to within rounding), so the CPU knows the answer
/// without computing a sine, while the GPU has to do the whole computation. The angle is
/// the fractional part of the running value, so it stays in [0, 1): sinf and cosf keep to
/// their fast argument reduction however large the value grows, and each round depends on
/// the one before (no round can be computed ahead). A grid-stride loop: any grid covers
/// every element.
__global__ void trig_rounds_kernel(float* __restrict__ data, std::size_t count, int rounds) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  // data[i] : (count), i = g, g + G, ... (g = blockIdx.x * blockDim.x + threadIdx.x, G = stride)
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += stride) {
    float value = data[i];
    for (int r = 0; r < rounds; ++r) {
      const float angle = value - truncf(value);
      const float s = sinf(angle);
      const float c = cosf(angle);
      value += sqrtf(s * s + c * c);
    }
    data[i] = value;
  }
}

// ---- The three issue orders -----------------------------------------------------------------
//
// Every order enqueues work and returns; none of them waits on the host. The launcher
// (prepare_transfer_and_compute) has checked the job, forked streams[0 .. chunks-1] from
// the caller's stream before an async order runs, and joins them back into it afterwards.

/// Sequential (given, the worked example): the whole array as one chunk (chunk 0 of 1), its
/// three operations on one stream, so each waits for the one before.
void issue_sequential(const Job& job, cudaStream_t stream, Timeline* timeline) {
  issue_operation(Stage::h2d, job, 0, 1, stream, timeline);
  issue_operation(Stage::kernel, job, 0, 1, stream, timeline);
  issue_operation(Stage::d2h, job, 0, 1, stream, timeline);
}

/// Async V1: the blog post's first asynchronous order (TODO 1).
void issue_per_chunk(const Job& job, int chunks, const StreamSet& streams, Timeline* timeline) {
  // TODO 1: async V1. When this returns, the whole job is enqueued, cut into `chunks`
  //         chunks as chunk_of cuts it: for every chunk c, its copy in, its kernel and its
  //         copy out, on the chunk's own stream streams[c] and no other, in that order,
  //         each recorded in `timeline`. The host issues them chunk by chunk: all three of
  //         one chunk before any of the next chunk's (the timeline test compares the issue
  //         order with the model's Order::per_chunk). Nothing here waits or synchronises:
  //         within a chunk, its stream alone keeps each operation after the one before.
  //         Budget: at most 5 lines.
  // BEGIN SOLUTION
  for (int c = 0; c < chunks; ++c) {
    issue_operation(Stage::h2d, job, c, chunks, streams[c], timeline);
    issue_operation(Stage::kernel, job, c, chunks, streams[c], timeline);
    issue_operation(Stage::d2h, job, c, chunks, streams[c], timeline);
  }
  // STARTER: (void)job;
  // STARTER: (void)chunks;
  // STARTER: (void)streams;
  // STARTER: (void)timeline;
  // END SOLUTION
}

/// Async V2: the blog post's second asynchronous order (TODO 2).
void issue_by_operation(const Job& job, int chunks, const StreamSet& streams, Timeline* timeline) {
  // TODO 2: async V2. Afterwards exactly the same 3 x chunks operations are enqueued as
  //         in TODO 1 (chunk c's on streams[c], copy in before kernel before copy out
  //         within the chunk, each recorded in `timeline`), and again nothing waits. Only
  //         the host's issue order differs: operation by operation, every chunk's copy in
  //         before any kernel, every chunk's kernel before any copy out (the model's
  //         Order::by_operation). On some GPUs that order alone decides the run time.
  //         Budget: at most 9 lines.
  // BEGIN SOLUTION
  for (int c = 0; c < chunks; ++c) {
    issue_operation(Stage::h2d, job, c, chunks, streams[c], timeline);
  }
  for (int c = 0; c < chunks; ++c) {
    issue_operation(Stage::kernel, job, c, chunks, streams[c], timeline);
  }
  for (int c = 0; c < chunks; ++c) {
    issue_operation(Stage::d2h, job, c, chunks, streams[c], timeline);
  }
  // STARTER: (void)job;
  // STARTER: (void)chunks;
  // STARTER: (void)streams;
  // STARTER: (void)timeline;
  // END SOLUTION
}

}  // namespace
}  // namespace overlap_transfers
