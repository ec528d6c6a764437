// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 14: overlapping host<->device transfers with kernels.
//
// The experiment of Mark Harris's "How to Overlap Data Transfers in CUDA C/C++": an array
// of floats goes host -> device, through a kernel, and back. Sequentially, that is three
// operations of the whole array on one stream, and nothing overlaps. Cut into chunks, one
// stream per chunk, the copy of one chunk can run while another chunk is computed, and
// the same 3 x chunks operations can be issued in two orders:
//
//   async V1, chunk by chunk:            async V2, operation by operation:
//   for c: H2D(c); kernel(c); D2H(c)     for c: H2D(c)
//                                        for c: kernel(c)
//                                        for c: D2H(c)
//
// Each operation is one call of issue_operation(stage, job, chunk, chunks, stream,
// timeline) (given/overlap_transfers_launch.cu): a cudaMemcpyAsync of the chunk's bytes, or a
// launch of trig_rounds_kernel over the chunk's elements, on `stream`. Which order wins
// depends on the GPU's engines and queues: the README and given/engine_model.cpp explain why.
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

/// Async V1: one loop over the chunks; each chunk's three operations on its own stream.
void issue_per_chunk(const Job& job, int chunks, const StreamSet& streams, Timeline* timeline) {
  // TODO 1: async V1, the blog post's first asynchronous version. The array is cut into
  //         `chunks` chunks (chunk c of chunks: chunk_of, which issue_operation applies).
  //         Afterwards, for every chunk c, its copy in, its kernel and its copy out are
  //         enqueued on streams[c], in that order, each recorded in `timeline`; and the
  //         host has issued them chunk by chunk: all of chunk 0's operations before any of
  //         chunk 1's (the timeline test compares the issue order with
  //         model::issue_order(Order::per_chunk, ...)). Different chunks' streams are then
  //         free to overlap.
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

/// Async V2: the same operations, batched by kind.
void issue_by_operation(const Job& job, int chunks, const StreamSet& streams, Timeline* timeline) {
  // TODO 2: async V2, the blog post's second asynchronous version. The same 3 x chunks
  //         operations on the same streams as TODO 1 (chunk c's on streams[c], copy in
  //         before kernel before copy out within a chunk), but the host issues them
  //         operation by operation: every chunk's copy in, then every chunk's kernel, then
  //         every chunk's copy out (model::issue_order(Order::by_operation, ...)). Only
  //         the order in which the host issues them differs from V1, and on some GPUs that
  //         order decides everything.
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
