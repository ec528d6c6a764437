// Lesson 14's engine-queue model (CPU only). Read-only teaching code: read it beside the
// README's schematics; tests/14_overlap_transfers_test.cu checks it schedule by schedule.
//
// Mark Harris's "How to Overlap Data Transfers in CUDA C/C++" issues the same 3 x 4
// operations in two orders and explains the results of three GPUs with a picture of
// engines and queues. This file is that picture as a small discrete-event simulation:
//
//   engines     copy engine 0 (H2D, and D2H too when it is the only one), copy engine 1
//               (D2H, with two or more copy engines), the kernel engine; each runs one
//               operation at a time.
//   queues      without Hyper-Q one per engine; with Hyper-Q one per connection, stream s
//               in queue s % connections. Only the oldest operation of a queue may start.
//   start rule  an operation starts at the latest of: its stream predecessor's completion
//               signal, its engine being free, and the moment it reached the head of its
//               queue.
//   Fermi       kernels issued back to back signal their completion together, when the
//               last of them ends.
#include "engine_model.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <iomanip>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "course/table.h"

namespace overlap_transfers {

const char* stage_name(Stage stage) {
  switch (stage) {
    case Stage::h2d:
      return "H2D";
    case Stage::kernel:
      return "kernel";
    case Stage::d2h:
      return "D2H";
  }
  return "?";
}

const char* order_name(Order order) {
  switch (order) {
    case Order::sequential:
      return "sequential";
    case Order::per_chunk:
      return "async-v1";
    case Order::by_operation:
      return "async-v2";
  }
  return "?";
}

namespace model {
namespace {

void require_model(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument("overlap_transfers::model: " + message);
}

int number(Engine engine) { return static_cast<int>(engine); }

/// Where an issued operation runs, and which hardware queue it waits in.
struct Placement {
  Engine engine = Engine::copy0;
  int queue = 0;
};

/// When an operation may start: `ready` is when its stream predecessor's completion was
/// signalled (0 without one), `start` when it can really start.
struct Timing {
  double ready = 0;
  double start = 0;
};

/// Hardware queues feed engines, each engine runs one operation at a time, and each step
/// starts the queue-head operation that can start earliest (ties: the one issued first).
class EngineQueues {
 public:
  EngineQueues(const std::vector<Operation>& issued, const Gpu& gpu)
      : issued_(issued), gpu_(gpu), predecessor_(issued.size(), -1), batch_(issued.size(), -1) {
    std::map<int, int> last_of_stream;
    for (std::size_t i = 0; i < issued_.size(); ++i) {
      const Operation& op = issued_[i];
      if (const auto it = last_of_stream.find(op.stream); it != last_of_stream.end()) {
        predecessor_[i] = it->second;
      }
      last_of_stream[op.stream] = static_cast<int>(i);
      // Kernels issued back to back (nothing issued between them) form one batch.
      if (op.stage == Stage::kernel) {
        if (i > 0 && issued_[i - 1].stage == Stage::kernel) {
          batch_[i] = batch_[i - 1];
        } else {
          batch_[i] = static_cast<int>(batches_.size());
          batches_.emplace_back();
        }
        batches_[batch_[i]].push_back(static_cast<int>(i));
      }
      placement_.push_back(place(op));
    }
  }

  std::vector<ScheduledOperation> run() {
    // Every queue holds its operations in issue order; only the oldest may start.
    std::map<int, std::deque<int>> queues;
    for (std::size_t i = 0; i < issued_.size(); ++i) {
      queues[placement_[i].queue].push_back(static_cast<int>(i));
    }
    scheduled_.assign(issued_.size(), std::nullopt);
    for (std::size_t step = 0; step < issued_.size(); ++step) {
      int chosen = -1;
      Timing chosen_timing;
      for (const auto& [queue, waiting] : queues) {
        if (waiting.empty()) continue;
        const int head = waiting.front();
        const std::optional<Timing> timing = when_can_start(head);
        if (!timing) continue;  // its stream predecessor has not signalled yet
        if (chosen < 0 || timing->start < chosen_timing.start ||
            (timing->start == chosen_timing.start && head < chosen)) {
          chosen = head;
          chosen_timing = *timing;
        }
      }
      // Unreachable for any issue order: the oldest queue head always can start.
      if (chosen < 0) throw std::logic_error("simulate: no queue's oldest operation can start");

      const Placement& where = placement_[chosen];
      const Operation& op = issued_[chosen];
      scheduled_[chosen] =
          ScheduledOperation{op, where.engine, chosen_timing.ready, chosen_timing.start,
                             chosen_timing.start + op.duration};
      engine_free_[number(where.engine)] = chosen_timing.start + op.duration;
      // The next operation of this queue reaches the head now, not earlier.
      queue_head_since_[where.queue] = chosen_timing.start;
      queues[where.queue].pop_front();
    }
    std::vector<ScheduledOperation> schedule;
    for (const auto& s : scheduled_) schedule.push_back(*s);
    return schedule;
  }

