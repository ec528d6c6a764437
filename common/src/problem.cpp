#include "course/problem.h"

#include <utility>

#include "course/flags.h"
#include "course/workload.h"

namespace course::workload {

std::string default_elements_text() {
  return count_text(kDefaultElements) + " = " +
         bytes_text(kDefaultElements * sizeof(std::uint32_t));
}

std::string size_help() {
  return "uint32 elements of input (default " + default_elements_text() + "; K/M/G suffixes)";
}

Problem::Problem(std::size_t elements, std::uint32_t seed)
    : n(elements), in(n), out(n), expected(n) {
  fill_hash(in.span(), seed);
  // to_host is a synchronous cudaMemcpy: when it returns, the fill is done too.
  const std::vector<std::uint32_t> host_in = to_host(in.cspan());
  reference(host_in, expected);
}

void Problem::poison_output(cudaStream_t stream) const { poison(out.data(), out.bytes(), stream); }

Comparison Problem::compare_output() const {
  return compare_exact<std::uint32_t>(expected, to_host(out.cspan()));
}

Variant Problem::checked(const std::string& name, Launch run) const {
  return Variant{
      name,
      bytes_moved(n),
      std::move(run),
      [this](cudaStream_t stream) { poison_output(stream); },
      [this] { return compare_output(); },
  };
}

}  // namespace course::workload
