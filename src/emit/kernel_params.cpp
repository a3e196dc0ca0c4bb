#include "emit/kernel_params.h"

#include "base/error.h"

#include <cctype>
#include <set>

namespace lathe::emit {
namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Comments out, line continuations joined (a #define becomes one line).
std::string strip(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in.compare(i, 2, "//") == 0) {
      while (i < in.size() && in[i] != '\n') ++i;
      out += '\n';
    } else if (in.compare(i, 2, "/*") == 0) {
      const size_t end = in.find("*/", i + 2);
      i = end == std::string_view::npos ? in.size() : end + 1;
      out += ' ';
    } else if (in[i] == '\\' && i + 1 < in.size() && in[i + 1] == '\n') {
      ++i;
      out += ' ';
    } else {
      out += in[i];
    }
  }
  return out;
}

std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

// The comma-separated parts of s[open + 1 .. matching ')'), at depth 0 of (), {} and [];
// *close receives the index of the matching ')'.
std::vector<std::string> split_args(const std::string& s, size_t open, size_t* close) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (size_t i = open + 1; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' || c == '{' || c == '[') ++depth;
    if (c == ')' || c == '}' || c == ']') {
      if (depth == 0 && c == ')') {
        *close = i;
        if (!trim(cur).empty() || !parts.empty()) parts.push_back(trim(cur));
        return parts;
      }
      --depth;
    }
    if (c == ',' && depth == 0) {
      parts.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  internal_fail("kernel library: an unbalanced parenthesis");
}

struct Macro {
  std::vector<std::string> params;
  std::string body;
};

std::string substitute(const Macro& m, const std::vector<std::string>& args) {
  std::string out;
  const std::string& b = m.body;
  for (size_t i = 0; i < b.size();) {
    if (ident_char(b[i]) && (i == 0 || !ident_char(b[i - 1]))) {
      size_t j = i;
      while (j < b.size() && ident_char(b[j])) ++j;
      const std::string word = b.substr(i, j - i);
      bool replaced = false;
      for (size_t p = 0; p < m.params.size() && p < args.size(); ++p)
        if (word == m.params[p]) {
          out += args[p];
          replaced = true;
        }
      if (!replaced) out += word;
      i = j;
    } else {
      out += b[i++];
    }
  }
  // Token pasting: `a ## b` joins a and b.
  std::string pasted;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out.compare(i, 2, "##") == 0) {
      while (!pasted.empty() && std::isspace(static_cast<unsigned char>(pasted.back()))) pasted.pop_back();
      i += 2;
      while (i < out.size() && std::isspace(static_cast<unsigned char>(out[i]))) ++i;
      --i;
    } else {
      pasted += out[i];
    }
  }
  return pasted;
}

std::string expand(const std::string& code, const std::map<std::string, Macro>& macros, int depth) {
  if (depth > 16) internal_fail("kernel library: macros nest more than 16 deep");
  std::string out;
  for (size_t i = 0; i < code.size();) {
    if (ident_char(code[i]) && (i == 0 || !ident_char(code[i - 1]))) {
      size_t j = i;
      while (j < code.size() && ident_char(code[j])) ++j;
      const std::string word = code.substr(i, j - i);
      auto it = macros.find(word);
      size_t k = j;
      while (k < code.size() && std::isspace(static_cast<unsigned char>(code[k]))) ++k;
      if (it != macros.end() && k < code.size() && code[k] == '(') {
        size_t close = 0;
        const std::vector<std::string> args = split_args(code, k, &close);
        out += expand(substitute(it->second, args), macros, depth + 1);
        i = close + 1;
        continue;
      }
      out += word;
      i = j;
    } else {
      out += code[i++];
    }
  }
  return out;
}

}  // namespace

