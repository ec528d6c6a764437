/// \file streams_and_sync.cuh
/// \brief Lesson 13: streams, the default streams, and every way to wait for the GPU.
///
/// The API the driver (main.cu), the experiments (measure.h) and the tests call. The
/// exercise is in streams_and_sync.cu (the starter in lessons/, the complete version in
/// solutions/): make_stream, implicitly_serialised, stream_is_idle, event_has_completed,
/// copy_after_producer and overlap_ratio. The kernels, their launchers and the other
/// helpers are in the read-only streams_and_sync_launch.cu; the child report in child.cu.
///
/// Two kernels are the lesson's instruments. `spin` keeps one small block busy for a
/// given time on the GPU's global nanosecond timer and records when it started and
/// stopped, so the driver can see on the GPU's own clock whether two operations ran at
/// the same time. `delayed_fill` is a producer that writes its values only after a delay,
/// so a consumer that does not wait for it reads the old values.
#pragma once

#include <cuda_runtime.h>
#include <cuda/std/span>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace streams_and_sync {

// ---- Kinds of stream ------------------------------------------------------------------

/// The four kinds of stream a CUDA program can put work into.
enum class StreamKind {
  legacy_default,      ///< the one legacy default ("NULL") stream
  per_thread_default,  ///< this host thread's default stream
  blocking,            ///< a created stream that waits for the legacy stream
  non_blocking,        ///< a created stream that does not
};

/// "legacy", "per-thread", "blocking" or "non-blocking".
const char* stream_kind_name(StreamKind kind);

/// A stream of `kind`: for the two default kinds the stream that already exists (nothing
/// is created), a newly created stream for the other two kinds. Release it with
/// destroy_stream().
cudaStream_t make_stream(StreamKind kind);

/// Destroys a stream make_stream() created; does nothing for the two default streams.
void destroy_stream(StreamKind kind, cudaStream_t stream);

/// A stream of one kind that is destroyed with its owner (make_stream / destroy_stream).
class KindStream {
 public:
  explicit KindStream(StreamKind kind) : kind_(kind), stream_(make_stream(kind)) {}
  ~KindStream() { destroy_stream(kind_, stream_); }
  KindStream(const KindStream&) = delete;
  KindStream& operator=(const KindStream&) = delete;
  StreamKind kind() const noexcept { return kind_; }
  cudaStream_t get() const noexcept { return stream_; }
  operator cudaStream_t() const noexcept { return stream_; }

 private:
  StreamKind kind_;
  cudaStream_t stream_;
};

/// Whether the CUDA programming model guarantees that work enqueued in a stream of kind
/// `first`, then work enqueued in a stream of kind `second`, never run at the same time,
/// in a program with one host thread and no explicit synchronisation between them.
/// Two legacy or two per-thread kinds name the same stream; two blocking or two
/// non-blocking kinds name two different streams created separately.
/// `false` means "no implicit synchronisation": the GPU *may* run them concurrently.
bool implicitly_serialised(StreamKind first, StreamKind second);

// ---- Waiting without blocking: the queries --------------------------------------------

/// True when every operation enqueued on `stream` so far has completed, false while some
/// are still pending (which is not an error). Never blocks. Throws course::CudaError for a
/// real error.
bool stream_is_idle(cudaStream_t stream);

/// True when the work `event` was last recorded after has completed (also when the event
/// was never recorded), false while it is pending. Never blocks.
bool event_has_completed(cudaEvent_t event);

// ---- The instruments: spin kernels and a delayed producer -----------------------------

/// What one spin launch records, on the GPU's global nanosecond timer (%globaltimer).
struct SpinRecord {
  std::uint64_t start_ns;    ///< when the kernel started
  std::uint64_t end_ns;      ///< when it stopped spinning
  std::uint64_t iterations;  ///< how many times it read the timer
  std::uint32_t token;       ///< the launch's token: proves this launch wrote the record
  std::uint32_t stopped_by;  ///< kStoppedByTime, or kStoppedByCap if the safety cap hit first
};

inline constexpr std::uint32_t kStoppedByTime = 1;
inline constexpr std::uint32_t kStoppedByCap = 2;

/// Threads of the one block a spin kernel launches: small, so two spins fit on the GPU at
/// once (they could even share one SM).
inline constexpr int kSpinThreads = 32;
static_assert(kSpinThreads % 32 == 0 && kSpinThreads <= 1024,
              "a spin block is whole warps of at most 1024 threads, or the launch fails");

