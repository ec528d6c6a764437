// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
// Lesson 10 (sm_90 only): one thread hands a batch to the TMA; the others learn of its end from
// an mbarrier whose phase ends once its arrivals and expected bytes are paid. A wait names its
// phase by one bit: a waiter must know which use of that barrier it waits for. Shared memory
// passed between the threads and the TMA crosses two proxies, ordered only where the code orders
// them. Kernels: single_ptx_kernel (cuda::ptx; outputs leave by TMA too), single_barrier_kernel
// (the libcu++ barrier), pipeline_kernel<Stages> (full and empty mbarriers); waits are bounded.
#include "tma_bulk_copy.cuh"

#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/ptx>

#include "course/batches.cuh"
#include "given/tma_bulk_copy_device.cuh"

// A __shared__ cuda::barrier is initialised by init(), never by a constructor.
#pragma nv_diag_suppress static_var_with_dynamic_init

namespace tma_bulk_copy {
namespace {

namespace cg = cooperative_groups;
namespace ptx = cuda::ptx;
using course::batches::Batch;
using course::batches::batch_of_block;
using course::batches::compute_batch;
using device::BlockBarrier;

constexpr std::uint32_t kBrokenExtraBytes = 16;  // the DELIBERATELY BROKEN expect_tx surplus

/// The issuing thread's part of a batch, cuda::ptx flavour: batch `b` on its way into `staged`,
/// completing on `full`; `extra` is 0 but in the broken variant. (Called by sm_90 bodies only.)
__device__ inline void issue_batch(std::uint32_t* staged, const std::uint32_t* in, Batch b,
                                   std::uint64_t* full, std::uint32_t extra) {
  const std::uint32_t bytes = bulk_bytes(b.count);
  device::copy_leftover_in(staged, in, b);
  // TODO 2: afterwards the current phase of `full` holds this thread's one arrival and
  //         expects exactly the bytes that this batch's bulk load delivers (plus `extra`),
  //         and that load is under way: the batch's whole 16-byte chunks (`bytes` bytes),
  //         from global memory into `staged`, its completion paid to `full`. A bulk copy of
  //         0 bytes is no instruction: issue none (the arrival alone then ends the phase).
  //         At most two instructions.
  // BEGIN SOLUTION
  (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, full,
                                       bytes + extra);
  if (bytes > 0) {
    ptx::cp_async_bulk(ptx::space_shared, ptx::space_global, staged, in + b.first, bytes, full);
  }
  // STARTER: (void)staged; (void)in; (void)b; (void)full; (void)extra; (void)bytes;
  // END SOLUTION
}

/// Before a buffer a bulk store reads is written again, or the block exits.
__device__ inline void wait_stores_read(bool issuer) {
  // TODO 4 (bug hunt): written, with one bug. `./course check 10` fails the PTX test
  //         TheSingleKernelsWaitUntilNoStoreReadsTheirBuffer (no GPU needed); on a GPU,
  //         GpuTmaStoreHazards finds in `out` the poison that the test writes into the buffer
  //         as soon as this returns. Racecheck sees nothing: the store reads through the async
  //         proxy. Contract of the fix: afterwards no bulk store the issuer committed still
  //         *reads* shared memory, so their buffer may be overwritten, or the block may exit.
  //         Wait for no more (their global writes may still be under way); only the issuer
  //         has stores to wait for. One line.
  // BEGIN SOLUTION
  if (issuer) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});
  // STARTER: if (issuer) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<1>{});
  // END SOLUTION
}

