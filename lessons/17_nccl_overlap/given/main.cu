// Lesson 17 driver: one process per GPU. Started without --rank, it is rank 0: it makes the
// NCCL unique id, starts ranks 1 .. n-1 of the same program with the id as hex, and prints
// the report; every rank runs the same steps (a collective needs every rank). Part 1: the
// collectives' bus bandwidth against a peer copy; Part 2: the two tensor-parallel layers,
// sequential and overlapped, checked against one-GPU cuBLAS; the SM cost of overlap; the
// engine-queue bound; the targets.
#include <iostream>
#include <string>
#include <vector>

#include "course/check.h"
#include "course/harness.h"
#include "course/multi_gpu.h"
#include "course/ranks.h"
#include "nccl_overlap.cuh"
#include "nccl_overlap_run.h"

namespace {
constexpr const char* kLesson = "17_nccl_overlap";
}  // namespace

int main(int argc, char** argv) {
  namespace no = nccl_overlap;
  course::CommonOptions options;
  no::RunSettings run;
  std::string chunk_list, cta_list, id_hex;
  int rank = -1, shard_rows = 0, k = 0, n_local = 0, k_local = 0, n_out = 0;
  course::FlagParser flags(
      kLesson,
      "Lesson 17: NCCL collectives from C++, one process per GPU (this program starts its\n"
      "own ranks on one host), and a tensor-parallel layer both ways: Y = all-gather(X) W_r\n"
      "and Z = reduce-scatter(A_r B_r), sequential and with the collective cut into chunks\n"
      "that overlap the GEMMs. Needs two GPUs and NCCL; sets NCCL_NVLS_ENABLE=0 unless set.");
  flags.add_common(options, "bytes of each collective's buffer in Part 1 (default 256M)",
                   no::variant_names());
  flags.add_int("nranks", &run.ranks, 2, "ranks (GPUs) in all, 2 to 8 (default 2)");
  flags.add_int("rank", &rank, 0, "this process's rank (set by rank 0 or a launcher)");
  flags.add_string("nccl-id", &id_hex, "the NCCL unique id as hex (set with --rank)");
  flags.add_int("rows", &shard_rows, 1, "rows of X and Z per rank (default 8192; --quick 37)");
  flags.add_int("k", &k, 1, "all-gather layer: columns of X (default 4096)");
  flags.add_int("n-local", &n_local, 1, "all-gather layer: columns of W_r (default 192)");
  flags.add_int("k-local", &k_local, 1, "reduce-scatter layer: columns of A_r (default 192)");
  flags.add_int("n-out", &n_out, 1, "reduce-scatter layer: columns of Z (default 4096)");
  flags.add_string("chunks", &chunk_list, "chunk counts (default 1,2,4,8; --quick 1,3)");
  flags.add_string("ctas", &cta_list, "maxCTAs of the contention rows (default 0,16,4; 0: NCCL's)");

  ncclUniqueId id{};
  auto validate = [&] {
    if (run.ranks < 2 || run.ranks > no::kMaxRanks) {
      throw course::UsageError("--nranks must be in [2, 8], got " + std::to_string(run.ranks));
    }
    if ((rank >= 0) != !id_hex.empty()) {
      throw course::UsageError("--rank and --nccl-id go together (rank 0 sets both)");
    }
    if (rank >= run.ranks) throw course::UsageError("--rank must be < --nranks");
    if (rank >= 0) {
      try {
        id = no::decode_unique_id(id_hex);
      } catch (const std::invalid_argument& e) {
        throw course::UsageError(std::string("--nccl-id: ") + e.what());
      }
    }
    run.rank = rank < 0 ? 0 : rank;
    run.launcher = rank < 0;
    run.first_device = options.device;
    if (run.rank > 0) options.csv.clear();  // rank 0 writes the CSVs
    options.device += run.rank;             // rank r drives GPU first + r
    no::complete_settings(run, options, shard_rows, k, n_local, k_local, n_out, chunk_list,
                          cta_list);
  };
  // Before any NCCL call, in this process and (inherited) in every rank it starts.
  course::set_nccl_nvls_off();

  std::vector<std::string> args(argv + 1, argv + argc);
  auto body = [&](const course::DeviceSummary& gpu) {
    course::ranks::Started others;  // an exception stops them: they would wait for this rank
    if (run.launcher) {
      course::open_devices(run.ranks, "lesson 17 (one process per GPU)", run.first_device);
      COURSE_NCCL_CHECK(ncclGetUniqueId(&id));
      others = no::start_ranks(course::ranks::own_executable(argv[0]), args, run.ranks,
                               no::encode_unique_id(id));
      others.watch();
    }
    if (!run.launcher) course::ranks::end_with_parent();
    course::Harness harness(kLesson, options, gpu);
    const int code = no::run_lesson(harness, gpu, options, run, id);
    const int ranks_code = others.wait();
    return code != 0 ? code : (ranks_code == 0 ? 0 : 1);
  };
  return course::run_driver(flags, argc, argv, options, body, validate);
}
