// Generation: run a prompt on an engine, then sample token after token until an end-of-generation
// token, the token budget, or the end of the context; text streams out as whole UTF-8 characters.
#pragma once

#include "runtime/engine.h"
#include "runtime/sampler.h"
#include "runtime/tokenizer.h"

#include <functional>
#include <string_view>

namespace lathe {

struct GenerateOptions {
  int64_t max_tokens = 128;
  bool stop_at_end = true;  // stop on the tokenizer's end-of-generation tokens
};

struct GenerateStats {
  int64_t prompt_tokens = 0, generated = 0;
  double prompt_seconds = 0, generate_seconds = 0;
  bool hit_context_end = false;
  bool hit_end_token = false;
};

// Runs `prompt` at positions start.. and generates after it. `history` (may be null) holds the
// tokens the sequence has seen before `start` and receives the prompt and the generated tokens (the
// repetition penalty reads it). Throws UserError when the prompt does not fit in the context.
GenerateStats generate(Engine& engine, const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                       int64_t start, const GenerateOptions& options, Sampler& sampler,
                       const std::function<void(std::string_view)>& on_text,
                       std::vector<int32_t>* history = nullptr);

// Where the small default model that ships with Lathe is: $LATHE_DEFAULT_MODEL, else
// models/default/lathe-kjv-qwen3.gguf beside the executable's folder or in the source tree.
std::string default_model_path();

}  // namespace lathe
