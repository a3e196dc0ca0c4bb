// The reference interpreter as an engine: the prompt runs as the largest power-of-two prefill chunks
// that fit (at most max_chunk rows), the rest one decode step at a time.
#pragma once

#include "gguf/gguf_file.h"
#include "interp/interpreter.h"
#include "model/model_program.h"
#include "runtime/engine.h"

#include <map>
#include <memory>

namespace lathe {

class CpuEngine : public Engine {
 public:
  // program_file: a program file to run instead of the architecture's (model_program).
  CpuEngine(const GgufFile& file, int64_t n_ctx, int64_t max_chunk = 64, const std::string& program_file = "");
  std::vector<float> run(std::span<const int32_t> tokens, int64_t start, bool all_logits) override;
  int64_t n_ctx() const override { return n_ctx_; }
  int64_t n_vocab() const override { return n_vocab_; }
  std::string name() const override { return "cpu (reference interpreter)"; }
  const ModelProgram& program() const { return program_; }
  // The GPU lane's roundings replayed from the next run on (interp/interpreter.h: LaneRounding).
  void set_rounding(const LaneRounding& rounding);

 private:
  const Interpreter& cut(int64_t rows);  // the prefill:rows cut (decode for 1), made on first use

  const GgufFile& file_;
  int64_t n_ctx_, n_vocab_, max_chunk_;
  ModelProgram program_;
  std::map<int64_t, std::unique_ptr<Interpreter>> cuts_;
  KvState state_;
  LaneRounding rounding_;
};

}  // namespace lathe
