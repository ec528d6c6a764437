// Lesson 14 driver: the seed's experiment on this GPU. An array of floats goes host ->
// device, through a trig kernel, and back: sequentially, and cut into chunks issued in
// the seed's two orders (async V1: chunk by chunk; async V2: operation by operation).
// Every run is checked against the CPU reference. Then a sweep of the chunk count, the
// engine-queue model's prediction for every run (fed with stage times measured here),
// a per-operation timeline, and the lesson's two targets.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/harness.h"
#include "course/table.h"
#include "course/timing.h"
#include "overlap_transfers.cuh"

namespace {

using overlap_transfers::Job;
using overlap_transfers::Order;
using overlap_transfers::Stage;
using overlap_transfers::StreamSet;
namespace model = overlap_transfers::model;

constexpr std::uint64_t kDefaultBytes = 16ull << 20;  // the seed's 4M floats
constexpr std::uint64_t kQuickElements = 1000003;     // prime: no chunk count divides it
constexpr int kThreads = 256;                         // the seed's block size
constexpr int kQuickRounds = 2;
constexpr int kMaxRounds = 4096;
constexpr int kMaxChunks = 256;
constexpr std::uint32_t kSeed = 1;
const char* const kDefaultSweep = "1,2,4,8,16,32";
const char* const kQuickSweep = "1,3,4";

// Speed-up of the best async run over the sequential one, and how close it comes to the
// model's bound (the issue's two targets).
constexpr double kMinSpeedup = 1.8;
constexpr double kMaxOfBound = 1.10;

const std::vector<std::string> kVariants = {"sequential", "async-v1", "async-v2"};
const std::vector<Order> kOrders = {Order::sequential, Order::per_chunk, Order::by_operation};
const std::vector<Order> kAsyncOrders = {Order::per_chunk, Order::by_operation};

std::vector<int> parse_chunk_list(const std::string& text) {
  std::vector<int> chunks;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long value = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value < 1 || value > kMaxChunks) {
      throw course::UsageError("--sweep expects chunk counts in [1, " + std::to_string(kMaxChunks) +
                               "] separated by commas, got '" + text + "'");
    }
    chunks.push_back(static_cast<int>(value));
  }
  if (chunks.empty()) throw course::UsageError("--sweep expects at least one chunk count");
  return chunks;
}

/// FILE.csv -> FILE_<what>.csv: the sweep and the timeline next to the main table's CSV.
std::string derived_csv(const std::string& csv, const std::string& what) {
  const std::size_t slash = csv.find_last_of('/');
  const std::size_t dot = csv.find_last_of('.');
  const bool has_suffix = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  return (has_suffix ? csv.substr(0, dot) : csv) + "_" + what + ".csv";
}

/// The hardware queues CUDA opens for this process: CUDA_DEVICE_MAX_CONNECTIONS, 8 by default.
int connections_from_environment() {
  const char* text = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  const int value = text != nullptr ? std::atoi(text) : 0;
  return value >= 1 ? std::min(value, 32) : 8;
}

int device_attribute(cudaDeviceAttr attribute, int device) {
  int value = 0;
  COURSE_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
  return value;
}

std::string queues_text(const model::Gpu& gpu) {
  return gpu.connections == 0 ? "one per engine"
                              : "Hyper-Q, " + std::to_string(gpu.connections) + " connections";
}

/// "12 (1.00)": a schematic time and its fraction of the sequential time.
std::string units(double value, double sequential) {
  std::ostringstream out;
  out << std::setw(2) << value << " (" << course::fixed(value / sequential, 2) << ")";
  return out.str();
}

void print_schematic(const model::Gpu& this_gpu) {
  std::cout << "\nThe seed's schematic (4 chunks, every stage 1 unit: sequential = 12 units),\n"
               "as the engine-queue model schedules it (fraction of sequential):\n";
  std::cout << "  " << std::left << std::setw(26) << "GPU" << std::setw(14) << "copy engines"
            << std::setw(26) << "queues" << std::setw(12) << "async-v1"
            << "async-v2\n";
  for (const model::Gpu& gpu :
       {model::tesla_c1060(), model::tesla_c2050(), model::tesla_k20(), this_gpu}) {
    const double seq = model::predict(gpu, Order::sequential, 4, {1, 1, 1});
    std::string engines = std::to_string(gpu.copy_engines);
    if (gpu.delayed_kernel_signal) engines += " (*)";
    std::cout << "  " << std::left << std::setw(26) << gpu.name << std::setw(14) << engines
              << std::setw(26) << queues_text(gpu) << std::setw(12)
              << units(model::predict(gpu, Order::per_chunk, 4, {1, 1, 1}), seq)
              << units(model::predict(gpu, Order::by_operation, 4, {1, 1, 1}), seq) << "\n";
  }
  std::cout << std::right
            << "  (*) Fermi: kernels issued back to back signal their completion together\n";
}

