// An engine runs a model's steps for one sequence: the prompt in chunks, then one token at a time,
// returning the logits of the last row. The CPU engine is the reference interpreter; the GPU engine
// runs the compiled program. Generation, `lathe run`, `lathe logits` and `lathe perplexity` are
// written against this interface, so they work on either.
#pragma once

#include "runtime/sampler.h"

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace lathe {

class Engine {
 public:
  virtual ~Engine() = default;
  // Runs tokens at positions start, start+1, ... of the sequence (the cache keeps what came before
  // start; a start below what was run rewinds). Returns the logits of every row when all_logits,
  // else of the last row only, row after row ([rows or 1, n_vocab]).
  virtual std::vector<float> run(std::span<const int32_t> tokens, int64_t start, bool all_logits) = 0;
  // One token at `position`; returns the argmax of its logits (ties to the lower index). Greedy
  // generation's step: an engine that forms the argmax itself (the GPU's, on the device) copies no
  // logits back.
  virtual int32_t run_argmax(int32_t token, int64_t position);
  // Greedy steps chained: `token` at `position`, then each step's argmax at the position after, for at
  // most n >= 1 steps; returns the argmax of each step run, at least one (run_argmax's ids). An engine
  // that chains steps on the device (the GPU's) runs up to its chain's length before the host hears
  // of them; the default runs one.
  virtual std::vector<int32_t> run_argmax_steps(int32_t token, int64_t position, int64_t n);
  // Sampled steps chained, where the engine samples on the device: `token` at `position`, then for
  // each step the token sampler.sample_head_at would draw from the step's head with uniform
  // uniforms[j] (no repetition penalty, temperature > 0, top-k of at most max_head()), at most n >= 1
  // steps (uniforms holds n). Returns the tokens drawn, at least one; or none where the engine does not
  // chain sampled steps (the default), and the caller samples a step at a time.
  virtual std::vector<int32_t> run_sampled_steps(int32_t token, int64_t position, int64_t n, const SamplerOptions& o,
                                                 std::span<const double> uniforms) {
    (void)token, (void)position, (void)n, (void)o, (void)uniforms;
    return {};
  }
  // One token at `position`; its logits, as a view valid until the engine's next call. Sampled
  // generation's step: the GPU engine copies them into page-locked memory it keeps (no allocation,
  // no pageable copy a token).
  virtual std::span<const float> run_one(int32_t token, int64_t position);
  // One token at `position`; the m best of its logits (LogitHead's order) and those of the tokens in
  // `penalized` (indices < n_vocab), as views valid until the engine's next call. Sampled generation's
  // step where the sampler reads only a head (Sampler::head_size): the GPU engine forms it on the
  // device and copies back m + |penalized| values instead of the row. 1 <= m <= n_vocab.
  virtual LogitHead run_head(int32_t token, int64_t position, int64_t m, std::span<const int32_t> penalized);
  // The largest m run_head takes (larger heads: run_one).
  virtual int64_t max_head() const { return n_vocab(); }
  virtual int64_t n_ctx() const = 0;
  virtual int64_t n_vocab() const = 0;
  virtual std::string name() const = 0;  // "cpu (reference interpreter)", "gpu (NVIDIA H200)"

 private:
  std::vector<float> last_logits_;  // run_one's view, where an engine has no buffer of its own
  std::vector<float> head_values_, head_penalized_;  // run_head's views, likewise
  std::vector<int32_t> head_tokens_;
};

// Splits n rows into the chunks a prompt runs as: the largest powers of two up to max_chunk.
std::vector<int64_t> prompt_chunks(int64_t n, int64_t max_chunk);

// Engine::run for an engine that runs one chunk at a time: checks that the tokens fit in n_ctx,
// runs them as prompt_chunks(n, max_chunk), and assembles the logits. step(chunk, start, want)
// runs one chunk and returns the logits of at least its last `want` rows, row after row (want 0:
// anything; a 512-row chunk's logits are 311 MB for a 152k vocabulary, so an engine copies only
// what is wanted).
using ChunkStep = std::function<std::vector<float>(std::span<const int32_t> chunk, int64_t start, int64_t want)>;
std::vector<float> run_in_chunks(std::span<const int32_t> tokens, int64_t start, bool all_logits,
                                 int64_t n_ctx, int64_t max_chunk, int64_t n_vocab, const ChunkStep& step);

}  // namespace lathe
