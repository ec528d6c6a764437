// Lesson 16's exercise file compiled against the test doubles (16_peer_to_peer.h says why).
// Every header comes first, with the runtime's real declarations; then record_calls.h
// redirects the CUDA calls written after it to the doubles, and the lesson's namespace is
// renamed, so that this second copy of the exercise links beside the first (which the GPU
// tests call). COURSE_RECORDED_EXERCISE names the starter's file or the solution's
// (tests/CMakeLists.txt).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "16_peer_to_peer.h"
#include "course/check.h"
#include "course/launch.h"
#include "halo_model.h"
#include "record_calls.h"

#define peer_to_peer peer_to_peer_recorded
#include COURSE_RECORDED_EXERCISE

namespace {

namespace schedule = course::testing::schedule;
course::testing::recorded16::HaloRun* g_halo_run = nullptr;  // where the ring's doubles file ops

/// Rows [first, first + count) of a ring buffer, as an access: "rows 0-1 (top halo)".
schedule::Access rows_of(const std::uint32_t* buffer, const halo::RingLayout& layout, int first,
                         int count, bool write) {
  const std::size_t row_bytes = static_cast<std::size_t>(layout.width) * 4;
  schedule::Access a = schedule::active().access(
      buffer + static_cast<std::size_t>(first) * static_cast<std::size_t>(layout.width),
      static_cast<std::size_t>(count) * row_bytes, write);
  const int last = first + count - 1, r = layout.radius;
  std::string parts;
  const auto add = [&](const char* part) {
    parts += (parts.empty() ? "" : " and ") + std::string(part);
  };
  if (first < r) add("top halo");
  if (first < r + layout.rows && last >= r) add("interior");
  if (last >= r + layout.rows) add("bottom halo");
  a.what = "rows " + std::to_string(first) + "-" + std::to_string(last) + " (" + parts + ")";
  return a;
}

/// Files operation `id` of GPU `g` under this step of the run being recorded.
void file_op(std::vector<std::vector<std::vector<int>>> course::testing::recorded16::HaloRun::*list,
             int g, int id) {
  if (g_halo_run == nullptr) return;
  const int step = schedule::active().round();
  if (step < 0) return;
  auto& steps = g_halo_run->*list;
  if (steps.size() <= static_cast<std::size_t>(step)) {
    steps.resize(static_cast<std::size_t>(step) + 1,
                 std::vector<std::vector<int>>(static_cast<std::size_t>(g_halo_run->gpus)));
  }
  steps[static_cast<std::size_t>(step)][static_cast<std::size_t>(g)].push_back(id);
}

/// Throws for a GPU the ring does not have (the real ring would index past its vectors).
void check_gpu(const char* what, int g, int gpus) {
  if (g < 0 || g >= gpus) {
    throw std::out_of_range(std::string(what) + "(" + std::to_string(g) + "): a ring of " +
                            std::to_string(gpus) + " GPUs has no GPU " + std::to_string(g));
  }
}

/// "step 1: push_halos(2)".
std::string step_name(const char* what, int g) {
  return "step " + std::to_string(schedule::active().round()) + ": " + what + "(" +
         std::to_string(g) + ")";
}

[[noreturn]] void not_recorded(const char* what) {
  throw std::logic_error(std::string(what) +
                         " is not part of the exercise's schedule (the recorded test has no "
                         "double of it)");
}

}  // namespace

// ---- Doubles of the read-only rest of the lesson's API (given/peer_to_peer_launch.cu) -------

