#include "runtime/chat.h"

#include "base/error.h"

namespace lathe {
namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

}  // namespace

std::optional<ChatFormat> detect_chat_format(const std::string& jinja) {
  if (jinja.find("<|im_start|>") != std::string::npos) return ChatFormat::chatml;
  if (jinja.find("<|start_header_id|>") != std::string::npos) return ChatFormat::llama3;
  return std::nullopt;
}

ChatFormat chat_format_from_name(const std::string& name) {
  if (name == "chatml") return ChatFormat::chatml;
  if (name == "llama3") return ChatFormat::llama3;
  fail("unknown chat template '{}' (Lathe renders: chatml, llama3)", name);
}

std::string chat_format_name(ChatFormat format) {
  return format == ChatFormat::chatml ? "chatml" : "llama3";
}

std::string render_chat(ChatFormat format, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, const std::string& bos) {
  std::string out;
  if (format == ChatFormat::chatml) {
    for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i == 0) out += bos;
    out += "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n" +
           trim(messages[i].content) + "<|eot_id|>";
  }
  if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

}  // namespace lathe