/// The single kernels' second half: computes batch `b` from `staged` into `results` (unless
/// !Compute: a plain copy stores `staged` itself) and sends it to global memory.
template <bool Compute, bool ProxyFence>
__device__ void compute_and_store(const std::uint32_t* staged, std::uint32_t* results,
                                  std::uint32_t* out, Batch b, std::size_t batch, std::size_t n,
                                  bool issuer) {
  const std::uint32_t* source = staged;
  if constexpr (Compute) {
    device::compute_into(results, staged, b, batch, n, threadIdx.x, blockDim.x);
    source = results;
  }
  // TODO 5: afterwards the batch's whole 16-byte chunks of `source` are on their way to the
  //         batch's place in `out` by one bulk store from the issuer, closed as a bulk group
  //         of its own (the groups TODO 4 waits for). That store reads what every thread
  //         wrote into `results`: generic-proxy writes, read through the async proxy, so
  //         each writer orders its writes for that proxy (only where ProxyFence: false where
  //         no thread wrote `source`, the plain copies, and in the DELIBERATELY BROKEN
  //         variant), and no store starts before every thread has written. No store of 0
  //         bytes; the issuer sends the 0-3 leftover elements by plain stores (the device
  //         header has the helper).
  // BEGIN SOLUTION
  if constexpr (ProxyFence) ptx::fence_proxy_async(ptx::space_shared);
  __syncthreads();
  if (issuer) {
    const std::uint32_t bytes = bulk_bytes(b.count);
    if (bytes > 0) {
      ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, out + b.first, source, bytes);
    }
    ptx::cp_async_bulk_commit_group();
    device::copy_leftover_out(out, source, b);
  }
  // STARTER: (void)source; (void)out; (void)issuer;
  // END SOLUTION
}

// ---- 1. one buffer, cuda::ptx ----------------------------------------------------------