 private:
  /// The engine an operation runs on, and the hardware queue it waits in.
  Placement place(const Operation& op) const {
    Placement where;
    if (op.stage == Stage::kernel) {
      where.engine = Engine::compute;
    } else if (op.stage == Stage::d2h && gpu_.copy_engines >= 2) {
      where.engine = Engine::copy1;  // a copy engine per direction
    } else {
      where.engine = Engine::copy0;  // copies in; copies out too with a single copy engine
    }
    // Without Hyper-Q the engine's own queue; with it, the stream's connection, numbered
    // after the engines' queues so the two kinds never collide.
    where.queue =
        gpu_.connections == 0 ? number(where.engine) : kEngines + op.stream % gpu_.connections;
    return where;
  }

  /// When operation `i`'s completion becomes visible to the next operation of its stream;
  /// nothing while that is not known yet.
  std::optional<double> completion_signal(int i) const {
    const auto& done = scheduled_[i];
    if (!done) return std::nullopt;
    // Fermi's delayed signal: a kernel of a back-to-back batch signals when every kernel
    // of the batch has finished.
    if (gpu_.delayed_kernel_signal && batch_[i] >= 0) {
      double last = done->end;
      for (int member : batches_[batch_[i]]) {
        const auto& other = scheduled_[member];
        if (!other) return std::nullopt;
        last = std::max(last, other->end);
      }
      return last;
    }
    return done->end;
  }

  /// When operation `i`, the oldest of its queue, can start; nothing while its stream
  /// predecessor has not signalled completion.
  std::optional<Timing> when_can_start(int i) const {
    const Placement& where = placement_[i];
    const int before = predecessor_[i];  // -1: first of its stream
    Timing timing;
    if (before >= 0) {
      const std::optional<double> signal = completion_signal(before);
      if (!signal) return std::nullopt;
      timing.ready = *signal;
    }
    const auto head_since = queue_head_since_.find(where.queue);
    timing.start = std::max({timing.ready, engine_free_[number(where.engine)],
                             head_since == queue_head_since_.end() ? 0.0 : head_since->second});
    return timing;
  }

