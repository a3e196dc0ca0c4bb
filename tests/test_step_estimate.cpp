// Residence keeps StepPlan::estimate_bytes free for the steps before any plan exists; it must cover
// the arena every plan then takes. Planned here on lathe emit's virtual device (no GPU needed), for a
// decode row and a 512-row chunk, dense and mixture; and it must stay near the arena (a sum of every
// activation, as before, asked 21.5 GB for a qwen3-8b chunk and refused a 6 GB card).
#include "emit/record.h"
#include "gguf/gguf_file.h"
#include "model/model_program.h"
#include "model/model_spec.h"
#include "model/synth.h"
#include "plan/step_plan.h"
#include "runtime/gpu_engine.h"

#include <gtest/gtest.h>

namespace lathe {
namespace {

TEST(StepEstimate, CoversEveryPlansArenaAndStaysNearIt) {
  for (const std::string shape : {"qwen3-tiny", "qwen3moe-tiny", "llama-tiny"}) {
    const std::string path = testing::TempDir() + "/estimate-" + shape + ".gguf";
    SynthOptions so;
    so.shape = shape;
    write_synthetic_checkpoint(so, path);
    const GgufFile f = GgufFile::open(path);
    emit::EmitOptions o;
    o.n_ctx = 1024;
    o.max_chunk = 512;
    o.prompt_tokens.assign(512, 7);  // steps of 1 and 512 rows
    const emit::RecordedModel m = emit::record_model(f, o);
    std::vector<uint64_t> arenas;
    for (const emit::EmitBuffer& b : m.buffers)
      if (b.what == "step arena") arenas.push_back(b.bytes);
    ASSERT_EQ(arenas.size(), 2u) << shape;
    const ModelSpec spec = read_model_spec(f);
    const ModelProgram program = model_program(f, spec, o.n_ctx, "");
    const plan::CacheShape caches{spec.n_layer, 1, o.n_ctx, spec.n_head_kv, spec.head_dim};
    const int64_t rows[2] = {1, 512};
    for (int i = 0; i < 2; ++i) {
      const size_t estimate = plan::StepPlan::estimate_bytes(lift_cut(f, program, rows[i]), caches);
      EXPECT_LE(arenas[static_cast<size_t>(i)], estimate) << shape << " rows " << rows[i];
      EXPECT_LE(estimate, 4 * arenas[static_cast<size_t>(i)] + (80u << 20)) << shape << " rows " << rows[i];
    }
  }
}

}  // namespace
}  // namespace lathe
