// Lesson 17 driver: one process per GPU. Started without --rank, it is rank 0: it makes the
// NCCL unique id, starts ranks 1 .. n-1 of the same program with the id as hex, and prints
// the report; every rank runs the same steps (a collective needs every rank). Part 1: the
// collectives' bus bandwidth against a peer copy; Part 2: the two tensor-parallel layers,
// sequential and overlapped, checked against one-GPU cuBLAS; the SM cost of overlap; the
// engine-queue bound; the targets.
//
// Read it in this order: Settings and the plan (nccl_overlap_driver.h: the flags as given,
// every size and count as a number; plan_of in nccl_overlap_run.cu), run() and run_this_rank()
// (one line per part of the output), the ranks and the communicator here, then the parts:
// parts_collectives.cu (Part 1), parts_layers.cu (Part 2), parts_contention.cu,
// parts_timeline.cu and parts_targets.cu.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "course/check.h"
#include "course/flags.h"
#include "course/harness.h"
#include "course/multi_gpu.h"
#include "course/ranks.h"
#include "nccl_overlap.cuh"
#include "nccl_overlap_driver.h"

namespace nccl_overlap::driver {
namespace {

void add_flags(course::FlagParser& flags, Settings& s);

// The steps of this file, in the order they run.
course::ranks::Started start_other_ranks(const Plan& plan, ncclUniqueId& id);
int run_this_rank(course::Harness& harness, const Plan& plan, const course::DeviceSummary& gpu,
                  const ncclUniqueId& id);
Comm open_communicator(const Plan& plan, const ncclUniqueId& id);

/// The whole run of this process: the ranks it starts (rank 0 only), its own parts, then the
/// verdict of every rank.
int run(const Plan& plan, const course::DeviceSummary& gpu) {
  ncclUniqueId id = plan.id;  // a started rank's, from --nccl-id; rank 0 makes it below
  course::ranks::Started others = start_other_ranks(plan, id);  // an exception stops them
  course::Harness harness(kLesson, plan.options, gpu);
  const int code = run_this_rank(harness, plan, gpu, id);  // every part, below
  const int ranks_code = others.wait();                    // rank 0: the others' exit codes
  return code != 0 ? code : (ranks_code == 0 ? 0 : 1);
}

/// This rank's parts, one line per part of the output. Every buffer lives until the parts
/// end, then the communicator goes last (before rank 0 waits for the other ranks).
int run_this_rank(course::Harness& harness, const Plan& plan, const course::DeviceSummary& gpu,
                  const ncclUniqueId& id) {
  Comm comm = open_communicator(plan, id);  // every rank joins; the line naming NCCL
  Part1 p1(plan.collective_count, plan.ranks, plan.rank, harness.stream());  // Part 1's data
  PeerCopy peer_copy;
  if (plan.rank == 0) run_peer_reference(harness, gpu, plan, peer_copy);  // Part 1's yardstick
  run_part1(harness, p1, comm.get());            // the three collectives (parts_collectives.cu)
  Part2 p2(plan, comm.get(), harness.stream());  // Part 2's data: both layers, references
  const LayerResults results = run_layers(harness, p2, plan);  // Part 2 (parts_layers.cu)
  const double default_slowdown = measure_sm_contention(harness, p2, plan, comm.get());
  write_timeline(p2, gpu, plan, results);                 // parts_timeline.cu
  add_layer_targets(harness, results, default_slowdown);  // parts_targets.cu
  return harness.finish();  // the tables, HEADLINE, TARGET lines, RESULT
}

// ---- The flags ---------------------------------------------------------------------------------

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options,
                   "bytes of each collective's buffer in Part 1 (default " +
                       std::to_string(kDefaultBytes >> 20) + "M)",
                   variant_names());
  flags.add_int("nranks", &s.ranks, kMinRanks,
                "ranks (GPUs) in all, " + std::to_string(kMinRanks) + " to " +
                    std::to_string(kMaxRanks) + " (default " + std::to_string(kDefaultRanks) + ")");
  flags.add_int("rank", &s.rank, 0, "this process's rank (set by rank 0 or a launcher)");
  flags.add_string("nccl-id", &s.id_hex, "the NCCL unique id as hex (set with --rank)");
  flags.add_int("rows", &s.shard_rows, 1,
                "rows of X and Z per rank (default " + std::to_string(kRows) + "; --quick " +
                    std::to_string(kQuickRows) + ")");
  flags.add_int("k", &s.k, 1,
                "all-gather layer: columns of X (default " + std::to_string(kK) + ")");
  flags.add_int("n-local", &s.n_local, 1,
                "all-gather layer: columns of W_r (default " + std::to_string(kNLocal) + ")");
  flags.add_int("k-local", &s.k_local, 1,
                "reduce-scatter layer: columns of A_r (default " + std::to_string(kKLocal) + ")");
  flags.add_int("n-out", &s.n_out, 1,
                "reduce-scatter layer: columns of Z (default " + std::to_string(kNOut) + ")");
  flags.add_string(
      "chunks", &s.chunk_list,
      std::string("chunk counts (default ") + kDefaultChunks + "; --quick " + kQuickChunks + ")");
  flags.add_string(
      "ctas", &s.cta_list,
      std::string("maxCTAs of the contention rows (default ") + kDefaultCtas + "; 0: NCCL's)");
}