/// The longest spin launch_spin() accepts (10 s): nothing in the course needs more.
inline constexpr std::uint64_t kMaxSpinNs = 10'000'000'000ull;

/// The most timer reads a spin of `duration_ns` makes before it gives up: 4 per nanosecond
/// of the duration, plus 1024. One read takes well over a nanosecond, so the time bound
/// always ends a spin first; the cap only guarantees that a spin ends even if the timer
/// stopped advancing, so nothing in this lesson can hang.
constexpr std::uint64_t spin_iteration_cap(std::uint64_t duration_ns) {
  return 4 * duration_ns + 1024;
}
static_assert(spin_iteration_cap(kMaxSpinNs) / 4 >= kMaxSpinNs,
              "the cap of the longest spin must not overflow, or it ends the spin early");

/// Enqueues on `stream` one block of kSpinThreads threads that spins for `duration_ns`
/// nanoseconds of GPU time (0: just stamps the time) and then writes `*record` (device
/// memory) with `token`. Throws std::invalid_argument, before any CUDA call, for a null
/// record or a duration above kMaxSpinNs.
void launch_spin(SpinRecord* record, std::uint64_t duration_ns, std::uint32_t token,
                 cudaStream_t stream);

/// Enqueues on `stream` a producer that first waits `delay_ns` nanoseconds of GPU time and
/// only then writes data[i] = course::hash32(i, seed) for every i. An empty span enqueues
/// nothing. Throws std::invalid_argument for a delay above kMaxSpinNs.
void launch_delayed_fill(cuda::std::span<std::uint32_t> data, std::uint32_t seed,
                         std::uint64_t delay_ns, cudaStream_t stream);

/// Orders a consumer after a producer without blocking the host: makes `consumer` wait for
/// everything enqueued on `producer` so far (through the event `produced`, which the caller
/// created), then enqueues on `consumer` a device-to-device copy of `src` into `dst`.
/// Throws std::invalid_argument, before any CUDA call, when the sizes differ.
void copy_after_producer(cuda::std::span<const std::uint32_t> src,
                         cuda::std::span<std::uint32_t> dst, cudaStream_t producer,
                         cudaStream_t consumer, cudaEvent_t produced);

// ---- Measuring overlap ----------------------------------------------------------------

/// How much of the shorter of two operations ran at the same time as the other, as a
/// fraction of its own time; t1 and t2 are the two operations' own times and t_pair the
/// time from the first start to the last end. 1: the shorter one ran entirely alongside
/// the other; 0: one ran after the other; below 0: with a gap between them.
/// Throws std::invalid_argument when t1 or t2 is not positive.
double overlap_ratio(double t1_ms, double t2_ms, double pair_ms);

/// What a measured overlap says, with a wide margin between the two clear answers.
enum class Concurrency { serialised, partial, concurrent };

/// Below kSerialisedBelow the pair ran one after the other; above kConcurrentAbove at the
/// same time; in between the answer is "partial" and is never taken as either.
inline constexpr double kSerialisedBelow = 0.1;
inline constexpr double kConcurrentAbove = 0.5;

Concurrency classify(double overlap);
/// "serialised", "partial" or "concurrent".
const char* concurrency_name(Concurrency c);

/// One operation's interval on the GPU's global timer.
struct Interval {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
};

/// The times of a pair of operations, in milliseconds, and their overlap ratio.
struct PairTiming {
  double t1_ms = 0;
  double t2_ms = 0;
  double pair_ms = 0;
  double overlap = 0;
};

/// t1 and t2 are the intervals' lengths, t_pair from the earlier start to the later end.
/// Throws std::invalid_argument for an interval that ends before it starts or is empty.
PairTiming pair_timing(Interval first, Interval second);

// ---- The CUDA_LAUNCH_BLOCKING child process --------------------------------------------

/// What the driver, run again as a child process with CUDA_LAUNCH_BLOCKING=1, reports.
struct ChildReport {
  bool launch_blocking = false;  ///< CUDA_LAUNCH_BLOCKING was 1 in the child's environment
  PairTiming timing;             ///< medians over the child's runs
  bool values_ok = false;        ///< every record the child read was valid
};

/// One line: "CHILD-REPORT launch_blocking=1 t1_ms=... t2_ms=... pair_ms=... overlap=...
/// values=ok" (values=FAIL when they did not verify).
std::string format_child_report(const ChildReport& report);

/// The report in a child's whole standard output (other lines are ignored), or nothing
/// when no well-formed CHILD-REPORT line is there.
std::optional<ChildReport> parse_child_report(const std::string& output);

}  // namespace streams_and_sync
