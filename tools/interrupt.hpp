// What the CLI does when a signal stops it (Ctrl-C, SIGTERM, SIGHUP): it
// removes the temporary file of an output it was writing (a preview, an
// exported split; remove_temporary_outputs() in files.hpp), says on stderr
// which signal stopped it and how to finish what it leaves, and ends by that
// signal, so that a shell sees status 128 + its number and a script stops.
// What a command leaves is what kill -9 leaves, which every command that
// writes a dataset is built to finish when run again.
#pragma once

#include <string_view>

namespace CLI {
class App;
}

namespace imgpack::cli {

// Installs the handlers of SIGINT, SIGTERM and SIGHUP; a signal ignored when
// the process started (nohup's SIGHUP) stays ignored. Call once, first thing.
// Those a hold_interrupts_for_exec() before held are released then.
void install_interrupt_handlers();

// Blocks SIGINT, SIGTERM and SIGHUP across an exec (the front CLI handing a
// command to the complete one), so that one coming while the next program
// loads waits for its handlers rather than ending it with no word.
void hold_interrupts_for_exec();
// Releases what hold_interrupts_for_exec() held (where the exec failed).
void release_held_interrupts();

// The note printed after "imgpack: stopped by SIGNAL" for the command `app`
// parsed (how to finish what it leaves, or nothing for a command that writes
// no dataset). Call from the main thread before the command starts work.
void set_interrupt_note(const CLI::App& app);

// The note itself ("; ..."), for a command that knows better once it runs
// (convert under mpirun). Call from the main thread.
void set_interrupt_note(std::string_view note);

}  // namespace imgpack::cli
