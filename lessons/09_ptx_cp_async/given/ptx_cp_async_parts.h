/// \file ptx_cp_async_parts.h
/// \brief Lesson 09: the driver's parts that live beside main.cu (read-only;
/// parts_workloads.cu): the tail and the cache workloads that follow the multi-stage table.
#pragma once

#include <cstddef>
#include <string>

#include "course/harness.h"
#include "ptx_cp_async.cuh"

namespace ptx_cp_async::parts {

/// The cache workload's sizes in elements, and the L2 they were chosen for.
struct CacheSizes {
  std::size_t table_elements = 0;
  std::size_t stream_elements = 0;
  int l2_bytes = 0;
};

/// "256 MB": whole megabytes (10^6 bytes), as the lines write sizes.
std::string megabytes(double bytes);

/// The tail workload: `rows` of an awkward length, the padding full of garbage that must not
/// leak into the output; each row copied with an `if` around its last chunk ('tail-if') or by
/// zero fill ('tail-src-size'), each checked.
void run_tail(course::Harness& harness, const Rows& rows);

/// The cache workload: a stream beside a table that every block reads again, with plain copies
/// ('cache-plain') and with L2 cache policies ('cache-hint'), each checked.
void run_cache(course::Harness& harness, const CacheSizes& sizes);

}  // namespace ptx_cp_async::parts
