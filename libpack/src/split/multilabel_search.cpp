#include "split/multilabel_search.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <utility>

#include "random.hpp"

namespace imgpack::detail {

namespace {

// The CounterRng stream of the search (multilabel_split.cpp has the others).
constexpr uint64_t kSearchStream = 0x6d6c736561726368;  // "mlsearch"

// Local search: passes over all units at most, and random partners tried for
// a swap when no single move of a unit helps. The passes stop early once
// one lowers the LD by less than kMinPassGain of it.
constexpr int kSearchPasses = 12;
constexpr std::size_t kSwapTries = 4;
constexpr double kMinPassGain = 5e-3;
// Up to this many units, every unit elsewhere is tried as a swap partner.
constexpr std::size_t kSwapAllUnits = 256;
// Passes of the size repair before it takes any move that evens the sizes.
constexpr int kRepairPasses = 16;
// The LD cost (in summed terms) the size repair accepts in its second pass.
constexpr double kRepairTolerance = 1e-4;
// Sizes per part whose summed LD terms are kept (LabelSearch::sum_at).
constexpr std::size_t kSizedSums = 256;

// Moves and swaps of units between parts that lower the summed LD terms
// (L k times LD) within a bound on the summed ED terms (k times ED).
class LabelSearch {
 public:
  LabelSearch(const LabelUnits& units, std::span<const double> fractions,
              std::vector<int32_t>& part)
      : units_(units),
        part_(part),
        parts_(fractions.size()),
        columns_(units.label_total.size()),
        desired_size_(parts_),
        size_(parts_, 0),
        count_(parts_ * columns_, 0),
        term_sum_(parts_, 0),
        sums_at_(parts_),
        target_(columns_),
        diff_(columns_, 0) {
    for (std::size_t j = 0; j < parts_; ++j)
      desired_size_[j] = static_cast<double>(units.samples) * fractions[j];
    for (std::size_t l = 0; l < columns_; ++l)
      target_[l] = label_ratio(units.label_total[l], units.samples);
    for (std::size_t u = 0; u < units.units(); ++u) {
      const auto j = static_cast<std::size_t>(part_[u]);
      size_[j] += units.size[u];
      for (std::size_t e = units.begin[u]; e < units.begin[u + 1]; ++e)
        count_[j * columns_ + static_cast<std::size_t>(units.label[e])] += units.count[e];
    }
    refresh();
    for (std::size_t j = 0; j < parts_; ++j) ed_sum_ += std::abs(size_deviation(j, 0));
  }

  // The summed LD terms (L k LD) and ED terms (k ED) of the partition now.
  double label_terms() const { return std::accumulate(term_sum_.begin(), term_sum_.end(), 0.0); }
  double size_terms() const {
    double sum = 0;
    for (std::size_t j = 0; j < parts_; ++j) sum += std::abs(size_deviation(j, 0));
    return sum;
  }

  void run(uint64_t seed, uint64_t start) {
    const std::size_t count = units_.units();
    if (parts_ < 2 || count < 2) return;
    int64_t largest = 0;
    for (int64_t s : units_.size) largest = std::max(largest, s);
    // The sizes may stay as uneven as the greedy left them, or one unit's
    // move from the most even possible, but no more than one unit's size (in
    // ED, the mean over the parts) above the most even possible.
    const double least = ed_floor(), move = 2.0 * static_cast<double>(largest);
    const double most = least + static_cast<double>(parts_) * static_cast<double>(largest);
    const double target = std::max(least + move, std::min(ed_sum_, most)) + 1e-9;
    CounterRng rng(seed, kSearchStream, start);
    std::vector<uint32_t> order(count);
    std::iota(order.begin(), order.end(), 0u);
    rng.shuffle(std::span(order));
    fill_empty_parts();
    even_sizes(order, target);
    ed_cap_ = std::max(target, ed_sum_);
    // Passes until one gains too little for another to be worth it.
    double before = label_terms();
    for (int pass = 0; pass < kSearchPasses; ++pass) {
      refresh();
      bool changed = false;
      for (uint32_t u : order) changed |= improve(u, order, rng);
      const double after = label_terms();
      if (!changed || after > before * (1 - kMinPassGain)) break;
      before = after;
    }
  }

