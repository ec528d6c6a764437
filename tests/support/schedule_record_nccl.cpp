#include "schedule_record_nccl.h"

#include <cstdint>
#include <stdexcept>

#include "schedule_record.h"

namespace course::testing::schedule {

namespace {
NcclMachine* g_nccl = nullptr;
}  // namespace

NcclMachine::NcclMachine(int ranks)
    : ranks_(ranks), comm_(reinterpret_cast<ncclComm_t>(std::uintptr_t{0x7c0000001000})) {
  if (g_nccl != nullptr) throw std::logic_error("an NcclMachine is already active");
  g_nccl = this;
}

NcclMachine::~NcclMachine() { g_nccl = nullptr; }

NcclMachine& active_nccl() {
  if (g_nccl == nullptr) {
    throw std::logic_error(
        "an NCCL call was redirected to the test doubles without an NcclMachine");
  }
  return *g_nccl;
}

}  // namespace course::testing::schedule

namespace course::testing::doubles {

namespace {

using schedule::active;
using schedule::active_nccl;

std::size_t type_bytes(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 4;
  }
}

/// Issues a collective to `stream` now, or at ncclGroupEnd inside a group.
ncclResult_t collective(const std::string& name, const void* send, std::size_t send_bytes,
                        void* recv, std::size_t recv_bytes, ncclComm_t comm, cudaStream_t stream) {
  auto& nccl = active_nccl();
  auto& m = active();
  if (comm != nccl.comm() || !m.knows(stream)) return ncclInvalidArgument;
  const schedule::Access written = m.access(recv, recv_bytes, true);
  const std::string what =
      written.buffer < 0
          ? name
          : name + " into " + m.buffers()[static_cast<std::size_t>(written.buffer)].name;
  auto issue = [&m, what, send, send_bytes, written, stream] {
    m.enqueue(stream, what, {m.access(send, send_bytes, false), written});
  };
  if (nccl.group_depth > 0) {
    nccl.deferred.push_back(issue);
  } else {
    issue();
  }
  return ncclSuccess;
}

ncclResult_t init(const std::string& call, ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                  const ncclConfig_t* config) {
  auto& nccl = active_nccl();
  schedule::NcclInitCall c;
  c.call = call;
  c.nranks = nranks;
  c.rank = rank;
  c.id = id;
  c.has_config = config != nullptr;
  if (config != nullptr) c.config = *config;
  nccl.inits.push_back(c);
  if (nccl.init_result != ncclSuccess) return nccl.init_result;
  *comm = nccl.comm();
  return ncclSuccess;
}

}  // namespace

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return init("ncclCommInitRank", comm, nranks, id, rank, nullptr);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t* config) {
  return init("ncclCommInitRankConfig", comm, nranks, id, rank, config);
}

ncclResult_t ncclAllGather(const void* send, void* recv, std::size_t sendcount, ncclDataType_t type,
                           ncclComm_t comm, cudaStream_t stream) {
  const std::size_t bytes = sendcount * type_bytes(type);
  const auto ranks = static_cast<std::size_t>(active_nccl().ranks());
  return collective("ncclAllGather", send, bytes, recv, bytes * ranks, comm, stream);
}

ncclResult_t ncclReduceScatter(const void* send, void* recv, std::size_t recvcount,
                               ncclDataType_t type, ncclRedOp_t /*op*/, ncclComm_t comm,
                               cudaStream_t stream) {
  const std::size_t bytes = recvcount * type_bytes(type);
  const auto ranks = static_cast<std::size_t>(active_nccl().ranks());
  return collective("ncclReduceScatter", send, bytes * ranks, recv, bytes, comm, stream);
}

ncclResult_t ncclAllReduce(const void* send, void* recv, std::size_t count, ncclDataType_t type,
                           ncclRedOp_t /*op*/, ncclComm_t comm, cudaStream_t stream) {
  const std::size_t bytes = count * type_bytes(type);
  return collective("ncclAllReduce", send, bytes, recv, bytes, comm, stream);
}

ncclResult_t ncclGroupStart() {
  ++active_nccl().group_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  auto& nccl = active_nccl();
  if (nccl.group_depth == 0) return ncclInvalidUsage;
  if (--nccl.group_depth == 0) {
    for (const auto& issue : nccl.deferred) issue();
    nccl.deferred.clear();
  }
  return ncclSuccess;
}

}  // namespace course::testing::doubles
