// The cuts of a program: the step line is the only thing a cut changes.
#include "base/error.h"
#include "lang/program.h"

#include <charconv>

namespace lathe::lang {

Cut parse_cut(std::string_view text) {
  auto count_after = [&](std::string_view prefix) -> int64_t {
    std::string_view digits = text.substr(prefix.size());
    int64_t n = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec != std::errc() || end != digits.data() + digits.size() || n < 1)
      fail("bad cut `{}`: `{}` takes a whole number of at least 1 (e.g. {}16)", text, prefix, prefix);
    return n;
  };
  if (text == "decode") return Cut{Cut::Kind::decode, 1};
  if (text.starts_with("prefill:")) return Cut{Cut::Kind::prefill, count_after("prefill:")};
  if (text.starts_with("batch:")) return Cut{Cut::Kind::batch, count_after("batch:")};
  fail("bad cut `{}`: a cut is decode, prefill:R or batch:B", text);
}

std::string cut_name(const Cut& cut) {
  switch (cut.kind) {
    case Cut::Kind::decode: return "decode";
    case Cut::Kind::prefill: return "prefill:" + std::to_string(cut.n);
    case Cut::Kind::batch: return "batch:" + std::to_string(cut.n);
  }
  internal_fail("cut kind {}", static_cast<int>(cut.kind));
}

Program make_cut(const Program& program, const Cut& cut) {
  Program out = program;
  Step step;
  switch (cut.kind) {
    case Cut::Kind::decode: step = Step{1, 1, {}}; break;
    case Cut::Kind::prefill: step = Step{cut.n, 1, {}}; break;
    case Cut::Kind::batch: step = Step{cut.n, cut.n, {}}; break;
  }
  out.step = step;
  return out;
}

}  // namespace lathe::lang