size_t param_type_bytes(std::string_view type) {
  if (type.find('*') != std::string_view::npos) return 8;
  static const std::set<std::string> qualifiers = {"const", "volatile", "__restrict__", "restrict",
                                                    "__grid_constant__"};
  std::string t;
  for (size_t i = 0; i < type.size();) {
    if (!ident_char(type[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < type.size() && ident_char(type[j])) ++j;
    const std::string word(type.substr(i, j - i));
    if (!qualifiers.count(word)) t += (t.empty() ? "" : " ") + word;
    i = j;
  }
  static const std::map<std::string, size_t> sizes = {
      {"char", 1}, {"signed char", 1}, {"unsigned char", 1}, {"bool", 1}, {"int8_t", 1}, {"uint8_t", 1},
      {"short", 2}, {"unsigned short", 2}, {"int16_t", 2}, {"uint16_t", 2}, {"__half", 2}, {"__nv_bfloat16", 2},
      {"int", 4}, {"unsigned", 4}, {"unsigned int", 4}, {"int32_t", 4}, {"uint32_t", 4}, {"float", 4},
      {"long long", 8}, {"unsigned long long", 8}, {"long long int", 8}, {"int64_t", 8}, {"uint64_t", 8},
      {"size_t", 8}, {"double", 8}, {"float2", 8}, {"int2", 8}, {"float4", 16}, {"int4", 16},
      {"LatheTileMap", 128}};  // a CUtensorMap (gemv_decode_tiles.cuh)
  auto it = sizes.find(t);
  return it == sizes.end() ? 0 : it->second;
}

std::map<std::string, std::vector<KernelParam>> kernel_params(std::string_view source) {
  const std::string text = strip(source);
  // Function-like macros out of the text; the other lines stay as code.
  std::map<std::string, Macro> macros;
  std::string code;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    const std::string t = trim(line);
    if (t.rfind("#", 0) != 0) {
      code += line + "\n";
      continue;
    }
    const std::string directive = trim(t.substr(1));
    if (directive.rfind("define", 0) != 0) continue;
    const std::string rest = trim(directive.substr(6));
    size_t n = 0;
    while (n < rest.size() && ident_char(rest[n])) ++n;
    if (n == rest.size() || rest[n] != '(') continue;  // object-like: not needed for signatures
    size_t close = 0;
    Macro m;
    m.params = split_args(rest, n, &close);
    m.body = rest.substr(close + 1);
    macros[rest.substr(0, n)] = std::move(m);
  }
  const std::string expanded = expand(code, macros, 0);

  std::map<std::string, std::vector<KernelParam>> out;
  for (size_t g = expanded.find("__global__"); g != std::string::npos; g = expanded.find("__global__", g + 1)) {
    size_t i = g + 10;
    auto skip_space = [&] { while (i < expanded.size() && std::isspace(static_cast<unsigned char>(expanded[i]))) ++i; };
    auto word = [&] {
      skip_space();
      const size_t s = i;
      while (i < expanded.size() && ident_char(expanded[i])) ++i;
      return expanded.substr(s, i - s);
    };
    if (word() != "void") continue;
    std::string name = word();
    while (name == "__launch_bounds__" || name == "__cluster_dims__") {  // attributes with arguments
      skip_space();
      size_t close = 0;
      split_args(expanded, i, &close);
      i = close + 1;
      name = word();
    }
    skip_space();
    if (name.empty() || i >= expanded.size() || expanded[i] != '(') continue;
    size_t close = 0;
    std::vector<KernelParam> params;
    for (const std::string& p : split_args(expanded, i, &close)) {
      if (p == "void") continue;
      size_t e = p.size();
      while (e > 0 && !ident_char(p[e - 1])) --e;
      size_t s = e;
      while (s > 0 && ident_char(p[s - 1])) --s;
      KernelParam kp{trim(p.substr(0, s)), p.substr(s, e - s), 0};
      kp.bytes = param_type_bytes(kp.type);
      if (kp.bytes == 0) internal_fail("kernel {}: the parameter '{}' has a type of unknown size", name, p);
      params.push_back(std::move(kp));
    }
    auto [it, fresh] = out.emplace(name, params);
    if (!fresh && it->second.size() != params.size())
      internal_fail("kernel {} is declared twice with different parameters", name);
  }
  return out;
}

}  // namespace lathe::emit
