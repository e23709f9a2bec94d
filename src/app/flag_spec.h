// FlagSpec: one command-line flag as a table row (names, value, meaning, default, and whether
// sgl.cpp implements it, accepts it without effect, or refuses it), and what the tools derive
// from such tables: the parser's flag sets, --help text, and the refusals and notes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli_args.h"
#include "core/status.h"

namespace sgl::app {

enum class FlagSupport : uint8_t {
  kImplemented,  // does what --help says (SGLang's meaning for SGLang's names)
  kNoEffect,     // accepted; nothing for sgl.cpp to do (`note` says why; logged at start)
  kRefused,      // an error naming `note`, unless the value is one of `accepted_values`
};

struct FlagSpec {
  std::string_view name;                       // "--tp-size"
  std::vector<std::string_view> aliases = {};  // {"--tp", "--tensor-parallel-size"}
  // Placeholder in --help ("N"); empty: a switch; ending in "...": one or more values.
  std::string_view value = {};
  std::string_view help = {};           // what it does
  std::string_view default_value = {};  // as --help prints it; empty: none
  FlagSupport support = FlagSupport::kImplemented;
  std::string_view note = {};  // kNoEffect: why nothing happens; kRefused: the missing feature
  // Values of a refused flag that ask for nothing sgl.cpp lacks (`--tp-size 1`).
  std::vector<std::string_view> accepted_values = {};
};

// The parser's view of some tables.
FlagSets flag_sets(std::initializer_list<std::span<const FlagSpec>> tables);

// --help text for one table: each flag with its aliases, value, meaning, default and (for
// kNoEffect / kRefused) its note, wrapped at 100 columns under `title`.
std::string format_flag_help(std::string_view title, std::span<const FlagSpec> table);

// Checks the given flags against their support: the first refused one (not at an accepted value)
// is an InvalidArgument naming the flag and its note; each kNoEffect one given adds a line to
// `notes` ("--trust-remote-code has no effect: ...").
Status check_flag_support(const CliArgs& args,
                          std::initializer_list<std::span<const FlagSpec>> tables,
                          std::vector<std::string>& notes);

}  // namespace sgl::app