 private:
  struct Change {
    double ld = 0, ed = 0;
  };

  // The least summed ED terms any partition of the samples reaches: part
  // sizes the desired ones rounded, the remainders to the largest fractions.
  double ed_floor() const {
    std::vector<double> rest(parts_);
    int64_t dealt = 0;
    for (std::size_t j = 0; j < parts_; ++j) {
      const double whole = std::floor(desired_size_[j]);
      rest[j] = desired_size_[j] - whole;
      dealt += static_cast<int64_t>(whole);
    }
    std::sort(rest.begin(), rest.end(), std::greater<>());
    double floor_sum = 0;
    const auto up = static_cast<std::size_t>(std::max<int64_t>(0, units_.samples - dealt));
    for (std::size_t j = 0; j < parts_; ++j) floor_sum += j < up ? 1.0 - rest[j] : rest[j];
    return floor_sum;
  }

  // Gives every empty part that should hold a sample the unit (from a part
  // it leaves non-empty) whose move costs the least LD among those evening
  // the sizes, else evening them the most.
  void fill_empty_parts() {
    for (std::size_t to = 0; to < parts_; ++to) {
      if (size_[to] > 0 || desired_size_[to] < 1) continue;
      Change best;
      std::size_t best_unit = units_.units();
      for (std::size_t u = 0; u < units_.units(); ++u) {
        const auto from = static_cast<std::size_t>(part_[u]);
        if (size_[from] <= units_.size[u]) continue;
        add_diff(u, 1);
        const Change c = exchange(from, to, units_.size[u]);
        clear_diff();
        const bool evens = c.ed < -1e-9, best_evens = best.ed < -1e-9;
        if (best_unit == units_.units() || (evens && !best_evens) ||
            (evens && best_evens ? c.ld < best.ld : !best_evens && c.ed < best.ed)) {
          best = c;
          best_unit = u;
        }
      }
      if (best_unit == units_.units()) continue;
      const auto from = static_cast<std::size_t>(part_[best_unit]);
      add_diff(best_unit, 1);
      apply(from, to, units_.size[best_unit], best);
      clear_diff();
      part_[best_unit] = static_cast<int32_t>(to);
    }
  }

  // Moves units from parts above their desired size to parts below while the
  // summed ED terms exceed `target`: first the moves that cost no LD, then
  // ones costing up to a tolerance that grows fourfold each pass, without
  // bound after kRepairPasses (so sizes always come within `target` where
  // single moves can bring them).
  void even_sizes(const std::vector<uint32_t>& order, double target) {
    double tolerance = kMinLabelGain;
    for (int pass = 0; ed_sum_ > target; ++pass) {
      if (pass == kRepairPasses) tolerance = std::numeric_limits<double>::infinity();
      bool changed = false;
      for (uint32_t u : order) {
        if (ed_sum_ <= target) return;
        const auto from = static_cast<std::size_t>(part_[u]);
        if (size_deviation(from, 0) <= 0) continue;
        const int64_t size = units_.size[u];
        add_diff(u, 1);
        Change best;
        std::size_t best_to = parts_;
        for (std::size_t to = 0; to < parts_; ++to) {
          if (to == from) continue;
          const Change c = exchange(from, to, size);
          if (c.ed < -1e-9 && c.ld <= tolerance && (best_to == parts_ || c.ld < best.ld)) {
            best = c;
            best_to = to;
          }
        }
        if (best_to != parts_) {
          apply(from, best_to, size, best);
          part_[u] = static_cast<int32_t>(best_to);
          changed = true;
        }
        clear_diff();
      }
      if (!changed && pass >= kRepairPasses) return;
      tolerance = pass == 0 ? kRepairTolerance : tolerance * 4;
    }
  }

  double term(std::size_t l, int64_t positives, int64_t size) const {
    return std::abs(label_ratio(positives, size) - target_[l]);
  }
  double size_deviation(std::size_t j, int64_t delta) const {
    return static_cast<double>(size_[j] + delta) - desired_size_[j];
  }
  double ed_change(std::size_t j, int64_t delta) const {
    return std::abs(size_deviation(j, delta)) - std::abs(size_deviation(j, 0));
  }

