// Lesson 17's exercise file compiled against the test doubles (17_nccl_overlap.h says why).
// Every header comes first, with the runtime's and NCCL's real declarations; then
// record_calls.h redirects the CUDA and NCCL calls written after it to the doubles, and the
// lesson's namespace is renamed, so that this second copy of the exercise links beside the
// first (which the GPU tests call). COURSE_RECORDED_EXERCISE names the starter's file or
// the solution's (tests/CMakeLists.txt).
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "17_nccl_overlap.h"
#include "course/check.h"
#include "course/launch.h"
#include "course/nccl_check.h"
#include "overlap_transfers.cuh"
#include "record_calls.h"

#define nccl_overlap nccl_overlap_recorded
// The lesson's API in the renamed namespace, included here rather than by the exercise (where
// it would come after the next define): its using-declaration of lesson 14's record_operation
// keeps that name.
#include "nccl_overlap.cuh"

// The exercise's calls of the timeline wrapper (lesson 14's record_operation, which the real
// program links) go to this file's double, which files what each call enqueued.
#define record_operation record_operation_double
namespace nccl_overlap {
void record_operation_double(Timeline* timeline, int chunk, ot::Stage stage, cudaStream_t stream,
                             const std::function<void()>& enqueue_operation);
}  // namespace nccl_overlap
#include COURSE_RECORDED_EXERCISE
#undef record_operation

namespace {

namespace schedule = course::testing::schedule;
namespace rec17 = course::testing::recorded17;
rec17::LayerRun* g_layer_run = nullptr;        // where the wrapper's double files its calls
nccl_overlap::Timeline* g_timeline = nullptr;  // the timeline the scenario hands the schedule

[[noreturn]] void not_recorded(const char* what) {
  throw std::logic_error(std::string(what) +
                         " is not part of the exercise's schedules (the recorded test has no "
                         "double of it)");
}

}  // namespace

// ---- Doubles of the read-only rest of the lesson's API (given/nccl_overlap_launch.cu) -------

namespace nccl_overlap {

OverlapStreams::OverlapStreams(int) { not_recorded("OverlapStreams(chunks)"); }
OverlapStreams::~OverlapStreams() = default;

void record_operation_double(Timeline* timeline, int chunk, ot::Stage stage, cudaStream_t stream,
                             const std::function<void()>& enqueue_operation) {
  rec17::Wrapped w;
  w.chunk = chunk;
  w.stage = stage;
  w.stream = stream;
  w.timeline_passed = timeline != nullptr && timeline == g_timeline;
  w.first = static_cast<int>(schedule::active().operations().size());
  enqueue_operation();
  w.end = static_cast<int>(schedule::active().operations().size());
  if (g_layer_run != nullptr) g_layer_run->wrapped.push_back(w);
}

// As the real helpers: one collective of the chunk's buffers on `stream`.
void all_gather(const Layers& layers, const LayerChunk& chunk, cudaStream_t stream) {
  COURSE_NCCL_CHECK(
      ncclAllGather(chunk.send, chunk.recv, chunk.recv_count, ncclFloat, layers.comm, stream));
}

void reduce_scatter(const Layers& layers, const LayerChunk& chunk, cudaStream_t stream) {
  COURSE_NCCL_CHECK(ncclReduceScatter(chunk.send, chunk.recv, chunk.recv_count, ncclFloat, ncclSum,
                                      layers.comm, stream));
}

void issue_allgather_sequential(const Layers&, const std::vector<LayerChunk>&, cudaStream_t,
                                Timeline*) {
  not_recorded("issue_allgather_sequential()");
}

void issue_reduce_scatter_sequential(const Layers&, const std::vector<LayerChunk>&, cudaStream_t,
                                     Timeline*) {
  not_recorded("issue_reduce_scatter_sequential()");
}

}  // namespace nccl_overlap

// ---- The scenarios ------------------------------------------------------------------------------