  const std::vector<Operation>& issued_;
  const Gpu& gpu_;
  std::vector<int> predecessor_;           // previous operation of the same stream, or -1
  std::vector<int> batch_;                 // kernels: their back-to-back batch; others -1
  std::vector<std::vector<int>> batches_;  // the kernels of each batch, in issue order
  std::vector<Placement> placement_;
  std::vector<std::optional<ScheduledOperation>> scheduled_;
  double engine_free_[kEngines] = {0, 0, 0};
  std::map<int, double> queue_head_since_;
};

std::string queues_text(const Gpu& gpu) {
  return gpu.connections == 0 ? "one per engine"
                              : "Hyper-Q, " + std::to_string(gpu.connections) + " connections";
}

/// "12 (1.00)": a schematic time and its fraction of the sequential time.
std::string units(double value, double sequential) {
  std::ostringstream out;
  out << std::setw(2) << value << " (" << course::fixed(value / sequential, 2) << ")";
  return out.str();
}

}  // namespace

const char* engine_name(Engine engine) {
  switch (engine) {
    case Engine::copy0:
      return "copy engine 0";
    case Engine::copy1:
      return "copy engine 1";
    case Engine::compute:
      return "kernel engine";
  }
  return "?";
}

Gpu tesla_c1060() { return {"Tesla C1060", 1, 0, false}; }
Gpu tesla_c2050() { return {"Tesla C2050", 2, 0, true}; }
Gpu tesla_k20() { return {"Tesla K20", 2, 8, false}; }

Gpu current_gpu(const std::string& name, int async_engine_count, int connections) {
  require_model(async_engine_count >= 1,
                "a GPU that overlaps copies with kernels has at least one copy engine, got " +
                    std::to_string(async_engine_count));
  require_model(connections >= 1,
                "Hyper-Q needs at least one connection, got " + std::to_string(connections));
  return {name, async_engine_count, connections, false};
}

std::vector<Operation> issue_order(Order order, int chunks, StageTimes chunk) {
  require_model(chunks >= 1, "chunks must be >= 1, got " + std::to_string(chunks));
  const auto op = [&](int c, Stage stage) {
    const double duration = stage == Stage::h2d      ? chunk.h2d
                            : stage == Stage::kernel ? chunk.kernel
                                                     : chunk.d2h;
    return Operation{c, c, stage, duration};
  };
  std::vector<Operation> issued;
  switch (order) {
    case Order::sequential:
      for (Stage stage : {Stage::h2d, Stage::kernel, Stage::d2h}) {
        Operation whole = op(0, stage);
        whole.duration *= chunks;
        issued.push_back(whole);
      }
      break;
    case Order::per_chunk:
      for (int c = 0; c < chunks; ++c) {
        for (Stage stage : {Stage::h2d, Stage::kernel, Stage::d2h}) issued.push_back(op(c, stage));
      }
      break;
    case Order::by_operation:
      for (Stage stage : {Stage::h2d, Stage::kernel, Stage::d2h}) {
        for (int c = 0; c < chunks; ++c) issued.push_back(op(c, stage));
      }
      break;
  }
  return issued;
}

std::vector<ScheduledOperation> simulate(const std::vector<Operation>& issued, const Gpu& gpu) {
  require_model(gpu.copy_engines >= 1, "the model needs at least one copy engine");
  require_model(gpu.connections >= 0, "connections must be >= 0");
  for (const Operation& op : issued) {
    require_model(op.duration >= 0 && std::isfinite(op.duration),
                  "durations must be finite and >= 0");
    require_model(op.stream >= 0, "streams must be >= 0");
  }
  return EngineQueues(issued, gpu).run();
}

double makespan(const std::vector<ScheduledOperation>& schedule) {
  double last = 0;
  for (const ScheduledOperation& s : schedule) last = std::max(last, s.end);
  return last;
}

double predict(const Gpu& gpu, Order order, int chunks, StageTimes chunk) {
  return makespan(simulate(issue_order(order, chunks, chunk), gpu));
}

double pipeline_bound(int chunks, StageTimes chunk) {
  require_model(chunks >= 1, "chunks must be >= 1, got " + std::to_string(chunks));
  const double slowest = std::max({chunk.h2d, chunk.kernel, chunk.d2h});
  return chunk.h2d + chunk.kernel + chunk.d2h + (chunks - 1) * slowest;
}

void print_schematic(std::ostream& out, const std::vector<Gpu>& gpus) {
  const StageTimes unit{1, 1, 1};
  out << "\nThe blog post's schematic (4 chunks, every stage 1 unit: sequential = 12 units),\n"
         "as the engine-queue model schedules it (fraction of sequential):\n";
  out << "  " << std::left << std::setw(26) << "GPU" << std::setw(14) << "copy engines"
      << std::setw(26) << "queues" << std::setw(12) << "async-v1"
      << "async-v2\n";
  for (const Gpu& gpu : gpus) {
    const double seq = predict(gpu, Order::sequential, 4, unit);
    std::string engines = std::to_string(gpu.copy_engines);
    if (gpu.delayed_kernel_signal) engines += " (*)";
    out << "  " << std::left << std::setw(26) << gpu.name << std::setw(14) << engines
        << std::setw(26) << queues_text(gpu) << std::setw(12)
        << units(predict(gpu, Order::per_chunk, 4, unit), seq)
        << units(predict(gpu, Order::by_operation, 4, unit), seq) << "\n";
  }
  out << std::right
      << "  (*) Fermi: kernels issued back to back signal their completion together\n";
}

void print_predictions(std::ostream& out, const std::vector<Gpu>& gpus, int chunks,
                       StageTimes chunk) {
  out << "\nThe model with this run's stage times at " << chunks << " chunks (H2D "
      << course::fixed(chunk.h2d, 4) << ", kernel " << course::fixed(chunk.kernel, 4) << ", D2H "
      << course::fixed(chunk.d2h, 4) << " ms per chunk), in ms:\n";
  out << "  " << std::left << std::setw(32) << "GPU" << std::right << std::setw(12) << "sequential"
      << std::setw(12) << "async-v1" << std::setw(12) << "async-v2"
      << "\n";
  for (const Gpu& gpu : gpus) {
    out << "  " << std::left << std::setw(32) << gpu.name << std::right;
    for (Order order : {Order::sequential, Order::per_chunk, Order::by_operation}) {
      out << std::setw(12) << course::fixed(predict(gpu, order, chunks, chunk), 4);
    }
    out << "\n";
  }
}

}  // namespace model
}  // namespace overlap_transfers