  // The summed LD terms of part j after its size changes by `delta` with
  // its label counts kept, minus now.
  double size_shift(std::size_t j, int64_t delta) {
    if (delta == 0) return 0;
    return sum_at(j, size_[j] + delta) - term_sum_[j];
  }

  // Part j's summed LD terms at `size` samples with its label counts as now:
  // kept from an earlier call (up to date, see shift_part), else computed
  // over all L labels and kept, in place of the kept size farthest from the
  // part's own once kSizedSums are kept.
  double sum_at(std::size_t j, int64_t size) {
    auto& sums = sums_at_[j];
    for (const SizedSum& s : sums)
      if (s.size == size) return s.sum;
    const double sum = full_sum(j, size);
    if (sums.size() < kSizedSums) {
      sums.push_back({size, sum});
      return sum;
    }
    const auto distance = [&](const SizedSum& s) { return std::abs(s.size - size_[j]); };
    *std::max_element(sums.begin(), sums.end(), [&](const SizedSum& a, const SizedSum& b) {
      return distance(a) < distance(b);
    }) = {size, sum};
    return sum;
  }

  double full_sum(std::size_t j, int64_t size) const {
    double sum = 0;
    for (std::size_t l = 0; l < columns_; ++l) sum += term(l, count_[j * columns_ + l], size);
    return sum;
  }

  // Every part's summed terms computed afresh, the kept ones dropped: the
  // kept sums are updated move by move, each update rounded, so they are
  // started over before every pass.
  void refresh() {
    for (std::size_t j = 0; j < parts_; ++j) {
      sums_at_[j].clear();
      term_sum_[j] = full_sum(j, size_[j]);
    }
  }

  // Part j gains `sign` times diff_ (labels touched_) and `delta` samples:
  // its counts, its size, and its kept sums by the terms of the touched
  // labels alone (all the labels where that costs less).
  void shift_part(std::size_t j, int64_t sign, int64_t delta) {
    auto& sums = sums_at_[j];
    sum_at(j, size_[j]);  // the size it leaves, kept for a move back
    const bool update = touched_.size() * sums.size() < columns_;
    if (update) {
      for (SizedSum& s : sums) {
        double change = 0;
        for (std::size_t l : touched_) {
          const int64_t d = sign * diff_[l];
          if (d == 0) continue;
          const int64_t a = count_[j * columns_ + l];
          change += term(l, a + d, s.size) - term(l, a, s.size);
        }
        s.sum += change;
      }
    } else {
      sums.clear();
    }
    for (std::size_t l : touched_) count_[j * columns_ + l] += sign * diff_[l];
    size_[j] += delta;
    term_sum_[j] = sum_at(j, size_[j]);
  }

  // Adds `sign` times unit u's labels to diff_, listing new labels in touched_.
  void add_diff(std::size_t u, int64_t sign) {
    for (std::size_t e = units_.begin[u]; e < units_.begin[u + 1]; ++e) {
      const auto l = static_cast<std::size_t>(units_.label[e]);
      if (diff_[l] == 0) touched_.push_back(l);
      diff_[l] += sign * units_.count[e];
    }
  }

  // The change of the summed LD and ED terms when part `from` gives units
  // making up diff_ (labels, touched_) and `size` samples to part `to`.
  Change exchange(std::size_t from, std::size_t to, int64_t size) {
    return arrive(to, size, part_change(from, -1, size), ed_change(from, -size));
  }
  // The change when part `to` gains what part `from` gives, given the
  // changes of part `from`.
  Change arrive(std::size_t to, int64_t size, double from_ld, double from_ed) {
    return {from_ld + part_change(to, 1, size), from_ed + ed_change(to, size)};
  }
  // The change of part j's summed LD terms when it gains `sign` times diff_
  // and size samples.
  double part_change(std::size_t j, int64_t sign, int64_t size) {
    const int64_t delta = sign * size, n = size_[j] + delta;
    double change = size_shift(j, delta);
    for (std::size_t l : touched_) {
      const int64_t d = sign * diff_[l];
      if (d == 0) continue;
      const int64_t a = count_[j * columns_ + l];
      change += term(l, a + d, n) - term(l, a, n);
    }
    return change;
  }