namespace course::testing::recorded17 {

namespace {

constexpr int kRanks = 2;
constexpr std::size_t kCountPerChunk = 8;  // floats per rank in each chunk's collective

/// The layer's streams and events on the recorder, the timeline and the communicator.
struct Fixture {
  explicit Fixture(LayerRun& run, int chunks) : nccl(kRanks) {
    schedule::Recorder& m = run.record;
    run.chunks = chunks;
    run.compute = m.new_stream("compute", 0);
    run.comm = m.new_stream("streams.comm", 0);
    streams.comm = run.comm;
    streams.ready = m.new_event("streams.ready", 0);
    streams.comm_done = m.new_event("streams.comm_done", 0);
    for (int i = 0; i < chunks; ++i) {
      const std::string index = "[" + std::to_string(i) + "]";
      streams.collective_done.push_back(m.new_event("streams.collective_done" + index, 0));
      streams.gemm_done.push_back(m.new_event("streams.gemm_done" + index, 0));
    }
    run.events = streams.collective_done;
    run.events.insert(run.events.end(), streams.gemm_done.begin(), streams.gemm_done.end());
    run.events.push_back(streams.ready);
    run.events.push_back(streams.comm_done);
    layers.comm = nccl.comm();
    g_layer_run = &run;
    g_timeline = &timeline;
  }
  ~Fixture() {
    g_layer_run = nullptr;
    g_timeline = nullptr;
  }
  Fixture(const Fixture&) = delete;
  Fixture& operator=(const Fixture&) = delete;

