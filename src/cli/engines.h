// Loading a model for the commands that run one (run, logits, perplexity): the checkpoint, its
// tokenizer and the engine chosen by --device (auto: the GPU when there is one and the lane can run
// the model, else the CPU's reference interpreter).
#pragma once

#include "gguf/gguf_file.h"
#include "interp/interpreter.h"
#include "kernels/gemv_launch.h"
#include "runtime/engine.h"
#include "runtime/tokenizer.h"

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

namespace lathe::cli {

struct EngineOptions {
  std::string device = "auto";  // auto, cpu, gpu
  int64_t n_ctx = 2048;
  std::string activations = "int8x2";  // the GPU lane's numerics contract
  std::vector<std::string> hold;       // fusion rules held back (GPU lane)
  // The largest prefill chunk (clamped to n_ctx): long prompts run as few large chunks, whose products
  // run at a larger share of the tensor cores (H200, qwen3-8b Q8_0 pp4096: 21,626 tok/s in 512-row
  // chunks, 29,266 in one 4,096-row chunk). --max-chunk 512 saves memory where the GPU is short.
  int64_t max_chunk = 4096;
  std::string program;                 // a program file run instead of the architecture's
  double gpu_memory_gb = 0;            // > 0: the most GPU memory to take, in GB (1e9 bytes)
  bool persistent = false;             // the decode step as persistent launches (GPU lane)
  int64_t merge_from = -1;             // >= 0: GpuEngineOptions::long_from (-1: its default)
  bool lane_rounding = false;          // the interpreter replays the GPU lane's roundings (add_lane_rounding_option)
};

void add_engine_options(CLI::App* cmd, EngineOptions& options);

// --lane-rounding, for the commands that compare the interpreter with the GPU lane or write its logits
// (check, logits): the interpreter rounds where the lane does (interp/interpreter.h: LaneRounding).
void add_lane_rounding_option(CLI::App* cmd, EngineOptions& options);

// The roundings the GPU lane makes under options.activations: the f16 cache always; under the int8
// contracts a chunk's flash attention, its f16 products unless LATHE_PREFILL_GEMM=int8 keeps the int8
// GEMM (which rounds nothing the interpreter does not), and its mixture's expert products where they
// run on wgmma (not under LATHE_MOE_PREFILL=int8).
LaneRounding lane_rounding_of(const EngineOptions& options);

// "f32", "int8" or "int8x2" as the GPU lane's contract; a UserError for anything else.
kernels::Activations parse_activations(const std::string& name);

struct LoadedModel {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Engine> engine;
};

LoadedModel load_model(const std::string& path, const EngineOptions& options);

// The engine --device asks for, for a checkpoint read without its tokenizer (logits: test models
// carry none). load_model uses the same rule.
std::unique_ptr<Engine> make_engine(const GgufFile& file, const EngineOptions& options);

// The GPU engine alone (check, bench): a CudaError when there is no GPU.
std::unique_ptr<Engine> make_gpu_engine(const GgufFile& file, const EngineOptions& options);

}  // namespace lathe::cli