  void clear_diff() {
    for (std::size_t l : touched_) diff_[l] = 0;
    touched_.clear();
  }

  bool acceptable(const Change& c) const {
    if (c.ld < -kMinLabelGain && ed_sum_ + c.ed <= ed_cap_ + 1e-9) return true;
    return c.ed < -1e-9 && c.ld <= kMinLabelGain;
  }
  static bool better(const Change& a, const Change& b) {
    return a.ld < b.ld - kMinLabelGain || (a.ld <= b.ld + kMinLabelGain && a.ed < b.ed);
  }

  void apply(std::size_t from, std::size_t to, int64_t size, const Change& c) {
    shift_part(from, -1, -size);
    shift_part(to, 1, size);
    ed_sum_ += c.ed;
  }

  // Tries the best move of unit u to another part, else the best of a few
  // random swaps with units elsewhere; true when one was made.
  bool improve(uint32_t u, const std::vector<uint32_t>& order, CounterRng& rng) {
    const auto from = static_cast<std::size_t>(part_[u]);
    const int64_t size = units_.size[u];
    // A move never empties a part that should hold samples; a swap cannot.
    const bool may_move = size_[from] > size || desired_size_[from] <= 0;
    add_diff(u, 1);
    Change best;
    std::size_t best_to = parts_;
    const double leave_ld = may_move ? part_change(from, -1, size) : 0;
    const double leave_ed = ed_change(from, -size);
    for (std::size_t to = 0; to < parts_ && may_move; ++to) {
      if (to == from) continue;
      const Change c = arrive(to, size, leave_ld, leave_ed);
      if (acceptable(c) && (best_to == parts_ || better(c, best))) {
        best = c;
        best_to = to;
      }
    }
    if (best_to != parts_) {
      apply(from, best_to, size, best);
      part_[u] = static_cast<int32_t>(best_to);
      clear_diff();
      return true;
    }
    clear_diff();
    uint32_t best_partner = 0;
    const bool every_partner = order.size() <= kSwapAllUnits;
    const std::size_t tries = every_partner ? order.size() : kSwapTries;
    for (std::size_t t = 0; t < tries; ++t) {
      const uint32_t v = every_partner ? order[t] : order[rng.below(order.size())];
      const auto to = static_cast<std::size_t>(part_[v]);
      if (to == from) continue;
      add_diff(u, 1);
      add_diff(v, -1);
      const Change c = exchange(from, to, size - units_.size[v]);
      clear_diff();
      if (acceptable(c) && (best_to == parts_ || better(c, best))) {
        best = c;
        best_to = to;
        best_partner = v;
      }
    }
    if (best_to == parts_) return false;
    add_diff(u, 1);
    add_diff(best_partner, -1);
    apply(from, best_to, size - units_.size[best_partner], best);
    clear_diff();
    part_[u] = static_cast<int32_t>(best_to);
    part_[best_partner] = static_cast<int32_t>(from);
    return true;
  }

  const LabelUnits& units_;
  std::vector<int32_t>& part_;
  std::size_t parts_, columns_;
  std::vector<double> desired_size_;
  std::vector<int64_t> size_;     // per part
  std::vector<int64_t> count_;    // per part and label
  std::vector<double> term_sum_;  // per part: its summed LD terms
  struct SizedSum {
    int64_t size = 0;
    double sum = 0;
  };
  std::vector<std::vector<SizedSum>> sums_at_;  // per part: see sum_at
  std::vector<double> target_;                  // per label: D^l / (|D| - D^l)
  std::vector<int64_t> diff_;                   // per label, scratch
  std::vector<std::size_t> touched_;
  double ed_sum_ = 0, ed_cap_ = 0;
};

}  // namespace

LabelTerms search_label_parts(const LabelUnits& units, std::span<const double> fractions,
                              std::vector<int32_t>& part, uint64_t seed, uint64_t start) {
  LabelSearch search(units, fractions, part);
  search.run(seed, start);
  return {search.label_terms(), search.size_terms()};
}

}  // namespace imgpack::detail
