#include "mapping_fault.hpp"

#include <signal.h>

#include <mutex>
#include <string>

namespace imgpack::detail {

namespace {

// This thread's landing while it runs read_mapped(); touched before any fault
// can need it, so the handler reads memory the thread already has.
thread_local MappingFaultLanding* t_landing = nullptr;

struct sigaction g_previous {};

void on_sigbus(int signal, siginfo_t* info, void* context) {
  MappingFaultLanding* landing = t_landing;
  // si_code > 0: raised by a fault of this thread (BUS_ADRERR), not sent.
  if (landing != nullptr && info != nullptr && info->si_code > 0) {
    landing->address = info->si_addr;
    siglongjmp(landing->jump, 1);
  }
  // Not a fault of ours: what the program had before.
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(signal, info, context);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN &&
      g_previous.sa_handler != nullptr) {
    g_previous.sa_handler(signal);
    return;
  }
  // The default action: ends the process once this handler returns (the
  // signal is blocked until then; a fault would also repeat).
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  ::sigaction(SIGBUS, &fallback, nullptr);
  ::raise(SIGBUS);
}

void install_handler() {
  struct sigaction action {};
  action.sa_sigaction = on_sigbus;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, &g_previous);
}

}  // namespace

void set_mapping_fault_landing(MappingFaultLanding* landing) {
  static std::once_flag installed;
  if (landing != nullptr) std::call_once(installed, install_handler);
  t_landing = landing;
}

Error mapping_fault_error(const std::filesystem::path& path, std::string_view what,
                          std::string_view during) {
  return file_error(path, "truncated or rewritten in place while " + std::string(during) +
                              " (reading " + std::string(what) +
                              " from its mapping faulted with SIGBUS); reopen the dataset");
}

}  // namespace imgpack::detail