namespace peer_to_peer {

HaloRing::HaloRing(const std::vector<int>& devices, const halo::RingLayout& layout, int rounds)
    : devices_(devices), layout_(layout), rounds_(rounds) {
  auto& m = schedule::active();
  const int n = size();
  for (int g = 0; g < n; ++g) {
    const std::string gpu = "GPU " + std::to_string(g);
    for (int which = 0; which < 2; ++which) {
      buffers_.push_back(static_cast<std::uint32_t*>(m.new_buffer(
          gpu + "'s buffer " + std::to_string(which), devices_[g], layout_.buffer_words() * 4)));
    }
    compute_.push_back(m.new_stream("the compute stream of " + gpu, devices_[g]));
    copy_.push_back(m.new_stream("the copy stream of " + gpu, devices_[g]));
    computed_.push_back(m.new_event("computed(" + std::to_string(g) + ")", devices_[g]));
    sent_.push_back(m.new_event("sent(" + std::to_string(g) + ")", devices_[g]));
  }
}

HaloRing::~HaloRing() = default;

void HaloRing::push_halos(int g) {
  check_gpu("push_halos", g, size());
  const int r = layout_.radius, rows = layout_.rows;
  const std::uint32_t* mine = buffer(g, current_);
  const int id = schedule::active().enqueue(
      copy_[g], step_name("push_halos", g),
      {rows_of(mine, layout_, r, r, false), rows_of(mine, layout_, rows, r, false),
       rows_of(buffer(left(g), current_), layout_, rows + r, r, true),
       rows_of(buffer(right(g), current_), layout_, 0, r, true)});
  file_op(&course::testing::recorded16::HaloRun::push, g, id);
}

void HaloRing::compute_interior(int g) {
  check_gpu("compute_interior", g, size());
  const int r = layout_.radius, rows = layout_.rows;
  const int id = schedule::active().enqueue(
      compute_[g], step_name("compute_interior", g),
      {rows_of(buffer(g, current_), layout_, r, rows, false),
       rows_of(buffer(g, current_ ^ 1), layout_, 2 * r, rows - 2 * r, true)});
  file_op(&course::testing::recorded16::HaloRun::interior, g, id);
}

void HaloRing::compute_boundary(int g) {
  check_gpu("compute_boundary", g, size());
  const int r = layout_.radius, rows = layout_.rows;
  const std::uint32_t* in = buffer(g, current_);
  std::uint32_t* out = buffer(g, current_ ^ 1);
  const int id = schedule::active().enqueue(
      compute_[g], step_name("compute_boundary", g),
      {rows_of(in, layout_, 0, 3 * r, false), rows_of(in, layout_, rows - r, 3 * r, false),
       rows_of(out, layout_, r, r, true), rows_of(out, layout_, rows, r, true)});
  file_op(&course::testing::recorded16::HaloRun::boundary, g, id);
}

void HaloRing::load(const std::vector<std::uint32_t>& /*grid*/) {
  // As the real load: both buffers written on the compute stream, waited for, and every
  // event recorded once.
  auto& m = schedule::active();
  current_ = 0;
  for (int g = 0; g < size(); ++g) {
    const std::size_t bytes = layout_.buffer_words() * 4;
    m.enqueue(compute_[g], "HaloRing::load(GPU " + std::to_string(g) + ")",
              {m.access(buffer(g, 0), bytes, true), m.access(buffer(g, 1), bytes, true)});
    m.host_wait_stream("HaloRing::load: cudaStreamSynchronize", compute_[g]);
    m.record(computed_[g], compute_[g]);
    m.record(sent_[g], copy_[g]);
  }
}

void HaloRing::synchronize() const {
  auto& m = schedule::active();
  for (int g = 0; g < size(); ++g) {
    m.host_wait_stream("HaloRing::synchronize: cudaStreamSynchronize", compute_[g]);
    m.host_wait_stream("HaloRing::synchronize: cudaStreamSynchronize", copy_[g]);
  }
}

std::vector<std::uint32_t> HaloRing::gather() const { not_recorded("HaloRing::gather()"); }

BothWaysResources::BothWaysResources(int a, int b) : a_(a), b_(b) {
  not_recorded("BothWaysResources");
}
BothWaysResources::~BothWaysResources() = default;
BothWays BothWaysResources::make(const void*, void*, const void*, void*, std::size_t) const {
  not_recorded("BothWaysResources::make()");
}

std::string describe(const PeerLink&) { not_recorded("describe()"); }
std::string describe_pointer(const void*) { not_recorded("describe_pointer()"); }
const char* name(Width) { not_recorded("name(Width)"); }
course::Launch prepare_copy(Width, const void*, void*, std::size_t, int, int, int) {
  not_recorded("prepare_copy()");
}
course::Launch prepare_cp_async_copy(const void*, void*, std::size_t, int, int) {
  not_recorded("prepare_cp_async_copy()");
}
void exchange_only(HaloRing&) { not_recorded("exchange_only()"); }
void compute_only(HaloRing&) { not_recorded("compute_only()"); }

}  // namespace peer_to_peer

// ---- The scenarios ------------------------------------------------------------------------------

