/// \file engine_model.h
/// \brief Lesson 14's engine-queue model: why the order in which the host issues the same
/// copies and kernels decided everything on a 2009 GPU, something else on a 2010 GPU, and
/// (almost) nothing since 2012. CPU only; read-only teaching code (engine_model.cpp).
///
/// A GPU has copy engines and a kernel engine. The host's operations wait in hardware
/// queues; an operation starts when its stream predecessor has signalled completion, its
/// engine is free and it is the oldest of its queue. The model reproduces the schematics of
/// Mark Harris's "How to Overlap Data Transfers in CUDA C/C++" for the Tesla C1060, C2050
/// and K20 exactly and, fed with stage times measured in the same run, predicts the GPU it
/// runs on.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace overlap_transfers {

/// The three operations each chunk goes through, in stream order.
enum class Stage {
  h2d,     ///< cudaMemcpyAsync host -> device
  kernel,  ///< the trig kernel, in place on the device
  d2h,     ///< cudaMemcpyAsync device -> host
};

/// "H2D", "kernel" or "D2H".
const char* stage_name(Stage stage);

/// How the host issues the operations of a run.
enum class Order {
  sequential,    ///< the whole array: one copy in, one kernel, one copy out, on one stream
  per_chunk,     ///< async V1: for each chunk, its H2D, kernel and D2H, on the chunk's stream
  by_operation,  ///< async V2: every chunk's H2D, then every kernel, then every D2H
};

/// "sequential", "async-v1" or "async-v2" (the names of the driver's variants).
const char* order_name(Order order);

namespace model {

/// The engines of the model. With one copy engine every copy runs on copy0.
enum class Engine {
  copy0,    ///< the (first) copy engine: host -> device, and device -> host when it is the only one
  copy1,    ///< the second copy engine: device -> host
  compute,  ///< the kernel engine
};

/// Engines in the model.
inline constexpr int kEngines = 3;

/// "copy engine 0", "copy engine 1" or "kernel engine".
const char* engine_name(Engine engine);

/// One operation as the host issues it.
struct Operation {
  int chunk = 0;
  int stream = 0;  ///< operations of one stream run in issue order, each after the last
  Stage stage = Stage::h2d;
  double duration = 0;  ///< how long it runs once started (any unit: the schedule uses the same)
};

/// An operation with its place in the schedule.
struct ScheduledOperation {
  Operation op;
  Engine engine = Engine::copy0;
  double ready = 0;  ///< when its stream predecessor's completion was signalled (0: none)
  double start = 0;
  double end = 0;
};

/// What the model knows about a GPU.
struct Gpu {
  std::string name;
  /// 1: both directions share one copy engine (C1060). 2 or more: host -> device and
  /// device -> host have an engine each (C2050 and later; a third engine, as on Hopper,
  /// serves other directions, so it changes nothing here).
  int copy_engines = 2;
  /// 0: no Hyper-Q. The host's operations wait in one queue per engine, in issue order,
  /// so an operation that waits for its stream blocks every later one on that engine
  /// (a "false dependency"). N > 0: Hyper-Q; stream s uses hardware queue s % N, so
  /// streams only block each other when they share a queue. CUDA opens 8 by default
  /// (CUDA_DEVICE_MAX_CONNECTIONS, at most 32).
  int connections = 0;
  /// Fermi (C2050): when kernels of different streams are issued back to back, the
  /// scheduler runs them as one concurrent batch and signals their completion only when
  /// the last of them has finished, so nothing that waits for one of them can start
  /// before all of them are done.
  bool delayed_kernel_signal = false;
};

/// The Tesla C1060 (compute capability 1.3): one copy engine, one kernel engine.
Gpu tesla_c1060();
/// The Tesla C2050 (2.0): two copy engines, delayed completion of back-to-back kernels.
Gpu tesla_c2050();
/// The Tesla K20 (3.5): two copy engines and Hyper-Q with CUDA's default 8 connections.
Gpu tesla_k20();
/// A current GPU: `async_engine_count` copy engines (cudaDeviceProp::asyncEngineCount),
/// Hyper-Q with `connections` hardware queues. Throws std::invalid_argument for a count < 1.
Gpu current_gpu(const std::string& name, int async_engine_count, int connections);

/// How long each operation of one chunk takes when it runs alone.
struct StageTimes {
  double h2d = 0;
  double kernel = 0;
  double d2h = 0;
};

/// The operations of a run in the order the host issues them. For `sequential`: three
/// operations of the whole array on stream 0 (each `chunks` x the chunk's time). For the
/// async orders: chunk c on stream c, in the order of the lesson's issue functions.
/// Throws std::invalid_argument for chunks < 1.
std::vector<Operation> issue_order(Order order, int chunks, StageTimes chunk);

/// Schedules `issued` on `gpu`. Every engine runs one operation at a time. An operation
/// waits in its hardware queue (one per engine, or one per connection with Hyper-Q);
/// only the oldest operation of a queue may start, and it starts as soon as its engine
/// is free and its stream predecessor has signalled completion. Returns the operations
/// in issue order with their engine, ready, start and end times.
/// Throws std::invalid_argument for a negative duration or stream, or a GPU with fewer
/// than one copy engine or negative connections.
std::vector<ScheduledOperation> simulate(const std::vector<Operation>& issued, const Gpu& gpu);

/// When the last operation of a schedule ends (0 for an empty one).
double makespan(const std::vector<ScheduledOperation>& schedule);

/// makespan(simulate(issue_order(order, chunks, chunk), gpu)).
double predict(const Gpu& gpu, Order order, int chunks, StageTimes chunk);

/// The lower bound of any order on engines that run one operation at a time: `chunks`
/// identical chunks through three engines in a row take h2d + kernel + d2h +
/// (chunks - 1) x max(h2d, kernel, d2h) at best (the slowest engine is busy from its
/// first operation to its last). Throws std::invalid_argument for chunks < 1.
double pipeline_bound(int chunks, StageTimes chunk);

/// Prints the blog post's schematic as the model schedules it on each of `gpus`: 4 chunks,
/// every stage 1 unit (sequential = 12 units), async V1 and V2 in units and as a fraction
/// of sequential.
void print_schematic(std::ostream& out, const std::vector<Gpu>& gpus);

/// Prints the model's sequential, V1 and V2 times in ms for each of `gpus` at `chunks`
/// chunks of the given stage times: what each GPU generation would do with this run's work.
void print_predictions(std::ostream& out, const std::vector<Gpu>& gpus, int chunks,
                       StageTimes chunk);

}  // namespace model
}  // namespace overlap_transfers
