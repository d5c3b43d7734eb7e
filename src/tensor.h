// Tensor: a dense row-major array with a shape, the one container for weights, gradients,
// optimizer moments and activations. Eigen maps give matrix views of its slices.
//
// Dimension legend (used in every shape comment in src/):
//   B = batch, T = pos (sequence length, <= n_ctx), V = d_vocab, D = d_model,
//   H = n_heads, Dh = d_head, N = B*T (rows of the flattened residual stream).
#pragma once
#include <Eigen/Dense>
#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace cs {

template <class T>
using MatRM = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using VecT = Eigen::Matrix<T, Eigen::Dynamic, 1>;
template <class T>
using RowVecT = Eigen::Matrix<T, 1, Eigen::Dynamic>;
template <class T>
using MapM = Eigen::Map<MatRM<T>>;
template <class T>
using CMapM = Eigen::Map<const MatRM<T>>;
template <class T>
using MapRV = Eigen::Map<RowVecT<T>>;
template <class T>
using CMapRV = Eigen::Map<const RowVecT<T>>;

using Shape = std::vector<int>;

inline std::size_t shape_numel(const Shape& s) {
  std::size_t n = 1;
  for (int d : s) n *= static_cast<std::size_t>(d);
  return n;
}

inline std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

template <class T>
struct Tensor {
  Shape shape;
  std::vector<T> data;

  Tensor() = default;
  explicit Tensor(Shape s) : shape(std::move(s)), data(shape_numel(shape), T(0)) {}

  std::size_t size() const { return data.size(); }
  bool empty() const { return data.empty(); }
  T* ptr() { return data.data(); }
  const T* ptr() const { return data.data(); }
  void resize(Shape s) {
    shape = std::move(s);
    data.assign(shape_numel(shape), T(0));
  }
  void zero() { std::fill(data.begin(), data.end(), T(0)); }
  void fill(T v) { std::fill(data.begin(), data.end(), v); }
  // Gives the tensor this shape without zeroing it and, when the shape is unchanged, without
  // touching the heap: for buffers that are overwritten completely (the forward pass's cache).
  bool has_shape(std::initializer_list<int> s) const {
    return shape.size() == s.size() && std::equal(s.begin(), s.end(), shape.begin());
  }
  void ensure(std::initializer_list<int> s) {
    if (has_shape(s)) return;
    shape.assign(s.begin(), s.end());
    data.resize(shape_numel(shape));
  }

  // Matrix view of the whole tensor as [shape[0] * ... * shape[k-2], shape[k-1]].
  MapM<T> mat() {
    int cols = shape.empty() ? 1 : shape.back();
    return MapM<T>(ptr(), cols ? static_cast<Eigen::Index>(size() / cols) : 0, cols);
  }
  CMapM<T> mat() const {
    int cols = shape.empty() ? 1 : shape.back();
    return CMapM<T>(ptr(), cols ? static_cast<Eigen::Index>(size() / cols) : 0, cols);
  }
  // Matrix view of slice i along the first axis: [shape[1] * ... , shape.back()].
  MapM<T> slice(int i) {
    std::size_t stride = size() / shape[0];
    int cols = shape.back();
    return MapM<T>(ptr() + i * stride, static_cast<Eigen::Index>(stride / cols), cols);
  }
  CMapM<T> slice(int i) const {
    std::size_t stride = size() / shape[0];
    int cols = shape.back();
    return CMapM<T>(ptr() + i * stride, static_cast<Eigen::Index>(stride / cols), cols);
  }
  // Row vector view of slice i along the first axis (for [H, Dh]-shaped biases).
  MapRV<T> row(int i) {
    std::size_t stride = size() / shape[0];
    return MapRV<T>(ptr() + i * stride, static_cast<Eigen::Index>(stride));
  }
  CMapRV<T> row(int i) const {
    std::size_t stride = size() / shape[0];
    return CMapRV<T>(ptr() + i * stride, static_cast<Eigen::Index>(stride));
  }
  MapRV<T> vec() { return MapRV<T>(ptr(), static_cast<Eigen::Index>(size())); }
  CMapRV<T> vec() const { return CMapRV<T>(ptr(), static_cast<Eigen::Index>(size())); }

  template <class U>
  Tensor<U> cast() const {
    Tensor<U> out;
    out.shape = shape;
    out.data.assign(data.begin(), data.end());
    return out;
  }
};

}  // namespace cs