/// a / b with `digits` decimals, or "-" when b is not positive (an empty chunk takes no time).
std::string ratio(double a, double b, int digits) {
  return b > 0 ? course::fixed(a / b, digits) : "-";
}

struct SweepRow {
  int chunks = 0;
  Order order = Order::per_chunk;
  model::StageTimes stage;  // one chunk's operations in steady state (ms; see chunk_stage_ms)
  double measured_ms = 0;
  double model_ms = 0;
  double bound_ms = 0;
  bool passed = false;
};

}  // namespace

int main(int argc, char** argv) {
  course::CommonOptions options;
  int chunks = 4;
  int rounds = 0;
  int balance_percent = 125;
  std::string sweep_text;
  course::FlagParser flags(
      "14_overlap_transfers",
      "Lesson 14: overlapping host<->device transfers with kernels. An array of floats goes\n"
      "to the device, through a trig kernel and back: 'sequential' in one piece on one\n"
      "stream; 'async-v1' cut into chunks, one stream each, issued chunk by chunk (copy in,\n"
      "kernel, copy out); 'async-v2' the same chunks issued operation by operation (every\n"
      "copy in, then every kernel, then every copy out). Then a sweep of the chunk count,\n"
      "the engine-queue model's predictions from stage times measured in the same run, and\n"
      "a per-operation timeline (--csv FILE also writes FILE_sweep.csv and\n"
      "FILE_timeline.csv for tools/plot_overlap_sweep.py and tools/plot_timeline.py).");
  flags.add_common(options,
                   "bytes of float data, a multiple of 4 (default 16M = 4M floats, the seed's "
                   "size; K/M/G suffixes)",
                   kVariants);
  flags.add_int("chunks", &chunks, 1,
                "chunks (one stream each) of async-v1/v2 and the timeline (default 4, the seed's)");
  flags.add_int("rounds", &rounds, 0,
                "trig rounds per element (default 0: balance the kernel against the copies)");
  flags.add_int("balance", &balance_percent, 1,
                "with --rounds 0: kernel time as a percentage of one host->device copy of the "
                "whole array (default 125)");
  flags.add_string("sweep", &sweep_text,
                   std::string("chunk counts of the sweep (default ") + kDefaultSweep +
                       "; --quick: " + kQuickSweep + ")");

  return course::run_driver(flags, argc, argv, options, [&](const course::DeviceSummary& gpu) {
    const std::uint64_t bytes =
        options.size ? options.size : (options.quick ? kQuickElements * 4 : kDefaultBytes);
    if (bytes == 0 || bytes % 4 != 0) {
      throw course::UsageError("--size must be a positive multiple of 4 bytes (whole floats)");
    }
    if (chunks > kMaxChunks) {
      throw course::UsageError("--chunks must be at most " + std::to_string(kMaxChunks));
    }
    if (rounds > kMaxRounds) {
      throw course::UsageError("--rounds must be at most " + std::to_string(kMaxRounds));
    }
    std::vector<int> sweep = parse_chunk_list(
        !sweep_text.empty() ? sweep_text : (options.quick ? kQuickSweep : kDefaultSweep));
    if (std::find(sweep.begin(), sweep.end(), chunks) == sweep.end()) sweep.push_back(chunks);
    std::sort(sweep.begin(), sweep.end());
    sweep.erase(std::unique(sweep.begin(), sweep.end()), sweep.end());
    const std::size_t n = bytes / 4;

    const int copy_engines = device_attribute(cudaDevAttrAsyncEngineCount, gpu.ordinal);
    const bool concurrent_kernels =
        device_attribute(cudaDevAttrConcurrentKernels, gpu.ordinal) != 0;
    const int connections = connections_from_environment();
    if (copy_engines < 1) {
      throw course::NoDevice(gpu.name + " has no copy engine: copies cannot overlap kernels");
    }
    const model::Gpu this_gpu = model::current_gpu(gpu.name, copy_engines, connections);

    std::cout << "lesson 14 overlap_transfers: " << n << " floats (" << bytes
              << " bytes) each way; GB/s counts the bytes of both copies\n"
              << "  copy engines " << copy_engines << " (asyncEngineCount), concurrent kernels "
              << (concurrent_kernels ? "yes" : "no") << ", " << connections
              << " hardware queues (CUDA_DEVICE_MAX_CONNECTIONS)\n";
    print_schematic(this_gpu);

    // Pinned host memory: the only kind a copy can overlap anything from.
    course::PinnedBuffer<float> host_in(n), host_out(n);
    course::DeviceBuffer<float> device(n), scratch(n);
    for (std::size_t i = 0; i < n; ++i) host_in[i] = overlap_transfers::input_value(i, kSeed);
    COURSE_CHECK(cudaMemset(scratch.data(), 0, scratch.bytes()));
    COURSE_CHECK(cudaDeviceSynchronize());  // the harness's stream does not wait for it
    std::memset(host_out.data(), 0, host_out.bytes());

    course::Harness harness("14_overlap_transfers", options, gpu);
    const cudaStream_t stream = harness.stream();
    const StreamSet streams(std::max(2, sweep.back()));
    Job job{host_in.data(), device.data(), host_out.data(), n, kQuickRounds, kThreads};
    // Fill the device copy once, and wait, before anything is timed.
    overlap_transfers::issue_operation(Stage::h2d, job, 0, 1, stream);
    COURSE_CHECK(cudaStreamSynchronize(stream));

    const auto time_ms = [&](const std::function<void(cudaStream_t)>& work) {
      return course::time_stream_work(work, stream, harness.warmup(), harness.iters()).median_ms;
    };
    const auto chunk_stage_ms = [&](Stage stage, int chunks) {
      return time_ms([&, stage, chunks](cudaStream_t s) {
               for (int c = 0; c < chunks; ++c) {
                 overlap_transfers::issue_operation(stage, job, c, chunks, s);
               }
             }) /
             chunks;
    };

    // The seed chose its kernel so that copy in, kernel and copy out take about as long as
    // each other. Do the same here, on this GPU: time the kernel at two round counts and
    // pick the rounds that make it --balance percent of one copy in.
    if (rounds > 0) {
      job.rounds = rounds;
    } else if (!options.quick) {
      const double h2d = chunk_stage_ms(Stage::h2d, 1);
      const int low = 8, high = 64;
      job.rounds = low;
      const double t_low = chunk_stage_ms(Stage::kernel, 1);
      job.rounds = high;
      const double t_high = chunk_stage_ms(Stage::kernel, 1);
      const double per_round = (t_high - t_low) / (high - low);
      const double wanted = balance_percent / 100.0 * h2d;
      const double r = per_round > 0 ? low + (wanted - t_low) / per_round : high;
      job.rounds = static_cast<int>(std::lround(
          std::clamp(std::isfinite(r) ? r : high, 1.0, static_cast<double>(kMaxRounds))));
    }
    const double whole_h2d = chunk_stage_ms(Stage::h2d, 1);
    const double whole_kernel = chunk_stage_ms(Stage::kernel, 1);
    const double whole_d2h = chunk_stage_ms(Stage::d2h, 1);
    std::cout << "\n  kernel: " << job.rounds << " trig rounds per element"
              << (rounds > 0 ? " (--rounds)"
                  : options.quick
                      ? " (--quick)"
                      : " (balanced to " + std::to_string(balance_percent) + "% of the copy in)")
              << "; " << kThreads << " threads per block, one thread per element ("
              << overlap_transfers::blocks_for(n, kThreads) << " blocks for the whole array; up to "
              << overlap_transfers::max_blocks_per_sm(kThreads) << " per SM on " << gpu.sm_count
              << " SMs)\n"
              << "  whole array, each operation alone: H2D " << course::fixed(whole_h2d, 4)
              << " ms (" << course::fixed(course::gigabytes_per_second(bytes, whole_h2d), 1)
              << " GB/s), kernel " << course::fixed(whole_kernel, 4) << " ms, D2H "
              << course::fixed(whole_d2h, 4) << " ms ("
              << course::fixed(course::gigabytes_per_second(bytes, whole_d2h), 1) << " GB/s)\n\n";

    std::vector<float> expected(n);
    overlap_transfers::reference(cuda::std::span<const float>(host_in.data(), n), expected,
                                 job.rounds);
    const double tolerance = overlap_transfers::relative_tolerance(job.rounds);

    // Poison both ends, so an element that never made the round trip is caught.
    const auto poison = [&](cudaStream_t s) {
      COURSE_CHECK(cudaStreamSynchronize(s));
      std::memset(host_out.data(), course::kPoisonByte, host_out.bytes());
      course::poison(device.data(), device.bytes(), s);
    };
    // The seed's "max error", and every element checked against the reference.
    const auto check = [&](const std::string& what, bool* passed) {
      const cuda::std::span<const float> actual(host_out.data(), n);
      const course::Comparison c = course::compare_close<float>(expected, actual, tolerance, 0.0);
      double max_error = 0;
      for (std::size_t i = 0; i < n; ++i) {
        max_error = std::max(max_error, std::fabs(double(actual[i]) - double(expected[i])));
      }
      if (passed != nullptr) *passed = c.ok();
      std::ostringstream error;
      error << std::scientific << std::setprecision(3) << max_error;
      std::cout << "  " << std::left << std::setw(32) << what << std::right << " max error "
                << error.str() << (c.ok() ? "" : " (FAIL: " + c.summary() + ")") << "\n";
      return c;
    };

    // ---- The main table: the seed's three versions at --chunks ----------------------------
    // The reference: the two copies alone, at the same time on two streams. No order of the
    // work can beat moving the bytes.
    const std::function<void(cudaStream_t)> copies_only = [&](cudaStream_t s) {
      streams.fork_from(s, 2);
      COURSE_CHECK(cudaMemcpyAsync(device.data(), host_in.data(), bytes, cudaMemcpyHostToDevice,
                                   streams[0]));
      COURSE_CHECK(cudaMemcpyAsync(host_out.data(), scratch.data(), bytes, cudaMemcpyDeviceToHost,
                                   streams[1]));
      streams.join_into(s, 2);
    };
    harness.reference("copies only", 2.0 * bytes, copies_only);
    harness.baseline("sequential");
    harness.headline("async-v1");
    std::map<Order, bool> passed;
    for (Order order : kOrders) {
      const std::string name = overlap_transfers::order_name(order);
      const std::string label =
          order == Order::sequential ? name : name + " (" + std::to_string(chunks) + " chunks)";
      harness.run({name, 2.0 * bytes,
                   [&, order](cudaStream_t s) {
                     overlap_transfers::transfer_and_compute(order, job, chunks, streams, s);
                   },
                   poison, [&, order, label] { return check(label, &passed[order]); }});
    }

    if (!options.variant.empty()) {
      std::cout << "(--variant: no sweep, timeline or targets)\n";
      return harness.finish();
    }
    if (!passed[Order::per_chunk] || !passed[Order::by_operation]) {
      std::cout << "\nasync-v1 and async-v2 must pass their checks before the sweep, the "
                   "timeline and the targets mean anything: fix them first.\n";
      return harness.finish();
    }

    // ---- The sweep: measured against the model, chunk count by chunk count ----------------
    const double sequential_ms = time_ms([&](cudaStream_t s) {
      overlap_transfers::transfer_and_compute(Order::sequential, job, 1, streams, s);
    });
    const double copies_only_ms = time_ms(copies_only);
    std::map<int, model::StageTimes> stage_times;
    std::vector<SweepRow> rows;
    for (int c : sweep) {
      const model::StageTimes t{chunk_stage_ms(Stage::h2d, c), chunk_stage_ms(Stage::kernel, c),
                                chunk_stage_ms(Stage::d2h, c)};
      stage_times[c] = t;
      for (Order order : kAsyncOrders) {
        SweepRow row;
        row.chunks = c;
        row.order = order;
        row.stage = t;
        poison(stream);
        overlap_transfers::transfer_and_compute(order, job, c, streams, stream);
        COURSE_CHECK(cudaStreamSynchronize(stream));
        const course::Comparison cmp = course::compare_close<float>(
            expected, cuda::std::span<const float>(host_out.data(), n), tolerance, 0.0);
        row.passed = cmp.ok();
        if (!row.passed) {
          std::cerr << overlap_transfers::order_name(order) << " x" << c << ": " << cmp.summary()
                    << "\n";
        }
        row.measured_ms = time_ms([&, order, c](cudaStream_t s) {
          overlap_transfers::transfer_and_compute(order, job, c, streams, s);
        });
        row.model_ms = model::predict(this_gpu, order, c, t);
        // The best any order can do with these stage times: the first chunk all the way
        // through, then the slowest engine busy with every other chunk.
        row.bound_ms = model::pipeline_bound(c, t);
        rows.push_back(row);
      }
    }

    std::cout << "\nChunk sweep (sequential " << course::fixed(sequential_ms, 4)
              << " ms, copies only " << course::fixed(copies_only_ms, 4)
              << " ms). Stage times: one chunk's operation in steady state (all chunks of the\n"
                 "stage back to back in one stream, / chunks). model: this GPU's engine queues "
                 "fed with those times;\nbound: the best any order can do with them (the first "
                 "chunk's three stages + the slowest stage for every\nother chunk).\n";
    std::cout << std::right << std::setw(6) << "chunks" << std::setw(10) << "order" << std::setw(10)
              << "H2D ms" << std::setw(11) << "kernel ms" << std::setw(10) << "D2H ms"
              << std::setw(13) << "measured ms" << std::setw(10) << "model ms" << std::setw(10)
              << "bound ms" << std::setw(9) << "x model" << std::setw(9) << "x bound"
              << std::setw(8) << "x seq" << std::setw(7) << "check"
              << "\n";
    bool sweep_passed = true;
    for (const SweepRow& r : rows) {
      sweep_passed = sweep_passed && r.passed;
      std::cout << std::setw(6) << r.chunks << std::setw(10)
                << overlap_transfers::order_name(r.order) << std::setw(10)
                << course::fixed(r.stage.h2d, 4) << std::setw(11)
                << course::fixed(r.stage.kernel, 4) << std::setw(10)
                << course::fixed(r.stage.d2h, 4) << std::setw(13) << course::fixed(r.measured_ms, 4)
                << std::setw(10) << course::fixed(r.model_ms, 4) << std::setw(10)
                << course::fixed(r.bound_ms, 4) << std::setw(9)
                << ratio(r.measured_ms, r.model_ms, 3) << std::setw(9)
                << ratio(r.measured_ms, r.bound_ms, 3) << std::setw(8)
                << ratio(sequential_ms, r.measured_ms, 2) << std::setw(7)
                << (r.passed ? "PASS" : "FAIL") << "\n";
    }

    // ---- What the seed's GPUs would have done with this run's chunks ----------------------
    const model::StageTimes at_chunks = stage_times[chunks];
    std::cout << "\nThe model with this run's stage times at " << chunks << " chunks (H2D "
              << course::fixed(at_chunks.h2d, 4) << ", kernel "
              << course::fixed(at_chunks.kernel, 4) << ", D2H " << course::fixed(at_chunks.d2h, 4)
              << " ms per chunk), in ms:\n";
    std::cout << "  " << std::left << std::setw(40) << "GPU" << std::right << std::setw(12)
              << "sequential" << std::setw(12) << "async-v1" << std::setw(12) << "async-v2"
              << "\n";
    for (const model::Gpu& g :
         {model::tesla_c1060(), model::tesla_c2050(), model::tesla_k20(), this_gpu}) {
      std::cout << "  " << std::left << std::setw(40) << ("model: " + g.name) << std::right;
      for (Order order : kOrders) {
        std::cout << std::setw(12) << course::fixed(model::predict(g, order, chunks, at_chunks), 4);
      }
      std::cout << "\n";
    }
    std::cout << "  " << std::left << std::setw(40) << ("measured: " + gpu.name) << std::right
              << std::setw(12) << course::fixed(sequential_ms, 4);
    for (const SweepRow& r : rows) {
      if (r.chunks == chunks) std::cout << std::setw(12) << course::fixed(r.measured_ms, 4);
    }
    std::cout << "\n";

    // ---- The timeline: an event before and after every operation of one V1 and one V2 run --
    struct TimelineRow {
      std::string source;
      Order order;
      int chunk;
      Stage stage;
      double ready, start, end;
    };
    std::vector<TimelineRow> timeline_rows;
    std::cout << "\nTimeline at " << chunks
              << " chunks (ms since the first operation was ready):\n";
    for (Order order : kAsyncOrders) {
      overlap_transfers::Timeline timeline;
      poison(stream);
      overlap_transfers::transfer_and_compute(order, job, chunks, streams, stream, &timeline);
      COURSE_CHECK(cudaStreamSynchronize(stream));
      bool ok = false;
      check(std::string(overlap_transfers::order_name(order)) + " (timeline run)", &ok);
      sweep_passed = sweep_passed && ok;
      double measured_end = 0;
      for (const auto& op : timeline.read()) {
        timeline_rows.push_back(
            {"measured", order, op.chunk, op.stage, op.ready_ms, op.start_ms, op.end_ms});
        measured_end = std::max(measured_end, op.end_ms);
      }
      const auto predicted =
          model::simulate(model::issue_order(order, chunks, at_chunks), this_gpu);
      for (const auto& s : predicted) {
        timeline_rows.push_back({"model", order, s.op.chunk, s.op.stage, s.ready, s.start, s.end});
      }
      std::cout << "  " << std::left << std::setw(10) << overlap_transfers::order_name(order)
                << std::right << " last operation ends at " << course::fixed(measured_end, 4)
                << " ms; model " << course::fixed(model::makespan(predicted), 4) << " ms\n";
    }

    if (!options.csv.empty()) {
      const std::string sweep_csv = derived_csv(options.csv, "sweep");
      std::ofstream out(sweep_csv);
      out << "lesson,gpu,chunks,order,h2d_ms,kernel_ms,d2h_ms,measured_ms,model_ms,bound_ms,"
             "sequential_ms,copies_only_ms,check\n";
      for (const SweepRow& r : rows) {
        out << "14_overlap_transfers," << course::csv_field(gpu.name) << "," << r.chunks << ","
            << overlap_transfers::order_name(r.order) << "," << course::fixed(r.stage.h2d, 6) << ","
            << course::fixed(r.stage.kernel, 6) << "," << course::fixed(r.stage.d2h, 6) << ","
            << course::fixed(r.measured_ms, 6) << "," << course::fixed(r.model_ms, 6) << ","
            << course::fixed(r.bound_ms, 6) << "," << course::fixed(sequential_ms, 6) << ","
            << course::fixed(copies_only_ms, 6) << "," << (r.passed ? "PASS" : "FAIL") << "\n";
      }
      const std::string timeline_csv = derived_csv(options.csv, "timeline");
      std::ofstream tl(timeline_csv);
      tl << "lesson,gpu,source,order,chunks,chunk,stage,ready_ms,start_ms,end_ms\n";
      for (const TimelineRow& r : timeline_rows) {
        tl << "14_overlap_transfers," << course::csv_field(gpu.name) << "," << r.source << ","
           << overlap_transfers::order_name(r.order) << "," << chunks << "," << r.chunk << ","
           << overlap_transfers::stage_name(r.stage) << "," << course::fixed(r.ready, 6) << ","
           << course::fixed(r.start, 6) << "," << course::fixed(r.end, 6) << "\n";
      }
      if (!out || !tl)
        throw std::runtime_error("could not write " + sweep_csv + " or " + timeline_csv);
      std::cout << "  wrote " << sweep_csv << " (tools/plot_overlap_sweep.py) and " << timeline_csv
                << " (tools/plot_timeline.py)\n";
    }
    if (!sweep_passed) {
      throw std::runtime_error("runs of the sweep or the timeline failed their checks (see above)");
    }

    // ---- The targets -----------------------------------------------------------------------
    const SweepRow* best = nullptr;
    for (const SweepRow& r : rows) {
      if (r.chunks >= 2 && (best == nullptr || r.measured_ms < best->measured_ms)) best = &r;
    }
    std::cout << "\n";
    if (best != nullptr && best->measured_ms > 0 && best->bound_ms > 0) {
      const std::string who = std::string("best async (") +
                              overlap_transfers::order_name(best->order) + ", " +
                              std::to_string(best->chunks) + " chunks)";
      const double speedup = sequential_ms / best->measured_ms;
      const double of_bound = best->measured_ms / best->bound_ms;
      std::cout << "TARGET: " << who << " >= " << course::fixed(kMinSpeedup, 2)
                << " x faster than sequential: " << (speedup >= kMinSpeedup ? "met" : "MISSED")
                << " (" << course::fixed(speedup, 3) << ")\n";
      std::cout << "TARGET: " << who << " <= " << course::fixed(kMaxOfBound, 2)
                << " x the model's bound: " << (of_bound <= kMaxOfBound ? "met" : "MISSED") << " ("
                << course::fixed(of_bound, 3) << ")\n";
    }
    return harness.finish();
  });
}
