// Chat templates: the formats render as the families' own templates do, the synthetic and real
// template texts are recognised, an unknown one is refused.
#include "runtime/chat.h"

#include "base/error.h"
#include "model/synth.h"

#include <gtest/gtest.h>

namespace lathe {
namespace {

TEST(Chat, ChatMLRendersAsQwen) {
  const std::string text = render_chat(ChatFormat::chatml,
                                       {{"system", "Be brief."}, {"user", "Hi"}}, true, "");
  EXPECT_EQ(text, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                  "<|im_start|>assistant\n");
}

TEST(Chat, Llama3RendersWithBosAndHeaders) {
  const std::string text = render_chat(ChatFormat::llama3, {{"user", "  Hi there \n"}}, true,
                                       "<|begin_of_text|>");
  EXPECT_EQ(text, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(Chat, RecognisesTheTemplatesOfOurFamilies) {
  EXPECT_EQ(detect_chat_format(make_synthetic_vocab(Arch::qwen3, 2048).chat_template), ChatFormat::chatml);
  EXPECT_EQ(detect_chat_format(make_synthetic_vocab(Arch::llama, 2048).chat_template), ChatFormat::llama3);
  EXPECT_FALSE(detect_chat_format("{{ messages }}").has_value());
  EXPECT_THROW(chat_format_from_name("vicuna"), UserError);
  EXPECT_EQ(chat_format_from_name("llama3"), ChatFormat::llama3);
}

}  // namespace
}  // namespace lathe
