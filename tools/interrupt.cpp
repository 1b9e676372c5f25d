#include "interrupt.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "files.hpp"

namespace imgpack::cli {

namespace {

// The note for the running command, written before any signal may read it
// (set_interrupt_note publishes its length last).
constexpr std::size_t kNoteCapacity = 256;
char g_note[kNoteCapacity] = {};
std::atomic<std::size_t> g_note_length{0};
bool g_terminal = false;  // stderr is a terminal: a progress bar may hold the line

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

const char* signal_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

void say(const char* text, std::size_t length) {
  while (length > 0) {
    const ssize_t written = ::write(STDERR_FILENO, text, length);
    if (written <= 0) return;
    text += written;
    length -= static_cast<std::size_t>(written);
  }
}
void say(const char* text) { say(text, std::strlen(text)); }

// Only async-signal-safe calls: unlink, write, sigaction's reset (the
// handler is installed with SA_RESETHAND), raise.
extern "C" void on_interrupt(int signal) {
  const int saved = errno;
  remove_temporary_outputs();
  if (g_terminal) say("\n");
  say("imgpack: stopped by ");
  say(signal_name(signal));
  say(g_note, g_note_length.load(std::memory_order_acquire));
  say("\n");
  errno = saved;
  std::raise(signal);  // the default action now (SA_RESETHAND, SA_NODEFER)
}

// The note for `command` (a subcommand's name) where it changes a dataset,
// `appending` for convert --append, `overwriting` for convert --overwrite.
std::string_view interrupt_note(std::string_view command, bool appending, bool overwriting) {
  if (command == "convert") {
    if (appending) {
      return "; the dataset is as before the append or after it: the same command again "
             "finishes it";
    }
    return overwriting ? "; what was converted stays in the output folder: the same command "
                         "with --resume in place of --overwrite continues it"
                       : "; what was converted stays in the output folder: the same command "
                         "with --resume continues it (--overwrite starts over)";
  }
  if (command == "merge") return "; the same command again finishes the merge";
  if (command == "remove" || command == "compact" || command == "upgrade" || command == "split") {
    return "; the dataset is as before the change or after it: the same command again "
           "finishes it";
  }
  if (command == "sample-data") return "; the folder it was writing is incomplete";
  return "";  // inspect, verify, bench, preview: no dataset written
}

}  // namespace

// Set by hold_interrupts_for_exec() for the program it runs.
constexpr const char* kHeldVariable = "IMGPACK_INTERRUPTS_HELD";

sigset_t interrupt_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (const int signal : kSignals) sigaddset(&set, signal);
  return set;
}

void hold_interrupts_for_exec() {
  const sigset_t set = interrupt_signals();
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  ::setenv(kHeldVariable, "1", 1);
}

void release_held_interrupts() {
  if (std::getenv(kHeldVariable) == nullptr) return;
  ::unsetenv(kHeldVariable);
  const sigset_t set = interrupt_signals();
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

void install_interrupt_handlers() {
  g_terminal = ::isatty(STDERR_FILENO) == 1;
  for (const int signal : kSignals) {
    struct sigaction old {};
    if (::sigaction(signal, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND | SA_NODEFER;
    ::sigaction(signal, &action, nullptr);
  }
  release_held_interrupts();  // one that came meanwhile is handled now
}

void set_interrupt_note(const CLI::App& app) {
  const auto given = [](const CLI::App& sub, const char* name) {
    const CLI::Option* option = sub.get_option_no_throw(name);
    return option != nullptr && option->count() > 0;
  };
  std::string_view note;
  for (const CLI::App* sub : app.get_subcommands()) {
    const std::string& name = sub->get_name();
    // split changes the dataset only to make, delete, import, extend or reset splits.
    const bool writes = name != "split" || given(*sub, "--name") || given(*sub, "--delete") ||
                        given(*sub, "--import") || given(*sub, "--extend") ||
                        given(*sub, "--reset");
    if (writes) {
      const bool convert = name == "convert";
      note = interrupt_note(name, convert && given(*sub, "--append"),
                            convert && given(*sub, "--overwrite"));
    }
  }
  set_interrupt_note(note);
}

void set_interrupt_note(std::string_view note) {
  g_note_length.store(0, std::memory_order_release);  // none while it changes
  const std::size_t length = std::min(note.size(), kNoteCapacity);
  if (length > 0) std::memcpy(g_note, note.data(), length);  // an empty view's data may be null
  g_note_length.store(length, std::memory_order_release);
}

}  // namespace imgpack::cli
