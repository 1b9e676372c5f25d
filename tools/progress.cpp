#include "progress.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace imgpack::cli {

namespace {

using Clock = std::chrono::steady_clock;

std::string duration_text(double seconds) {
  char text[32];
  const long s = std::lround(seconds);
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  } else {
    std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  }
  return text;
}

}  // namespace

Progress::Progress(std::string label, bool quiet)
    : label_(std::move(label)),
      quiet_(quiet),
      terminal_(::isatty(STDERR_FILENO) == 1),
      start_(Clock::now()),
      last_(start_) {}

void Progress::update(uint64_t done, uint64_t total, uint64_t skipped) {
  if (quiet_) return;
  auto now = Clock::now();
  auto interval = terminal_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5000);
  if (now - last_ < interval) return;
  last_ = now;
  print(done, total, skipped, false);
}

void Progress::finish(uint64_t done, uint64_t total, uint64_t skipped) {
  if (quiet_) return;
  print(done, total, skipped, true);
}

void Progress::print(uint64_t done, uint64_t total, uint64_t skipped, bool final) {
  double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  double fraction = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1;
  std::string eta = rate > 0 && done < total
                        ? duration_text(static_cast<double>(total - done) / rate)
                        : duration_text(0);
  std::string skipped_text = skipped > 0 ? ", " + std::to_string(skipped) + " skipped" : "";
  if (terminal_) {
    constexpr int kWidth = 30;
    int filled = static_cast<int>(fraction * kWidth);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r%s [%s] %llu/%llu %.0f img/s %s %s%s\033[K", label_.c_str(),
                 bar.c_str(), static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(total), rate, final ? "in" : "ETA",
                 final ? duration_text(elapsed).c_str() : eta.c_str(), skipped_text.c_str());
    if (final) std::fputc('\n', stderr);
  } else {
    std::fprintf(stderr, "%s: %llu/%llu (%.0f%%) %.0f img/s, %s %s%s\n", label_.c_str(),
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
                 100 * fraction, rate, final ? "took" : "ETA",
                 final ? duration_text(elapsed).c_str() : eta.c_str(), skipped_text.c_str());
  }
  std::fflush(stderr);
  printed_ = true;
}

}  // namespace imgpack::cli
