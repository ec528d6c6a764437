/// \file schedule_record_nccl.h
/// \brief The NCCL calls of a schedule, recorded without a GPU (see schedule_record.h).
///
/// A collective is work on its stream of the active Recorder that reads its send buffer and
/// writes its receive buffer (the sizes NCCL's documentation gives, for the communicator's
/// number of ranks). Inside ncclGroupStart / ncclGroupEnd the collectives are issued to
/// their streams at ncclGroupEnd, as NCCL launches them there. Creating a communicator
/// records what it was asked and hands out the machine's one communicator.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <functional>
#include <string>
#include <vector>

namespace course::testing::schedule {

/// One ncclCommInitRank / ncclCommInitRankConfig call.
struct NcclInitCall {
  std::string call;
  int nranks = 0;
  int rank = -1;
  ncclUniqueId id{};
  bool has_config = false;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
};

/// The NCCL side of the fake machine, active for its lifetime (one at a time); the
/// collectives go to the active Recorder.
class NcclMachine {
 public:
  explicit NcclMachine(int ranks);
  ~NcclMachine();
  NcclMachine(const NcclMachine&) = delete;
  NcclMachine& operator=(const NcclMachine&) = delete;

  /// The communicator every init call hands out (a fake handle).
  ncclComm_t comm() const { return comm_; }
  int ranks() const { return ranks_; }
  /// What every init call returns (ncclSuccess: the communicator).
  ncclResult_t init_result = ncclSuccess;
  std::vector<NcclInitCall> inits;
  int group_depth = 0;
  std::vector<std::function<void()>> deferred;  ///< collectives waiting for ncclGroupEnd

 private:
  int ranks_;
  ncclComm_t comm_;
};

NcclMachine& active_nccl();

}  // namespace course::testing::schedule

namespace course::testing::doubles {

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank);
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t* config);
ncclResult_t ncclAllGather(const void* send, void* recv, std::size_t sendcount, ncclDataType_t type,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* send, void* recv, std::size_t recvcount,
                               ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);
ncclResult_t ncclAllReduce(const void* send, void* recv, std::size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();

}  // namespace course::testing::doubles