// ---- The ranks and the communicator ------------------------------------------------------------

/// Rank 0 started without --rank (the launcher): opens every rank's GPU (a machine with too
/// few says so, exit 77, before any rank starts), makes the id into `id`, starts ranks
/// 1 .. n-1 and watches them. A started rank asks to end with its parent and starts none.
course::ranks::Started start_other_ranks(const Plan& plan, ncclUniqueId& id) {
  if (!plan.launcher) {
    course::ranks::end_with_parent();
    return {};
  }
  course::open_devices(plan.ranks, "lesson 17 (one process per GPU)", plan.first_device);
  COURSE_NCCL_CHECK(ncclGetUniqueId(&id));
  course::ranks::Started started =
      start_ranks(plan.exe, plan.args, plan.ranks, encode_unique_id(id));
  started.watch();
  return started;
}

/// This rank's communicator (every rank calls it with the same id), and the line naming NCCL.
Comm open_communicator(const Plan& plan, const ncclUniqueId& id) {
  const ncclConfig_t defaults = NCCL_CONFIG_INITIALIZER;
  Comm comm = own(init_communicator(id, plan.rank, plan.ranks, defaults));
  int version = 0;
  COURSE_NCCL_CHECK(ncclGetVersion(&version));
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  std::cout << "lesson 17: " << plan.ranks << " ranks (one process per GPU), NCCL " << version
            << ", NCCL_NVLS_ENABLE=" << (nvls != nullptr ? nvls : "(unset)") << "\n";
  return comm;
}

}  // namespace
}  // namespace nccl_overlap::driver

int main(int argc, char** argv) {
  namespace driver = nccl_overlap::driver;
  driver::Settings settings;
  driver::Plan plan;
  course::FlagParser flags(
      driver::kLesson,
      "Lesson 17: NCCL collectives from C++, one process per GPU (this program starts its\n"
      "own ranks on one host), and a tensor-parallel layer both ways: Y = all-gather(X) W_r\n"
      "and Z = reduce-scatter(A_r B_r), sequential and with the collective cut into chunks\n"
      "that overlap the GEMMs. Needs two GPUs and NCCL; sets NCCL_NVLS_ENABLE=0 unless set.");
  driver::add_flags(flags, settings);
  settings.exe = course::ranks::own_executable(argv[0]);
  settings.args.assign(argv + 1, argv + argc);
  // Before any NCCL call, in this process and (inherited) in every rank it starts.
  course::set_nccl_nvls_off();
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return driver::run(plan, gpu); },
      [&] {
        plan = driver::plan_of(settings);
        // run_driver probes this rank's --csv and opens its GPU (--device + rank).
        settings.options = plan.options;
      });
}
