// The shapes of real models (and tiny ones for tests) that `lathe synth` can write, with the numbers
// of the real checkpoints' configs.
#pragma once

#include "model/model_spec.h"

#include <string>
#include <vector>

namespace lathe {

struct ModelShape {
  std::string name;       // "qwen3-8b"
  std::string real_name;  // "Qwen3-8B"
  ModelSpec spec;         // arch, sizes, rope, eps, tied output (n_vocab included)
};

const std::vector<ModelShape>& model_shapes();
const ModelShape& find_model_shape(const std::string& name);  // UserError listing the known names

}  // namespace lathe