  schedule::NcclMachine nccl;
  nccl_overlap::OverlapStreams streams;
  nccl_overlap::Layers layers;
  nccl_overlap::Timeline timeline;
  std::vector<nccl_overlap::LayerChunk> chunks;
};

/// A chunk whose GEMM is work on the stream it is given, reading `in` and writing `out`, and
/// filed under chunk `index` of the current run.
nccl_overlap::LayerChunk chunk_with_gemm(LayerRun& run, int index, const void* send, void* recv,
                                         const void* gemm_in, std::size_t in_bytes, void* gemm_out,
                                         std::size_t out_bytes) {
  nccl_overlap::LayerChunk c;
  c.index = index;
  c.rows = {static_cast<std::size_t>(index) * 2, 2};
  c.send = send;
  c.recv = recv;
  c.recv_count = kCountPerChunk;
  c.gemm = [&run, index, gemm_in, in_bytes, gemm_out, out_bytes](cudaStream_t stream) {
    schedule::Recorder& m = schedule::active();
    const int id =
        m.enqueue(stream, "the GEMM of chunk " + std::to_string(index),
                  {m.access(gemm_in, in_bytes, false), m.access(gemm_out, out_bytes, true)});
    if (id < 0) throw std::runtime_error("a GEMM enqueued on an unknown stream");
    run.gemm.back()[static_cast<std::size_t>(index)].push_back(id);
  };
  return c;
}

/// Files the collectives of operations [first, end) under their chunks (by the buffer they
/// write).
void file_collectives(LayerRun& run, const std::vector<nccl_overlap::LayerChunk>& chunks, int first,
                      int end) {
  const schedule::Recorder& m = run.record;
  for (int op = first; op < end; ++op) {
    const schedule::Operation& o = m.operations()[static_cast<std::size_t>(op)];
    if (o.name.rfind("nccl", 0) != 0) continue;
    for (const schedule::Access& a : o.accesses) {
      for (const auto& c : chunks) {
        const schedule::Access recv = m.access(c.recv, 1, true);
        if (a.write && a.buffer >= 0 && a.buffer == recv.buffer) {
          run.collective.back()[static_cast<std::size_t>(c.index)].push_back(op);
        }
      }
    }
  }
}

/// Runs `call` once per run with the caller's work `after` it, filing what each run issued.
void record_runs(LayerRun& run, Fixture& f, int runs, const std::function<void()>& call,
                 const std::function<int()>& after) {
  schedule::Recorder& m = run.record;
  try {
    for (int r = 0; r < runs; ++r) {
      m.set_round(r);
      run.collective.emplace_back(static_cast<std::size_t>(run.chunks));
      run.gemm.emplace_back(static_cast<std::size_t>(run.chunks));
      run.call_begin.push_back(static_cast<int>(m.operations().size()));
      call();
      run.call_end.push_back(static_cast<int>(m.operations().size()));
      file_collectives(run, f.chunks, run.call_begin.back(), run.call_end.back());
      m.set_round(-1);
      run.caller_after.push_back(after());
    }
  } catch (const std::exception& e) {
    run.threw = e.what();
  }
}

}  // namespace

InitRun run_init(ncclResult_t result) {
  schedule::Recorder m(1);
  const schedule::Recording recording(m);
  schedule::NcclMachine nccl(3);
  nccl.init_result = result;
  InitRun run;
  for (std::size_t i = 0; i < sizeof run.id.internal; ++i) {
    run.id.internal[i] = static_cast<char>(7 * i + 1);
  }
  run.config.maxCTAs = 5;
  run.config.minCTAs = 2;
  run.made = nccl.comm();
  try {
    run.returned = nccl_overlap::init_communicator(run.id, run.rank, run.ranks, run.config);
  } catch (const nccl_overlap::NcclError& e) {
    run.threw = e.what();
    run.threw_nccl_error = true;
  } catch (const std::exception& e) {
    run.threw = e.what();
  }
  run.calls = nccl.inits;
  return run;
}

// The all-gather layer: before the first run, the caller writes x_shard on `compute`; after
// each run, its next work on `compute` reads Y and writes the next x_shard.
LayerRun run_allgather_layer(int chunks, int runs) {
  LayerRun run;
  schedule::Recorder& m = run.record;
  const schedule::Recording recording(m);
  Fixture f(run, chunks);
  const std::size_t shard_bytes = kCountPerChunk * 4, gathered_bytes = shard_bytes * kRanks;
  std::vector<schedule::Access> inputs, outputs;
  for (int i = 0; i < chunks; ++i) {
    const std::string of = " of chunk " + std::to_string(i);
    void* x = m.new_buffer("the x_shard rows" + of, 0, shard_bytes);
    void* gathered = m.new_buffer("the x_gathered rows" + of, 0, gathered_bytes);
    void* y = m.new_buffer("the Y rows" + of, 0, gathered_bytes);
    f.chunks.push_back(
        chunk_with_gemm(run, i, x, gathered, gathered, gathered_bytes, y, gathered_bytes));
    inputs.push_back(m.access(x, shard_bytes, true));
    outputs.push_back(m.access(y, gathered_bytes, false));
  }
  std::vector<schedule::Access> next = outputs;
  next.insert(next.end(), inputs.begin(), inputs.end());
  m.enqueue(run.compute, "the caller's work that writes x_shard", inputs);
  record_runs(
      run, f, runs,
      [&] {
        nccl_overlap::issue_allgather_overlapped(f.layers, f.chunks, f.streams, run.compute,
                                                 &f.timeline);
      },
      [&] {
        return m.enqueue(run.compute,
                         "the caller's next work on compute (it reads Y, writes the next x_shard)",
                         next);
      });
  return run;
}

// The reduce-scatter layer: before the first run, work on `compute` still reads z_shard and
// partial; after each run, the caller synchronises `compute` alone and reads z_shard on the
// host, and the next run's GEMMs overwrite partial.
LayerRun run_reduce_scatter_layer(int chunks, int runs) {
  LayerRun run;
  schedule::Recorder& m = run.record;
  const schedule::Recording recording(m);
  Fixture f(run, chunks);
  const std::size_t z_bytes = kCountPerChunk * 4, partial_bytes = z_bytes * kRanks;
  std::vector<schedule::Access> earlier, results;
  for (int i = 0; i < chunks; ++i) {
    const std::string of = " of chunk " + std::to_string(i);
    void* partial = m.new_buffer("the partial rows" + of, 0, partial_bytes);
    void* z = m.new_buffer("the z_shard rows" + of, 0, z_bytes);
    void* a = m.new_buffer("the A rows" + of, 0, partial_bytes);
    f.chunks.push_back(
        chunk_with_gemm(run, i, partial, z, a, partial_bytes, partial, partial_bytes));
    earlier.push_back(m.access(partial, partial_bytes, false));
    earlier.push_back(m.access(z, z_bytes, false));
    results.push_back(m.access(z, z_bytes, false));
  }
  m.enqueue(run.compute, "the caller's earlier work that still reads z_shard and partial", earlier);
  record_runs(
      run, f, runs,
      [&] {
        nccl_overlap::issue_reduce_scatter_overlapped(f.layers, f.chunks, f.streams, run.compute,
                                                      &f.timeline);
      },
      [&] {
        const int sync = static_cast<int>(m.operations().size());
        m.host_wait_stream("the caller's cudaStreamSynchronize", run.compute);
        m.host_work("the caller reads z_shard", results);
        return sync;
      });
  return run;
}

}  // namespace course::testing::recorded17
