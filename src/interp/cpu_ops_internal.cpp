// The parallel loop and shape checks of cpu_ops_internal.h.
#include "interp/cpu_ops_internal.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace lathe::cpu {

void parallel_for(int64_t n, double cost_per_item, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  // Below about a million multiply-adds a thread costs more than it saves.
  constexpr double kWorthAThread = 1 << 20;
  int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  int64_t n_threads = std::min<int64_t>(hw, static_cast<int64_t>(n * cost_per_item / kWorthAThread));
  n_threads = std::clamp<int64_t>(n_threads, 1, n);
  if (n_threads == 1) {
    body(0, n);
    return;
  }
  // Small chunks taken from a shared counter balance uneven work (a causal attention's rows).
  int64_t chunk = std::max<int64_t>(1, n / (n_threads * 8));
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    try {
      for (int64_t begin; (begin = next.fetch_add(chunk)) < n;) body(begin, std::min(n, begin + chunk));
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
      next = n;  // the others stop at their next chunk
    }
  };
  std::vector<std::thread> threads;
  for (int64_t t = 1; t < n_threads; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

int64_t rows_of(const Tensor& x) {
  if (x.shape.empty()) return 1;
  int64_t n = x.dim(-1);
  return n == 0 ? 0 : x.numel() / n;
}

void require_rank(const Tensor& x, size_t rank, std::string_view op, std::string_view what) {
  if (x.shape.size() != rank)
    fail("{}: {} must have {} dimensions, got shape {}", op, what, rank, x.shape_string());
}

void require_vector_or_empty(const Tensor& v, int64_t n, std::string_view op, std::string_view what,
                             const Tensor& x) {
  if (v.data.empty()) return;  // none
  if (v.shape.size() != 1 || v.dim(0) != n)
    fail("{}: {} of shape {} must be a vector of {} values (the last dimension of {})", op, what,
         v.shape_string(), n, x.shape_string());
}

}  // namespace lathe::cpu
