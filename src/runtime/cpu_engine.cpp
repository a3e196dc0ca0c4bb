#include "runtime/cpu_engine.h"

#include "lang/program.h"
#include "model/model_spec.h"

#include <algorithm>

namespace lathe {

std::vector<int64_t> prompt_chunks(int64_t n, int64_t max_chunk) {
  std::vector<int64_t> out;
  while (n > 0) {
    int64_t c = 1;
    while (c * 2 <= std::min(n, max_chunk)) c *= 2;
    out.push_back(c);
    n -= c;
  }
  return out;
}

CpuEngine::CpuEngine(const GgufFile& file, int64_t n_ctx, int64_t max_chunk)
    : file_(file), n_ctx_(n_ctx), max_chunk_(std::max<int64_t>(1, max_chunk)) {
  const ModelSpec spec = read_model_spec(file);
  n_vocab_ = spec.n_vocab;
  program_ = model_program(file, spec, n_ctx);
  state_ = cut(1).new_state();
}

const Interpreter& CpuEngine::cut(int64_t rows) {
  auto it = cuts_.find(rows);
  if (it != cuts_.end()) return *it->second;
  const lang::Cut c = rows == 1 ? lang::Cut{lang::Cut::Kind::decode, 1}
                                : lang::Cut{lang::Cut::Kind::prefill, rows};
  auto interp = std::make_unique<Interpreter>(lang::make_cut(program_.program, c), program_.bindings, file_);
  return *cuts_.emplace(rows, std::move(interp)).first->second;
}

std::vector<float> CpuEngine::run(std::span<const int32_t> tokens, int64_t start, bool all_logits) {
  if (tokens.empty()) fail("no tokens to run");
  if (start < 0 || start + static_cast<int64_t>(tokens.size()) > n_ctx_)
    fail("{} tokens at position {} do not fit in the context of {} tokens (--ctx)", tokens.size(),
         start, n_ctx_);
  std::vector<float> logits;
  int64_t done = 0;
  for (int64_t rows : prompt_chunks(static_cast<int64_t>(tokens.size()), max_chunk_)) {
    StepInput in;
    for (int64_t r = 0; r < rows; ++r) {
      in.tokens.push_back(tokens[static_cast<size_t>(done + r)]);
      in.positions.push_back(static_cast<int32_t>(start + done + r));
      in.sequences.push_back(0);
    }
    const StepOutput out = cut(rows).step(in, state_);
    const Tensor& l = out.at("logits").tensor;
    const bool last_chunk = done + rows == static_cast<int64_t>(tokens.size());
    if (all_logits) {
      logits.insert(logits.end(), l.data.begin(), l.data.end());
    } else if (last_chunk) {
      logits.assign(l.data.end() - n_vocab_, l.data.end());
    }
    done += rows;
  }
  return logits;
}

}  // namespace lathe
