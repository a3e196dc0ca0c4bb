#include "lang/dim.h"

namespace lathe::lang {

Dim Dim::operator*(const Dim& other) const {
  Dim out{coeff * other.coeff, powers};
  for (const auto& [name, p] : other.powers) out.powers[name] += p;
  return out;
}

std::optional<Dim> Dim::divide(const Dim& other) const {
  if (other.coeff == 0 || coeff % other.coeff != 0) return std::nullopt;
  Dim out{coeff / other.coeff, powers};
  for (const auto& [name, p] : other.powers) {
    auto it = out.powers.find(name);
    if (it == out.powers.end() || it->second < p) return std::nullopt;
    if ((it->second -= p) == 0) out.powers.erase(it);
  }
  return out;
}

std::string Dim::str() const {
  std::string out;
  if (coeff != 1 || powers.empty()) out = std::to_string(coeff);
  for (const auto& [name, p] : powers)
    for (int i = 0; i < p; ++i) out += (out.empty() ? "" : "*") + name;
  return out;
}

std::string shape_str(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + shape[i].str();
  return out + "]";
}

}  // namespace lathe::lang
