// Lesson 09, the tail and the cache workloads of the driver (read-only; ptx_cp_async_parts.h
// says what each does). Rows go to the harness, which prints them.
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "ptx_cp_async_parts.h"

namespace ptx_cp_async::parts {

std::string megabytes(double bytes) {
  return std::to_string(static_cast<long long>(bytes / 1e6)) + " MB";
}

void run_tail(course::Harness& harness, const Rows& rows) {
  const std::size_t elements = rows.rows * pitch(rows.length);
  course::DeviceBuffer<std::uint32_t> tail_in(elements), tail_out(elements);
  course::fill_hash(tail_in.span(), /*seed=*/91);  // the padding too: it must not leak
  std::vector<std::uint32_t> tail_expected(elements);
  tail_reference(course::to_host(tail_in.cspan()), tail_expected, rows);
  std::cout << "  tail: " << rows.rows << " rows of " << rows.length << " elements (pitch "
            << pitch(rows.length) << "): " << megabytes(tail_in.bytes()) << " in\n";
  for (auto copy : {TailCopy::if_wrapped, TailCopy::src_size}) {
    harness.run(course::Variant{
        name(copy), 2.0 * static_cast<double>(tail_in.bytes()),
        prepare_tail(tail_in.cspan(), tail_out.span(), rows, copy),
        [&](cudaStream_t st) { course::poison(tail_out.data(), tail_out.bytes(), st); },
        [&] {
          return course::compare_exact<std::uint32_t>(tail_expected,
                                                      course::to_host(tail_out.cspan()));
        }});
  }
}

void run_cache(course::Harness& harness, const CacheSizes& sizes) {
  course::DeviceBuffer<std::uint32_t> stream(sizes.stream_elements), table(sizes.table_elements),
      cache_out(sizes.stream_elements);
  course::fill_hash(stream.span(), /*seed=*/92);
  course::fill_hash(table.span(), /*seed=*/93);
  std::vector<std::uint32_t> cache_expected(sizes.stream_elements);
  cache_reference(course::to_host(stream.cspan()), course::to_host(table.cspan()), cache_expected);
  std::cout << "  cache: a stream of " << megabytes(stream.bytes()) << " beside a table of "
            << megabytes(table.bytes()) << " (L2: " << megabytes(sizes.l2_bytes) << ")\n";
  for (auto policy : {CachePolicy::plain, CachePolicy::hinted}) {
    harness.run(course::Variant{
        name(policy), 3.0 * static_cast<double>(stream.bytes()),
        prepare_cache(stream.cspan(), table.cspan(), cache_out.span(), policy),
        [&](cudaStream_t st) { course::poison(cache_out.data(), cache_out.bytes(), st); },
        [&] {
          return course::compare_exact<std::uint32_t>(cache_expected,
                                                      course::to_host(cache_out.cspan()));
        }});
  }
}

}  // namespace ptx_cp_async::parts
