// Chat templates of the families Lathe reads: ChatML (Qwen) and Llama 3's header format. The GGUF's
// tokenizer.chat_template (a Jinja text) is recognised by its markers; Lathe renders the format
// itself rather than interpreting Jinja. An unknown template is refused, naming the choices.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace lathe {

enum class ChatFormat { chatml, llama3 };

struct ChatMessage {
  std::string role;  // system, user, assistant
  std::string content;
};

// The format a Jinja template text is written for, if Lathe knows it.
std::optional<ChatFormat> detect_chat_format(const std::string& jinja);
// "chatml" or "llama3"; a UserError for anything else.
ChatFormat chat_format_from_name(const std::string& name);
std::string chat_format_name(ChatFormat format);

// The prompt text for the conversation; with add_generation_prompt, the opening of the assistant's
// turn. `bos` is the text of the BOS token (Llama 3 puts it before the first message).
std::string render_chat(ChatFormat format, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, const std::string& bos);

}  // namespace lathe
