// Recording a model's steps for `lathe emit`: the GPU lane plans each cut the standalone program
// needs (the decode step, prefill chunks) on a virtual device (cuda::Recorder) with no GPU, and every
// launch becomes a record: kernel, launch shape, and each argument's bytes, with the device pointers
// among them named as (buffer, offset). Buffers are the checkpoint's tensors (uploaded by the
// program from the file), and plain buffers (arena, caches, step inputs and outputs, rope tables,
// workspaces) that the program zeroes and fills with the bytes the plan uploaded.
#pragma once

#include "gguf/gguf_file.h"
#include "kernels/gemv_launch.h"
#include "runtime/cuda_driver.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace lathe::emit {

struct EmitOptions {
  int64_t n_ctx = 2048;       // positions the KV caches hold (lathe run's default)
  int64_t max_chunk = 512;    // the largest prefill chunk (lathe run takes up to 4,096; a program without
                              // a baked-in prompt holds a plan for every power of two up to this)
  kernels::Activations activations = kernels::Activations::int8x2;
  std::set<std::string> held;             // fusion rules held back
  std::vector<int32_t> prompt_tokens;     // baked in; empty: the program takes them on its command line
  int64_t n_predict = 16;                 // tokens the program generates unless told otherwise
  // > 0: the decode step recorded in two forms, below this position and from it (plan::PlanOptions::
  // long_from: the attention's splits merged by a launch of their own from it, as lathe run's engine
  // does from 128); 0: one form for every position (its splits merged by the last split's block).
  int64_t long_from = 0;
  int sm_count = 132;                     // the virtual device: an H200
  int cc_major = 9, cc_minor = 0;
  int shared_optin_bytes = 232448;        // 227 KB a block (sm_90): the decode kernels' choices need it
};

struct BufferRef {
  int buffer = -1;
  uint64_t offset = 0;
};

struct EmitBuffer {
  uint64_t bytes = 0;
  std::string what;     // the plan's label
  std::string weight;   // the checkpoint tensor it holds; empty for a plain buffer
  bool as_f32 = false;  // a vector, converted to f32 on upload (plan::DeviceModel's rule)
  std::vector<std::pair<uint64_t, int>> fills;  // (offset, blob) written after zeroing
  // A constant the plan re-lays at load (plan::Relay): the program forms it from relay_weight's bytes
  // (kernels/q8_0_relay.h, embedded in the program).
  bool relaid = false;
  std::string relay_weight;
  int64_t relay_experts = 1, relay_e = 0, relay_f = 0, relay_group = 0;
};

// A TMA tensor map's geometry (kernels/tensor_map.h's arguments but its address).
struct EmitMap {
  uint32_t type = 0;
  uint64_t inner = 0, outer = 0, stride = 0;
  uint32_t box_inner = 0, box_outer = 0, swizzle_128b = 0, promotion = 0;
};

struct EmitArg {
  uint32_t bytes = 0;
  BufferRef pointer;          // pointer.buffer >= 0: a device pointer (tensor_map: the map's array); else the literal bytes
  uint64_t literal[2] = {0, 0};
  bool tensor_map = false;    // a 128-byte map the program encodes at its start
  EmitMap map;
};

struct EmitOp {
  bool copy = false;          // a device-to-device copy, else a kernel launch
  std::string kernel;
  cuda::Dim3 grid, block;
  unsigned shared_bytes = 0;
  std::vector<EmitArg> args;
  BufferRef dst, src;         // copy
  uint64_t bytes = 0;
  std::string what;           // the plan's description of the launch it belongs to
};

struct EmitStep {
  int64_t rows = 1;
  std::string identity;       // the cut program's
  BufferRef tokens, positions, sequences, logits, next;  // next: the argmax of each row's logits (int32)
  std::vector<EmitOp> ops;
  int64_t from = 0;  // the first position it serves (a decode step's long form: EmitOptions::long_from)
};

struct RecordedModel {
  std::string architecture;
  std::string program_identity;   // the uncut model program's
  int64_t n_vocab = 0;
  std::vector<EmitBuffer> buffers;
  std::vector<std::vector<unsigned char>> blobs;  // distinct fill contents
  std::vector<EmitStep> steps;                    // by rows, ascending; steps[0] is the decode step (its
                                                  // short form where steps[1] is its long form: rows 1)
  std::vector<int32_t> end_tokens;                // the tokenizer's end-of-generation ids
};

// The row counts the program needs: 1, and the chunks of the baked prompt (lathe run's rule), or
// every power of two up to max_chunk when no prompt is baked in.
std::vector<int64_t> step_rows(const EmitOptions& options);

RecordedModel record_model(const GgufFile& file, const EmitOptions& options);

}  // namespace lathe::emit