template <Variant V, bool Compute>
__global__ void single_ptx_kernel(const std::uint32_t* __restrict__ in,
                                  std::uint32_t* __restrict__ out, std::size_t n,
                                  int vectors_per_thread, TestHooks hooks) {
#if __CUDA_ARCH__ >= 900
  extern __shared__ uint4 shared_storage[];  // (2, batch) uint32: staged, then results
  __shared__ std::uint64_t full;             // the mbarrier: 8 bytes of shared memory
  const std::size_t batch = batch_elements(blockDim.x, vectors_per_thread);
  std::uint32_t* staged = reinterpret_cast<std::uint32_t*>(shared_storage);
  std::uint32_t* results = staged + batch;
  const std::size_t mine = batches_of_block(batch_count(n, batch), blockIdx.x, gridDim.x);
  const bool issuer = threadIdx.x == 0;

  // TODO 1: afterwards `full` is an mbarrier whose phases each expect one arrival, set up
  //         by one thread; the async proxy, which will pay its transaction bytes, sees that
  //         setup; and no thread of the block touches `full` before all of this holds.
  // BEGIN SOLUTION
  if (issuer) {
    ptx::mbarrier_init(&full, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  // END SOLUTION
  // Tests only (TestHooks, off by default): the hooks that make a race show in the values.
  const unsigned hold_ns = hooks.hold_back.nanoseconds;
  std::uint32_t* const store_source = Compute ? results : staged;
  course::batches::poison_shared(staged, (Compute ? 2 : 1) * batch * sizeof(std::uint32_t),
                                 hold_ns);

  for (std::size_t k = 0; k < mine; ++k) {
    const Batch b = batch_of_block(k, batch, n);
    wait_stores_read(issuer);  // `staged` (plain copy) or `results` is free again
    if (issuer) {              // tests only: the next round's writes, at once
      device::poison_store_source(store_source, batch * sizeof(std::uint32_t),
                                  hooks.poison_after_store_wait);
    }
    if (issuer) {
      issue_batch(staged, in, b, &full,
                  V == Variant::broken_wrong_expect_tx ? kBrokenExtraBytes : 0);
    }
    bool arrived = false;
    if constexpr (V == Variant::broken_parity_not_flipped) {
      // DELIBERATELY BROKEN (given): parity 0 every round returns early from round 1 on.
      arrived = device::wait_parity_bounded(&full, 0, kDataNeverArrived);
    } else {
      // TODO 3: afterwards `arrived` is false if the bounded wait timed out; otherwise the
      //         phase of `full` that round k's copy completes is over, so batch k has landed
      //         in `staged` and is visible to this thread. One statement: the broken branch
      //         above waits the same way, for the wrong phase.
      // BEGIN SOLUTION
      arrived = device::wait_parity_bounded(&full, phase_parity(k), kDataNeverArrived);
      // END SOLUTION
    }
    if (__syncthreads_or(!arrived)) break;  // a timed-out wait ends the block, every thread
    course::batches::hold_back(hold_ns);    // tests only: every warp but one computes late
    compute_and_store<Compute, Compute && V != Variant::broken_missing_proxy_fence>(
        staged, results, out, b, batch, n, issuer);
  }
  wait_stores_read(issuer);  // shared memory must outlive the stores that read it
  if (issuer) {              // tests only: a store still reading would read poison
    device::poison_store_source(store_source, batch * sizeof(std::uint32_t),
                                hooks.poison_after_store_wait);
  }
#else
  device::not_sm90(in, out, n, vectors_per_thread);
  (void)hooks;
#endif
}

// ---- 2. one buffer, cuda::barrier -------------------------------------------------------

template <bool Compute>
__global__ void single_barrier_kernel(const std::uint32_t* __restrict__ in,
                                      std::uint32_t* __restrict__ out, std::size_t n,
                                      int vectors_per_thread, TestHooks hooks) {
#if __CUDA_ARCH__ >= 900
  extern __shared__ uint4 shared_storage[];  // (2, batch) uint32: staged, then results
  __shared__ BlockBarrier bar;
  const std::size_t batch = batch_elements(blockDim.x, vectors_per_thread);
  std::uint32_t* staged = reinterpret_cast<std::uint32_t*>(shared_storage);
  std::uint32_t* results = staged + batch;
  const std::size_t mine = batches_of_block(batch_count(n, batch), blockIdx.x, gridDim.x);
  const bool issuer = threadIdx.x == 0;
  if (issuer) {
    init(&bar, blockDim.x);  // every thread arrives once per phase
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  // Tests only (TestHooks, off by default), as in single_ptx_kernel.
  const unsigned hold_ns = hooks.hold_back.nanoseconds;
  std::uint32_t* const store_source = Compute ? results : staged;
  course::batches::poison_shared(staged, (Compute ? 2 : 1) * batch * sizeof(std::uint32_t),
                                 hold_ns);

  for (std::size_t k = 0; k < mine; ++k) {
    const Batch b = batch_of_block(k, batch, n);
    wait_stores_read(issuer);
    if (issuer) {  // tests only: the next round's writes, at once
      device::poison_store_source(store_source, batch * sizeof(std::uint32_t),
                                  hooks.poison_after_store_wait);
    }
    BlockBarrier::arrival_token token;
    // TODO 6: afterwards this thread has arrived on `bar` once for this round and holds the
    //         token of that arrival. The issuer has also started the batch's bulk load (its
    //         whole 16-byte chunks, from global memory into `staged`) with its completion
    //         paid to `bar`, and its own arrival told `bar` how many bytes to expect; its
    //         0-3 leftover elements are in `staged` before that arrival, as in issue_batch.
    //         The other threads only arrive. No copy of 0 bytes.
    // BEGIN SOLUTION
    if (issuer) {
      const std::uint32_t bytes = bulk_bytes(b.count);
      device::copy_leftover_in(staged, in, b);
      if (bytes > 0) {
        cuda::device::memcpy_async_tx(staged, in + b.first, cuda::aligned_size_t<16>(bytes), bar);
      }
      token = cuda::device::barrier_arrive_tx(bar, 1, bytes);
    } else {
      token = bar.arrive();
    }
    // END SOLUTION
    const bool arrived = device::wait_token_bounded(bar, static_cast<decltype(token)&&>(token));
    if (__syncthreads_or(!arrived)) break;
    course::batches::hold_back(hold_ns);  // tests only: every warp but one computes late
    compute_and_store<Compute, Compute>(staged, results, out, b, batch, n, issuer);
  }
  wait_stores_read(issuer);
  if (issuer) {  // tests only: a store still reading would read poison
    device::poison_store_source(store_source, batch * sizeof(std::uint32_t),
                                hooks.poison_after_store_wait);
  }
#else
  device::not_sm90(in, out, n, vectors_per_thread);
  (void)hooks;
#endif
}

// ---- 3. the multi-stage TMA pipeline ------------------------------------------------------

template <int Stages>
__global__ void pipeline_kernel(const std::uint32_t* __restrict__ in,
                                std::uint32_t* __restrict__ out, std::size_t n,
                                int vectors_per_thread, TestHooks hooks) {
  (void)hooks;  // no bulk store, and one region holds the consumers' wait, compute and release
#if __CUDA_ARCH__ >= 900
  extern __shared__ uint4 shared_storage[];    // (Stages, batch) uint32: a ring of buffers
  __shared__ std::uint64_t full[Stages];       // batch landed: 1 arrival + its bytes
  __shared__ std::uint64_t empty[Stages];      // buffer released: one arrival per consumer
  const unsigned consumers = blockDim.x - 32;  // the last warp produces
  const std::size_t batch = batch_elements(consumers, vectors_per_thread);
  const std::size_t mine = batches_of_block(batch_count(n, batch), blockIdx.x, gridDim.x);
  std::uint32_t* buffers = reinterpret_cast<std::uint32_t*>(shared_storage);
  auto buffer = [&](std::size_t k) { return buffers + (k % Stages) * batch; };
  if (threadIdx.x == 0) {
    for (int s = 0; s < Stages; ++s) {
      ptx::mbarrier_init(&full[s], 1);
      ptx::mbarrier_init(&empty[s], consumers);
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();  // the last block-wide sync: producer and consumers part ways here

  if (threadIdx.x >= consumers) {  // the producer warp: one elected lane issues
    cg::invoke_one(cg::tiled_partition<32>(cg::this_thread_block()), [&] {
      for (std::size_t k = 0; k < mine; ++k) {
        // TODO 7: afterwards batch k is on its way into its buffer, issued the way the
        //         single kernels issue theirs, and that buffer was not refilled before every
        //         consumer had released the batch it held before, Stages batches earlier
        //         (the first Stages batches find their buffers free). On a timed-out wait,
        //         stop issuing.
        // BEGIN SOLUTION
        if (k >= Stages &&
            !device::wait_parity_bounded(&empty[k % Stages], phase_parity(k / Stages - 1),
                                         kBufferNeverFreed)) {
          break;
        }
        issue_batch(buffer(k), in, batch_of_block(k, batch, n), &full[k % Stages], 0);
        // STARTER: break;
        // END SOLUTION
      }
    });
    return;
  }
  for (std::size_t k = 0; k < mine; ++k) {
    // TODO 8: afterwards batch k has landed in its buffer and is visible to this thread
    //         (leave the loop if the bounded wait timed out), its outputs are in global
    //         memory (the course's compute step, the consumers sharing the work), and this
    //         thread has told the producer that it has finished reading that buffer.
    // BEGIN SOLUTION
    if (!device::wait_parity_bounded(&full[k % Stages], phase_parity(k / Stages),
                                     kDataNeverArrived)) {
      break;
    }
    compute_batch(buffer(k), out, batch_of_block(k, batch, n), batch, n, threadIdx.x, consumers);
    (void)ptx::mbarrier_arrive(&empty[k % Stages]);  // a release: my reads come before the refill
    // END SOLUTION
  }
#else
  device::not_sm90(in, out, n, vectors_per_thread);
#endif
}

}  // namespace
}  // namespace tma_bulk_copy