namespace course::testing::recorded16 {

ConnectRun run_connect(const ConnectSetup& setup) {
  schedule::Recorder m(2);
  const schedule::Recording recording(m);
  m.current_device = setup.current;
  if (setup.ab_enabled) m.peer_enabled.insert({0, 1});
  if (setup.ba_enabled) m.peer_enabled.insert({1, 0});
  if (setup.failing.first >= 0) m.enable_failures[setup.failing] = setup.failure;
  ConnectRun run;
  try {
    const peer_to_peer::PeerLink link = peer_to_peer::connect(0, 1);
    run.ab_was_enabled = link.ab.was_enabled;
    run.ba_was_enabled = link.ba.was_enabled;
  } catch (const std::exception& e) {
    run.threw = e.what();
  }
  run.ab_enabled = m.peer_enabled.count({0, 1}) != 0;
  run.ba_enabled = m.peer_enabled.count({1, 0}) != 0;
  run.current_after = m.current_device;
  run.last_error_after = m.last_error;
  run.calls = m.calls;
  return run;
}

BothWaysRun run_both_directions() {
  BothWaysRun run;
  schedule::Recorder& m = run.record;
  const schedule::Recording recording(m);
  m.current_device = 0;
  run.bytes = 4096;
  run.stream_a = m.new_stream("stream_a (GPU 0)", 0);
  run.stream_b = m.new_stream("w.stream_b (GPU 1)", 1);
  peer_to_peer::BothWays w;
  w.a = 0;
  w.b = 1;
  w.src_a = m.new_buffer("src_a (GPU 0)", 0, run.bytes);
  w.dst_b = m.new_buffer("dst_b (GPU 1)", 1, run.bytes);
  w.src_b = m.new_buffer("src_b (GPU 1)", 1, run.bytes);
  w.dst_a = m.new_buffer("dst_a (GPU 0)", 0, run.bytes);
  run.src_a = 0, run.dst_b = 1, run.src_b = 2, run.dst_a = 3;
  w.bytes = run.bytes;
  w.stream_b = run.stream_b;
  w.fork = m.new_event("w.fork (GPU 0)", 0);
  w.join = m.new_event("w.join (GPU 1)", 1);
  const auto all = [&](bool sources_written) {
    return std::vector<schedule::Access>{m.access(w.src_a, run.bytes, sources_written),
                                         m.access(w.src_b, run.bytes, sources_written),
                                         m.access(w.dst_a, run.bytes, false),
                                         m.access(w.dst_b, run.bytes, false)};
  };
  run.earlier = m.enqueue(run.stream_a, "the work already on stream_a", all(true));
  run.first = static_cast<int>(m.operations().size());
  try {
    peer_to_peer::issue_both_directions(w, run.stream_a);
  } catch (const std::exception& e) {
    run.threw = e.what();
  }
  run.end = static_cast<int>(m.operations().size());
  run.later = m.enqueue(run.stream_a, "the work enqueued on stream_a after the call", all(true));
  return run;
}

HaloRun run_halo_steps(int gpus, int steps) {
  HaloRun run(gpus);
  schedule::Recorder& m = run.record;
  const schedule::Recording recording(m);
  g_halo_run = &run;
  const halo::RingLayout layout{gpus, 8, 4, 2};
  std::vector<int> devices(static_cast<std::size_t>(gpus));
  std::iota(devices.begin(), devices.end(), 0);
  try {
    peer_to_peer::HaloRing ring(devices, layout, 1);
    ring.load({});
    for (int s = 0; s < steps; ++s) {
      m.set_round(s);
      for (auto* list : {&run.push, &run.interior, &run.boundary}) {
        list->resize(static_cast<std::size_t>(s) + 1,
                     std::vector<std::vector<int>>(static_cast<std::size_t>(gpus)));
      }
      run.step_begin.push_back(static_cast<int>(m.operations().size()));
      peer_to_peer::halo_step(ring);
      run.step_end.push_back(static_cast<int>(m.operations().size()));
      std::vector<int> computed, sent;
      for (int g = 0; g < gpus; ++g) {
        computed.push_back(m.last_record(ring.computed(g)));
        sent.push_back(m.last_record(ring.sent(g)));
      }
      run.computed_record.push_back(computed);
      run.sent_record.push_back(sent);
    }
  } catch (const std::exception& e) {
    run.threw = e.what();
  }
  g_halo_run = nullptr;
  return run;
}

}  // namespace course::testing::recorded16
