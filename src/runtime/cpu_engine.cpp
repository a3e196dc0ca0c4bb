#include "runtime/cpu_engine.h"

#include "lang/program.h"
#include "model/model_spec.h"

#include <algorithm>

namespace lathe {

CpuEngine::CpuEngine(const GgufFile& file, int64_t n_ctx, int64_t max_chunk, const std::string& program_file)
    : file_(file), n_ctx_(n_ctx), max_chunk_(std::max<int64_t>(1, max_chunk)) {
  const ModelSpec spec = read_model_spec(file);
  n_vocab_ = spec.n_vocab;
  program_ = model_program(file, spec, n_ctx, program_file);
  state_ = cut(1).new_state();
}

const Interpreter& CpuEngine::cut(int64_t rows) {
  auto it = cuts_.find(rows);
  if (it != cuts_.end()) return *it->second;
  const lang::Cut c = rows == 1 ? lang::Cut{lang::Cut::Kind::decode, 1}
                                : lang::Cut{lang::Cut::Kind::prefill, rows};
  auto interp = std::make_unique<Interpreter>(lang::make_cut(program_.program, c), program_.bindings, file_);
  interp->set_rounding(rounding_);
  return *cuts_.emplace(rows, std::move(interp)).first->second;
}

void CpuEngine::set_rounding(const LaneRounding& rounding) {
  rounding_ = rounding;
  for (auto& [rows, interp] : cuts_) interp->set_rounding(rounding);
}

std::vector<float> CpuEngine::run(std::span<const int32_t> tokens, int64_t start, bool all_logits) {
  return run_in_chunks(tokens, start, all_logits, n_ctx_, max_chunk_, n_vocab_,
                       [this](std::span<const int32_t> chunk, int64_t at, int64_t) {
                         StepInput in;
                         for (size_t r = 0; r < chunk.size(); ++r) {
                           in.tokens.push_back(chunk[r]);
                           in.positions.push_back(static_cast<int32_t>(at + static_cast<int64_t>(r)));
                           in.sequences.push_back(0);
                         }
                         return cut(static_cast<int64_t>(chunk.size())).step(in, state_).at("logits").tensor.data;
                       });
}

}  // namespace lathe
