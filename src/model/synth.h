// Synthetic checkpoints: the exact tensor names, shapes and metadata of a real model, random weights
// (norm weights 1, small uniform scales so activations stay finite), and a byte-level BPE vocabulary
// that tokenizes any text. Speed benchmarks and GPU-vs-interpreter checks read them.
#pragma once

#include "gguf/ggml_type.h"
#include "model/shapes.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lathe {

struct SynthOptions {
  std::string shape;         // a name from model_shapes()
  std::string type = "q8_0"; // f32, f16, bf16, q8_0, q4_0, q2_k, q3_k_m, q4_k_m, q5_k_m
  int64_t layers = 0;        // 0: the shape's own count
  uint64_t seed = 1;
  int threads = 0;           // 0: all cores
  bool zero_data = false;    // metadata and tensor table only; weights a sparse hole of zeros
};

// Which format a tensor gets in a file of the given type: llama.cpp's mixes for its dense and
// many-expert models (llama_tensor_get_type), e.g. q4_k_m keeps Q6_K for the output matrix and for
// half of the attn_v and ffn_down matrices; q3_k_m gives attn_v Q5_K in its first two layers and Q4_K
// after, ffn_down Q5_K in its first sixteenth and Q4_K after, attn_output Q4_K, the rest Q3_K; q2_k
// gives attn_v Q4_K where n_gqa (query heads a kv head) >= 4, else Q3_K, ffn_down and attn_output
// Q3_K, the rest Q2_K; q5_k_m is q4_k_m's rule with Q5_K. The output matrix is Q6_K in every K mix.
GgmlType synth_tensor_type(const std::string& file_type, const std::string& tensor_name,
                           int64_t layer, int64_t n_layer, int64_t row_length, bool tied_output,
                           int64_t n_gqa = 1);

// Writes the checkpoint; returns the spec it was written from and the file's size.
ModelSpec write_synthetic_checkpoint(const SynthOptions& options, const std::string& path,
                                     uint64_t* bytes_written = nullptr);

// The synthetic byte-level BPE vocabulary of a given size, with the special tokens of the family.
struct SynthVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> token_types;  // llama.cpp's: 1 normal, 3 control, 5 unused
  std::vector<std::string> merges;   // "a b", in rank order
  int32_t bos = -1, eos = -1, eot = -1;
  bool add_bos = false;
  std::string pre;                   // tokenizer.ggml.pre
  std::string chat_template;
};
SynthVocab make_synthetic_vocab(Arch arch, int64_t n_vocab);

}  // namespace lathe
