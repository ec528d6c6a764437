/// \file record_calls.h
/// \brief Redirects the CUDA runtime calls (and, where nccl.h came first, the NCCL calls)
/// written after this header to the test doubles of schedule_record.h (and
/// schedule_record_nccl.h), which record them instead of calling a driver.
///
/// Include it last, after every header (the runtime's own declarations must come before
/// it), and right before the file whose calls are to be recorded: it is for the units of
/// tests/recorded/ only, never for a file that needs the real runtime.
#pragma once

#include "schedule_record.h"

// The runtime names some of these as macros already (its per-thread default stream
// variants): replace them.
#define COURSE_RECORD_CALL(name) ::course::testing::doubles::name

#undef cudaGetDevice
#define cudaGetDevice COURSE_RECORD_CALL(cudaGetDevice)
#undef cudaSetDevice
#define cudaSetDevice COURSE_RECORD_CALL(cudaSetDevice)
#undef cudaGetDeviceCount
#define cudaGetDeviceCount COURSE_RECORD_CALL(cudaGetDeviceCount)
#undef cudaGetLastError
#define cudaGetLastError COURSE_RECORD_CALL(cudaGetLastError)
#undef cudaPeekAtLastError
#define cudaPeekAtLastError COURSE_RECORD_CALL(cudaPeekAtLastError)
#undef cudaDeviceCanAccessPeer
#define cudaDeviceCanAccessPeer COURSE_RECORD_CALL(cudaDeviceCanAccessPeer)
#undef cudaDeviceEnablePeerAccess
#define cudaDeviceEnablePeerAccess COURSE_RECORD_CALL(cudaDeviceEnablePeerAccess)
#undef cudaDeviceDisablePeerAccess
#define cudaDeviceDisablePeerAccess COURSE_RECORD_CALL(cudaDeviceDisablePeerAccess)
#undef cudaDeviceGetP2PAttribute
#define cudaDeviceGetP2PAttribute COURSE_RECORD_CALL(cudaDeviceGetP2PAttribute)
#undef cudaStreamCreate
#define cudaStreamCreate COURSE_RECORD_CALL(cudaStreamCreate)
#undef cudaStreamCreateWithFlags
#define cudaStreamCreateWithFlags COURSE_RECORD_CALL(cudaStreamCreateWithFlags)
#undef cudaStreamCreateWithPriority
#define cudaStreamCreateWithPriority COURSE_RECORD_CALL(cudaStreamCreateWithPriority)
#undef cudaStreamDestroy
#define cudaStreamDestroy COURSE_RECORD_CALL(cudaStreamDestroy)
#undef cudaEventCreate
#define cudaEventCreate COURSE_RECORD_CALL(cudaEventCreate)
#undef cudaEventCreateWithFlags
#define cudaEventCreateWithFlags COURSE_RECORD_CALL(cudaEventCreateWithFlags)
#undef cudaEventDestroy
#define cudaEventDestroy COURSE_RECORD_CALL(cudaEventDestroy)
#undef cudaEventRecord
#define cudaEventRecord COURSE_RECORD_CALL(cudaEventRecord)
#undef cudaEventRecordWithFlags
#define cudaEventRecordWithFlags COURSE_RECORD_CALL(cudaEventRecordWithFlags)
#undef cudaStreamWaitEvent
#define cudaStreamWaitEvent COURSE_RECORD_CALL(cudaStreamWaitEvent)
#undef cudaStreamSynchronize
#define cudaStreamSynchronize COURSE_RECORD_CALL(cudaStreamSynchronize)
#undef cudaStreamQuery
#define cudaStreamQuery COURSE_RECORD_CALL(cudaStreamQuery)
#undef cudaEventSynchronize
#define cudaEventSynchronize COURSE_RECORD_CALL(cudaEventSynchronize)
#undef cudaEventQuery
#define cudaEventQuery COURSE_RECORD_CALL(cudaEventQuery)
#undef cudaDeviceSynchronize
#define cudaDeviceSynchronize COURSE_RECORD_CALL(cudaDeviceSynchronize)
#undef cudaMemcpyPeerAsync
#define cudaMemcpyPeerAsync COURSE_RECORD_CALL(cudaMemcpyPeerAsync)
#undef cudaMemcpyPeer
#define cudaMemcpyPeer COURSE_RECORD_CALL(cudaMemcpyPeer)
#undef cudaMemcpyAsync
#define cudaMemcpyAsync COURSE_RECORD_CALL(cudaMemcpyAsync)
#undef cudaMemcpy
#define cudaMemcpy COURSE_RECORD_CALL(cudaMemcpy)

#ifdef NCCL_H_
#include "schedule_record_nccl.h"
#define ncclCommInitRank COURSE_RECORD_CALL(ncclCommInitRank)
#define ncclCommInitRankConfig COURSE_RECORD_CALL(ncclCommInitRankConfig)
#define ncclAllGather COURSE_RECORD_CALL(ncclAllGather)
#define ncclReduceScatter COURSE_RECORD_CALL(ncclReduceScatter)
#define ncclAllReduce COURSE_RECORD_CALL(ncclAllReduce)
#define ncclGroupStart COURSE_RECORD_CALL(ncclGroupStart)
#define ncclGroupEnd COURSE_RECORD_CALL(ncclGroupEnd)
#endif
