// Symbolic dimensions: an integer times a product of names (`n_head*head_dim`, `2*n_embd`, `16`,
// `rows`). Shapes are checked with these before any checkpoint is seen; with parameters bound to
// numbers the same dims are plain integers. Two dims are equal when they are the same monomial:
// `n_embd` and `n_head*head_dim` differ symbolically even where a checkpoint makes them equal.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lathe::lang {

struct Dim {
  int64_t coeff = 1;
  std::map<std::string, int> powers;  // name -> exponent, every exponent > 0

  static Dim number(int64_t n) { return Dim{n, {}}; }
  static Dim symbol(const std::string& name) { return Dim{1, {{name, 1}}}; }
  bool is_number() const { return powers.empty(); }
  Dim operator*(const Dim& other) const;
  // this / other when it divides exactly (as monomials, or as numbers), else nullopt.
  std::optional<Dim> divide(const Dim& other) const;
  bool operator==(const Dim&) const = default;
  std::string str() const;
};

using Shape = std::vector<Dim>;
std::string shape_str(const Shape& shape);  // "[rows, head_dim*n_head]"

}  // namespace lathe::lang
