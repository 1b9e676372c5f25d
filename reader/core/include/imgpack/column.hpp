// Column<T>: the values of one numeric table of a dataset's index.
//
// A column either owns its values (a std::vector, as a writer builds them) or
// views them where they lie in a read-only mapping of index.h5 (as
// Dataset::open() reads them), sharing ownership of the mapping so that it
// stays valid while any column viewing it lives. Reading is the same either
// way: size(), operator[], data(), iteration, and conversion to
// std::span<const T>.
//
// Copying a viewing column shares the mapping (cheap); copying an owning one
// copies its values. Changing a column (assignment from values, push_back,
// resize, the non-const operator[], values()) first makes it own a copy of
// its values, so a mapping is never written and other copies never change.
//
// Thread-safety: like std::vector. Const methods may be called from many
// threads at once; a change must not race with any other use of the same
// column object.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace imgpack {

template <class T>
class Column {
 public:
  using value_type = T;
  using iterator = const T*;
  using const_iterator = const T*;

  Column() = default;
  // Owns `values` (implicit, so a column is assigned from a vector as before).
  Column(std::vector<T> values) : owned_(std::move(values)) {}  // NOLINT(google-explicit-*)
  Column(std::initializer_list<T> values) : owned_(values) {}
  // Views `values`, which stay valid and unchanged while `keeper` lives.
  static Column view(std::span<const T> values, const std::shared_ptr<const void>& keeper) {
    Column column;
    column.view_ = values;
    column.keeper_ = keeper;
    return column;
  }

  Column& operator=(std::vector<T> values) {
    owned_ = std::move(values);
    view_ = {};
    keeper_.reset();
    return *this;
  }
  Column& operator=(std::initializer_list<T> values) { return *this = std::vector<T>(values); }

  // True when the values are viewed in a mapping rather than owned.
  bool is_view() const { return keeper_ != nullptr; }

  std::size_t size() const { return is_view() ? view_.size() : owned_.size(); }
  bool empty() const { return size() == 0; }
  const T* data() const { return is_view() ? view_.data() : owned_.data(); }
  const T& operator[](std::size_t i) const { return data()[i]; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }
  const T& front() const { return data()[0]; }
  const T& back() const { return data()[size() - 1]; }
  std::span<const T> span() const { return {data(), size()}; }
  operator std::span<const T>() const { return span(); }  // NOLINT(google-explicit-*)
  std::vector<T> to_vector() const { return {begin(), end()}; }

  // Changes: the column owns its values from here on.
  std::vector<T>& values() {
    if (is_view()) {
      owned_.assign(view_.begin(), view_.end());
      view_ = {};
      keeper_.reset();
    }
    return owned_;
  }
  T& operator[](std::size_t i) { return values()[i]; }
  void push_back(T value) { values().push_back(value); }
  void reserve(std::size_t n) { values().reserve(n); }
  void resize(std::size_t n, T value = T{}) { values().resize(n, value); }
  void clear() { values().clear(); }

  friend bool operator==(const Column& a, const Column& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator==(const Column& a, const std::vector<T>& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  std::vector<T> owned_;
  std::span<const T> view_;
  std::shared_ptr<const void> keeper_;  // the mapping view_ lies in; null when owning
};

}  // namespace imgpack
