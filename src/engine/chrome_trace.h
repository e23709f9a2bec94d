// ChromeTrace: events in the Trace Event Format that chrome://tracing, Perfetto and
// TensorBoard read (the format of the torch profiler's traces SGLang's /start_profile writes),
// written gzip-compressed as `.trace.json.gz`. One process, a few named tracks (threads);
// timestamps in microseconds of the steady clock.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace sgl::engine {

// An event argument: a name and an integer or a string.
struct TraceArg {
  TraceArg(std::string arg_name, int64_t value) : name(std::move(arg_name)), number(value) {}
  TraceArg(std::string arg_name, std::string value)
      : name(std::move(arg_name)), text(std::move(value)), is_text(true) {}
  std::string name;
  int64_t number = 0;
  std::string text;
  bool is_text = false;
};

class ChromeTrace {
 public:
  ChromeTrace(std::string process_name, std::vector<std::string> track_names);

  // A span ("X" event) on track `track` (an index into the track names).
  void add_span(int track, std::string_view name, double begin_us, double end_us,
                const std::vector<TraceArg>& args = {});
  // A counter sample ("C" event): each argument a series of the counter `name`.
  void add_counter(std::string_view name, double at_us, const std::vector<TraceArg>& series);
  int64_t events() const { return events_; }

  // The whole trace as JSON text.
  std::string json() const;
  // Writes json() gzip-compressed to `path` (the directory must exist).
  Status write_gzip(const std::string& path) const;

 private:
  void begin_event();
  std::string body_;  // the events, comma-separated JSON objects
  int64_t events_ = 0;
};

}  // namespace sgl::engine
