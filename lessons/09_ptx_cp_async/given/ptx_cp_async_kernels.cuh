// Lesson 09's kernels. Read-only: they call the functions you write in ptx_cp_async.cu
// (the wrappers, start_batch, wait_for_batch, copy_chunk_branch_free, ...), which
// ptx_cp_async_device.cuh declares. The build compiles ptx_cp_async.cu, then
// ptx_cp_async_launch.cu, which includes this file, as one unit, where your definitions are.
#pragma once

#include <cstddef>
#include <cstdint>

#include "course/batches.cuh"
#include "course/workload.h"
#include "ptx_cp_async.cuh"
#include "ptx_cp_async_device.cuh"

namespace ptx_cp_async {
namespace {

// ---- 1. the multi-stage copy-and-compute kernel (lesson 06's schedule) --------------------
//
//   buffer:      0        1        2        3        (Stages = 4: 3 batches in flight)
//   k = 0:    compute   copy 1   copy 2   copy 3
//   k = 1:    copy 4    compute  copy 2   copy 3     buffer 0 is refilled only after every
//   k = 2:    copy 4    copy 5   compute  copy 3     thread finished computing batch 0
//
// `hold_ns` is for tests only, 0 otherwise (course::batches::hold_back): every warp but one
// waits before it starts a batch's copies and before it reads a batch, so that a wait that
// covers only its own warp (TODO 7: the copies of 4 and 8 bytes, and the last batch's pieces,
// are read by threads of other warps) reads stale data or lets a refill overwrite it.
template <Form F, int Stages>
__global__ void multi_stage_kernel(const std::uint32_t* __restrict__ in,
                                   std::uint32_t* __restrict__ out, std::size_t n,
                                   int vectors_per_thread, unsigned hold_ns) {
  extern __shared__ uint4 shared_storage[];   // Stages batches
  __shared__ std::uint64_t barriers[Stages];  // the mbarrier forms: one per stage
  constexpr int kAhead = Stages - 1;
  const std::size_t batch = batch_elements(blockDim.x, vectors_per_thread);
  const std::size_t mine = batches_of_block(batch_count(n, batch), blockIdx.x, gridDim.x);
  // shared_storage[stage][chunk] : (Stages, batch / 4) uint4; batch k lands in stage k % Stages
  auto buffer = [&](std::size_t k) { return shared_storage + (k % Stages) * (batch / 4); };
  course::batches::poison_shared(shared_storage, Stages * batch * sizeof(std::uint32_t), hold_ns);
  if constexpr (uses_mbarrier(F)) {
    // Every thread counts once per batch (start_batch, TODO 6): the expected count is the
    // block size.
    if (threadIdx.x == 0) {
      for (int s = 0; s < Stages; ++s) mbarrier_init(&barriers[s], blockDim.x);
    }
    __syncthreads();  // nobody arrives on a barrier before it is initialised
  }
  for (int k = 0; k < kAhead; ++k) {
    course::batches::hold_back(hold_ns);  // tests only: every warp but one copies late
    start_batch<F>(buffer(k), in, k, mine, batch, n, vectors_per_thread, &barriers[k % Stages]);
  }
  for (std::size_t k = 0; k < mine; ++k) {
    wait_for_batch<F, Stages>(barriers, k);
    // Refill the buffer of batch k - 1, which every thread finished before the wait's barrier.
    course::batches::hold_back(hold_ns);  // tests only: every warp but one copies late
    start_batch<F>(buffer(k + kAhead), in, k + kAhead, mine, batch, n, vectors_per_thread,
                   &barriers[(k + kAhead) % Stages]);
    course::batches::hold_back(hold_ns);  // tests only: every warp but one reads late
    course::batches::compute_batch(reinterpret_cast<const std::uint32_t*>(buffer(k)), out,
                                   course::batches::batch_of_block(k, batch, n), batch, n);
  }
}

// ---- 2. the tail kernel: rows of an awkward length ----------------------------------------

/// What one usually writes first: a branch per chunk, a 16-byte copy for a whole one, a
/// 4-byte copy or a zero store per word of the partial one, a zero store past the last row.
__device__ inline void copy_chunk_if(uint4* dst, const std::uint32_t* in, std::size_t row,
                                     std::size_t column, Rows shape) {
  if (row >= shape.rows) {
    *dst = make_uint4(0, 0, 0, 0);
    return;
  }
  const std::uint32_t* src = in + row * pitch(shape.length) + column;  // in : (rows, pitch)
  if (column + 4 <= shape.length) {
    cp_async<CacheOp::cg, 16>(dst, src);
  } else {
    std::uint32_t* words = reinterpret_cast<std::uint32_t*>(dst);
    for (int w = 0; w < 4; ++w) {
      if (column + w < shape.length) {
        cp_async<CacheOp::ca, 4>(words + w, src + w);
      } else {
        words[w] = 0;
      }
    }
  }
}

/// Each block stages rows_per_tile() whole rows (the last block fewer real ones), then
/// computes out[r][i] = combine(x[i], x[pitch - 1 - i]) over every column of its rows.
template <TailCopy C>
__global__ void tail_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                            Rows shape) {
  __shared__ uint4 tile[kTailThreads * kTailChunksPerThread];  // (rows, row_chunks) uint4
  const unsigned row_chunks = static_cast<unsigned>(pitch(shape.length) / 4);
  const unsigned tile_chunks = static_cast<unsigned>(rows_per_tile(shape.length)) * row_chunks;
  const std::size_t first_row = static_cast<std::size_t>(blockIdx.x) * rows_per_tile(shape.length);
  for (unsigned c = threadIdx.x; c < tile_chunks; c += blockDim.x) {
    const std::size_t row = first_row + c / row_chunks;  // chunk c of the tile (rows, row_chunks)
    const std::size_t column = (c % row_chunks) * 4;     // is elements column .. column + 3
    if constexpr (C == TailCopy::if_wrapped) {
      copy_chunk_if(&tile[c], in, row, column, shape);
    } else {
      copy_chunk_branch_free(&tile[c], in, row, column, shape);
    }
  }
  wait_all();
  __syncthreads();  // the mirrored chunk was copied by another thread
  for (unsigned c = threadIdx.x; c < tile_chunks; c += blockDim.x) {
    const unsigned row_in_tile = c / row_chunks;
    const unsigned j = c % row_chunks;
    const std::size_t row = first_row + row_in_tile;
    if (row >= shape.rows) continue;
    // Elements 4j..4j+3 pair with pitch-1-4j..pitch-4-4j: the mirrored chunk, reversed.
    const uint4 mirror = tile[row_in_tile * row_chunks + row_chunks - 1 - j];  // (rows, row_chunks)
    reinterpret_cast<uint4*>(out + row * pitch(shape.length))[j] =  // out : (rows, pitch)
        course::workload::combine_vectors(tile[c], mirror);
  }
}

// ---- 3. the cache kernel: a streamed input beside a reused table --------------------------

/// Block b stages batch b of the stream and the table's batch at the same offset modulo the
/// table, then out[i] = combine(stream[i], table[i % table_size]).
template <CachePolicy P>
__global__ void cache_kernel(const std::uint32_t* __restrict__ stream,
                             const std::uint32_t* __restrict__ table,
                             std::uint32_t* __restrict__ out, std::size_t table_size) {
  __shared__ uint4 staged_stream[kCacheBatch / 4];
  __shared__ uint4 staged_table[kCacheBatch / 4];
  // Batch b of the stream, (kCacheBatch / 4) uint4 at `first`, and the table's at first % size.
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * kCacheBatch;
  const uint4* s = reinterpret_cast<const uint4*>(stream + first);
  const uint4* t = reinterpret_cast<const uint4*>(table + first % table_size);
  std::uint64_t streamed = 0;  // read once: may leave L2 first
  std::uint64_t reused = 0;    // read again by later blocks: should stay
  if constexpr (P == CachePolicy::hinted) {
    streamed = make_policy<false>();
    reused = make_policy<true>();
  }
  for (unsigned v = threadIdx.x; v < kCacheBatch / 4; v += blockDim.x) {
    if constexpr (P == CachePolicy::hinted) {
      cp_async_cg16_hint(&staged_stream[v], s + v, streamed);
      cp_async_cg16_hint(&staged_table[v], t + v, reused);
    } else {
      cp_async<CacheOp::cg, 16>(&staged_stream[v], s + v);
      cp_async<CacheOp::cg, 16>(&staged_table[v], t + v);
    }
  }
  wait_all();  // each thread reads back only what it copied itself: no __syncthreads()
  for (unsigned v = threadIdx.x; v < kCacheBatch / 4; v += blockDim.x) {
    const uint4 a = staged_stream[v];
    const uint4 b = staged_table[v];
    using course::workload::combine;
    reinterpret_cast<uint4*>(out + first)[v] =
        make_uint4(combine(a.x, b.x), combine(a.y, b.y), combine(a.z, b.z), combine(a.w, b.w));
  }
}

// ---- 4. tests only: one copy, seen from shared memory -------------------------------------

template <ProbeForm F>
__global__ void probe_kernel(const std::uint8_t* src, std::uint8_t* dst, unsigned operand) {
  __shared__ uint4 chunk;
  if (threadIdx.x != 0) return;
  chunk = make_uint4(0xA5A5A5A5u, 0xA5A5A5A5u, 0xA5A5A5A5u, 0xA5A5A5A5u);
  // An ordinary store and a later cp.async to the same bytes are not ordered by program
  // order alone: the fence makes the store land first.
  __threadfence_block();
  constexpr int kForm = static_cast<int>(F);
  constexpr int kSize = kForm % 4 == 0 ? 4 : kForm % 4 == 1 ? 8 : 16;
  constexpr CacheOp kOp = kForm % 4 == 3 ? CacheOp::cg : CacheOp::ca;
  if constexpr (kForm < 4) {
    cp_async<kOp, kSize>(&chunk, src);
  } else if constexpr (kForm < 8) {
    cp_async_zero_fill<kOp, kSize>(&chunk, src, operand);
  } else {
    cp_async_ignore_src<kOp, kSize>(&chunk, src, operand != 0);
  }
  wait_all();
  *reinterpret_cast<uint4*>(dst) = chunk;
}

}  // namespace
}  // namespace ptx_cp_async
