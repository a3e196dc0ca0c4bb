#include "lang/op_table.h"

#include "base/error.h"

namespace lathe::lang {

namespace {

using M = ModKind;

const std::vector<OpInfo>& ops() {
  static const std::vector<OpInfo> table = {
      {OpKind::gather, "gather", "the rows of $v at $v", {}, "gather_rows"},
      {OpKind::product, "product", "$v times $v", {}, "product"},
      {OpKind::add, "add", "$v plus $v", {}, "add"},
      {OpKind::subtract, "subtract", "$v minus $v", {}, "subtract"},
      {OpKind::multiply, "multiply", "$v multiplied by $v", {}, "multiply"},
      {OpKind::divide, "divide", "$v divided by $v", {}, "divide"},
      {OpKind::scale, "scale", "$v scaled by $n", {}, "scale"},
      {OpKind::soft_cap, "soft_cap", "$v capped at $n", {}, "soft_cap"},
      {OpKind::silu, "silu", "the SiLU of $v", {}, "silu"},
      {OpKind::gelu, "gelu", "the GELU of $v", {}, "gelu"},
      {OpKind::sigmoid, "sigmoid", "the sigmoid of $v", {}, "sigmoid"},
      {OpKind::relu, "relu", "the ReLU of $v", {}, "relu"},
      {OpKind::swiglu, "swiglu", "the SwiGLU of $v and $v", {}, "swiglu"},
      {OpKind::softmax, "softmax", "the softmax of $v", {}, "softmax"},
      {OpKind::argmax, "argmax", "the argmax of $v", {}, "argmax"},
      {OpKind::transpose, "transpose", "the transpose of $v", {}, "transpose"},
      {OpKind::rms_norm, "rms_norm", "the RMS norm of $v", {M::weighted_by, M::epsilon}, "rms_norm"},
      {OpKind::layer_norm, "layer_norm", "the layer norm of $v",
       {M::weighted_by, M::shifted_by, M::epsilon}, "layer_norm"},
      {OpKind::rope, "rope", "$v rotated at $v",
       {M::neox_order, M::normal_order, M::base, M::first_dims, M::llama3_scaling, M::linear_scaling,
        M::freq_factors},
       "rope"},
      {OpKind::attention, "attention", "the attention of $v over the caches of layer $n",
       {M::up_to, M::scaled_by, M::window, M::capped_at, M::sinks}, "attention"},
      {OpKind::mixture, "mixture", "the mixture of $n of $n experts of $v",
       {M::routed_by, M::experts, M::renormalized}, "mixture"},
      {OpKind::split_heads, "split_heads", "$v split into $n heads", {}, "split_heads"},
      {OpKind::join_heads, "join_heads", "$v with heads joined", {}, "join_heads"},
      {OpKind::head_slice, "head_slice", "$n heads of $v from head $n", {}, "head_slice"},
      {OpKind::append_keys, "append_keys", "Append $v to the key cache of layer $n", {}, "cache_append"},
      {OpKind::append_values, "append_values", "Append $v to the value cache of layer $n", {},
       "cache_append"},
  };
  return table;
}

const std::vector<ModInfo>& mods() {
  static const std::vector<ModInfo> table = {
      {M::weighted_by, "weighted_by", "weighted by $v"},
      {M::shifted_by, "shifted_by", "shifted by $v"},
      {M::epsilon, "epsilon", "with epsilon $n"},
      {M::neox_order, "neox_order", "in neox order"},
      {M::normal_order, "normal_order", "in normal order"},
      {M::base, "base", "with base $n"},
      {M::first_dims, "first_dims", "for the first $n dims"},
      {M::llama3_scaling, "llama3_scaling",
       "with Llama 3 frequency scaling of factor $n , low factor $n , high factor $n and original "
       "context $n"},
      {M::linear_scaling, "linear_scaling", "with linear frequency scaling of factor $n"},
      {M::freq_factors, "freq_factors", "with frequency factors $v"},
      {M::up_to, "up_to", "up to $v"},
      {M::scaled_by, "scaled_by", "scaled by $n"},
      {M::window, "window", "within a window of $n"},
      {M::capped_at, "capped_at", "capped at $n"},
      {M::sinks, "sinks", "with sinks $v"},
      {M::routed_by, "routed_by", "routed by $v"},
      {M::experts, "experts", "with gates $v , ups $v and downs $v"},
      {M::renormalized, "renormalized", "renormalized"},
  };
  return table;
}

}  // namespace

std::span<const OpInfo> op_table() { return ops(); }
std::span<const ModInfo> mod_table() { return mods(); }

const OpInfo& op_info(OpKind kind) {
  for (const OpInfo& info : ops())
    if (info.kind == kind) return info;
  internal_fail("op kind {} has no entry in the op table", static_cast<int>(kind));
}

const ModInfo& mod_info(ModKind kind) {
  for (const ModInfo& info : mods())
    if (info.kind == kind) return info;
  internal_fail("modifier kind {} has no entry in the modifier table", static_cast<int>(kind));
}

std::vector<std::string_view> pattern_words(std::string_view pattern) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < pattern.size()) {
    size_t j = pattern.find(' ', i);
    if (j == std::string_view::npos) j = pattern.size();
    if (j > i) words.push_back(pattern.substr(i, j - i));
    i = j + 1;
  }
  return words;
}

int pattern_arity(std::string_view pattern) {
  int n = 0;
  for (std::string_view w : pattern_words(pattern))
    if (w == "$v" || w == "$n") ++n;
  return n;
}

std::string mod_phrase(ModKind kind) {
  std::string phrase;
  for (std::string_view w : pattern_words(mod_info(kind).pattern)) {
    if (w[0] == '$') break;
    if (!phrase.empty()) phrase += ' ';
    phrase += w;
  }
  return phrase;
}

const Modifier* Op::find(ModKind kind) const {
  for (const Modifier& m : mods)
    if (m.kind == kind) return &m;
  return nullptr;
}

}  // namespace lathe::lang
